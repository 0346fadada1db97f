"""The ways the core once broke its promise (issue 11).

Every test here failed before the redesign: a hung caller, a dead timer thread,
a future never settled or settled twice, user code on a shared thread.  They
test the client's own logic, so they run against the in-memory peer
(``tests/helpers.py``, over ``jsonrpc_threads.testing.MemoryTransport``); those
about a pipe (a peer that stops reading, an interrupt mid-write) against a real
child process.
"""

from __future__ import annotations

import concurrent.futures
import gc
import logging
import subprocess
import sys
import textwrap
import threading
import time
from concurrent.futures import Future
from decimal import Decimal
from fractions import Fraction
from typing import Any, Callable, Iterator, List

import pytest

from jsonrpc_threads import (
    InternalError,
    JsonRpcClient,
    RequestTimeout,
    StdioTransport,
    TransportClosed,
)
from jsonrpc_threads.deadlines import Deadline, check_timeout
from jsonrpc_threads.observe import add_close_listener, trace_wire
from jsonrpc_threads.runtime.scheduler import Scheduler, default_scheduler

from .conftest import peer_command
from .helpers import scripted

WAIT_S = 20.0


def make_client(**kwargs: Any) -> JsonRpcClient:
    return JsonRpcClient(scripted(), **kwargs)


@pytest.fixture
def client() -> Iterator[JsonRpcClient]:
    with make_client() as c:
        yield c


@pytest.fixture
def stdio_client() -> Iterator[JsonRpcClient]:
    with JsonRpcClient(StdioTransport(peer_command("stdio_peer"))) as c:
        yield c


def quick_timeout_still_fires(client: JsonRpcClient) -> None:
    started = time.monotonic()
    with pytest.raises(RequestTimeout):
        client.call("never", timeout=0.2)
    assert time.monotonic() - started < 5


# -- 1. infinite timeouts ---------------------------------------------------------------


@pytest.mark.parametrize("endless", [float("inf"), 1e10, 1e300])
def test_an_endless_timeout_means_no_deadline_and_the_timer_thread_lives_on(
    client: JsonRpcClient, endless: float
) -> None:
    assert client.call("echo", ["x"], timeout=endless) == ["x"]
    future = client.request("never", timeout=endless)
    assert not future.done()
    quick_timeout_still_fires(client)  # the process-wide timer thread still works
    with make_client(default_timeout=endless) as other:
        assert other.call("echo", [1]) == [1]
        assert other.default_timeout is None
    assert future.cancel()


def test_timeouts_are_checked_where_they_enter(client: JsonRpcClient) -> None:
    for bad, error in ((float("nan"), ValueError), (-1, ValueError), (True, TypeError), ("1", TypeError)):
        with pytest.raises(error):
            client.call("echo", timeout=bad)
        with pytest.raises(error):
            client.request("echo", timeout=bad)
        with pytest.raises(error):
            client.notify("echo", timeout=bad)
    with pytest.raises(RequestTimeout):
        client.call("never", timeout=0)  # 0 expires at once


def test_the_scheduler_refuses_nan_and_survives_endless_deadlines() -> None:
    scheduler = Scheduler("test-timer")
    try:
        with pytest.raises(ValueError):
            scheduler.call_later(float("nan"), print)
        endless = scheduler.call_later(float("inf"), print)
        huge = scheduler.call_at(1e300, print)
        fired = threading.Event()
        scheduler.call_later(0.05, fired.set)
        assert fired.wait(WAIT_S)
        assert endless.cancel() and huge.cancel()
    finally:
        scheduler.stop(WAIT_S)


def test_a_timer_callback_raising_base_exceptions_does_not_end_the_timer_thread(
    caplog: pytest.LogCaptureFixture,
) -> None:
    scheduler = Scheduler("test-timer")
    fired = threading.Event()

    def leave() -> None:
        raise SystemExit(1)

    def interrupt() -> None:
        raise KeyboardInterrupt

    try:
        scheduler.call_later(0.01, leave)
        scheduler.call_later(0.02, interrupt)
        scheduler.call_later(0.05, fired.set)
        assert fired.wait(WAIT_S)
        assert scheduler.thread is not None and scheduler.thread.is_alive()
    finally:
        scheduler.stop(WAIT_S)


