"""The waiter strategy: wake pipes (jsonrpc_threads.runtime.wake_pipes) and the call() waiter that sleeps on them."""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import Any, Iterator, List

import pytest

from jsonrpc_threads import JsonRpcClient
from jsonrpc_threads.errors import RequestTimeout
from jsonrpc_threads.runtime import settling, wake_pipes
from jsonrpc_threads.runtime.settling import CallWaiter
from jsonrpc_threads.runtime.wake_pipes import MAX_IDLE_WAKE_PIPES, MAX_WAKE_PIPES, PROCESS_WAKE_PIPES, WakePipes

from .forking import run_script
from .helpers import scripted
from .test_core_futures import waiter_pool

WAIT_S = 10.0

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="wake pipes are used on Linux")


@pytest.fixture
def pipes() -> Iterator[WakePipes]:
    with waiter_pool("pipe") as pool:
        assert pool is not None
        yield pool


def test_a_posted_byte_wakes_the_waiter_once(pipes: WakePipes) -> None:
    pipe = pipes.take()
    assert pipe is not None
    assert not pipe.wait(20)  # nothing posted: the poll times out
    pipe.post()
    assert pipe.wait(1000)
    assert not pipe.wait(1)  # one byte, read once
    pipes.give(pipe)


def test_closing_a_pipe_twice_never_closes_a_descriptor_reused_meanwhile() -> None:
    pipe = wake_pipes.WakePipe()
    fds = (pipe._send_fd, pipe._receive_fd)
    pipe.close()
    for fd in fds:
        with pytest.raises(OSError):
            os.fstat(fd)
    reused_r, reused_w = os.pipe()  # the lowest free numbers: likely the ones just closed
    try:
        pipe.close()
        os.fstat(reused_r)  # still open
        os.fstat(reused_w)
        with pytest.raises(OSError):
            pipe.post()  # a closed pipe writes nowhere
    finally:
        os.close(reused_r)
        os.close(reused_w)


def test_the_pool_reuses_idle_pipes_and_stops_at_its_limit(pipes: WakePipes) -> None:
    taken = [pipes.take() for _ in range(MAX_WAKE_PIPES)]
    assert all(pipe is not None for pipe in taken)
    assert pipes.take() is None  # at the limit: the caller waits on a lock
    first = taken[0]
    assert first is not None
    pipes.give(first)
    assert pipes.take() is first
    before = len(os.listdir("/proc/self/fd"))
    for pipe in taken:
        assert pipe is not None
        pipes.give(pipe)
    # The burst is over: only a few stay open.
    assert before - len(os.listdir("/proc/self/fd")) == 2 * (MAX_WAKE_PIPES - MAX_IDLE_WAKE_PIPES)
    assert pipes.counts() == (MAX_IDLE_WAKE_PIPES, MAX_IDLE_WAKE_PIPES)


def test_the_last_client_detaching_closes_idle_pipes_and_each_pipe_in_use_when_given_back() -> None:
    before = len(os.listdir("/proc/self/fd"))
    pool = WakePipes()
    pool.attach()
    pool.attach()  # two clients
    idle, in_use = pool.take(), pool.take()
    assert idle is not None and in_use is not None
    pool.give(idle)
    assert len(os.listdir("/proc/self/fd")) == before + 4
    pool.detach()  # one client is left: the idle pipe stays
    assert pool.counts() == (2, 1)
    pool.detach()  # none is left
    assert len(os.listdir("/proc/self/fd")) == before + 2
    pool.give(in_use)
    assert len(os.listdir("/proc/self/fd")) == before
    assert pool.counts() == (0, 0)
    pool.detach()  # one too many: harmless
    again = pool.take()  # a client made later gets pipes again
    assert again is not None
    pool.give(again)  # nobody attached: closed at once
    assert len(os.listdir("/proc/self/fd")) == before


def test_a_waiter_settled_before_it_waits_takes_no_pipe(pipes: WakePipes) -> None:
    waiter = CallWaiter(pipes)
    waiter.settle_result(5)
    assert waiter.wait(time.monotonic() + WAIT_S)
    waiter.finish()
    assert waiter.result() == 5
    assert pipes.counts() == (0, 0)  # none was made


