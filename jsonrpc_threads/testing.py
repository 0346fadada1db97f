"""An in-memory transport for tests: both ends of a JSON-RPC connection, and no process.

Theory of operation.  ``MemoryTransport.pair`` makes two connected ends;
each is a real ``Transport``.  What one
end sends is queued for the other, whose reader thread hands it to its sink,
one message at a time and in the order it was sent, as a stdio reader thread
would: so a client over one end behaves exactly as over a pipe, its threads
and all, and nothing is delivered on the sender's own thread.  Closing one end
is the other end's end of stream: its sink hears ``transport_closed`` once the
messages sent before were delivered, and a later ``send`` there raises
``TransportClosed``.

The other end is whatever your test needs:

- a server written the way ``jsonrpc_threads.server.serve`` serves it:
  ``MemoryTransport.serving`` runs ``serve(handler)`` itself on a thread,
  over this pair instead of stdin and stdout, so ``handler(method, params)``
  answers, and ``jsonrpc_threads.server.notify`` and
  ``current_request_id`` work inside it;
- another ``JsonRpcClient``, whose ``on_request`` and
  ``on_notification`` handlers play the peer (and may call back);
- your own sink (any object with ``message_received(data)`` and
  ``transport_closed(error)``), which sees every message as raw bytes and
  answers with the end's ``MemoryTransport.send``.

Every wait is bounded by a named constant, and ``MemoryTransport.close``
joins the threads of its end (and, for ``serving``, the
server's).  Thread-safe: any method may be called from any thread.
"""

from __future__ import annotations

import collections
import threading
from typing import Any, Deque, List, Mapping, Optional, Sequence, Tuple, Union

from .deadlines.timeouts import MAX_WAIT_SLICE_S
from .errors import RequestId, TransportClosed
from .runtime.closing import Closing
from .transports.base import MessageSink

__all__ = ["READER_JOIN_S", "SERVER_STOP_WAIT_S", "MemoryTransport"]

#: ``close()``: how long to wait for an end's reader thread (it may be running a sink call).
READER_JOIN_S = 2.0
#: ``close()`` of a ``MemoryTransport.serving`` end: how long to wait for the server to
#: return (it waits up to its ``drain_timeout`` for running handlers, then for its workers).
SERVER_STOP_WAIT_S = 10.0

_END = object()  # in an inbox: the other end closed


