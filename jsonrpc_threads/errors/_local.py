"""Local failures: nothing answered in time, the transport is gone, HTTP, authorization, configuration.

Theory of operation: these are the exceptions the library raises of its own
accord, never built from a wire error: their codes come from the server-error
range (-32000..-32099, named in ``jsonrpc_threads.errors._tree``) and a peer
answering with the same code still produces a plain ``RemoteError``.  Each has
a builtin base where it helps (``RequestTimeout`` is a ``TimeoutError``,
``TransportClosed`` and ``HttpConnectionError`` are ``ConnectionError``s,
``ConfigError`` a ``ValueError``).  The public path is
``jsonrpc_threads.errors``, which re-exports every class.  Pure: no I/O.
"""

from __future__ import annotations

from ._tree import (
    CONFIG_ERROR,
    HTTP_ERROR,
    INVALID_REQUEST,
    MESSAGE_TOO_LARGE,
    REQUEST_TIMEOUT,
    TRANSPORT_CLOSED,
    JsonRpcError,
    rebuild_error,
)

TYPE_CHECKING = False  # typing is not imported at run time: a tool server's start-up pays for every module
if TYPE_CHECKING:
    from typing import Any, Dict, Optional, Union

    #: A request id: an ``int`` or a ``str``.
    RequestId = Union[int, str]


# -- the client and its transports ---------------------------------------


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

    def __new__(cls, *args: Any, **kwargs: Any) -> RequestTimeout:
        # A burst of timeouts makes one of these each: rebuilt from its attributes (see
        # __reduce__), it records no arguments tuple; a subclass records them as any error does.
        if cls is RequestTimeout:
            return TimeoutError.__new__(cls)
        return super().__new__(cls, *args, **kwargs)

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
        return (rebuild_error, (type(self), arguments, {}), dict(self.__dict__))


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


class StreamLost(HttpConnectionError):
    """An answer's SSE stream ended before its response, and the transport resumes nothing (2026-07-28).

    The stateless revision of Streamable HTTP has no resumption: the request
    may or may not have run.  ``McpClient`` sends it again once, as a new
    request with a new id, as that revision asks.
    """


# -- authorization (jsonrpc_threads.auth) ----------------------------------


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


# -- configuration and protocols ------------------------------------------------------------


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
