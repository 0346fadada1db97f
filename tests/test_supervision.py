"""Supervised servers in the tool registry (jsonrpc_threads/mcp/supervisor.py), over real child processes.

A server that stops is restarted after a backoff, a bounded number of times,
then reported failed with its exit code and stderr until ``retry_failed_after``;
calls made meanwhile wait within their own deadline or fail with
``ServerUnavailable``; an unused server is closed after ``idle_timeout`` and
started again on use; a server that stops answering its health ping is
restarted; ``status()`` says all of it.  Waits are on the server's process
(a pidfd, readable when it exits) or on the registry's own calls, never a sleep.
"""

from __future__ import annotations

import os
import select
import sys
import threading
import time
from typing import Any, Dict, List

import pytest

from jsonrpc_threads.errors import RequestTimeout
from jsonrpc_threads.mcp import ServerUnavailable
from jsonrpc_threads.mcp.restarts import RestartPolicy, StopHistory
from jsonrpc_threads.observe import WireMessage

from .conftest import PEERS_DIR
from .registry_support import (
    EXAMPLE,
    MISSING,
    WAIT_S,
    baseline,  # noqa: F401 - an autouse fixture
    children,
    make_registry,
    openai_call,
)

ONE_WORKER = {"command": sys.executable, "args": [str(PEERS_DIR / "mcp_one_worker.py")]}
#: A backoff long enough that a test sees "restarting" before the restart is due.
SLOW_BACKOFF_S = 3.0
#: How late past its deadline a call may return on a loaded machine (the wait itself is bounded).
LATE_S = 1.0
STATUS_KEYS = {"state", "pid", "restarts", "last_error"}


