"""Reading the child's stdout: decoded into messages, delivered in order, by one reader at a time.

Theory of operation.  stdout is non-blocking and read in chunks, which the
framing decoder (:mod:`jsonrpc_threads.framing`) turns into messages; each goes
to the sink in the order it arrived.  Two kinds of thread may read, one at a
time (the read baton, ``_owner``):

- the reader thread, which polls stdout whenever no caller reads it, so the
  peer's notifications and requests are read while the client is idle, and
  the end of the stream is seen at once;
- a caller blocked in ``call()`` (:meth:`StdoutReader.drive`), when its
  request is the only one pending: it writes its request, then reads until
  its own answer is in, delivering everything it reads exactly as the reader
  thread would.  That saves the hand-off from the reader thread to the
  caller (a kernel wake-up) on every round trip.

A caller takes the baton whenever it is free, whatever the reader thread is
doing, so a call's path never depends on how long ago the previous one ended;
when it is taken, the caller sends its request as usual and sleeps until its
answer is delivered (it waits for the baton only while the reader thread
delivers a single message, which gives it back at once);
when the reader thread was polling stdout, the caller pokes it (a self-pipe)
so it steps aside at once instead of waking on the answer.  While it stands
aside, the reader thread looks again every :data:`READER_PARK_S`, and it takes
up polling stdout again once no caller reads and either a request is pending
(``sink.has_pending()``), or the stream was left alone for ``READER_PARK_S``,
or the transport is closing.  So a back-to-back sequence of calls never wakes
the reader thread, and a message nobody waits for sits in the pipe at most
that long.

Delivering a chunk.  Whoever holds the baton holds the writing too while it
delivers the messages one read brought, when there are several
(:meth:`StdinWriter.hold <._writer.StdinWriter.hold>`): the callers it wakes
run one after another (each on its wake pipe, see
:mod:`jsonrpc_threads._wakeups`) and their next requests queue up, to be
written together when the chunk is delivered.  So many callers make one
write, one wake-up of the child and, its answers coming back together, one
read.  On a process confined to one CPU the deliverer does not yield the CPU
after each wake-up but once, before that write
(:func:`~jsonrpc_threads._wakeups.defer_yields`), so the callers woken have
queued their requests by then.  The messages of a chunk go to the sink in one
call where it takes chunks (the client does: it settles their answers under one
lock round trip).

Exit.  The child's exit is polled beside stdout (:mod:`._exit_watch`): once it
exited, what stdout already holds is read (bounded by
:data:`EXIT_AFTER_EOF_WAIT_S`) and the stream ends, even when a process the
child started still holds stdout open.  A caller that sees the end leaves the
report (exit code, stderr) to the reader thread.

No user code runs here: the sink only settles futures and queues work.
"""

from __future__ import annotations

import collections
import os
import select
import threading
import time
from typing import IO, Callable, Deque, List, Optional, Union

from ..._deadlines import passed
from ..._logs import get_logger
from ..._wakeups import defer_yields, yield_deferred
from ...errors import MessageTooLarge
from ...framing import ContentLengthDecoder, FramingError, LineDecoder, Oversized
from .._poll import POLL_SLICE_MS, close_quietly, notify_all_waiting, poll_timeout_ms
from ..base import MessageSink

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ...framing._events import Frame

_log = get_logger("jsonrpc_threads.transports.stdio")

#: End of stdout: how long what the pipe still holds may be read after the child exited.
EXIT_AFTER_EOF_WAIT_S = 1.0
#: While a caller reads (or just did, and nothing is pending), the reader thread
#: looks again this often; it is also the longest a message that nobody waits
#: for (a notification while the client is idle) may sit in the pipe.
READER_PARK_S = 0.005

_PARK_MS = max(1, int(READER_PARK_S * 1000))
_READ_CHUNK_BYTES = 256 * 1024
#: Reads in a row while the buffer comes back full, before polling again.
_MAX_READS_PER_WAKE = 8
#: A caller that read before polling and found nothing polls first for this many calls.
_READ_FIRST_SKIPS = 32
_CAN_POLL = hasattr(select, "poll")
#: The types of a backlog of messages only (no framing note among them).
_BYTES_ONLY = {bytes}
_READER = "reader"
_CALLER = "caller"
_POLL_IN = (select.POLLIN | select.POLLHUP | select.POLLERR) if _CAN_POLL else 0

#: End-of-stream reasons.
CLOSED_STDOUT = "closed its stdout"
HELD_STDOUT = "exited; a process it started still holds its stdout"

Decoder = Union[LineDecoder, ContentLengthDecoder]
SinkRef = Callable[[], Optional[MessageSink]]


