"""McpServer over Streamable HTTP, as a WSGI application: both eras on one endpoint.

Theory of operation.  ``McpWsgiApp`` answers at one path (``/mcp`` by
default; ``None`` for any, under a framework's route):

- ``POST`` carries one JSON-RPC message.  A notification or a response (the
  client's answer to a question of the server) is taken and answered
  ``202``.  A request runs on a worker of the app's pool while the request's
  thread waits for what the run sends: when the result comes first, the
  answer is one JSON body; when a notification (progress, a log) or a
  question to the client comes first, the answer becomes an SSE stream that
  carries those, then the result.  A run that stays silent for
  ``heartbeat`` seconds also turns its answer into an SSE stream, with a
  comment line at each heartbeat, so that a client that went away is noticed
  (the WSGI server closes the stream, and the run's ``Context.cancelled`` is
  set).  ``json_response=True`` runs the request on the request's thread and
  answers JSON only (what the run sends before its result is dropped).
- The era of a request is the engine's to decide (see ``engine``); this
  module adds what HTTP adds.  In the stateless era the request-metadata
  headers must agree with the body (``MCP-Protocol-Version`` with
  ``_meta``, ``Mcp-Method`` with the method, ``Mcp-Name`` with the name or
  URI, each ``Mcp-Param-*`` with the argument a tool's ``x-mcp-header``
  names; ``-32020`` otherwise), and errors have their HTTP status (``-32601``
  ``404``; ``-32602``, ``-32020``..``-32022`` ``400``).  In the session era,
  ``initialize`` opens a session whose id comes back in ``Mcp-Session-Id``;
  later requests name it; an unknown or ended session is ``404``.
- ``GET`` opens a session's stream of server-initiated notifications (list
  changes, resource updates), one at a time per session; ``DELETE`` ends a
  session.  Neither exists in the stateless era (``405``).
- Before anything, the DNS-rebinding defence and the body limit of
  ``jsonrpc_threads.serving.http_guard``.

Sessions live in this process: several processes behind one address need
sticky routing for the session era (the stateless era needs nothing).  An
app made before a fork (gunicorn ``--preload``) serves in the child with a
pool of the child's own (the parent's threads do not exist there); the
``requestState`` secret is inherited, so the forked workers open each
other's states.

Thread-safety: the WSGI server may call the app from any number of threads.
``close()`` ends every session and stops the pool's threads.
"""

from __future__ import annotations

import logging
import queue
import threading
import weakref
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

from ...errors import InvalidRequest, JsonRpcError, ParseError
from ...messages import decode, encode, error_message, is_valid_id, response_message
from ...runtime import fork as _fork
from ...runtime.workers import WorkerPool
from ...serving.http_guard import HostGuard, read_body, send_json
from ..protocol import SESSION_PROTOCOL_VERSIONS
from .engine import Engine, Incoming, is_stateless_request
from .event_log import FINAL, MESSAGE, EventLog
from .http_headers_check import header_mismatch
from .sessions import Session, SessionTable

__all__ = ["DEFAULT_MAX_BODY_BYTES", "HEARTBEAT_S", "POOL_JOIN_S", "McpWsgiApp"]

logger = logging.getLogger("jsonrpc_threads.mcp.server")

#: The largest request body accepted by default.
DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024
#: A run silent this long turns its answer into an SSE stream with a comment at each heartbeat.
HEARTBEAT_S = 10.0
#: ``close()``: how long to wait for the pool's idle threads.
POOL_JOIN_S = 2.0
#: The most runs at once on the app's pool by default (the WSGI server's threads bound it first).
DEFAULT_POOL_SIZE = 256

_HEADER_MISMATCH = -32020
_STATELESS_400 = frozenset({-32602, -32020, -32021, -32022})
_SSE_HEADERS = [("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache"), ("X-Accel-Buffering", "no")]
#: The ``retry`` (milliseconds) an SSE answer asks of a client that lost it.
RETRY_MS = 500
#: The first revision whose clients take an SSE answer's priming event (an id, empty data).
RESUMABLE_SINCE = "2025-11-25"

StartResponse = Callable[..., Any]


def _error(start_response: StartResponse, status: str, request_id: Any, error: JsonRpcError) -> List[bytes]:
    return send_json(start_response, status, encode(error_message(request_id, error)))


def _sse_event(message: Dict[str, Any], event_id: int) -> bytes:
    return b"id: %d\nevent: message\ndata: " % event_id + encode(message) + b"\n\n"


def _headers_of(environ: Dict[str, Any]) -> Dict[str, str]:
    found = {key[5:].replace("_", "-").lower(): str(value) for key, value in environ.items() if key.startswith("HTTP_")}
    if environ.get("CONTENT_TYPE"):
        found["content-type"] = str(environ["CONTENT_TYPE"])
    return found


