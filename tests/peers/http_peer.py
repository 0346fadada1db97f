"""A JSON-RPC 2.0 peer over MCP Streamable HTTP for tests: well-behaved or faulty on demand.

Standard library only (it must not import jsonrpc_threads).  Use it in-process::

    with HttpPeer() as peer:              # 127.0.0.1, a free port, serving in a thread
        url = peer.url_with("sse", "priming", retry=200)
        ...
        peer.records                      # every HTTP request received

or run it as a script: ``python tests/peers/http_peer.py [--port N] [--allow-exit]``
prints ``listening on URL`` and serves until SIGINT or SIGTERM;
``HttpPeerProcess`` does that for a test (a server that can die for real).

The endpoint is ``/mcp`` (any other path answers 404).  How it answers is chosen
per request by *modes*: the ``mode`` query parameter (comma-separated) plus the
``X-Peer-Mode`` header; ``retry`` (milliseconds) in the query adds a ``retry:``
field to the first event of each stream.

- (default): requests are answered with ``application/json``; batches too;
  messages without requests get ``202 Accepted``; server-to-client messages
  go out on the listen stream;
- ``sse``: a single request is answered with ``text/event-stream``: the
  server's requests and notifications first, then the response;
- ``priming``: every SSE stream starts with an event that has an id and empty data;
- ``session``: ``initialize`` gets a new ``Mcp-Session-Id``; other requests
  need a known one (missing: 400, unknown or expired: 404);
- ``cut``: the SSE stream ends (cleanly) right before the response, which is
  kept; a GET with ``Last-Event-ID`` replays what came after that id;
- ``reset``: as ``cut``, but the connection is dropped mid-stream;
- ``noids``: SSE events carry no ids (the stream cannot be resumed);
- ``noresume``: GET with ``Last-Event-ID`` answers 405;
- ``nolisten``: GET without ``Last-Event-ID`` answers 405;
- ``nodelete``: DELETE answers 405;
- ``getredirect``: every GET answers ``307`` to another host (127.0.0.2);
- ``holdnotes``: a POST that carries only notifications is never answered (the
  server holds it until it shuts down);
- ``resetall``: every SSE stream (a POST's answer, a GET resuming it, the
  listen stream) sends one event with an id and empty data, then the
  connection is dropped: the response never comes, however often the client
  resumes.

SSE events carry ids (``<stream>:<n>``) when ``priming``, ``cut`` or ``reset``
is on and ``noids`` is off.  A GET without ``Last-Event-ID`` opens the listen
stream: ``HttpPeer.push`` sends messages on it, ``HttpPeer.cut_listeners``
ends it (the client reconnects).

Methods (result in parentheses), as the stdio peer where they make sense:

- ``echo`` (params), ``add`` [a, b] (a + b), ``unicode`` (a non-ASCII string),
  ``headers`` (the request's headers, names in lower case)
- ``initialize`` ({"protocolVersion", "capabilities", "serverInfo"})
- ``sleep`` {"seconds": s, "result": x} (x, after s seconds or at shutdown)
- ``block`` {"gate": name, "result": x} (x once the test calls ``open_gate(name)``)
- ``never`` (holds the request open until the server shuts down; no answer)
- ``notify`` {"method", "params", "count", "gate"} (count notifications, then
  waits for the gate if given; count)
- ``reverse_call`` {"method", "params"} (sends request "srv-<k>" to the client,
  waits for its answer: {"result": ...} or {"error": ...})
- ``oversized`` {"bytes": n, "response": false} (a notification of about n
  bytes, then "ok"; with "response": true the answer itself is n bytes)
- ``garbage`` (JSON mode: the body is not JSON; SSE mode: two events that are
  not JSON-RPC, then "ok")
- ``expire_session`` (forgets the caller's session; true)
- ``notifications_log`` {"wait_for": n, "timeout": s} (every notification received:
  [{"method", "params"}], once at least n arrived or the timeout passed)
- ``fault`` {"kind": k} (also as a notification): ``500`` (text body), ``500-rpc``
  (JSON-RPC error -32050 with data, for the request's id), ``500-rpc-null``
  (the same with id null), ``400``, ``404``, ``html`` (200 text/html),
  ``empty`` (200, no body, no type), ``redirect`` (307 to 127.0.0.2),
  ``reset`` (connection dropped), ``202`` (accepted, never answered), ``never``
  (holds the connection, no answer at all, until the server shuts down)
- ``wrong_id`` (SSE: first a response with id + 1000, then "ok"; JSON: only the
  response with the wrong id), ``duplicate`` (SSE: "first" then "second"; JSON: a
  batch of both), ``wrong_id_type`` {"as": "string"|"true"|"float"} (as ``wrong_id``,
  with an id of the wrong type: "1" for 1, true, 1.0)
- ``raw_answer`` (always answered by itself, whatever the mode): ``{"status": 200,
  "content_type": "application/json", "headers": {}, "chunks": [str], "repeat": 1,
  "chunked": true, "content_length": null, "interval": 0, "then": "end", "gzip":
  false}``.  Writes the chunks (``{id}`` in them replaced by the request's id as
  JSON) ``repeat`` times (with ``gzip``: all of them compressed, as one chunk, with
  ``Content-Encoding: gzip``), as chunked transfer unless ``chunked`` is false
  (then with ``Content-Length``: ``content_length`` if given, else the true
  length; ``"content_length": "none"``: no length, ``Connection: close``, the
  body ending with the connection), ``interval`` seconds apart
  (a slowloris body: a few bytes at a time, never done), then ``then``: ``end``,
  ``stall`` (holds the connection, body unfinished, until the server shuts
  down) or ``reset`` (drops the connection)
- ``exit`` {"code": n} (only with ``allow_exit``, i.e. ``--allow-exit`` when run as
  a script: the server process exits at once, mid-request; else -32601)
- anything else: error -32601.
"""

