"""What the shell settles (jsonrpc_threads/core/futures.py): the waiter of a call(), and the future of a request()."""

from __future__ import annotations

import concurrent.futures
import contextlib
import gc
import subprocess
import sys
import threading
import time
from concurrent.futures import FIRST_COMPLETED, CancelledError, Future, as_completed, wait
from pathlib import Path
from typing import Any, Iterator, List, Optional

import pytest

from jsonrpc_threads import JsonRpcClient, RequestTimeout
from jsonrpc_threads.core.futures import PlainRequestFuture, RequestFuture, settle_result
from jsonrpc_threads.runtime.settling import CallWaiter, library_settling
from jsonrpc_threads.runtime.wake_pipes import WakePipes
from jsonrpc_threads.testing import MemoryTransport

from .helpers import scripted

WAIT_S = 10.0
REPO_ROOT = Path(__file__).resolve().parent.parent
ON_LINUX = sys.platform.startswith("linux")


@pytest.fixture(params=[RequestFuture, PlainRequestFuture], ids=["lean", "plain"])
def future_class(request: pytest.FixtureRequest) -> Any:
    """The future of a request(): lean (the default strategy) or Future as it is (the plain reference)."""
    return request.param


# -- the waiter of a call() ---------------------------------------------------------------------


def test_a_waiter_waits_on_a_lock_until_settled_or_its_deadline() -> None:
    waiter = CallWaiter()
    threading.Timer(0.02, waiter.settle_result, args=(7,)).start()
    assert waiter.wait(time.monotonic() + WAIT_S)
    assert waiter.result() == 7
    assert not CallWaiter().wait(time.monotonic() + 0.01)
    failed = CallWaiter()
    failed.settle_exception(KeyError("x"))
    failed.settle_result("second: ignored")
    assert failed.wait(None)
    with pytest.raises(KeyError):
        failed.result()


@contextlib.contextmanager
def waiter_pool(kind: str) -> Iterator[Optional[WakePipes]]:
    """What a waiter of ``kind`` sleeps on: ``"lock"`` (None, a lock of its own), ``"pipe"`` (a pool of wake pipes)."""
    if kind == "lock":
        yield None
        return
    pool = WakePipes()
    pool.attach()
    try:
        yield pool
    finally:
        pool.detach()


#: The waiter strategies: a lock everywhere, a wake pipe where the process has them (Linux).
WAITER_KINDS = ["lock", pytest.param("pipe", marks=pytest.mark.skipif(not ON_LINUX, reason="wake pipes: Linux"))]