class StdoutReader:
    """The child's stdout and who reads it.  See the module docstring.  Thread-safe.

    Args:
        stream: the child's stdout (a raw binary pipe).
        exit_fd: a descriptor readable once the child exited (owned: closed here), or None.
        decoder: the framing decoder.
        label, pid: for log lines and the thread's name.
        on_end: called on the reader thread with the reason, once the stream ended
            (not when the transport is closing: close() reports then).
        hold_writes, release_writes: the writer's ``hold`` and ``release_hold``,
            taken around the delivery of a chunk of several messages (see the module docstring).
    """

    def __init__(
        self,
        stream: IO[bytes],
        exit_fd: Optional[int],
        decoder: Decoder,
        label: str,
        pid: int,
        on_end: Callable[[str], None],
        hold_writes: Callable[[], bool],
        release_writes: Callable[[], None],
    ) -> None:
        self._stream = stream
        self._fd = stream.fileno()
        self._exit_fd = exit_fd
        self._decoder = decoder
        self._label = label
        self._pid = pid
        self._on_end = on_end
        self._hold_writes = hold_writes
        self._release_writes = release_writes
        self.sink_ref: SinkRef = _no_sink
        self._view = memoryview(bytearray(_READ_CHUNK_BYTES))
        self._undelivered: Deque[Frame] = collections.deque()  # decoded, not delivered yet
        self.bytes_read = 0  # how much stdout has carried so far (for a timeout's hint)
        self._chunk_size = 0  # frames in the chunk the baton holder delivers now (a hint for callers)
        self._read_first_skips = 0  # callers poll before reading for this many more calls (baton holder only)
        # _cond guards _owner, _watching, _park_until, _end_reason, _closing, _quiet_stop
        # (drive() looks at _owner without it only to decline, which is never wrong).
        self._lock = threading.Lock()  # taken directly on the hot paths (a Condition's `with` is Python code)
        self._cond = threading.Condition(self._lock)
        self._owner: Optional[str] = None
        self._watching = False  # the reader thread polls stdout (a caller must poke it)
        self._park_until = 0.0
        self._end_reason: Optional[str] = None  # the stream ended (a caller saw it, or the thread)
        self._closing = False
        self._quiet_stop = False
        # _fd_lock guards the closing of the descriptors below (and the pokes that write to _wake_w).
        self._fd_lock = threading.Lock()
        self._fds_closed = False
        self._wake_r: Optional[int] = None
        self._wake_w: Optional[int] = None
        self._direct_poller: Optional[select.poll] = None
        if _CAN_POLL:
            os.set_blocking(self._fd, False)
            self._wake_r, self._wake_w = os.pipe()
            os.set_blocking(self._wake_r, False)
            os.set_blocking(self._wake_w, False)
            self._direct_poller = select.poll()
            self._direct_poller.register(self._fd, _POLL_IN)
            if exit_fd is not None:
                self._direct_poller.register(exit_fd, select.POLLIN)
        #: False where pipes cannot be polled: :meth:`drive` always declines there.
        self.can_drive = self._direct_poller is not None
        self.thread = threading.Thread(target=self._run, name=f"jsonrpc-stdio-reader[{pid}]", daemon=True)

    @property
    def ended_at_eof(self) -> bool:
        """True once the stream ended at end of file (every writer closed it), not at an exit or an error."""
        return self._end_reason == CLOSED_STDOUT

    @property
    def saw_content_length(self) -> bool:
        """True once a line-framed stream carried a ``Content-Length:`` header line."""
        return isinstance(self._decoder, LineDecoder) and self._decoder.saw_content_length

    # -- control ------------------------------------------------------------------

    def ensure_reading(self) -> None:
        """A request waits for an answer that nobody reads directly: make the reader thread poll stdout."""
        if not self._watching and self._owner is None:
            self._poke()

    def begin_close(self) -> None:
        """The transport is closing: read stdout to its end (callers reading directly leave)."""
        with self._cond:
            self._closing = True
            self._cond.notify_all()
        self._poke()

    def stop_when_quiet(self) -> None:
        """close() reclaimed what it could: stop at the first quiet poll slice (a survivor may hold stdout)."""
        with self._cond:
            self._quiet_stop = True
        self._poke()

    def close_unstarted(self) -> None:
        """Close what a reader thread that never started would have closed."""
        if self.thread.ident is None:
            self.close_fds()

    # -- a caller reading its own answer -------------------------------------------

    def drive(self, write: Callable[[], None], done: Callable[[], bool], deadline: Optional[float]) -> bool:
        """Take the baton, ``write()`` the request, and read until ``done()`` or ``deadline``.

        Returns False (nothing written) when another caller holds the baton,
        the stream ended or the transport is closing, or pipes cannot be
        polled here; True once written, whether or not ``done()`` became true.

        Raises:
            whatever ``write()`` raises (the baton is given back first).
        """
        poller = self._direct_poller
        if poller is None:
            return False
        owner = self._owner
        if owner == _CALLER or (owner == _READER and self._chunk_size > 1):
            # Declined at a look, without the lock: the answer under the lock would be the
            # same, and as soon out of date (sixteen callers on one CPU pass here each call).
            return False
        with self._lock:
            # The reader thread delivering one answer (likely this caller's last one: calls in
            # a row) gives the baton back at once: wait for it.  Delivering several, it woke
            # other callers too: send the request into the writer's hold instead (written with
            # theirs) and sleep until the answer is delivered.
            while (
                self._owner == _READER
                and self._chunk_size <= 1
                and self._end_reason is None
                and not self._closing
                and not passed(deadline)  # past it: declined, the request is sent and times out as usual
            ):
                self._cond.wait(POLL_SLICE_MS / 1000.0)
            if self._owner is not None or self._end_reason is not None or self._closing:
                return False
            self._owner = _CALLER
            poke = self._watching
        try:
            if poke:
                self._poke()
            write()
        except BaseException:
            self._release(None)
            raise
        ended: Optional[str] = None
        try:
            stdout_fd = self._fd
            exit_fd = self._exit_fd
            poll = poller.poll
            if self._read_first_skips:
                self._read_first_skips -= 1
            else:
                # Read before polling: where the child shares this CPU it ran (and
                # answered) as soon as it was written to, and one system call is saved.
                # Where the answer is not in yet, stop trying for a while.
                read_before = self.bytes_read
                if not self._read_available():
                    ended = CLOSED_STDOUT
                elif self.bytes_read == read_before:
                    self._read_first_skips = _READ_FIRST_SKIPS
            while ended is None and not done():
                if self._closing:
                    break  # the reader thread reads the stream to its end
                events = poll(poll_timeout_ms(deadline))
                if not events:
                    if deadline is not None and time.monotonic() >= deadline:
                        break
                    continue
                readable = exited = False
                for fd, _ in events:
                    if fd == stdout_fd:
                        readable = True
                    elif fd == exit_fd:
                        exited = True
                if readable:
                    if not self._read_available():
                        ended = CLOSED_STDOUT
                        break
                elif exited:
                    ended = self._drain_after_exit()
                    break
        except Exception as exc:  # a read error ends the stream, as in the reader thread
            ended = f"could not be read: {exc!r}"
            if not self._closing:
                _log.warning("[%s pid %d] stdout %s", self._label, self._pid, ended)
        finally:
            self._release(ended)
        return True

    def _release(self, ended: Optional[str]) -> None:
        with self._lock:
            self._owner = None
            if ended is not None and self._end_reason is None:
                self._end_reason = ended
            self._park_until = time.monotonic() + READER_PARK_S
            notify_all_waiting(self._cond)  # the fast path: usually nobody waits
            sink = self.sink_ref()
            wake = ended is not None or self._closing or (sink is not None and sink.has_pending())
        if wake:
            self._poke()

    # -- the reader thread --------------------------------------------------------

    def _run(self) -> None:
        reason = CLOSED_STDOUT
        try:
            reason = self._loop() if _CAN_POLL else self._loop_blocking()
        except Exception as exc:  # a read error ends the stream like EOF does
            reason = f"could not be read: {exc!r}"
            if not self._closing:
                _log.warning("[%s pid %d] stdout %s", self._label, self._pid, reason)
        finally:
            with self._cond:
                if self._end_reason is None:
                    self._end_reason = reason
                # A caller still reading leaves within a poll slice (it sees the end or closing).
                deadline = time.monotonic() + EXIT_AFTER_EOF_WAIT_S
                while self._owner == _CALLER and time.monotonic() < deadline:
                    self._cond.wait(POLL_SLICE_MS / 1000.0)
                closing = self._closing
            self.close_fds()
        if not closing:
            self._on_end(reason)

    def _loop(self) -> str:
        assert self._wake_r is not None
        wake_r = self._wake_r
        stdout_fd = self._fd
        exit_fd = self._exit_fd
        poller = select.poll()
        poller.register(wake_r, select.POLLIN)
        if exit_fd is not None:
            poller.register(exit_fd, select.POLLIN)
        registered = False
        cond = self._cond
        while True:
            with cond:
                if self._end_reason is not None:
                    return self._end_reason
                watch = self._owner is None and (
                    self._closing or time.monotonic() >= self._park_until or self._needed()
                )
                self._watching = watch
                quiet_stop = self._quiet_stop
            if watch != registered:
                if watch:
                    poller.register(stdout_fd, _POLL_IN)
                else:
                    poller.unregister(stdout_fd)
                registered = watch
            timeout = (POLL_SLICE_MS if quiet_stop else None) if watch else _PARK_MS
            events = poller.poll(timeout)
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
            if not (readable or exited):
                continue
            with cond:
                if self._end_reason is not None:
                    return self._end_reason
                if self._owner is not None:
                    # A caller reads now: it sees the same data (or the exit), and pokes
                    # this thread when it leaves with a request pending.  Step aside (the
                    # loop's top parks) instead of waiting here for the baton: a waiter
                    # here is woken by every call's release, and back-to-back calls
                    # would keep it waking without ever getting the baton.
                    continue
                self._owner = _READER
            try:
                if readable:
                    if not self._read_available():
                        return CLOSED_STDOUT
                else:
                    return self._drain_after_exit()
            finally:
                with cond:
                    self._owner = None
                    cond.notify_all()

    def _loop_blocking(self) -> str:
        """Where pipes cannot be polled: a blocking read; EOF is the only end seen."""
        os.set_blocking(self._fd, True)
        while self._read_available():
            pass
        return CLOSED_STDOUT

    def _needed(self) -> bool:
        sink = self.sink_ref()
        return sink is not None and sink.has_pending()

    # -- reading and delivering (by whoever holds the baton) -------------------------

    def _read_available(self) -> bool:
        """Read what the pipe holds and deliver it; False at EOF.

        A chunk of several messages is delivered with the writing held (see
        the module docstring); a single one (a call's own answer) without.
        """
        view = self._view
        readinto = self._stream.readinto  # type: ignore[attr-defined]
        held = deferred = False
        try:
            for _ in range(_MAX_READS_PER_WAKE):
                count = readinto(view)
                if count is None:  # nothing (more) yet
                    return True
                if not count:
                    self._deliver(self._decoder.end())
                    return False
                # Into a buffer kept for the purpose: a fresh 256 KiB object per read
                # would be mapped and unmapped by malloc every time (page faults).
                self.bytes_read += count
                frames = self._decoder.feed(view[:count].tobytes())
                if not held and len(frames) > 1:
                    held = self._hold_writes()
                    if held:  # on one CPU the callers woken run in turn once the chunk is delivered
                        deferred = defer_yields()
                self._deliver(frames)
                if count < len(view):
                    return True
            return True
        finally:
            if held:
                yield_deferred(deferred)  # they queue their next requests for the one write below
                self._release_writes()

    def _drain_after_exit(self) -> str:
        """The child exited: deliver what stdout holds (bounded), then end the stream.

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
                self._deliver(self._decoder.end())
                return CLOSED_STDOUT
            self._deliver(self._decoder.feed(view[:count].tobytes()))
        self._deliver(self._decoder.end())
        return HELD_STDOUT

    def _deliver(self, frames: List[Frame]) -> None:
        """Hand decoded frames to the sink, in order (an interrupted caller leaves the rest queued).

        A chunk of several messages goes to the sink in one call where it
        takes chunks (:class:`~jsonrpc_threads.transports.base.TakesChunks`);
        what a failing sink left in the backlog is then delivered one by one.
        """
        self._chunk_size = len(frames)
        backlog = self._undelivered
        backlog.extend(frames)
        sink = self.sink_ref()
        if sink is not None and len(backlog) > 1:
            # Several messages and no note among them (the usual chunk): to the sink at
            # once when it takes chunks (base.TakesChunks), which pops them as it goes.
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

    # -- descriptors -----------------------------------------------------------------

    def _poke(self) -> None:
        with self._fd_lock:
            wake_w = self._wake_w
            if wake_w is not None:
                try:
                    os.write(wake_w, b"x")
                except OSError:  # full: already poked
                    pass

    def release_in_fork(self) -> None:
        """Close this process's copies of the descriptors, taking no lock (see ``Child.release_in_fork``)."""
        self._fds_closed = True
        fds = (self._exit_fd, self._wake_r, self._wake_w)
        self._exit_fd = self._wake_r = self._wake_w = None
        close_quietly(*fds)

    def close_fds(self) -> bool:
        """Close stdout and the descriptors the readers poll, unless a caller still reads.

        Returns True once they are closed.  Idempotent.
        """
        with self._cond:
            if self._owner == _CALLER:
                return False
        with self._fd_lock:
            if self._fds_closed:
                return True
            self._fds_closed = True
            fds = [self._exit_fd, self._wake_r, self._wake_w]
            self._exit_fd = self._wake_r = self._wake_w = None
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


__all__ = ["CLOSED_STDOUT", "EXIT_AFTER_EOF_WAIT_S", "HELD_STDOUT", "READER_PARK_S", "StdoutReader"]
