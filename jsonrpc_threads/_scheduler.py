"""One timer thread over a heap of deadlines.

Theory of operation: a :class:`Scheduler` owns a heap of ``(deadline, seq,
handle)`` entries and one daemon thread that sleeps on a condition until the
earliest deadline, pops every due entry and runs its callback with the lock
released.  Cancelling a handle only marks it; dead entries are skipped when they
surface and the heap is rebuilt when more than half of it is dead, so a
cancel is O(1) and memory stays proportional to the live timers.

However many deadlines are pending, they cost one thread.  The process-wide
instance (:func:`default_scheduler`) starts its thread lazily on the first
timer, is named ``jsonrpc-timer`` and is re-created in a forked child.

Callbacks run on the timer thread, one after the other: they must be short and
must not block (hand slow work to another thread); the library schedules only
its own code here, never a user's.  Whatever a callback raises (``SystemExit``
and ``KeyboardInterrupt`` included) is logged and the thread goes on, and no
deadline (``inf`` included) makes the thread wait longer than
:data:`~jsonrpc_threads._deadlines.MAX_WAIT_SLICE_S` at a time.

Thread-safety: every method may be called from any thread.
"""

from __future__ import annotations

import heapq
import os
import threading
import time
from typing import Any, Callable, List, Optional, Tuple

from ._deadlines import MAX_WAIT_SLICE_S, is_nan
from ._logs import get_logger
from ._settling import deferred_callbacks

logger = get_logger(__name__)

#: Rebuild the heap when more than this many entries are cancelled and they
#: are more than half of it.
_COMPACT_MIN_CANCELLED = 1024


class _Arguments(tuple):  # type: ignore[type-arg]
    """The arguments of a callback given more than one (one is kept as it is: no tuple per timer)."""

    __slots__ = ()


_NO_ARGUMENT = _Arguments()


class TimerHandle:
    """A scheduled callback.  :meth:`cancel` withdraws it if it has not run yet.

    Kept small (100,000 may be pending): the one argument most callbacks take is
    kept as it is, and the heap holds ``(deadline, handle)`` pairs whose ties are
    broken by the handles themselves.
    """

    __slots__ = ("_argument", "_callback", "_scheduler", "deadline")

    def __init__(self, scheduler: Scheduler, deadline: float, callback: Callable[..., Any], argument: Any) -> None:
        self._scheduler: Optional[Scheduler] = scheduler
        self.deadline = deadline
        self._callback: Optional[Callable[..., Any]] = callback
        self._argument = argument  # one argument, or _Arguments for none or several

    def __lt__(self, other: TimerHandle) -> bool:
        return id(self) < id(other)  # equal deadlines: any stable order will do

    def cancel(self) -> bool:
        """Withdraw the callback.  Returns False when it already ran or was cancelled."""
        scheduler = self._scheduler
        if scheduler is None:
            return False
        return scheduler._cancel(self)

    @property
    def active(self) -> bool:
        """True until the handle runs or is cancelled."""
        return self._scheduler is not None


_Entry = Tuple[float, TimerHandle]


class Scheduler:
    """A heap of deadlines served by one lazily started daemon thread."""

    def __init__(self, name: str = "jsonrpc-timer") -> None:
        self._name = name
        # _lock (also the lock of _cond) guards _heap, _cancelled, _thread and
        # _stopped.  The hot paths take _lock directly: a Condition's own
        # __enter__ is Python code, the lock's is not.
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._heap: List[_Entry] = []
        self._cancelled = 0
        self._thread: Optional[threading.Thread] = None
        self._stopped = False

    def call_later(self, delay: float, callback: Callable[..., Any], *args: Any) -> TimerHandle:
        """Run ``callback(*args)`` on the timer thread after ``delay`` seconds.

        ``delay`` may be ``inf`` (the callback never runs unless the handle is
        cancelled first, which costs nothing).

        Raises:
            RuntimeError: when the scheduler was stopped.
            ValueError: for a NaN or negative ``delay``.
        """
        if is_nan(delay) or delay < 0:
            raise ValueError(f"delay must be >= 0, not {delay!r}")
        return self._schedule(time.monotonic() + delay, callback, args)

    def call_at(self, deadline: float, callback: Callable[..., Any], *args: Any) -> TimerHandle:
        """Run ``callback(*args)`` at ``deadline`` on the :func:`time.monotonic` clock.

        Raises:
            RuntimeError: when the scheduler was stopped.
            ValueError: for a NaN ``deadline``.
        """
        if is_nan(deadline):
            raise ValueError("deadline must be a number, not NaN")
        return self._schedule(deadline, callback, args)

    def _schedule(self, deadline: float, callback: Callable[..., Any], args: Tuple[Any, ...]) -> TimerHandle:
        handle = TimerHandle(self, deadline, callback, args[0] if len(args) == 1 else _Arguments(args))
        with self._lock:
            if self._stopped:
                raise RuntimeError("scheduler is stopped")
            heap = self._heap
            heapq.heappush(heap, (deadline, handle))
            if self._thread is None:
                self._start_thread()
            elif heap[0][1] is handle:
                # The new deadline is the earliest: wake the thread to re-arm.
                self._cond.notify()
        return handle

    def pending(self) -> int:
        """How many timers are scheduled and not cancelled."""
        with self._cond:
            return len(self._heap) - self._cancelled

    def stop(self, timeout: Optional[float] = None) -> None:
        """Drop every timer and end the thread (bounded by ``timeout``).  Idempotent."""
        with self._cond:
            self._stopped = True
            for _, handle in self._heap:
                handle._scheduler = None
            self._heap.clear()
            self._cancelled = 0
            thread = self._thread
            self._cond.notify()
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    @property
    def thread(self) -> Optional[threading.Thread]:
        """The timer thread, once started."""
        return self._thread

    def _cancel(self, handle: TimerHandle) -> bool:
        with self._lock:
            if handle._scheduler is None:
                return False
            handle._scheduler = None
            handle._callback = None
            handle._argument = _NO_ARGUMENT
            self._cancelled += 1
            if self._cancelled > _COMPACT_MIN_CANCELLED and self._cancelled * 2 > len(self._heap):
                self._heap = [entry for entry in self._heap if entry[1]._scheduler is not None]
                heapq.heapify(self._heap)
                self._cancelled = 0
        return True

    def _start_thread(self) -> None:
        thread = threading.Thread(target=self._run, name=self._name, daemon=True)
        self._thread = thread
        thread.start()

    def _run(self) -> None:
        cond = self._cond
        while True:
            due: List[TimerHandle] = []
            with cond:
                while not due:
                    if self._stopped:
                        return
                    heap = self._heap
                    if not heap:
                        cond.wait(MAX_WAIT_SLICE_S)
                        continue
                    now = time.monotonic()
                    while heap and heap[0][0] <= now:
                        handle = heapq.heappop(heap)[1]
                        if handle._scheduler is None:
                            self._cancelled -= 1
                        else:
                            handle._scheduler = None
                            due.append(handle)
                    if not due and heap:
                        cond.wait(min(heap[0][0] - now, MAX_WAIT_SLICE_S))
            with deferred_callbacks():  # the futures this batch settles hand over their callbacks together
                for handle in due:
                    callback, argument = handle._callback, handle._argument
                    handle._callback = None
                    handle._argument = _NO_ARGUMENT
                    if callback is None:
                        continue
                    try:
                        if type(argument) is _Arguments:
                            callback(*argument)
                        else:
                            callback(argument)
                    except BaseException:  # nothing a callback does may end the timer thread
                        logger.exception("timer callback %r failed", callback)
                    del callback, argument


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


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_after_fork)