@pytest.mark.parametrize("kind", WAITER_KINDS)
def test_many_waiters_and_settlers_racing_each_see_their_own_answer(kind: str) -> None:
    errors: List[BaseException] = []

    def one(index: int, pool: Optional[WakePipes]) -> None:
        try:
            for round_ in range(200):
                waiter = CallWaiter(pool)
                value = (index, round_)
                settler = threading.Thread(target=waiter.settle_result, args=(value,))
                settler.start()
                assert waiter.wait(time.monotonic() + WAIT_S)
                waiter.finish()
                assert waiter.result() == value
                settler.join(WAIT_S)
        except BaseException as exc:  # reported below
            errors.append(exc)

    with waiter_pool(kind) as pool:
        threads = [threading.Thread(target=one, args=(i, pool)) for i in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
    assert not errors


@pytest.mark.parametrize("kind", WAITER_KINDS)
def test_ctrl_c_interrupts_a_call_asleep_on_its_waiter_and_nothing_stays_open(kind: str) -> None:
    script = f"""
import os, signal, sys, threading, time
sys.path.insert(0, {str(REPO_ROOT)!r})
signal.signal(signal.SIGINT, signal.default_int_handler)
from jsonrpc_threads.runtime.settling import CallWaiter
from jsonrpc_threads.runtime.wake_pipes import WakePipes
pipes = WakePipes() if {kind!r} == "pipe" else None  # no client attached: a pipe given back is closed
fds = len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else 0
waiter = CallWaiter(pipes)
main = threading.main_thread().ident
threading.Timer(0.2, signal.pthread_kill, args=(main, signal.SIGINT)).start()
start = time.monotonic()
try:
    waiter.wait(time.monotonic() + 30)
    print("not interrupted")
except KeyboardInterrupt:
    print("interrupted", round(time.monotonic() - start, 1))
waiter.settle_exception(RuntimeError("interrupted"))  # what call() does: the request is settled
waiter.finish()
print("fds", (len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else 0) - fds)
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split()[0] == "interrupted" and float(lines[0].split()[1]) < 5, result.stdout
    assert lines[1] == "fds 0", result.stdout  # a pipe made meanwhile is closed again


# -- the future of a request() ------------------------------------------------------------------


def test_a_future_nobody_waits_on_settles_without_a_condition_and_waiters_still_wake() -> None:
    withdrawn: List[Any] = []
    quiet = RequestFuture(1, lambda *args: withdrawn.append(args))
    settle_result(quiet, "a")
    assert quiet.result(0) == "a" and "_condition" not in vars(quiet)
    waited = RequestFuture(2, lambda *args: withdrawn.append(args))
    with pytest.raises(concurrent.futures.TimeoutError):
        waited.exception(0.001)  # a waiter came: it made the Condition, and the settle goes through it
    assert "_condition" in vars(waited)
    woken: List[Any] = []
    sleeper = threading.Thread(target=lambda: woken.append(waited.result(WAIT_S)))
    sleeper.start()
    collector = threading.Thread(target=lambda: woken.extend(f.result() for f in as_completed([waited], WAIT_S)))
    collector.start()
    settle_result(waited, "b")
    sleeper.join(WAIT_S)
    collector.join(WAIT_S)
    assert woken == ["b", "b"] and withdrawn == []


def test_cancel_withdraws_once_however_many_cancel_and_wait_sees_it(future_class: Any) -> None:
    withdrawn: List[Any] = []
    future = future_class(5, lambda *args: withdrawn.append(args))
    racers = [threading.Thread(target=future.cancel) for _ in range(8)]
    for racer in racers:
        racer.start()
    for racer in racers:
        racer.join(WAIT_S)
    assert future.cancelled() and withdrawn == [(5, "Cancelled by the client")]
    done, _ = wait([future], timeout=WAIT_S, return_when=FIRST_COMPLETED)
    assert done == {future}
    with pytest.raises(CancelledError):
        future.result(0)
    settle_result(future, "too late")  # the library finds it cancelled: nothing happens
    assert future.cancelled()
    settled = future_class(6, lambda *args: withdrawn.append(args))
    settle_result(settled, 1)
    assert not settled.cancel() and len(withdrawn) == 1


def test_callbacks_go_to_the_runner_when_the_library_settles_and_run_here_otherwise(future_class: Any) -> None:
    ran: List[str] = []
    handed: List[Any] = []
    future = future_class(1, lambda *args: None)
    future.add_done_callback(lambda f: ran.append("first"))
    future.add_done_callback(lambda f: ran.append("second"))
    other = future_class(2, lambda *args: None)
    other.add_done_callback(lambda f: ran.append("other"))
    with library_settling(handed.extend):
        settle_result(future, 1)
        settle_result(other, 2)
        assert ran == [] and handed == []  # collected, handed over when the block ends
    assert len(handed) == 2  # one item a future, its callbacks together and in order
    for item in handed:
        item.run()
    assert ran == ["first", "second", "other"]
    future.add_done_callback(lambda f: ran.append("after"))  # done already: here, as concurrent.futures does
    assert ran[-1] == "after"
    cancelled = future_class(3, lambda *args: None)
    cancelled.add_done_callback(lambda f: ran.append("cancelled"))
    cancelled.cancel()  # the caller settles it: on this thread
    assert ran[-1] == "cancelled"


def test_a_callback_raising_system_exit_is_logged_and_the_rest_run(
    caplog: pytest.LogCaptureFixture, future_class: Any
) -> None:
    ran: List[str] = []
    handed: List[Any] = []
    future = future_class(1, lambda *args: None)

    def leave(f: Future[Any]) -> None:
        raise SystemExit(2)

    future.add_done_callback(leave)
    future.add_done_callback(lambda f: ran.append("next"))
    with library_settling(handed.extend):
        settle_result(future, 1)
    (item,) = handed
    item.run()
    assert ran == ["next"]
    assert any("exception calling callback" in r.getMessage() for r in caplog.records)


def test_done_callbacks_raising_system_exit_never_use_up_the_callback_workers() -> None:
    # Issue 35, item 7: a done-callback that raised SystemExit ended its worker's drain for good;
    # after as many as the pool had workers, no done-callback of that client ever ran again.
    with JsonRpcClient(scripted(), handler_workers=2) as client:
        left = threading.Semaphore(0)

        def leave(_future: Future[Any]) -> None:
            left.release()
            raise SystemExit(4)

        for _ in range(8):
            future = client.request("echo", [1])
            future.add_done_callback(leave)
            assert future.result(WAIT_S) == [1]
            assert left.acquire(timeout=WAIT_S)
        ran = threading.Event()
        last = client.request("echo", [2])
        last.add_done_callback(lambda _f: ran.set())
        assert last.result(WAIT_S) == [2]
        assert ran.wait(WAIT_S), "a done-callback never ran after others raised SystemExit"


def test_result_with_a_timeout_bounds_that_wait_only(future_class: Any) -> None:
    future = future_class(1, lambda *args: None)
    with pytest.raises(concurrent.futures.TimeoutError):
        future.result(0.01)
    settle_result(future, "later")
    assert future.result(0) == "later"


def test_a_timeout_nobody_waited_for_is_made_when_first_asked_for_and_stays_the_same() -> None:
    future = RequestFuture(7, lambda *args: None)
    future.settle_timeout("tools/call", 7, 1.5, "its stderr ends with: busy")
    assert future.done() and not future.cancelled()
    error = future.exception(0)
    assert isinstance(error, RequestTimeout) and isinstance(error, TimeoutError)
    assert (error.method, error.request_id, error.timeout, error.hint) == (
        "tools/call",
        7,
        1.5,
        "its stderr ends with: busy",
    )
    assert future.exception(0) is error
    with pytest.raises(RequestTimeout) as info:
        future.result(0)
    assert info.value is error
    assert "RequestTimeout" in repr(future)
    settle_result(future, "late")  # settled already: nothing changes
    assert future.exception(0) is error


def test_threads_asking_at_once_for_a_timeout_get_one_error(future_class: Any) -> None:
    for _ in range(50):
        future = future_class(1, lambda *args: None)
        future.settle_timeout("m", 1, 0.1, "")
        seen: List[Any] = []
        barrier = threading.Barrier(4)

        def ask(future: RequestFuture = future, barrier: threading.Barrier = barrier, seen: List[Any] = seen) -> None:
            barrier.wait(WAIT_S)
            seen.append(future.exception(0))

        askers = [threading.Thread(target=ask) for _ in range(4)]
        for asker in askers:
            asker.start()
        for asker in askers:
            asker.join(WAIT_S)
        assert len({id(error) for error in seen}) == 1


def test_a_future_somebody_waits_on_times_out_with_its_error_at_once(future_class: Any) -> None:
    future = future_class(3, lambda *args: None)
    with pytest.raises(concurrent.futures.TimeoutError):
        future.exception(0.001)  # a waiter: the Condition is made, and the settle goes through it
    future.settle_timeout("m", 3, 0.5, "")
    assert isinstance(vars(future)["_exception"], RequestTimeout)
    assert future.exception(0).request_id == 3  # type: ignore[union-attr]


def test_a_burst_of_timeouts_leaves_nothing_for_the_cycle_collector() -> None:
    # Issue 36: a collection of the oldest generation inside a burst of 100,000 timeouts made the
    # last of them 54-143 ms late.  A timeout now allocates no object the collector counts (its
    # RequestTimeout is made when asked for), so the burst triggers none.
    end, peer = MemoryTransport.pair()
    peer.start(_Silent())  # type: ignore[arg-type]
    with JsonRpcClient(end, default_timeout=None) as client:
        futures = [client.request("m", timeout=3600.0) for _ in range(3000)]
        for future in futures:
            future.add_done_callback(lambda f: None)
        shell = client._shell
        gc.collect()
        gc.disable()
        try:
            before = gc.get_count()[0]
            with shell.lock:
                events = shell.core.expire(time.monotonic() + 7200.0)
            shell.dispatch(events)
            allocated = gc.get_count()[0] - before
        finally:
            gc.enable()
        assert all(isinstance(f.exception(0), RequestTimeout) for f in futures)
    peer.close()
    assert allocated < len(futures) / 10, allocated


class _Silent:
    def message_received(self, data: bytes) -> Any:
        return ()

    def transport_closed(self, error: Any) -> None:
        pass
