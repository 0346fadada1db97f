"""A step several callers share, run once for all of them (a single flight), and the one way to name a call's timeout.

Theory of operation.  A handshake, a session's renewal, an agent card's
fetch, an authorization: a step that many calls may need at the same moment
runs once, and every call that needs it waits for that one outcome.  The
first caller that finds no flight in progress starts one: the step runs on a
thread of its own (``SingleFlight(thread_name=...)``), never on the caller's,
because the caller's deadline may pass while others still want the step, and
the step must not die with it.  Every caller, the first included, then waits
on the flight's future no longer than its own ``Deadline``; one whose
deadline passes first gets ``RequestTimeout`` naming its own whole timeout
and what the step was waiting for, and the step goes on for the others.

The step's budget (``Budget``) is the latest deadline of the callers that
joined the flight (none when one of them has none): a caller that joins
later with a later deadline extends it.  A step that waits through
``Budget.wait_for`` (or reads ``Budget.deadline`` each time it waits) spends
what is left of the budget and starts no timeout of its own; once the budget
has run out the step gives up (decided under the budget's lock, so no caller
extends a step that is giving up).  So the deadline of the calls that caused
the step bounds it, as if one of them had run it, yet no caller waits past its
own deadline for another's step.  A step may ignore the budget (a handshake
whose first request cannot be sent twice waits until the connection ends).

One choice differs between users, and it is the constructor's ``once``:

- ``once=False`` (a renewal, a fetch, an authorization): the outcome goes to
  the callers of that flight; the next caller after it ended starts a new
  flight.  A failure is not forever (a network blip), and a success is kept,
  if at all, by the user (the session, the card, the token).
- ``once=True`` (a handshake the protocol allows once per connection): the
  step runs at most once and its outcome, success or failure, is every later
  caller's (``succeeded``, ``result``).

An error of the step (a ``BaseException`` too) reaches every caller as a copy
(each raises its own, with a fresh traceback).  ``close`` refuses new flights
(``TransportClosed``) and waits, bounded, for a step still running; a caller
still waiting then gets ``TransportClosed`` at once.

``as_call_timeout`` is the other half of the rule: a step that had only what
was left of a call's deadline times out with the seconds it had; the caller
re-raises it naming the whole call's timeout.

Thread-safety: every method may be called from any thread.  No lock is held
while the step runs or while a caller waits.
"""

from __future__ import annotations

import copy
import threading
import time
from concurrent.futures import Future, InvalidStateError
from concurrent.futures import wait as futures_wait
from typing import Any, Callable, Generic, Optional, TypeVar, Union

from ..errors import RequestTimeout, TransportClosed
from .timeouts import Deadline, wait_slice

T = TypeVar("T")

#: How long ``SingleFlight.close`` waits for a step still running (close what it waits on first).
STEP_JOIN_S = 2.0


def as_call_timeout(
    exc: RequestTimeout,
    whole: Union[Deadline, float, None],
    *,
    method: Optional[str] = None,
    hint: Optional[str] = None,
) -> RequestTimeout:
    """``exc`` naming the whole call's timeout: a step had only what was left of the call's deadline.

    Use it where a public call re-raises a step's timeout::

        try:
            rpc.call(method, params, timeout=deadline.remaining())
        except RequestTimeout as exc:
            raise as_call_timeout(exc, deadline) from None

    Args:
        exc: the step's timeout.
        whole: the call's ``Deadline`` (its ``timeout`` is taken), or the seconds to name.
        method: the call's method, when the error should name it rather than the step's.
        hint: replaces the step's hint (``None``: keeps it).

    Returns:
        ``exc`` itself when it already says all that, else a new ``RequestTimeout``
        with the same request id.  Thread-safe; raises nothing.
    """
    timeout = whole.timeout if isinstance(whole, Deadline) else whole
    name = exc.method if method is None else method
    text = exc.hint if hint is None else hint
    if exc.timeout == timeout and name == exc.method and text == exc.hint:
        return exc
    return RequestTimeout(name, exc.request_id, timeout, text)