def test_timeouts_that_come_due_together_each_get_their_own_error(client: JsonRpcClient) -> None:
    # Held back behind a slow timer, 300 deadlines come due in one wake-up and are expired as
    # one batch: each future still gets its own RequestTimeout, with its own id, once.
    holding, release = threading.Event(), threading.Event()
    default_scheduler().call_later(0, lambda: (holding.set(), release.wait(WAIT_S)))
    assert holding.wait(WAIT_S)
    try:
        futures = [client.request("never", timeout=0.001) for _ in range(300)]
        answered = client.request("echo", ["kept"], timeout=0.001)
        assert client.call("echo", ["sync"], timeout=WAIT_S) == ["sync"]  # the answer is in before it is due
    finally:
        release.set()
    errors = [future.exception(WAIT_S) for future in futures]
    assert all(isinstance(error, RequestTimeout) for error in errors)
    assert [error.request_id for error in errors] == [future.request_id for future in futures]  # type: ignore[union-attr]
    assert len({id(error) for error in errors}) == 300
    assert answered.result(WAIT_S) == ["kept"]
    assert client.stats()["timeouts"] == 300


# -- 2, 3, 4. handlers, the notification lane and close() -----------------------------------


def test_handlers_that_call_back_never_starve_the_notification_the_peer_sends_first() -> None:
    # Every handler worker is inside a handler calling back into the client, and the
    # peer sends a notification before it answers them: nothing may wait for a worker.
    with make_client(handler_workers=4) as client:
        notes: List[Any] = []
        client.on_notification("progress", notes.append)
        client.on_request(
            "sample", lambda params: client.call("notify", {"method": "progress", "params": {"n": 1}}, timeout=WAIT_S)
        )
        futures = [client.request("reverse_call", {"method": "sample"}, timeout=WAIT_S) for _ in range(8)]
        started = time.monotonic()
        assert client.call("echo", ["unrelated"], timeout=5) == ["unrelated"]
        for future in futures:
            assert future.result(WAIT_S) == {"result": 1}
        assert time.monotonic() - started < WAIT_S / 2
        assert len(notes) == 8


def test_close_settles_a_call_whose_answer_waits_behind_a_notification_handler() -> None:
    client = make_client()
    release, in_handler = threading.Event(), threading.Event()

    def slow(params: Any) -> None:
        in_handler.set()
        release.wait(WAIT_S)

    client.on_notification("note", slow)
    try:
        # The peer sends the notification, then the answer: the answer waits for the handler.
        future = client.request("notify", {"method": "note"}, timeout=None)
        assert in_handler.wait(WAIT_S)
        closer = threading.Thread(target=client.close)
        closer.start()
        # Settled by close(): with the answer it had when that answer was already in
        # (behind the busy handler), with TransportClosed if close() came first. Never stranded.
        outcome = future.exception(WAIT_S)
        assert outcome is None or isinstance(outcome, TransportClosed), repr(outcome)
        if outcome is None:
            assert future.result() == 1
        release.set()
        closer.join(WAIT_S)
    finally:
        release.set()
        client.close()


def test_a_notification_handler_may_close_the_client() -> None:
    client = make_client()
    closed = threading.Event()

    def close_now(params: Any) -> None:
        client.close()
        closed.set()

    client.on_notification("note", close_now)
    try:
        started = time.monotonic()
        future = client.request("notify", {"method": "note"}, timeout=None)
        assert closed.wait(WAIT_S)
        outcome = future.exception(WAIT_S) if not future.cancelled() else None
        assert outcome is None or isinstance(outcome, TransportClosed)
        assert time.monotonic() - started < WAIT_S / 2
    finally:
        client.close()


def test_a_batch_inside_a_notification_handler_is_answered_at_once(client: JsonRpcClient) -> None:
    results: List[Any] = []
    done = threading.Event()

    def handler(params: Any) -> None:
        with client.batch() as batch:
            first = batch.request("echo", ["a"])
            second = batch.request("add", [1, 2])
        results.extend([first.result(WAIT_S), second.result(WAIT_S)])
        results.append(client.call("echo", ["c"], timeout=WAIT_S))
        done.set()

    client.on_notification("note", handler)
    started = time.monotonic()
    assert client.call("notify", {"method": "note"}) == 1
    assert done.wait(WAIT_S)
    assert results == [["a"], 3, ["c"]]
    assert time.monotonic() - started < 5


