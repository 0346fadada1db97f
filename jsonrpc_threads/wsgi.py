"""A WSGI application that serves ``handler(method, params)`` as JSON-RPC 2.0 over HTTP.

Theory of operation.  ``JsonRpcApp`` is the HTTP twin of
``jsonrpc_threads.server.serve``: the same handler, the same policy for
what a handler returns or raises (``jsonrpc_threads.runtime.dispatch``: a result
becomes a response, a ``JsonRpcError`` that
error, anything else ``-32603`` with the exception's class name, the
traceback logged, never sent), the same envelopes
(``jsonrpc_threads.messages``).  Mount it in any WSGI server or framework
(gunicorn, waitress, uWSGI, wsgiref; a Flask or Django route) to expose tools
from a threaded web app.  It speaks MCP Streamable HTTP in its JSON answer
mode, stateless:

- ``POST`` with one message or a batch: requests are answered ``200`` with
  ``application/json`` (one response, or an array in the order of the batch's
  requests); a POST that holds only notifications and responses is answered
  ``202 Accepted`` with no body, after their handlers ran (so a client's
  ``notify()`` returns once the server has handled it);
- a body that is not JSON, an empty batch, or a message whose id cannot be
  read is answered ``400`` with the JSON-RPC error (``"id": null``); a body
  over ``max_body_bytes`` ``413``; a POST without a length ``411``;
- ``GET`` (MCP's stream for server-initiated messages), ``DELETE`` (MCP's
  end of session) and every other method ``405`` with ``Allow: POST``: there
  are no sessions and no server-initiated messages;
- the DNS-rebinding protection MCP asks of HTTP servers, on ``Host`` and
  ``Origin``.  A page whose own name its attacker made resolve to
  ``127.0.0.1`` reaches a server on loopback with its own name as ``Host`` and
  its own origin as ``Origin``, the two agreeing; so a request that arrives
  over loopback (``REMOTE_ADDR`` is ``127.x.x.x`` or ``::1``) must name the
  server by a loopback name (``localhost``, ``127.x.x.x``, ``[::1]``; any
  port), else it is answered ``421 Misdirected Request``.  Behind a reverse
  proxy on the same machine, or to answer other names, list the names in
  ``allowed_hosts`` (which replaces that default; ``["*"]`` accepts any).  A
  request from another machine is held to ``allowed_hosts`` only when it is
  given.  Then a browser's cross-origin POST (an ``Origin`` other than
  ``scheme://`` + the ``Host`` it was let in with) is refused with ``403``
  unless the origin is in ``allowed_origins``.  A request with neither
  header (not a browser's: browsers send both) passes.

Threads.  The WSGI server's request thread runs the handlers of its request,
one after another in the order of the batch: the application starts no
thread and holds no lock while a handler runs, so handlers must be
thread-safe (the server runs many requests at once).

No notifications.  An answer is one JSON body, so a handler cannot send a
notification (progress, a log message) before it.  A handler written for
``jsonrpc_threads.server.serve`` runs here unchanged:
``jsonrpc_threads.server.current_request_id`` works, and
``jsonrpc_threads.server.notify`` drops what it is given (logged at
debug level), so a ``progressToken`` in a request's ``_meta`` gets no
progress.  ``current_request_id`` and ``current_environ`` (the
request's WSGI environ: headers, remote address, what an auth middleware put
there) work inside a handler too.

Thread-safety: an application may serve any number of requests at once.
"""

from __future__ import annotations

import contextvars
import functools

from .errors import InvalidRequest, ParseError
from .messages import ErrorResponse, Notification, Request, Response, decode, encode, error_message, parse_message
from .runtime.dispatch import answer_request, run_notification
from .runtime.logs import get_logger
from .serving.connection import ServerConnection
from .serving.context import handling
from .serving.http_guard import ANY_HOST, LOOPBACK_HOSTS, HostGuard, read_body, send_json

TYPE_CHECKING = False  # typing is not imported at run time (start-up cost)
if TYPE_CHECKING:
    from typing import Any, Callable, Iterable, List, Optional, Sequence, Tuple

    from _typeshed.wsgi import StartResponse, WSGIEnvironment

    from .errors import RequestId

    #: ``handler(method, params) -> result``; ``params`` is a dict, a list or ``None``.
    Handler = Callable[[str, Any], Any]

