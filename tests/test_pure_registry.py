"""ToolRegistry's own operations (names, formats, errors as messages, timeouts, concurrency, progress), in memory.

Every server is the bundled example server served in memory (tests/memory_peers.py)
through the registry's public ``transport_factory``; a server whose start
fails is a factory that refuses.  tests/test_registry.py keeps the same
behaviours against real servers at once (the example over stdio, the official
SDK's over stdio and Streamable HTTP, the npm reference server).
"""

from __future__ import annotations

import time
from typing import Any, Dict, Iterator, List

import pytest

from jsonrpc_threads.mcp import ToolRegistry
from jsonrpc_threads.mcp.registry import UnknownServer, UnknownTool, result_text
from jsonrpc_threads.transports.config import ServerConfig

from .memory_peers import PeerEnds, example_server
from .registry_support import NAME_RE, anthropic_call, anthropic_text, openai_call

WAIT_S = 10.0


@pytest.fixture
def ends() -> Iterator[PeerEnds]:
    made = PeerEnds()
    yield made
    made.close_all()


def registry_of(ends: PeerEnds, servers: Dict[str, Dict[str, Any]], **options: Any) -> ToolRegistry:
    """A registry whose servers named ``missing*`` cannot start; every other is an example server in memory."""

    def factory(config: ServerConfig) -> Any:
        if str(config.name).startswith("missing"):
            raise FileNotFoundError(f"[Errno 2] No such file or directory: {config.command!r}")
        return ends.add(example_server()).transport

    options.setdefault("default_timeout", WAIT_S)
    options.setdefault("startup_timeout", WAIT_S)
    return ToolRegistry.from_config({"mcpServers": servers}, transport_factory=factory, **options)


MEMORY = {"command": "in-memory"}


def test_several_servers_at_once_each_with_its_own_names(ends: PeerEnds) -> None:
    servers = {"example": MEMORY, "second": MEMORY, "missing": {"command": "jsonrpc-threads-no-such-command"}}
    with registry_of(ends, servers) as registry:
        assert ends.made == []  # lazy: nothing started yet
        tools = registry.tools()
        assert set(registry.errors) == {"missing"} and "jsonrpc-threads-no-such-command" in registry.errors["missing"]
        names = [tool["name"] for tool in tools]
        assert {"mcp__example__add", "mcp__second__add"} <= set(names)
        assert list(dict.fromkeys(tool["server"] for tool in tools)) == ["example", "second"]
        assert all(NAME_RE.fullmatch(name) for name in names)
        assert registry.resolve("mcp__second__add") == ("second", "add")
        messages = registry.execute_all(
            [
                openai_call("mcp__example__add", {"a": 2, "b": 3}, "c1"),
                anthropic_call("mcp__second__add", {"a": 4, "b": 5}, "c2"),
            ]
        )
    assert messages[0] == {"role": "tool", "tool_call_id": "c1", "content": "5"}
    assert messages[1] == {"type": "tool_result", "tool_use_id": "c2", "content": [{"type": "text", "text": "9"}]}


def test_openai_and_anthropic_tool_lists_name_the_same_tools(ends: PeerEnds) -> None:
    with registry_of(ends, {"example": MEMORY}) as registry:
        openai = registry.openai_tools()
        anthropic = registry.anthropic_tools()
    assert [tool["function"]["name"] for tool in openai] == [tool["name"] for tool in anthropic]
    add = next(tool for tool in openai if tool["function"]["name"] == "mcp__example__add")
    assert add["type"] == "function" and add["function"]["parameters"]["type"] == "object"


