"""The stdio fast path (``reads="caller"``): a ``call()`` reads its own answer; the writing held for a chunk, and paced.

Theory of operation.  In the plain design (``_reader``, ``reads="reader_thread"``)
the reader thread reads every answer and the client hands it to the caller: two
kernel wake-ups a round trip (the child wakes the reader thread, the reader
thread wakes the caller).  This strategy, a ``ReadGate``, saves the second:

- The read baton (``_owner``): the reader thread, or one caller, reads stdout
  at a time.  A caller blocked in ``call()`` whose request is the only one
  pending takes the baton (``CallerReads.drive``), writes its request and
  reads until its own answer is in, delivering everything it reads exactly as
  the reader thread would.  When the baton is taken the caller sends as usual
  and waits for its answer; it waits for the baton only while the reader
  thread delivers a single message, which gives it back at once.
- The reader thread steps aside while a caller holds the baton (a poke wakes
  it out of ``poll()``), looks again every ``READER_PARK_S``, and takes up
  watching stdout once nobody reads and a request is pending, or the stream was
  left alone that long, or the transport is closing.  So calls back to back
  never wake it, and a message nobody waits for sits in the pipe at most that long.
- A read that brings several answers is delivered with the writing held
  (``StdinWriter.hold``): the callers it wakes
  queue their next requests, written together once the chunk is delivered, so
  many callers make one write and one wake-up of the child.  On a process
  confined to one CPU the deliverer yields the CPU once, before that write, so
  that the callers woken have queued their requests by then.

- A thread that writes twice in a row, nobody else writing in between, may be
  pipelining (``request()`` after ``request()``): only then is the child asked
  how much it has not read yet (``FIONREAD``, ``PipelinedWrites``).  From
  ``CAUGHT_UP_BYTES`` on, a new frame would only wait in the pipe behind
  the others, so it is queued for the writer thread instead, which writes it
  with those that follow in one system call, and the child reads them with one
  wake-up.  A caller that reads its own answer next is never held back so.

Measured against the plain design (``benchmarks/README.md``): the caller's own
read is the one that pays most (about a third less CPU a sequential call);
the hold and the yield pay with many callers on one CPU.  Nothing else in the
package imports this module but the stdio transport, which chooses it.
"""

from __future__ import annotations

import array
import os
import select
import threading
import time
from typing import Callable, List, Optional

from ...deadlines.timeouts import passed
from ...runtime.logs import get_logger
from .._poll import POLL_SLICE_MS, notify_all_waiting, poll_timeout_ms
from ._reader import CLOSED_STDOUT, Deliver, ReadGate, StdoutReader

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ...framing import Frame

_log = get_logger("jsonrpc_threads.transports.stdio")

#: While a caller reads (or just did, and nothing is pending), the reader thread
#: looks again this often; it is also the longest a message that nobody waits
#: for (a notification while the client is idle) may sit in the pipe.
READER_PARK_S = 0.005
#: A child with fewer unread bytes than this in its stdin counts as caught up (see PipelinedWrites).
CAUGHT_UP_BYTES = 4096
#: How long a look at the process's CPU affinity is trusted (it may change while running).
AFFINITY_RECHECK_S = 1.0

_PARK_MS = max(1, int(READER_PARK_S * 1000))
#: A caller that read before polling and found nothing polls first for this many calls.
_READ_FIRST_SKIPS = 32
_READER = "reader"
_CALLER = "caller"
_POLL_IN = select.POLLIN | select.POLLHUP | select.POLLERR if hasattr(select, "poll") else 0
_yield_cpu = getattr(os, "sched_yield", None)
try:  # FIONREAD on the write end of a pipe: the bytes the child has not read yet (Linux, the BSDs, macOS)
    import fcntl
    import termios

    _CAN_COUNT_UNREAD = hasattr(termios, "FIONREAD")
except ImportError:  # pragma: no cover - Windows
    _CAN_COUNT_UNREAD = False
_one_cpu = [False, 0.0]  # confined to one CPU; when to look again (a race only repeats the look)


