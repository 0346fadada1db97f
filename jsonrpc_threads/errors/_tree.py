"""The root of the exception tree, the table of error codes, and the errors a peer answers with.

Theory of operation: ``JsonRpcError`` is the root of every exception the
library raises; the five classes of the JSON-RPC 2.0 specification name a code
whoever raised it, and their ``Remote*`` twins are what a peer's error response
becomes (``error_from_response``, the one place where a wire error becomes an
exception).  Every code the library uses is named here, local ones included, so
that the table is written once.  The public path of everything here is
``jsonrpc_threads.errors``, which re-exports it (and whose docstring holds the
whole table); the local failures (timeouts, transports, HTTP, configuration)
are in ``jsonrpc_threads.errors._local``.  Pure: no I/O, nothing of the package.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing is not imported at run time: a tool server's start-up pays for every module
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, Optional, Tuple, Type, TypeVar

    _E = TypeVar("_E", bound="JsonRpcError")

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

#: Local codes (never looked up from the wire).
TRANSPORT_CLOSED = -32000
REQUEST_TIMEOUT = -32001
HTTP_ERROR = -32002
MESSAGE_TOO_LARGE = -32003
#: The code of ``ConfigError``.
CONFIG_ERROR = -32010
#: The peer cancelled the request (the Language Server Protocol's ``RequestCancelled``).
REQUEST_CANCELLED = -32800


class JsonRpcError(Exception):
    """Root of every exception raised by jsonrpc_threads.

    Args:
        code: the JSON-RPC error code.
        message: a short, human-readable description.
        data: the error's ``data`` member, or ``None``.

    Attributes:
        code: the JSON-RPC error code (an ``int``).
        message: a short, human-readable description.
        data: the error's ``data`` member as sent by the peer, or ``None``.
    """

    code: int
    message: str
    data: Any
    _arguments: Tuple[Tuple[Any, ...], Dict[str, Any]]

    def __new__(cls: Type[_E], *args: Any, **kwargs: Any) -> _E:
        # Record what the class was called with: __reduce__ rebuilds from it.
        # (Nothing is passed on: OSError's __new__ would parse it as errno, strerror.)
        self = super().__new__(cls)
        self._arguments = (args, kwargs)
        return self

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(code, message, data)
        self.args = (code, message, data)  # also for the OSError subclasses, whose __init__ leaves args alone
        self.code = code
        self.message = message
        self.data = data

    def __str__(self) -> str:
        text = f"{self.message} (code {self.code})"
        if self.data is not None:
            text += f": {_short_repr(self.data)}"
        return text

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code!r}, message={self.message!r}, data={self.data!r})"

    def __reduce__(self) -> Any:
        args, kwargs = self._arguments
        return (rebuild_error, (type(self), args, kwargs), dict(self.__dict__))

    def to_error_object(self) -> Dict[str, Any]:
        """The ``error`` member of a response that carries this exception."""
        error: Dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


def rebuild_error(cls: Type[JsonRpcError], args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> JsonRpcError:
    return cls(*args, **kwargs)


class RemoteError(JsonRpcError):
    """The peer answered a request with this error (a JSON-RPC error response).

    ``code``, ``message`` and ``data`` are the peer's, as sent.  The request
    reached the peer and was refused: retrying the same request will usually be
    refused again.  Built by ``error_from_response`` only.
    """


# -- the five codes of the specification ------------------------------------------------


class _StandardError(JsonRpcError):
    """A JSON-RPC error whose code is fixed by its class: built as ``Cls(message=..., data=None)``."""

    default_code: int = INTERNAL_ERROR
    default_message: str = "Internal error"

    def __init__(self, message: Optional[str] = None, data: Any = None) -> None:
        super().__init__(self.default_code, message or self.default_message, data)


class ParseError(_StandardError):
    """-32700: the text received was not valid JSON."""

    default_code = PARSE_ERROR
    default_message = "Parse error"


class InvalidRequest(_StandardError):
    """-32600: the JSON received was not a valid JSON-RPC 2.0 message."""

    default_code = INVALID_REQUEST
    default_message = "Invalid Request"


class MethodNotFound(_StandardError):
    """-32601: the method does not exist or is not available."""

    default_code = METHOD_NOT_FOUND
    default_message = "Method not found"


class InvalidParams(_StandardError):
    """-32602: the method's parameters were invalid."""

    default_code = INVALID_PARAMS
    default_message = "Invalid params"


