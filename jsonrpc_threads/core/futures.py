"""The ``concurrent.futures.Future`` of a ``request()``.

Theory of operation.  ``RequestFuture`` is a
``concurrent.futures.Future``: its state, waiters and callbacks work as
the standard library's.  It adds what a request needs, through public methods:

- ``cancel()`` also hands the request back to its client (``on_cancel``), which
  withdraws it and tells the peer; a second ``cancel()`` from any thread is
  harmless, and the future ends ``CANCELLED_AND_NOTIFIED``, as an executor
  leaves it, so ``wait()`` and ``as_completed()`` see it;
- a done-callback runs where ``concurrent.futures`` runs it when the caller
  settles the future (its own ``cancel()``), or when it is added to a future
  that is done already; but when the library settles it (answer, timeout,
  transport loss, close), which happens inside
  ``library_settling``, the callback is not run there (a reader
  or the timer thread) but collected, and the block hands all it collected to
  the client's callback workers at its end, each future's callbacks together
  and in the order they were added;
- ``result()`` and ``exception()`` mark a library worker that waits in them
  (``waiting_for_answer``), so a handler waiting for an answer
  never holds a worker the answer needs.

And one measured departure from ``Future`` as it is, for memory and for the
cycle collector, a strategy (``JsonRpcClient(futures="lean")``, the default):
the future is lean while nobody waits on it (see ``RequestFuture``), and the
``RequestTimeout`` of one nobody waits on is made when first asked for
(``RequestFuture.settle_timeout``).  ``PlainRequestFuture``
(``futures="plain"``) is ``Future`` as it is, with the same additions.

Whoever removes a request from the protocol core settles its future, once
(``RequestFuture.settle_result``); a future the caller cancelled meanwhile
is left as it is.  The client imports this module with its first
``request()``: a program that only makes blocking calls never loads
``concurrent.futures`` (nor the ``logging`` it imports).
"""

from __future__ import annotations

import threading
from concurrent.futures import Future, InvalidStateError
from typing import Any, Callable, List, Optional

from ..errors import RequestId, RequestTimeout
from ..runtime.logs import get_logger
from ..runtime.settling import collected_callbacks
from ..runtime.workers import current_worker, waiting_for_answer

logger = get_logger("jsonrpc_threads.core.futures")


class DeferredCallback:
    """A done-callback of a ``RequestFuture``; collected instead of run while the library settles."""

    __slots__ = ("fn", "future", "more")

    def __init__(self, fn: Callable[[Future[Any]], object]) -> None:
        self.fn = fn
        self.future: Optional[Future[Any]] = None  # set while it waits to run (no cycle otherwise)
        self.more: Optional[List[DeferredCallback]] = None  # the same future's later callbacks

    def __call__(self, future: Future[Any]) -> None:
        deferred = collected_callbacks()
        if deferred is None:  # the caller's own thread (cancel(), or added once done): run it here
            self.fn(future)
            return
        self.future = future
        last = deferred[-1] if deferred else None
        if last is not None and last.future is future:
            if last.more is None:
                last.more = []
            last.more.append(self)
        else:
            deferred.append(self)

    def run(self) -> None:
        """On a callback worker: this future's callbacks, in order; what each raises is logged."""
        future, more = self.future, self.more
        self.future = self.more = None
        for callback in [self, *more] if more else (self,):
            try:
                callback.fn(future)  # type: ignore[arg-type]
            except BaseException:  # SystemExit included: the worker goes on
                logger.exception("exception calling callback for %r", future)
            callback.future = None


#: Taken to make a lean future's Condition, and by a settler that finds none (see RequestFuture).
_CONDITION_LOCK = threading.Lock()


class _MadeOnFirstUse:
    """``Future._condition``, ``_waiters`` or ``_done_callbacks``: made the first time it is read.

    The first read stores the value in the instance dict (which then shadows
    this descriptor), under ``_CONDITION_LOCK``: a settler looking for the
    Condition under that lock either finds it or settles before anyone can wait.
    """

    def __init__(self, name: str, make: Callable[[], Any]) -> None:
        self._name = name
        self._make = make

    def __get__(self, instance: Optional[Future[Any]], owner: type) -> Any:
        if instance is None:
            return self
        with _CONDITION_LOCK:
            return instance.__dict__.setdefault(self._name, self._make())