class Budget:
    """What a shared step may spend: the latest deadline among the callers that joined it.  Thread-safe.

    Attributes:
        doing: what the step waits for now (a method name), for the messages of callers that give up.
        note: what the step learnt on its way that may explain a timeout (``""`` for nothing).
    """

    def __init__(self, deadline: Deadline, doing: str = "") -> None:
        # _lock guards _deadline and _spent.
        self._lock = threading.Lock()
        self._deadline = deadline
        self._spent = False  # the step gave up at the deadline: nobody may extend it any more
        self.doing = doing
        self.note = ""

    @property
    def deadline(self) -> Deadline:
        """The budget's deadline as it is now (it only ever moves later)."""
        with self._lock:
            return self._deadline

    def extend(self, deadline: Deadline) -> bool:
        """Let the step run until ``deadline`` too, when that is later; False once the step gave up."""
        with self._lock:
            if self._spent:
                return False
            current = self._deadline
            if current.at is not None and (deadline.at is None or deadline.at > current.at):
                self._deadline = deadline
            return True

    def spend(self) -> bool:
        """True (and no extension from now on) when the deadline has passed; False while it has not."""
        with self._lock:
            if self._deadline.expired:
                self._spent = True
            return self._spent

    def remaining(self) -> Optional[float]:
        """Seconds left; ``None`` for no deadline."""
        return self.deadline.remaining()

    def wait_for(
        self,
        future: Future[Any],
        method: str,
        give_up: Callable[[Future[Any]], bool],
        cap: Optional[float] = None,
        hint: str = "",
    ) -> Any:
        """The result of a request of the step, waited for no longer than the budget (and ``cap`` seconds).

        Args:
            future: the request's future (sent without a deadline of its own).
            method: its method, for the error.
            give_up: withdraws the request when the wait ends first (False: it was answered meanwhile).
            cap: the most seconds this one wait may take, or ``None``.
            hint: added to the ``RequestTimeout``.

        Raises:
            RequestTimeout: the budget (or the cap) ran out first; its ``timeout``
                is the seconds of the deadline that ran out.
            JsonRpcError: as the request.
        """
        self.doing = method
        cap_at = None if cap is None else time.monotonic() + cap
        while True:
            deadline = self.deadline
            by_cap = cap_at is not None and (deadline.at is None or cap_at < deadline.at)
            until = cap_at if by_cap else deadline.at
            if until is not None and time.monotonic() >= until and not future.done():
                if not by_cap and not self.spend():
                    continue  # a caller extended the budget meanwhile
                if give_up(future):
                    timeout = cap if by_cap else deadline.timeout
                    raise RequestTimeout(method, getattr(future, "request_id", None), timeout, hint)
                return future.result()  # answered meanwhile
            done, _ = futures_wait((future,), timeout=wait_slice(until))
            if done:
                return future.result()


