"""ToolRegistry (jsonrpc_threads/mcp/registry.py), the facade, against several real servers at once.

The servers: the bundled example MCP server (jsonrpc_threads/examples/mcp_tool_server.py,
over stdio), an official-SDK ``MCPServer`` over stdio and over Streamable HTTP
(tests/peers/registry_sdk_peer.py), the npm reference server
``@modelcontextprotocol/server-everything`` over Streamable HTTP when
tests/node/node_modules has it, and a command that does not exist.  A server's
lifecycle is tests/test_mcp_supervisor.py; names, formats and the configuration
have their own pure tests (test_mcp_naming.py, test_mcp_llm_formats.py,
test_transports_config.py, test_mcp_config.py).
"""

from __future__ import annotations

import inspect
import time
from typing import Any, Dict, Iterator, List, Optional

import pytest

from jsonrpc_threads.mcp import ToolRegistry
from jsonrpc_threads.mcp.config import ConfigError
from jsonrpc_threads.mcp.registry import ServerUnavailable, UnknownServer, UnknownTool, result_text

from .conftest import needs_sdk
from .peers.registry_launch import sdk_http_peer
from .registry_support import (
    EXAMPLE,
    LONG_NAME,
    MISSING,
    NAME_RE,
    SDK,
    anthropic_call,
    anthropic_text,
    baseline,  # noqa: F401 - an autouse fixture
    child_commands,
    make_registry,
    openai_call,
)

try:  # the npm reference server's launcher (tests/node is set up by make node-deps)
    from .peers.mcp_launch import EVERYTHING_JS, LOOPBACK_PRELOAD, ServerProcess, node_binary, node_env
except ImportError:  # pragma: no cover
    EVERYTHING_JS = None  # type: ignore[assignment]


# -- servers started once per module (before each test's leak check) ---------------


@pytest.fixture(scope="module")
def sdk_http_url() -> Iterator[str]:
    """The SDK peer over Streamable HTTP on 127.0.0.1."""
    pytest.importorskip("mcp")
    with sdk_http_peer() as url:
        yield url


@pytest.fixture(scope="module")
def everything_url() -> Iterator[Optional[str]]:
    """server-everything over Streamable HTTP on 127.0.0.1, when tests/node has it (else None)."""
    node = node_binary() if EVERYTHING_JS is not None else None
    if node is None or EVERYTHING_JS is None or not EVERYTHING_JS.exists():
        yield None
        return
    argv = [node, "--require", str(LOOPBACK_PRELOAD), str(EVERYTHING_JS), "streamableHttp"]
    with ServerProcess(argv, env=node_env(PORT="0"), name="registry-everything") as server:
        port = server.wait_for(r"loopback: listening on 127\.0\.0\.1:(\d+)").group(1)
        server.wait_for(r"Streamable HTTP Server listening")
        yield f"http://127.0.0.1:{port}/mcp"