def test_progress_reaches_its_handler_before_the_call_returns(client: JsonRpcClient) -> None:
    seen: List[int] = []

    def slow_progress(params: Any) -> None:
        time.sleep(0.01)  # a slow callback: the answer still waits for it
        seen.append(params["n"])

    client.on_notification("progress", slow_progress)
    for _ in range(5):
        before = len(seen)
        assert client.call("notify", {"method": "progress", "params": {"n": 1}, "count": 3}) == 3
        assert len(seen) == before + 3


def test_an_answer_waiting_for_a_stuck_notification_handler_arrives_by_its_deadline(client: JsonRpcClient) -> None:
    release = threading.Event()
    client.on_notification("note", lambda params: release.wait(WAIT_S))
    try:
        started = time.monotonic()
        # The answer arrived but waits behind the stuck handler: at the deadline it is delivered anyway.
        assert client.call("notify", {"method": "note"}, timeout=0.5) == 1
        assert 0.4 < time.monotonic() - started < 5
    finally:
        release.set()


# -- 5. user code never on a shared thread -----------------------------------------------------


def test_done_callbacks_of_library_settled_futures_run_on_callback_workers(client: JsonRpcClient) -> None:
    names: List[str] = []
    done = threading.Semaphore(0)

    def record(future: Future[Any]) -> None:
        names.append(threading.current_thread().name)
        done.release()

    client.request("echo", [1]).add_done_callback(record)  # settled on the reader thread
    client.request("never", timeout=0.05).add_done_callback(record)  # settled on the timer thread
    for _ in range(2):
        assert done.acquire(timeout=WAIT_S)
    assert all(name.startswith("jsonrpc-callback[") for name in names), names
    cancelled = client.request("never")
    cancelled.cancel()
    cancelled.add_done_callback(record)  # already done: runs here, as concurrent.futures does
    assert names[-1] == threading.current_thread().name


def test_done_callbacks_added_before_and_after_a_waiter_all_run_once(client: JsonRpcClient) -> None:
    # add_done_callback makes no Condition: the settler runs what was added before anybody
    # waited, and a waiter arriving later (which makes one) changes nothing about that.
    ran: List[str] = []
    lock = threading.Lock()
    done = threading.Semaphore(0)

    def record(label: str) -> Callable[[Future[Any]], None]:
        def callback(future: Future[Any]) -> None:
            with lock:
                ran.append(f"{label}:{threading.current_thread().name.startswith('jsonrpc-callback[')}")
            done.release()

        return callback

    quiet = client.request("sleep", {"seconds": 0.1, "result": "quiet"})  # still pending when the callback goes in
    quiet.add_done_callback(record("before-settle"))
    assert quiet.result(WAIT_S) == "quiet"
    assert done.acquire(timeout=WAIT_S)
    quiet.add_done_callback(record("after-settle"))  # done already: runs here
    assert ran == ["before-settle:True", "after-settle:False"]

    ran.clear()
    slow = client.request("sleep", {"seconds": 0.3})
    slow.add_done_callback(record("no-condition-yet"))
    with pytest.raises(concurrent.futures.TimeoutError):
        slow.exception(0.001)  # a waiter: makes the Condition while the request is pending
    assert "_condition" in vars(slow)
    slow.add_done_callback(record("with-condition"))
    slow.result(WAIT_S)
    for _ in range(2):
        assert done.acquire(timeout=WAIT_S)
    assert ran == ["no-condition-yet:True", "with-condition:True"]

    unwaited = client.request("echo", ["x"], timeout=WAIT_S)
    unwaited.add_done_callback(record("unwaited"))
    assert done.acquire(timeout=WAIT_S)
    assert "_condition" not in vars(unwaited)  # nobody waited: settled without a Condition


