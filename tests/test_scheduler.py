from __future__ import annotations

import queue
import threading
import time
from typing import List

import pytest

from jsonrpc_threads import JsonRpcClient, RequestTimeout
from jsonrpc_threads.runtime.scheduler import Scheduler, default_scheduler

from .helpers import scripted

WAIT_S = 5.0
#: How late past its deadline a timer may fire, or a request time out, on a loaded two-core
#: machine. Issue 46: a scheduler firing every deadline 0.5 s late passed bounds of 1.5-3 s.
PROMPT_MARGIN_S = 0.3


def test_callbacks_fire_in_deadline_order(scheduler: Scheduler) -> None:
    fired: queue.Queue[int] = queue.Queue()
    now = time.monotonic()
    for i in (3, 1, 2):
        scheduler.call_at(now + i * 0.02, fired.put, i)
    assert [fired.get(timeout=WAIT_S) for _ in range(3)] == [1, 2, 3]


def test_cancelled_callback_never_fires(scheduler: Scheduler) -> None:
    fired: queue.Queue[str] = queue.Queue()
    handle = scheduler.call_later(0.05, fired.put, "cancelled")
    assert handle.active and handle.cancel()
    assert not handle.cancel() and not handle.active
    scheduler.call_later(0.1, fired.put, "kept")
    assert fired.get(timeout=WAIT_S) == "kept"
    assert fired.empty()


def test_an_earlier_deadline_wakes_the_thread(scheduler: Scheduler) -> None:
    fired = threading.Event()
    scheduler.call_later(3600, lambda: None)
    start = time.monotonic()
    scheduler.call_later(0.01, fired.set)
    assert fired.wait(WAIT_S)
    assert time.monotonic() - start < 2.0


def test_many_deadlines_cost_one_thread_and_compaction_keeps_memory_bounded(scheduler: Scheduler) -> None:
    threads_before = threading.active_count()
    handles = [scheduler.call_later(3600 + i, lambda: None) for i in range(100_000)]
    assert threading.active_count() == threads_before + 1
    assert scheduler.pending() == 100_000
    for handle in handles[:90_000]:
        handle.cancel()
    assert scheduler.pending() == 10_000
    assert len(scheduler._heap) < 50_000  # cancelled entries were compacted away


def test_a_failing_callback_is_logged_and_the_thread_goes_on(
    scheduler: Scheduler, caplog: pytest.LogCaptureFixture
) -> None:
    fired = threading.Event()

    def boom() -> None:
        raise RuntimeError("boom")

    scheduler.call_later(0, boom)
    scheduler.call_later(0.01, fired.set)
    assert fired.wait(WAIT_S)
    assert any("boom" in (r.exc_text or "") or r.exc_info for r in caplog.records)


def test_stop_refuses_new_timers() -> None:
    s = Scheduler(name="jsonrpc-timer-test")
    s.stop(timeout=WAIT_S)
    with pytest.raises(RuntimeError):
        s.call_later(1, lambda: None)


def test_default_scheduler_is_one_per_process() -> None:
    assert default_scheduler() is default_scheduler()
    results: List[Scheduler] = []
    threads = [threading.Thread(target=lambda: results.append(default_scheduler())) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(WAIT_S)
    assert all(r is default_scheduler() for r in results)


# -- promptness: a deadline is kept to within PROMPT_MARGIN_S (issue 46) ---------------------------


def test_call_later_fires_within_the_margin_of_its_delay(scheduler: Scheduler) -> None:
    fired: queue.Queue[float] = queue.Queue()
    start = time.monotonic()
    scheduler.call_later(0.05, lambda: fired.put(time.monotonic()))
    assert fired.get(timeout=WAIT_S) - start < 0.05 + PROMPT_MARGIN_S


def test_twenty_requests_time_out_within_the_margin_of_their_timeout() -> None:
    timeout = 0.1
    with JsonRpcClient(scripted()) as client:
        ended: queue.Queue[float] = queue.Queue()
        start = time.monotonic()
        futures = [client.request("never", timeout=timeout) for _ in range(20)]
        for future in futures:
            future.add_done_callback(lambda _f: ended.put(time.monotonic()))
        latest = max(ended.get(timeout=WAIT_S) for _ in futures)
        assert all(isinstance(future.exception(0), RequestTimeout) for future in futures)
    assert latest - start < timeout + PROMPT_MARGIN_S


def test_a_blocking_call_times_out_within_the_margin_of_its_timeout() -> None:
    timeout = 0.1
    with JsonRpcClient(scripted()) as client:
        start = time.monotonic()
        with pytest.raises(RequestTimeout):
            client.call("never", timeout=timeout)
        assert time.monotonic() - start < timeout + PROMPT_MARGIN_S
