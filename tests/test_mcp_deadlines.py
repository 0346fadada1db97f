"""Every layer keeps the caller's deadline: handshakes, renewals, starts and task pools bounded by the call (issue 35).

Each case runs over a real peer: tests/peers/mcp_slow_peer.py as a child
process (an ``initialize`` that answers after a few seconds, a server that
answers nothing, a server of the stateless era with tasks) or in this process
over Streamable HTTP (sessions the test expires), the bundled example server,
and the official SDK's legacy HTTP+SSE server for the fallback.  Waits are on
events, futures and the peers' own records, never a sleep.
"""

from __future__ import annotations

import json
import logging
import sys
import threading
import time
from concurrent.futures import CancelledError, Future
from concurrent.futures import wait as futures_wait
from pathlib import Path
from typing import Any, Dict, Iterator, List

import pytest

from jsonrpc_threads import RequestTimeout, TransportClosed
from jsonrpc_threads.mcp import McpClient, TaskFuture
from jsonrpc_threads.observe import WireMessage, trace_wire

from .conftest import PEERS_DIR, needs_sdk, peer_command
from .peers.mcp_launch import ServerProcess
from .peers.mcp_slow_peer import SlowHttpPeer
from .registry_support import EXAMPLE, WAIT_S, baseline, make_registry, openai_call  # noqa: F401 - an autouse fixture
from .test_cli import run, run_on_terminal

#: How late past its deadline a call may return on a loaded machine (the wait itself is bounded).
LATE_S = 1.0
#: The slow peer's initialize: well past the short deadlines below.
SLOW_INITIALIZE_S = 3.0


def slow_peer(*flags: str) -> Dict[str, Any]:
    argv = peer_command("mcp_slow_peer", *flags)
    return {"command": argv[0], "args": argv[1:]}


def structured(result: Dict[str, Any]) -> Dict[str, Any]:
    value: Dict[str, Any] = result["structuredContent"]
    return value


def text_of(result: Any) -> str:
    return str(result["content"][0]["text"])


def on_sent(client: McpClient, method: str) -> threading.Event:
    """An event set once ``client`` sent a request of ``method`` (seen by a wire trace, on its own thread)."""
    sent = threading.Event()

    def trace(message: WireMessage) -> None:
        if message.direction == "out" and f'"method": "{method}"' in message.text.replace('":"', '": "'):
            sent.set()

    trace_wire(client.rpc, trace)
    return sent


class LogRecords(logging.Handler):
    """Sets an event when a record of one logger contains a text."""

    def __init__(self, text: str) -> None:
        super().__init__(logging.DEBUG)
        self.text = text
        self.seen = threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if self.text in record.getMessage():
            self.seen.set()


@pytest.fixture
def log_records() -> Iterator[List[LogRecords]]:
    handlers: List[LogRecords] = []
    logger = logging.getLogger("jsonrpc_threads.mcp")
    saved = logger.level
    logger.setLevel(logging.DEBUG)
    yield handlers
    for handler in handlers:
        logger.removeHandler(handler)
    logger.setLevel(saved)


def watch(handlers: List[LogRecords], text: str) -> threading.Event:
    handler = LogRecords(text)
    handlers.append(handler)
    logging.getLogger("jsonrpc_threads.mcp").addHandler(handler)
    return handler.seen


@pytest.fixture
def lazy() -> Iterator[List[McpClient]]:
    """Clients made without ``with`` (no handshake on entering): each is closed after the test."""
    made: List[McpClient] = []
    yield made
    for client in made:
        client.close()


def lazy_client(made: List[McpClient], server: Any, **options: Any) -> McpClient:
    options.setdefault("default_timeout", WAIT_S)
    client = McpClient(server, **options)
    made.append(client)
    return client


# -- 1, 2: the handshake (and a renewal) is one flight, bounded by each caller's deadline ---------------


def test_a_caller_waits_for_another_threads_handshake_no_longer_than_its_own_deadline(lazy: List[McpClient]) -> None:
    client = lazy_client(lazy, slow_peer("--initialize-delay", str(SLOW_INITIALIZE_S)))
    sent = on_sent(client, "initialize")
    results: List[Any] = []
    leader = threading.Thread(target=lambda: results.append(client.call_tool("echo", {"text": "a"}, timeout=None)))
    leader.start()
    try:
        assert sent.wait(WAIT_S)
        started = time.monotonic()
        with pytest.raises(RequestTimeout) as caught:
            client.call_tool("echo", {"text": "b"}, timeout=0.5)
        assert time.monotonic() - started < 0.5 + LATE_S
        assert caught.value.timeout == 0.5 and caught.value.method == "initialize"
        assert "initialize" in caught.value.message
        # A third caller joins the same handshake (no second initialize) and gets it in time.
        assert text_of(client.call_tool("echo", {"text": "c"}, timeout=WAIT_S)) == "c"
    finally:
        leader.join(WAIT_S)
    assert [text_of(result) for result in results] == ["a"]
    assert structured(client.call_tool("log"))["methods"].count("initialize") == 1