def wait_exit(pid: int, timeout: float) -> bool:
    """True once process ``pid`` exited (a pidfd: readable at its exit; it is not reaped here)."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        readable, _, _ = select.select([fd], [], [], timeout)
        return bool(readable)
    finally:
        os.close(fd)


def crash(registry: Any, code: int = 3) -> str:
    return str(registry.execute(openai_call("mcp__example__crash", {"code": code}))["content"])


# -- the pure policy --------------------------------------------------------------------------


def test_backoff_doubles_up_to_its_limit_and_the_bound_gives_up() -> None:
    policy = RestartPolicy(max_restarts=5, window=180.0, backoff=0.5, max_backoff=3.0)
    assert [policy.delay(n) for n in range(1, 7)] == [0.5, 1.0, 2.0, 3.0, 3.0, None]
    assert RestartPolicy(max_restarts=0).delay(1) is None
    history = StopHistory()
    assert [history.record(t, 10.0) for t in (0.0, 1.0, 2.0)] == [1, 2, 3]
    assert history.record(11.5, 10.0) == 2  # the stops at 0 and 1 are out of the window
    for bad in (-1.0, float("nan")):
        with pytest.raises(ValueError):
            RestartPolicy(backoff=bad)
    with pytest.raises(TypeError):
        RestartPolicy(window="1")  # type: ignore[arg-type]


# -- restarts ---------------------------------------------------------------------------------


def test_a_crash_is_restarted_after_the_backoff_and_status_says_so() -> None:
    with make_registry({"mcpServers": {"example": EXAMPLE}}, restart_backoff=SLOW_BACKOFF_S) as registry:
        assert registry.status() == {"example": {"state": "idle", "pid": None, "restarts": 0, "last_error": None}}
        registry.start()
        running = registry.status()["example"]
        assert running["state"] == "running" and running["pid"] == children()[0].pid
        assert "exit code 3" in crash(registry)
        status = registry.status()["example"]
        assert set(status) == STATUS_KEYS
        assert status["state"] == "restarting" and status["pid"] is None and status["restarts"] == 1
        assert "exit code 3" in status["last_error"] and "crashing on purpose" in status["last_error"]
        assert registry.tools(), "the tools of a restarting server are still offered"
        started = time.monotonic()
        assert registry.execute(openai_call("mcp__example__add", {"a": 2, "b": 2}))["content"] == "4"
        assert time.monotonic() - started < SLOW_BACKOFF_S + WAIT_S
        after = registry.status()["example"]
        assert after["state"] == "running" and after["pid"] not in (None, running["pid"])
        assert after["restarts"] == 1 and "exit code 3" in after["last_error"]


def test_a_call_whose_deadline_ends_before_the_restart_fails_at_once_with_server_unavailable() -> None:
    with make_registry({"mcpServers": {"example": EXAMPLE}}, restart_backoff=SLOW_BACKOFF_S) as registry:
        registry.start()
        crash(registry)
        started = time.monotonic()
        with pytest.raises(ServerUnavailable, match="is restarting") as info:
            registry.call_tool("example", "add", {"a": 1, "b": 1}, timeout=1.0)
        assert time.monotonic() - started < 1.0, "it waited for a restart due after its deadline"
        assert info.value.retry_after is not None and 0 < info.value.retry_after <= SLOW_BACKOFF_S
        message = registry.execute(openai_call("mcp__example__add", {"a": 1, "b": 1}), timeout=1.0)
        assert message["content"].startswith("Error:") and "is restarting" in message["content"]
        # A call with time enough waits for the restart and goes through.
        assert registry.call_tool("example", "add", {"a": 1, "b": 1}, timeout=WAIT_S)["content"][0]["text"] == "2"


def test_calls_waiting_for_a_restart_wait_no_longer_than_their_deadline() -> None:
    # Eight calls of a tool slower than their deadline, made as the server restarts:
    # each gets the new session or not in time, and none waits past its deadline.
    config = {"mcpServers": {"example": EXAMPLE}}
    with make_registry(config, restart_backoff=0.0) as registry:
        registry.start()
        crash(registry)
        results: List[Any] = []

        def call() -> None:
            started = time.monotonic()
            try:
                registry.call_tool("example", "slow", {"seconds": 5.0}, timeout=1.0)
                results.append(("ok", time.monotonic() - started))
            except (RequestTimeout, ServerUnavailable) as exc:
                results.append((type(exc).__name__, time.monotonic() - started))

        threads = [threading.Thread(target=call) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(WAIT_S)
        assert len(results) == 8
        for kind, elapsed in results:
            assert kind in ("RequestTimeout", "ServerUnavailable") and elapsed < 1.0 + LATE_S, results
        assert registry.status()["example"]["restarts"] == 1  # eight waiters, one restart


def test_too_many_stops_leave_the_server_failed_with_its_exit_code_until_retry_after() -> None:
    options: Dict[str, Any] = {"max_restarts": 2, "restart_backoff": 0.0, "retry_failed_after": 60.0}
    with make_registry({"mcpServers": {"example": EXAMPLE}}, **options) as registry:
        registry.start()
        for _ in range(2):  # two stops: two restarts
            crash(registry, code=7)
            registry.session("example")  # waits for the restart
            assert registry.status()["example"]["state"] == "running"
        crash(registry, code=7)  # the third: one too many
        status = registry.status()["example"]
        assert status["state"] == "failed" and status["pid"] is None and status["restarts"] == 2
        assert "exit code 7" in status["last_error"] and "crashing on purpose" in status["last_error"]
        with pytest.raises(ServerUnavailable, match="is failed") as info:
            registry.session("example")
        error = info.value
        assert error.returncode == 7 and "crashing on purpose" in error.stderr_tail
        assert error.retry_after is not None and 55.0 < error.retry_after <= 60.0
        assert "example" in registry.errors and registry.tools() == []
        message = registry.execute(openai_call("mcp__example__add", {"a": 1, "b": 1}))
        assert message["content"].startswith("Error:") and "unavailable" in message["content"]
        # Once retry_failed_after has passed, a use starts it again with a clean slate.
        registry.retry_failed_after = 0.0
        assert registry.execute(openai_call("mcp__example__add", {"a": 1, "b": 1}))["content"] == "2"
        assert registry.status()["example"]["state"] == "running"


def test_a_first_start_that_fails_is_failed_at_once_and_a_bad_entry_too() -> None:
    config = {"mcpServers": {"missing": MISSING, "bad": {"command": 3}}}
    with make_registry(config) as registry:
        registry.start()
        status = registry.status()
        assert (
            status["missing"]["state"] == "failed"
            and "jsonrpc-threads-no-such-command" in status["missing"]["last_error"]
        )
        assert status["bad"]["state"] == "failed" and status["bad"]["last_error"]
        assert all(set(entry) == STATUS_KEYS and entry["pid"] is None for entry in status.values())


# -- idle and health --------------------------------------------------------------------------


def test_an_unused_server_is_closed_after_idle_timeout_and_started_again_on_use() -> None:
    with make_registry({"mcpServers": {"example": EXAMPLE}}, idle_timeout=2.0) as registry:
        assert registry.execute(openai_call("mcp__example__add", {"a": 1, "b": 2}))["content"] == "3"
        first = registry.status()["example"]["pid"]
        assert isinstance(first, int)
        assert wait_exit(first, WAIT_S), "the idle server was not closed"
        assert registry.status()["example"] == {"state": "idle", "pid": None, "restarts": 0, "last_error": None}
        assert [tool["name"] for tool in registry.tools()][:1] == ["mcp__example__add"]  # no start for a list
        assert registry.status()["example"]["state"] == "idle"
        assert registry.execute(openai_call("mcp__example__add", {"a": 2, "b": 2}))["content"] == "4"
        second = registry.status()["example"]
        assert second["state"] == "running" and second["pid"] not in (None, first) and second["restarts"] == 0


def test_a_call_in_flight_keeps_an_idle_timeout_from_closing_its_server() -> None:
    with make_registry({"mcpServers": {"example": EXAMPLE}}, idle_timeout=0.3) as registry:
        message = registry.execute(openai_call("mcp__example__slow", {"seconds": 1.5, "steps": 3}))
        assert message["content"] == "waited 1.5s in 3 steps"
        assert registry.status()["example"]["restarts"] == 0


def test_a_server_that_stops_answering_its_health_ping_is_restarted() -> None:
    options: Dict[str, Any] = {"health_interval": 0.5, "health_timeout": 2.0, "restart_backoff": 0.0}
    with make_registry({"mcpServers": {"one": ONE_WORKER}}, **options) as registry:
        registry.start()
        hung = registry.status()["one"]["pid"]
        with pytest.raises(RequestTimeout):
            registry.call_tool("one", "slow", {"seconds": 60}, timeout=0.2)  # its one worker is now busy
        assert wait_exit(hung, WAIT_S), "the hung server was not closed"
        registry.session("one")  # waits for the restart
        status = registry.status()["one"]
        assert status["state"] == "running" and status["pid"] != hung and status["restarts"] == 1
        assert "health ping" in status["last_error"]
        assert registry.call_tool("one", "add", {"a": 1, "b": 1})["content"][0]["text"] == "2"


# -- observing --------------------------------------------------------------------------------


def test_stats_count_calls_errors_timeouts_and_restarts() -> None:
    with make_registry({"mcpServers": {"example": EXAMPLE}}, restart_backoff=0.0) as registry:
        registry.start()
        for i in range(3):
            registry.call_tool("example", "add", {"a": i, "b": 1})
        with pytest.raises(RequestTimeout):
            registry.call_tool("example", "slow", {"seconds": 30}, timeout=0.2)
        registry.execute(openai_call("mcp__example__nope", {}))
        crash(registry)
        registry.session("example")
        stats = registry.stats()
        example = stats["example"]
        # initialize, tools/list (twice: the miss), 3 adds, slow, crash; then initialize, tools/list again
        assert example["calls"] >= 8 and example["timeouts"] == 1 and example["restarts"] == 1
        assert example["errors"] >= 1 and example["pending"] == 0
        assert stats["*"]["calls"] == example["calls"]


def test_stats_name_what_they_count_tool_calls_apart_from_requests_and_a_cancelled_call_shows() -> None:
    with make_registry({"mcpServers": {"example": EXAMPLE}}) as registry:
        for i in range(16):
            registry.call_tool("example", "add", {"a": i, "b": 1})
        with pytest.raises(RequestTimeout):
            registry.call_tool("example", "slow", {"seconds": 30}, timeout=0.2)
        message = registry.execute(openai_call("mcp__example__slow", {"seconds": 30}), timeout=0.2)
        assert "the call was cancelled" in message["content"]
        example = registry.stats()["example"]
        assert example["tool_calls"] == 18 and example["tool_calls_cancelled"] == 2
        assert example["tool_calls_failed"] == 0
        assert example["requests"] == example["calls"] >= 20  # initialize and tools/list too
        assert example["request_timeouts"] == example["timeouts"] == 2
        assert example["requests_pending"] == example["pending"]
        assert registry.stats()["*"]["tool_calls"] == 18


def test_a_wire_trace_sees_every_message_in_order_on_a_thread_of_its_own() -> None:
    seen: List[Any] = []
    done = threading.Event()

    def trace(server: str, message: WireMessage) -> None:
        seen.append((server, message.direction, message.text, threading.current_thread().name))
        if '"result"' in message.text and "hello Bearer" in message.text:
            done.set()

    with make_registry({"mcpServers": {"example": EXAMPLE}}, wire_trace=trace) as registry:
        registry.call_tool("example", "echo", {"text": "hello Bearer sk-0123456789"})
        assert done.wait(WAIT_S)
    methods = [text for _, direction, text, _ in seen if direction == "out"]
    # The first message opens the session: server/discover (auto mode asks it first), or initialize.
    assert '"server/discover"' in methods[0] or '"initialize"' in methods[0]
    assert any('"initialize"' in text for text in methods)  # the example server is of the session era
    assert any('"tools/call"' in text for text in methods)
    assert all(server == "example" for server, _, _, _ in seen)
    assert all(name.startswith("jsonrpc-wire-trace") for _, _, _, name in seen)
    assert not any("sk-0123456789" in text for _, _, text, _ in seen), "a credential reached the trace"
    assert any("Bearer <redacted>" in text for _, _, text, _ in seen)


def test_a_registry_closed_at_interpreter_exit_closes_every_server() -> None:
    # A web app closes its registry from atexit, when concurrent.futures takes no more work.
    import subprocess  # noqa: PLC0415

    script = """
import atexit, json, sys
from jsonrpc_threads.mcp import ToolRegistry
server = {"command": sys.executable, "args": ["-m", "jsonrpc_threads.examples.mcp_tool_server"]}
registry = ToolRegistry.from_config({"mcpServers": {"a": server, "b": server, "c": server}})
registry.start()
print(json.dumps([entry["pid"] for entry in registry.status().values()]), flush=True)
atexit.register(registry.close)
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0 and "Exception" not in result.stderr, result.stderr
    for pid in __import__("json").loads(result.stdout):
        assert wait_exit(pid, WAIT_S), f"server {pid} was left running"
