"""Request deadlines: kept by the protocol core, one timer per client (against the in-memory peer)."""

from __future__ import annotations

import time
from concurrent.futures import Future
from typing import Any, List, Tuple

import pytest

from jsonrpc_threads import JsonRpcClient, RequestTimeout, TransportClosed
from jsonrpc_threads.core.protocol import COMPACT_MIN_ENTRIES
from jsonrpc_threads.runtime.scheduler import Scheduler

from .helpers import scripted

WAIT_S = 10.0


def make_client(scheduler: Scheduler) -> JsonRpcClient:
    return JsonRpcClient(scripted(), scheduler=scheduler)


def test_requests_share_one_timer_whatever_their_timeouts(scheduler: Scheduler) -> None:
    with make_client(scheduler) as client:
        futures = [client.request("never", timeout=60.0) for _ in range(500)]
        assert scheduler.pending() == 1
        futures += [client.request("never", timeout=30.0 + index / 1000) for index in range(500)]
        assert scheduler.pending() == 1  # one for the client, at its earliest deadline
        client.call("echo", [1], timeout=WAIT_S)  # call() keeps its own deadline: no timer
        assert scheduler.pending() == 1
    for future in futures:
        assert isinstance(future.exception(0), TransportClosed)
    assert scheduler.pending() == 0  # close() withdrew the timer


def test_interleaved_timeouts_each_expire_at_their_own_deadline_never_before(scheduler: Scheduler) -> None:
    with make_client(scheduler) as client:
        made: List[Tuple[float, float, Future[Any]]] = []
        for index in range(40):
            timeout = (0.1, 2.0, 0.25)[index % 3]
            made.append((time.monotonic(), timeout, client.request("never", timeout=timeout)))
        ended = {}
        for started, timeout, future in sorted(made, key=lambda item: item[0] + item[1]):
            error = future.exception(WAIT_S)
            ended[id(future)] = time.monotonic()
            assert isinstance(error, RequestTimeout) and error.timeout == timeout
            assert ended[id(future)] - started >= timeout  # never early
        # The 0.1 s requests did not wait behind the 2 s ones made between them.
        first_started, _, first = made[0]
        assert ended[id(first)] - first_started < 1.5


def test_answered_requests_do_not_pile_up_in_the_deadline_heap(scheduler: Scheduler) -> None:
    with make_client(scheduler) as client:
        for _ in range(4):
            futures = [client.request("echo", [index], timeout=3600.0) for index in range(COMPACT_MIN_ENTRIES)]
            assert [future.result(WAIT_S) for future in futures] == [[index] for index in range(COMPACT_MIN_ENTRIES)]
        # 4096 answered, none pending: compaction kept the heap near what is pending.
        assert client._shell.core.deadline_entries <= 2 * COMPACT_MIN_ENTRIES + 1
        pending = client.request("never", timeout=3600.0)
        assert not pending.done()
        assert scheduler.pending() == 1


def test_a_timer_that_ran_out_is_set_again_for_the_next_request(scheduler: Scheduler) -> None:
    with make_client(scheduler) as client:
        with pytest.raises(RequestTimeout):
            client.request("never", timeout=0.05).result(WAIT_S)
        started = time.monotonic()
        with pytest.raises(RequestTimeout):
            client.request("never", timeout=0.05).result(WAIT_S)
        assert time.monotonic() - started < 3.0
        assert client.stats()["timeouts"] == 2


def test_a_cancelled_request_is_skipped_when_its_deadline_comes(scheduler: Scheduler) -> None:
    with make_client(scheduler) as client:
        cancelled = client.request("never", timeout=0.1)
        kept = client.request("never", timeout=0.1)
        assert cancelled.cancel()
        assert isinstance(kept.exception(WAIT_S), RequestTimeout)
        assert cancelled.cancelled()
        assert client.stats()["timeouts"] == 1 and client.stats()["cancels"] == 1


def test_the_timer_is_not_set_again_for_requests_already_answered(scheduler: Scheduler) -> None:
    with make_client(scheduler) as client:
        before = [client.request("echo", [index], timeout=0.3) for index in range(50)]
        never = client.request("never", timeout=0.3)
        client.call("sleep", {"seconds": 0.15}, timeout=WAIT_S)  # the peer's wait: these come due well after it
        after = [client.request("echo", [index], timeout=0.3) for index in range(50)]
        assert [future.result(WAIT_S) for future in before + after] == [[i] for i in range(50)] * 2
        assert isinstance(never.exception(WAIT_S), RequestTimeout)
        # The answered requests made after the one that timed out leave no timer behind.
        assert scheduler.pending() == 0
        assert client._shell.core.deadline_entries == 0