class McpWsgiApp:
    """An McpServer as a WSGI application (see the module docstring).  Thread-safe.

    Made by ``McpServer.wsgi_app``; its arguments are described there.
    """

    def __init__(
        self,
        server: Any,
        *,
        path: Optional[str] = "/mcp",
        allowed_hosts: Optional[Sequence[str]] = None,
        allowed_origins: Any = (),
        json_response: Optional[bool] = None,
        max_body_bytes: Optional[int] = None,
        heartbeat: float = HEARTBEAT_S,
        max_workers: int = DEFAULT_POOL_SIZE,
    ) -> None:
        self._engine: Engine = server.engine
        self._sessions: SessionTable = server.sessions
        self._guard = HostGuard(allowed_hosts, allowed_origins)
        self.path = path
        self.json_response = json_response
        self.max_body_bytes = DEFAULT_MAX_BODY_BYTES if max_body_bytes is None else max_body_bytes
        if self.max_body_bytes < 1:
            raise ValueError(f"max_body_bytes must be at least 1, not {max_body_bytes}")
        self.heartbeat = heartbeat
        self._pool_size = max_workers
        self._pool = WorkerPool(max_workers, "mcp-http-worker")
        self._name = server.name
        self._lock = threading.Lock()  # guards _running and _closed
        self._running: Dict[int, Incoming] = {}
        self._closed = False
        self._engine.tasks.attach()
        _APPS.add(self)

    def _renew_in_child(self) -> None:
        """In a forked child (one thread alive): a pool, a lock and a table of runs of this process's own.

        The parent's pool counts threads that do not exist here (a task given
        to it would wait forever), its lock may have been held at the fork,
        and its runs are not this process's.
        """
        self._pool = WorkerPool(self._pool_size, "mcp-http-worker")
        self._lock = threading.Lock()
        self._running = {}

    def __repr__(self) -> str:
        return f"<McpWsgiApp {self._name!r} at {self.path or '*'}>"

    def close(self) -> None:
        """End every session and stop the pool's idle threads (runs still going finish on their daemon threads).

        The server's tasks are cancelled too when no other way of serving it is open.  Idempotent.
        """
        self._sessions.close_all()
        with self._lock:
            first, self._closed = not self._closed, True
            running = list(self._running.values())
        if first:
            self._engine.tasks.detach()
        for incoming in running:
            incoming.cancelled.set()
        self._pool.shutdown(POOL_JOIN_S, wait_for_busy=False)

    # -- the WSGI entry point ---------------------------------------------------------------

    def __call__(self, environ: Dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        """Answer one HTTP request."""
        if self.path is not None and environ.get("PATH_INFO", "") != self.path:
            return send_json(start_response, "404 Not Found", b"")
        if not self._guard.host_allowed(environ):
            logger.warning("refused a request naming host %.100r: not an allowed host", environ.get("HTTP_HOST"))
            return _error(
                start_response, "421 Misdirected Request", None, InvalidRequest("this host name is not served here")
            )
        if not self._guard.origin_allowed(environ):
            logger.warning("refused a request from origin %.100r", environ.get("HTTP_ORIGIN"))
            return _error(
                start_response, "403 Forbidden", None, InvalidRequest("requests from this origin are refused")
            )
        method = environ.get("REQUEST_METHOD")
        if method == "POST":
            return self._post(environ, start_response)
        if method == "GET":
            return self._get(environ, start_response)
        if method == "DELETE":
            return self._delete(environ, start_response)
        return send_json(start_response, "405 Method Not Allowed", b"", [("Allow", "GET, POST, DELETE")])

    # -- POST -------------------------------------------------------------------------------

    def _post(self, environ: Dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        content_type = str(environ.get("CONTENT_TYPE") or "")
        if "application/json" not in content_type.lower():
            return _error(
                start_response, "415 Unsupported Media Type", None, InvalidRequest("the body must be application/json")
            )
        body, refusal = read_body(environ, self.max_body_bytes)
        if refusal is not None:
            status, problem = refusal
            return _error(start_response, status, None, problem) if problem else send_json(start_response, status, b"")
        try:
            message = decode(body)
        except ParseError as exc:
            return _error(start_response, "400 Bad Request", None, exc)
        if isinstance(message, list):
            return _error(
                start_response,
                "400 Bad Request",
                None,
                InvalidRequest("batches are not accepted: send one message per POST", {"reason": "batch"}),
            )
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            return _error(start_response, "400 Bad Request", None, InvalidRequest("not a JSON-RPC 2.0 message"))
        headers = _headers_of(environ)
        session: Optional[Session] = None
        session_id = headers.get("mcp-session-id")
        if session_id is not None:
            session = self._sessions.get(session_id)
            if session is None:
                return _error(
                    start_response,
                    "404 Not Found",
                    message.get("id"),
                    JsonRpcError(-32001, "Session not found: start a new one with initialize"),
                )
        if "method" not in message:
            return self._client_answer(message, session, start_response)
        method = message["method"]
        params = message.get("params")
        if not isinstance(method, str) or (params is not None and not isinstance(params, dict)):
            return _error(start_response, "400 Bad Request", message.get("id"), InvalidRequest("bad method or params"))
        if "id" not in message:
            self._engine.notification(method, params, session)
            return send_json(start_response, "202 Accepted", b"")
        request_id = message["id"]
        if not is_valid_id(request_id) or request_id is None:
            return _error(
                start_response, "400 Bad Request", None, InvalidRequest("a request id is a string or a number")
            )
        stateless = is_stateless_request(params)
        if stateless:
            mismatch = header_mismatch(self._engine, method, params or {}, headers)
            if mismatch is not None:
                return _error(start_response, "400 Bad Request", request_id, JsonRpcError(_HEADER_MISMATCH, mismatch))
            session = None
        elif method == "initialize":
            session = self._sessions.open()
        elif session is not None:
            version = headers.get("mcp-protocol-version")
            if version is not None and version.strip() not in SESSION_PROTOCOL_VERSIONS:
                return _error(
                    start_response,
                    "400 Bad Request",
                    request_id,
                    InvalidRequest(f"unsupported MCP-Protocol-Version {version.strip()!r}"),
                )
        return self._run(request_id, method, params, session, headers, stateless, start_response)

    def _client_answer(
        self, message: Dict[str, Any], session: Optional[Session], start_response: StartResponse
    ) -> Iterable[bytes]:
        if "result" not in message and "error" not in message:
            return _error(start_response, "400 Bad Request", message.get("id"), InvalidRequest("no method, no result"))
        if session is None or not session.questions.answer(message):
            logger.debug("an answer to no question of this server (id %r): ignored", message.get("id"))
        return send_json(start_response, "202 Accepted", b"")

    def _run(
        self,
        request_id: Any,
        method: str,
        params: Optional[Dict[str, Any]],
        session: Optional[Session],
        headers: Dict[str, str],
        stateless: bool,
        start_response: StartResponse,
    ) -> Iterable[bytes]:
        log = EventLog()

        def notify(note: str, note_params: Dict[str, Any]) -> None:
            log.put(MESSAGE, {"jsonrpc": "2.0", "method": note, "params": note_params})

        def ask(question: str, question_params: Dict[str, Any], timeout: Optional[float]) -> Any:
            assert session is not None
            return session.questions.ask(question, question_params, timeout, lambda m: log.put(MESSAGE, m))

        incoming = Incoming(
            request_id,
            method,
            params,
            session=session,
            http_headers=headers,
            notify=None if self.json_response else notify,
            ask=ask if (session is not None and not self.json_response) else None,
            end_stream=log.cut if session is not None else None,
        )
        extra = [("Mcp-Session-Id", session.id)] if (method == "initialize" and session and session.id) else []
        if self.json_response:
            status, body = self._answer(incoming, stateless)
            return send_json(start_response, status, body, extra)
        if session is not None:
            session.running(request_id, incoming.cancelled)
            session.keep_log(log.key, log)
        self._pool.submit(self._job, incoming, stateless, log)
        first = log.next(0, self.heartbeat, live=True)
        if first is not None and first[0] == FINAL:
            if session is not None:
                session.finished(request_id)
            status, body = first[1]
            return send_json(start_response, status, body, extra)
        start_response("200 OK", _SSE_HEADERS + extra)
        resumable = session is not None and (session.protocol_version or "") >= RESUMABLE_SINCE
        return self._stream(log, 0, incoming, session, resumable)

    def _stream(
        self, log: EventLog, position: int, incoming: Optional[Incoming], session: Optional[Session], resumable: bool
    ) -> Iterator[bytes]:
        """An SSE answer: the log's entries after ``position``, a comment at each silent heartbeat."""
        finished = False
        try:
            if resumable and position == 0:
                yield b"id: %s:0\nretry: %d\ndata: \n\n" % (log.key.encode(), RETRY_MS)
            while True:
                entry = log.next(position, self.heartbeat, live=incoming is not None)
                if entry is None:
                    yield b": heartbeat\n\n"
                    continue
                if entry[0] == "cut":
                    yield b"retry: %d\n\n" % RETRY_MS
                    finished = True  # not finished, but resumable: the run goes on
                    return
                position += 1
                data = entry[1][1] if entry[0] == FINAL else encode(entry[1])
                event_id = b"%s:%d" % (log.key.encode(), position) if resumable else b"%d" % position
                yield b"id: " + event_id + b"\nevent: message\ndata: " + data + b"\n\n"
                if entry[0] == FINAL:
                    finished = True
                    return
        finally:
            if incoming is not None:
                if not finished:
                    incoming.cancelled.set()  # the client went away before the result
                if session is not None and log.finished:
                    session.finished(incoming.request_id)

    def _job(self, incoming: Incoming, stateless: bool, log: EventLog) -> None:
        with self._lock:
            self._running[id(incoming)] = incoming
        try:
            log.put(FINAL, self._answer(incoming, stateless))
        except BaseException:
            log.put(
                FINAL, ("200 OK", encode(error_message(incoming.request_id, JsonRpcError(-32603, "internal error"))))
            )
            raise
        finally:
            with self._lock:
                self._running.pop(id(incoming), None)
            if incoming.session is not None:
                incoming.session.finished(incoming.request_id)

    def _answer(self, incoming: Incoming, stateless: bool) -> Tuple[str, bytes]:
        """Run the request: ``(status, encoded response)``."""
        try:
            result = self._engine.request(incoming)
        except Exception as exc:
            if not isinstance(exc, JsonRpcError):
                logger.error("request %r failed inside the server", incoming.method, exc_info=True)
                exc = JsonRpcError(-32603, "internal error")
            status = "200 OK"
            if exc.code == -32601 and (stateless or incoming.session is None):
                status = "404 Not Found"
            elif exc.code in _STATELESS_400 and (stateless or incoming.session is None):
                status = "400 Bad Request"
            return status, encode(error_message(incoming.request_id, exc))
        return "200 OK", encode(response_message(incoming.request_id, result))

    # -- GET and DELETE ---------------------------------------------------------------------

    def _get(self, environ: Dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        headers = _headers_of(environ)
        session_id = headers.get("mcp-session-id")
        if session_id is None:
            return send_json(start_response, "405 Method Not Allowed", b"", [("Allow", "POST")])
        if "text/event-stream" not in headers.get("accept", "text/event-stream"):
            return _error(
                start_response, "406 Not Acceptable", None, InvalidRequest("GET needs Accept: text/event-stream")
            )
        session = self._sessions.get(session_id)
        if session is None:
            return _error(start_response, "404 Not Found", None, JsonRpcError(-32001, "Session not found"))
        resumed = _resume_point(session, headers.get("last-event-id"))
        if resumed is not None:
            log, position = resumed
            start_response("200 OK", list(_SSE_HEADERS))
            return self._stream(log, position, None, session, True)
        outbox: queue.SimpleQueue[Optional[Dict[str, Any]]] = queue.SimpleQueue()

        def announce(method: str, params: Dict[str, Any]) -> None:
            outbox.put({"jsonrpc": "2.0", "method": method, "params": params})

        session.set_announcer(announce, on_end=lambda: outbox.put(None))
        start_response("200 OK", list(_SSE_HEADERS))
        return self._listen(session, outbox, announce)

    def _listen(
        self,
        session: Session,
        outbox: queue.SimpleQueue[Optional[Dict[str, Any]]],
        announce: Callable[[str, Dict[str, Any]], None],
    ) -> Iterator[bytes]:
        event_id = 0
        try:
            yield b": stream open\n\n"
            while True:
                try:
                    message = outbox.get(timeout=self.heartbeat)
                except queue.Empty:
                    yield b": heartbeat\n\n"
                    continue
                if message is None:
                    return
                event_id += 1
                yield _sse_event(message, event_id)
        finally:
            if session.announcer_is(announce):
                session.set_announcer(None)

    def _delete(self, environ: Dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        session_id = _headers_of(environ).get("mcp-session-id")
        if session_id is None:
            return send_json(start_response, "405 Method Not Allowed", b"", [("Allow", "POST")])
        if not self._sessions.close(session_id):
            return _error(start_response, "404 Not Found", None, JsonRpcError(-32001, "Session not found"))
        return send_json(start_response, "200 OK", b"")


#: Every app of this process, renewed in a forked child (gunicorn ``--preload``, ``multiprocessing``).
_APPS: weakref.WeakSet[McpWsgiApp] = weakref.WeakSet()


def _renew_apps_in_child() -> None:
    for app in list(_APPS):
        app._renew_in_child()


_fork.at_fork_in_child(_renew_apps_in_child)


def _resume_point(session: Session, last_event_id: Optional[str]) -> Optional[Tuple[EventLog, int]]:
    """The log and position a ``Last-Event-ID`` names in this session, or ``None``."""
    if not last_event_id or ":" not in last_event_id:
        return None
    key, _, number = last_event_id.strip().rpartition(":")
    log = session.kept_log(key)
    if not isinstance(log, EventLog) or not number.isdigit():
        return None
    return log, int(number)
