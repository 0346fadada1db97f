"""How the library settles a request, and the private future of a blocking ``call()``.

Whoever removes a request from the pending map settles it through
:func:`settle_result` or :func:`settle_exception`, which mark the thread as
"the library is settling" (:data:`settling`): a :class:`RequestFuture
<jsonrpc_threads._futures.RequestFuture>` then hands its done-callbacks to a
worker instead of running them on this (reader, timer) thread.  A future the
caller cancelled in the meantime is left as it is.

:class:`CallWaiter` is the private future of one blocking ``call()``: looked
at by exactly one thread, it is a lock held from birth and released when the
answer is in, so waiting is one ``acquire()``.

No :mod:`concurrent.futures` here: a program that only makes blocking calls
never loads it.
"""

from __future__ import annotations

import threading

from ._deadlines import wait_slice
from ._workers import waiting_for_answer

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional, Protocol, Tuple

    class Settleable(Protocol):
        """What settling a pending request needs: a RequestFuture or a CallWaiter."""

        def set_result(self, result: Any) -> None: ...

        def set_exception(self, exception: Optional[BaseException]) -> None: ...


#: Set while the library settles a future: its done-callbacks then go to a worker.
#: ``settling.deferred``, inside :class:`deferred_callbacks`, collects the futures instead.
settling = threading.local()


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
        self._outer = getattr(settling, "deferred", None)
        if self._outer is None:
            settling.deferred = []

    def __exit__(self, *exc_info: object) -> None:
        if self._outer is not None:
            return
        batch: List[Any] = settling.deferred
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
    """The private future of one ``call()``: settled once, awaited only by its caller."""

    __slots__ = ("_error", "_lock", "_result", "_settled")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._lock.acquire()
        self._settled = False
        self._result: Any = None
        self._error: Optional[BaseException] = None

    def set_result(self, result: Any) -> None:
        if not self._settled:
            self._result = result
            self._settled = True
            self._lock.release()

    def set_exception(self, exception: Optional[BaseException]) -> None:
        if not self._settled:
            self._error = exception
            self._settled = True
            self._lock.release()

    def settled(self) -> bool:
        """True once the answer (or error) is in."""
        return self._settled

    def wait(self, deadline: Optional[float]) -> bool:
        """Wait until settled or ``deadline`` (monotonic) passed; True if settled."""
        if self._settled:
            return True
        lock = self._lock
        with waiting_for_answer():
            while True:
                if lock.acquire(timeout=wait_slice(deadline)):
                    return True
                if deadline is not None and wait_slice(deadline) <= 0.0:
                    return self._settled

    def result(self) -> Any:
        """The result once settled; raises the error it was settled with."""
        error = self._error
        if error is not None:
            self._error = None  # no reference cycle through the traceback
            raise error
        return self._result


__all__ = ["CallWaiter", "deferred_callbacks", "settle_exception", "settle_result", "settling"]