class InternalError(_StandardError):
    """-32603: the peer failed while handling a valid request."""

    default_code = INTERNAL_ERROR
    default_message = "Internal error"


class RemoteParseError(ParseError, RemoteError):
    """The peer answered -32700: it could not parse what it was sent."""


class RemoteInvalidRequest(InvalidRequest, RemoteError):
    """The peer answered -32600: what it was sent is not a valid request."""


class RemoteMethodNotFound(MethodNotFound, RemoteError):
    """The peer answered -32601: it has no such method."""


class RemoteInvalidParams(InvalidParams, RemoteError):
    """The peer answered -32602: the parameters were invalid."""


class RemoteInternalError(InternalError, RemoteError):
    """The peer answered -32603 (or with an error object too malformed to read)."""


class RequestCancelled(RemoteError):
    """-32800: the peer answered that the request was cancelled (LSP ``RequestCancelled``).

    A language server answers so when the request was withdrawn with
    ``$/cancelRequest`` and it had not finished yet, or when it dropped the
    request itself (a newer edit of the document made the answer moot).  A
    request this client gave up on (timeout, ``Future.cancel()``) has already
    failed with ``RequestTimeout`` or ``CancelledError``: the peer's later
    -32800 answer is dropped, so this exception means the *peer* decided.
    Retrying is safe; the request may be answered next time (after the
    document settled).

    Built as ``RequestCancelled(message=None, data=None)``.
    """

    def __init__(self, message: Optional[str] = None, data: Any = None) -> None:
        super().__init__(REQUEST_CANCELLED, message or "Request cancelled", data)


# -- from the wire -----------------------------------------------------------------------

#: The five codes of the specification -> their class.
STANDARD_ERRORS: Dict[int, Type[_StandardError]] = {
    cls.default_code: cls for cls in (ParseError, InvalidRequest, MethodNotFound, InvalidParams, InternalError)
}
#: The same codes -> the class of the peer's answer with that code.
REMOTE_ERRORS: Dict[int, Type[_StandardError]] = {
    cls.default_code: cls
    for cls in (RemoteParseError, RemoteInvalidRequest, RemoteMethodNotFound, RemoteInvalidParams, RemoteInternalError)
}
#: Codes beyond the specification that a peer's answer is known by -> their class.
PROTOCOL_ERRORS: Dict[int, Callable[[Optional[str], Any], RemoteError]] = {REQUEST_CANCELLED: RequestCancelled}


def error_from_response(error: Any) -> RemoteError:
    """Build the exception for the ``error`` member of a response.

    Args:
        error: the ``error`` member, as decoded.

    Returns:
        A ``RemoteError``: the ``Remote*`` class of a standard code, the
        class of ``PROTOCOL_ERRORS`` for a code listed there
        (``RequestCancelled``), else a plain ``RemoteError`` with
        the peer's code.  A malformed error
        object (not a mapping, code not an int) is a ``RemoteInternalError``
        with the original object in ``data``.
    """
    if not isinstance(error, dict):
        return RemoteInternalError("Malformed error object in response", data=error)
    code = error.get("code")
    message = error.get("message")
    data = error.get("data")
    if not isinstance(message, str):
        message = "" if message is None else str(message)
    if not isinstance(code, int) or isinstance(code, bool):
        return RemoteInternalError(message or "Malformed error object in response", data=error)
    cls = REMOTE_ERRORS.get(code)
    if cls is not None:
        remote = cls(message or cls.default_message, data)
        assert isinstance(remote, RemoteError)  # every class of REMOTE_ERRORS is one
        return remote
    known = PROTOCOL_ERRORS.get(code)
    if known is not None:
        return known(message or None, data)
    return RemoteError(code, message, data)


def _short_repr(value: Any, limit: int = 300) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