def test_bad_calls_become_error_messages(ends: PeerEnds) -> None:
    with registry_of(ends, {"example": MEMORY, "missing": {"command": "nowhere"}}) as registry:
        cases = [
            (openai_call("mcp__example__add", "{not json"), "not valid JSON"),
            (openai_call("mcp__example__add", "[1, 2]"), "must be a JSON object"),
            (anthropic_call("mcp__example__add", "nope"), "not valid JSON"),
            (openai_call("mcp__example__nope", {}), "unknown tool 'mcp__example__nope'"),
            (openai_call("get_weather", {}), "unknown tool 'get_weather'"),
            (anthropic_call("mcp__missing__anything", {}), "server 'missing' failed to start"),
            (openai_call("mcp__example__add", {"a": "x", "b": 1}), "'a' must be a number"),
            (anthropic_call("mcp__example__fail", {"message": "it broke"}), "it broke"),
            ({"type": "function", "id": "x"}, "no 'function'"),
            ({"type": "tool_use", "id": "x", "input": {}}, "names no tool"),
            ("not a call", "must be an object"),
        ]
        messages = registry.execute_all([call for call, _ in cases])
    for (call, expected), message in zip(cases, messages):
        if isinstance(call, dict) and call.get("type") == "tool_use":
            assert message["type"] == "tool_result" and message["is_error"] is True
            assert expected in anthropic_text(message), (call, message)
        else:
            assert message["role"] == "tool" and message["content"].startswith("Error:"), message
            assert expected in message["content"], (call, message)


def test_a_timeout_is_a_message_and_the_server_keeps_working(ends: PeerEnds) -> None:
    with registry_of(ends, {"example": {**MEMORY, "timeout": 0.3}}) as registry:
        registry.tools()
        message = registry.execute(anthropic_call("mcp__example__slow", {"seconds": 30}))
        assert message["is_error"] is True and "did not finish within 0.3s" in anthropic_text(message)
        message = registry.execute(openai_call("mcp__example__slow", {"seconds": 30}), timeout=0.2)
        assert "within 0.2s" in message["content"]
        assert registry.execute(openai_call("mcp__example__add", {"a": 1, "b": 1}))["content"] == "2"


def test_responses_api_calls_and_sdk_objects(ends: PeerEnds) -> None:
    class ToolCallObject:  # stands for an SDK model (pydantic): has model_dump()
        def model_dump(self) -> Dict[str, Any]:
            return openai_call("mcp__example__echo", {"text": "from an object"}, "obj")

    with registry_of(ends, {"example": MEMORY}) as registry:
        responses_call = {"type": "function_call", "call_id": "fc1", "name": "mcp__example__add", "arguments": "{}"}
        messages = registry.execute_all(
            [
                {**responses_call, "arguments": '{"a": 1, "b": 2}'},
                ToolCallObject(),
                {"type": "function_call", "call_id": "fc2", "name": "mcp__example__nope", "arguments": "{}"},
            ]
        )
    assert messages[0] == {"type": "function_call_output", "call_id": "fc1", "output": "3"}
    assert messages[1] == {"role": "tool", "tool_call_id": "obj", "content": "from an object"}
    assert messages[2]["output"].startswith("Error: unknown tool")


def test_call_tool_by_server_and_tool_with_progress(ends: PeerEnds) -> None:
    with registry_of(ends, {"example": MEMORY}) as registry:
        progress: List[Dict[str, Any]] = []
        result = registry.call_tool("example", "slow", {"seconds": 0.2, "steps": 4}, on_progress=progress.append)
        assert result_text(result) == "waited 0.2s in 4 steps"
        assert [p["progress"] for p in progress] == [1, 2, 3, 4]
        with pytest.raises(UnknownServer, match="configured: example"):
            registry.call_tool("nope", "add")
        with pytest.raises(UnknownTool, match="'nope' on server 'example'"):
            registry.call_tool("example", "nope")


def test_execute_all_runs_calls_to_one_server_concurrently(ends: PeerEnds) -> None:
    # Four calls of half a second each to one server: together, well under the two seconds of one after another.
    with registry_of(ends, {"example": MEMORY}) as registry:
        registry.tools()
        calls = [openai_call("mcp__example__slow", {"seconds": 0.5}, f"c{n}") for n in range(4)]
        begun = time.monotonic()
        messages = registry.execute_all(calls)
        elapsed = time.monotonic() - begun
    assert [message["content"] for message in messages] == ["waited 0.5s in 1 steps"] * 4
    assert elapsed < 4 * 0.5, f"the calls ran one after another ({elapsed:.2f}s)"