class MemoryTransport(Closing):
    """One end of an in-memory connection; make them with ``pair`` or ``serving``.

    Thread-safe: ``send`` from any number of threads (messages arrive in
    the order the sends returned), ``close`` from any thread, any number
    of times.
    """

    def __init__(self, label: str = "memory") -> None:
        self.label = label
        self._peer: Optional[MemoryTransport] = None
        # _cond guards _inbox, _sink, _closed, _peer_closed, _notified and _reader.
        self._cond = threading.Condition()
        self._inbox: Deque[Union[bytes, object]] = collections.deque()
        self._sink: Optional[MessageSink] = None
        self._closed = False  # this end was closed
        self._peer_closed = False  # the other end was closed (its end of stream is queued here)
        self._notified = False  # the sink heard transport_closed
        self._reader: Optional[threading.Thread] = None
        self._stoppers: List[Tuple[threading.Thread, float]] = []  # threads close() waits for

    # -- making ends ------------------------------------------------------------------------

    @classmethod
    def pair(cls, label: str = "memory") -> Tuple[MemoryTransport, MemoryTransport]:
        """Two connected ends: what one sends, the other receives.

        Args:
            label: the ends' label in log lines and thread names (the second
                end's gets ``"-peer"`` appended).

        Returns:
            ``(end, peer)``: give ``end`` to the client under test, and drive
            ``peer`` as the other side.
        """
        end, peer = cls(label), cls(f"{label}-peer")
        end._peer, peer._peer = peer, end
        return end, peer

    @classmethod
    def serving(
        cls,
        handler: Any,
        *,
        max_workers: int = 4,
        drain_timeout: Optional[float] = 2.0,
        label: str = "memory",
        on_response: Any = None,
        on_exit: Any = None,
    ) -> MemoryTransport:
        """An end whose other side is ``jsonrpc_threads.server.serve(handler)``, run on a thread.

        The server reads what this end sends and answers as a tool server on
        stdio would (the wire rules of ``jsonrpc_threads.server``), with
        ``max_workers`` handlers at once.  Closing this end is the server's end
        of input: it waits up to ``drain_timeout`` for running handlers, and
        ``close()`` waits for it (at most ``SERVER_STOP_WAIT_S``).

        Args:
            handler: ``handler(method, params) -> result``, as for ``serve()``.
            max_workers: as for ``serve()``.
            drain_timeout: as for ``serve()``.
            label: the end's label.
            on_response: as for ``serve()``: where the responses the client
                sends go (a server that asks the client things).
            on_exit: called (with no argument) on the server's thread once its
                loop returned, before this end hears the end of stream.

        Returns:
            The end to give to the client under test (not started yet).
        """
        from .server import serve  # noqa: PLC0415 - only the serving end needs the server

        end, peer = cls.pair(label)
        lines = _LineInput()
        peer.start(lines)

        def run() -> None:
            try:
                serve(
                    handler,
                    stdin=lines,  # type: ignore[arg-type]
                    stdout=_LineOutput(peer),  # type: ignore[arg-type]
                    max_workers=max_workers,
                    drain_timeout=drain_timeout,
                    log_to_stderr=False,
                    on_response=on_response,
                )
            finally:
                try:
                    if on_exit is not None:
                        on_exit()
                finally:
                    peer.close()

        thread = threading.Thread(target=run, name=f"jsonrpc-memory-server[{label}]", daemon=True)
        end._stoppers.append((thread, SERVER_STOP_WAIT_S))
        thread.start()
        return end

    # -- the transport contract ------------------------------------------------------------------

    def start(self, sink: MessageSink) -> None:
        """Deliver what the other end sends (and sent before) to ``sink``, on this end's reader thread.

        Raises:
            TransportClosed: when this end was closed.
            RuntimeError: when called a second time.
        """
        with self._cond:
            if self._closed:
                raise TransportClosed(f"{self.label}: closed")
            if self._reader is not None:
                raise RuntimeError("MemoryTransport.start() called twice")
            self._sink = sink
            self._reader = threading.Thread(target=self._run, name=f"jsonrpc-memory-reader[{self.label}]", daemon=True)
            self._reader.start()

    def send(
        self,
        data: bytes,
        request_ids: Sequence[RequestId] = (),
        *,
        deadline: Optional[float] = None,
        headers: Optional[Mapping[str, str]] = None,
    ) -> None:
        """Queue one encoded message (or batch) for the other end; never blocks.

        ``request_ids``, ``deadline`` and ``headers`` are accepted as every
        transport accepts them, and not needed here.

        Raises:
            TransportClosed: when either end is closed.
            TypeError: when ``data`` is not bytes.
        """
        if not isinstance(data, bytes):
            raise TypeError(f"data must be bytes, not {type(data).__name__}")
        peer = self._peer
        with self._cond:
            closed = self._closed or self._peer_closed or peer is None
        if closed or peer is None or not peer._put(data):
            raise TransportClosed(f"{self.label}: the connection is closed")

    def close(self) -> None:
        """Close this end: the other end's sink hears the end of stream after what was sent before.

        This end's sink hears ``transport_closed`` (once); what was queued for
        it and not delivered yet is dropped.  Joins this end's reader thread
        (at most ``READER_JOIN_S``) and, for a ``serving`` end, the
        server (at most ``SERVER_STOP_WAIT_S``).  Idempotent.
        """
        with self._cond:
            first = not self._closed
            self._closed = True
            self._inbox.clear()
            reader = self._reader
            self._cond.notify_all()
        if first and self._peer is not None:
            self._peer._put(_END)
        self._notify_closed(TransportClosed(f"{self.label}: closed"))
        me = threading.current_thread()
        for thread, wait in [(reader, READER_JOIN_S), *self._stoppers]:
            if thread is not None and thread is not me and thread.ident is not None:
                thread.join(wait)

    @property
    def closed(self) -> bool:
        """True once this end, or the other one, was closed."""
        return self._closed or self._peer_closed

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return f"<MemoryTransport {self.label!r} {state}>"

    # -- internals -----------------------------------------------------------------------------

    def _put(self, item: Union[bytes, object]) -> bool:
        """From the other end: queue a message (or its end).  False when this end is closed."""
        with self._cond:
            if self._closed or self._peer_closed:
                return False
            if item is _END:
                self._peer_closed = True
            self._inbox.append(item)
            self._cond.notify()
            return True

    def _run(self) -> None:
        """The reader thread: deliver the inbox in order until this end closes or the other end's end."""
        while True:
            with self._cond:
                while not self._inbox and not self._closed:
                    self._cond.wait(MAX_WAIT_SLICE_S)
                if self._closed:
                    return
                item = self._inbox.popleft()
                sink = self._sink
            if item is _END:
                self._notify_closed(TransportClosed(f"{self.label}: the other end closed"))
                return
            if sink is not None:
                try:
                    sink.message_received(item)  # type: ignore[arg-type]
                except Exception:  # a sink must not kill the reader (the client's never raises)
                    import logging  # noqa: PLC0415 - only on this failure

                    logging.getLogger(__name__).exception("%s: the sink failed", self.label)

    def _notify_closed(self, error: TransportClosed) -> None:
        with self._cond:
            notify = not self._notified and self._sink is not None
            self._notified = True
            sink = self._sink
        if notify and sink is not None:
            sink.transport_closed(error)


class _LineInput:
    """The server's stdin: a sink that turns received messages into lines for ``readline()``."""

    def __init__(self) -> None:
        # _cond guards _buffer and _ended.
        self._cond = threading.Condition()
        self._buffer = bytearray()
        self._ended = False

    def message_received(self, data: bytes) -> Sequence[RequestId]:
        with self._cond:
            self._buffer += data + b"\n"
            self._cond.notify()
        return ()

    def transport_closed(self, error: TransportClosed) -> None:
        with self._cond:
            self._ended = True
            self._cond.notify()

    def requests_failed(self, request_ids: Sequence[RequestId], error: Exception) -> None:
        """Part of the sink contract; a server sends no requests."""

    def has_pending(self) -> bool:
        return False

    def readline(self, size: int = -1) -> bytes:
        """The next line (at most ``size`` bytes), waiting for it; ``b""`` at the end of input."""
        with self._cond:
            while b"\n" not in self._buffer and not self._ended:
                self._cond.wait(MAX_WAIT_SLICE_S)
            end = self._buffer.find(b"\n")
            end = len(self._buffer) if end < 0 else end + 1
            if size is not None and size >= 0:
                end = min(end, size)
            line = bytes(self._buffer[:end])
            del self._buffer[:end]
            return line


class _LineOutput:
    """The server's stdout: each line written goes to the other end as one message."""

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
                raise BrokenPipeError(str(exc)) from None  # what serve() sees when its peer is gone
        return len(data)

    def flush(self) -> None:
        """Nothing is buffered past a newline."""
