"""McpClient against servers written with the official Python SDK (PyPI ``mcp``), run as real child processes.

The SDK 2.x speaks both eras of MCP, so every test of the ``MCPServer`` peer
runs twice: with ``mode="stateless"`` (revision 2026-07-28) and with
``mode="session"`` (the ``initialize`` handshake, 2025-11-25), through the
``era`` fixture.  Where the eras differ by design (the notifications of the
stateless era come on ``subscriptions/listen``, its log messages only when a
request asks for them, cancellation over HTTP is the closed stream), the
test says which it checks.

- tests/peers/mcp_sdk_server.py: an ``MCPServer`` app, over stdio and over
  Streamable HTTP on 127.0.0.1 (stateful with SSE answers, and
  ``stateless_http=True, json_response=True``);
- tests/peers/mcp_lowlevel_server.py: the SDK's low-level ``Server`` for what
  ``MCPServer`` lacks (pagination over many pages, ``logging/setLevel``,
  ``resources/subscribe``);
- tests/peers/mcp_bad_version.py: a hand-written peer that answers
  ``initialize`` with a revision this client does not know.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Dict, Iterator, List

import pytest
import requests

from jsonrpc_threads import JsonRpcError, RequestTimeout, StdioTransport, TransportClosed
from jsonrpc_threads.mcp import (
    LATEST_PROTOCOL_VERSION,
    LATEST_SESSION_PROTOCOL_VERSION,
    McpClient,
    MissingClientCapability,
    ProtocolVersionError,
)
from jsonrpc_threads.transports.http import HttpTransport

from .conftest import peer_command
from .peers.mcp_launch import ServerProcess

pytest.importorskip("mcp.server.mcpserver", reason="the official MCP Python SDK (mcp>=2, Python>=3.10) is needed")

#: Upper bound for any single wait in these tests.
WAIT_S = 20.0
ROOTS = [{"uri": "file:///work/project", "name": "project"}, "file:///tmp"]


def sampling(params: Dict[str, Any]) -> Dict[str, Any]:
    text = params["messages"][0]["content"]["text"]
    return {"role": "assistant", "content": {"type": "text", "text": f"echo: {text}"}, "model": "test-model"}


def elicitation(params: Dict[str, Any]) -> Dict[str, Any]:
    return {"action": "accept", "content": {"name": "Ada"}}


ERAS = ["stateless", "session"]
#: What the client declares in the stateless era beyond the handlers: the tasks extension.
EXTENSIONS = {"extensions": {"io.modelcontextprotocol/tasks": {}}}


@pytest.fixture(params=ERAS)
def era(request: pytest.FixtureRequest) -> str:
    """The era a test runs in: ``mode="stateless"`` or ``mode="session"``."""
    return str(request.param)


def version_of(era: str) -> str:
    return LATEST_PROTOCOL_VERSION if era == "stateless" else LATEST_SESSION_PROTOCOL_VERSION


def sdk_stdio(era: str, *flags: str, **options: Any) -> McpClient:
    options.setdefault("default_timeout", WAIT_S)
    return McpClient(StdioTransport(peer_command("mcp_sdk_server", *flags)), mode=era, **options)


def lowlevel_stdio(*flags: str, mode: str = "session", **options: Any) -> McpClient:
    options.setdefault("default_timeout", WAIT_S)
    return McpClient(StdioTransport(peer_command("mcp_lowlevel_server", *flags)), mode=mode, **options)


def text_of(result: Any) -> str:
    return "".join(item.get("text", "") for item in result["content"])


# -- stdio: the MCPServer app ---------------------------------------------------------


def test_handshake_server_info_and_capabilities(era: str) -> None:
    with sdk_stdio(era) as client:
        assert client.era == era
        assert client.protocol_version == version_of(era)
        assert client.call_tool("era")["structuredContent"] == {"result": version_of(era)}
        assert client.server_info == {"name": "jsonrpc-threads-sdk-peer", "version": "1.0.0"}
        assert {"tools", "resources", "prompts", "completions"} <= set(client.server_capabilities)
        assert client.instructions is not None and "test peer" in client.instructions
        assert client.ping() is None


def test_tools_list_and_call(era: str) -> None:
    with sdk_stdio(era) as client:
        tools = {tool["name"]: tool for tool in client.list_tools()}
        assert {"add", "count", "fail", "ask_client", "never", "crash"} <= set(tools)
        assert tools["add"]["inputSchema"]["required"] == ["a", "b"]
        result = client.call_tool("add", {"a": 2, "b": 40})
        assert result["isError"] is False
        assert result["structuredContent"] == {"result": 42}
        assert text_of(result) == "42"


def test_progress_reaches_on_progress_before_call_tool_returns(era: str) -> None:
    reports: List[Dict[str, Any]] = []
    threads: List[str] = []

    def on_progress(params: Dict[str, Any]) -> None:
        threads.append(threading.current_thread().name)
        reports.append(params)

    with sdk_stdio(era) as client:
        result = client.call_tool("count", {"steps": 10}, on_progress=on_progress)
        # Every report was delivered before call_tool returned: no waiting here.
        assert text_of(result) == "counted 10"
        assert [r["progress"] for r in reports] == list(range(1, 11))
        assert {r["total"] for r in reports} == {10}
        assert reports[0]["message"] == "step 1"
        assert len({r["progressToken"] for r in reports}) == 1
        assert not any("reader" in name for name in threads)
        # A second call gets its own token; the first call's callback hears nothing more.
        second: List[Dict[str, Any]] = []
        client.call_tool("count", {"steps": 2}, on_progress=second.append)
        assert len(reports) == 10 and len(second) == 2
        assert second[0]["progressToken"] != reports[0]["progressToken"]


def test_reset_timeout_on_progress_and_its_hard_limit(era: str) -> None:
    reports: List[Dict[str, Any]] = []
    with sdk_stdio(era) as client:
        # 12 steps 0.1 s apart: 1.2 s in all, longer than the 1 s timeout, which each report restarts.
        started = time.monotonic()
        result = client.call_tool(
            "count",
            {"steps": 12, "interval": 0.1},
            timeout=1.0,
            on_progress=reports.append,
            reset_timeout_on_progress=True,
        )
        assert text_of(result) == "counted 12"
        assert time.monotonic() - started > 1.0
        assert len(reports) == 12
        # Progress keeps coming, but the hard limit ends the call.
        started = time.monotonic()
        with pytest.raises(RequestTimeout) as caught:
            client.call_tool(
                "count",
                {"steps": 100, "interval": 0.1},
                timeout=1.0,
                on_progress=lambda params: None,
                reset_timeout_on_progress=True,
                max_timeout=1.5,
            )
        elapsed = time.monotonic() - started
        assert 1.4 < elapsed < 5.0
        assert caught.value.timeout == 1.5
        assert client.call_tool("add", {"a": 1, "b": 1})["structuredContent"] == {"result": 2}


def test_tool_error_is_returned_as_data(era: str) -> None:
    with sdk_stdio(era) as client:
        result = client.call_tool("fail", {"message": "the disk is full"})
        assert result["isError"] is True
        assert "the disk is full" in text_of(result)
        # Bad arguments are a tool error for MCPServer too, not an exception.
        bad = client.call_tool("add", {"a": "not a number"})
        assert bad["isError"] is True


def test_resources_templates_and_read(era: str) -> None:
    with sdk_stdio(era) as client:
        resources = client.list_resources()
        assert [(r["uri"], r["name"], r["mimeType"]) for r in resources] == [
            ("memo://greeting", "greeting", "text/plain")
        ]
        templates = client.list_resource_templates()
        assert [t["uriTemplate"] for t in templates] == ["memo://users/{name}"]
        read = client.read_resource("memo://greeting")
        assert read["contents"] == [
            {"uri": "memo://greeting", "mimeType": "text/plain", "text": "hello from the sdk peer"}
        ]
        assert client.read_resource("memo://users/zed")["contents"][0]["text"] == "user zed"
        with pytest.raises(JsonRpcError) as caught:
            client.read_resource("memo://nowhere")
        assert caught.value.code == -32602


def test_prompts_and_completion(era: str) -> None:
    with sdk_stdio(era) as client:
        prompts = client.list_prompts()
        assert [(p["name"], p["arguments"][0]["name"]) for p in prompts] == [("review", "code")]
        rendered = client.get_prompt("review", {"code": "x = 1"})
        assert rendered["messages"][0]["role"] == "user"
        assert "x = 1" in rendered["messages"][0]["content"]["text"]
        completion = client.complete(
            {"type": "ref/resource", "uri": "memo://users/{name}"}, {"name": "name", "value": "al"}
        )
        assert completion["completion"]["values"] == ["alice", "albert"]


def test_roots_sampling_and_elicitation_answered_by_the_client(era: str) -> None:
    seen_threads: List[str] = []

    def sample(params: Dict[str, Any]) -> Dict[str, Any]:
        seen_threads.append(threading.current_thread().name)
        assert params["maxTokens"] == 20
        return sampling(params)

    with sdk_stdio(era, roots=ROOTS, on_sampling=sample, on_elicitation=elicitation) as client:
        declared = client.call_tool("client_capabilities")["structuredContent"]["result"]
        expected = {"roots", "sampling", "elicitation"} | ({"extensions"} if era == "stateless" else set())
        assert set(declared) == expected
        # Stateless era: one input_required round, answered from the same handlers, then the call again.
        answers = client.call_tool("ask_client")["structuredContent"]["result"]
    assert answers["roots"] == {"roots": [{"uri": "file:///work/project", "name": "project"}, {"uri": "file:///tmp"}]}
    assert answers["sampling"]["content"] == {"type": "text", "text": "echo: Say hi"}
    assert answers["sampling"]["model"] == "test-model"
    # The handler left out "age"; the schema's default was filled in.
    assert answers["elicitation"] == {"action": "accept", "content": {"name": "Ada", "age": 30}}
    assert seen_threads and not any("reader" in name for name in seen_threads)


def test_capabilities_are_declared_only_for_the_handlers_given(era: str) -> None:
    with sdk_stdio(era) as client:
        declared = client.call_tool("client_capabilities")["structuredContent"]["result"]
        assert declared == (EXTENSIONS if era == "stateless" else {})
        # Without the roots handler the server refuses with MCP's -32021, as its class.
        with pytest.raises(MissingClientCapability) as caught:
            client.call_tool("ask_client")
        assert caught.value.required_capabilities == {"roots": {}}
    if era == "stateless":
        return  # no channel of the server's own in the stateless era
    calls: List[int] = []

    def roots() -> List[str]:
        calls.append(1)
        return [f"file:///call/{len(calls)}"]

    with sdk_stdio(era, roots=roots) as client:
        assert set(client.call_tool("client_capabilities")["structuredContent"]["result"]) == {"roots"}
        first = client.call_tool("roots_standalone")["structuredContent"]["result"]
        second = client.call_tool("roots_standalone")["structuredContent"]["result"]
    assert first == {"roots": [{"uri": "file:///call/1"}]}
    assert second == {"roots": [{"uri": "file:///call/2"}]}


def test_timeout_sends_notifications_cancelled_to_the_server(era: str) -> None:
    with sdk_stdio(era) as client:
        started = time.monotonic()
        with pytest.raises(RequestTimeout) as caught:
            client.call_tool("never", timeout=0.5)
        assert 0.4 < time.monotonic() - started < 5.0
        assert isinstance(caught.value, TimeoutError)
        # The server waits (bounded) until the cancellation reached it.
        received = client.call_tool("cancellations", {"wait": WAIT_S})["structuredContent"]["result"]
        assert [c["requestId"] for c in received] == [caught.value.request_id]
        assert "timed out" in received[0]["reason"]
        # The session is still fine.
        assert client.call_tool("add", {"a": 1, "b": 2})["structuredContent"] == {"result": 3}


def test_server_exiting_during_a_call_is_transport_closed_with_its_exit_code(era: str) -> None:
    with sdk_stdio(era) as client:
        with pytest.raises(TransportClosed) as caught:
            client.call_tool("crash", {"code": 3})
        assert isinstance(caught.value, ConnectionError)
        assert caught.value.returncode == 3
        assert "crashing with exit code 3" in caught.value.stderr_tail
        started = time.monotonic()
        with pytest.raises(TransportClosed):
            client.list_tools()
        assert time.monotonic() - started < 1.0


def ask_for_logs(client: McpClient, era: str) -> None:
    """The stateless era sends log messages only to requests that name a level (MCPServer sends all in the other)."""
    if era == "stateless":
        client.set_logging_level("debug")


def test_log_messages_go_to_the_logging_module_by_default(era: str, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="jsonrpc_threads.mcp.server_log"), sdk_stdio(era) as client:
        ask_for_logs(client, era)
        client.call_tool("log", {"level": "warning", "message": "disk almost full"})
        client.call_tool("log", {"level": "debug", "message": "details"})
    records = [r for r in caplog.records if r.name == "jsonrpc_threads.mcp.server_log"]
    assert [(r.levelno, r.getMessage()) for r in records] == [
        (logging.WARNING, "[sdk-peer] disk almost full"),
        (logging.DEBUG, "[sdk-peer] details"),
    ]


def test_log_messages_go_to_on_log_when_given(era: str) -> None:
    logs: List[Dict[str, Any]] = []
    with sdk_stdio(era, on_log=logs.append) as client:
        ask_for_logs(client, era)
        client.call_tool("log", {"level": "error", "message": "oops"})
        assert logs == [{"level": "error", "logger": "sdk-peer", "data": "oops"}]


def test_list_changed_callbacks(era: str) -> None:
    changed = {name: threading.Event() for name in ("tools", "prompts", "resources")}
    with sdk_stdio(
        era,
        on_tools_changed=changed["tools"].set,
        on_prompts_changed=changed["prompts"].set,
        on_resources_changed=changed["resources"].set,
    ) as client:
        assert "extra" not in {tool["name"] for tool in client.list_tools()}
        client.call_tool("change_lists")
        if era == "session":
            # Notifications sent before the result are handled before call_tool returns.
            assert all(event.is_set() for event in changed.values())
        else:
            # They come on the subscriptions/listen stream, opened for these callbacks: no order with the call.
            assert all(event.wait(WAIT_S) for event in changed.values())
        assert "extra" in {tool["name"] for tool in client.list_tools()}
        assert text_of(client.call_tool("extra")) == "extra"


def test_many_threads_share_one_session(era: str) -> None:
    with sdk_stdio(era) as client, ThreadPoolExecutor(8) as pool:
        futures = [pool.submit(client.call_tool, "add", {"a": i, "b": i}) for i in range(40)]
        assert [f.result(WAIT_S)["structuredContent"]["result"] for f in futures] == [2 * i for i in range(40)]


def test_config_entry_instead_of_a_transport() -> None:
    argv = peer_command("mcp_sdk_server")
    with McpClient({"command": argv[0], "args": argv[1:]}, default_timeout=WAIT_S) as client:
        assert client.era == "stateless"  # mode="auto": the SDK 2.x speaks 2026-07-28
        assert client.call_tool("add", {"a": 1, "b": 1})["structuredContent"] == {"result": 2}


# -- stdio: the low-level SDK server ------------------------------------------------------


@pytest.mark.parametrize("mode", ERAS)
def test_pagination_follows_every_page(mode: str) -> None:
    # 150 items, 2 per page: 75 pages for each list (76 for tools, which has two more).
    with lowlevel_stdio("--items", "150", "--page-size", "2", mode=mode) as client:
        tools = client.list_tools()
        assert [t["name"] for t in tools] == [f"tool-{i}" for i in range(150)] + ["log_all", "touch"]
        assert [r["uri"] for r in client.list_resources()] == [f"memo://res/{i}" for i in range(150)]
        assert [t["name"] for t in client.list_resource_templates()] == [f"tpl-{i}" for i in range(150)]
        assert [p["name"] for p in client.list_prompts()] == [f"prompt-{i}" for i in range(150)]


def test_pagination_stops_on_a_repeated_cursor(caplog: pytest.LogCaptureFixture) -> None:
    client = lowlevel_stdio("--items", "5", "--page-size", "2", "--repeat-cursor")
    with caplog.at_level(logging.WARNING, logger="jsonrpc_threads.mcp.session"), client:
        tools = client.list_tools()
    assert [t["name"] for t in tools] == ["tool-0", "tool-1", "tool-0", "tool-1"]
    assert any("repeated cursor" in r.getMessage() for r in caplog.records)


def test_set_logging_level_filters_what_the_server_sends() -> None:
    logs: List[Dict[str, Any]] = []
    with lowlevel_stdio(on_log=logs.append) as client:
        assert "logging" in client.server_capabilities
        client.set_logging_level("error")
        assert text_of(client.call_tool("log_all")) == "4"
        assert [entry["level"] for entry in logs] == ["error", "critical", "alert", "emergency"]
        assert logs[0] == {"level": "error", "logger": "lowlevel-peer", "data": "error message"}


def test_stateless_log_level_goes_into_every_request() -> None:
    logs: List[Dict[str, Any]] = []
    with sdk_stdio("stateless", on_log=logs.append) as client:
        # With on_log, every request asks for "debug" (DEFAULT_LOG_LEVEL) until set_logging_level().
        client.call_tool("log", {"level": "debug", "message": "asked for by on_log"})
        client.set_logging_level("error")
        client.call_tool("log", {"level": "warning", "message": "below the level"})
        client.call_tool("log", {"level": "error", "message": "at the level"})
    assert [entry["data"] for entry in logs] == ["asked for by on_log", "at the level"]


def test_stateless_subscribe_and_resource_updated() -> None:
    updated: List[str] = []
    arrived = threading.Event()

    def on_updated(uri: str) -> None:
        updated.append(uri)
        arrived.set()

    with sdk_stdio("stateless", on_resource_updated=on_updated) as client:
        # subscriptions/listen with resourceSubscriptions, returned once the server acknowledged it.
        client.subscribe_resource("memo://greeting")
        client.call_tool("touch", {"uri": "memo://greeting"})
        assert arrived.wait(WAIT_S)
        assert updated == ["memo://greeting"]
        arrived.clear()
        client.unsubscribe_resource("memo://greeting")
        client.call_tool("touch", {"uri": "memo://greeting"})
        client.call_tool("touch", {"uri": "memo://other"})
        assert client.call_tool("add", {"a": 1, "b": 1})["structuredContent"] == {"result": 2}
    assert updated == ["memo://greeting"]


def test_subscribe_and_resource_updated() -> None:
    updated: List[str] = []
    with lowlevel_stdio(on_resource_updated=updated.append) as client:
        assert client.server_capabilities["resources"]["subscribe"] is True
        assert text_of(client.call_tool("touch", {"uri": "memo://res/1"})) == "False"
        client.subscribe_resource("memo://res/1")
        assert text_of(client.call_tool("touch", {"uri": "memo://res/1"})) == "True"
        assert updated == ["memo://res/1"]
        client.unsubscribe_resource("memo://res/1")
        assert text_of(client.call_tool("touch", {"uri": "memo://res/1"})) == "False"
        assert updated == ["memo://res/1"]


# -- protocol versions ------------------------------------------------------------------


def test_unknown_protocol_version_fails_clearly_and_closes_the_client() -> None:
    # mode="auto": the peer answers server/discover with {} (no discover result), so initialize follows.
    transport = StdioTransport(peer_command("mcp_bad_version"))
    client = McpClient(transport, default_timeout=WAIT_S)
    with pytest.raises(ProtocolVersionError) as caught, client:
        pass
    assert caught.value.version == "1999-01-01"
    assert "1999-01-01" in str(caught.value) and LATEST_SESSION_PROTOCOL_VERSION in str(caught.value)
    assert client.rpc.closed
    assert transport.returncode is not None  # the child was reclaimed
    with pytest.raises(TransportClosed):
        client.ping()


@pytest.mark.parametrize("version", ["2025-06-18", "2025-03-26", "2024-11-05"])
def test_older_protocol_versions_are_accepted(version: str) -> None:
    with McpClient(StdioTransport(peer_command("mcp_bad_version", version)), default_timeout=WAIT_S) as client:
        assert client.era == "session"
        assert client.protocol_version == version
        client.ping()


# -- Streamable HTTP ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def stateful_url() -> Iterator[str]:
    with ServerProcess(peer_command("mcp_sdk_server", "--http"), name="sdk-http") as server:
        yield server.wait_for(r"listening on (\S+)").group(1)


@pytest.fixture(scope="module")
def stateless_url() -> Iterator[str]:
    with ServerProcess(peer_command("mcp_sdk_server", "--http", "--json"), name="sdk-http-json") as server:
        yield server.wait_for(r"listening on (\S+)").group(1)


def http_client(url: str, mode: str = "session", **options: Any) -> McpClient:
    options.setdefault("default_timeout", WAIT_S)
    return McpClient(HttpTransport(url), mode=mode, **options)


def test_http_stateful_session_headers_progress_and_requests(stateful_url: str) -> None:
    reports: List[Dict[str, Any]] = []
    with http_client(stateful_url, roots=ROOTS, on_sampling=sampling, on_elicitation=elicitation) as client:
        transport = client.rpc.transport
        assert isinstance(transport, HttpTransport)
        session_id = transport.session_id
        assert session_id
        assert client.protocol_version == LATEST_SESSION_PROTOCOL_VERSION
        headers = client.call_tool("request_headers")["structuredContent"]["result"]
        assert headers["mcp-session-id"] == session_id
        assert headers["mcp-protocol-version"] == LATEST_SESSION_PROTOCOL_VERSION
        result = client.call_tool("count", {"steps": 5}, on_progress=reports.append)
        assert text_of(result) == "counted 5"
        assert [r["progress"] for r in reports] == [1, 2, 3, 4, 5]
        answers = client.call_tool("ask_client_on_stream")["structuredContent"]["result"]
        assert answers["elicitation"] == {"action": "accept", "content": {"name": "Ada", "age": 30}}
        assert answers["sampling"]["content"]["text"] == "echo: Say hi"
        assert len(answers["roots"]["roots"]) == 2
        assert transport.session_id == session_id  # one session throughout


def test_http_listen_stream_carries_the_servers_own_messages(stateful_url: str) -> None:
    changed = threading.Event()
    with http_client(stateful_url, roots=["file:///listen"], on_tools_changed=changed.set) as client:
        # roots/list on the connection's channel can only reach us on the GET stream.
        roots = client.call_tool("roots_standalone")["structuredContent"]["result"]
        assert roots == {"roots": [{"uri": "file:///listen"}]}
        client.call_tool("change_lists", {"related": False})
        assert changed.wait(WAIT_S)


def test_http_timeout_sends_notifications_cancelled(stateful_url: str) -> None:
    with http_client(stateful_url) as client:
        with pytest.raises(RequestTimeout) as caught:
            client.call_tool("never", timeout=0.5)
        received = client.call_tool("cancellations", {"wait": WAIT_S})["structuredContent"]["result"]
        assert caught.value.request_id in [c["requestId"] for c in received]
        assert client.call_tool("add", {"a": 1, "b": 2})["structuredContent"] == {"result": 3}


def test_http_expired_session_is_renewed_transparently(stateful_url: str) -> None:
    with http_client(stateful_url) as client:
        transport = client.rpc.transport
        assert isinstance(transport, HttpTransport)
        old_session = transport.session_id
        assert old_session
        # End the session behind the client's back, as a server restart or an idle reaper would.
        ended = requests.delete(
            stateful_url,
            headers={"Mcp-Session-Id": old_session, "MCP-Protocol-Version": LATEST_SESSION_PROTOCOL_VERSION},
            timeout=WAIT_S,
        )
        assert ended.status_code == 200
        gone = requests.post(
            stateful_url,
            data=json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}),
            headers={
                "Mcp-Session-Id": old_session,
                "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
            },
            timeout=WAIT_S,
        )
        assert gone.status_code == 404
        # The next request sees the 404, starts a new session and is retried once.
        assert client.call_tool("add", {"a": 20, "b": 22})["structuredContent"] == {"result": 42}
        assert transport.session_id not in (None, old_session)
        headers = client.call_tool("request_headers")["structuredContent"]["result"]
        assert headers["mcp-session-id"] == transport.session_id
        assert headers["mcp-protocol-version"] == LATEST_SESSION_PROTOCOL_VERSION


def test_http_stateless_json(stateless_url: str) -> None:
    reports: List[Dict[str, Any]] = []
    with http_client(stateless_url) as client:
        transport = client.rpc.transport
        assert isinstance(transport, HttpTransport)
        assert transport.session_id is None
        assert client.protocol_version == LATEST_SESSION_PROTOCOL_VERSION
        assert "add" in {tool["name"] for tool in client.list_tools()}
        headers = client.call_tool("request_headers")["structuredContent"]["result"]
        assert headers["mcp-protocol-version"] == LATEST_SESSION_PROTOCOL_VERSION
        assert "mcp-session-id" not in headers
        # JSON answers cannot carry progress; the call still returns its result.
        assert text_of(client.call_tool("count", {"steps": 3}, on_progress=reports.append)) == "counted 3"
        assert client.read_resource("memo://greeting")["contents"][0]["text"] == "hello from the sdk peer"
        with ThreadPoolExecutor(4) as pool:
            futures = [pool.submit(client.call_tool, "add", {"a": i, "b": 1}) for i in range(12)]
            assert [f.result(WAIT_S)["structuredContent"]["result"] for f in futures] == [i + 1 for i in range(12)]


# -- Streamable HTTP in the stateless era (2026-07-28) -----------------------------------------


@pytest.mark.parametrize("server", ["stateful_url", "stateless_url"])
def test_http_stateless_era_headers_progress_and_input_rounds(server: str, request: pytest.FixtureRequest) -> None:
    url = request.getfixturevalue(server)
    reports: List[Dict[str, Any]] = []
    with http_client(url, "auto", roots=ROOTS, on_sampling=sampling, on_elicitation=elicitation) as client:
        transport = client.rpc.transport
        assert isinstance(transport, HttpTransport)
        assert client.era == "stateless" and client.protocol_version == LATEST_PROTOCOL_VERSION
        headers = client.call_tool("request_headers")["structuredContent"]["result"]
        assert headers["mcp-protocol-version"] == LATEST_PROTOCOL_VERSION
        assert headers["mcp-method"] == "tools/call"
        assert headers["mcp-name"] == "request_headers"
        assert "mcp-session-id" not in headers and transport.session_id is None
        result = client.call_tool("count", {"steps": 4}, on_progress=reports.append)
        assert text_of(result) == "counted 4"
        if server == "stateful_url":  # SSE answers carry progress; JSON answers cannot
            assert [r["progress"] for r in reports] == [1, 2, 3, 4]
        answers = client.call_tool("ask_client")["structuredContent"]["result"]
        assert answers["elicitation"] == {"action": "accept", "content": {"name": "Ada", "age": 30}}
        assert answers["sampling"]["content"]["text"] == "echo: Say hi"
        assert len(answers["roots"]["roots"]) == 2
        assert client.read_resource("memo://greeting")["contents"][0]["text"] == "hello from the sdk peer"


def test_http_stateless_era_timeout_closes_the_stream(stateful_url: str) -> None:
    with http_client(stateful_url, "stateless") as client:
        with pytest.raises(RequestTimeout) as caught:
            client.call_tool("never", timeout=0.5)
        # No notifications/cancelled in this era over HTTP: the closed stream cancelled the handler.
        abandoned = client.call_tool("abandoned", {"wait": WAIT_S})["structuredContent"]["result"]
        assert str(caught.value.request_id) in abandoned
        assert client.call_tool("add", {"a": 1, "b": 2})["structuredContent"] == {"result": 3}


def test_http_stateless_era_list_changed_on_subscriptions_listen(stateful_url: str) -> None:
    changed = threading.Event()
    with http_client(stateful_url, "stateless", on_tools_changed=changed.set) as client:
        client.call_tool("change_lists")
        assert changed.wait(WAIT_S)
