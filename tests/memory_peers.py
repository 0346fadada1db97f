"""The suite's own peers (tests/peers/), run in this process over a ``MemoryTransport`` pair: the pure tier's peers.

Not a test module.  Theory of operation: a peer of ``tests/peers/`` is a
class whose ``handle(message)`` answers one decoded message by writing
messages; as a child process, its ``main()`` reads them from stdin and its
writes go to stdout.  ``PeerEnd`` runs the same class on the other end of a
``jsonrpc_threads.testing.MemoryTransport`` pair: each message the client
sends is decoded and handed to ``handle`` (on a thread of its own, as the
MCP peers' ``main()`` does, or in order on the end's reader thread, as the
language server's loop does), and what the peer writes goes back through the
pair.  The client under test meets the same messages as over a pipe, with no
process, no framing and no socket: the same behaviour is tested here in the
pure tier and over the real child process in the full one.

A peer's ``handle`` returning ``False`` is its exit; ``PeerEnd.crash()``
is a crash: either closes the peer's end, which the client hears as the end
of its stream.  ``close()`` also joins the handler threads (bounded by
``JOIN_S``).  Thread-safe: ``write`` from any thread.
"""

from __future__ import annotations

import json
import sys
import threading
from typing import Any, Callable, Dict, List, Optional, Sequence

from jsonrpc_threads.errors import TransportClosed
from jsonrpc_threads.testing import MemoryTransport

#: How long ``close()`` waits for each handler thread still running.
JOIN_S = 10.0


class PeerEnd:
    """A peer's ``handle`` on the far end of a memory pair; ``transport`` is the client's end."""

    def __init__(self, handle: Callable[[Dict[str, Any]], Any], *, threaded: bool, label: str) -> None:
        self.transport, self._end = MemoryTransport.pair(label)
        self.peer: Any = getattr(handle, "__self__", None)  # the peer object whose handle this is
        self._handle = handle
        self._threaded = threaded
        self._lock = threading.Lock()
        self._threads: List[threading.Thread] = []
        self.ended = threading.Event()  # set when the client closed its end (the peer's end of input)
        self.closing = threading.Event()  # set by close(): a peer's wait (a slow answer) ends with it
        self._end.start(self)

    def write(self, message: Dict[str, Any]) -> None:
        """Send one message to the client (dropped once the pair is closed, as a write to a closed pipe)."""
        try:
            self._end.send(json.dumps({"jsonrpc": "2.0", **message}).encode("utf-8"))
        except TransportClosed:
            pass

    def crash(self) -> None:
        """End the peer's output: the client hears the end of its stream, as after the process died."""
        self._end.close()

    def close(self) -> None:
        """Close the pair and wait for the handler threads (at most ``JOIN_S`` each)."""
        self.closing.set()
        self._end.close()
        self.transport.close()
        with self._lock:
            threads = list(self._threads)
        for thread in threads:
            thread.join(JOIN_S)

    # -- the sink of the peer's end --------------------------------------------------------

    def message_received(self, data: bytes) -> Sequence[Any]:
        message = json.loads(data)
        if not self._threaded:
            self._run(message)
            return ()
        thread = threading.Thread(target=self._run, args=(message,), name="memory-peer-handler", daemon=True)
        with self._lock:
            self._threads = [t for t in self._threads if t.is_alive()]
            self._threads.append(thread)
        thread.start()
        return ()

    def _run(self, message: Dict[str, Any]) -> None:
        if self._handle(message) is False:  # the peer's exit
            self.crash()

    def transport_closed(self, error: TransportClosed) -> None:
        """The client closed its end (or the peer crashed): the peer's end of input."""
        self.ended.set()

    def requests_failed(self, request_ids: Sequence[Any], error: Exception) -> None:
        """Part of the sink contract; the peer's end sends no requests of its own."""

    def has_pending(self) -> bool:
        return False


def pages_peer(
    pages: Optional[Dict[str, List[Any]]] = None,
    *,
    stateless: bool = False,
    slow: float = 0.0,
    slow_tools_list: bool = False,
) -> PeerEnd:
    """tests/peers/mcp_pages_peer.py's server, in memory (its flags as keywords)."""
    from .peers.mcp_pages_peer import PagesPeer  # noqa: PLC0415 - a peer module, loaded when used

    peer = PagesPeer(stateless, pages or {}, slow, slow_tools_list)
    end = PeerEnd(peer.handle, threaded=True, label="pages-peer")
    peer.write = end.write  # type: ignore[method-assign]
    return end