logger = get_logger(__name__)

#: The largest request body accepted by default (16 MiB, as the stdio server's lines).
DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024
#: What a JSON answer is sent as.
JSON_CONTENT_TYPE = "application/json"

_OK = "200 OK"
_ACCEPTED = "202 Accepted"
_BAD_REQUEST = "400 Bad Request"
_FORBIDDEN = "403 Forbidden"
_NOT_FOUND = "404 Not Found"
_NOT_ALLOWED = "405 Method Not Allowed"
_MISDIRECTED = "421 Misdirected Request"


class _HandlerContext:
    __slots__ = ("environ", "request_id")

    def __init__(self, request_id: Optional[RequestId], environ: WSGIEnvironment) -> None:
        self.request_id = request_id
        self.environ = environ


_current: contextvars.ContextVar[Optional[_HandlerContext]] = contextvars.ContextVar(
    "jsonrpc_threads_wsgi_handler", default=None
)


class _NoStream:
    """Where ``server.notify()`` writes inside a WSGI handler: nowhere (a JSON answer has no stream)."""

    def write(self, data: bytes) -> int:
        raise OSError("a JSON answer has no stream for notifications")

    def flush(self) -> None:
        pass


def _no_stream_connection() -> ServerConnection:
    connection = ServerConnection(_NoStream())  # type: ignore[arg-type]
    connection.close()  # every message is dropped, logged at debug level
    return connection


#: The connection ``server.notify()`` finds inside a WSGI handler (closed: it drops everything).
_NO_STREAM = _no_stream_connection()


def _context(what: str) -> _HandlerContext:
    context = _current.get()
    if context is None:
        raise RuntimeError(f"{what}() works only inside a handler called by jsonrpc_threads.wsgi.JsonRpcApp")
    return context


def current_request_id() -> Optional[RequestId]:
    """The id of the request the calling handler serves (``None`` for a notification).

    Raises:
        RuntimeError: when called outside a handler.
    """
    return _context("current_request_id").request_id


def current_environ() -> WSGIEnvironment:
    """The WSGI environ of the HTTP request the calling handler serves (headers as ``HTTP_*`` keys).

    Raises:
        RuntimeError: when called outside a handler.
    """
    return _context("current_environ").environ


