"""The exception tree of jsonrpc_threads, and its table of error codes.

Every exception the library raises is a ``JsonRpcError``, so one
``except JsonRpcError`` catches them all.  Where a builtin base helps callers that
already handle it, the class has it too (``RequestTimeout`` is a
``TimeoutError``, ``TransportClosed`` a ``ConnectionError``, ...).
This module imports nothing of the package: the client, the transports and
``auth/`` define their errors here and import them from here.  The MCP
layer's own errors (MCP's codes, the protocol's violations, the tool
registry's lookups) live in ``jsonrpc_threads.mcp.errors``; the table
below lists them too, and they stay importable from here, loaded on first
use (nothing below ``mcp/`` asks for them).

Who said so.  An error is either the peer's answer or a local failure:

- ``RemoteError``: the peer answered a request with an error response.
  ``error_from_response`` is the one place where a wire error becomes an
  exception, and it returns only ``RemoteError`` instances: for the five
  codes of the JSON-RPC 2.0 specification the ``Remote*`` class, which is also
  the standard class (``RemoteMethodNotFound`` is a ``MethodNotFound``
  and a ``RemoteError``); for any other code a plain ``RemoteError``.
- The five standard classes (``ParseError`` .. ``InternalError``) name
  a code, whoever raised it.  A handler inside
  ``jsonrpc_threads.server.serve`` (or an ``on_request`` handler) raises
  ``MethodNotFound(message=..., data=None)`` to answer with -32601, and the
  library raises ``ParseError`` / ``InvalidRequest`` itself when a
  message it received is malformed; those are not ``RemoteError``.  So
  ``except MethodNotFound`` catches the code from anywhere, ``except
  RemoteError`` every answer of the peer.
- Everything else is local: nothing answered in time, the transport is gone,
  an HTTP exchange failed without a JSON-RPC error body, a configuration or a
  lookup is wrong.  Their codes come from the server-error range
  -32000..-32099, as the official MCP SDKs do; they are never looked up from
  wire errors, so a peer that answers with the same code still produces a plain
  ``RemoteError``.
- One code beyond the specification is known on the wire: -32800, the
  ``RequestCancelled`` of the Language Server Protocol (in the range JSON-RPC
  reserves for implementations), becomes ``RequestCancelled``.

The table (``code``: the value of ``.code``; ``peer``: the code the peer sent)::

    class                  code     origin   also a            raised by
    JsonRpcError           any      either   Exception         (the root)
    RemoteError            peer     remote                     error_from_response
    ParseError             -32700   local                      messages, handlers
    InvalidRequest         -32600   local                      messages, handlers
    MethodNotFound         -32601   local                      handlers, server
    InvalidParams          -32602   local                      handlers
    InternalError          -32603   local                      handlers, server
    RemoteParseError       -32700   remote   ParseError        error_from_response
    RemoteInvalidRequest   -32600   remote   InvalidRequest    error_from_response
    RemoteMethodNotFound   -32601   remote   MethodNotFound    error_from_response
    RemoteInvalidParams    -32602   remote   InvalidParams     error_from_response
    RemoteInternalError    -32603   remote   InternalError     error_from_response
    RequestCancelled       -32800   remote                     error_from_response
    TransportClosed        -32000   local    ConnectionError   transports, client
    RequestTimeout         -32001   local    TimeoutError      client
    HttpError              -32002   local                      HTTP transport
    HttpConnectionError    -32002   local    ConnectionError   HTTP transport
    SessionExpired         -32002   local    HttpError         HTTP transport
    StreamLost             -32002   local    ConnectionError   HTTP transport (2026-07-28)
    AuthorizationError     -32002   local    HttpError         auth
    MessageTooLarge        -32003   local                      transports
    ConfigError            -32010   local    ValueError        transports.config, mcp.config
    UnknownTool            -32602   local    LookupError       mcp.registry (mcp.errors)
    UnknownServer          -32602   local    LookupError       mcp.registry (mcp.errors)
    ServerUnavailable      -32000   local    ConnectionError   mcp.supervisor (mcp.errors)
    ProtocolVersionError   -32600   local                      mcp.handshake (mcp.errors)
    ProtocolError          -32600   local                      mcp, acp (an answer the protocol forbids)
    SkillVerificationError -32602   local                      mcp.skills (mcp.errors)
    HeaderMismatch         -32020   remote   RemoteError       mcp.errors.error_from_mcp
    MissingClientCapability -32021  remote   RemoteError       mcp.errors.error_from_mcp
    UnsupportedProtocolVersion -32022  remote   RemoteError    mcp.errors.error_from_mcp

MCP's codes.  MCP revision 2026-07-28 reserves -32020..-32099 for the codes
it defines.  ``error_from_response`` serves every JSON-RPC peer and
leaves them plain ``RemoteError``; the MCP layer turns them into their
classes (``jsonrpc_threads.mcp.errors.error_from_mcp``), so only an MCP
server's -32022 becomes an ``UnsupportedProtocolVersion``.

Pickling.  Every exception here (and any subclass a user writes) pickles and
copies with its attributes: ``JsonRpcError`` records the arguments its
class was called with, and rebuilds from them, then restores the instance's
attributes (a message changed after construction included).
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing is not imported at run time: a tool server's start-up pays for every module
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, FrozenSet, List, Optional, Tuple, Type, TypeVar, Union

    #: A request id: an ``int`` or a ``str``.
    RequestId = Union[int, str]
    _E = TypeVar("_E", bound="JsonRpcError")


#: The MCP layer's names, defined in ``jsonrpc_threads.mcp.errors`` and still importable from here.
_MCP_NAMES: FrozenSet[str] = frozenset(
    {
        "HEADER_MISMATCH",
        "MCP_ERRORS",
        "MISSING_REQUIRED_CLIENT_CAPABILITY",
        "UNSUPPORTED_PROTOCOL_VERSION",
        "HeaderMismatch",
        "MissingClientCapability",
        "ProtocolVersionError",
        "ServerUnavailable",
        "SkillVerificationError",
        "UnknownServer",
        "UnknownTool",
        "UnsupportedProtocolVersion",
        "error_from_mcp",
    }
)


def __getattr__(name: str) -> Any:
    """``RequestId`` (``Union[int, str]``), made on first use: typing loads only when asked for.

    The MCP layer's errors (``_MCP_NAMES``) load ``jsonrpc_threads.mcp.errors`` on first use.
    """
    if name == "RequestId":
        from typing import Union  # noqa: PLC0415

        return Union[int, str]
    if name in _MCP_NAMES:
        from importlib import import_module  # noqa: PLC0415 - the MCP layer, only when asked for

        value = getattr(import_module("jsonrpc_threads.mcp.errors"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> List[str]:
    return sorted(set(globals()) | _MCP_NAMES)


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
        if cls is not RequestTimeout:  # rebuilt from its attributes: see RequestTimeout.__reduce__
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
        return (_rebuild, (type(self), args, kwargs), dict(self.__dict__))

    def to_error_object(self) -> Dict[str, Any]:
        """The ``error`` member of a response that carries this exception."""
        error: Dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


def _rebuild(cls: Type[JsonRpcError], args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> JsonRpcError:
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


# -- local failures: the client and its transports ---------------------------------------


class RequestTimeout(JsonRpcError, TimeoutError):
    """No response arrived before the request's deadline.

    Raised locally; the request was withdrawn from the pending map, so a late
    response is dropped.  The peer may still be working on it (and was sent a
    cancellation notification where the client is configured to send one).
    Retrying is safe only when the method is idempotent.

    Attributes:
        method: the request's method.
        request_id: the request's id.
        timeout: the deadline in seconds that expired.
        hint: what the transport noticed that may explain it (say, a
            language server's ``Content-Length`` headers on a line-framed
            stream, or the last line the server wrote to stderr), or ``""``.
    """

    def __init__(self, method: str, request_id: Optional[RequestId], timeout: Optional[float], hint: str = "") -> None:
        message = f"Request {method!r} (id {request_id!r}) timed out after {timeout}s"
        super().__init__(REQUEST_TIMEOUT, f"{message}; {hint}" if hint else message)
        self.method = method
        self.request_id = request_id
        self.timeout = timeout
        self.hint = hint

    def __reduce__(self) -> Any:
        # A burst of timeouts makes one of these each: its attributes are plain values,
        # so recording no arguments tuple leaves its __dict__ untracked by the cycle
        # collector (one tracked object per timeout, not three).
        if "_arguments" in self.__dict__:  # a subclass, rebuilt from what it was called with
            return super().__reduce__()
        arguments = (self.method, self.request_id, self.timeout, self.hint)
        return (_rebuild, (type(self), arguments, {}), dict(self.__dict__))


class TransportClosed(JsonRpcError, ConnectionError):
    """The transport is gone: end of stream, child exit, broken pipe or ``close()``.

    Every request pending at that moment fails with it, and so does every later
    request on the same client.  A new client (a new process) is needed to retry.

    Attributes:
        returncode: the child's exit status when known (negative: killed by that
            signal), else ``None``.
        stderr_tail: the last lines the child wrote to stderr, possibly empty.
    """

    def __init__(
        self,
        message: str = "Transport closed",
        *,
        returncode: Optional[int] = None,
        stderr_tail: str = "",
    ) -> None:
        data: Optional[Dict[str, Any]] = None
        if returncode is not None or stderr_tail:
            data = {"returncode": returncode, "stderr_tail": stderr_tail}
        super().__init__(TRANSPORT_CLOSED, message, data)
        self.returncode = returncode
        self.stderr_tail = stderr_tail

    def __str__(self) -> str:
        text = self.message
        if self.returncode is not None:
            text += f" (exit code {self.returncode})"
        if self.stderr_tail:
            text += "; stderr ends with:\n" + self.stderr_tail
        return text


class MessageTooLarge(JsonRpcError):
    """A message exceeded the configured size limit and was not processed.

    Attributes:
        limit: the limit in bytes.
    """

    def __init__(self, limit: int, what: str = "message") -> None:
        super().__init__(MESSAGE_TOO_LARGE, f"{what} larger than the limit of {limit} bytes")
        self.limit = limit


class HttpError(JsonRpcError):
    """An HTTP exchange failed without a JSON-RPC error body.

    Fails only the request it carried; the client stays usable.  A 5xx or a
    429 may be retried (after ``Retry-After`` when given); a 4xx is the
    request's fault and will fail again.

    Attributes:
        status_code: the HTTP status, or ``None`` when no answer arrived.
        body_excerpt: the first few hundred characters of the answer's body.
    """

    def __init__(self, message: str, *, status_code: Optional[int] = None, body_excerpt: str = "") -> None:
        data: Optional[Dict[str, Any]] = None
        if status_code is not None or body_excerpt:
            data = {"status_code": status_code, "body": body_excerpt}
        super().__init__(HTTP_ERROR, message, data)
        self.status_code = status_code
        self.body_excerpt = body_excerpt


class HttpConnectionError(HttpError, ConnectionError):
    """The HTTP connection failed: refused, reset, or no answer in time.

    Safe to retry for idempotent methods; the server may or may not have seen
    the request.
    """


class SessionExpired(HttpError):
    """The server answered 404 to a request that carried a session id.

    The session is gone on the server; the MCP layer starts a new one and
    retries once.  Plain JSON-RPC users must create a new transport.
    """


# -- local failures: authorization (jsonrpc_threads.auth) ----------------------------------


class StreamLost(HttpConnectionError):
    """An answer's SSE stream ended before its response, and the transport resumes nothing (2026-07-28).

    The stateless revision of Streamable HTTP has no resumption: the request
    may or may not have run.  ``McpClient`` sends it again once, as a new
    request with a new id, as that revision asks.
    """


class AuthorizationError(HttpError):
    """Authorization failed or was refused; the request that needed it failed.

    Raised for a server whose protected-resource metadata names another
    resource, an authorization server that cannot be discovered or refuses
    (``invalid_grant``, ``access_denied``), a redirect whose ``state`` or
    ``iss`` does not match, a user who did not finish in time, and a server
    that keeps answering 401 or 403 after the bounded number of authorizations.
    Its message never contains a token, a secret or an authorization code.

    Retrying is safe (nothing was sent with a bad token) but will usually
    need the user: a new authorization starts on the next request.

    Attributes:
        status_code: the MCP server's status (401, 403) when the failure
            answers one of its challenges, else ``None``.
        oauth_error: the OAuth ``error`` code returned by the server
            (``invalid_grant``, ``insufficient_scope``, ...), when there was one.
    """

    def __init__(
        self,
        message: str,
        *,
        status_code: Optional[int] = None,
        body_excerpt: str = "",
        oauth_error: Optional[str] = None,
    ) -> None:
        super().__init__(message, status_code=status_code, body_excerpt=body_excerpt)
        self.oauth_error = oauth_error


# -- local failures: configuration ------------------------------------------------------------


class ConfigError(JsonRpcError, ValueError):
    """A configuration (or one server entry of it) cannot be used.

    The message says where: the file, and the server's name and key when the
    problem is in one entry.  Not retryable: fix the configuration (or set the
    missing environment variable).

    Attributes:
        server: the server whose entry is at fault, or ``None`` (the whole
            file, or an entry without a name).
    """

    def __init__(self, message: str, *, server: Optional[str] = None) -> None:
        super().__init__(CONFIG_ERROR, message, None if server is None else {"server": server})
        self.server = server

    def __str__(self) -> str:
        return self.message


class ProtocolError(JsonRpcError):
    """The peer sent an answer its protocol forbids: MCP (an unknown ``resultType``, an interim
    result on a request that may not have one, a round trip that never ends) or ACP (another
    protocol version, a session without an id, a turn without a stop reason).

    The peer's fault: sending the same request again will usually fail the same way.
    """

    def __init__(self, message: str, data: Any = None) -> None:
        super().__init__(INVALID_REQUEST, message, data)

    def __str__(self) -> str:
        return self.message


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


__all__ = [
    "CONFIG_ERROR",
    "HTTP_ERROR",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "MESSAGE_TOO_LARGE",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "PROTOCOL_ERRORS",
    "REMOTE_ERRORS",
    "REQUEST_CANCELLED",
    "REQUEST_TIMEOUT",
    "STANDARD_ERRORS",
    "TRANSPORT_CLOSED",
    "AuthorizationError",
    "ConfigError",
    "ProtocolError",
    "HttpConnectionError",
    "HttpError",
    "InternalError",
    "InvalidParams",
    "InvalidRequest",
    "JsonRpcError",
    "MessageTooLarge",
    "MethodNotFound",
    "ParseError",
    "RemoteError",
    "RemoteInternalError",
    "RemoteInvalidParams",
    "RemoteInvalidRequest",
    "RemoteMethodNotFound",
    "RemoteParseError",
    "RequestCancelled",
    "RequestId",
    "RequestTimeout",
    "SessionExpired",
    "StreamLost",
    "TransportClosed",
    "error_from_response",
]
