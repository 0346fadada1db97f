from __future__ import annotations

import threading
import time
from typing import Iterator, List

import pytest

from jsonrpc_threads.runtime.workers import PoolClosed, SerialLane, WorkerPool, waiting_for_answer

WAIT_S = 5.0
#: How late past its timeout a bounded wait may return on a loaded machine.
PROMPT_MARGIN_S = 0.3


@pytest.fixture
def pool() -> Iterator[WorkerPool]:
    p = WorkerPool(3, "test-pool")
    try:
        yield p
    finally:
        p.shutdown(WAIT_S)


def test_tasks_run_concurrently_up_to_max_workers(pool: WorkerPool) -> None:
    barrier = threading.Barrier(3, timeout=WAIT_S)
    done = threading.Semaphore(0)

    def task() -> None:
        barrier.wait()
        done.release()

    for _ in range(3):
        pool.submit(task)
    for _ in range(3):
        assert done.acquire(timeout=WAIT_S)


def test_lane_runs_tasks_one_at_a_time_in_order() -> None:
    lane = SerialLane("test-lane")
    seen: List[int] = []
    finished = threading.Event()
    try:
        tickets = [lane.submit(seen.append, i) for i in range(200)]
        assert tickets == list(range(1, 201))
        last = lane.submit(finished.set)
        assert finished.wait(WAIT_S)
        assert seen == list(range(200))
        assert lane.finished(last) and lane.submitted == last
    finally:
        lane.shutdown(WAIT_S)


def test_lane_ticket_is_finished_only_once_its_task_returned() -> None:
    lane = SerialLane("test-lane")
    release, started = threading.Event(), threading.Event()
    try:
        assert not lane.busy()  # nothing submitted yet
        ticket = lane.submit(lambda: (started.set(), release.wait(WAIT_S)))
        assert started.wait(WAIT_S)
        assert not lane.finished(ticket) and lane.busy()
        inside: List[bool] = []
        after = lane.submit(lambda: inside.append(lane.in_lane()))
        release.set()
        done = threading.Event()
        lane.submit(done.set)
        assert done.wait(WAIT_S)
        assert lane.finished(after) and inside == [True] and not lane.in_lane()
    finally:
        lane.shutdown(WAIT_S)


def test_lane_survives_base_exceptions_and_shutdown_drops_the_queue(caplog: pytest.LogCaptureFixture) -> None:
    lane = SerialLane("test-lane")
    done, release, started = threading.Event(), threading.Event(), threading.Event()

    def leave() -> None:
        raise SystemExit(2)

    lane.submit(leave)
    lane.submit(lambda: (started.set(), release.wait(WAIT_S)))
    assert started.wait(WAIT_S)
    dropped = lane.submit(done.set)
    shutdown = threading.Thread(target=lane.shutdown, args=(WAIT_S,))
    shutdown.start()
    release.set()
    shutdown.join(WAIT_S)
    assert lane.finished(dropped)
    assert not done.is_set()  # dropped, never run
    assert any(r.exc_info for r in caplog.records)
    with pytest.raises(PoolClosed):
        lane.submit(print)


def test_failing_task_is_logged_and_pool_goes_on(pool: WorkerPool, caplog: pytest.LogCaptureFixture) -> None:
    done = threading.Event()

    def boom() -> None:
        raise ValueError("boom")

    pool.submit(boom)
    pool.submit(boom)
    assert pool.wait_idle(WAIT_S)
    pool.submit(done.set)
    assert done.wait(WAIT_S)
    assert any(r.exc_info for r in caplog.records)


def test_a_worker_waiting_for_an_answer_does_not_count(pool: WorkerPool) -> None:
    # All three workers wait (as handlers blocked in a client call); a fourth task still runs.
    release = threading.Event()
    waiting = threading.Semaphore(0)

    def handler() -> None:
        with waiting_for_answer():
            waiting.release()
            release.wait(WAIT_S)

    for _ in range(3):
        pool.submit(handler)
    for _ in range(3):
        assert waiting.acquire(timeout=WAIT_S)
    done = threading.Event()
    pool.submit(done.set)
    assert done.wait(WAIT_S)
    release.set()
    assert pool.wait_idle(WAIT_S)


