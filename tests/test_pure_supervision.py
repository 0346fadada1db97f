"""A server's life in the tool registry (restarts, failure, idle, health), in memory: the pure tier's supervision tests.

The registry reaches its servers through its public ``transport_factory``:
each start of a server is a fresh in-memory peer (tests/memory_peers.py),
the bundled example server's ``handle``, whose ``crash`` tool ends the
connection with no answer as a process's exit does.  What a memory peer
cannot show (exit codes, stderr, pids, signals, process trees) stays in
tests/test_supervision.py, over real child processes, with the same
behaviours.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Dict, Iterator, List

import pytest

from jsonrpc_threads.errors import RequestTimeout
from jsonrpc_threads.mcp import ServerUnavailable, ToolRegistry

from .memory_peers import PeerEnds, ServedPeer, example_server
from .registry_support import openai_call

WAIT_S = 10.0
#: A backoff long enough that a test sees "restarting" before the restart is due.
SLOW_BACKOFF_S = 1.5
#: How late past its deadline a call may return on a loaded machine (the wait itself is bounded).
LATE_S = 1.0
STATUS_KEYS = {"state", "pid", "restarts", "last_error"}


@pytest.fixture
def ends() -> Iterator[PeerEnds]:
    made = PeerEnds()
    yield made
    made.close_all()


def registry_of(ends: PeerEnds, workers: int = 4, **options: Any) -> ToolRegistry:
    """A registry of one server, ``example``; each of its starts is a fresh example server in memory."""
    options.setdefault("default_timeout", WAIT_S)
    options.setdefault("startup_timeout", WAIT_S)
    return ToolRegistry.from_config(
        {"mcpServers": {"example": {"command": "in-memory"}}},
        transport_factory=lambda config: ends.add(example_server(workers)).transport,
        **options,
    )


def crash(registry: ToolRegistry) -> str:
    return str(registry.execute(openai_call("mcp__example__crash", {"code": 3}))["content"])


def started(ends: PeerEnds) -> int:
    return len(ends.made)


def test_a_crash_is_restarted_after_the_backoff_and_status_says_so(ends: PeerEnds) -> None:
    with registry_of(ends, restart_backoff=SLOW_BACKOFF_S) as registry:
        assert registry.status() == {"example": {"state": "idle", "pid": None, "restarts": 0, "last_error": None}}
        registry.start()
        assert registry.status()["example"]["state"] == "running" and started(ends) == 1
        assert crash(registry).startswith("Error:")
        status = registry.status()["example"]
        assert set(status) == STATUS_KEYS
        assert status["state"] == "restarting" and status["restarts"] == 1 and status["last_error"]
        assert registry.tools(), "the tools of a restarting server are still offered"
        begun = time.monotonic()
        assert registry.execute(openai_call("mcp__example__add", {"a": 2, "b": 2}))["content"] == "4"
        assert time.monotonic() - begun < SLOW_BACKOFF_S + WAIT_S
        after = registry.status()["example"]
        assert after["state"] == "running" and after["restarts"] == 1 and started(ends) == 2


def test_a_call_whose_deadline_ends_before_the_restart_fails_at_once_with_server_unavailable(ends: PeerEnds) -> None:
    with registry_of(ends, restart_backoff=SLOW_BACKOFF_S) as registry:
        registry.start()
        crash(registry)
        begun = time.monotonic()
        with pytest.raises(ServerUnavailable, match="is restarting") as info:
            registry.call_tool("example", "add", {"a": 1, "b": 1}, timeout=0.5)
        assert time.monotonic() - begun < 0.5, "it waited for a restart due after its deadline"
        assert info.value.retry_after is not None and 0 < info.value.retry_after <= SLOW_BACKOFF_S
        message = registry.execute(openai_call("mcp__example__add", {"a": 1, "b": 1}), timeout=0.5)
        assert message["content"].startswith("Error:") and "is restarting" in message["content"]
        assert registry.call_tool("example", "add", {"a": 1, "b": 1}, timeout=WAIT_S)["content"][0]["text"] == "2"


def test_calls_waiting_for_a_restart_wait_no_longer_than_their_deadline(ends: PeerEnds) -> None:
    with registry_of(ends, restart_backoff=0.0) as registry:
        registry.start()
        crash(registry)
        results: List[Any] = []

        def call() -> None:
            begun = time.monotonic()
            try:
                registry.call_tool("example", "slow", {"seconds": 1.0}, timeout=0.5)
                results.append(("ok", time.monotonic() - begun))
            except (RequestTimeout, ServerUnavailable) as exc:
                results.append((type(exc).__name__, time.monotonic() - begun))

        threads = [threading.Thread(target=call) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(WAIT_S)
        assert len(results) == 8
        for kind, elapsed in results:
            assert kind in ("RequestTimeout", "ServerUnavailable") and elapsed < 0.5 + LATE_S, results
        assert registry.status()["example"]["restarts"] == 1  # eight waiters, one restart


def test_too_many_stops_leave_the_server_failed_until_retry_after(ends: PeerEnds) -> None:
    options: Dict[str, Any] = {"max_restarts": 2, "restart_backoff": 0.0, "retry_failed_after": 60.0}
    with registry_of(ends, **options) as registry:
        registry.start()
        for _ in range(2):
            crash(registry)
            registry.session("example")  # waits for the restart
            assert registry.status()["example"]["state"] == "running"
        crash(registry)  # the third: one too many
        status = registry.status()["example"]
        assert status["state"] == "failed" and status["restarts"] == 2
        with pytest.raises(ServerUnavailable, match="is failed") as info:
            registry.session("example")
        assert info.value.retry_after is not None and 55.0 < info.value.retry_after <= 60.0
        assert "example" in registry.errors and registry.tools() == []
        message = registry.execute(openai_call("mcp__example__add", {"a": 1, "b": 1}))
        assert message["content"].startswith("Error:") and "unavailable" in message["content"]
        registry.retry_failed_after = 0.0
        assert registry.execute(openai_call("mcp__example__add", {"a": 1, "b": 1}))["content"] == "2"
        assert registry.status()["example"]["state"] == "running"


def test_a_first_start_that_fails_is_failed_at_once(ends: PeerEnds) -> None:
    def refuse(config: Any) -> Any:
        raise ConnectionRefusedError("nobody there")

    registry = ToolRegistry.from_config(
        {"mcpServers": {"gone": {"command": "in-memory"}, "bad": {"command": 3}}}, transport_factory=refuse
    )
    with registry:
        registry.start()
        status = registry.status()
        assert status["gone"]["state"] == "failed" and "nobody there" in status["gone"]["last_error"]
        assert status["bad"]["state"] == "failed" and status["bad"]["last_error"]


def test_an_unused_server_is_closed_after_idle_timeout_and_started_again_on_use(ends: PeerEnds) -> None:
    with registry_of(ends, idle_timeout=0.5) as registry:
        assert registry.execute(openai_call("mcp__example__add", {"a": 1, "b": 2}))["content"] == "3"
        first: ServedPeer = ends.made[0]
        assert first.ended.wait(WAIT_S), "the idle server was not closed"
        assert registry.status()["example"] == {"state": "idle", "pid": None, "restarts": 0, "last_error": None}
        assert [tool["name"] for tool in registry.tools()][:1] == ["mcp__example__add"]  # no start for a list
        assert registry.status()["example"]["state"] == "idle" and started(ends) == 1
        assert registry.execute(openai_call("mcp__example__add", {"a": 2, "b": 2}))["content"] == "4"
        second = registry.status()["example"]
        assert second["state"] == "running" and second["restarts"] == 0 and started(ends) == 2


def test_a_call_in_flight_keeps_an_idle_timeout_from_closing_its_server(ends: PeerEnds) -> None:
    with registry_of(ends, idle_timeout=0.2) as registry:
        message = registry.execute(openai_call("mcp__example__slow", {"seconds": 0.6, "steps": 3}))
        assert message["content"] == "waited 0.6s in 3 steps"
        assert registry.status()["example"]["restarts"] == 0


def test_a_server_that_stops_answering_its_health_ping_is_restarted(ends: PeerEnds) -> None:
    options: Dict[str, Any] = {"health_interval": 0.3, "health_timeout": 0.5, "restart_backoff": 0.0}
    with registry_of(ends, workers=1, **options) as registry:
        registry.start()
        hung: ServedPeer = ends.made[0]
        with pytest.raises(RequestTimeout):
            registry.call_tool("example", "slow", {"seconds": 2}, timeout=0.2)  # its one worker is now busy
        assert hung.ended.wait(WAIT_S), "the hung server was not closed"
        registry.session("example")  # waits for the restart
        status = registry.status()["example"]
        assert status["state"] == "running" and status["restarts"] == 1 and started(ends) == 2
        assert "health ping" in status["last_error"]
        assert registry.call_tool("example", "add", {"a": 1, "b": 1})["content"][0]["text"] == "2"


def test_stats_count_calls_errors_timeouts_and_restarts(ends: PeerEnds) -> None:
    with registry_of(ends, restart_backoff=0.0) as registry:
        registry.start()
        for i in range(3):
            registry.call_tool("example", "add", {"a": i, "b": 1})
        with pytest.raises(RequestTimeout):
            registry.call_tool("example", "slow", {"seconds": 30}, timeout=0.2)
        registry.execute(openai_call("mcp__example__nope", {}))
        crash(registry)
        registry.session("example")
        example = registry.stats()["example"]
        assert example["calls"] >= 8 and example["timeouts"] == 1 and example["restarts"] == 1
        assert example["errors"] >= 1 and example["pending"] == 0


def test_calls_racing_the_idle_close_always_reach_a_session(ends: PeerEnds) -> None:
    """A call finds the session running without the lock; retired just then, it starts it again, never fails."""
    failures: List[BaseException] = []
    callers, rounds = 6, 30
    together = threading.Barrier(callers)
    never = threading.Event()  # never set: a bounded pause that is not a sleep

    def caller(seed: int) -> None:
        for number in range(rounds):
            try:
                message = registry.execute(openai_call("mcp__example__add", {"a": seed, "b": number}))
                assert message["content"] == str(seed + number), message
                together.wait(WAIT_S)
            except BaseException as exc:  # collected, asserted below
                failures.append(exc)
                return
            # All quiet for about the idle timeout: the session is retired as the next calls come.
            never.wait(0.015 + (number % 4) * 0.005)

    with registry_of(ends, idle_timeout=0.02) as registry:
        threads = [threading.Thread(target=caller, args=(seed,)) for seed in range(callers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(WAIT_S * 3)
        assert not any(thread.is_alive() for thread in threads)
        assert registry.execute(openai_call("mcp__example__add", {"a": 1, "b": 1}))["content"] == "2"
        made = started(ends)
        # A call that found the session running (the way in without the lock) holds it past the idle timeout.
        message = registry.execute(openai_call("mcp__example__slow", {"seconds": 0.2, "steps": 2}))
        assert message["content"] == "waited 0.2s in 2 steps" and started(ends) == made
    assert failures == []
    assert made >= 3, "the idle timeout seldom closed the session: the race was not run"
