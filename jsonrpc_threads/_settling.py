"""How the library settles a request, and the private future of a blocking ``call()``.

Whoever removes a request from the pending map settles it through
:func:`settle_result` or :func:`settle_exception`, which mark the thread as
"the library is settling" (:data:`settling`): a :class:`RequestFuture
<jsonrpc_threads._futures.RequestFuture>` then hands its done-callbacks to a
worker instead of running them on this (reader, timer) thread.  A future the
caller cancelled in the meantime is left as it is.

:class:`CallWaiter` is the private future of one blocking ``call()``: looked
at by exactly one thread, settled by one other.  A caller whose answer is in
before it waits (it read the answer itself) waits for nothing; one that has to
wait sleeps on a wake pipe (:mod:`._wakeups`), or on a lock where there is none.

No :mod:`concurrent.futures` here: a program that only makes blocking calls
never loads it.
"""

from __future__ import annotations

import threading
import time

from ._deadlines import wait_slice, wait_slice_ms
from ._logs import get_logger
from ._wakeups import WAIT_SLICE_MS, WakePipe
from ._workers import current_worker, waiting_for_answer

_log = get_logger(__name__)

#: finish(): the longest to wait for the byte of a settler that is on its way.
WAKE_BYTE_WAIT_S = 1.0

TYPE_CHECKING = False
if TYPE_CHECKING:
    from _thread import LockType
    from typing import Any, Callable, Dict, List, Optional, Protocol, Tuple

    from ._wakeups import WakePipes

    class Settleable(Protocol):
        """What settling a pending request needs: a RequestFuture or a CallWaiter."""

        def set_result(self, result: Any) -> None: ...

        def set_exception(self, exception: Optional[BaseException]) -> None: ...


class _Settling(threading.local):
    """Per thread: ``active`` while the library settles a future; ``deferred`` inside :class:`deferred_callbacks`."""

    # Class attributes: a thread that never set them reads the default at once (a getattr
    # with a default would raise and catch an AttributeError there).
    active = False
    deferred: Optional[List[Any]] = None


#: Set while the library settles a future: its done-callbacks then go to a worker.
#: ``settling.deferred``, inside :class:`deferred_callbacks`, collects the futures instead.
settling = _Settling()


class deferred_callbacks:
    """``with deferred_callbacks():`` around settling many futures at once (a timer batch, a close).

    The futures settled inside that have done-callbacks are collected and
    handed to their runners when the outermost block ends, as one list per
    runner (:meth:`CallbackRunner.run_done_callbacks
    <jsonrpc_threads._futures.CallbackRunner>`), instead of one task each:
    100,000 timeouts in a burst then cost a few worker tasks, not 100,000, and
    no object per callback.  Cheap; nests; never raises for a runner's failure.
    """

    __slots__ = ("_outer",)

    def __enter__(self) -> None:
        self._outer = settling.deferred
        if self._outer is None:
            settling.deferred = []

    def __exit__(self, *exc_info: object) -> None:
        if self._outer is not None:
            return
        batch = settling.deferred
        settling.deferred = None
        if batch:
            _hand_over(batch)


def _hand_over(batch: List[Any]) -> None:
    """Give each runner its settled futures (each names its runner), in the order they settled."""
    runner = batch[0]._callbacks
    if all(future._callbacks is runner for future in batch):  # the usual case: one client
        groups: List[Tuple[Any, List[Any]]] = [(runner, batch)]
    else:
        by_runner: Dict[int, Tuple[Any, List[Any]]] = {}
        for future in batch:
            key = id(future._callbacks)
            if key not in by_runner:
                by_runner[key] = (future._callbacks, [])
            by_runner[key][1].append(future)
        groups = list(by_runner.values())
    for runner, futures in groups:
        try:
            runner.run_done_callbacks(futures)
        except Exception:  # a runner that cannot take them must not stop the settling thread
            import logging  # noqa: PLC0415 - only on this failure

            logging.getLogger(__name__).exception("done-callbacks could not be handed over")


def _unless_invalid_state(exc: Exception) -> None:
    """Swallow the InvalidStateError of a future the caller cancelled meanwhile; raise anything else."""
    from concurrent.futures import InvalidStateError  # noqa: PLC0415 - loaded: only its futures raise it

    if not isinstance(exc, InvalidStateError):
        raise exc


def settle_result(future: Settleable, value: Any) -> None:
    """Settle with a result, as the library (done-callbacks go to a worker)."""
    settling.active = True
    try:
        future.set_result(value)
    except Exception as exc:
        _unless_invalid_state(exc)
    finally:
        settling.active = False


