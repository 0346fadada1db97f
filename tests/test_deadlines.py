"""The deadlines layer's shared step (``SingleFlight``) and its timeout renaming (``as_call_timeout``): pure tests.

No process, no socket: a step is a function that waits on an ``Event`` the
test sets.  Each test ends its flights (the step released, ``close()``), so
no thread is left behind.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future
from typing import Any, Dict, List, Optional

import pytest

from jsonrpc_threads.deadlines import Budget, Deadline, SingleFlight, as_call_timeout
from jsonrpc_threads.errors import InternalError, RequestTimeout, TransportClosed

#: The bound of every wait a test makes for a thread it started.
WAIT_S = 10.0
#: A deadline that passes quickly (the caller that is meant to give up).
SHORT_S = 0.2


class Step:
    """A step that waits for ``release`` (or its budget) and counts its runs; thread-safe."""

    def __init__(self, result: Any = "done", error: Optional[BaseException] = None) -> None:
        self.release = threading.Event()
        self.started = threading.Event()
        self.result = result
        self.error = error
        self.runs = 0
        self.threads: List[str] = []
        self.budgets: List[Budget] = []

    def __call__(self, budget: Budget) -> Any:
        self.runs += 1
        self.threads.append(threading.current_thread().name)
        self.budgets.append(budget)
        budget.doing = "the answer"
        self.started.set()
        assert self.release.wait(WAIT_S)
        if self.error is not None:
            raise self.error
        return self.result


def _in_thread(target: Any) -> Future[Any]:
    """Run ``target()`` on a thread; its outcome as a future."""
    future: Future[Any] = Future()

    def run() -> None:
        try:
            future.set_result(target())
        except BaseException as exc:
            future.set_exception(exc)

    threading.Thread(target=run, name="test-caller").start()
    return future


def test_callers_with_different_deadlines_share_one_run_on_a_thread_of_its_own() -> None:
    flight: SingleFlight[str] = SingleFlight("test-flight")
    step = Step()
    first = _in_thread(lambda: flight.join(Deadline.after(WAIT_S), step))
    assert step.started.wait(WAIT_S)
    second = _in_thread(lambda: flight.join(Deadline.after(None), step))
    third = _in_thread(lambda: flight.join(Deadline.after(2 * WAIT_S), step))
    step.release.set()
    assert [first.result(WAIT_S), second.result(WAIT_S), third.result(WAIT_S)] == ["done"] * 3
    flight.close()
    assert step.runs <= 3  # callers that came after the flight ended start a new one (once=False)
    assert step.threads[0] == "test-flight"  # never the caller's thread


def test_the_first_callers_deadline_passing_leaves_the_step_running_for_a_later_caller() -> None:
    flight: SingleFlight[str] = SingleFlight("test-flight", what="the handshake")
    step = Step()
    with pytest.raises(RequestTimeout) as caught:
        flight.join(Deadline.after(SHORT_S), step)
    assert caught.value.timeout == SHORT_S  # the caller's whole timeout
    assert caught.value.method == "the answer"  # what the step was waiting for
    assert "the handshake was still waiting for the answer" in caught.value.hint
    assert flight.running()
    later = _in_thread(lambda: flight.join(Deadline.after(WAIT_S), step))
    budget = step.budgets[0]
    assert budget.deadline.timeout == WAIT_S  # the later caller extended the step's budget
    step.release.set()
    assert later.result(WAIT_S) == "done"
    assert step.runs == 1
    flight.close()


def test_a_step_that_fails_fails_each_caller_with_its_own_copy_and_the_next_caller_starts_anew() -> None:
    flight: SingleFlight[str] = SingleFlight("test-flight")
    step = Step(error=InternalError(message="refused"))
    first = _in_thread(lambda: flight.join(Deadline.after(WAIT_S), step))
    assert step.started.wait(WAIT_S)
    second = _in_thread(lambda: flight.join(Deadline.after(WAIT_S), step))
    step.release.set()
    errors = [first.exception(WAIT_S), second.exception(WAIT_S)]
    assert all(isinstance(error, InternalError) and error.message == "refused" for error in errors)
    assert errors[0] is not errors[1]
    step.error = None
    assert flight.join(Deadline.after(WAIT_S), step) == "done"  # not sticky: tried again
    flight.close()


def test_once_keeps_the_outcome_a_failure_too() -> None:
    flight: SingleFlight[str] = SingleFlight("test-flight", once=True)
    step = Step(error=InternalError(message="refused"))
    step.release.set()
    for _ in range(2):
        with pytest.raises(InternalError):
            flight.join(Deadline.after(WAIT_S), step)
    assert step.runs == 1 and not flight.succeeded() and flight.result() is None
    flight.close()
    good: SingleFlight[str] = SingleFlight("test-flight", once=True)
    ok = Step(result="answer")
    ok.release.set()
    assert good.join(Deadline.after(WAIT_S), ok) == "answer"
    assert good.join(Deadline.after(0.0), ok) == "answer"  # done: even an expired deadline gets it
    assert ok.runs == 1 and good.succeeded() and good.result() == "answer"
    good.close()


def test_a_base_exception_in_the_step_reaches_the_callers_and_the_thread_ends() -> None:
    flight: SingleFlight[str] = SingleFlight("test-flight")
    step = Step(error=KeyboardInterrupt())
    step.release.set()
    with pytest.raises(KeyboardInterrupt):
        flight.join(Deadline.after(WAIT_S), step)
    step.error = None
    assert flight.join(Deadline.after(WAIT_S), step) == "done"
    flight.close()


def test_close_while_a_caller_waits_releases_it_and_refuses_new_flights() -> None:
    flight: SingleFlight[str] = SingleFlight("test-flight", closed_message="test closed")
    step = Step()
    waiting = _in_thread(lambda: flight.join(Deadline.after(None), step))
    assert step.started.wait(WAIT_S)
    flight.close(wait=0.0)  # the step does not end: its callers are released at once
    error = waiting.exception(WAIT_S)
    assert isinstance(error, TransportClosed) and "test closed" in str(error)
    with pytest.raises(TransportClosed):
        flight.join(Deadline.after(WAIT_S), step)
    step.release.set()
    flight.close()  # idempotent; the step's thread ends (its late outcome goes nowhere)
    assert step.runs == 1


def test_a_budget_that_runs_out_cannot_be_extended_and_the_next_caller_starts_anew() -> None:
    flight: SingleFlight[str] = SingleFlight("test-flight")
    gave_up = threading.Event()

    def bounded(budget: Budget) -> str:
        never: Future[str] = Future()
        try:
            return str(budget.wait_for(never, "initialize", lambda future: True))
        finally:
            gave_up.set()

    with pytest.raises(RequestTimeout) as caught:
        flight.join(Deadline.after(SHORT_S), bounded)
    assert caught.value.method == "initialize"
    assert gave_up.wait(WAIT_S)  # the step gave up at its budget: the first caller's deadline
    step = Step()
    step.release.set()
    assert flight.join(Deadline.after(WAIT_S), step) == "done"
    flight.close()


def test_as_call_timeout_names_the_whole_call() -> None:
    deadline = Deadline.after(4.0)
    step = RequestTimeout("initialize", 7, 1.5, "the server said nothing")
    whole = as_call_timeout(step, deadline)
    fields: Dict[str, Any] = {
        "method": "initialize",
        "request_id": 7,
        "timeout": 4.0,
        "hint": "the server said nothing",
    }
    assert {name: getattr(whole, name) for name in fields} == fields
    assert "timed out after 4.0s" in str(whole)
    assert as_call_timeout(whole, deadline) is whole  # nothing to change
    renamed = as_call_timeout(step, 9.0, method="tasks/get", hint="the card did not come")
    assert (renamed.method, renamed.timeout, renamed.hint) == ("tasks/get", 9.0, "the card did not come")
    assert as_call_timeout(step, None).timeout is None
