"""The two kinds of future a request can have.

:class:`RequestFuture` is what :meth:`JsonRpcClient.request` returns: a real
:class:`concurrent.futures.Future`, with three differences, each for a rule
of the client:

- ``cancel()`` withdraws the request from the client (and tells the peer),
  and a second ``cancel()`` (from any thread, at any time) is harmless;
- a done-callback runs where ``concurrent.futures`` would run it when the
  caller settles the future itself (inside its own ``cancel()``), but on one
  of the client's callback workers when the library settles it (answer,
  timeout, transport loss, close): never on a reader or timer thread;
- its Condition is made on first use (most futures never need one before
  they settle), which halves what a pending request costs.

:class:`CallWaiter` is the private future of one blocking ``call()``: looked
at by exactly one thread, it is a lock held from birth and released when the
answer is in, so waiting is one ``acquire()``.

Both are settled at most once, by whoever removes the request from the
pending map (:mod:`._pending`).
"""

from __future__ import annotations

import threading
from concurrent.futures import Future, InvalidStateError
from typing import Any, Callable, List, Optional, Protocol

from ._deadlines import wait_slice
from ._workers import waiting_for_answer
from .errors import RequestId

#: Set while the library settles a future: done-callbacks then go to a worker.
_settling = threading.local()


class Settleable(Protocol):
    """What settling a pending request needs: a RequestFuture or a CallWaiter."""

    def set_result(self, result: Any) -> None: ...

    def set_exception(self, exception: Optional[BaseException]) -> None: ...


class CallbackRunner(Protocol):
    """Where done-callbacks of library-settled futures run (the client's callback pool)."""

    def run_callback(self, fn: Callable[[Future[Any]], object], future: Future[Any]) -> None: ...


class Withdrawer(Protocol):
    """What a cancelled RequestFuture tells (the client)."""

    def _withdraw(self, request_id: RequestId, reason: str) -> None: ...


def settle_result(future: Settleable, value: Any) -> None:
    """Settle with a result, as the library (done-callbacks go to a worker)."""
    _settling.active = True
    try:
        future.set_result(value)
    except InvalidStateError:  # the caller cancelled it in the meantime
        pass
    finally:
        _settling.active = False


def settle_exception(future: Settleable, error: BaseException) -> None:
    """Settle with an error, as the library (done-callbacks go to a worker)."""
    _settling.active = True
    try:
        future.set_exception(error)
    except InvalidStateError:
        pass
    finally:
        _settling.active = False


class _LazyCondition:
    """``Future._condition``, made on first use.

    A Condition (with its RLock and deque) is over half of what a pending
    request costs, and most futures need it only once they settle.  The first
    access stores one in the instance dict (``dict.setdefault`` is atomic, so
    two threads racing get the same one), which then shadows this descriptor.
    """

    def __get__(self, instance: Optional[Future[Any]], owner: type) -> Any:
        if instance is None:
            return self
        return instance.__dict__.setdefault("_condition", threading.Condition())


def _future_fields_are_known() -> bool:
    """True when ``Future.__init__`` sets exactly the fields RequestFuture sets itself."""
    sample: Future[Any] = Future()
    return set(sample.__dict__) == {"_condition", "_state", "_result", "_exception", "_waiters", "_done_callbacks"}


_LAZY_CONDITION = _future_fields_are_known()
_PENDING_STATE = Future()._state
_CANCELLED_STATE = "CANCELLED"


class RequestFuture(Future):  # type: ignore[type-arg]
    """A Future whose ``cancel()`` withdraws its request from the client.

    Thread-safe, like every Future.  ``request_id`` is the request's id.
    """

    _condition = _LazyCondition()

    def __init__(self, client: Withdrawer, request_id: RequestId, callbacks: CallbackRunner) -> None:
        if _LAZY_CONDITION:
            # Future.__init__ minus the Condition (see _LazyCondition).
            self._state = _PENDING_STATE
            self._result = None
            self._exception = None
            self._waiters: List[Any] = []
            self._done_callbacks: List[Any] = []
        else:
            super().__init__()
        self._client = client
        self._callbacks = callbacks
        self.request_id = request_id

    def cancel(self) -> bool:
        """Cancel the request: withdraw it and tell the peer (where configured).

        Returns:
            True when the future is cancelled (now or before), False when it
            had already settled.
        """
        return self.cancel_with_reason("Cancelled by the client")

    def cancel_with_reason(self, reason: str) -> bool:
        """Cancel, telling the peer ``reason`` in the cancellation notification.

        Done-callbacks run on the calling thread, as ``Future.cancel()`` runs
        them.  A repeated or concurrent cancel returns True and does nothing more.
        """
        if not Future.cancel(self):
            return False
        with self._condition:  # re-entrant: set_running_or_notify_cancel takes it too
            if self._state != _CANCELLED_STATE:
                return True  # another cancel() went on to the end already
            # CANCELLED -> CANCELLED_AND_NOTIFIED, as an executor does: this is what
            # wakes concurrent.futures.wait() and as_completed() on this future.
            self.set_running_or_notify_cancel()
        self._client._withdraw(self.request_id, reason)
        return True

    def add_done_callback(self, fn: Callable[[Future[Any]], object]) -> None:
        """As :meth:`concurrent.futures.Future.add_done_callback`, but never on a library thread.

        When the library settles the future, ``fn`` runs on one of the client's
        callback workers; when the caller settles it (``cancel()``), or the
        future is already done, ``fn`` runs on the calling thread.
        """
        callbacks = self._callbacks

        def run(future: Future[Any]) -> None:
            if getattr(_settling, "active", False):
                callbacks.run_callback(fn, future)
            else:
                fn(future)

        super().add_done_callback(run)

    def result(self, timeout: Optional[float] = None) -> Any:
        """As :meth:`concurrent.futures.Future.result`.

        A ``timeout`` here bounds this wait only; the request stays pending
        until its own deadline (``request(..., timeout=...)``) or ``cancel()``.
        """
        with waiting_for_answer():
            return super().result(timeout)

    def exception(self, timeout: Optional[float] = None) -> Optional[BaseException]:
        """As :meth:`concurrent.futures.Future.exception` (the same note on ``timeout``)."""
        with waiting_for_answer():
            return super().exception(timeout)


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


__all__ = ["CallWaiter", "RequestFuture", "Settleable", "settle_exception", "settle_result"]