def test_a_busy_pool_without_waiting_workers_queues_work(pool: WorkerPool) -> None:
    release = threading.Event()
    busy = threading.Semaphore(0)
    for _ in range(3):
        pool.submit(lambda: (busy.release(), release.wait(WAIT_S)))
    for _ in range(3):
        assert busy.acquire(timeout=WAIT_S)
    done = threading.Event()
    pool.submit(done.set)
    assert not done.wait(0.2)  # queued: the limit holds for workers that are not waiting
    release.set()
    assert done.wait(WAIT_S)


def test_shutdown_with_drain_runs_what_is_queued() -> None:
    pool = WorkerPool(1, "test-pool")
    release, started = threading.Event(), threading.Event()
    ran: List[int] = []
    pool.submit(lambda: (started.set(), release.wait(WAIT_S)))
    assert started.wait(WAIT_S)
    for i in range(5):
        pool.submit(ran.append, i)
    release.set()
    pool.shutdown(WAIT_S, drain=True)
    assert ran == [0, 1, 2, 3, 4]


def test_shutdown_refuses_new_work_and_is_idempotent_even_from_a_worker() -> None:
    pool = WorkerPool(2, "test-pool")
    done = threading.Event()
    pool.submit(lambda: (pool.shutdown(WAIT_S), done.set()))
    assert done.wait(WAIT_S)
    pool.shutdown(WAIT_S)
    with pytest.raises(PoolClosed):
        pool.submit(print)
    for t in threading.enumerate():
        if t.name.startswith("test-pool"):
            t.join(WAIT_S)


def test_shutdown_is_bounded_by_a_stuck_task() -> None:
    pool = WorkerPool(1, "test-pool")
    release = threading.Event()
    started = threading.Event()
    pool.submit(lambda: (started.set(), release.wait(WAIT_S)))
    assert started.wait(WAIT_S)
    started_at = time.monotonic()
    pool.shutdown(0.05)  # returns although the task still runs
    elapsed = time.monotonic() - started_at
    still_running = [t for t in threading.enumerate() if t.name.startswith("test-pool")]
    release.set()
    assert elapsed < 0.05 + PROMPT_MARGIN_S, elapsed  # issue 46: an unbounded join passed this test
    assert still_running
    for t in threading.enumerate():
        if t.name.startswith("test-pool"):
            t.join(WAIT_S)


def test_wait_idle_and_unfinished(pool: WorkerPool) -> None:
    release = threading.Event()
    started = threading.Event()
    pool.submit(lambda: (started.set(), release.wait(WAIT_S)))
    assert started.wait(WAIT_S)
    assert pool.unfinished == 1
    assert not pool.wait_idle(0.05)
    release.set()
    assert pool.wait_idle(WAIT_S)
    assert pool.unfinished == 0


def test_shutdown_without_waiting_for_busy_threads_returns_at_once() -> None:
    pool = WorkerPool(2, "test-pool")
    release = threading.Event()
    started = threading.Event()
    pool.submit(lambda: (started.set(), release.wait(WAIT_S)))
    assert started.wait(WAIT_S)
    pool.shutdown(WAIT_S, wait_for_busy=False)  # joins the idle thread only (if any)
    assert pool.unfinished == 1
    release.set()
    for t in threading.enumerate():
        if t.name.startswith("test-pool"):
            t.join(WAIT_S)


def test_system_exit_in_a_task_does_not_cost_a_thread(pool: WorkerPool) -> None:
    done = threading.Event()

    def leave() -> None:
        raise SystemExit(3)

    for _ in range(3):
        pool.submit(leave)
    assert pool.wait_idle(WAIT_S)
    pool.submit(done.set)
    assert done.wait(WAIT_S)
    assert all(t.is_alive() for t in pool._threads)
