"""A blocking call's waiter, and the block in which the library settles futures.

Theory of operation.  Two ways an answer reaches the thread that wants it,
neither running user code on the thread that settles it:

- ``CallWaiter`` is what a blocking ``call()`` waits on: a wake pipe
  (the waiter strategy, ``wake_pipes``), or a lock where there is none.  On a pool worker (a handler calling back
  into its client) it waits as ``waiting_for_answer``, so the pool may start
  another worker meanwhile (``jsonrpc_threads.runtime.workers``).
- ``library_settling`` is the block in which the library settles the futures
  of ``request()``: their done-callbacks are collected there
  (``collected_callbacks``), for the workers, instead of run on the settling
  (reader, timer) thread; ``CallbackRunner`` hands them to a pool, in the
  order their futures settled (a ``DrainQueue``: a burst of 100,000 is no
  task each), or, after the pool was shut down, to a thread of their own.

Thread-safety: a ``CallWaiter`` may be settled from any thread and is waited
on by its caller only; ``library_settling`` and ``collected_callbacks`` are
per thread.
"""

from __future__ import annotations

import threading
import time

from ..deadlines.timeouts import wait_slice, wait_slice_ms
from .logs import get_logger
from .wake_pipes import PROCESS_WAKE_PIPES, WAIT_SLICE_MS, WakePipe, WakePipes
from .workers import DrainQueue, PoolClosed, WorkerPool, current_worker, waiting_for_answer

TYPE_CHECKING = False  # typing is not imported at run time: a tool server's pool lives beside this
if TYPE_CHECKING:
    from _thread import LockType
    from typing import Any, Callable, List, Optional

logger = get_logger(__name__)

#: finish(): the longest to wait for the byte of a settler that is on its way.
WAKE_BYTE_WAIT_S = 1.0


#: What a waiting ``call()`` sleeps on (``JsonRpcClient(waiter=)``): a wake pipe from the
#: process's pool (``wake_pipes``), or a lock (the plain one).
WAITERS = ("wake_pipe", "plain")


def waiter_pipes(waiter: str) -> Optional[WakePipes]:
    """The wake pipes a ``waiter=`` choice sleeps on: the process's pool, or None (a lock).

    Raises:
        ValueError: for a choice not in ``WAITERS``.
    """
    if waiter == "wake_pipe":
        return PROCESS_WAKE_PIPES
    if waiter == "plain":
        return None
    raise ValueError(f"waiter must be one of {WAITERS}, not {waiter!r}")


class CallWaiter:
    """The private future of one blocking ``call()``: settled once, waited on by its caller only.

    A caller that finds it unsettled sleeps on a wake pipe from ``pipes``
    (the waiter strategy, ``wake_pipes``), or on a lock when there is none
    (``pipes`` None, the plain waiter, or no pipe to be had), and
    calls ``finish`` once the call is over, in every case, to give the pipe back.

    What wakes the caller (its pipe's ``post`` or its lock's ``release``)
    sits in a one-place slot: the caller puts it there before its last look
    at ``_settled``, a settler takes it after setting ``_settled``, and
    whichever of the two takes it out (``list.pop`` is atomic) owns it, so a
    caller is woken once and never sleeps past its settling, with no lock
    taken on the way.  One settler at most settles a waiter (whoever removes
    its id from the pending table); a second settling is ignored.

    Args:
        pipes: the pool to take a wake pipe from, or None to wait on a lock.
    """

    __slots__ = ("_error", "_held", "_pipe", "_pipes", "_result", "_rouse", "_settled", "_woken")

    def __init__(self, pipes: Optional[WakePipes] = None) -> None:
        self._settled = False
        self._held = False  # the answer is in, waiting for notification handlers to finish
        self._result: Any = None
        self._error: Optional[BaseException] = None
        self._pipes = pipes
        self._pipe: Optional[WakePipe] = None  # the wake pipe the caller sleeps on, once it does
        self._rouse: List[Callable[[], Any]] = []  # at most one: what wakes the caller (see the class docstring)
        self._woken = False  # the wake pipe's byte was read

    def settle_result(self, result: Any) -> None:
        """The answer is in (a second settling is ignored)."""
        if self._settled:
            return
        self._result = result
        self._settled = True
        if self._rouse:
            self._wake()

    def settle_exception(self, error: BaseException) -> None:
        """The request failed with ``error`` (a second settling is ignored)."""
        if self._settled:
            return
        self._error = error
        self._settled = True
        if self._rouse:
            self._wake()

    def _wake(self) -> None:
        try:
            rouse = self._rouse.pop()
        except IndexError:  # the caller took it back: it saw the settling itself
            return
        rouse()

    def settled(self) -> bool:
        """True once the answer (or error) is in."""
        return self._settled

    def answer_held(self) -> None:
        """The answer arrived but waits for notification handlers: a caller reading it stops reading."""
        self._held = True

    def answered(self) -> bool:
        """True once settled, or once the answer arrived and waits for notification handlers.

        What a caller that reads its own answer reads until: past this point
        it only waits to be settled (``wait``), which the handlers' end
        does at once, instead of polling a pipe that has nothing more for it.
        """
        return self._settled or self._held

    def wait(self, deadline: Optional[float]) -> bool:
        """Wait until settled or ``deadline`` (monotonic) passed; True if settled.  Interruptible."""
        if self._settled:
            return True
        pipes = self._pipes
        pipe = pipes.take() if pipes is not None else None
        lock: Optional[LockType] = None
        if pipe is not None:
            rouse: Callable[[], Any] = pipe.post
            self._pipe = pipe
        else:
            lock = threading.Lock()
            lock.acquire()
            rouse = lock.release
        self._rouse.append(rouse)
        if self._settled:  # settled meanwhile: take the rouse back, unless the settler has it
            self.finish()
            return True
        if current_worker() is None:
            return self._sleep(pipe, lock, deadline)
        with waiting_for_answer():  # a handler calling back: its pool may start another worker meanwhile
            return self._sleep(pipe, lock, deadline)

    def _sleep(self, pipe: Optional[WakePipe], lock: Optional[LockType], deadline: Optional[float]) -> bool:
        if pipe is None:
            assert lock is not None
            while not lock.acquire(timeout=wait_slice(deadline)):
                if deadline is not None and time.monotonic() >= deadline:
                    return self._settled
            return True
        while True:
            if pipe.wait(wait_slice_ms(deadline, WAIT_SLICE_MS)):
                self._woken = True  # the byte is written after _settled is set
                return True
            if self._settled:  # its byte is late: finish() reads it
                return True
            if deadline is not None and time.monotonic() >= deadline:
                return False

    def finish(self) -> None:
        """The call is over (settled, or about to be): give the wake pipe back, its byte read if one comes.

        A rouse still in the slot is taken back (no byte will come); one a
        settler took means its byte is on its way: should it not come within
        ``WAKE_BYTE_WAIT_S``, the pipe is never used again.  Never raises.
        """
        pipe = self._pipe
        if pipe is None:  # no pipe, or a lock: a late settler releasing a lock nobody waits on is harmless
            return
        pipes = self._pipes
        assert pipes is not None
        self._pipe = None
        if not self._woken:
            try:
                self._rouse.pop()  # taken back: nobody writes to it
            except IndexError:  # a settler has it: read its byte
                end = time.monotonic() + WAKE_BYTE_WAIT_S
                while not pipe.wait(wait_slice_ms(end, WAIT_SLICE_MS)):
                    if time.monotonic() >= end:
                        logger.warning("a wake pipe's byte did not come: the pipe is set aside")
                        pipes.drop(pipe)
                        return
        pipes.give(pipe)

    def result(self) -> Any:
        """The result once settled; raises the error it was settled with."""
        error = self._error
        if error is not None:
            self._error = None  # no reference cycle through the traceback
            raise error
        return self._result


