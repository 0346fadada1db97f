from __future__ import annotations

import threading
from typing import Iterator, List

import pytest

from jsonrpc_threads._workers import PoolClosed, WorkerPool

WAIT_S = 5.0


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


def test_ordered_tasks_run_one_at_a_time_in_order(pool: WorkerPool) -> None:
    seen: List[int] = []
    finished = threading.Event()
    for i in range(200):
        pool.submit_ordered(seen.append, i)
    pool.submit_ordered(finished.set)
    assert finished.wait(WAIT_S)
    assert seen == list(range(200))


def test_ordered_backlog_holds_until_the_last_ordered_task_finished(pool: WorkerPool) -> None:
    release = threading.Event()
    started = threading.Event()

    def blocked() -> None:
        started.set()
        release.wait(WAIT_S)

    assert not pool.ordered_backlog
    pool.submit_ordered(blocked)
    assert started.wait(WAIT_S)
    assert pool.ordered_backlog
    release.set()
    done = threading.Event()
    pool.submit(done.set)
    assert done.wait(WAIT_S)


def test_in_ordered_task_is_true_only_inside_ordered_tasks(pool: WorkerPool) -> None:
    inside: List[bool] = []
    outside: List[bool] = []
    ordered_done, plain_done = threading.Event(), threading.Event()
    pool.submit_ordered(lambda: (inside.append(pool.in_ordered_task()), ordered_done.set()))
    pool.submit(lambda: (outside.append(pool.in_ordered_task()), plain_done.set()))
    assert ordered_done.wait(WAIT_S) and plain_done.wait(WAIT_S)
    assert (inside, outside) == ([True], [False])
    assert not pool.in_ordered_task()


def test_failing_task_is_logged_and_pool_goes_on(pool: WorkerPool, caplog: pytest.LogCaptureFixture) -> None:
    done = threading.Event()

    def boom() -> None:
        raise ValueError("boom")

    pool.submit(boom)
    pool.submit_ordered(boom)
    pool.submit_ordered(done.set)
    assert done.wait(WAIT_S)
    assert any(r.exc_info for r in caplog.records)


def test_shutdown_refuses_new_work_and_is_idempotent_even_from_a_worker() -> None:
    pool = WorkerPool(2, "test-pool")
    done = threading.Event()
    pool.submit(lambda: (pool.shutdown(WAIT_S), done.set()))
    assert done.wait(WAIT_S)
    pool.shutdown(WAIT_S)
    with pytest.raises(PoolClosed):
        pool.submit(print)
    with pytest.raises(PoolClosed):
        pool.submit_ordered(print)


def test_shutdown_is_bounded_by_a_stuck_task() -> None:
    pool = WorkerPool(1, "test-pool")
    release = threading.Event()
    started = threading.Event()
    pool.submit(lambda: (started.set(), release.wait(WAIT_S)))
    assert started.wait(WAIT_S)
    pool.shutdown(0.05)  # returns although the task still runs
    release.set()
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