@pytest.fixture
def config(sdk_http_url: str, everything_url: Optional[str]) -> Dict[str, Any]:
    servers: Dict[str, Any] = {
        "example": EXAMPLE,
        "sdk": SDK,
        "web": {"type": "http", "url": sdk_http_url},
        "missing": MISSING,
        "needs-token": {"url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "Bearer ${REGISTRY_NO_TOKEN}"}},
    }
    if everything_url is not None:
        servers["everything"] = {"type": "streamable-http", "url": everything_url}
    return {"mcpServers": servers}


# -- several real servers at once -----------------------------------------------------


@needs_sdk
def test_several_servers_at_once(config: Dict[str, Any], everything_url: Optional[str]) -> None:
    before = child_commands()
    with make_registry(config) as registry:
        assert child_commands() == before  # lazy: nothing started yet
        tools = registry.tools()
        by_name = {tool["name"]: tool for tool in tools}
        errors = registry.errors

        # Failures are per server, with the reason; the other servers work.
        assert set(errors) == {"missing", "needs-token"}
        assert "jsonrpc-threads-no-such-command" in errors["missing"]
        assert "REGISTRY_NO_TOKEN is not set" in errors["needs-token"]
        assert isinstance(registry.failures["missing"], ServerUnavailable)
        assert isinstance(registry.failures["needs-token"], ConfigError)
        assert not any(tool["server"] in errors for tool in tools)

        # Same tool name on different servers: distinct names; servers in config order.
        assert {"mcp__example__add", "mcp__sdk__add", "mcp__web__add"} <= set(by_name)
        servers_in_order = list(dict.fromkeys(tool["server"] for tool in tools))
        expected_order = ["example", "sdk", "web"] + (["everything"] if everything_url else [])
        assert servers_in_order == expected_order
        dotted = by_name["mcp__sdk__files_read"]
        assert (dotted["server"], dotted["tool"]) == ("sdk", "files.read")
        long_tool = next(tool for tool in tools if tool["server"] == "sdk" and tool["tool"] == LONG_NAME)
        assert len(long_tool["name"]) == 64
        assert all(NAME_RE.fullmatch(tool["name"]) for tool in tools)
        assert registry.resolve(long_tool["name"]) == ("sdk", LONG_NAME)

        # One call per live server, in both formats.
        calls = [
            openai_call("mcp__example__add", {"a": 2, "b": 3}, "c1"),
            anthropic_call("mcp__sdk__multiply", {"a": 4, "b": 5}, "c2"),
            openai_call("mcp__web__add", {"a": 10, "b": 5}, "c3"),
            anthropic_call(dotted["name"], {"path": "notes.txt"}, "c4"),
            openai_call(long_tool["name"], {}, "c5"),
        ]
        if everything_url:
            calls.append(anthropic_call("mcp__everything__get-sum", {"a": 1, "b": 2}, "c6"))
        messages = registry.execute_all(calls)
        assert messages[0] == {"role": "tool", "tool_call_id": "c1", "content": "5"}
        assert messages[1] == {"type": "tool_result", "tool_use_id": "c2", "content": [{"type": "text", "text": "20"}]}
        assert messages[2] == {"role": "tool", "tool_call_id": "c3", "content": "15"}
        assert anthropic_text(messages[3]) == "read notes.txt"
        assert messages[4]["content"] == "long"
        if everything_url:
            assert "3" in anthropic_text(messages[5])


@needs_sdk
def test_openai_and_anthropic_tool_lists(config: Dict[str, Any]) -> None:
    with make_registry({"mcpServers": {"example": EXAMPLE, "sdk": SDK}}) as registry:
        openai = registry.openai_tools()
        anthropic = registry.anthropic_tools()
    assert [tool["function"]["name"] for tool in openai] == [tool["name"] for tool in anthropic]
    add = next(tool for tool in openai if tool["function"]["name"] == "mcp__example__add")
    assert add == {
        "type": "function",
        "function": {
            "name": "mcp__example__add",
            "description": "Add two numbers.",
            "parameters": {
                "type": "object",
                "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                "required": ["a", "b"],
            },
        },
    }
    multiply = next(tool for tool in anthropic if tool["name"] == "mcp__sdk__multiply")
    assert set(multiply) == {"name", "description", "input_schema"}
    assert multiply["description"] == "Multiply two integers."
    assert multiply["input_schema"]["type"] == "object"
    assert set(multiply["input_schema"]["properties"]) == {"a", "b"}


# -- concurrency ----------------------------------------------------------------------


def test_execute_all_runs_calls_to_one_server_concurrently() -> None:
    # rendezvous returns only once all three calls are running on the server at
    # the same time: serialized calls would each fail after 10 s instead.
    with make_registry({"mcpServers": {"example": EXAMPLE}}) as registry:
        meet = {"key": "k", "parties": 3, "timeout": 10}
        calls = [
            openai_call("mcp__example__rendezvous", meet, "r1"),
            openai_call("mcp__example__add", {"a": 1, "b": 1}, "a1"),
            anthropic_call("mcp__example__rendezvous", meet, "r2"),
            openai_call("mcp__example__echo", {"text": "x"}, "e1"),
            openai_call("mcp__example__rendezvous", meet, "r3"),
        ]
        messages = registry.execute_all(calls)
    assert [m.get("tool_call_id", m.get("tool_use_id")) for m in messages] == ["r1", "a1", "r2", "e1", "r3"]
    assert messages[0]["content"] == "3 parties met at 'k'"
    assert anthropic_text(messages[2]) == "3 parties met at 'k'" and "is_error" not in messages[2]
    assert messages[1]["content"] == "2" and messages[3]["content"] == "x"


@needs_sdk
def test_execute_all_takes_as_long_as_the_slowest_call() -> None:
    with make_registry({"mcpServers": {"example": EXAMPLE, "sdk": SDK}}, eager=True) as registry:
        calls = [
            openai_call("mcp__example__slow", {"seconds": 1.0, "steps": 2}, "slow1"),
            openai_call("mcp__example__add", {"a": 1, "b": 2}, "fast"),
            anthropic_call("mcp__sdk__sleep", {"seconds": 1.0}, "slow2"),
            openai_call("mcp__example__slow", {"seconds": 1.0}, "slow3"),
        ]
        started = time.monotonic()
        messages = registry.execute_all(calls)
        elapsed = time.monotonic() - started
    assert messages[0]["content"] == "waited 1.0s in 2 steps"
    assert messages[1]["content"] == "3"
    assert anthropic_text(messages[2]) == "slept 1.0"
    assert messages[3]["content"] == "waited 1.0s in 1 steps"
    assert 1.0 <= elapsed < 2.5, elapsed  # the sum would be 3 s


# -- every error path is a tool message -------------------------------------------------


def test_bad_calls_become_error_messages() -> None:
    with make_registry({"mcpServers": {"example": EXAMPLE, "missing": MISSING}}) as registry:
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
            text = anthropic_text(message)
            assert expected in text, (call, message)
        else:
            assert message["role"] == "tool"
            assert message["content"].startswith("Error:"), message
            assert expected in message["content"], (call, message)


def test_a_timeout_is_a_message_and_the_server_keeps_working() -> None:
    config = {"mcpServers": {"example": {**EXAMPLE, "timeout": 0.3}}}
    with make_registry(config) as registry:
        registry.tools()  # started within startup_timeout: the 0.3 s below is the call's alone
        message = registry.execute(anthropic_call("mcp__example__slow", {"seconds": 30}))
        assert message["is_error"] is True
        assert "did not finish within 0.3s" in anthropic_text(message)
        message = registry.execute(openai_call("mcp__example__slow", {"seconds": 30}), timeout=0.2)
        assert "within 0.2s" in message["content"]
        assert registry.execute(openai_call("mcp__example__add", {"a": 1, "b": 1}))["content"] == "2"


@needs_sdk
def test_responses_api_calls_and_sdk_objects() -> None:
    class ToolCallObject:  # stands for an SDK model (pydantic): has model_dump()
        def model_dump(self) -> Dict[str, Any]:
            return openai_call("mcp__example__echo", {"text": "from an object"}, "obj")

    with make_registry({"mcpServers": {"example": EXAMPLE}}) as registry:
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


# -- call_tool, progress -------------------------------------------------------------------


@needs_sdk
def test_call_tool_by_server_and_tool_with_progress() -> None:
    with make_registry({"mcpServers": {"example": EXAMPLE, "sdk": SDK}}) as registry:
        progress: List[Dict[str, Any]] = []
        result = registry.call_tool("example", "slow", {"seconds": 0.2, "steps": 4}, on_progress=progress.append)
        assert result_text(result) == "waited 0.2s in 4 steps"
        assert [p["progress"] for p in progress] == [1, 2, 3, 4]
        assert progress[-1]["message"] == "step 4 of 4"
        sdk_progress: List[Dict[str, Any]] = []
        result = registry.call_tool("sdk", "sleep", {"seconds": 0.1, "steps": 2}, on_progress=sdk_progress.append)
        assert result_text(result) == "slept 0.1"
        assert [p["progress"] for p in sdk_progress] == [1, 2]
        assert result_text(registry.call_tool("sdk", "files.read", {"path": "p"})) == "read p"
        with pytest.raises(UnknownServer, match="configured: example, sdk"):
            registry.call_tool("nope", "add")
        with pytest.raises(UnknownTool, match="'nope' on server 'example'"):
            registry.call_tool("example", "nope")


def test_everything_server_content_in_both_formats(everything_url: Optional[str]) -> None:
    if everything_url is None:
        pytest.skip("tests/node/node_modules has no @modelcontextprotocol/server-everything (make node-deps)")
    config = {"mcpServers": {"everything": {"url": everything_url}}}
    with make_registry(config) as registry:
        image = registry.execute(anthropic_call("mcp__everything__get-tiny-image", {}))
        as_text = registry.execute(openai_call("mcp__everything__get-tiny-image", {}))
        progress: List[Dict[str, Any]] = []
        registry.call_tool(
            "everything", "trigger-long-running-operation", {"duration": 0.2, "steps": 2}, on_progress=progress.append
        )
    kinds = [block["type"] for block in image["content"]]
    assert "image" in kinds
    block = next(block for block in image["content"] if block["type"] == "image")
    assert block["source"]["type"] == "base64" and block["source"]["media_type"] == "image/png"
    assert "[image: image/png" in as_text["content"]
    assert [p["progress"] for p in progress] == [1, 2]


def test_from_config_takes_the_classes_keywords_explicitly() -> None:
    """Every keyword of the class, by name and default, for IDE completion and type checking (no ``**options``)."""
    factory = inspect.signature(ToolRegistry.from_config).parameters
    made = inspect.signature(ToolRegistry).parameters
    assert all(p.kind is not inspect.Parameter.VAR_KEYWORD for p in factory.values())
    keywords = {name: p.default for name, p in made.items() if p.kind is inspect.Parameter.KEYWORD_ONLY}
    assert {name: p.default for name, p in factory.items() if name in keywords} == keywords
    assert set(factory) == {"path_or_mapping", "environ", *keywords}
    with pytest.raises(TypeError):
        ToolRegistry.from_config({"mcpServers": {}}, no_such_option=1)  # type: ignore[call-arg]
