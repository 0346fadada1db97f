"""The future of a ``request()``.

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

Settled at most once, by whoever removes the request from the pending map
(:mod:`._pending`).  Imported on the first ``request()``: a program that only
ever makes blocking calls never loads :mod:`concurrent.futures` (nor the
:mod:`logging` it imports).
"""

from __future__ import annotations

import threading
from concurrent.futures import Future
from typing import Any, Callable, List, Optional, Protocol

from ._settling import settling
from ._workers import waiting_for_answer
from .errors import RequestId


class CallbackRunner(Protocol):
    """Where done-callbacks of library-settled futures run (the client's callback pool).

    It is given the settled futures (in the order they settled) and calls
    :meth:`RequestFuture.run_done_callbacks` of each on a worker.
    """

    def run_done_callbacks(self, futures: List[RequestFuture]) -> None: ...


class Withdrawer(Protocol):
    """What a cancelled RequestFuture tells (the client)."""

    def _withdraw(self, request_id: RequestId, reason: str) -> None: ...


#: Taken to make a future's Condition, and by a settler that finds none: so a
#: future either settles before anybody can look at it (no Condition yet), or
#: under its Condition, as Future always does (see RequestFuture.set_result).
_CONDITION_LOCK = threading.Lock()


class _LazyCondition:
    """``Future._condition``, made on first use.

    A Condition (with its RLock and deque) is over half of what a pending
    request costs, and most futures settle before anybody waits on them.  The
    first access stores one in the instance dict (under :data:`_CONDITION_LOCK`),
    which then shadows this descriptor.
    """

    def __get__(self, instance: Optional[Future[Any]], owner: type) -> Any:
        if instance is None:
            return self
        state = instance.__dict__
        with _CONDITION_LOCK:
            condition = state.get("_condition")
            if condition is None:
                condition = state["_condition"] = threading.Condition()
        return condition


class _LazyList:
    """``Future._waiters`` or ``Future._done_callbacks``, made on first use.

    A pending request is almost never waited on by ``concurrent.futures.wait``
    nor given a done-callback: two empty lists per future are a fifth of what it
    costs.  The first access (an append, or the iteration when it settles)
    stores a list in the instance dict, which then shadows this descriptor.
    """

    def __init__(self, name: str) -> None:
        self._name = name

    def __get__(self, instance: Optional[Future[Any]], owner: type) -> Any:
        if instance is None:
            return self
        return instance.__dict__.setdefault(self._name, [])


def _future_fields_are_known() -> bool:
    """True when ``Future.__init__`` sets exactly the fields RequestFuture sets itself."""
    sample: Future[Any] = Future()
    return set(sample.__dict__) == {"_condition", "_state", "_result", "_exception", "_waiters", "_done_callbacks"}


_LAZY_CONDITION = _future_fields_are_known()
_PENDING_STATE = Future()._state
_CANCELLED_STATE = "CANCELLED"
_FINISHED_STATE = "FINISHED"
_CANCELLED_STATES = ("CANCELLED", "CANCELLED_AND_NOTIFIED")
#: Who moved a future out of PENDING (the key of the claim in its instance dict).
_CLAIM = "_claimed_by"
_BY_SETTLE = "settle"
_BY_CANCEL = "cancel"