class _Collecting(threading.local):
    """Per thread: the done-callbacks a ``library_settling`` block collects (None outside one)."""

    deferred: Optional[List[Any]] = None  # a class attribute: None on every other thread


_collecting = _Collecting()


def collected_callbacks() -> Optional[List[Any]]:
    """Inside a ``library_settling`` block: the list that collects done-callbacks; else None."""
    return _collecting.deferred


class library_settling:
    """``with library_settling(runner):`` around the library settling futures: their callbacks go to ``runner``.

    A future's done-callbacks put themselves in ``collected_callbacks``
    instead of running (``jsonrpc_threads.core.futures``); ``runner`` gets them all (a list, one
    item a future, in the order the futures settled) when the outermost block
    ends, and runs them on workers, never on this thread.  Nests.
    """

    __slots__ = ("_outer", "_runner")

    def __init__(self, runner: Callable[[List[Any]], None]) -> None:
        self._runner = runner

    def __enter__(self) -> None:
        self._outer = _collecting.deferred
        if self._outer is None:
            _collecting.deferred = []

    def __exit__(self, *exc_info: object) -> None:
        if self._outer is not None:
            return
        deferred = _collecting.deferred
        _collecting.deferred = None
        if deferred:
            try:
                self._runner(deferred)
            except Exception:  # a runner that cannot take them must not stop the settling thread
                logger.exception("done-callbacks could not be handed over")


class CallbackRunner:
    """The runner of a ``library_settling`` block: done-callbacks to a pool's workers.  Thread-safe.

    Args:
        pool: the callback workers.
        label: names the thread that runs them after the pool was shut down.
    """

    def __init__(self, pool: WorkerPool, label: str) -> None:
        self._label = label
        self._queue = DrainQueue(pool, _run_deferred)

    def __call__(self, callbacks: List[Any]) -> None:
        """Hand over ``callbacks`` (items with ``run()``, one a future); never runs one here."""
        try:
            self._queue.put(callbacks)
        except PoolClosed:  # settled after close (rare): a thread of its own
            drain = threading.Thread(
                target=self._queue.drain,
                kwargs={"counted": False},
                name=f"jsonrpc-callback[{self._label}]",
                daemon=True,
            )
            drain.start()


def _run_deferred(item: Any) -> None:
    """A callback worker: the done-callbacks of one future the library settled."""
    item.run()


__all__ = ["WAITERS", "CallWaiter", "CallbackRunner", "collected_callbacks", "library_settling", "waiter_pipes"]
