"""Randomized stress: many threads racing answers, timeouts, cancel() and close().

Whatever the interleaving, every future settles exactly once and every
done-callback runs exactly once.  The peer's behaviour for each request is
drawn from a seeded generator keyed by the request's id, so a failing run is
repeated with ``JSONRPC_STRESS_SEED=<seed>`` (printed in every failure);
``JSONRPC_STRESS_REQUESTS`` sets the size (100,000 by default).
"""

from __future__ import annotations

import collections
import os
import random
import threading
import time
from concurrent.futures import FIRST_COMPLETED, Future, as_completed, wait
from typing import Any, Dict, List, Optional, Sequence, Tuple

import pytest

from jsonrpc_threads import JsonRpcClient, JsonRpcError, RequestTimeout, StdioTransport, TransportClosed
from jsonrpc_threads.core.futures import RequestFuture

from .conftest import peer_command
from .helpers import MemoryPeer, Message, error, response, scripted
from .tiers import budget

SEED = int(os.environ.get("JSONRPC_STRESS_SEED", random.SystemRandom().randrange(1 << 32)))
REQUESTS = int(os.environ.get("JSONRPC_STRESS_REQUESTS", budget(100000)))
THREADS = 8
#: Every future must have settled this long after the last request was made.
SETTLE_WAIT_S = 60.0


def chaos(seed: int) -> Any:
    """The peer's script: per request id, one behaviour drawn from a generator seeded by (seed, id)."""

    def script(peer: MemoryPeer, request: Message) -> Sequence[Tuple[float, Message]]:
        rid = request["id"]
        rng = random.Random(f"{seed}:{rid}")
        roll = rng.random()
        delay = rng.uniform(0.0, 0.004)
        if roll < 0.55:
            return [(delay, response(rid, rid))]
        if roll < 0.65:
            return [(delay, error(rid, -32050, "refused", {"id": rid}))]
        if roll < 0.73:
            return []  # never answered: its timeout, a cancel() or close() settles it
        if roll < 0.80:
            return [(delay, response(rid, rid)), (delay + 0.001, response(rid, "second"))]  # answered twice
        if roll < 0.88:
            note = {"jsonrpc": "2.0", "method": "progress", "params": {"for": rid}}
            return [(delay, note), (delay, note), (delay, response(rid, rid))]
        return [(0.03 + delay, response(rid, rid))]  # late: usually after the timeout

    return script


