"""A scripted peer that lives in this process, for tests of the client itself.

``scripted`` gives the client's end of a public
``MemoryTransport`` pair whose other end is a
``MemoryPeer``: what the client sends reaches the peer on that end's reader
thread, and what the peer sends is delivered to the client on the client end's,
in order, as a stdio reader thread would.  The peer answers the same methods as
``tests/peers/stdio_peer.py`` that the contract suite uses (``echo``, ``add``,
``sleep``, ``never``, ``notify``, ``notifications_log``, ``reverse_call``), and a
test may give it a ``script`` that decides, per request, what to send and when.

Everything the peer sends is scheduled on one heap served by the peer's one
thread, so thousands of delayed answers cost no thread each; every wait is on
a condition with a deadline.  Standard library and the package's public types only.
"""

from __future__ import annotations

import heapq
import itertools
import json
import subprocess
import sys
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from jsonrpc_threads import TransportClosed
from jsonrpc_threads.testing import MemoryTransport

#: The longest the peer's thread waits before it looks at its heap again.
_IDLE_WAIT_S = 1.0

Message = Dict[str, Any]
#: ``script(peer, request) -> [(delay_s, message), ...]`` or None for the built-in methods.
Script = Callable[["MemoryPeer", Message], Optional[Sequence[Tuple[float, Message]]]]


def response(request_id: Any, result: Any) -> Message:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def error(request_id: Any, code: int, message: str, data: Any = None) -> Message:
    body: Dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        body["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": body}


