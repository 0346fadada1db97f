"""The stdio fast path: a ``call()`` reads its own answer (``StdioTransport(reads="caller")``).

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
  thread delivers a single message, which gives it back at once (a caller
  woken by a chunk of several answers sends at once instead).
- The reader thread steps aside while a caller holds the baton (a poke wakes
  it out of ``poll()``), looks again every ``READER_PARK_S``, and takes up
  watching stdout once nobody reads and a request is pending (the sink's
  ``has_pending``), or the stream was left alone that long, or the transport
  is closing.  So calls back to back never wake it, and a message nobody waits
  for sits in the pipe at most that long.

Measured against the plain design (``benchmarks/README.md``): a sequential
``call()`` takes about a third less CPU.  Nothing else in the package imports
this module but the stdio transport, which chooses it.
"""

from __future__ import annotations

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

_PARK_MS = max(1, int(READER_PARK_S * 1000))
#: A caller that read before polling and found nothing polls first for this many calls.
_READ_FIRST_SKIPS = 32
_READER = "reader"
_CALLER = "caller"
_POLL_IN = select.POLLIN | select.POLLHUP | select.POLLERR if hasattr(select, "poll") else 0


class CallerReads(ReadGate):
    """The read baton and the reader thread's parking.  See the module docstring.

    Thread-safe.  Args:
        reader: the stdout reader this gate is installed on.
    """

    def __init__(self, reader: StdoutReader) -> None:
        self._reader = reader
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
        """Deliver a read's frames, noting how many (a caller woken by a chunk sends at once, see ``drive``)."""
        self._chunk_size = len(frames)
        deliver(frames)

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


__all__ = ["READER_PARK_S", "CallerReads"]