def test_the_first_calls_timeout_bounds_the_implicit_handshake(lazy: List[McpClient]) -> None:
    client = lazy_client(lazy, slow_peer("--initialize-delay", str(SLOW_INITIALIZE_S)))
    started = time.monotonic()
    with pytest.raises(RequestTimeout) as caught:
        client.call_tool("echo", {"text": "late"}, timeout=1.0)
    assert time.monotonic() - started < 1.0 + LATE_S
    assert (caught.value.method, caught.value.timeout) == ("initialize", 1.0)
    # Nothing is left half-done: the next call with time to spare settles the era and is answered.
    assert text_of(client.call_tool("echo", {"text": "in time"}, timeout=WAIT_S)) == "in time"
    assert client.era == "session"
    seen = structured(client.call_tool("log"))
    assert seen["cancelled"] == []  # initialize given up is never cancelled on the wire (MCP forbids it)
    assert seen["methods"].count("server/discover") == 1  # the era was known: the second handshake had no probe


def test_a_renewal_after_404_is_bounded_by_the_calls_deadline_and_shared() -> None:
    with SlowHttpPeer() as peer, McpClient({"url": peer.url}, mode="session", default_timeout=WAIT_S) as client:
        assert text_of(client.call_tool("echo", {"text": "first"})) == "first"
        peer.behaviour.initialize_delay = SLOW_INITIALIZE_S
        peer.expire()
        started = time.monotonic()
        with pytest.raises(RequestTimeout) as caught:
            client.call_tool("echo", {"text": "renewing"}, timeout=1.0)
        assert time.monotonic() - started < 1.0 + LATE_S
        assert (caught.value.method, caught.value.timeout) == ("initialize", 1.0)
        # The next call with time to spare starts the new session.
        assert text_of(client.call_tool("echo", {"text": "renewed"}, timeout=WAIT_S)) == "renewed"
        # One caller with no deadline renews; another with a short one waits no longer than it.
        peer.expire()
        results: List[Any] = []
        leader = threading.Thread(target=lambda: results.append(client.call_tool("echo", {"text": "x"}, timeout=None)))
        with peer.behaviour.cond:
            initializes = peer.behaviour.methods.count("initialize")
        leader.start()
        try:
            with peer.behaviour.cond:
                assert peer.behaviour.cond.wait_for(
                    lambda: peer.behaviour.methods.count("initialize") > initializes, WAIT_S
                )
            started = time.monotonic()
            with pytest.raises(RequestTimeout):
                client.call_tool("echo", {"text": "y"}, timeout=0.5)
            assert time.monotonic() - started < 0.5 + LATE_S
        finally:
            leader.join(WAIT_S)
        assert [text_of(result) for result in results] == ["x"]
        assert text_of(client.call_tool("echo", {"text": "after"})) == "after"
        assert peer.initializes == initializes + 1  # the one renewal that succeeded; nobody started another


# -- 3: mode="auto" spends one deadline, and its probe is no error ---------------------------------------------


def test_auto_mode_against_a_silent_server_fails_once_at_the_deadline(lazy: List[McpClient]) -> None:
    client = lazy_client(lazy, slow_peer("--silent"), default_timeout=3.0)
    started = time.monotonic()
    with pytest.raises(RequestTimeout) as caught:
        client.initialize()
    elapsed = time.monotonic() - started
    assert 2.5 < elapsed < 3.0 + LATE_S
    assert (caught.value.method, caught.value.timeout) == ("initialize", 3.0)
    assert "server/discover went unanswered" in caught.value.message
    assert client.stats()["errors"] == 0  # the probe went unanswered: no error of the server's


def test_the_probes_method_not_found_is_not_counted_as_an_error() -> None:
    with make_registry({"mcpServers": {"example": EXAMPLE}}) as registry:
        registry.call_tool("example", "echo", {"text": "hi"})
        stats = registry.stats()
        assert stats["example"]["errors"] == 0 and stats["*"]["errors"] == 0
        assert stats["example"]["calls"] >= 4  # discover, initialize, tools/list, tools/call
    with McpClient(EXAMPLE, default_timeout=WAIT_S) as client:
        assert client.era == "session"
        client.call_tool("echo", {"text": "hi"})
        assert client.stats()["errors"] == 0
        assert client.rpc.stats()["errors"] == 1  # the JSON-RPC layer saw one error answer: the probe's