class MemoryPeer:
    """A JSON-RPC peer in this process; see the module docstring.  Thread-safe."""

    def __init__(self, script: Optional[Script] = None) -> None:
        self.script = script
        # _cond guards _heap, _closed, notifications, _waiting and _log_waiters.
        self._cond = threading.Condition()
        self._heap: List[Tuple[float, int, Optional[Message]]] = []
        self._seq = itertools.count()
        self._closed = False
        self._deliver: Callable[[bytes], None] = lambda data: None
        self.notifications: List[Message] = []
        self._waiting: Dict[str, Message] = {}  # our request id -> the request of the client that caused it
        self._log_waiters: List[Tuple[Message, int, float]] = []
        self._reverse_ids = itertools.count(1)
        self.received = 0
        self.thread = threading.Thread(target=self._run, name="memory-peer", daemon=True)

    # -- wiring ----------------------------------------------------------------------

    def connect(self) -> MemoryTransport:
        """Make a pair, take one end (this peer is its sink) and return the other, for the client."""
        end, mine = MemoryTransport.pair("memory")

        def deliver(data: bytes) -> None:
            try:
                mine.send(data)
            except TransportClosed:  # the client closed: what it would have got is dropped
                pass

        self._deliver = deliver
        self.thread.start()
        mine.start(self)  # type: ignore[arg-type]
        return end

    # -- the sink of the peer's end --------------------------------------------------

    def message_received(self, data: bytes) -> Sequence[Any]:
        self.receive(data)
        return ()

    def transport_closed(self, error: TransportClosed) -> None:
        self.stop()

    def requests_failed(self, request_ids: Sequence[Any], error: Exception) -> None:
        """The peer's requests (reverse calls) are answered by the client or left waiting."""

    def has_pending(self) -> bool:
        return bool(self._waiting)

    def stop(self, timeout: float = 5.0) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        if self.thread.ident is not None and self.thread is not threading.current_thread():
            self.thread.join(timeout)

    def send_later(self, delay: float, message: Optional[Message]) -> None:
        """Send ``message`` to the client after ``delay`` seconds (None: nothing, a placeholder)."""
        with self._cond:
            heapq.heappush(self._heap, (time.monotonic() + delay, next(self._seq), message))
            self._cond.notify()

    # -- input -------------------------------------------------------------------------

    def receive(self, data: bytes) -> None:
        value = json.loads(data)
        if isinstance(value, list):
            answers = [a for a in (self._answer_now(item) for item in value) if a is not None]
            if answers:
                self._deliver_now(answers)
            return
        self._handle(value)

    def _answer_now(self, message: Message) -> Optional[Message]:
        """A batch item: answered at once (sleep and never are not for batches)."""
        if "method" not in message:
            return None
        if "id" not in message:
            self._note(message)
            return None
        replies = self._builtin(message)
        return replies[0][1] if replies else None

    def _deliver_now(self, value: Any) -> None:
        with self._cond:
            heapq.heappush(self._heap, (time.monotonic(), next(self._seq), value))
            self._cond.notify()

    def _handle(self, message: Message) -> None:
        with self._cond:
            self.received += 1
        if "method" not in message:  # the client's answer to our reverse call
            with self._cond:
                origin = self._waiting.pop(str(message.get("id")), None)
            if origin is not None:
                outcome = {"error": message["error"]} if "error" in message else {"result": message.get("result")}
                self.send_later(0.0, response(origin["id"], outcome))
            return
        if "id" not in message:
            self._note(message)
            return
        replies = self.script(self, message) if self.script is not None else None
        if replies is None:
            replies = self._builtin(message)
        for delay, reply in replies:
            self.send_later(delay, reply)

    def _note(self, message: Message) -> None:
        with self._cond:
            self.notifications.append({"method": message["method"], "params": message.get("params")})
            ready = [w for w in self._log_waiters if len(self.notifications) >= w[1]]
            for waiter in ready:
                self._log_waiters.remove(waiter)
        for request, _, _ in ready:
            self.send_later(0.0, response(request["id"], list(self.notifications)))

    def _builtin(self, request: Message) -> List[Tuple[float, Message]]:
        method, params, rid = request["method"], request.get("params"), request["id"]
        if method == "echo":
            return [(0.0, response(rid, params))]
        if method == "add":
            return [(0.0, response(rid, params[0] + params[1]))]
        if method == "sleep":
            return [(float(params["seconds"]), response(rid, params.get("result")))]
        if method == "never":
            return []
        if method == "notify":
            params = params or {}
            note: Message = {"jsonrpc": "2.0", "method": params.get("method", "note")}
            if params.get("params") is not None:
                note["params"] = params["params"]
            count = int(params.get("count", 1))
            return [(0.0, dict(note)) for _ in range(count)] + [(0.0, response(rid, count))]
        if method == "notifications_log":
            wanted = int((params or {}).get("wait_for", 0))
            timeout = float((params or {}).get("timeout", 5.0))
            waiter = (request, wanted, timeout)
            with self._cond:
                if len(self.notifications) >= wanted:
                    return [(0.0, response(rid, list(self.notifications)))]
                self._log_waiters.append(waiter)

            def at_timeout() -> Optional[Message]:
                """The log as it is, unless enough notifications came meanwhile (then it was sent)."""
                with self._cond:
                    if waiter not in self._log_waiters:
                        return None
                    self._log_waiters.remove(waiter)
                    return response(rid, list(self.notifications))

            return [(timeout, at_timeout)]  # type: ignore[list-item]
        if method == "reverse_call":
            params = params or {}
            peer_id = f"peer-{next(self._reverse_ids)}"
            with self._cond:
                self._waiting[peer_id] = request
            call: Message = {"jsonrpc": "2.0", "id": peer_id, "method": params.get("method", "ping")}
            if params.get("params") is not None:
                call["params"] = params["params"]
            return [(0.0, call)]
        return [(0.0, error(rid, -32601, f"Method not found: {method}"))]

    # -- output --------------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            with self._cond:
                while True:
                    if self._closed:
                        return
                    now = time.monotonic()
                    if self._heap and self._heap[0][0] <= now:
                        _, _, message = heapq.heappop(self._heap)
                        break
                    wait = self._heap[0][0] - now if self._heap else _IDLE_WAIT_S
                    self._cond.wait(min(wait, _IDLE_WAIT_S))
            if callable(message):  # made when it is due
                message = message()
            if message is not None:
                self._deliver(json.dumps(message, ensure_ascii=False).encode("utf-8"))


def scripted(peer: Optional[MemoryPeer] = None) -> MemoryTransport:
    """The client's end of a ``MemoryTransport`` pair whose other end is ``peer``."""
    return (peer or MemoryPeer()).connect()


__all__ = ["MemoryPeer", "error", "response", "scripted"]


def run_command(*args: str, stdin: str = "", timeout: float) -> Tuple[int, str, str]:
    """``python -m jsonrpc_threads *args`` in a child process: (exit code, stdout, stderr)."""
    done = subprocess.run(
        [sys.executable, "-m", "jsonrpc_threads", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    return done.returncode, done.stdout, done.stderr