class Ledger:
    """Counts, per future, how often the library settled it and how often its callback ran."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.changed = threading.Condition(self.lock)  # notified by every callback
        self.made = 0  # requests made so far, by every worker
        self.midway = threading.Event()  # set once a third of the requests were made
        self.midway_at = 0
        self.settles: Dict[int, int] = collections.Counter()
        self.callbacks: Dict[int, int] = collections.Counter()
        self.futures: List[Future[Any]] = []
        self.calls = 0
        self.call_outcomes: Dict[str, int] = collections.Counter()

    def settled(self, future: Any) -> None:
        with self.lock:
            self.settles[id(future)] += 1

    def callback(self, future: Future[Any]) -> None:
        with self.lock:
            self.callbacks[id(future)] += 1
            self.changed.notify_all()

    def count_request(self) -> None:
        with self.lock:
            self.made += 1
            if self.midway_at and self.made >= self.midway_at:
                self.midway.set()


@pytest.fixture
def ledger(monkeypatch: pytest.MonkeyPatch) -> Ledger:
    record = Ledger()
    # Every settling of a request's future by the library goes through one of these.
    for name in ("settle_result", "settle_exception", "settle_timeout"):
        original = getattr(RequestFuture, name)

        def counted(future: Any, *outcome: Any, original: Any = original) -> None:
            record.settled(future)
            original(future, *outcome)

        monkeypatch.setattr(RequestFuture, name, counted)
    return record


def drive(client: JsonRpcClient, ledger: Ledger, worker: int, count: int, seed: int) -> None:
    rng = random.Random(f"{seed}:worker:{worker}")
    mine: List[Future[Any]] = []
    for _ in range(count):
        ledger.count_request()
        roll = rng.random()
        timeout: Optional[float] = rng.choice((0.0, 0.002, 0.01, 0.02, None))
        if roll < 0.15:  # a blocking call
            try:
                client.call("work", timeout=0.02 if timeout is None else timeout)
                outcome = "result"
            except RequestTimeout:
                outcome = "timeout"
            except TransportClosed:
                outcome = "closed"
            except JsonRpcError:
                outcome = "error"
            with ledger.lock:
                ledger.calls += 1
                ledger.call_outcomes[outcome] += 1
            continue
        try:
            future = client.request("work", timeout=timeout)
        except TransportClosed:
            continue
        future.add_done_callback(ledger.callback)
        mine.append(future)
        if roll < 0.35:
            future.cancel()
        elif roll < 0.40 and mine:
            rng.choice(mine).cancel()  # cancel an older one, maybe settled already
        elif roll < 0.42:
            future.cancel()
            future.cancel()  # twice
    with ledger.lock:
        ledger.futures.extend(mine)


def check(ledger: Ledger, seed: int) -> None:
    deadline = time.monotonic() + SETTLE_WAIT_S
    for future in ledger.futures:
        left = max(0.0, deadline - time.monotonic())
        if not future.cancelled():
            future.exception(timeout=left)
        assert future.done(), f"seed {seed}: a future never settled"
    # Done-callbacks of library-settled futures run on callback workers: wait for them.
    with ledger.changed:
        while any(ledger.callbacks[id(f)] < 1 for f in ledger.futures):
            left = deadline - time.monotonic()
            if left <= 0 or not ledger.changed.wait(left):
                break
    for future in ledger.futures:
        settles = ledger.settles[id(future)]
        by_caller = 1 if future.cancelled() and settles == 0 else 0
        assert settles + by_caller == 1, f"seed {seed}: settled {settles} times (cancelled={future.cancelled()})"
        assert ledger.callbacks[id(future)] == 1, f"seed {seed}: done-callback ran {ledger.callbacks[id(future)]} times"


@pytest.mark.timeout(600)
@pytest.mark.parametrize("close_midway", [False, True], ids=["to-the-end", "close-midway"])
def test_every_future_settles_once_whatever_races(ledger: Ledger, close_midway: bool) -> None:
    seed = SEED + (1 if close_midway else 0)
    total = REQUESTS if not close_midway else REQUESTS // 4
    peer = MemoryPeer(script=chaos(seed))
    ledger.midway_at = total // 3 if close_midway else 0
    client = JsonRpcClient(scripted(peer), cancellation="mcp", handler_workers=2)
    client.on_notification("progress", lambda params: None)
    per_worker = total // THREADS
    workers = [
        threading.Thread(target=drive, args=(client, ledger, n, per_worker, seed), name=f"stress-{n}")
        for n in range(THREADS)
    ]
    try:
        for worker in workers:
            worker.start()
        if close_midway:
            assert ledger.midway.wait(SETTLE_WAIT_S), f"seed {seed}: the callers stalled"
            client.close()
        for worker in workers:
            worker.join(SETTLE_WAIT_S * 5)
            assert not worker.is_alive(), f"seed {seed}: a caller hung"
        # Requests still pending without a deadline are settled by close().
        client.close()
        check(ledger, seed)
        assert ledger.calls > 0 and ledger.futures
        if not close_midway:
            assert len(ledger.futures) > total // 2
            assert {"result", "timeout", "error"} <= set(ledger.call_outcomes), ledger.call_outcomes
            assert not client.has_pending()
    finally:
        client.close()


@pytest.mark.timeout(300)
def test_calls_settle_once_over_a_real_child(ledger: Ledger) -> None:
    seed = SEED + 2
    rng = random.Random(seed)
    with JsonRpcClient(StdioTransport(peer_command("stdio_peer")), cancellation="mcp") as client:
        futures: List[Future[Any]] = []
        for i in range(3000):
            roll = rng.random()
            if roll < 0.5:
                future = client.request("echo", [i], timeout=rng.choice((0.001, 0.05, None)))
            elif roll < 0.7:
                future = client.request("sleep", {"seconds": rng.choice((0.0, 0.01, 0.1)), "result": i}, timeout=0.05)
            else:
                future = client.request("never", timeout=rng.choice((0.0, 0.01, None)))
            future.add_done_callback(ledger.callback)
            futures.append(future)
            if rng.random() < 0.2:
                rng.choice(futures).cancel()
        ledger.futures = futures
    check(ledger, seed)


@pytest.mark.timeout(300)
def test_waiters_of_every_kind_see_every_settle() -> None:
    """result(), wait(), as_completed() and done-callbacks racing the settle path: no wake-up is lost."""
    seed = SEED + 3

    def quick(peer: MemoryPeer, request: Message) -> Sequence[Tuple[float, Message]]:
        delay = random.Random(f"{seed}:{request['id']}").choice((0.0, 0.0, 0.0005, 0.002))
        return [(delay, response(request["id"], request["id"]))]

    client = JsonRpcClient(scripted(MemoryPeer(script=quick)))
    try:
        for _ in range(20):
            futures = [client.request("work", timeout=30) for _ in range(250)]
            seen = threading.Semaphore(0)
            for future in futures[::7]:
                future.add_done_callback(lambda f, seen=seen: seen.release())
            done_by_as_completed: List[Future[Any]] = []
            collector = threading.Thread(
                target=lambda out=done_by_as_completed, fs=futures: out.extend(as_completed(fs, timeout=SETTLE_WAIT_S))
            )
            collector.start()
            remaining = set(futures)
            while remaining:
                done, remaining = wait(remaining, timeout=SETTLE_WAIT_S, return_when=FIRST_COMPLETED)
                assert done, f"seed {seed}: wait() missed a settle"
            assert [f.result(0) for f in futures] == [f.request_id for f in futures]  # type: ignore[attr-defined]
            collector.join(SETTLE_WAIT_S)
            assert len(done_by_as_completed) == len(futures)
            for _ in futures[::7]:
                assert seen.acquire(timeout=SETTLE_WAIT_S), f"seed {seed}: a done-callback did not run"
    finally:
        client.close()