class SingleFlight(Generic[T]):
    """One step that many callers may need at once: see the module docstring.  Thread-safe.

    Args:
        thread_name: the name of the step's thread (``jsonrpc-lsp-handshake[<label>]``).
        once: ``True``: the step runs at most once and its outcome, a failure
            too, is every later caller's; ``False``: each flight's outcome goes
            to its callers, and the next caller after it starts a new flight.
        what: the step, for the message of a caller that gives up (``"the handshake"``).
        doing: what the step waits for at first (``Budget.doing``), for the same message.
        closed_message: the message of the ``TransportClosed`` raised once ``close`` was called.
    """

    def __init__(
        self,
        thread_name: str,
        *,
        once: bool = False,
        what: str = "the step",
        doing: str = "",
        closed_message: str = "closed",
    ) -> None:
        self._thread_name = thread_name
        self._once = once
        self._what = what
        self._doing = doing
        self._closed_message = closed_message
        # _lock guards _future, _budget, _thread and _closed.
        self._lock = threading.Lock()
        self._future: Optional[Future[T]] = None
        self._budget: Optional[Budget] = None
        self._thread: Optional[threading.Thread] = None
        self._closed = False

    def join(
        self,
        deadline: Deadline,
        step: Callable[[Budget], T],
        *,
        method: Optional[str] = None,
        clue: Optional[Callable[[], str]] = None,
        what: Optional[str] = None,
    ) -> T:
        """Join the flight in progress (or start one running ``step(budget)``); its result, by ``deadline``.

        Args:
            deadline: this caller's deadline.
            step: the step, run on the flight's thread only when this call starts the flight.
            method: the method a ``RequestTimeout`` names (``None``: what the step waits for).
            clue: called when this caller gives up; what may explain it (``""`` for nothing).
            what: the step, for that message (``None``: the constructor's).

        Returns:
            The step's result.

        Raises:
            RequestTimeout: ``deadline`` passed first (the flight goes on);
                its ``timeout`` is ``deadline.timeout``.
            TransportClosed: ``close`` was called (before the flight started, or
                while this caller waited for a step that did not end).
            BaseException: a copy of the step's error.
        """
        future, budget = self._board(deadline, step)
        return wait_for_outcome(
            future, deadline, lambda: self._timed_out(budget, deadline, method, clue, what or self._what)
        )

    def succeeded(self) -> bool:
        """True once a flight ended well and is still kept (``once=True``: for good)."""
        future = self._future
        return future is not None and future.done() and future.exception() is None

    def result(self) -> Optional[T]:
        """The kept flight's result (``None`` unless ``succeeded``)."""
        future = self._future
        if future is None or not future.done() or future.exception() is not None:
            return None
        return future.result()

    def running(self) -> bool:
        """True while a flight's step runs."""
        future = self._future
        return future is not None and not future.done()

    def close(self, wait: float = STEP_JOIN_S) -> None:
        """Refuse new flights; wait (at most ``wait`` seconds) for a step still running, then release its callers.

        Close what the step waits on (its connection) first.  Idempotent; a
        caller that still waits afterwards gets ``TransportClosed``.
        """
        with self._lock:
            self._closed = True
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(wait)
        with self._lock:
            future = self._future
            if future is not None and not future.done():
                _settle(future, None, TransportClosed(self._closed_message))
                if not self._once:
                    self._future = self._budget = None

    # -- internals ---------------------------------------------------------------------------

    def _board(self, deadline: Deadline, step: Callable[[Budget], T]) -> tuple[Future[T], Budget]:
        with self._lock:
            future, budget = self._future, self._budget
            if future is not None and budget is not None and (budget.extend(deadline) or self._once):
                return future, budget  # the one flight, or one in progress that is not giving up
            future = Future()
            budget = Budget(deadline, self._doing)
            if self._closed:
                future.set_exception(TransportClosed(self._closed_message))
                if self._once:
                    self._future, self._budget = future, budget
                return future, budget
            self._future, self._budget = future, budget
            thread = threading.Thread(target=self._run, args=(future, budget, step), name=self._thread_name)
            thread.daemon = True
            self._thread = thread
            thread.start()
            return future, budget

    def _run(self, future: Future[T], budget: Budget, step: Callable[[Budget], T]) -> None:
        try:
            result = step(budget)
        except BaseException as exc:  # handed to every caller; nothing is left to raise it here
            self._end(future, None, exc)
            return
        self._end(future, result, None)

    def _end(self, future: Future[T], result: Optional[T], error: Optional[BaseException]) -> None:
        with self._lock:
            if not self._once and self._future is future:
                self._future = self._budget = None  # over: the next caller starts a new flight
            _settle(future, result, error)

    @staticmethod
    def _timed_out(
        budget: Budget, deadline: Deadline, method: Optional[str], clue: Optional[Callable[[], str]], what: str
    ) -> RequestTimeout:
        doing = budget.doing or what
        hint = f"{what} was still waiting for {doing}" if budget.doing else f"{what} was still running"
        extra = [text for text in (budget.note, clue() if clue is not None else "") if text]
        if extra:
            hint = "; ".join([hint, *extra])
        return RequestTimeout(method if method is not None else doing, None, deadline.timeout, hint)


def wait_for_outcome(future: Future[T], deadline: Deadline, timed_out: Callable[[], BaseException]) -> T:
    """Wait for a shared step's ``future`` no longer than this caller's ``deadline``.  Thread-safe.

    Returns:
        The step's result.

    Raises:
        BaseException: what ``timed_out()`` makes, when ``deadline`` passed
            first (the step goes on for the others); a copy of the step's
            error (one error for many callers: each raises its own, with a
            fresh traceback).
    """
    if not future.done():
        done, _ = futures_wait((future,), timeout=wait_slice(deadline.at))
        while not done and not deadline.expired:
            done, _ = futures_wait((future,), timeout=wait_slice(deadline.at))
        if not done:
            raise timed_out()
    error = future.exception()
    if error is not None:
        raise _copy(error) from None
    return future.result()


def _settle(future: Future[Any], result: Any, error: Optional[BaseException]) -> None:
    # Called with the flight's lock held (Future callbacks are never added here: no user code runs).
    try:
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)
    except InvalidStateError:
        pass  # close() released the callers first; the late outcome goes nowhere


def _copy(error: BaseException) -> BaseException:
    """A copy of ``error`` for one caller (the original if it cannot be copied)."""
    try:
        return copy.copy(error)
    except Exception:
        return error


__all__ = ["STEP_JOIN_S", "Budget", "SingleFlight", "as_call_timeout", "wait_for_outcome"]