def test_a_waiter_sleeping_on_a_pipe_is_woken_by_the_settle(pipes: WakePipes) -> None:
    waiter = CallWaiter(pipes)
    woke: List[bool] = []
    thread = threading.Thread(target=lambda: woke.append(waiter.wait(time.monotonic() + WAIT_S)))
    thread.start()
    start = time.monotonic()
    waiter.settle_result("answer")  # may come before or after the waiter registered its pipe
    thread.join(WAIT_S)
    assert woke == [True] and time.monotonic() - start < WAIT_S / 2
    waiter.finish()
    assert waiter.result() == "answer"
    pipe = pipes.take()
    assert pipe is not None and not pipe.wait(1)  # back in the pool, and no byte left in it
    pipes.give(pipe)


def test_a_waiter_times_out_then_reads_the_byte_of_the_settle_that_follows(pipes: WakePipes) -> None:
    waiter = CallWaiter(pipes)
    start = time.monotonic()
    assert not waiter.wait(start + 0.05)
    assert time.monotonic() - start >= 0.05  # never early
    settler = threading.Timer(0.05, waiter.settle_exception, args=(RequestTimeout("m", 1, 0.05),))
    settler.start()
    waiter.finish()  # waits for the byte of a settle on its way
    settler.join(WAIT_S)
    with pytest.raises(RequestTimeout):
        waiter.result()
    pipe = pipes.take()
    assert pipe is not None and not pipe.wait(1)
    pipes.give(pipe)


