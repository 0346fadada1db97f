"""McpClient against the reference server ``@modelcontextprotocol/server-everything`` from npm.

Installed into tests/node/node_modules from the committed package.json and
package-lock.json (``make test`` does it; these tests do it too when it is
missing).  It runs over stdio, over Streamable HTTP, and over the legacy
HTTP+SSE transport (its ``sse`` mode, through ``SseTransport``) on 127.0.0.1:
the server binds every interface, so it is started with the ``--require``
preload tests/node/loopback.cjs, which forces 127.0.0.1 (checked below) and
prints the port it got (``PORT=0``: no port is guessed).  It speaks the
session era only (the TypeScript SDK 1.x): ``mode="auto"`` finds that out
with its ``server/discover`` probe and falls back to ``initialize``.
"""

from __future__ import annotations

import threading
from typing import Any, Dict, Iterator, List

import pytest

from jsonrpc_threads import SseTransport, StdioTransport
from jsonrpc_threads.mcp import McpClient
from jsonrpc_threads.transports.http import HttpTransport

from .peers.mcp_launch import (
    EVERYTHING_JS,
    LOOPBACK_PRELOAD,
    NpmMissing,
    ServerProcess,
    ensure_node_modules,
    node_binary,
    node_env,
)

WAIT_S = 30.0
ROOTS = [{"uri": "file:///work/project", "name": "project"}]


@pytest.fixture(scope="module")
def node() -> str:
    binary = node_binary()
    if binary is None:
        pytest.skip("node is not installed: the reference server @modelcontextprotocol/server-everything needs it")
    try:
        problem = ensure_node_modules()
    except NpmMissing as exc:
        pytest.skip(f"{exc}: the reference server @modelcontextprotocol/server-everything comes from npm")
    if problem is not None:
        pytest.fail(problem)
    return binary


@pytest.fixture(scope="module")
def http_url(node: str) -> Iterator[str]:
    argv = [node, "--require", str(LOOPBACK_PRELOAD), str(EVERYTHING_JS), "streamableHttp"]
    with ServerProcess(argv, env=node_env(PORT="0"), name="everything-http") as server:
        port = server.wait_for(r"loopback: listening on 127\.0\.0\.1:(\d+)").group(1)
        server.wait_for(r"Streamable HTTP Server listening")
        addresses = server.listening_addresses()
        assert addresses and all(address.startswith("127.0.0.1:") for address in addresses), addresses
        yield f"http://127.0.0.1:{port}/mcp"


@pytest.fixture(scope="module")
def sse_url(node: str) -> Iterator[str]:
    argv = [node, "--require", str(LOOPBACK_PRELOAD), str(EVERYTHING_JS), "sse"]
    with ServerProcess(argv, env=node_env(PORT="0"), name="everything-sse") as server:
        port = server.wait_for(r"loopback: listening on 127\.0\.0\.1:(\d+)").group(1)
        server.wait_for(r"Server is running")
        addresses = server.listening_addresses()
        assert addresses and all(address.startswith("127.0.0.1:") for address in addresses), addresses
        yield f"http://127.0.0.1:{port}/sse"


@pytest.fixture(params=["stdio", "http", "sse"])
def connect(request: pytest.FixtureRequest, node: str, http_url: str, sse_url: str) -> Any:
    """``connect(**options) -> McpClient`` for the reference server over one transport.

    (The HTTP servers are module-scoped, so they are up before each test's leak check starts.)
    """

    def make(**options: Any) -> McpClient:
        options.setdefault("default_timeout", WAIT_S)
        if request.param == "stdio":
            return McpClient(StdioTransport([node, str(EVERYTHING_JS), "stdio"]), **options)
        if request.param == "sse":
            return McpClient(SseTransport(sse_url), **options)
        return McpClient(HttpTransport(http_url), **options)

    return make


def sampling(params: Dict[str, Any]) -> Dict[str, Any]:
    prompt = params["messages"][0]["content"]["text"]
    return {"role": "assistant", "content": {"type": "text", "text": f"sampled <{prompt}>"}, "model": "test-model"}


def elicitation(params: Dict[str, Any]) -> Dict[str, Any]:
    assert "name" in params["requestedSchema"]["properties"]
    return {"action": "accept", "content": {"name": "Ada Lovelace", "check": True}}


def text_of(result: Any) -> str:
    return "\n".join(item.get("text", "") for item in result["content"])


def test_list_tools_and_echo(connect: Any) -> None:
    with connect() as client:
        assert client.era == "session"  # mode="auto": server/discover was refused, initialize followed
        assert client.server_info["name"] == "mcp-servers/everything"
        assert client.instructions
        names = {tool["name"] for tool in client.list_tools()}
        assert {"echo", "get-sum", "trigger-long-running-operation"} <= names
        # Tools that need a client capability are offered only to a client that declared it.
        assert not names & {"trigger-sampling-request", "trigger-elicitation-request", "get-roots-list"}
        result = client.call_tool("echo", {"message": "hello, world"})
        assert result["content"] == [{"type": "text", "text": "Echo: hello, world"}]
        assert not result.get("isError")
        assert "5" in text_of(client.call_tool("get-sum", {"a": 2, "b": 3}))
        client.ping()


def test_long_running_operation_reports_progress(connect: Any) -> None:
    reports: List[Dict[str, Any]] = []
    with connect() as client:
        result = client.call_tool(
            "trigger-long-running-operation", {"duration": 0.5, "steps": 5}, on_progress=reports.append
        )
    assert "Long running operation completed" in text_of(result)
    # Every report arrived before call_tool returned.
    assert [(r["progress"], r["total"]) for r in reports] == [(i, 5) for i in range(1, 6)]


def test_sampling_elicitation_and_roots_requests_are_answered(connect: Any) -> None:
    logs: List[Dict[str, Any]] = []
    roots_synced = threading.Event()

    def on_log(params: Dict[str, Any]) -> None:
        logs.append(params)
        if "Roots updated" in str(params.get("data")):
            roots_synced.set()

    with connect(roots=ROOTS, on_sampling=sampling, on_elicitation=elicitation, on_log=on_log) as client:
        names = {tool["name"] for tool in client.list_tools()}
        assert {"trigger-sampling-request", "trigger-elicitation-request", "get-roots-list"} <= names

        sampled = text_of(client.call_tool("trigger-sampling-request", {"prompt": "a haiku", "maxTokens": 50}))
        assert "sampled <Resource trigger-sampling-request context: a haiku>" in sampled
        assert "test-model" in sampled

        elicited = text_of(client.call_tool("trigger-elicitation-request"))
        assert "Name: Ada Lovelace" in elicited
        assert "Agreed to terms: true" in elicited
        # The handler left the defaulted fields out; McpClient filled them in from the schema.
        assert "Favorite Integer: 42" in elicited
        assert '"firstLine": "It was a dark and stormy night."' in elicited

        roots = text_of(client.call_tool("get-roots-list"))
        assert "file:///work/project" in roots and "project" in roots
        # The server asked for the roots on its own (over HTTP: on the GET stream) and logged it.
        assert roots_synced.wait(WAIT_S), logs


def test_an_sse_url_given_as_streamable_http_falls_back_to_the_legacy_transport(sse_url: str) -> None:
    with McpClient(HttpTransport(sse_url), default_timeout=WAIT_S) as client:
        assert isinstance(client.rpc.transport, SseTransport)
        assert client.call_tool("echo", {"message": "fallback"})["content"][0]["text"] == "Echo: fallback"