# -- 4: execute() bounds the start of the server it triggers, execute_all counts from its entry ------------


def test_execute_bounds_the_first_start_of_the_server() -> None:
    config = {"mcpServers": {"slow": slow_peer("--initialize-delay", "4")}}
    with make_registry(config) as registry:
        started = time.monotonic()
        message = registry.execute(openai_call("mcp__slow__echo", {"text": "hi"}), timeout=1.0)
        assert time.monotonic() - started < 1.0 + LATE_S
        # Not "unknown tool": the server it may belong to was not up yet, and the message says so.
        assert message["content"].startswith("Error: tool 'mcp__slow__echo' is unavailable:"), message
        assert "not up within the call's deadline (1.0s)" in message["content"]
        # The start went on in the background: a later call finds the server.
        message = registry.execute(openai_call("mcp__slow__echo", {"text": "later"}), timeout=WAIT_S)
        assert message["content"] == "later"


def test_a_name_looked_up_past_the_deadline_is_a_timeout_not_an_unknown_tool() -> None:
    config = {"mcpServers": {"slow": slow_peer("--relist-delay", "30")}}
    with make_registry(config) as registry:
        assert "mcp__slow__echo" in [tool["name"] for tool in registry.tools()]
        # A name not in the list makes the registry ask the server again; the answer is late.
        started = time.monotonic()
        message = registry.execute(openai_call("mcp__slow__added_later", {}), timeout=0.5)
        assert time.monotonic() - started < 0.5 + LATE_S
        assert message["content"].startswith("Error: tool 'mcp__slow__added_later' could not be looked up within 0.5s")
        assert "nothing was called" in message["content"]
        with pytest.raises(RequestTimeout):
            registry.resolve("mcp__slow__added_later", timeout=0.2)
        assert registry.execute(openai_call("mcp__slow__echo", {"text": "still here"}))["content"] == "still here"


def test_execute_all_counts_every_calls_deadline_from_its_own_entry() -> None:
    with make_registry({"mcpServers": {"example": EXAMPLE}}, eager=True, max_concurrency=1) as registry:
        calls = [openai_call("mcp__example__slow", {"seconds": 0.8}, f"call_{n}") for n in range(2)]
        started = time.monotonic()
        first, second = registry.execute_all(calls, timeout=1.2)
        assert time.monotonic() - started < 1.2 + LATE_S
        assert not first["content"].startswith("Error:")
        assert second["content"].startswith("Error:") and "1.2s" in second["content"]


# -- 5, 6: task futures: cancel() before the task, and done-callbacks off the task pool ----------------


def test_cancelling_a_submitted_call_before_its_task_exists_withdraws_it(lazy: List[McpClient]) -> None:
    client = lazy_client(lazy, slow_peer("--stateless"))
    client.initialize()
    arrived = threading.Event()
    future = client.submit_tool("work", {"seconds": 0.2, "create_delay": WAIT_S}, on_progress=lambda _: arrived.set())
    assert arrived.wait(WAIT_S)  # the server has the call, and makes no task before create_delay
    assert future.task_id is None
    assert future.cancel()
    seen = structured(client.call_tool("log", {"wait_cancelled": 1}))
    assert seen["work_ids"] and seen["cancelled"] == seen["work_ids"]  # notifications/cancelled for the call
    assert not client.rpc.has_pending()
    assert future.cancelled() and future.wait_for_task(0) is None


def test_blocked_task_done_callbacks_never_hold_up_a_later_submitted_call(lazy: List[McpClient]) -> None:
    client = lazy_client(lazy, slow_peer("--stateless"))
    client.initialize()
    gate = threading.Event()
    ran: List[str] = []

    def blocking(_: Future[Any]) -> None:
        ran.append(threading.current_thread().name)
        gate.wait(WAIT_S)

    try:
        futures: List[TaskFuture] = []
        for n in range(8):
            future = client.submit_tool("echo", {"text": str(n)})
            future.add_done_callback(blocking)
            futures.append(future)
        done, _ = futures_wait(futures, timeout=WAIT_S)
        assert len(done) == 8
        started = time.monotonic()
        late = client.submit_tool("sleep", {"seconds": WAIT_S}, timeout=1.0)
        error = late.exception(timeout=WAIT_S)
        assert time.monotonic() - started < 1.0 + LATE_S
        assert isinstance(error, RequestTimeout) and error.timeout == 1.0
    finally:
        gate.set()
    assert ran and all(name.startswith("jsonrpc-mcp-task-callback") for name in ran)