def test_a_blocking_done_callback_stalls_no_timeout_of_any_client() -> None:
    release, blocking = threading.Event(), threading.Event()
    with make_client() as first, make_client() as second:
        # A retry from a done-callback after a timeout: it blocks, on a worker of the first client.
        blocked = first.request("never", timeout=0.05)
        blocked.add_done_callback(
            lambda f: (first.call("sleep", {"seconds": 0.2}), blocking.set(), release.wait(WAIT_S))
        )
        assert blocking.wait(WAIT_S)
        started = time.monotonic()
        with pytest.raises(RequestTimeout):
            second.call("never", timeout=0.2)
        with pytest.raises(RequestTimeout):
            second.request("never", timeout=0.2).result(WAIT_S)
        assert time.monotonic() - started < 3
        release.set()


def test_timeouts_settled_together_hand_their_callbacks_over_together(client: JsonRpcClient) -> None:
    # A burst of timeouts (one timer wake-up, or close()) hands its callbacks to the workers as a
    # batch; a callback that blocks holds up its own worker, never the rest of the batch.
    release = threading.Event()
    ran: List[int] = []
    threads: List[str] = []
    lock = threading.Lock()
    all_others, all_done = threading.Event(), threading.Event()
    count = 200

    def record(index: int) -> Any:
        def callback(future: Future[Any]) -> None:
            assert isinstance(future.exception(), RequestTimeout)
            with lock:
                threads.append(threading.current_thread().name)
            if index == 0:
                release.wait(WAIT_S)  # the first one blocks until the test lets it go
            with lock:
                ran.append(index)
                if len(ran) == count - 1 and 0 not in ran:
                    all_others.set()
                if len(ran) == count:
                    all_done.set()

        return callback

    futures = [client.request("never", timeout=0.2) for _ in range(count)]
    for index, future in enumerate(futures):
        future.add_done_callback(record(index))
    assert all_others.wait(WAIT_S), f"{len(ran)} of {count - 1} ran while one callback blocked"
    release.set()
    for future in futures:
        assert isinstance(future.exception(WAIT_S), RequestTimeout)
    assert all_done.wait(WAIT_S)  # the blocked callback finished on its worker
    assert sorted(ran) == list(range(count))
    assert all(name.startswith("jsonrpc-callback[") for name in threads), set(threads)


def test_close_runs_the_callbacks_of_every_request_it_fails() -> None:
    ran = threading.Semaphore(0)
    client = make_client()
    try:
        futures = [client.request("never") for _ in range(500)]
        for future in futures:
            future.add_done_callback(lambda f: ran.release())
    finally:
        client.close()
    for future in futures:
        assert isinstance(future.exception(0), TransportClosed)
    for _ in range(500):
        assert ran.acquire(timeout=WAIT_S)


def test_a_done_callback_may_call_the_client_without_deadlocking_the_reader(client: JsonRpcClient) -> None:
    results: List[Any] = []
    done = threading.Event()

    def again(future: Future[Any]) -> None:
        results.append(client.call("echo", [future.result()], timeout=None))
        done.set()

    client.request("echo", ["first"]).add_done_callback(again)
    assert done.wait(WAIT_S)
    assert results == [[["first"]]]


# -- 6, 10. a peer that does not read; interrupts mid-write -------------------------------------


def test_a_peer_that_never_reads_stdin_cannot_hold_a_caller_past_its_deadline(stdio_client: JsonRpcClient) -> None:
    client = stdio_client
    client.request("stall", timeout=None)  # the peer stops reading stdin for good
    big = "s" * 1_000_000
    started = time.monotonic()
    futures = [client.request("echo", [big], timeout=1.0) for _ in range(10)]  # far more than a pipe holds
    assert time.monotonic() - started < 1.0  # request() returned its futures at once
    with pytest.raises(RequestTimeout):
        client.call("echo", [big], timeout=1.0)
    assert time.monotonic() - started < 5
    for future in futures:
        assert isinstance(future.exception(WAIT_S), RequestTimeout)
    with pytest.raises(RequestTimeout):
        client.call("echo", ["small"], timeout=0.5)