def test_a_byte_that_never_comes_sets_the_pipe_aside(pipes: WakePipes, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(settling, "WAKE_BYTE_WAIT_S", 0.05)
    waiter = CallWaiter(pipes)
    assert not waiter.wait(time.monotonic() + 0.01)
    waiter._rouse.pop()  # a settler took the wake-up and never wrote (a broken settler)
    set_aside = len(wake_pipes._SET_ASIDE)
    waiter.finish()  # bounded, and the pipe is never reused
    assert len(wake_pipes._SET_ASIDE) == set_aside + 1
    stale = wake_pipes._SET_ASIDE.pop()
    waiter.settle_result(1)  # the late byte lands in the pipe set aside
    stale.close()
    taken = [pipes.take() for _ in range(3)]
    assert stale not in taken
    for pipe in taken:
        assert pipe is not None
        pipes.give(pipe)


def test_a_waiter_nobody_settles_gives_its_pipe_back_at_once(pipes: WakePipes) -> None:
    waiter = CallWaiter(pipes)
    assert not waiter.wait(time.monotonic() + 0.01)
    start = time.monotonic()
    waiter.finish()  # its wake-up taken back: no byte can come, none is waited for
    assert time.monotonic() - start < settling.WAKE_BYTE_WAIT_S / 2
    assert pipes.counts() == (1, 1)
    waiter.settle_result(1)  # a late settling writes nothing
    pipe = pipes.take()
    assert pipe is not None and not pipe.wait(1)
    pipes.give(pipe)


def test_without_pipes_a_waiter_waits_on_a_lock() -> None:
    waiter = CallWaiter(None)
    threading.Timer(0.02, waiter.settle_result, args=(7,)).start()
    assert waiter.wait(time.monotonic() + WAIT_S)
    waiter.finish()
    assert waiter.result() == 7
    assert not CallWaiter(None).wait(time.monotonic() + 0.01)


# The race of many waiters and settlers, and Ctrl-C on a sleeping waiter, are in
# test_core_futures.py, for both waiter strategies (a wake pipe and a lock).


def test_finish_twice_gives_the_pipe_back_once(pipes: WakePipes) -> None:
    waiter = CallWaiter(pipes)
    threading.Timer(0.02, waiter.settle_result, args=(1,)).start()
    assert waiter.wait(time.monotonic() + WAIT_S)
    waiter.finish()
    waiter.finish()
    first, second = pipes.take(), pipes.take()
    assert first is not None and second is not None and first is not second
    pipes.give(first)
    pipes.give(second)


_CLIENTS_SHARE_ONE_POOL_SCRIPT = """
from jsonrpc_threads import JsonRpcClient, StdioTransport
from jsonrpc_threads.runtime.wake_pipes import MAX_IDLE_WAKE_PIPES, PROCESS_WAKE_PIPES

def fds():
    return len(os.listdir("/proc/self/fd"))

def waiting_calls(client, threads=8):
    # Each call waits a moment for its answer, so each takes a wake pipe.
    answers = []
    def one(n):
        answers.append(client.call("sleep", {"seconds": 0.05, "result": n}, timeout=10))
    workers = [threading.Thread(target=one, args=(n,)) for n in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(30)
    assert sorted(answers) == list(range(threads)), answers

start = fds()
clients = [JsonRpcClient(StdioTransport(PEER)) for _ in range(3)]
with_clients = fds()
for client in clients:
    waiting_calls(client)
opened, idle = PROCESS_WAKE_PIPES.counts()
# However many clients waited, the process keeps a few pipes idle, not a few per client.
assert opened == idle <= MAX_IDLE_WAKE_PIPES, (opened, idle)
assert fds() - with_clients == 2 * idle
print("idle", idle)
clients[0].close()
assert PROCESS_WAKE_PIPES.counts() == (opened, idle)  # two clients still use them
clients[1].close()
child = os.fork()
if child == 0:  # a forked child starts with an empty pool of its own
    ok = False
    try:
        ok = PROCESS_WAKE_PIPES.counts() == (0, 0)
        with JsonRpcClient(StdioTransport(PEER)) as child_client:
            waiting_calls(child_client, threads=4)
        ok = ok and PROCESS_WAKE_PIPES.counts() == (0, 0)
    finally:
        os._exit(0 if ok else 1)
_, status = os.waitpid(child, 0)
print("child", os.waitstatus_to_exitcode(status))
assert PROCESS_WAKE_PIPES.counts() == (opened, idle)  # the child closed only its copies
clients[2].close()
print("left", PROCESS_WAKE_PIPES.counts(), fds() - start)
"""


def test_clients_share_the_process_pool_and_closing_the_last_leaves_no_pipe() -> None:
    # A registry of many servers keeps a few idle pipes in all, and none once every client is closed.
    lines = run_script("", _CLIENTS_SHARE_ONE_POOL_SCRIPT, timeout=120)
    assert 0 < int(lines[0].split()[1]) <= MAX_IDLE_WAKE_PIPES, lines  # they did wait on pipes
    assert lines[1] == "child 0", lines
    assert lines[2] == "left (0, 0) 0", lines


@pytest.fixture
def counted_yields(monkeypatch: pytest.MonkeyPatch) -> List[int]:
    """Every CPU yield of a wake-up, counted (the yields still happen)."""
    yields: List[int] = []

    def counting_yield() -> None:
        yields.append(1)
        os.sched_yield()

    monkeypatch.setattr(wake_pipes, "_yield_cpu", counting_yield)
    return yields


def test_on_several_cpus_each_wake_up_yields(
    pipes: WakePipes, counted_yields: List[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(wake_pipes, "_one_cpu", [False, float("inf")])  # several CPUs, looked at already
    pipe = pipes.take()
    assert pipe is not None
    for _ in range(3):
        pipe.post()
        assert pipe.wait(1000)
    pipes.give(pipe)
    assert counted_yields == [1, 1, 1]


def test_on_one_cpu_a_wake_up_does_not_yield(
    pipes: WakePipes, counted_yields: List[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    # There the woken caller runs when the waker next waits: a yield would add a switch there and back.
    monkeypatch.setattr(wake_pipes, "_one_cpu", [True, float("inf")])
    pipe = pipes.take()
    assert pipe is not None
    pipe.post()
    assert pipe.wait(1000)
    pipes.give(pipe)
    assert counted_yields == []


def test_the_affinity_is_looked_at_again_after_a_while(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wake_pipes, "_one_cpu", [True, 0.0])  # stale: looked at again now
    assert wake_pipes._on_one_cpu() == (len(os.sched_getaffinity(0)) == 1)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="wake pipes: Linux")
@pytest.mark.parametrize("waiter", ["wake_pipe", "plain"])
def test_only_the_wake_pipe_waiter_sleeps_on_the_process_pipes(waiter: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # JsonRpcClient(waiter=): "plain" never attaches to the process's pool nor takes a pipe from it.
    taken: List[int] = []
    real_take = PROCESS_WAKE_PIPES.take

    def counting_take() -> Any:
        taken.append(1)
        return real_take()

    monkeypatch.setattr(PROCESS_WAKE_PIPES, "take", counting_take)
    with JsonRpcClient(scripted(), waiter=waiter) as client:
        for _ in range(3):
            assert client.call("sleep", {"seconds": 0.02, "result": 1}, timeout=WAIT_S) == 1
    assert (len(taken) == 3) == (waiter == "wake_pipe"), taken
