"""A blocking call's waiter, and the block in which the library settles futures.

Theory of operation.  Two ways an answer reaches the thread that wants it,
neither running user code on the thread that settles it:

- ``CallWaiter`` is what a blocking ``call()`` waits on: a lock held from
  birth, released when settled.  On a pool worker (a handler calling back
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

from .._deadlines import wait_slice
from .._logs import get_logger
from .workers import DrainQueue, PoolClosed, WorkerPool, current_worker, waiting_for_answer

TYPE_CHECKING = False  # typing is not imported at run time: a tool server's pool lives beside this
if TYPE_CHECKING:
    from typing import Any, Callable, List, Optional

logger = get_logger(__name__)


class CallWaiter:
    """The private future of one blocking ``call()``: settled once, waited on by its caller only."""

    __slots__ = ("_error", "_held", "_lock", "_result", "_settled")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._lock.acquire()  # released when settled
        self._settled = False
        self._held = False  # the answer is in, waiting for notification handlers to finish
        self._result: Any = None
        self._error: Optional[BaseException] = None

    def settle_result(self, result: Any) -> None:
        """The answer is in (a second settling is ignored)."""
        if not self._settled:
            self._result = result
            self._settled = True
            self._lock.release()

    def settle_exception(self, error: BaseException) -> None:
        """The request failed with ``error`` (a second settling is ignored)."""
        if not self._settled:
            self._error = error
            self._settled = True
            self._lock.release()

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
        if current_worker() is None:
            return self._wait(deadline)
        with waiting_for_answer():  # a handler calling back: its pool may start another worker meanwhile
            return self._wait(deadline)

    def _wait(self, deadline: Optional[float]) -> bool:
        lock = self._lock
        while not lock.acquire(timeout=wait_slice(deadline)):
            if deadline is not None and time.monotonic() >= deadline:
                return self._settled
        return True

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


__all__ = ["CallWaiter", "CallbackRunner", "collected_callbacks", "library_settling"]