def lsp_fake_server(*flags: str) -> PeerEnd:
    """tests/peers/lsp_fake_server.py's language server, in memory (its flags as arguments).

    Flags about processes (``--stubborn``, ``--grandchild``, ``--slow-exit``)
    mean nothing here: the real-peer tests keep them.  ``--initialize-delay``
    holds the peer's reader as the real one does, until ``close()`` at the latest.
    """
    if "content_length_framing" not in sys.modules:  # the script imports its sibling by the script's path
        from .peers import content_length_framing  # noqa: PLC0415

        sys.modules["content_length_framing"] = content_length_framing
    from .peers.lsp_fake_server import Server  # noqa: PLC0415

    server = Server(list(flags))
    delay, server.initialize_delay = server.initialize_delay, 0

    def handle(message: Dict[str, Any]) -> Any:
        if message.get("method") == "initialize" and delay:
            end.closing.wait(delay)
        return server.handle(message)

    end = PeerEnd(handle, threaded=False, label="lsp-fake-server")
    end.peer = server
    server.send = end.write
    return end


class ServedPeer:
    """``jsonrpc_threads.server.serve(handler)`` on a thread, over the far end of a memory pair.

    What ``MemoryTransport.serving`` does, with one thing more: ``crash()``
    ends the server's output at once, as a process's exit does (the client
    hears the end of its stream; the server's next write is a broken pipe, and
    its loop ends).  ``transport`` is the client's end.
    """

    def __init__(self, handler: Callable[[str, Any], Any], *, label: str, max_workers: int = 4) -> None:
        from jsonrpc_threads.server import serve  # noqa: PLC0415

        self.transport, self._end = MemoryTransport.pair(label)
        self.ended = threading.Event()  # set when the connection ended (the client closed it, or a crash)
        # _cond guards _buffer and _input_ended: serve()'s stdin.
        self._cond = threading.Condition()
        self._buffer = bytearray()
        self._input_ended = False
        self._end.start(self)
        self._thread = threading.Thread(
            target=serve,
            args=(handler,),
            kwargs={"stdin": self, "stdout": _Output(self._end), "max_workers": max_workers, "log_to_stderr": False},
            name=f"memory-served[{label}]",
            daemon=True,
        )
        self._thread.start()

    def crash(self) -> None:
        """End the server's output (the client hears the end of its stream) and its input."""
        self._end.close()

    def close(self) -> None:
        """Close both ends and wait for the server's loop (at most ``JOIN_S``)."""
        self._end.close()
        self.transport.close()
        self._thread.join(JOIN_S)

    # -- the sink of the server's end: what the client sends becomes serve()'s input -----------------

    def message_received(self, data: bytes) -> Sequence[Any]:
        with self._cond:
            self._buffer += data + b"\n"
            self._cond.notify()
        return ()

    def transport_closed(self, error: TransportClosed) -> None:
        with self._cond:
            self._input_ended = True
            self._cond.notify()
        self.ended.set()

    def requests_failed(self, request_ids: Sequence[Any], error: Exception) -> None:
        """Part of the sink contract; the server's requests are serve()'s own."""

    def has_pending(self) -> bool:
        return False

    def readline(self, size: int = -1) -> bytes:
        """serve()'s stdin: the next message as a line, waiting for it; ``b""`` at the end of input."""
        with self._cond:
            while b"\n" not in self._buffer and not self._input_ended:
                self._cond.wait(JOIN_S)
            end = self._buffer.find(b"\n")
            end = len(self._buffer) if end < 0 else end + 1
            if size is not None and size >= 0:
                end = min(end, size)
            line = bytes(self._buffer[:end])
            del self._buffer[:end]
            return line


class _Output:
    """serve()'s stdout: each line written is one message to the client; a closed end is a broken pipe."""

    def __init__(self, end: MemoryTransport) -> None:
        self._end = end
        self._partial = b""

    def write(self, data: bytes) -> int:
        lines = (self._partial + data).split(b"\n")
        self._partial = lines.pop()
        for line in lines:
            try:
                self._end.send(line)
            except TransportClosed as exc:
                raise BrokenPipeError(str(exc)) from None
        return len(data)

    def flush(self) -> None:
        """Nothing is held past a newline."""


def example_server(max_workers: int = 4) -> ServedPeer:
    """The bundled example MCP server (jsonrpc_threads/examples/mcp_tool_server.py) served in memory.

    Its ``crash`` tool ends the connection with no answer, as the process's
    exit does (there is no exit code to report here); ``max_workers=1`` is a
    server that one slow call keeps from answering anything else.
    """
    from jsonrpc_threads.examples import mcp_tool_server  # noqa: PLC0415

    def handle(method: str, params: Any) -> Any:
        if method == "tools/call" and isinstance(params, dict) and params.get("name") == "crash":
            served.crash()
            return None  # never delivered: the output is closed
        return mcp_tool_server.handle(method, params)

    served = ServedPeer(handle, label="example", max_workers=max_workers)
    return served


class PeerEnds:
    """The peer ends a test made (a registry makes one per start of a server); ``close_all`` at the end."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.made: List[Any] = []  # PeerEnd and ServedPeer

    def add(self, end: Any) -> Any:
        with self._lock:
            self.made.append(end)
        return end

    def close_all(self) -> None:
        with self._lock:
            made, self.made = self.made, []
        for end in made:
            end.close()