from __future__ import annotations

import argparse
import dataclasses
import gzip
import itertools
import json
import os
import queue
import select
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Dict, Iterator, List, Optional, Set, Tuple
from urllib.parse import parse_qs, urlsplit

ENDPOINT = "/mcp"
UNICODE_TEXT = "line\u2028sep\u2029para \U0001f600 é"
#: Longest a ``block``, ``notify`` gate or ``reverse_call`` waits.
GATE_TIMEOUT_S = 30.0
#: How often a listen stream looks at its queue and the stop flag.
LISTEN_POLL_S = 0.05
#: Bounded joins in ``HttpPeer.close``.
JOIN_TIMEOUT_S = 5.0
MODES = frozenset(
    {
        "sse",
        "priming",
        "session",
        "cut",
        "reset",
        "noids",
        "noresume",
        "nolisten",
        "nodelete",
        "getredirect",
        "resetall",
        "holdnotes",
    }
)
_CUT = object()


class PeerError(Exception):
    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


class _NoAnswer(Exception):
    """The method answers nothing (``never``)."""


class _RawAnswer(Exception):
    """The method answers with a raw body (``garbage`` in JSON mode)."""

    def __init__(self, content_type: str, body: bytes) -> None:
        super().__init__(content_type)
        self.content_type = content_type
        self.body = body


@dataclass
class Record:
    """One HTTP request as the server received it."""

    http_method: str
    path: str
    query: Dict[str, List[str]]
    headers: Dict[str, str]  # names in lower case
    body: bytes
    message: Any  # the decoded JSON body, or None
    at: float = field(default_factory=time.monotonic)

    def rpc_methods(self) -> List[str]:
        items = self.message if isinstance(self.message, list) else [self.message]
        return [item["method"] for item in items if isinstance(item, dict) and isinstance(item.get("method"), str)]


@dataclass
class _Context:
    modes: Set[str]
    session: Optional[str]
    new_session: Optional[str]
    retry: Optional[int]
    headers: Dict[str, str]
    request_id: Any = None  # set by HttpPeer.call for the request being answered


class _StreamedAnswer(Exception):
    """The method answers with raw bytes, possibly never finished (``raw_answer``)."""

    def __init__(self, params: Dict[str, Any], request_id: Any) -> None:
        super().__init__("raw answer")
        self.status = int(params.get("status", 200))
        self.content_type: Optional[str] = params.get("content_type", "application/json")
        self.headers: Dict[str, str] = dict(params.get("headers") or {})
        marker = json.dumps(request_id)
        chunks = [str(chunk).replace("{id}", marker).encode("utf-8") for chunk in params.get("chunks", [])]
        self.chunks = chunks * int(params.get("repeat", 1))
        if params.get("gzip"):  # the whole body compressed, sent as one chunk
            self.chunks = [gzip.compress(b"".join(self.chunks))]
            self.headers["Content-Encoding"] = "gzip"
        self.chunked = bool(params.get("chunked", True))
        length = params.get("content_length")
        self.close_delimited = length == "none"
        self.content_length = (
            int(length) if length is not None and not self.close_delimited else sum(len(c) for c in self.chunks)
        )
        self.interval = float(params.get("interval", 0))
        self.then = str(params.get("then", "end"))


