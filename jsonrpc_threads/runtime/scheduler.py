"""One timer thread over a heap of deadlines, shared by the whole process.

Theory of operation: a ``Scheduler`` owns a heap of ``(deadline,
handle)`` entries and one daemon thread that sleeps on a condition until the
earliest deadline, pops every due entry and runs its callback with the lock
released.  Cancelling a handle only marks it; dead entries are skipped when
they surface and the heap is rebuilt when more than half of it is dead, so a
cancel is O(1) and memory stays proportional to the live timers.

However many deadlines are pending, they cost one thread: the process-wide
instance (``default_scheduler``) starts its thread lazily on the first
timer, is named ``jsonrpc-timer`` and is made again in a forked child.  A
client keeps one timer here, at the earliest deadline its protocol core knows
of, however many requests it has pending.

Callbacks run on the timer thread, one after the other: they must be short and
must not block; the library schedules only its own code here, never a user's.
Whatever a callback raises (``SystemExit`` included) is logged and the thread
goes on, and no deadline (``inf`` included) makes it wait longer than
``MAX_WAIT_SLICE_S`` at a time.

Thread-safety: every method may be called from any thread.
"""

from __future__ import annotations

import heapq
import threading
import time
from typing import Any, Callable, List, Optional, Tuple

from ..deadlines.timeouts import MAX_WAIT_SLICE_S, is_nan
from . import fork as _fork
from .logs import get_logger

logger = get_logger(__name__)

#: Rebuild the heap when more than this many entries are cancelled and they are over half of it.
_COMPACT_MIN_CANCELLED = 1024


class TimerHandle:
    """A scheduled callback.  ``cancel`` withdraws it if it has not run yet."""

    __slots__ = ("_args", "_callback", "_scheduler", "deadline")

    def __init__(
        self, scheduler: Scheduler, deadline: float, callback: Callable[..., Any], args: Tuple[Any, ...]
    ) -> None:
        self._scheduler: Optional[Scheduler] = scheduler
        self.deadline = deadline
        self._callback: Optional[Callable[..., Any]] = callback
        self._args = args

    def __lt__(self, other: TimerHandle) -> bool:
        return id(self) < id(other)  # equal deadlines: any stable order will do

    def cancel(self) -> bool:
        """Withdraw the callback.  Returns False when it already ran or was cancelled."""
        scheduler = self._scheduler
        return False if scheduler is None else scheduler._cancel(self)

    @property
    def active(self) -> bool:
        """True until the handle runs or is cancelled."""
        return self._scheduler is not None


class Scheduler:
    """A heap of deadlines served by one lazily started daemon thread.  See the module docstring."""

    def __init__(self, name: str = "jsonrpc-timer") -> None:
        self._name = name
        # _lock (also _cond's) guards _heap, _cancelled, _thread and _stopped.
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._heap: List[Tuple[float, TimerHandle]] = []
        self._cancelled = 0
        self._thread: Optional[threading.Thread] = None
        self._stopped = False

    def call_later(self, delay: float, callback: Callable[..., Any], *args: Any) -> TimerHandle:
        """Run ``callback(*args)`` on the timer thread after ``delay`` seconds (``inf``: never).

        Raises:
            RuntimeError: when the scheduler was stopped.
            ValueError: for a NaN or negative ``delay``.
        """
        if is_nan(delay) or delay < 0:
            raise ValueError(f"delay must be >= 0, not {delay!r}")
        return self.call_at(time.monotonic() + delay, callback, *args)

    def call_at(self, deadline: float, callback: Callable[..., Any], *args: Any) -> TimerHandle:
        """Run ``callback(*args)`` at ``deadline`` on the ``time.monotonic`` clock.

        Raises:
            RuntimeError: when the scheduler was stopped.
            ValueError: for a NaN ``deadline``.
        """
        if is_nan(deadline):
            raise ValueError("deadline must be a number, not NaN")
        handle = TimerHandle(self, deadline, callback, args)
        with self._lock:
            if self._stopped:
                raise RuntimeError("scheduler is stopped")
            heapq.heappush(self._heap, (deadline, handle))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                self._thread.start()
            elif self._heap[0][1] is handle:
                self._cond.notify()  # the new deadline is the earliest: re-arm
        return handle

    def pending(self) -> int:
        """How many timers are scheduled and not cancelled."""
        with self._lock:
            return len(self._heap) - self._cancelled

    def stop(self, timeout: Optional[float] = None) -> None:
        """Drop every timer and end the thread (bounded by ``timeout``).  Idempotent."""
        with self._lock:
            self._stopped = True
            for _, handle in self._heap:
                handle._scheduler = None
            self._heap.clear()
            self._cancelled = 0
            thread = self._thread
            self._cond.notify()
        if thread is not None:
            _join(thread, timeout)

    @property
    def thread(self) -> Optional[threading.Thread]:
        """The timer thread, once started."""
        return self._thread

    def _cancel(self, handle: TimerHandle) -> bool:
        with self._lock:
            if handle._scheduler is None:
                return False
            handle._scheduler = handle._callback = None
            handle._args = ()
            self._cancelled += 1
            if self._cancelled > _COMPACT_MIN_CANCELLED and self._cancelled * 2 > len(self._heap):
                self._heap = [entry for entry in self._heap if entry[1]._scheduler is not None]
                heapq.heapify(self._heap)
                self._cancelled = 0
        return True

    def _run(self) -> None:
        cond = self._cond
        while True:
            due: List[TimerHandle] = []
            with cond:
                while not due:
                    if self._stopped:
                        return
                    heap = self._heap
                    now = time.monotonic()
                    while heap and heap[0][0] <= now:
                        handle = heapq.heappop(heap)[1]
                        if handle._scheduler is None:
                            self._cancelled -= 1
                        else:
                            handle._scheduler = None
                            due.append(handle)
                    if not due:
                        cond.wait(min(heap[0][0] - now, MAX_WAIT_SLICE_S) if heap else MAX_WAIT_SLICE_S)
            for handle in due:
                callback, args = handle._callback, handle._args
                handle._callback, handle._args = None, ()
                if callback is None:
                    continue
                try:
                    callback(*args)
                except BaseException:  # nothing a callback does may end the timer thread
                    logger.exception("timer callback %r failed", callback)
                del callback, args


_default: Optional[Scheduler] = None
_default_lock = threading.Lock()


def default_scheduler() -> Scheduler:
    """The process-wide scheduler (one ``jsonrpc-timer`` thread for every client)."""
    global _default
    scheduler = _default
    if scheduler is None:
        with _default_lock:
            scheduler = _default
            if scheduler is None:
                scheduler = _default = Scheduler()
    return scheduler


def _reset_after_fork() -> None:
    global _default, _default_lock
    _default = None
    _default_lock = threading.Lock()


_fork.at_fork_in_child(_reset_after_fork)


def _join(thread: threading.Thread, timeout: Optional[float]) -> None:
    if thread is not threading.current_thread():
        thread.join(timeout)


__all__ = ["Scheduler", "TimerHandle", "default_scheduler"]