def test_keyboard_interrupt_during_a_large_write_never_leaves_half_a_message() -> None:
    script = textwrap.dedent(
        f"""
        import _thread, signal, threading, time
        signal.signal(signal.SIGINT, signal.default_int_handler)  # a background job may have it ignored
        from jsonrpc_threads import JsonRpcClient, StdioTransport
        client = JsonRpcClient(StdioTransport({peer_command("stdio_peer")!r}))
        client.request("pause_reading", {{"seconds": 1.0}})
        threading.Timer(0.3, _thread.interrupt_main).start()
        big = "k" * 5_000_000
        try:
            client.call("echo", [big], timeout=30)
            print("not interrupted")
        except KeyboardInterrupt:
            print("interrupted")
        # The frame went out whole (or not at all): the stream is intact.
        print(client.call("echo", ["after"], timeout=30))
        log = client.call("notifications_log", {{"wait_for": 0, "timeout": 1}}, timeout=30)
        client.close()
        """
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.split()
    assert lines[0] == "interrupted"
    assert lines[1] == "['after']"


# -- 9, 11, 12, 13 -------------------------------------------------------------------------------


def test_a_batch_with_an_unencodable_request_refuses_it_at_once_and_sends_the_rest(client: JsonRpcClient) -> None:
    with client.batch() as batch:
        good = batch.request("echo", ["ok"])
        with pytest.raises(ValueError):
            batch.request("echo", [float("nan")])
        also = batch.request("add", [2, 3])
    assert good.result(WAIT_S) == ["ok"]
    assert also.result(WAIT_S) == 5
    assert not client.has_pending()


def test_a_handler_raising_system_exit_is_still_answered(
    client: JsonRpcClient, caplog: pytest.LogCaptureFixture
) -> None:
    def leave(params: Any) -> None:
        raise SystemExit(3)

    client.on_request("leave", leave)
    answer = client.call("reverse_call", {"method": "leave"})
    assert answer["error"]["code"] == InternalError.default_code
    assert answer["error"]["data"] == {"exception": "SystemExit"}


def test_every_raise_on_a_closed_client_is_a_fresh_error() -> None:
    client = make_client()
    pending = [client.request("never", timeout=None) for _ in range(3)]
    client.close()
    errors = [future.exception(WAIT_S) for future in pending]
    assert len({id(error) for error in errors}) == 3
    raised = []
    for _ in range(50):
        try:
            client.call("echo")
        except TransportClosed as exc:
            raised.append(exc)
    assert len({id(error) for error in raised}) == 50
    depth = _traceback_depth(raised[-1])
    assert depth == _traceback_depth(raised[0])  # nothing grows from one raise to the next
    del raised, errors
    gc.collect()


def _traceback_depth(error: BaseException) -> int:
    depth, tb = 0, error.__traceback__
    while tb is not None:
        depth, tb = depth + 1, tb.tb_next
    return depth


def test_cancel_twice_or_inside_a_batch_is_harmless(client: JsonRpcClient, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    future = client.request("never")
    assert future.cancel() and future.cancel()
    racers = [threading.Thread(target=client.request("never").cancel) for _ in range(1)]
    shared = client.request("never")
    racers = [threading.Thread(target=shared.cancel) for _ in range(8)]
    for racer in racers:
        racer.start()
    for racer in racers:
        racer.join(WAIT_S)
    assert shared.cancelled()
    with pytest.raises(RuntimeError), client.batch() as batch:
        inner = batch.request("echo", [1])
        assert inner.cancel()
        kept = batch.request("echo", [2])
        raise RuntimeError("leave the block")
    assert inner.cancelled() and kept.cancelled()
    with client.batch() as batch:
        dropped = batch.request("echo", [3])
        dropped.cancel()
        sent = batch.request("echo", [4])
    assert sent.result(WAIT_S) == [4]
    assert not any(record.levelno >= logging.CRITICAL for record in caplog.records)
    assert not any("unexpected state" in record.getMessage() for record in caplog.records)


def test_the_process_wide_timer_thread_is_one_and_alive(client: JsonRpcClient) -> None:
    quick_timeout_still_fires(client)
    thread = default_scheduler().thread
    assert thread is not None and thread.is_alive()


def test_a_call_answered_behind_a_notification_returns_as_soon_as_its_handler_does() -> None:
    """Regression: a ``call()`` that read its own answer, held behind a notification handler, polled on.

    Its thread went back to ``poll()`` on stdout (50 ms slices) with nothing more
    to come for it, and returned up to 50 ms after the handler released the answer.
    """
    entered, release, answer_in = threading.Event(), threading.Event(), threading.Event()

    def on_note(params: Any) -> None:
        entered.set()
        release.wait(WAIT_S)

    def on_wire(message: Any) -> None:
        if message.direction == "in" and '"result"' in message.text:
            answer_in.set()

    lags: List[float] = []
    with JsonRpcClient(StdioTransport(peer_command("stdio_peer"))) as client:
        client.on_notification("note", on_note)
        trace_wire(client, on_wire)
        for _ in range(10):
            entered.clear()
            release.clear()
            answer_in.clear()
            returned: List[float] = []

            def call(returned: List[float] = returned) -> None:
                client.call("notify", {"method": "note", "count": 1}, timeout=WAIT_S)
                returned.append(time.monotonic())

            caller = threading.Thread(target=call)
            caller.start()
            assert entered.wait(WAIT_S) and answer_in.wait(WAIT_S)  # the answer is in, held behind the handler
            released = time.monotonic()
            release.set()
            caller.join(WAIT_S)
            assert returned, "the call did not return"
            lags.append(returned[0] - released)
        trace_wire(client, None)
    lags.sort()
    assert lags[len(lags) // 2] < 0.01, f"the call returned {lags} s after its answer was released"


def test_a_call_whose_peer_dies_fails_only_after_the_notifications_it_sent_were_handled() -> None:
    """Regression: the notifications a peer sent before it died could still be queued when the call failed.

    An ACP agent that says something and dies mid-turn: ``jsonrpc-threads acp``
    printed nothing of what it said (2 runs in 8), since ``TransportClosed``
    reached the caller before the ``session/update`` handler ran.
    """
    handled: List[Any] = []
    entered, release, lost = threading.Event(), threading.Event(), threading.Event()

    def on_note(params: Any) -> None:
        entered.set()
        release.wait(WAIT_S)
        handled.append(params["n"])

    for _ in range(5):
        handled.clear()
        entered.clear()
        release.clear()
        lost.clear()
        with JsonRpcClient(StdioTransport(peer_command("stdio_peer"))) as client:
            client.on_notification("note", on_note)
            add_close_listener(client, lambda error: lost.set())
            future = client.request("exit", {"code": 3, "notes": 3}, timeout=WAIT_S)
            assert entered.wait(WAIT_S) and lost.wait(WAIT_S)  # the first handler runs; the peer is gone
            assert not future.done() and client.closed
            release.set()
            with pytest.raises(TransportClosed):
                future.result(WAIT_S)
            assert handled == [0, 1, 2]


# -- issue 47, items 14 and 15: any real number is a timeout; a Deadline cannot be changed --------------


@pytest.mark.parametrize(
    ("given", "expected"),
    [(10**400, None), (Fraction(1, 2), 0.5), (Decimal("0.25"), 0.25), (3, 3.0), (2**2000, None)],
)
def test_any_real_number_is_a_timeout(given: object, expected: object) -> None:
    assert check_timeout(given) == expected
    assert Deadline.after(given).timeout == expected


@pytest.mark.parametrize("bad", [-(10**400), Fraction(-1, 2), Decimal("-1"), Decimal("NaN")])
def test_negative_or_nan_real_numbers_are_refused(bad: object) -> None:
    with pytest.raises(ValueError):
        check_timeout(bad)


@pytest.mark.parametrize("bad", [1j, "1", b"1", True, [1], object()])
def test_what_is_not_a_real_number_is_a_type_error(bad: object) -> None:
    with pytest.raises(TypeError):
        check_timeout(bad)


def test_a_huge_int_timeout_is_no_deadline_for_a_call(client: JsonRpcClient) -> None:
    assert client.call("echo", ["x"], timeout=10**400) == ["x"]
    assert client.call("echo", ["y"], timeout=Fraction(5, 1)) == ["y"]


def test_a_deadline_cannot_be_extended_by_a_step() -> None:
    deadline = Deadline.after(1.0)
    at = deadline.at
    with pytest.raises(AttributeError):
        deadline.at = at + 100  # type: ignore[misc]
    with pytest.raises(AttributeError):
        deadline.timeout = None  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del deadline.at
    assert deadline.at == at and deadline.timeout == 1.0
