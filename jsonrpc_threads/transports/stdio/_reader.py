"""Reading the child's stdout: decoded into messages and delivered in order by the reader thread.

Theory of operation.  stdout is non-blocking; the reader thread polls it, with
the child's exit (``_exit_watch``) and a self-pipe that wakes it for
``close()``.  Whatever a read brings goes through the framing decoder
(``jsonrpc_threads.framing``), and the complete messages go to the sink in
the order they arrived: several that one read brought in one call where the
sink takes chunks (the client does: it hands them to its protocol core under
one round trip of its lock), else one at a time.  No user code runs here: the
sink only decides and queues work.

Who reads, and when, is a ``ReadGate``'s to say.  This module's own is the
plain design (``StdioTransport(reads="reader_thread")``): the reader thread
watches stdout all the time and reads whatever comes.  The stdio fast path (``_fast_path``) is another gate, under which
a caller blocked in ``call()`` may read its own answer while the reader thread
steps aside; the reader only asks its gate, and knows nothing of the strategy.

Exit.  Once the child exited, what stdout already holds is read (bounded by
``EXIT_AFTER_EOF_WAIT_S``) and the stream ends, even when a process the
child started still holds stdout open.  At the end the reader reports the
reason (``on_end``); a transport that is closing reports itself.
"""

from __future__ import annotations

import collections
import os
import select
import threading
import time
from typing import IO, Callable, Deque, List, Optional, Union

from ...errors import MessageTooLarge
from ...framing import ContentLengthDecoder, FramingError, LineDecoder, Oversized
from ...runtime.logs import get_logger
from .._poll import POLL_SLICE_MS, close_quietly
from ..base import MessageSink

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ...framing import Frame

_log = get_logger("jsonrpc_threads.transports.stdio")

#: End of stdout: how long what the pipe still holds may be read after the child exited.
EXIT_AFTER_EOF_WAIT_S = 1.0

_READ_CHUNK_BYTES = 256 * 1024
#: Reads in a row while the buffer comes back full, before polling again.
_MAX_READS_PER_WAKE = 8
_CAN_POLL = hasattr(select, "poll")
_POLL_IN = (select.POLLIN | select.POLLHUP | select.POLLERR) if _CAN_POLL else 0
#: The types of a run of messages only (no framing note among them).
_BYTES_ONLY = {bytes}

#: End-of-stream reasons.
CLOSED_STDOUT = "closed its stdout"
HELD_STDOUT = "exited; a process it started still holds its stdout"

Decoder = Union[LineDecoder, ContentLengthDecoder]
SinkRef = Callable[[], Optional[MessageSink]]
Deliver = Callable[[List["Frame"]], None]


class ReadGate:
    """Who may read stdout, and when: the plain design, where only the reader thread reads, always.

    A strategy overrides these (``_fast_path``).  Called by the reader
    thread (``reader_*``), by whoever delivers a read (``deliver``), and
    by the transport (``drive``, ``ensure_reading``, ``begin_close``).
    """

    def reader_wait_ms(self, closing: bool) -> Optional[int]:
        """None: the reader thread watches stdout; else it does not, and looks again after that many ms."""
        return None

    def reader_enter(self) -> bool:
        """The reader thread saw stdout readable (or the exit): may it read now?"""
        return True

    def reader_leave(self) -> None:
        """The reader thread is done reading (after ``reader_enter`` said yes)."""

    def deliver(self, deliver: Deliver, frames: List[Frame]) -> None:
        """Hand the frames one read brought to the sink (``deliver(frames)``)."""
        deliver(frames)

    def caller_reading(self) -> bool:
        """True while a caller reads stdout (its descriptors must stay open)."""
        return False

    def wait_for_callers(self, deadline: float) -> None:
        """At the end of the stream: wait (until ``deadline``, monotonic) for a caller that still reads to leave."""

    def drive(self, write: Callable[[], None], done: Callable[[], bool], deadline: Optional[float]) -> bool:
        """A caller's offer to write its request and read its own answer; False: declined, nothing written."""
        return False

    def ensure_reading(self) -> None:
        """A request waits for an answer that no caller reads itself: make sure the reader thread watches."""

    def begin_close(self) -> None:
        """The transport is closing: callers that read leave."""