def settle_exception(future: Settleable, error: BaseException) -> None:
    """Settle with an error, as the library (done-callbacks go to a worker)."""
    settling.active = True
    try:
        future.set_exception(error)
    except Exception as exc:
        _unless_invalid_state(exc)
    finally:
        settling.active = False


class CallWaiter:
    """The private future of one ``call()``: settled once, awaited only by its caller.

    A caller that finds it unsettled sleeps on a wake pipe from ``pipes`` (see
    :mod:`._wakeups`; a lock when there is none), and calls :meth:`finish`
    once the call is over, in every case, to give the pipe back.

    Args:
        pipes: the client's wake pipes, or None to wait on a lock.
    """

    __slots__ = ("_error", "_lock", "_pipe", "_pipes", "_result", "_rouse", "_settled", "_woken")

    def __init__(self, pipes: Optional[WakePipes] = None) -> None:
        # _lock guards _settled against _rouse: a settler wakes the waiter that is there.
        self._lock = threading.Lock()
        self._settled = False
        self._result: Any = None
        self._error: Optional[BaseException] = None
        self._pipes = pipes
        self._pipe: Optional[WakePipe] = None  # the wake pipe the caller sleeps on, once it does
        self._rouse: Optional[Callable[[], Any]] = None  # what wakes it: the pipe's post, or its lock's release
        self._woken = False  # the wake pipe's byte was read

    def set_result(self, result: Any) -> None:
        with self._lock:
            if self._settled:
                return
            self._result = result
            self._settled = True
            rouse = self._rouse
        if rouse is not None:
            rouse()

    def set_exception(self, exception: Optional[BaseException]) -> None:
        with self._lock:
            if self._settled:
                return
            self._error = exception
            self._settled = True
            rouse = self._rouse
        if rouse is not None:
            rouse()

    def settled(self) -> bool:
        """True once the answer (or error) is in."""
        return self._settled

    def wait(self, deadline: Optional[float]) -> bool:
        """Wait until settled or ``deadline`` (monotonic) passed; True if settled."""
        if self._settled:
            return True
        pipes = self._pipes
        pipe = pipes.take() if pipes is not None else None
        lock: Optional[LockType] = None
        if pipe is not None:
            rouse: Callable[[], Any] = pipe.post
        else:
            lock = threading.Lock()
            rouse = lock.release
            lock.acquire()
        with self._lock:
            settled = self._settled
            if not settled:
                self._pipe, self._rouse = pipe, rouse
        if settled:
            if pipe is not None and pipes is not None:
                pipes.give(pipe)  # nobody writes to it
            return True
        if current_worker() is None:  # not a worker of the library's (the usual case): nothing to mark
            return self._wait_on_pipe(pipe, deadline) if pipe is not None else self._wait_on_lock(lock, deadline)
        with waiting_for_answer():
            return self._wait_on_pipe(pipe, deadline) if pipe is not None else self._wait_on_lock(lock, deadline)

    def _wait_on_lock(self, lock: Optional[LockType], deadline: Optional[float]) -> bool:
        assert lock is not None
        while True:
            if lock.acquire(timeout=wait_slice(deadline)):
                return True
            if deadline is not None and wait_slice(deadline) <= 0.0:
                return self._settled

    def _wait_on_pipe(self, pipe: WakePipe, deadline: Optional[float]) -> bool:
        while True:
            if pipe.wait(wait_slice_ms(deadline, WAIT_SLICE_MS)):
                self._woken = True  # the byte is written after _settled is set
                return True
            if self._settled:  # its byte is late: finish() reads it
                return True
            if deadline is not None and time.monotonic() >= deadline:
                return False

    def finish(self) -> None:
        """The call is over (the waiter settled, or about to be): give the wake pipe back once its byte is read.

        The settler's byte comes at once (it is on its way); should it not
        come within :data:`WAKE_BYTE_WAIT_S`, the pipe is never used again.
        """
        pipe = self._pipe
        pipes = self._pipes
        if pipe is None or pipes is None:
            return
        if not self._woken:
            end = time.monotonic() + WAKE_BYTE_WAIT_S
            while not pipe.wait(wait_slice_ms(end, WAIT_SLICE_MS)):
                if time.monotonic() >= end:
                    _log.warning("a wake pipe's byte did not come: the pipe is set aside")
                    self._pipe = self._rouse = None
                    pipes.drop(pipe)
                    return
        self._pipe = self._rouse = None  # its byte is read: nobody writes to it any more
        pipes.give(pipe)

    def result(self) -> Any:
        """The result once settled; raises the error it was settled with."""
        error = self._error
        if error is not None:
            self._error = None  # no reference cycle through the traceback
            raise error
        return self._result


__all__ = ["CallWaiter", "deferred_callbacks", "settle_exception", "settle_result", "settling"]