def _confined_to_one_cpu() -> bool:
    """True when this process may run on one CPU only (looked at again every AFFINITY_RECHECK_S)."""
    now = time.monotonic()
    if now >= _one_cpu[1]:
        get_affinity = getattr(os, "sched_getaffinity", None)
        try:
            _one_cpu[0] = get_affinity is not None and len(get_affinity(0)) == 1
        except OSError:  # affinity unknown: as on many CPUs
            _one_cpu[0] = False
        _one_cpu[1] = now + AFFINITY_RECHECK_S
    return bool(_one_cpu[0])


class PipelinedWrites:
    """The writer's pace (``StdinWriter.pace``): see the module docstring.

    Called with no lock held; the answer is advice only, so a race between
    two threads costs nothing but a write that could have been batched.
    """

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._unread = threading.local()  # each thread's buffer for FIONREAD's answer
        self._last_writer: Optional[int] = None

    def __call__(self) -> bool:
        """True: write now; False: queue (the child is behind, and this thread pipelines)."""
        me = threading.get_ident()
        if self._last_writer != me:
            self._last_writer = me
            return True
        if not _CAN_COUNT_UNREAD:
            return True
        unread = getattr(self._unread, "count", None)
        if unread is None:
            unread = self._unread.count = array.array("i", [0])
        try:
            fcntl.ioctl(self._fd, termios.FIONREAD, unread, True)
        except OSError:
            return True
        return bool(unread[0] < CAUGHT_UP_BYTES)


