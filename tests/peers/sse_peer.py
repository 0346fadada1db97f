"""A JSON-RPC 2.0 peer over MCP's legacy HTTP+SSE transport (2024-11-05) for tests: well-behaved or faulty.

Standard library only (it must not import jsonrpc_threads).  Use it in-process::

    with SsePeer() as peer:                 # 127.0.0.1, a free port, serving in threads
        url = peer.url_with("ids")          # the stream's URL, with fault modes
        ...

A GET of ``/sse`` opens a session: the first event is ``endpoint`` (the POST
URL, ``/messages?session=<id>``), then every answer of the session comes as a
``message`` event.  A POST to the endpoint is answered ``202 Accepted`` and
handled in a thread of its own (a slow method holds nothing else).  Modes, in
the GET's ``mode`` query parameter (comma-separated):

- ``ids``: events carry ids (``<session>:<n>``); a GET with ``Last-Event-ID``
  resumes the session and replays what came after that id;
- ``cut=N``: the stream ends (cleanly) after N message events;
- ``newsession``: a resumed stream opens a new session (a new endpoint);
- ``flap``: a resumed stream (GET with ``Last-Event-ID``) ends at once, empty;
- ``noendpoint``: the stream never sends the endpoint event;
- ``crossorigin``: the endpoint event names another origin (127.0.0.2);
- ``postfail``: every POST answers 500;
- ``refuse``: the GET answers 404.

Methods: ``echo`` (params), ``add`` [a, b], ``sleep`` {"seconds", "result"},
``never`` (no answer until shutdown), ``gated`` {"gate", "result"} (the
result once ``release`` {"gate"} was called; True), ``headers`` (the POST's
headers, names in lower case), ``notify`` {"method", "params", "count"} (count
notifications, then count), ``oversized`` {"bytes", "response", "result_first",
"nested_id"} (a notification of about that many bytes then "ok", or the answer
itself that big; with "result_first", written as the TypeScript SDK orders it,
``result`` before ``id``, the result holding an object with the id
"nested_id"), ``notifications_log`` {"wait_for", "timeout"} (the notifications the
client sent this session), ``reverse_call`` {"method", "params"} (a request to
the client; its answer).  Unknown methods answer -32601.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, List, Optional, Tuple
from urllib.parse import parse_qs, urlsplit

#: How long a stream waits for its next event before a keep-alive comment.
KEEPALIVE_S = 0.5


class Session:
    """One client's session: its events (kept for replay) and what its client sent."""

    def __init__(self, session_id: str, modes: Dict[str, str]) -> None:
        self.id = session_id
        self.modes = modes
        self.lock = threading.Condition()
        self.events: List[Tuple[int, str, str]] = []  # (number, event name, data)
        self.counter = itertools.count(1)
        self.notifications: List[Dict[str, Any]] = []
        self.answers: Dict[Any, Any] = {}  # client answers to our requests
        self.closed = False

    def send(self, message: Any, event: str = "message") -> None:
        with self.lock:
            self.events.append((next(self.counter), event, json.dumps(message, ensure_ascii=False)))
            self.lock.notify_all()


