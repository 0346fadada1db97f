"""The exception tree of jsonrpc_threads.

Every exception the library raises is a :class:`JsonRpcError`, so one
``except JsonRpcError`` catches them all.  Where a builtin base helps callers that
already handle it, the class has it too: :class:`RequestTimeout` is a
:class:`TimeoutError` and :class:`TransportClosed` is a :class:`ConnectionError`.

The five codes of the JSON-RPC 2.0 specification have one class each.  They are
used in both directions: a client receives them as error responses, and a handler
inside :func:`jsonrpc_threads.server.serve` raises them to answer with that code.
:func:`error_from_response` is the one place where a wire error becomes an
exception; unknown codes become a plain :class:`JsonRpcError`.

Codes used by errors that never cross the wire (timeouts, a closed transport,
HTTP failures) come from the server-error range -32000..-32099, as the official
MCP SDKs do; they are not looked up from wire errors, so a server that answers
with the same code still produces a plain :class:`JsonRpcError`.
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Type, Union

RequestId = Union[int, str]

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


class JsonRpcError(Exception):
    """Root of every exception raised by jsonrpc_threads.

    Attributes:
        code: the JSON-RPC error code (an ``int``).
        message: a short, human-readable description.
        data: the error's ``data`` member as sent by the peer, or ``None``.
    """

    code: int
    message: str
    data: Any

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(code, message, data)
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

    def to_error_object(self) -> Dict[str, Any]:
        """The ``error`` member of a response that carries this exception."""
        error: Dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


class _StandardError(JsonRpcError):
    """A JSON-RPC error whose code is fixed by its class."""

    default_code: int = INTERNAL_ERROR
    default_message: str = "Internal error"

    def __init__(self, message: Optional[str] = None, data: Any = None) -> None:
        super().__init__(self.default_code, message or self.default_message, data)

    def __reduce__(self) -> Any:
        return (type(self), (self.message, self.data))


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
    """

    def __init__(self, method: str, request_id: Optional[RequestId], timeout: Optional[float]) -> None:
        super().__init__(REQUEST_TIMEOUT, f"Request {method!r} (id {request_id!r}) timed out after {timeout}s")
        self.method = method
        self.request_id = request_id
        self.timeout = timeout

    def __reduce__(self) -> Any:
        return (type(self), (self.method, self.request_id, self.timeout))


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

    def __reduce__(self) -> Any:
        return (_rebuild_transport_closed, (type(self), self.message, self.returncode, self.stderr_tail))


def _rebuild_transport_closed(
    cls: Type[TransportClosed], message: str, returncode: Optional[int], stderr_tail: str
) -> TransportClosed:
    return cls(message, returncode=returncode, stderr_tail=stderr_tail)


class MessageTooLarge(JsonRpcError):
    """A message exceeded the configured size limit and was not processed.

    Attributes:
        limit: the limit in bytes.
    """

    def __init__(self, limit: int, what: str = "message") -> None:
        super().__init__(MESSAGE_TOO_LARGE, f"{what} larger than the limit of {limit} bytes")
        self.limit = limit

    def __reduce__(self) -> Any:
        return (_rebuild_too_large, (type(self), self.limit, self.message))


def _rebuild_too_large(cls: Type[MessageTooLarge], limit: int, message: str) -> MessageTooLarge:
    error = cls(limit)
    error.message = message
    return error


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

    def __reduce__(self) -> Any:
        return (_rebuild_http_error, (type(self), self.message, self.status_code, self.body_excerpt))


def _rebuild_http_error(cls: Type[HttpError], message: str, status_code: Optional[int], body: str) -> HttpError:
    return cls(message, status_code=status_code, body_excerpt=body)


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


#: The one code -> class table for errors received from the wire.
STANDARD_ERRORS: Dict[int, Type[_StandardError]] = {
    cls.default_code: cls for cls in (ParseError, InvalidRequest, MethodNotFound, InvalidParams, InternalError)
}


def error_from_response(error: Any) -> JsonRpcError:
    """Build the exception for the ``error`` member of a response.

    A malformed error object (not a mapping, code not an int) still becomes a
    :class:`JsonRpcError`, with the original object in ``data``.
    """
    if not isinstance(error, dict):
        return InternalError("Malformed error object in response", data=error)
    code = error.get("code")
    message = error.get("message")
    data = error.get("data")
    if not isinstance(message, str):
        message = "" if message is None else str(message)
    if not isinstance(code, int) or isinstance(code, bool):
        return InternalError(message or "Malformed error object in response", data=error)
    cls = STANDARD_ERRORS.get(code)
    if cls is not None:
        return cls(message or cls.default_message, data)
    return JsonRpcError(code, message, data)


def _short_repr(value: Any, limit: int = 300) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