class HttpPeer:
    """The test server: state, records and the knobs tests turn.  Thread-safe."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, *, allow_exit: bool = False) -> None:
        self.stop = threading.Event()
        self.allow_exit = allow_exit
        # _lock guards every list, dict and counter below; _changed is notified on
        # each change.  Reentrant: wait_for() predicates read the properties.
        self._lock = threading.RLock()
        self._changed = threading.Condition(self._lock)
        self._records: List[Record] = []
        self._notifications: List[Dict[str, Any]] = []
        self.sessions: Set[str] = set()
        self.deleted_sessions: List[Optional[str]] = []
        self._streams: Dict[str, List[Tuple[int, bytes]]] = {}
        self._stream_ids = itertools.count(1)
        self._reverse_ids = itertools.count(1)
        self._reverse: Dict[str, Optional[Dict[str, Any]]] = {}
        self._gates: Dict[str, threading.Event] = {}
        self._arrived: Set[str] = set()
        self._listeners: List[queue.SimpleQueue[Any]] = []
        self._backlog: List[Any] = []
        self.listen_count = 0
        self.cut_times: List[float] = []
        self.resume_gets: List[Tuple[float, str]] = []
        self._httpd = _Server((host, port), _Handler)
        self._httpd.peer = self
        self._thread: Optional[threading.Thread] = None

    # -- lifecycle ----------------------------------------------------------------

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}{ENDPOINT}"

    def url_with(self, *modes: str, retry: Optional[int] = None) -> str:
        """The endpoint URL with these modes (and ``retry`` ms) in its query."""
        unknown = set(modes) - MODES
        if unknown:
            raise ValueError(f"unknown modes {sorted(unknown)}")
        query = []
        if modes:
            query.append("mode=" + ",".join(modes))
        if retry is not None:
            query.append(f"retry={retry}")
        return self.url + ("?" + "&".join(query) if query else "")

    def start(self) -> HttpPeer:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="http-peer", daemon=True
        )
        self._thread.start()
        return self

    def close(self) -> None:
        """Release every waiting handler, stop serving, close every connection, join."""
        self.stop.set()
        with self._changed:
            self._changed.notify_all()
            for gate in self._gates.values():
                gate.set()
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join(JOIN_TIMEOUT_S)
        self._httpd.server_close()
        self._httpd.close_connections(JOIN_TIMEOUT_S)

    def __enter__(self) -> HttpPeer:
        return self.start()

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    # -- what tests look at -------------------------------------------------------

    @property
    def records(self) -> List[Record]:
        with self._lock:
            return list(self._records)

    def records_for(self, rpc_method: str) -> List[Record]:
        """The POSTs whose body holds a message with this method."""
        return [record for record in self.records if rpc_method in record.rpc_methods()]

    @property
    def notifications(self) -> List[Dict[str, Any]]:
        with self._lock:
            return list(self._notifications)

    def wait_for(self, predicate: Callable[[], bool], timeout: float = 10.0) -> bool:
        """Wait until ``predicate()`` (checked after every change of state) is true."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while not predicate():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._changed.wait(min(remaining, 0.1))
            return True

    # -- knobs ------------------------------------------------------------------------

    def open_gate(self, name: str) -> None:
        self._gate(name).set()

    def wait_arrived(self, name: str, timeout: float = 10.0) -> bool:
        """Wait until a request is waiting at gate ``name``."""
        return self.wait_for(lambda: name in self._arrived, timeout)

    def push(self, message: Any) -> None:
        """Send ``message`` on every listen stream (or on the next one to open)."""
        with self._changed:
            if self._listeners:
                for listener in self._listeners:
                    listener.put(message)
            else:
                self._backlog.append(message)

    def cut_listeners(self) -> None:
        """End every open listen stream (cleanly): the client should reconnect."""
        with self._changed:
            for listener in self._listeners:
                listener.put(_CUT)

    def expire_sessions(self) -> None:
        with self._changed:
            self.sessions.clear()
            self._changed.notify_all()

    # -- internals used by the handler --------------------------------------------

    def _gate(self, name: str) -> threading.Event:
        with self._lock:
            gate = self._gates.get(name)
            if gate is None:
                gate = self._gates[name] = threading.Event()
                if self.stop.is_set():
                    gate.set()
            return gate

    def _wait_gate(self, name: str) -> None:
        gate = self._gate(name)
        with self._changed:
            self._arrived.add(name)
            self._changed.notify_all()
        gate.wait(GATE_TIMEOUT_S)

    def _record(self, record: Record) -> None:
        with self._changed:
            self._records.append(record)
            self._changed.notify_all()

    def _note(self, **changes: Any) -> None:
        with self._changed:
            for name, value in changes.items():
                getattr(self, name).append(value)
            self._changed.notify_all()

    def _new_session(self) -> str:
        session_id = uuid.uuid4().hex
        with self._changed:
            self.sessions.add(session_id)
            self._changed.notify_all()
        return session_id

    def _take_message(self, message: Dict[str, Any]) -> None:
        """A notification or a response from the client."""
        with self._changed:
            if "method" in message:
                self._notifications.append({"method": message["method"], "params": message.get("params")})
            else:
                request_id = message.get("id")
                if isinstance(request_id, str) and request_id in self._reverse:
                    self._reverse[request_id] = message
            self._changed.notify_all()

    def _new_stream(self, prefix: str = "s") -> str:
        key = f"{prefix}{next(self._stream_ids)}"
        with self._lock:
            self._streams[key] = []
        return key

    def _log_event(self, key: str, seq: int, data: bytes) -> None:
        with self._lock:
            self._streams.setdefault(key, []).append((seq, data))

    def _events_after(self, key: str, seq: int) -> Optional[List[Tuple[int, bytes]]]:
        with self._lock:
            events = self._streams.get(key)
            return None if events is None else [(n, data) for n, data in events if n > seq]

    def _add_listener(self) -> queue.SimpleQueue[Any]:
        listener: queue.SimpleQueue[Any] = queue.SimpleQueue()
        with self._changed:
            for message in self._backlog:
                listener.put(message)
            self._backlog.clear()
            self._listeners.append(listener)
            self.listen_count += 1
            self._changed.notify_all()
        return listener

    def _remove_listener(self, listener: queue.SimpleQueue[Any]) -> None:
        with self._changed:
            if listener in self._listeners:
                self._listeners.remove(listener)
            self._changed.notify_all()

    # -- methods ----------------------------------------------------------------------

    def call(self, request: Dict[str, Any], emit: Callable[[Dict[str, Any]], None], ctx: _Context) -> Dict[str, Any]:
        """The response to ``request``; ``emit`` sends a message to the client first."""
        request_id = request.get("id")
        method = request.get("method")
        ctx = dataclasses.replace(ctx, request_id=request_id)
        handler = getattr(self, f"m_{method}", None) if isinstance(method, str) else None
        try:
            if handler is None:
                raise PeerError(-32601, "Method not found", {"method": method})
            result = handler(request.get("params"), emit, ctx)
        except PeerError as exc:
            error: Dict[str, Any] = {"code": exc.code, "message": exc.message}
            if exc.data is not None:
                error["data"] = exc.data
            return {"jsonrpc": "2.0", "id": request_id, "error": error}
        return {"jsonrpc": "2.0", "id": request_id, "result": result}

    def m_echo(self, params: Any, emit: Any, ctx: _Context) -> Any:
        return params

    def m_add(self, params: Any, emit: Any, ctx: _Context) -> Any:
        if not isinstance(params, list) or len(params) != 2:
            raise PeerError(-32602, "Invalid params", {"expected": "[a, b]"})
        return params[0] + params[1]

    def m_unicode(self, params: Any, emit: Any, ctx: _Context) -> Any:
        return UNICODE_TEXT

    def m_headers(self, params: Any, emit: Any, ctx: _Context) -> Any:
        return ctx.headers

    def m_initialize(self, params: Any, emit: Any, ctx: _Context) -> Any:
        version = (params or {}).get("protocolVersion", "2025-11-25")
        return {"protocolVersion": version, "capabilities": {}, "serverInfo": {"name": "http_peer", "version": "1"}}

    def m_sleep(self, params: Any, emit: Any, ctx: _Context) -> Any:
        params = params or {}
        self.stop.wait(float(params.get("seconds", 1.0)))
        return params.get("result")

    def m_block(self, params: Any, emit: Any, ctx: _Context) -> Any:
        params = params or {}
        self._wait_gate(str(params.get("gate", "gate")))
        return params.get("result")

    def m_never(self, params: Any, emit: Any, ctx: _Context) -> Any:
        self.stop.wait()
        raise _NoAnswer

    def m_notify(self, params: Any, emit: Callable[[Dict[str, Any]], None], ctx: _Context) -> Any:
        params = params or {}
        count = int(params.get("count", 1))
        note: Dict[str, Any] = {"jsonrpc": "2.0", "method": params.get("method", "note")}
        if params.get("params") is not None:
            note["params"] = params["params"]
        for _ in range(count):
            emit(note)
        if params.get("gate"):
            self._wait_gate(str(params["gate"]))
        return count

    def m_reverse_call(self, params: Any, emit: Callable[[Dict[str, Any]], None], ctx: _Context) -> Any:
        params = params or {}
        peer_id = f"srv-{next(self._reverse_ids)}"
        with self._lock:
            self._reverse[peer_id] = None
        request: Dict[str, Any] = {"jsonrpc": "2.0", "id": peer_id, "method": params.get("method", "ping")}
        if params.get("params") is not None:
            request["params"] = params["params"]
        emit(request)
        arrived = self.wait_for(lambda: self._reverse[peer_id] is not None or self.stop.is_set(), GATE_TIMEOUT_S)
        with self._lock:
            response = self._reverse.pop(peer_id)
        if not arrived or response is None:
            raise PeerError(-32000, "no response to the reverse call")
        if "error" in response:
            return {"error": response["error"]}
        return {"result": response.get("result")}

    def m_oversized(self, params: Any, emit: Callable[[Dict[str, Any]], None], ctx: _Context) -> Any:
        params = params or {}
        size = int(params.get("bytes", 1024 * 1024))
        if params.get("response"):
            return "x" * size
        emit({"jsonrpc": "2.0", "method": "oversized", "params": {"data": "x" * size}})
        return "ok"

    def m_garbage(self, params: Any, emit: Callable[[Dict[str, Any]], None], ctx: _Context) -> Any:
        if "sse" not in ctx.modes:
            raise _RawAnswer("application/json", b"{this is not json")
        emit({"raw": "this is not json"})
        emit({"jsonrpc": "2.0"})
        return "ok"

    def m_wrong_id(self, params: Any, emit: Callable[[Dict[str, Any]], None], ctx: _Context) -> Any:
        request_id = ctx.request_id
        wrong = request_id + 1000 if isinstance(request_id, int) else "x" + str(request_id)
        return self._wrong_then_ok(wrong, emit, ctx)

    def m_wrong_id_type(self, params: Any, emit: Callable[[Dict[str, Any]], None], ctx: _Context) -> Any:
        return self._wrong_then_ok(wrong_id_type(ctx.request_id, (params or {}).get("as")), emit, ctx)

    def _wrong_then_ok(self, wrong: Any, emit: Callable[[Dict[str, Any]], None], ctx: _Context) -> Any:
        answer = {"jsonrpc": "2.0", "id": wrong, "result": "wrong"}
        if "sse" not in ctx.modes:
            raise _RawAnswer("application/json", json.dumps(answer).encode("utf-8"))
        emit(answer)
        return "ok"

    def m_duplicate(self, params: Any, emit: Callable[[Dict[str, Any]], None], ctx: _Context) -> Any:
        first = {"jsonrpc": "2.0", "id": ctx.request_id, "result": "first"}
        if "sse" not in ctx.modes:
            second = dict(first, result="second")
            raise _RawAnswer("application/json", json.dumps([first, second]).encode("utf-8"))
        emit(first)
        return "second"

    def m_raw_answer(self, params: Any, emit: Any, ctx: _Context) -> Any:
        raise _StreamedAnswer(params if isinstance(params, dict) else {}, ctx.request_id)

    def m_exit(self, params: Any, emit: Any, ctx: _Context) -> Any:
        if not self.allow_exit:
            raise PeerError(-32601, "Method not found", {"method": "exit"})
        os._exit(int((params or {}).get("code", 0)))

    def m_expire_session(self, params: Any, emit: Any, ctx: _Context) -> Any:
        with self._changed:
            self.sessions.discard(ctx.session or "")
            self._changed.notify_all()
        return True

    def m_notifications_log(self, params: Any, emit: Any, ctx: _Context) -> Any:
        # {"wait_for": n, "timeout": s} waits (bounded) until n notifications arrived.
        if isinstance(params, dict) and params.get("wait_for"):
            wanted = int(params["wait_for"])
            self.wait_for(lambda: len(self._notifications) >= wanted, float(params.get("timeout", 5.0)))
        return self.notifications


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # Tests open dozens of connections at once (50 clients in test_leaks): the default
    # backlog of 5 overflowed under load and the kernel reset connections.
    request_queue_size = 128
    peer: HttpPeer

    def __init__(self, address: Tuple[str, int], handler: Any) -> None:
        # _conn_lock guards _connections and _handlers.
        self._conn_lock = threading.Lock()
        self._connections: Set[socket.socket] = set()
        self._handlers: List[threading.Thread] = []
        super().__init__(address, handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        thread = threading.Thread(
            target=self.process_request_thread,
            args=(request, client_address),
            name="http-peer-handler",
            daemon=True,
        )
        with self._conn_lock:
            self._connections.add(request)
            self._handlers = [t for t in self._handlers if t.is_alive()]
            self._handlers.append(thread)
        thread.start()

    def shutdown_request(self, request: Any) -> None:
        with self._conn_lock:
            self._connections.discard(request)
        super().shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that went away mid-answer is normal here

    def close_connections(self, timeout: float) -> None:
        with self._conn_lock:
            connections = list(self._connections)
            handlers = list(self._handlers)
        for connection in connections:
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        deadline = time.monotonic() + timeout
        for thread in handlers:
            thread.join(max(0.0, deadline - time.monotonic()))


class _SseWriter:
    """One chunked ``text/event-stream`` answer."""

    def __init__(self, handler: _Handler, ctx: _Context, *, with_ids: bool, prefix: str = "s") -> None:
        self.handler = handler
        self.peer = handler.server.peer
        self.ctx = ctx
        self.key = self.peer._new_stream(prefix)
        self.seq = 0
        self.with_ids = with_ids
        self.retry_pending = ctx.retry
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Cache-Control", "no-cache")
        handler.send_header("Transfer-Encoding", "chunked")
        if ctx.new_session is not None:
            handler.send_header("Mcp-Session-Id", ctx.new_session)
        handler.end_headers()

    def _event(self, data: str) -> Tuple[Optional[str], bytes]:
        lines = []
        event_id = None
        if self.with_ids:
            self.seq += 1
            event_id = f"{self.key}:{self.seq}"
            lines.append(f"id: {event_id}")
        if self.retry_pending is not None:
            lines.append(f"retry: {self.retry_pending}")
            self.retry_pending = None
        lines.extend(f"data: {line}" for line in data.split("\n")) if data else lines.append("data:")
        return event_id, ("\n".join(lines) + "\n\n").encode("utf-8")

    def priming(self) -> None:
        self.write_event("")

    def send(self, message: Any) -> None:
        self.write_event(json.dumps(message, ensure_ascii=False))

    def write_event(self, data: str) -> None:
        _, raw = self._event(data)
        if self.with_ids:
            self.peer._log_event(self.key, self.seq, data.encode("utf-8"))
        self.chunk(raw)

    def keep(self, message: Any) -> None:
        """Log an event for replay without sending it."""
        self.seq += 1
        self.peer._log_event(self.key, self.seq, json.dumps(message, ensure_ascii=False).encode("utf-8"))

    def replay(self, events: List[Tuple[int, bytes]], key: str) -> None:
        for seq, data in events:
            lines = [f"id: {key}:{seq}"]
            text = data.decode("utf-8")
            lines.extend(f"data: {line}" for line in text.split("\n")) if text else lines.append("data:")
            self.chunk(("\n".join(lines) + "\n\n").encode("utf-8"))

    def chunk(self, data: bytes) -> None:
        self.handler.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

    def finish(self) -> None:
        self.handler.wfile.write(b"0\r\n\r\n")

    def abort(self) -> None:
        self.handler.close_connection = True
        try:
            self.handler.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    # -- plumbing -------------------------------------------------------------------

    def _begin(self, body: bytes = b"") -> Tuple[Record, Set[str], Optional[int]]:
        url = urlsplit(self.path)
        query = parse_qs(url.query)
        headers = {name.lower(): value for name, value in self.headers.items()}
        message = None
        if body:
            try:
                message = json.loads(body)
            except ValueError:
                message = None
        record = Record(self.command, url.path, query, headers, body, message)
        self.server.peer._record(record)
        modes: Set[str] = set()
        for value in [*query.get("mode", []), headers.get("x-peer-mode", "")]:
            modes.update(part.strip() for part in value.split(",") if part.strip())
        retry = int(query["retry"][0]) if query.get("retry") else None
        return record, modes, retry

    def _send(self, status: int, body: bytes = b"", content_type: Optional[str] = None, **headers: str) -> None:
        self.send_response(status)
        if content_type:
            self.send_header("Content-Type", content_type)
        for name, value in headers.items():
            self.send_header(name.replace("_", "-"), value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if body:
            self.wfile.write(body)

    def _json(self, status: int, value: Any, session: Optional[str] = None) -> None:
        extra = {"Mcp_Session_Id": session} if session else {}
        self._send(status, json.dumps(value, ensure_ascii=False).encode("utf-8"), "application/json", **extra)

    def _drop(self) -> None:
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _check_session(self, modes: Set[str], headers: Dict[str, str], initializing: bool) -> Optional[str]:
        """Answer a session problem and return "" (stop), or return the session id (or None)."""
        if "session" not in modes:
            return headers.get("mcp-session-id")
        if initializing:
            return None
        session = headers.get("mcp-session-id")
        if session is None:
            self._json(400, {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "Missing session"}})
            return ""
        with self.server.peer._lock:
            known = session in self.server.peer.sessions
        if not known:
            self._json(404, {"jsonrpc": "2.0", "id": None, "error": {"code": -32001, "message": "Session not found"}})
            return ""
        return session

    # -- verbs ----------------------------------------------------------------------

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        record, modes, retry = self._begin(body)
        peer = self.server.peer
        if record.path != ENDPOINT:
            self._send(404, b"no such endpoint", "text/plain")
            return
        message = record.message
        if message is None:
            self._json(400, {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}})
            return
        items = message if isinstance(message, list) else [message]
        requests = [i for i in items if isinstance(i, dict) and "method" in i and "id" in i]
        initializing = any(i.get("method") == "initialize" for i in requests)
        session = self._check_session(modes, record.headers, initializing)
        if session == "":
            return
        new_session = peer._new_session() if ("session" in modes and initializing) else None
        ctx = _Context(modes, new_session or session, new_session, retry, record.headers)
        fault: Optional[Tuple[str, Any]] = None
        for item in items:
            if isinstance(item, dict) and ("id" not in item or "method" not in item):
                peer._take_message(item)
                if item.get("method") == "fault":
                    fault = (str((item.get("params") or {}).get("kind")), None)
        if len(requests) == 1 and requests[0].get("method") == "fault" and not isinstance(message, list):
            fault = (str((requests[0].get("params") or {}).get("kind")), requests[0].get("id"))
        if fault is not None:
            self._fault(*fault)
            return
        if not requests:
            if "holdnotes" in modes and any(isinstance(i, dict) and "method" in i for i in items):
                peer.stop.wait(GATE_TIMEOUT_S)
                self._drop()
                return
            self._send(202)
            return
        if isinstance(message, list):
            answers = [peer.call(r, peer.push, ctx) for r in requests]
            self._json(200, answers, new_session)
        elif "sse" in modes and requests[0].get("method") != "raw_answer":
            self._answer_sse(requests[0], ctx)
        else:
            self._answer_json(requests[0], ctx)

    def _answer_json(self, request: Dict[str, Any], ctx: _Context) -> None:
        try:
            response = self.server.peer.call(request, self.server.peer.push, ctx)
        except _NoAnswer:
            self._drop()
            return
        except _RawAnswer as raw:
            self._send(200, raw.body, raw.content_type)
            return
        except _StreamedAnswer as streamed:
            self._stream(streamed)
            return
        self._json(200, response, ctx.new_session)

    def _stream(self, answer: _StreamedAnswer) -> None:
        self.send_response(answer.status)
        if answer.content_type:
            self.send_header("Content-Type", answer.content_type)
        for name, value in answer.headers.items():
            self.send_header(name, value)
        if answer.chunked:
            self.send_header("Transfer-Encoding", "chunked")
        elif answer.close_delimited:
            self.send_header("Connection", "close")
            self.close_connection = True
        else:
            self.send_header("Content-Length", str(answer.content_length))
        self.end_headers()
        try:
            for index, chunk in enumerate(answer.chunks):
                if index and answer.interval and self.server.peer.stop.wait(answer.interval):
                    self._drop()
                    return
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk) if answer.chunked else chunk)
                self.wfile.flush()
            if answer.then == "stall":
                self.server.peer.stop.wait(GATE_TIMEOUT_S)
                self._drop()
            elif answer.then == "reset":
                self._drop()
            elif answer.chunked:
                self.wfile.write(b"0\r\n\r\n")
        except OSError:  # the client gave up reading
            self.close_connection = True

    def _answer_sse(self, request: Dict[str, Any], ctx: _Context) -> None:
        modes = ctx.modes
        if "resetall" in modes:
            self._prime_and_drop(ctx, "s")
            return
        cutting = "cut" in modes or "reset" in modes
        writer = _SseWriter(self, ctx, with_ids=("priming" in modes or cutting) and "noids" not in modes)
        if "priming" in modes:
            writer.priming()
        try:
            response = self.server.peer.call(request, writer.send, ctx)
        except _NoAnswer:
            writer.finish()
            return
        if cutting:
            if writer.with_ids:
                writer.keep(response)
            self.server.peer._note(cut_times=time.monotonic())
            if "reset" in modes:
                writer.abort()
            else:
                writer.finish()
            return
        writer.send(response)
        writer.finish()

    def _prime_and_drop(self, ctx: _Context, prefix: str) -> None:
        """``resetall``: one event with an id (resumable, so the client comes back), then a reset."""
        writer = _SseWriter(self, ctx, with_ids=True, prefix=prefix)
        writer.priming()
        self.wfile.flush()
        self.server.peer._note(cut_times=time.monotonic())
        writer.abort()

    def _fault(self, kind: str, request_id: Any) -> None:
        rpc_error = {"code": -32050, "message": "server exploded", "data": {"detail": "kaboom"}}
        if kind == "500":
            self._send(500, b"Internal Server Error: boom", "text/plain")
        elif kind == "500-rpc":
            self._json(500, {"jsonrpc": "2.0", "id": request_id, "error": rpc_error})
        elif kind == "500-rpc-null":
            self._json(500, {"jsonrpc": "2.0", "id": None, "error": rpc_error})
        elif kind == "400":
            self._send(400, b"bad request: you did it wrong", "text/plain")
        elif kind == "404":
            self._send(404, b"not found", "text/plain")
        elif kind == "html":
            self._send(200, b"<html><body>Login required</body></html>", "text/html; charset=utf-8")
        elif kind == "empty":
            self._send(200)
        elif kind == "redirect":
            self._send(307, b"", None, Location=f"http://127.0.0.2:{self.server.peer.port}/elsewhere")
        elif kind == "reset":
            self._drop()
        elif kind == "202":
            self._send(202)
        elif kind == "never":
            self.server.peer.stop.wait(GATE_TIMEOUT_S)
            self._drop()
        else:
            self._send(400, f"unknown fault {kind!r}".encode(), "text/plain")

    def do_GET(self) -> None:
        record, modes, retry = self._begin()
        peer = self.server.peer
        if record.path != ENDPOINT:
            self._send(404, b"no such endpoint", "text/plain")
            return
        if "getredirect" in modes:
            self._send(307, b"", None, Location=f"http://127.0.0.2:{peer.port}/elsewhere")
            return
        if "text/event-stream" not in record.headers.get("accept", ""):
            self._send(406, b"GET needs Accept: text/event-stream", "text/plain")
            return
        session = self._check_session(modes, record.headers, False)
        if session == "":
            return
        ctx = _Context(modes, session, None, retry, record.headers)
        last = record.headers.get("last-event-id")
        if "resetall" in modes:
            if last is not None:
                peer._note(resume_gets=(time.monotonic(), last))
            else:
                with peer._changed:
                    peer.listen_count += 1
                    peer._changed.notify_all()
            self._prime_and_drop(ctx, "L" if last is None or last.startswith("L") else "s")
            return
        if last is not None:
            if "noresume" in modes:
                self._send(405, b"no resumption here", "text/plain")
                return
            key, _, seq = last.rpartition(":")
            events = peer._events_after(key, int(seq)) if seq.isdigit() else None
            if events is None:
                self._send(400, b"unknown event id", "text/plain")
                return
            peer._note(resume_gets=(time.monotonic(), last))
            if key.startswith("L"):
                self._listen(ctx, key, events)
                return
            writer = _SseWriter(self, ctx, with_ids=True)
            writer.replay(events, key)
            writer.finish()
            return
        if "nolisten" in modes:
            self._send(405, b"no listen stream", "text/plain", Allow="POST, DELETE")
            return
        self._listen(ctx, None, [])

    def _listen(self, ctx: _Context, key: Optional[str], missed: List[Tuple[int, bytes]]) -> None:
        peer = self.server.peer
        writer = _SseWriter(self, ctx, with_ids=True, prefix="L")
        if key is not None:  # resuming: go on numbering the old stream
            writer.key = key
            writer.replay(missed, key)
            writer.seq = max([seq for seq, _ in missed], default=int(self.headers["Last-Event-ID"].rpartition(":")[2]))
        if ctx.retry is not None:
            writer.priming()
        listener = peer._add_listener()
        try:
            while not peer.stop.is_set():
                try:
                    message = listener.get(timeout=LISTEN_POLL_S)
                except queue.Empty:
                    continue
                if message is _CUT:
                    break
                writer.send(message)
            writer.finish()
        except OSError:
            self.close_connection = True
        finally:
            peer._remove_listener(listener)

    def do_DELETE(self) -> None:
        record, modes, _ = self._begin()
        peer = self.server.peer
        if "nodelete" in modes:
            self._send(405, b"sessions are not deleted here", "text/plain", Allow="GET, POST")
            return
        session = record.headers.get("mcp-session-id")
        with peer._changed:
            peer.sessions.discard(session or "")
            peer.deleted_sessions.append(session)
            peer._changed.notify_all()
        self._send(200)


