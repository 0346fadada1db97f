"""The example web app (jsonrpc_threads/examples/webapp.py) under waitress on 127.0.0.1, over real MCP servers.

Its routes (/tools, /call, /health, /mcp) with the registry it is given; the
gunicorn --preload run (the registry made before the fork) is the load
test's (tests/test_loadtest_smoke.py).
"""

from __future__ import annotations

import json
from typing import Any, Iterator

import pytest
import requests

pytest.importorskip("flask")

from jsonrpc_threads import HttpTransport
from jsonrpc_threads.examples.webapp import create_app
from jsonrpc_threads.mcp import McpClient

from .registry_support import EXAMPLE, MISSING, WAIT_S, baseline, make_registry  # noqa: F401
from .wsgi_support import WaitressServer


@pytest.fixture
def site() -> Iterator[str]:
    config = {"mcpServers": {"example": EXAMPLE}}
    with make_registry(config) as registry, WaitressServer(create_app(registry)) as server:
        yield server.url.rsplit("/", 1)[0]


def call(name: str, arguments: Any, call_id: str = "call_1") -> Any:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


def test_tools_are_listed_in_each_format(site: str) -> None:
    plain = requests.get(f"{site}/tools", timeout=WAIT_S).json()
    assert "mcp__example__add" in [tool["name"] for tool in plain["tools"]] and plain["errors"] == {}
    openai = requests.get(f"{site}/tools", params={"format": "openai"}, timeout=WAIT_S).json()["tools"]
    assert openai[0]["type"] == "function" and openai[0]["function"]["name"].startswith("mcp__example__")
    anthropic = requests.get(f"{site}/tools", params={"format": "anthropic"}, timeout=WAIT_S).json()["tools"]
    assert "input_schema" in anthropic[0]


def test_a_tool_call_is_answered_with_the_tool_message(site: str) -> None:
    answer = requests.post(f"{site}/call", json=call("mcp__example__add", {"a": 2, "b": 3}), timeout=WAIT_S)
    assert answer.status_code == 200 and answer.json() == {"role": "tool", "tool_call_id": "call_1", "content": "5"}
    several = {"tool_calls": [call("mcp__example__echo", {"text": "a"}, "1"), call("mcp__example__nope", {}, "2")]}
    messages = requests.post(f"{site}/call", json=several, timeout=WAIT_S).json()["messages"]
    assert messages[0]["content"] == "a" and messages[1]["content"].startswith("Error: unknown tool")
    slow = requests.post(
        f"{site}/call", params={"timeout": "0.3"}, json=call("mcp__example__slow", {"seconds": 5}), timeout=WAIT_S
    )
    assert "did not finish within 0.3s" in slow.json()["content"]
    assert requests.post(f"{site}/call", data=b"[1]", timeout=WAIT_S).status_code == 400
    assert requests.post(f"{site}/call", params={"timeout": "x"}, json={}, timeout=WAIT_S).status_code == 400


def test_health_reports_each_server_and_this_worker(site: str) -> None:
    requests.post(f"{site}/call", json=call("mcp__example__add", {"a": 1, "b": 1}), timeout=WAIT_S)
    health = requests.get(f"{site}/health", timeout=WAIT_S)
    body = health.json()
    assert health.status_code == 200 and body["ok"] is True
    assert body["servers"]["example"]["state"] == "running" and isinstance(body["servers"]["example"]["pid"], int)
    assert body["stats"]["example"]["calls"] >= 3 and body["process"]["threads"] >= 1


def test_a_failed_server_makes_health_503() -> None:
    with make_registry({"mcpServers": {"missing": MISSING}}) as registry:
        registry.start()
        with WaitressServer(create_app(registry)) as server:
            health = requests.get(server.url.rsplit("/", 1)[0] + "/health", timeout=WAIT_S)
            assert health.status_code == 503 and health.json()["failed"] == ["missing"]


def test_the_app_serves_its_tools_back_over_mcp(site: str) -> None:
    with McpClient(HttpTransport(f"{site}/mcp"), default_timeout=WAIT_S) as mcp:
        assert "mcp__example__add" in {tool["name"] for tool in mcp.list_tools()}
        result = mcp.call_tool("mcp__example__add", {"a": 20, "b": 22})
        assert result == {"content": [{"type": "text", "text": "42"}], "isError": False}
        assert mcp.call_tool("mcp__example__nope", {})["isError"] is True
    assert requests.get(f"{site}/mcp", timeout=WAIT_S).status_code == 405