class CallerReads(ReadGate):
    """The read baton, the reader thread's parking, and the hold of the writing.  See the module docstring.

    Thread-safe.  Args:
        reader: the stdout reader this gate is installed on.
        hold_writes, release_writes: the writer's ``hold`` and ``release_hold``.
    """

    def __init__(
        self, reader: StdoutReader, hold_writes: Callable[[], bool], release_writes: Callable[[], None]
    ) -> None:
        self._reader = reader
        self._hold_writes = hold_writes
        self._release_writes = release_writes
        self._has_pending = reader.sink_has_pending
        # _cond guards _owner, _watching and _park_until (drive() looks at _owner without
        # it only to decline, which is never wrong).
        self._lock = threading.Lock()  # taken directly on the hot paths (a Condition's `with` is Python code)
        self._cond = threading.Condition(self._lock)
        self._owner: Optional[str] = None  # who reads now: the reader thread, a caller, or nobody
        self._watching = False  # the reader thread polls stdout (a caller must poke it)
        self._park_until = 0.0
        self._chunk_size = 0  # frames in the chunk being delivered now (a hint for callers)
        self._read_first_skips = 0  # callers poll before reading for this many more calls (baton holder only)
        self._poller: Optional[select.poll] = None
        if reader.can_poll:
            self._poller = select.poll()
            self._poller.register(reader.fd, _POLL_IN)
            if reader.exit_fd is not None:
                self._poller.register(reader.exit_fd, select.POLLIN)

    # -- the reader thread's side --------------------------------------------------------------------

    def reader_wait_ms(self, closing: bool) -> Optional[int]:
        with self._lock:
            watch = self._owner is None and (closing or time.monotonic() >= self._park_until or self._has_pending())
            self._watching = watch
        return None if watch else _PARK_MS

    def reader_enter(self) -> bool:
        with self._lock:
            if self._owner is not None:
                # A caller reads now: step aside (the loop parks) instead of waiting here for
                # the baton, which every call's release would wake without ever handing it over.
                return False
            self._owner = _READER
            return True

    def reader_leave(self) -> None:
        with self._lock:
            self._owner = None
            self._cond.notify_all()

    def caller_reading(self) -> bool:
        return self._owner == _CALLER

    def wait_for_callers(self, deadline: float) -> None:
        with self._cond:
            while self._owner == _CALLER and time.monotonic() < deadline:
                self._cond.wait(POLL_SLICE_MS / 1000.0)

    def begin_close(self) -> None:
        with self._cond:
            self._cond.notify_all()

    def ensure_reading(self) -> None:
        if not self._watching and self._owner is None:
            self._reader.poke()

    # -- delivering a chunk -----------------------------------------------------------------------------

    def deliver(self, deliver: Deliver, frames: List[Frame]) -> None:
        """A chunk of several messages is delivered with the writing held (see the module docstring)."""
        self._chunk_size = len(frames)
        if len(frames) <= 1 or not self._hold_writes():
            deliver(frames)
            return
        one_cpu = _yield_cpu is not None and _confined_to_one_cpu()
        try:
            deliver(frames)
        finally:
            if one_cpu:
                _yield_cpu()  # type: ignore[misc]  # the callers woken run now, and queue their requests
            self._release_writes()

    # -- a caller reading its own answer --------------------------------------------------------------

    def drive(self, write: Callable[[], None], done: Callable[[], bool], deadline: Optional[float]) -> bool:
        """Take the baton, ``write()`` the request, and read until ``done()`` or ``deadline``.

        Returns False (nothing written) when another caller holds the baton,
        the stream ended or the transport is closing, or pipes cannot be
        polled here; True once written, whether or not ``done()`` became true.

        Raises:
            whatever ``write()`` raises (the baton is given back first).
        """
        poller, reader = self._poller, self._reader
        if poller is None:
            return False
        owner = self._owner
        if owner == _CALLER or (owner == _READER and self._chunk_size > 1):
            return False  # declined at a look, without the lock (sixteen callers on one CPU pass here)
        with self._lock:
            while (
                self._owner == _READER
                and self._chunk_size <= 1
                and not reader.ended
                and not reader.closing
                and not passed(deadline)
            ):
                self._cond.wait(POLL_SLICE_MS / 1000.0)
            if self._owner is not None or reader.ended or reader.closing:
                return False
            self._owner = _CALLER
            poke = self._watching
        try:
            if poke:
                reader.poke()  # it steps aside at once instead of waking on the answer
            write()
        except BaseException:
            self._release(None)
            raise
        ended: Optional[str] = None
        try:
            ended = self._read_until(poller, done, deadline)
        except Exception as exc:  # a read error ends the stream, as in the reader thread
            ended = f"could not be read: {exc!r}"
            if not reader.closing:
                _log.warning("stdout %s", ended)
        finally:
            self._release(ended)
        return True

    def _read_until(self, poller: select.poll, done: Callable[[], bool], deadline: Optional[float]) -> Optional[str]:
        """Read until ``done()``, the deadline, closing or the end; the reason the stream ended, if it did."""
        reader = self._reader
        stdout_fd, exit_fd = reader.fd, reader.exit_fd
        if self._read_first_skips:
            self._read_first_skips -= 1
        else:
            # Read before polling: where the child shares this CPU it ran (and answered) as soon
            # as it was written to, and one system call is saved; where not, poll first a while.
            read_before = reader.bytes_read
            if not reader.read_available():
                return CLOSED_STDOUT
            if reader.bytes_read == read_before:
                self._read_first_skips = _READ_FIRST_SKIPS
        while not done():
            if reader.closing:
                return None  # the reader thread reads the stream to its end
            events = poller.poll(poll_timeout_ms(deadline))
            if not events:
                if deadline is not None and time.monotonic() >= deadline:
                    return None
                continue
            readable = exited = False
            for fd, _ in events:
                if fd == stdout_fd:
                    readable = True
                elif fd == exit_fd:
                    exited = True
            if readable:
                if not reader.read_available():
                    return CLOSED_STDOUT
            elif exited:
                return reader.drain_after_exit()
        return None

    def _release(self, ended: Optional[str]) -> None:
        reader = self._reader
        with self._lock:
            self._owner = None
            self._park_until = time.monotonic() + READER_PARK_S
            notify_all_waiting(self._cond)  # the fast path: usually nobody waits
            wake = ended is not None or reader.closing or self._has_pending()
        if ended is not None:
            reader.end(ended)  # the reader thread reports it (exit code, stderr)
        elif wake:
            reader.poke()


__all__ = ["AFFINITY_RECHECK_S", "CAUGHT_UP_BYTES", "READER_PARK_S", "CallerReads", "PipelinedWrites"]