#: Lean futures where ``Future.__init__`` sets exactly these fields (else plain ones: another Python).
_LEAN = set(vars(Future())) == {"_condition", "_state", "_result", "_exception", "_waiters", "_done_callbacks"}
_PENDING = "PENDING"
_FINISHED = "FINISHED"


class RequestFuture(Future):  # type: ignore[type-arg]
    """The future of one ``request()``: a Future whose ``cancel()`` withdraws the request.  Thread-safe.

    Lean while nobody waits on it: the one departure from ``Future`` as it is,
    and a measured one (``benchmarks/README.md``, the timers case).  Its
    Condition and its two lists are made the first time something needs them,
    and a future that nobody waits on is settled without one: under
    ``_CONDITION_LOCK``, which every maker of the Condition takes too, so
    a waiter either finds it settled or is woken by the settler, as ever.
    Done-callbacks added then go to the same list ``Future`` runs.  So 100,000
    pending requests cost about 360 bytes each, not 1.9 KB, and a burst of
    timeouts makes no Condition at all: with one each, the cycle collector's
    passes over them made the last of 100,000 timeouts 0.5 s late instead of
    0.03 s.  Where ``Future.__init__`` sets other fields than the known ones
    (another Python version), it is a plain ``Future`` instead.

    Attributes:
        request_id: the request's id.
    """

    #: False: a plain ``Future`` underneath (``PlainRequestFuture``, or another Python).
    lean = _LEAN

    if _LEAN:  # shadowed by the instance's own fields where a plain Future.__init__ set them
        _condition = _MadeOnFirstUse("_condition", threading.Condition)
        _waiters = _MadeOnFirstUse("_waiters", list)
        _done_callbacks = _MadeOnFirstUse("_done_callbacks", list)

    def __init__(self, request_id: RequestId, on_cancel: Callable[[RequestId, str], None]) -> None:
        if self.lean:
            self._state = _PENDING
            self._result = None
            self._exception = None
        else:
            super().__init__()
        self.request_id = request_id
        self._on_cancel = on_cancel

    def set_result(self, result: Any) -> None:
        """As ``concurrent.futures.Future.set_result`` (no Condition made when nobody waits)."""
        if not (self.lean and self._settle_lean(result, None)):
            super().set_result(result)

    def set_exception(self, exception: Optional[BaseException]) -> None:
        """As ``concurrent.futures.Future.set_exception`` (no Condition made when nobody waits)."""
        if not (self.lean and self._settle_lean(None, exception)):
            super().set_exception(exception)

    def _settle_lean(self, result: Any, exception: Optional[BaseException], hint: Optional[str] = None) -> bool:
        """Settle here when no Condition exists (nobody waits); False to settle as Future does.

        ``hint`` (with ``result`` the method, and the timeout in ``_timeout``):
        it timed out, and the RequestTimeout is made when first asked for.
        """
        state = self.__dict__
        with _CONDITION_LOCK:
            if "_condition" in state or self._state != _PENDING:
                return False  # a waiter made one (or a cancel() did): Future's own way
            if hint is None:
                self._result = result
                self._exception = exception
            else:  # plain values, no tuple: in a burst, nothing for the cycle collector to count
                self._timed_out_method = result
                self._timed_out_hint = hint
            self._state = _FINISHED
        for callback in state.get("_done_callbacks", ()):  # added before: nobody adds to it any more
            try:
                callback(self)
            except Exception:
                logger.exception("exception calling callback for %r", self)
        return True

    def settle_result(self, result: Any) -> None:
        """The library settles it (whoever ended the request in the core): unless the caller cancelled it."""
        if self.lean and self._settle_lean(result, None):
            return
        try:
            Future.set_result(self, result)
        except InvalidStateError:
            pass

    def settle_exception(self, error: BaseException) -> None:
        """As ``settle_result``, with an error."""
        if not (self.lean and self._settle_lean(None, error)):
            self._settle_error(error)

    def _settle_error(self, error: BaseException) -> None:
        try:
            Future.set_exception(self, error)
        except InvalidStateError:
            pass

    def settle_timeout(self, method: str, request_id: RequestId, timeout: Optional[float], hint: str) -> None:
        """As ``settle_exception`` with a ``RequestTimeout``, made when asked for.

        A future nobody waits on keeps the four facts, and its
        ``exception()`` (or ``result()``) makes the error the first time: a
        burst of 100,000 timeouts leaves no new object behind for the cycle
        collector, whose pass over them would stall the burst.
        """
        if self.lean:
            self._timed_out_timeout = timeout  # read only once it settled so
            if self._settle_lean(method, None, hint):
                return
        self._settle_error(RequestTimeout(method, request_id, timeout, hint))

    def _error(self) -> Optional[BaseException]:
        """The exception it settled with (made now if it timed out and nobody asked yet)."""
        error: Optional[BaseException] = self._exception
        if error is None and "_timed_out_hint" in self.__dict__:
            with _CONDITION_LOCK:  # made once, whoever asks first
                error = self._exception
                if error is None:
                    state = self.__dict__
                    error = self._exception = RequestTimeout(
                        state["_timed_out_method"],
                        self.request_id,
                        state["_timed_out_timeout"],
                        state["_timed_out_hint"],
                    )
        return error

    def cancel(self) -> bool:
        """Cancel the request: withdraw it, and tell the peer (where the client is configured to).

        Returns:
            True when the future is cancelled (now or before), False when it had settled.
        """
        return self.cancel_with_reason("Cancelled by the client")

    def cancel_with_reason(self, reason: str) -> bool:
        """As ``cancel``, telling the peer ``reason`` in the cancellation notification."""
        if not Future.cancel(self):
            return False
        claim = object()
        if vars(self).setdefault("_cancel_claim", claim) is not claim:  # atomic: one canceller goes on
            return True  # another cancel() got there first, and withdraws the request
        self.set_running_or_notify_cancel()  # CANCELLED -> CANCELLED_AND_NOTIFIED: wakes wait(), as_completed()
        self._on_cancel(self.request_id, reason)
        return True

    def add_done_callback(self, fn: Callable[[Future[Any]], object]) -> None:
        """As ``concurrent.futures.Future.add_done_callback``; never run on a reader or the timer thread.

        When the library settles the future, ``fn`` runs on one of the
        client's callback workers; when the caller settles it (``cancel()``),
        or the future is done already, ``fn`` runs on the calling thread.
        """
        callback = DeferredCallback(fn)
        if self.lean:
            with _CONDITION_LOCK:
                if "_condition" not in self.__dict__ and self._state == _PENDING:
                    self.__dict__.setdefault("_done_callbacks", []).append(callback)  # the settler runs it
                    return
        super().add_done_callback(callback)

    def result(self, timeout: Optional[float] = None) -> Any:
        """As ``concurrent.futures.Future.result``.

        A ``timeout`` here bounds this wait only: the request stays pending
        until its own deadline (``request(..., timeout=...)``) or ``cancel()``.
        """
        if self.lean and self._state == _FINISHED:  # settled: read without making a Condition
            error = self._error()
            if error is None:
                return self._result
            try:
                raise error
            finally:
                del error
        if current_worker() is None:
            return super().result(timeout)
        with waiting_for_answer():
            return super().result(timeout)

    def exception(self, timeout: Optional[float] = None) -> Optional[BaseException]:
        """As ``concurrent.futures.Future.exception`` (the same note on ``timeout``)."""
        if self.lean and self._state == _FINISHED:
            return self._error()
        if current_worker() is None:
            return super().exception(timeout)
        with waiting_for_answer():
            return super().exception(timeout)

    def __repr__(self) -> str:
        self._error()  # the repr names the exception
        return super().__repr__()


class PlainRequestFuture(RequestFuture):
    """The plain future of a ``request()`` (``JsonRpcClient(futures="plain")``): ``Future`` as it is.

    Its Condition and lists are made with it, it is settled as ``Future``
    settles, and a timeout's ``RequestTimeout`` is made at once: the reference
    the lean ``RequestFuture`` must behave like, run by the same tests.
    Thread-safe.
    """

    lean = False


def settle_result(target: RequestFuture, value: Any) -> None:
    """Settle with a result, unless the caller cancelled the future meanwhile."""
    target.settle_result(value)


def settle_exception(target: RequestFuture, error: BaseException) -> None:
    """Settle with an error, unless the caller cancelled the future meanwhile."""
    target.settle_exception(error)


__all__ = ["DeferredCallback", "PlainRequestFuture", "RequestFuture", "settle_exception", "settle_result"]
