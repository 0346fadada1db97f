"""An MCP server that is slow, silent or task-happy on demand, for the deadline tests.

Standard library only (it must not import jsonrpc_threads).  Over stdio, as a
real child process::

    [sys.executable, "tests/peers/mcp_slow_peer.py", *flags]

or in this process over Streamable HTTP (``SlowHttpPeer``, on
127.0.0.1, a free port), with sessions that the test can expire and an
``initialize`` whose delay it can change.

Flags (stdio):

- ``--initialize-delay S``: ``initialize`` answers after ``S`` seconds;
- ``--silent``: answers nothing at all (reads and drops every line);
- ``--stateless``: a server of the stateless era (2026-07-28) with the tasks
  extension; otherwise one of the session era, whose ``server/discover``
  answers -32601, as every server of 2025 does.

Tools:

- ``echo {text}``: the text;
- ``sleep {seconds}``: answers after ``seconds`` (at once when cancelled);
- ``work {seconds, create_delay}``: first sends progress (when the call
  carries a ``progressToken``), then, ``create_delay`` seconds later (at once
  given up when the call is cancelled with ``notifications/cancelled``),
  makes a task that is ``working`` for ``seconds``, then ``completed``
  (stateless era; in the session era it answers after ``seconds``);
- ``log {wait_cancelled, timeout}``: what the server saw, once at least
  ``wait_cancelled`` cancellations arrived (or ``timeout`` passed):
  ``{"methods", "work_ids", "cancelled", "tasks_cancelled"}`` as structured
  content.

Every request runs on a thread of its own; writes are serialized.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Dict, List, Optional

SESSION_VERSION = "2025-11-25"
STATELESS_VERSION = "2026-07-28"
TASKS = "io.modelcontextprotocol/tasks"
#: The longest ``log`` waits for cancellations by default.
LOG_WAIT_S = 10.0

TOOLS = [
    {"name": name, "inputSchema": {"type": "object"}, "description": f"the {name} tool"}
    for name in ("echo", "sleep", "work", "log")
]


class McpBehaviour:
    """What the server answers (shared by the stdio and the HTTP peer).  Thread-safe."""

    def __init__(self, *, initialize_delay: float = 0.0, relist_delay: float = 0.0, stateless: bool = False) -> None:
        self.initialize_delay = initialize_delay
        self.relist_delay = relist_delay  # every tools/list but the first waits this long (or until stop)
        self._lists = 0
        self.stateless = stateless
        self.cond = threading.Condition()
        self.methods: List[str] = []
        self.work_ids: List[Any] = []
        self.cancelled: List[Any] = []
        self.tasks_cancelled: List[str] = []
        self.stop = threading.Event()
        self._tasks: Dict[str, Dict[str, Any]] = {}
        self._task_ids = itertools.count(1)

    def note(self, message: Dict[str, Any]) -> None:
        """Record a message that arrived (a notification is only recorded)."""
        with self.cond:
            self.methods.append(str(message.get("method")))
            if message.get("method") == "notifications/cancelled":
                self.cancelled.append((message.get("params") or {}).get("requestId"))
            self.cond.notify_all()

    def was_cancelled(self, request_id: Any, timeout: float) -> bool:
        with self.cond:
            return self.cond.wait_for(lambda: request_id in self.cancelled or self.stop.is_set(), timeout) and (
                request_id in self.cancelled
            )

    def answer(self, message: Dict[str, Any], notify: Callable[[Dict[str, Any]], None]) -> Optional[Dict[str, Any]]:
        """The response to a request (None: no response)."""
        rid, method, params = message.get("id"), message.get("method"), message.get("params") or {}
        if method == "initialize":
            self.stop.wait(self.initialize_delay)
            return _result(
                rid,
                {
                    "protocolVersion": SESSION_VERSION,
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "slow-peer", "version": "1"},
                },
            )
        if method == "server/discover":
            if not self.stateless:
                return _error(rid, -32601, "Method not found: server/discover")
            return _result(
                rid,
                {
                    "resultType": "complete",
                    "supportedVersions": [STATELESS_VERSION],
                    "capabilities": {"tools": {}, "extensions": {TASKS: {}}},
                    "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "slow-peer", "version": "1"}},
                },
            )
        if method == "ping":
            return _result(rid, {})
        if method == "tools/list":
            with self.cond:
                self._lists += 1
                again = self._lists > 1
            if again:
                self.stop.wait(self.relist_delay)
            return _result(rid, {"tools": TOOLS})
        if method == "tools/call":
            return self._call(rid, params, notify)
        if method == "tasks/get":
            return _result(rid, self._task(str(params.get("taskId"))))
        if method == "tasks/cancel":
            task_id = str(params.get("taskId"))
            with self.cond:
                self.tasks_cancelled.append(task_id)
                if task_id in self._tasks:
                    self._tasks[task_id]["cancelled"] = True
                self.cond.notify_all()
            return _result(rid, self._task(task_id))
        return _error(rid, -32601, f"Method not found: {method}")

    def _call(self, rid: Any, params: Dict[str, Any], notify: Callable[[Dict[str, Any]], None]) -> Optional[Any]:
        name, arguments = params.get("name"), params.get("arguments") or {}
        if name == "echo":
            return _result(rid, _text(str(arguments.get("text"))))
        if name == "sleep":
            if not self.was_cancelled(rid, float(arguments.get("seconds", 0))):
                return _result(rid, _text("slept"))
            return None
        if name == "work":
            with self.cond:
                self.work_ids.append(rid)
            token = (
                ((params.get("_meta") or {}).get("progressToken")) if isinstance(params.get("_meta"), dict) else None
            )
            if token is not None:
                notify({"method": "notifications/progress", "params": {"progressToken": token, "progress": 0}})
            if self.was_cancelled(rid, float(arguments.get("create_delay", 0))):
                return None  # cancelled before the task was made: no task, no answer
            seconds = float(arguments.get("seconds", 0))
            if not self.stateless:
                self.stop.wait(seconds)
                return _result(rid, _text("worked"))
            task_id = f"task-{next(self._task_ids)}"
            with self.cond:
                self._tasks[task_id] = {"until": time.monotonic() + seconds, "cancelled": False}
            return _result(rid, {"resultType": "task", "taskId": task_id, "status": "working", "pollIntervalMs": 50})
        if name == "log":
            wanted = int(arguments.get("wait_cancelled", 0))
            with self.cond:
                self.cond.wait_for(lambda: len(self.cancelled) >= wanted, float(arguments.get("timeout", LOG_WAIT_S)))
                seen = {
                    "methods": list(self.methods),
                    "work_ids": list(self.work_ids),
                    "cancelled": list(self.cancelled),
                    "tasks_cancelled": list(self.tasks_cancelled),
                }
            return _result(rid, {"content": [{"type": "text", "text": "log"}], "structuredContent": seen})
        return _error(rid, -32602, f"Unknown tool: {name}")

    def _task(self, task_id: str) -> Dict[str, Any]:
        with self.cond:
            task = self._tasks.get(task_id)
        if task is None:
            return {"taskId": task_id, "status": "failed", "error": {"code": -32602, "message": "no such task"}}
        if task["cancelled"]:
            return {"taskId": task_id, "status": "cancelled"}
        if time.monotonic() < task["until"]:
            return {"taskId": task_id, "status": "working", "pollIntervalMs": 50}
        return {"taskId": task_id, "status": "completed", "result": _text("worked")}


def _result(rid: Any, result: Dict[str, Any]) -> Dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "result": result}


def _error(rid: Any, code: int, message: str) -> Dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}}


def _text(text: str) -> Dict[str, Any]:
    return {"content": [{"type": "text", "text": text}]}


# -- over stdio (a child process) ------------------------------------------------------------------


def serve_stdio(behaviour: McpBehaviour, silent: bool) -> None:
    lock = threading.Lock()

    def write(message: Dict[str, Any]) -> None:
        line = json.dumps({"jsonrpc": "2.0", **message}) + "\n"
        with lock:
            sys.stdout.write(line)
            sys.stdout.flush()

    def handle(message: Dict[str, Any]) -> None:
        answer = behaviour.answer(message, write)
        if answer is not None:
            write(answer)

    for line in sys.stdin:
        if silent or not line.strip():
            continue
        message = json.loads(line)
        if "id" not in message:
            behaviour.note(message)
            continue
        behaviour.note(message)
        threading.Thread(target=handle, args=(message,), daemon=True).start()
    behaviour.stop.set()


# -- over Streamable HTTP (in the test's process) ------------------------------------------------------


class SlowHttpPeer:
    """A session-era MCP server over Streamable HTTP on 127.0.0.1 whose sessions the test expires.  A context manager.

    Attributes:
        behaviour: what it answers (set ``behaviour.initialize_delay`` at any time).
        initializes: how many ``initialize`` requests arrived.
    """

    def __init__(self, *, initialize_delay: float = 0.0) -> None:
        self.behaviour = McpBehaviour(initialize_delay=initialize_delay)
        self.initializes = 0
        self._sessions: Dict[str, bool] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        peer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # format: the base class's name
                pass

            def do_POST(self) -> None:
                peer._post(self)

            def do_GET(self) -> None:
                self._empty(405)

            def do_DELETE(self) -> None:
                self._empty(200)

            def _empty(self, status: int) -> None:
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="test-slow-http-peer", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/mcp"

    def expire(self) -> None:
        """Forget every session: the next request of each gets 404."""
        with self._lock:
            self._sessions.clear()

    def __enter__(self) -> SlowHttpPeer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.behaviour.stop.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)

    def _post(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        message = json.loads(handler.rfile.read(length) or b"{}")
        self.behaviour.note(message)
        session = handler.headers.get("Mcp-Session-Id")
        headers: Dict[str, str] = {}
        if message.get("method") == "initialize":
            with self._lock:
                self.initializes += 1
                session = f"session-{next(self._ids)}"
                self._sessions[session] = True
            headers["Mcp-Session-Id"] = session
        elif message.get("method") != "server/discover":
            with self._lock:
                known = session in self._sessions
            if not known:
                self._reply(handler, 404, None, headers)
                return
        if "id" not in message:
            self._reply(handler, 202, None, headers)
            return
        self._reply(handler, 200, self.behaviour.answer(message, lambda notification: None), headers)

    def _reply(self, handler: BaseHTTPRequestHandler, status: int, message: Any, headers: Dict[str, str]) -> None:
        data = json.dumps(message).encode() if message is not None else b""
        handler.send_response(status)
        if message is not None:
            handler.send_header("Content-Type", "application/json")
        for name, value in headers.items():
            handler.send_header(name, value)
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--initialize-delay", type=float, default=0.0)
    parser.add_argument("--relist-delay", type=float, default=0.0)
    parser.add_argument("--silent", action="store_true")
    parser.add_argument("--stateless", action="store_true")
    args = parser.parse_args()
    behaviour = McpBehaviour(
        initialize_delay=args.initialize_delay, relist_delay=args.relist_delay, stateless=args.stateless
    )
    serve_stdio(behaviour, args.silent)


if __name__ == "__main__":
    main()
