"""Leases on an MCP session: pure tests (no I/O), with a clock of our own and real threads racing."""

from __future__ import annotations

import sys
import threading
from typing import List

import pytest

from jsonrpc_threads.errors import TransportClosed
from jsonrpc_threads.mcp.leases import Leases

from .tiers import budget

JOIN_S = 30.0
#: Races run by the thread test, and the threads taking leases in each.
TRIALS = budget(30)
CALLERS = 3


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_session_is_idle_only_while_no_lease_is_held() -> None:
    clock = Clock()
    leases = Leases(clock)
    clock.now += 5
    assert leases.idle_for() == 5.0
    with leases:
        assert leases.held == 1
        assert leases.idle_for() is None
        clock.now += 60
        assert not leases.retire_if_idle(10.0)  # a call longer than idle_timeout is never cut off
    assert leases.held == 0
    assert leases.idle_for() == 0.0  # counted from the release
    clock.now += 9
    assert not leases.retire_if_idle(10.0)
    clock.now += 1
    assert leases.retire_if_idle(10.0)


def test_after_retirement_a_lease_is_refused_and_nothing_is_left_held() -> None:
    clock = Clock()
    leases = Leases(clock)
    assert leases.retire_if_idle(0.0)
    with pytest.raises(TransportClosed, match="idle_timeout"):
        leases.take()
    with pytest.raises(TransportClosed), leases:
        pass
    assert leases.held == 0


def test_a_release_without_a_lease_is_ignored() -> None:
    leases = Leases(Clock())
    leases.release()
    leases.take()
    leases.release("a future, as a done-callback gets it")
    leases.release()
    assert leases.held == 0


def test_retirement_never_happens_under_a_held_lease_while_threads_race() -> None:
    # Takes and releases take no lock; still, no lease is ever held in a retired session (which
    # would be closed under a running call). Many short races, threads switching as often as they can.
    errors: List[str] = []
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for _ in range(TRIALS):
            _race(Leases(), errors)
    finally:
        sys.setswitchinterval(interval)
    assert errors == []


def _race(leases: Leases, errors: List[str]) -> None:
    retired = threading.Event()
    start = threading.Barrier(CALLERS + 1)

    def caller() -> None:
        start.wait(JOIN_S)
        while True:
            try:
                leases.take()
            except TransportClosed:
                return
            if retired.is_set():
                errors.append("a lease was taken in a retired session")
            leases.release()

    def retirer() -> None:
        start.wait(JOIN_S)
        while not leases.held:  # the callers are at work: the decision falls in the middle of the race
            pass
        while not leases.retire_if_idle(0.0):
            pass
        retired.set()

    threads = [threading.Thread(target=caller) for _ in range(CALLERS)] + [threading.Thread(target=retirer)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(JOIN_S)
    assert not any(thread.is_alive() for thread in threads)
    assert leases.held == 0