class SsePeer:
    """The peer: a ThreadingHTTPServer on 127.0.0.1.  A context manager."""

    def __init__(self) -> None:
        self.sessions: Dict[str, Session] = {}
        self.gets: List[Dict[str, str]] = []  # the headers of every GET
        self._stopping = threading.Event()
        self._gates_lock = threading.Lock()
        self._gates: Dict[str, threading.Event] = {}  # by name, made by whichever of gated/release comes first
        peer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # format: the base class's name
                pass

            def do_GET(self) -> None:
                peer._get(self)

            def do_POST(self) -> None:
                peer._post(self)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="test-sse-peer", daemon=True)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def url_with(self, *modes: str) -> str:
        return self.base + "/sse" + (f"?mode={','.join(modes)}" if modes else "")

    def start(self) -> SsePeer:
        self._thread.start()
        return self

    def close(self) -> None:
        self._stopping.set()
        with self._gates_lock:
            for gate in self._gates.values():
                gate.set()
        for session in list(self.sessions.values()):
            with session.lock:
                session.closed = True
                session.lock.notify_all()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)

    def __enter__(self) -> SsePeer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the stream -------------------------------------------------------------------------

    def _get(self, handler: BaseHTTPRequestHandler) -> None:
        parts = urlsplit(handler.path)
        if parts.path != "/sse":
            self._plain(handler, 404, b"not found")
            return
        self.gets.append({k.lower(): v for k, v in handler.headers.items()})
        modes = {}
        for item in ",".join(parse_qs(parts.query).get("mode", [])).split(","):
            if item:
                name, _, value = item.partition("=")
                modes[name] = value
        if "refuse" in modes:
            self._plain(handler, 404, b"no stream here")
            return
        last = handler.headers.get("Last-Event-ID")
        if last and "flap" in modes:
            handler.send_response(200)
            handler.send_header("Content-Type", "text/event-stream")
            handler.send_header("Content-Length", "0")
            handler.end_headers()
            return
        session: Optional[Session] = None
        start_after = 0
        if last and "ids" in modes and "newsession" not in modes:
            session_id, _, number = last.rpartition(":")
            session = self.sessions.get(session_id)
            start_after = int(number) if number.isdigit() else 0
        if session is None:
            session = Session(uuid.uuid4().hex, modes)
            self.sessions[session.id] = session
            if "noendpoint" not in modes:
                host = "127.0.0.2" if "crossorigin" in modes else "127.0.0.1"
                port = self._server.server_address[1]
                target = (
                    f"http://{host}:{port}/messages?session={session.id}"
                    if "crossorigin" in modes
                    else f"/messages?session={session.id}"
                )
                with session.lock:
                    session.events.append((next(session.counter), "endpoint", target))
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Cache-Control", "no-cache")
        handler.send_header("Connection", "close")
        handler.end_headers()
        cut = int(modes["cut"]) if modes.get("cut", "").isdigit() else None
        sent_messages = 0
        position = 0
        with session.lock:
            while position < len(session.events) and session.events[position][0] <= start_after:
                position += 1
        try:
            while not self._stopping.is_set():
                with session.lock:
                    if position >= len(session.events) and not session.closed:
                        session.lock.wait(KEEPALIVE_S)
                    if session.closed:
                        return
                    pending = session.events[position:]
                    position = len(session.events)
                if not pending:
                    handler.wfile.write(b": keep-alive\n\n")
                    handler.wfile.flush()
                    continue
                for number, event, data in pending:
                    lines = [f"event: {event}"]
                    if "ids" in modes:
                        lines.append(f"id: {session.id}:{number}")
                        lines.append("retry: 100")
                    lines.extend(f"data: {line}" for line in data.split("\n"))
                    handler.wfile.write(("\n".join(lines) + "\n\n").encode("utf-8"))
                    handler.wfile.flush()
                    if event == "message":
                        sent_messages += 1
                        if cut is not None and sent_messages >= cut:
                            return
        except OSError:
            return

    # -- the POSTs --------------------------------------------------------------------------

    def _post(self, handler: BaseHTTPRequestHandler) -> None:
        parts = urlsplit(handler.path)
        session = self.sessions.get(parse_qs(parts.query).get("session", [""])[0])
        length = int(handler.headers.get("Content-Length") or 0)
        body = handler.rfile.read(length)
        if parts.path != "/messages" or session is None:
            self._plain(handler, 404, b"unknown session")
            return
        if "postfail" in session.modes:
            self._plain(handler, 500, b"the server is unwell")
            return
        headers = {k.lower(): v for k, v in handler.headers.items()}
        self._plain(handler, 202, b"Accepted")
        try:
            message = json.loads(body)
        except ValueError:
            return
        items = message if isinstance(message, list) else [message]
        threading.Thread(
            target=self._handle, args=(session, items, headers, isinstance(message, list)), daemon=True
        ).start()

    def _handle(self, session: Session, items: List[Any], headers: Dict[str, str], batch: bool) -> None:
        answers = []
        for item in items:
            if not isinstance(item, dict):
                continue
            if "method" not in item:  # the client's answer to one of our requests
                with session.lock:
                    session.answers[item.get("id")] = item
                    session.lock.notify_all()
                continue
            if "id" not in item:
                with session.lock:
                    session.notifications.append({"method": item["method"], "params": item.get("params")})
                    session.lock.notify_all()
                continue
            answer = self._answer(session, item, headers)
            if answer is not None:
                answers.append(answer)
        if batch and answers:
            session.send(answers)
        else:
            for answer in answers:
                session.send(answer)

    def _gate(self, name: str) -> threading.Event:
        with self._gates_lock:
            return self._gates.setdefault(name, threading.Event())

    def _answer(self, session: Session, request: Dict[str, Any], headers: Dict[str, str]) -> Optional[Dict[str, Any]]:
        method, params, rid = request["method"], request.get("params"), request["id"]

        def result(value: Any) -> Dict[str, Any]:
            return {"jsonrpc": "2.0", "id": rid, "result": value}

        if method == "echo":
            return result(params)
        if method == "add":
            return result(params[0] + params[1])
        if method == "headers":
            return result(headers)
        if method == "sleep":
            self._stopping.wait(params.get("seconds", 0))
            return result(params.get("result"))
        if method == "never":
            self._stopping.wait()
            return None
        if method == "notify":
            for _ in range(params.get("count", 1)):
                session.send({"jsonrpc": "2.0", "method": params["method"], "params": params.get("params")})
            return result(params.get("count", 1))
        if method == "gated":
            self._gate(params["gate"]).wait()
            return result(params.get("result"))
        if method == "release":
            self._gate(params["gate"]).set()
            return result(True)
        if method == "oversized":
            blob = "x" * int(params["bytes"])
            if params.get("result_first"):
                content = {"type": "text", "text": blob, "id": params.get("nested_id")}
                return {"result": {"content": [content]}, "jsonrpc": "2.0", "id": rid}
            if params.get("response"):
                return result(blob)
            session.send({"jsonrpc": "2.0", "method": "big", "params": {"blob": blob}})
            return result("ok")
        if method == "notifications_log":
            deadline = time.monotonic() + float(params.get("timeout", 5.0))
            with session.lock:
                while len(session.notifications) < params.get("wait_for", 0) and time.monotonic() < deadline:
                    session.lock.wait(max(0.0, deadline - time.monotonic()))
                return result(list(session.notifications))
        if method == "reverse_call":
            request_id = f"srv-{uuid.uuid4().hex[:8]}"
            session.send(
                {"jsonrpc": "2.0", "id": request_id, "method": params["method"], "params": params.get("params")}
            )
            deadline = time.monotonic() + 10.0
            with session.lock:
                while request_id not in session.answers and time.monotonic() < deadline:
                    session.lock.wait(max(0.0, deadline - time.monotonic()))
                answer = session.answers.get(request_id, {})
            return result({key: answer[key] for key in ("result", "error") if key in answer})
        return {"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": f"Method not found: {method}"}}

    @staticmethod
    def _plain(handler: BaseHTTPRequestHandler, status: int, body: bytes) -> None:
        handler.send_response(status)
        handler.send_header("Content-Type", "text/plain")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)


if __name__ == "__main__":
    with SsePeer() as running:
        print(f"listening on {running.url_with()}", flush=True)
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            pass