class JsonRpcApp:
    """A WSGI application serving ``handler(method, params)`` (see the module docstring).

    Thread-safe: the WSGI server may call it from any number of threads at once.

    Args:
        handler: ``handler(method, params) -> result``, called on the request's
            thread; it raises a ``JsonRpcError``
            (``MethodNotFound``, ``InvalidParams``...) to answer with that error.
        max_body_bytes: the largest request body accepted (``413`` beyond).
        allowed_origins: origins (``"https://app.example.com"``) a browser may
            POST from besides the server's own; ``None``: only the server's own.
        allowed_hosts: the ``Host`` values the app answers (``421``
            otherwise): ``"name"`` for any port, ``"name:port"`` for one,
            ``"*"`` for any name.  ``None`` (the default): over loopback only
            the loopback names (``LOOPBACK_HOSTS``), from another
            machine any (see the module docstring: DNS rebinding).
        path: serve only this path (``404`` elsewhere); ``None``: every path
            (a framework's route chooses).

    Raises:
        ValueError: for a ``max_body_bytes`` below 1.
        TypeError: for ``allowed_hosts`` or ``allowed_origins`` given as one
            string instead of a list of them.
    """

    def __init__(
        self,
        handler: Handler,
        *,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        allowed_origins: Optional[Sequence[str]] = None,
        path: Optional[str] = None,
        allowed_hosts: Optional[Sequence[str]] = None,
    ) -> None:
        if max_body_bytes < 1:
            raise ValueError(f"max_body_bytes must be at least 1, not {max_body_bytes}")
        self._guard = HostGuard(allowed_hosts, allowed_origins)
        self.handler = handler
        self.max_body_bytes = max_body_bytes
        self.allowed_origins = self._guard.allowed_origins
        self.allowed_hosts = self._guard.allowed_hosts
        self.path = path

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        """Answer one HTTP request (the WSGI entry point)."""
        if self.path is not None and environ.get("PATH_INFO", "") != self.path:
            return send_json(start_response, _NOT_FOUND, b"")
        if environ.get("REQUEST_METHOD") != "POST":
            return send_json(start_response, _NOT_ALLOWED, b"", [("Allow", "POST")])
        if not self._guard.host_allowed(environ):
            logger.warning(
                "refused a POST naming host %.100r (from %s): not an allowed host",
                environ.get("HTTP_HOST"),
                environ.get("REMOTE_ADDR"),
            )
            return send_json(start_response, _MISDIRECTED, b"")
        if not self._guard.origin_allowed(environ):
            logger.warning("refused a POST from origin %.100r", environ.get("HTTP_ORIGIN"))
            return send_json(start_response, _FORBIDDEN, b"")
        body, refusal = read_body(environ, self.max_body_bytes)
        if refusal is not None:
            status, error = refusal
            return send_json(start_response, status, encode(error_message(None, error)) if error else b"")
        status, answer = self.answer(body, environ)
        return send_json(start_response, status, answer)

    def answer(self, body: bytes, environ: Optional[WSGIEnvironment] = None) -> Tuple[str, bytes]:
        """The HTTP status and body that answer one POST body (what ``__call__`` sends).

        Runs the handlers on the calling thread.  Never raises.
        """
        try:
            value = decode(body)
        except ParseError as exc:
            logger.warning("POST body is not JSON (%s); answered -32700", exc.data)
            return _BAD_REQUEST, encode(error_message(None, exc))
        items: List[Any]
        if isinstance(value, list):
            if not value:
                error = InvalidRequest(data={"reason": "empty batch"})
                return _BAD_REQUEST, encode(error_message(None, error))
            items = value
        else:
            items = [value]
        env: WSGIEnvironment = environ if environ is not None else {}
        answers = [answer for answer in (self._item(item, env) for item in items) if answer is not None]
        if not answers:
            return _ACCEPTED, b""
        if not isinstance(value, list):
            status = _BAD_REQUEST if answers[0][0] else _OK
            return status, answers[0][1]
        return _OK, b"[" + b",".join(part for _, part in answers) + b"]"

    def _item(self, obj: Any, environ: WSGIEnvironment) -> Optional[Tuple[bool, bytes]]:
        """One message of the body: its encoded answer (and whether it is an unmatched error), or None."""
        try:
            message = parse_message(obj)
        except InvalidRequest as exc:
            if isinstance(obj, dict) and "method" not in obj and ("result" in obj or "error" in obj):
                logger.warning("ignored a malformed response: %s", exc.data)
                return None
            request_id = exc.data.get("id") if isinstance(exc.data, dict) else None
            logger.warning("invalid request (%s); answered -32600", exc.data)
            return request_id is None, encode(error_message(request_id, exc))
        if isinstance(message, (Response, ErrorResponse)):
            logger.warning("ignored a response (id %r): this server sends no requests", message.id)
            return None
        request_id = getattr(message, "id", None)
        token = _current.set(_HandlerContext(request_id, environ))
        served = handling(_NO_STREAM, request_id)
        served.__enter__()
        try:
            if isinstance(message, Notification):
                invoke = functools.partial(self.handler, message.method, message.params)
                run_notification(message.method, invoke, "wsgi", logger)
                return None
            assert isinstance(message, Request)
            invoke = functools.partial(self.handler, message.method, message.params)
            return False, answer_request(message.id, message.method, invoke, "wsgi", logger)
        finally:
            served.__exit__()
            _current.reset(token)

    def __repr__(self) -> str:
        return f"<JsonRpcApp {getattr(self.handler, '__name__', self.handler)!r}>"


def make_app(handler: Handler, **options: Any) -> JsonRpcApp:
    """``JsonRpcApp(handler, **options)``: a WSGI application serving ``handler``."""
    return JsonRpcApp(handler, **options)


def __getattr__(name: str) -> Any:
    """``Handler`` (a ``typing.Callable``), made on first use: typing loads only when asked for."""
    if name == "Handler":
        from typing import Any, Callable  # noqa: PLC0415

        return Callable[[str, Any], Any]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "ANY_HOST",
    "JSON_CONTENT_TYPE",
    "LOOPBACK_HOSTS",
    "Handler",
    "JsonRpcApp",
    "current_environ",
    "current_request_id",
    "make_app",
]