class RequestFuture(Future):  # type: ignore[type-arg]
    """A Future whose ``cancel()`` withdraws its request from the client.

    Thread-safe, like every Future.  ``request_id`` is the request's id.
    """

    _condition = _LazyCondition()
    _waiters = _LazyList("_waiters")
    _done_callbacks = _LazyList("_done_callbacks")

    def __init__(self, client: Withdrawer, request_id: RequestId, callbacks: CallbackRunner) -> None:
        if _LAZY_CONDITION:
            # Future.__init__ minus the Condition (see _LazyCondition).
            self._state = _PENDING_STATE
            self._result = None
            self._exception = None
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
        if self.__dict__.setdefault(_CLAIM, _BY_CANCEL) is not _BY_CANCEL:
            return False  # the library settles it (or did): too late to cancel
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

    # -- settling without a Condition ------------------------------------------------
    #
    # Most futures settle before anybody waits on them.  Every waiter (result(),
    # wait(), as_completed()) makes the Condition before it looks at the state,
    # and makes it under _CONDITION_LOCK; a settler that finds no Condition under
    # that lock sets the state there, before anybody can look, and then runs the
    # done-callbacks added under that same lock (add_done_callback makes no
    # Condition); one that finds a Condition settles under it exactly as Future does.
    # Which transition happens (this, or cancel()) is decided first, by one
    # atomic dict.setdefault on the claim.

    def set_result(self, result: Any) -> None:
        """As :meth:`concurrent.futures.Future.set_result` (no Condition made when nobody waits)."""
        self._claim()
        state = self.__dict__
        with _CONDITION_LOCK:
            condition = state.get("_condition")
            if condition is None:
                self._result = result
                self._state = _FINISHED_STATE
        if condition is None:
            if "_done_callbacks" in state:
                self._invoke_callbacks()
            return
        with condition:
            self._result = result
            self._state = _FINISHED_STATE
            for waiter in state.get("_waiters", ()):
                waiter.add_result(self)
            condition.notify_all()
        self._invoke_callbacks()

    def set_exception(self, exception: Optional[BaseException]) -> None:
        """As :meth:`concurrent.futures.Future.set_exception` (no Condition made when nobody waits)."""
        self._claim()
        state = self.__dict__
        with _CONDITION_LOCK:
            condition = state.get("_condition")
            if condition is None:
                self._exception = exception
                self._state = _FINISHED_STATE
        if condition is None:
            if "_done_callbacks" in state:
                self._invoke_callbacks()
            return
        with condition:
            self._exception = exception
            self._state = _FINISHED_STATE
            for waiter in state.get("_waiters", ()):
                waiter.add_exception(self)
            condition.notify_all()
        self._invoke_callbacks()

    def _claim(self) -> None:
        """Take the one transition out of PENDING for the settler, or raise InvalidStateError."""
        if self.__dict__.setdefault(_CLAIM, _BY_SETTLE) is not _BY_SETTLE or self._state != _PENDING_STATE:
            raise _invalid_state(self)

    def result(self, timeout: Optional[float] = None) -> Any:
        """As :meth:`concurrent.futures.Future.result`.

        A ``timeout`` here bounds this wait only; the request stays pending
        until its own deadline (``request(..., timeout=...)``) or ``cancel()``.
        """
        if self._state == _FINISHED_STATE:  # settled: no Condition needed to read it
            error = self._exception
            if error is None:
                return self._result
            try:
                raise error
            finally:
                del error
        with waiting_for_answer():
            return super().result(timeout)

    def exception(self, timeout: Optional[float] = None) -> Optional[BaseException]:
        """As :meth:`concurrent.futures.Future.exception` (the same note on ``timeout``)."""
        if self._state == _FINISHED_STATE:
            return self._exception
        with waiting_for_answer():
            return super().exception(timeout)

    def add_done_callback(self, fn: Callable[[Future[Any]], object]) -> None:
        """As :meth:`concurrent.futures.Future.add_done_callback`, but never on a library thread.

        When the library settles the future, ``fn`` runs on one of the client's
        callback workers; when the caller settles it (``cancel()``), or the
        future is already done, ``fn`` runs on the calling thread.  Adding a
        callback to a future nobody waits on makes no Condition.
        """
        with _CONDITION_LOCK:
            if "_condition" not in self.__dict__ and self._state == _PENDING_STATE:
                self._done_callbacks.append(fn)  # a settler finding no Condition runs it (set_result)
                return
        super().add_done_callback(fn)  # pending with a Condition, or done: as concurrent.futures does

    def _invoke_callbacks(self) -> None:
        """Once settled: run the done-callbacks here (the caller's cancel()), or hand them to a worker.

        When the library settles the future (see :data:`settling`) the future
        itself is handed over, no tuple per callback: inside
        :class:`deferred_callbacks` with the rest of its batch, else alone.
        """
        if not self.__dict__.get("_done_callbacks"):
            return
        if not settling.active:
            Future._invoke_callbacks(self)  # type: ignore[attr-defined]
            return
        deferred = settling.deferred
        if deferred is not None:
            deferred.append(self)
        else:
            self._callbacks.run_done_callbacks([self])

    def run_done_callbacks(self, log: Any) -> None:
        """Run the done-callbacks in the order they were added; log what one raises to ``log``.

        Called once, on a callback worker, for a future the library settled.
        """
        for fn in self.__dict__.get("_done_callbacks", ()):
            try:
                fn(self)
            except Exception:
                log.exception("exception calling callback for %r", self)


def _invalid_state(future: Future[Any]) -> Exception:
    from concurrent.futures import InvalidStateError  # noqa: PLC0415 - loaded with Future

    return InvalidStateError(f"{future._state}: {future!r}")


__all__ = ["RequestFuture"]