class HttpPeerProcess:
    """This module run as a child process (``--allow-exit``) on 127.0.0.1: a server that can die.

    Starts at once and waits (bounded) for its ``listening on`` line.  ``port=0``
    picks a free port; pass the port of a dead one to bring it back there.
    """

    START_TIMEOUT_S = 10.0
    STOP_TIMEOUT_S = 10.0

    def __init__(self, port: int = 0) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--port", str(port), "--allow-exit"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        assert self.proc.stdout is not None
        try:
            readable, _, _ = select.select([self.proc.stdout], [], [], self.START_TIMEOUT_S)
            line = self.proc.stdout.readline().decode() if readable else ""
            if not line.startswith("listening on "):
                raise RuntimeError(f"the HTTP peer did not start: {line!r}")
        except BaseException:
            self.stop()
            raise
        self.url = line.split()[-1]
        self.port = int(urlsplit(self.url).port or 0)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def url_with(self, *modes: str, retry: Optional[int] = None) -> str:
        """As ``HttpPeer.url_with``."""
        query = []
        if modes:
            query.append("mode=" + ",".join(modes))
        if retry is not None:
            query.append(f"retry={retry}")
        return self.url + ("?" + "&".join(query) if query else "")

    def stop(self) -> None:
        """SIGTERM (the server closes its connections and exits), then SIGKILL if need be; reap."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(self.STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.proc.wait(self.STOP_TIMEOUT_S)
        if self.proc.stdout is not None:
            self.proc.stdout.close()

    def __enter__(self) -> HttpPeerProcess:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.stop()


def wrong_id_type(request_id: Any, kind: Any) -> Any:
    """``request_id`` in another JSON type: "1" for 1 (or 1 for "1"), true, or 1.0."""
    if kind == "true":
        return True
    if kind == "float":
        return float(request_id) if isinstance(request_id, int) else 1.0
    if isinstance(request_id, int):
        return str(request_id)
    return int(request_id) if str(request_id).isdigit() else 0


def iter_messages(records: List[Record]) -> Iterator[Any]:
    """Every JSON-RPC message in these records' bodies."""
    for record in records:
        items = record.message if isinstance(record.message, list) else [record.message]
        yield from (item for item in items if item is not None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--allow-exit", action="store_true", help="let the method exit end this process")
    args = parser.parse_args()
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda signum, frame: done.set())
    peer = HttpPeer(args.host, args.port, allow_exit=args.allow_exit).start()
    print(f"listening on http://{args.host}:{peer.port}{ENDPOINT}", flush=True)
    try:
        while not done.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        peer.close()


if __name__ == "__main__":
    main()
