"""A step many callers share (a handshake, a session's renewal): one flight, each caller waiting with its own deadline.

Theory of operation.  The first caller that needs the step starts it on a
thread of its own (``jsonrpc-mcp-handshake[<label>]``), never on the
caller's: that caller's deadline may pass while others still want the step,
and the step must not die with it.  Every caller, the first included, then
waits on the flight's future until its own deadline; one whose deadline
passes first gets ``RequestTimeout`` naming the
wait the step was in (``initialize``, ``server/discover``), and the step goes
on for the others.

The step's budget (``Budget``) is the latest deadline of any caller that
joined the flight (none when one of them has none): a caller that joins later
with a later deadline extends it.  Each wait inside the step spends what is
left of the budget (``Budget.wait_for``) and starts no timeout of its
own; when the budget runs out the step gives up (decided under the budget's
lock, so no caller extends a step that is giving up) and fails, and the next
caller starts a new flight.  So the deadline of the call that caused the step bounds it, as
if the call had run the step itself, yet no caller waits past its own deadline
for another's step, however long that one allowed it.

Thread-safety: every method may be called from any thread.  No lock is held
while the step runs or while a caller waits.
"""

from __future__ import annotations

import copy
import threading
import time
from concurrent.futures import Future
from concurrent.futures import wait as futures_wait
from typing import Any, Callable, Generic, Optional, TypeVar

from .._deadlines import Deadline, wait_slice
from ..errors import RequestTimeout

T = TypeVar("T")

#: How long ``SharedStep.close`` waits for a step still running (its waits end when the transport closes).
STEP_JOIN_S = 2.0


class Budget:
    """What a shared step may spend: the latest deadline among the callers that joined it.  Thread-safe.

    Attributes:
        doing: what the step waits for now (a method name), for the messages of callers that give up.
        note: what the step learnt on its way that may explain a timeout (``""`` for nothing).
    """

    def __init__(self, deadline: Deadline) -> None:
        # _lock guards _deadline and _spent.
        self._lock = threading.Lock()
        self._deadline = deadline
        self._spent = False  # the step gave up at the deadline: nobody may extend it any more
        self.doing = "the handshake"
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

    def _spend(self) -> bool:
        """True (and no extension from now on) when the deadline has passed; False when it was extended."""
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
                if not by_cap and not self._spend():
                    continue  # a caller extended the budget meanwhile
                if give_up(future):
                    timeout = cap if by_cap else deadline.timeout
                    raise RequestTimeout(method, getattr(future, "request_id", None), timeout, hint)
                return future.result()  # answered meanwhile
            done, _ = futures_wait((future,), timeout=wait_slice(until))
            if done:
                return future.result()


class SharedStep(Generic[T]):
    """One step that many callers may need at once: see the module docstring.

    Args:
        label: names the step's thread.
    """

    def __init__(self, label: str) -> None:
        self._label = label
        # _lock guards _future, _budget and _thread (the flight in progress, if any).
        self._lock = threading.Lock()
        self._future: Optional[Future[T]] = None
        self._budget: Optional[Budget] = None
        self._thread: Optional[threading.Thread] = None

    def join(self, deadline: Deadline, work: Callable[[Budget], T], what: str) -> T:
        """Join the flight in progress (or start one running ``work(budget)``); its result, by ``deadline``.

        Args:
            deadline: this caller's deadline.
            work: the step, run only when this call starts the flight.
            what: the step, for the message of a caller that gives up
                (``"the handshake"``, ``"the session's renewal"``).

        Raises:
            RequestTimeout: ``deadline`` passed first (the flight goes on).
            JsonRpcError: the step failed (a copy of its error, for each caller).
        """
        with self._lock:
            future, budget = self._future, self._budget
            if future is None or budget is None or not budget.extend(deadline):  # none, or one giving up
                future = self._future = Future()
                budget = self._budget = Budget(deadline)
                thread = threading.Thread(
                    target=self._run, args=(future, budget, work), name=f"jsonrpc-mcp-handshake[{self._label}]"
                )
                thread.daemon = True
                self._thread = thread
                thread.start()

        def timed_out() -> RequestTimeout:
            hint = f"{what} was still waiting for {budget.doing}" + (f"; {budget.note}" if budget.note else "")
            return RequestTimeout(budget.doing, None, deadline.timeout, hint)

        return wait_for_outcome(future, deadline, timed_out)

    def close(self) -> None:
        """Wait (bounded, ``STEP_JOIN_S``) for a step still running; call after closing its transport."""
        with self._lock:
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(STEP_JOIN_S)

    def _run(self, future: Future[T], budget: Budget, work: Callable[[Budget], T]) -> None:
        try:
            result = work(budget)
        except BaseException as exc:  # handed to every caller; nothing is left to raise it here
            with self._lock:
                self._forget(future)
            future.set_exception(exc)
            return
        with self._lock:
            self._forget(future)
        future.set_result(result)

    def _forget(self, future: Future[T]) -> None:
        # Called with _lock held: the flight is over; the next caller starts a new one.
        if self._future is future:
            self._future = None
            self._budget = None


def wait_for_outcome(future: Future[T], deadline: Deadline, timed_out: Callable[[], BaseException]) -> T:
    """Wait for a shared step's ``future`` no longer than this caller's ``deadline``.

    Returns:
        The step's result.

    Raises:
        BaseException: what ``timed_out()`` makes, when ``deadline`` passed
            first (the step goes on for the others); a copy of the step's
            error (one error for many callers: each raises its own, with a
            fresh traceback).
    """
    done, _ = futures_wait((future,), timeout=wait_slice(deadline.at))
    while not done and not deadline.expired:
        done, _ = futures_wait((future,), timeout=wait_slice(deadline.at))
    if not done:
        raise timed_out()
    error = future.exception()
    if error is not None:
        raise copy.copy(error) from None
    return future.result()


__all__ = ["STEP_JOIN_S", "Budget", "SharedStep", "wait_for_outcome"]