def test_a_task_futures_done_callback_runs_on_the_callers_thread_when_the_caller_cancels(
    lazy: List[McpClient],
) -> None:
    client = lazy_client(lazy, slow_peer("--stateless"))
    client.initialize()
    future = client.submit_tool("sleep", {"seconds": WAIT_S})
    threads: List[str] = []
    future.add_done_callback(lambda _: threads.append(threading.current_thread().name))
    assert future.cancel()
    assert threads == [threading.current_thread().name]
    with pytest.raises(CancelledError):
        future.result(0)


# -- 8: the registry's wire trace and close listener survive the fallback to HTTP+SSE ---------------------


@needs_sdk
def test_the_wire_trace_and_the_close_listener_follow_the_fallback_to_the_legacy_transport(
    log_records: List[LogRecords],
) -> None:
    traced: List[WireMessage] = []
    got_call = threading.Event()

    def trace(server: str, message: WireMessage) -> None:
        traced.append(message)
        if message.direction == "in" and '"result"' in message.text and "42" in message.text:
            got_call.set()

    with ServerProcess([sys.executable, str(PEERS_DIR / "mcp_sdk_server.py"), "--sse"], name="sdk-sse") as server:
        url = server.wait_for(r"listening on (\S+)").group(1)
        stopped = watch(log_records, "stopped")
        with make_registry({"mcpServers": {"legacy": {"url": url}}}, wire_trace=trace) as registry:
            result = registry.call_tool("legacy", "add", {"a": 20, "b": 22})
            assert result["structuredContent"] == {"result": 42}
            assert got_call.wait(WAIT_S), [message.text[:80] for message in traced]
            assert any(message.direction == "out" and "tools/call" in message.text for message in traced)
            server.close()  # the server goes away: the session over HTTP+SSE ends, and the registry hears it
            assert stopped.wait(WAIT_S)
            assert registry.status()["legacy"]["state"] in ("restarting", "failed")


# -- 9: a session in use through registry.session() is never idle ------------------------------------------


def test_idle_timeout_never_closes_a_session_with_a_call_in_flight(log_records: List[LogRecords]) -> None:
    closed = watch(log_records, "unused for")
    with make_registry({"mcpServers": {"example": EXAMPLE}}, idle_timeout=0.5) as registry:
        session = registry.session("example")
        result = session.call_tool("slow", {"seconds": 2.0})  # four idle timeouts long
        assert not result.get("isError"), result
        assert registry.status()["example"]["state"] == "running"
        # Unused afterwards, it is closed; the handle it gave refuses, and a new use starts it again.
        assert closed.wait(WAIT_S)
        with pytest.raises(TransportClosed):
            session.call_tool("echo", {"text": "stale"})
        assert text_of(registry.session("example").call_tool("echo", {"text": "again"})) == "again"


def test_health_pings_are_no_use(log_records: List[LogRecords]) -> None:
    closed = watch(log_records, "unused for")
    with make_registry({"mcpServers": {"example": EXAMPLE}}, idle_timeout=1.0, health_interval=0.2) as registry:
        registry.call_tool("example", "echo", {"text": "once"})
        assert closed.wait(WAIT_S)
        assert registry.status()["example"]["state"] == "idle"


# -- the command line ----------------------------------------------------------------------------------


def write_config(path: Path, servers: Dict[str, Any]) -> str:
    path.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    return str(path)


def test_the_cli_tools_command_against_a_silent_server_fails_at_its_timeout(tmp_path: Path) -> None:
    config = write_config(tmp_path / "mcp.json", {"silent": slow_peer("--silent")})
    started = time.monotonic()
    result = run("tools", "--config", config, "--timeout", "3")
    elapsed = time.monotonic() - started
    assert result.code == 4, result
    assert "'silent'" in result.err and "3.0s" in result.err, result
    assert elapsed < 3.0 + 2.0, result  # the timeout, a Python start and a prompt close; not the timeout twice


def test_the_cli_says_on_a_terminal_that_servers_are_starting(tmp_path: Path) -> None:
    config = write_config(tmp_path / "mcp.json", {"slow": slow_peer("--initialize-delay", "2.5")})
    code, screen = run_on_terminal("tools", "--config", config)
    assert code == 0, screen
    assert "waiting for server 'slow' to start..." in screen, screen
    result = run("tools", "--config", config)
    assert result.code == 0 and "waiting" not in result.err, result