class StdoutReader:
    """The child's stdout and the thread that reads it.  See the module docstring.  Thread-safe.

    Args:
        stream: the child's stdout (a raw binary pipe).
        exit_fd: a descriptor readable once the child exited (owned: closed here), or None.
        decoder: the framing decoder.
        label, pid: for log lines and the thread's name.
        on_end: called on the reader thread with the reason, once the stream ended
            (not when the transport is closing: close() reports then).

    Attributes:
        ended: True once the stream ended (seen by the reader thread, or a caller).
        closing: True once the transport began closing (``begin_close``).
    """

    def __init__(
        self,
        stream: IO[bytes],
        exit_fd: Optional[int],
        decoder: Decoder,
        label: str,
        pid: int,
        on_end: Callable[[str], None],
    ) -> None:
        self._stream = stream
        self.fd = stream.fileno()
        self.exit_fd = exit_fd
        self._decoder = decoder
        self._label = label
        self._pid = pid
        self._on_end = on_end
        self.gate = ReadGate()
        self.sink_ref: SinkRef = _no_sink
        self._view = memoryview(bytearray(_READ_CHUNK_BYTES))  # one kept buffer: no page faults per read
        self._undelivered: Deque[Frame] = collections.deque()  # decoded, not delivered yet
        self.bytes_read = 0  # how much stdout has carried so far (for a timeout's hint)
        # _cond guards _end_reason, ended, closing and _quiet_stop (ended and closing are read without it).
        self._cond = threading.Condition()
        self._end_reason: Optional[str] = None  # the stream ended (a caller saw it, or the thread)
        self.ended = False  # True once the stream ended (seen by the reader thread, or a caller)
        self.closing = False  # True once the transport began closing
        self._quiet_stop = False
        # _fd_lock guards the closing of the descriptors below (and the pokes that write to _wake_w).
        self._fd_lock = threading.Lock()
        self._fds_closed = False
        self._wake_r: Optional[int] = None
        self._wake_w: Optional[int] = None
        if _CAN_POLL:
            os.set_blocking(self.fd, False)
            self._wake_r, self._wake_w = os.pipe()
            os.set_blocking(self._wake_r, False)
            os.set_blocking(self._wake_w, False)
        self.thread = threading.Thread(target=self._run, name=f"jsonrpc-stdio-reader[{pid}]", daemon=True)

    # -- state ------------------------------------------------------------------------------------

    @property
    def ended_at_eof(self) -> bool:
        """True once the stream ended at end of file (every writer closed it), not at an exit or an error."""
        return self._end_reason == CLOSED_STDOUT

    @property
    def saw_content_length(self) -> bool:
        """True once a line-framed stream carried a ``Content-Length:`` header line."""
        return isinstance(self._decoder, LineDecoder) and self._decoder.saw_content_length

    @property
    def can_poll(self) -> bool:
        """False where pipes cannot be polled: the reader thread then blocks in read()."""
        return _CAN_POLL

    def sink_has_pending(self) -> bool:
        """True while the sink waits for some answer (``sink.has_pending()``)."""
        sink = self.sink_ref()
        return sink is not None and sink.has_pending()

    def end(self, reason: str) -> None:
        """The stream ended (seen by a caller reading): the reader thread ends with ``reason``."""
        with self._cond:
            if self._end_reason is None:
                self._end_reason = reason
                self.ended = True
        self.poke()

    # -- control ------------------------------------------------------------------------------------

    def begin_close(self) -> None:
        """The transport is closing: read stdout to its end (callers reading directly leave)."""
        with self._cond:
            self.closing = True
        self.gate.begin_close()
        self.poke()

    def stop_when_quiet(self) -> None:
        """close() reclaimed what it could: stop at the first quiet poll slice (a survivor may hold stdout)."""
        with self._cond:
            self._quiet_stop = True
        self.poke()

    def close_unstarted(self) -> None:
        """Close what a reader thread that never started would have closed."""
        if self.thread.ident is None:
            self.close_fds()

    def poke(self) -> None:
        """Wake the reader thread (it looks at its state, and at its gate, again)."""
        with self._fd_lock:
            wake_w = self._wake_w
            if wake_w is not None:
                try:
                    os.write(wake_w, b"x")
                except OSError:  # full: already poked
                    pass

    # -- the reader thread ----------------------------------------------------------------------------

    def _run(self) -> None:
        reason = CLOSED_STDOUT
        try:
            reason = self._loop() if _CAN_POLL else self._loop_blocking()
        except Exception as exc:  # a read error ends the stream like EOF does
            reason = f"could not be read: {exc!r}"
            if not self.closing:
                _log.warning("[%s pid %d] stdout %s", self._label, self._pid, reason)
        finally:
            with self._cond:
                if self._end_reason is None:
                    self._end_reason = reason
                    self.ended = True
                closing = self.closing
            # A caller still reading leaves within a poll slice (it sees the end, or closing).
            self.gate.wait_for_callers(time.monotonic() + EXIT_AFTER_EOF_WAIT_S)
            self.close_fds()
        if not closing:
            self._on_end(reason)

    def _loop(self) -> str:
        assert self._wake_r is not None
        wake_r, stdout_fd, exit_fd = self._wake_r, self.fd, self.exit_fd
        poller = select.poll()
        poller.register(wake_r, select.POLLIN)
        if exit_fd is not None:
            poller.register(exit_fd, select.POLLIN)
        registered = False
        gate = self.gate
        while True:
            with self._cond:
                if self._end_reason is not None:
                    return self._end_reason
                closing, quiet_stop = self.closing, self._quiet_stop
            wait_ms = gate.reader_wait_ms(closing)
            watch = wait_ms is None
            if watch != registered:
                if watch:
                    poller.register(stdout_fd, _POLL_IN)
                else:
                    poller.unregister(stdout_fd)
                registered = watch
            events = poller.poll((POLL_SLICE_MS if quiet_stop else None) if watch else wait_ms)
            if not events:
                if quiet_stop and watch:
                    return CLOSED_STDOUT
                continue
            readable = exited = False
            for fd, _ in events:
                if fd == wake_r:
                    _drain_pipe(wake_r)
                elif fd == stdout_fd:
                    readable = True
                elif fd == exit_fd:
                    exited = True
            if not (readable or exited) or not gate.reader_enter():
                continue  # a caller reads now: it sees the same data (or the exit)
            try:
                if self._end_reason is not None:
                    return self._end_reason
                if readable:
                    if not self.read_available():
                        return CLOSED_STDOUT
                else:
                    return self.drain_after_exit()
            finally:
                gate.reader_leave()

    def _loop_blocking(self) -> str:
        """Where pipes cannot be polled: a blocking read; EOF is the only end seen."""
        os.set_blocking(self.fd, True)
        while self.read_available():
            pass
        return CLOSED_STDOUT

    # -- reading and delivering (the reader thread, or a caller the gate let read) -----------------------

    def read_available(self) -> bool:
        """Read what the pipe holds and deliver it, in order; False at EOF."""
        view = self._view
        readinto = self._stream.readinto  # type: ignore[attr-defined]
        for _ in range(_MAX_READS_PER_WAKE):
            count = readinto(view)
            if count is None:  # nothing (more) yet
                return True
            if not count:
                self._deliver_read(self._decoder.end())
                return False
            self.bytes_read += count
            self._deliver_read(self._decoder.feed(view[:count].tobytes()))
            if count < len(view):
                return True
        return True

    def drain_after_exit(self) -> str:
        """The child exited: deliver what stdout holds (bounded), then say why the stream ended.

        Everything the child wrote is in the pipe by now (a process's files are
        closed before its exit can be seen).  At EOF the stream ends as usual;
        otherwise another process still holds the pipe, and what it writes
        later is not waited for.
        """
        deadline = time.monotonic() + EXIT_AFTER_EOF_WAIT_S
        readinto = self._stream.readinto  # type: ignore[attr-defined]
        view = self._view
        while time.monotonic() < deadline:
            count = readinto(view)
            if count is None:
                break
            if not count:
                self._deliver_read(self._decoder.end())
                return CLOSED_STDOUT
            self._deliver_read(self._decoder.feed(view[:count].tobytes()))
        self._deliver_read(self._decoder.end())
        return HELD_STDOUT

    def _deliver_read(self, frames: List[Frame]) -> None:
        if frames:
            self.gate.deliver(self._deliver, frames)

    def _deliver(self, frames: List[Frame]) -> None:
        """Hand decoded frames to the sink, in order (an interrupted caller leaves the rest queued).

        A run of several messages goes to the sink in one call where it takes
        chunks (``TakesChunks``); what a
        failing sink left in the backlog is then delivered one by one.
        """
        backlog = self._undelivered
        backlog.extend(frames)
        sink = self.sink_ref()
        if sink is not None and len(backlog) > 1:
            take_chunk = getattr(sink, "messages_received", None)
            if take_chunk is not None and set(map(type, backlog)) == _BYTES_ONLY:
                try:
                    take_chunk(backlog)
                except Exception:
                    _log.exception("[%s pid %d] sink.messages_received failed", self._label, self._pid)
        while backlog:
            frame = backlog.popleft()
            if sink is None:
                continue
            if type(frame) is bytes:
                try:
                    sink.message_received(frame)
                except Exception:
                    _log.exception("[%s pid %d] sink.message_received failed", self._label, self._pid)
            elif isinstance(frame, Oversized):
                self._oversized(frame, sink)
            elif isinstance(frame, FramingError):
                _log.warning(
                    "[%s pid %d] skipped bytes that break the framing (%s): %r",
                    self._label,
                    self._pid,
                    frame.reason,
                    frame.excerpt,
                )

    def _oversized(self, note: Oversized, sink: MessageSink) -> None:
        _log.error(
            "[%s pid %d] skipped a message of %d bytes: over the limit of %d bytes (max_line_bytes)",
            self._label,
            self._pid,
            note.size,
            note.limit,
        )
        if not note.response_ids:  # no response, or none known (the framing scanned it)
            return
        try:
            sink.requests_failed(note.response_ids, MessageTooLarge(note.limit, "response"))
        except Exception:
            _log.exception("[%s pid %d] sink.requests_failed failed", self._label, self._pid)

    # -- descriptors -----------------------------------------------------------------------------------

    def release_in_fork(self) -> None:
        """Close this process's copies of the descriptors, taking no lock (see ``Child.release_in_fork``)."""
        self._fds_closed = True
        fds = (self.exit_fd, self._wake_r, self._wake_w)
        self.exit_fd = self._wake_r = self._wake_w = None
        close_quietly(*fds)

    def close_fds(self) -> bool:
        """Close stdout and the descriptors the reader polls, unless a caller still reads.

        Returns True once they are closed.  Idempotent.
        """
        if self.gate.caller_reading():
            return False
        with self._fd_lock:
            if self._fds_closed:
                return True
            self._fds_closed = True
            fds = [self.exit_fd, self._wake_r, self._wake_w]
            self.exit_fd = self._wake_r = self._wake_w = None
        try:
            self._stream.close()
        except OSError:
            pass
        close_quietly(*fds)
        return True


def _drain_pipe(fd: int) -> None:
    try:
        while os.read(fd, 4096):
            pass
    except OSError:
        pass


def _no_sink() -> Optional[MessageSink]:
    return None


__all__ = [
    "CLOSED_STDOUT",
    "EXIT_AFTER_EOF_WAIT_S",
    "HELD_STDOUT",
    "ReadGate",
    "StdoutReader",
]
