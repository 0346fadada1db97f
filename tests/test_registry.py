"""ToolRegistry and the mcpServers configuration, against several real servers at once.

The servers: the bundled example MCP server (jsonrpc_threads/examples/mcp_tool_server.py,
over stdio), an official-SDK ``MCPServer`` over stdio and over Streamable HTTP
(tests/peers/registry_sdk_peer.py), the npm reference server
``@modelcontextprotocol/server-everything`` over Streamable HTTP when
tests/node/node_modules has it, and a command that does not exist.
"""

from __future__ import annotations

import json
import os
import re
import stat
import sys
import threading
import time
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional

import psutil
import pytest

from jsonrpc_threads.mcp import ToolRegistry
from jsonrpc_threads.mcp.config import ConfigError, expand_variables, load_config
from jsonrpc_threads.mcp.registry import (
    ServerUnavailable,
    UnknownServer,
    UnknownTool,
    assign_names,
    namespaced_name,
    result_text,
)

from .conftest import PEERS_DIR, needs_sdk
from .peers.registry_launch import sdk_http_peer

try:  # the npm reference server's launcher (tests/node is set up by make node-deps)
    from .peers.mcp_launch import EVERYTHING_JS, LOOPBACK_PRELOAD, ServerProcess, node_binary, node_env
except ImportError:  # pragma: no cover
    EVERYTHING_JS = None  # type: ignore[assignment]

WAIT_S = 30.0
EXAMPLE = {"command": sys.executable, "args": ["-m", "jsonrpc_threads.examples.mcp_tool_server"]}
SDK = {"command": sys.executable, "args": [str(PEERS_DIR / "registry_sdk_peer.py")]}
MISSING = {"command": "jsonrpc-threads-no-such-command"}
#: The 80-character tool name of registry_sdk_peer.py.
LONG_NAME = "a_tool_name_that_is_much_longer_than_the_sixty_four_characters_a_model_api_allows"
NAME_RE = re.compile(r"[A-Za-z0-9_-]{1,64}")


#: Children running before the test (the module's HTTP servers): not the registry's.
_BASELINE: List[int] = []


@pytest.fixture(autouse=True)
def baseline() -> None:
    _BASELINE[:] = [p.pid for p in psutil.Process().children(recursive=True)]


def children() -> List[psutil.Process]:
    """The registry's children: the live processes started during this test."""
    return [
        p
        for p in psutil.Process().children(recursive=True)
        if p.pid not in _BASELINE and p.status() != psutil.STATUS_ZOMBIE
    ]


def child_commands() -> List[str]:
    return [" ".join(p.cmdline()) for p in children()]


def openai_call(name: str, arguments: Any, call_id: str = "call_1") -> Dict[str, Any]:
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": text}}


def anthropic_call(name: str, arguments: Any, call_id: str = "toolu_1") -> Dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": arguments}


def anthropic_text(message: Dict[str, Any]) -> str:
    return "\n".join(block["text"] for block in message["content"] if block["type"] == "text")


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


def make_registry(config: Any, **options: Any) -> ToolRegistry:
    options.setdefault("default_timeout", WAIT_S)
    options.setdefault("startup_timeout", WAIT_S)
    options.setdefault("environ", {"PATH": os.environ.get("PATH", "")})
    return ToolRegistry.from_config(config, **options)


# -- names ----------------------------------------------------------------------------


def test_names_are_kept_when_they_fit() -> None:
    assert namespaced_name("files", "read_file") == "mcp__files__read_file"
    assert namespaced_name("a-b", "C-9_x") == "mcp__a-b__C-9_x"
    fits = "t" * (64 - len("mcp__s__"))
    assert namespaced_name("s", fits) == f"mcp__s__{fits}"


def test_invalid_characters_become_underscores() -> None:
    assert namespaced_name("files", "read.file") == "mcp__files__read_file"
    assert namespaced_name("my server", "a/b") == "mcp__my_server__a_b"
    assert namespaced_name("café", "ü") == "mcp__caf_" + "__" + "_"


def test_long_names_are_truncated_with_a_stable_hash() -> None:
    name = namespaced_name("sdk", LONG_NAME)
    assert len(name) == 64 and NAME_RE.fullmatch(name)
    assert name.startswith(f"mcp__sdk__{LONG_NAME}"[:55] + "_")
    assert name == namespaced_name("sdk", LONG_NAME)  # stable
    assert name != namespaced_name("sdk", LONG_NAME + "2")  # the hash tells them apart
    assert re.fullmatch(r"[0-9a-f]{8}", name[-8:])


def test_clashes_rewrite_only_the_rewritten_names() -> None:
    pairs = [("files", "read.file"), ("files", "read_file"), ("files", "read file")]
    names = assign_names(pairs)
    assert names[("files", "read_file")] == "mcp__files__read_file"  # exact: kept
    for pair in (("files", "read.file"), ("files", "read file")):
        assert re.fullmatch(r"mcp__files__read_file_[0-9a-f]{8}", names[pair])
    assert len(set(names.values())) == 3
    # The same tools in another order get the same names.
    assert assign_names(list(reversed(pairs))) == names


def test_double_underscore_ambiguity_goes_to_the_first_server() -> None:
    pairs = [("a", "b__c"), ("a__b", "c")]  # both spell mcp__a__b__c
    names = assign_names(pairs)
    assert names[("a", "b__c")] == "mcp__a__b__c"
    assert re.fullmatch(r"mcp__a__b__c_[0-9a-f]{8}", names[("a__b", "c")])


def test_every_assigned_name_is_valid_and_unique() -> None:
    pairs = [(server, tool) for server in ("s", "s.", "s!", "x" * 70) for tool in ("t", "t.", "t!", "y" * 70, "")]
    names = assign_names(pairs)
    assert len(set(names.values())) == len(pairs)
    assert all(NAME_RE.fullmatch(name) for name in names.values())


# -- configuration --------------------------------------------------------------------


def test_variables_are_expanded_with_defaults() -> None:
    env = {"HOME": "/home/ada", "EMPTY": ""}
    assert expand_variables("${HOME}/docs", env) == "/home/ada/docs"
    assert expand_variables("${NOPE:-fallback}", env) == "fallback"
    assert expand_variables("${EMPTY:-fallback}", env) == "fallback"
    assert expand_variables("${EMPTY}", env) == ""
    assert expand_variables("$HOME ${1} plain", env) == "$HOME ${1} plain"
    with pytest.raises(ConfigError, match="NOPE is not set"):
        expand_variables("${NOPE}", env)


def test_config_entries_are_checked_one_by_one(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "local": {
                        "command": "${PY}",
                        "args": ["--token", "${TOKEN}"],
                        "env": {"KEY": "${TOKEN}", "LEVEL": "${LEVEL:-info}"},
                        "cwd": "sub",
                        "timeout": 5,
                    },
                    "remote": {
                        "type": "streamable-http",
                        "url": "https://example.com/mcp",
                        "headers": {"X": "${TOKEN}"},
                    },
                    "no-var": {"command": "x", "env": {"K": "${UNSET_VAR}"}},
                    "both": {"command": "x", "url": "http://x"},
                    "neither": {"args": []},
                    "sse": {"type": "sse", "url": "http://x/sse"},
                    "wrong-type": {"type": "stdio", "url": "http://x"},
                    "bad-args": {"command": "x", "args": "one two"},
                    "bad-timeout": {"command": "x", "timeout": -1},
                    "off": {"command": "x", "disabled": True},
                }
            }
        )
    )
    config = load_config(path, environ={"PY": "python3", "TOKEN": "s3cret"})
    assert list(config.servers) == ["local", "remote"]
    local = config.servers["local"]
    assert (local.transport, local.command, local.args) == ("stdio", "python3", ("--token", "s3cret"))
    assert local.env == {"KEY": "s3cret", "LEVEL": "info"}
    assert local.cwd == str(tmp_path.resolve() / "sub")
    assert local.timeout == 5.0
    remote = config.servers["remote"]
    assert (remote.transport, remote.url, dict(remote.headers)) == ("http", "https://example.com/mcp", {"X": "s3cret"})
    errors = {name: str(error) for name, error in config.errors.items()}
    assert set(errors) == {"no-var", "both", "neither", "sse", "wrong-type", "bad-args", "bad-timeout"}
    assert "server 'no-var', env.K: environment variable UNSET_VAR is not set" in errors["no-var"]
    assert "not supported" in errors["sse"]
    assert all(error.server == name for name, error in config.errors.items())
    assert "off" not in config.names


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not valid JSON"),
        ("[]", "expected a JSON object"),
        ('{"other": {}}', "no 'mcpServers'"),
        ('{"mcpServers": []}', "must be an object"),
    ],
)
def test_a_bad_file_is_one_clear_error(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(content)
    with pytest.raises(ConfigError, match=message) as info:
        ToolRegistry.from_config(path)
    assert str(path) in str(info.value)
    with pytest.raises(ConfigError, match="cannot read"):
        ToolRegistry.from_config(tmp_path / "absent.json")


def test_vs_code_servers_key_is_accepted() -> None:
    assert list(load_config({"servers": {"x": {"command": "x"}}}).servers) == ["x"]


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


# -- lazy and eager start ---------------------------------------------------------------


@needs_sdk
def test_a_server_starts_on_first_use_and_only_that_one() -> None:
    before = child_commands()
    with make_registry({"mcpServers": {"example": EXAMPLE, "sdk": SDK}}) as registry:
        assert child_commands() == before
        assert not registry.started("example") and not registry.started("sdk")
        message = registry.execute(openai_call("mcp__example__echo", {"text": "hi"}))
        assert message["content"] == "hi"
        assert registry.started("example") and not registry.started("sdk")
        started = [command for command in child_commands() if command not in before]
        assert len(started) == 1 and "mcp_tool_server" in started[0]


def test_concurrent_first_uses_start_a_server_once() -> None:
    with make_registry({"mcpServers": {"example": EXAMPLE}}) as registry:
        calls = [openai_call("mcp__example__add", {"a": i, "b": 1}, f"c{i}") for i in range(12)]
        messages = registry.execute_all(calls)
        assert [m["content"] for m in messages] == [str(i + 1) for i in range(12)]
        assert len(children()) == 1


@needs_sdk
def test_eager_start_starts_everything_now() -> None:
    config = {"mcpServers": {"example": EXAMPLE, "sdk": SDK, "missing": MISSING}}
    with make_registry(config, eager=True) as registry:
        commands = child_commands()
        assert any("mcp_tool_server" in c for c in commands) and any("registry_sdk_peer" in c for c in commands)
        assert list(registry.errors) == ["missing"]
        assert registry.started("example") and registry.started("sdk") and not registry.started("missing")
    assert children() == []


@needs_sdk
def test_close_reclaims_every_server_and_later_calls_say_so() -> None:
    registry = make_registry({"mcpServers": {"example": EXAMPLE, "sdk": SDK}})
    try:
        registry.start()
        assert len(children()) == 2
    finally:
        registry.close()
    registry.close()  # idempotent
    assert children() == []
    message = registry.execute(openai_call("mcp__example__add", {"a": 1, "b": 2}))
    assert message["content"].startswith("Error:") and "closed" in message["content"]


def test_a_failed_start_is_tried_again_later(tmp_path: Path) -> None:
    script = tmp_path / "server"
    config = {"mcpServers": {"late": {"command": str(script)}}}
    with make_registry(config, retry_failed_after=0.0) as registry:
        assert registry.tools() == []
        assert "late" in registry.errors
        script.write_text(f"#!/bin/sh\nexec {sys.executable} -m jsonrpc_threads.examples.mcp_tool_server\n")
        script.chmod(script.stat().st_mode | stat.S_IXUSR)
        assert "mcp__late__add" in {tool["name"] for tool in registry.tools()}
        assert registry.errors == {}


@needs_sdk
def test_env_and_variables_reach_the_child() -> None:
    config = {"mcpServers": {"sdk": {**SDK, "env": {"REGISTRY_SECRET": "${SECRET}", "OTHER": "${OTHER:-dflt}"}}}}
    environ = {"SECRET": "s3cret", "PATH": os.environ.get("PATH", "")}
    with make_registry(config, environ=environ) as registry:
        got = registry.execute_all(
            [
                anthropic_call("mcp__sdk__getenv", {"name": "REGISTRY_SECRET"}, "1"),
                anthropic_call("mcp__sdk__getenv", {"name": "OTHER"}, "2"),
            ]
        )
    assert [anthropic_text(m) for m in got] == ["s3cret", "dflt"]


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
        message = registry.execute(anthropic_call("mcp__example__slow", {"seconds": 30}))
        assert message["is_error"] is True
        assert "did not finish within 0.3s" in anthropic_text(message)
        message = registry.execute(openai_call("mcp__example__slow", {"seconds": 30}), timeout=0.2)
        assert "within 0.2s" in message["content"]
        assert registry.execute(openai_call("mcp__example__add", {"a": 1, "b": 1}))["content"] == "2"


def test_a_crash_is_a_message_and_the_next_call_restarts_the_server() -> None:
    with make_registry({"mcpServers": {"example": EXAMPLE}}) as registry:
        registry.start()
        first_pid = children()[0].pid
        message = registry.execute(openai_call("mcp__example__crash", {"code": 3}))
        assert message["content"].startswith("Error: server 'example' stopped while running tool 'crash'")
        assert "exit code 3" in message["content"]
        assert registry.execute(openai_call("mcp__example__add", {"a": 2, "b": 2}))["content"] == "4"
        assert [p.pid for p in children()] != [first_pid]


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


def test_result_text_describes_every_kind_of_block() -> None:
    result = {
        "content": [
            {"type": "text", "text": "first"},
            {"type": "image", "data": "AAAA", "mimeType": "image/png"},
            {"type": "resource", "resource": {"uri": "file:///a", "text": "inline"}},
            {"type": "resource_link", "uri": "file:///b", "name": "b"},
        ]
    }
    assert result_text(result) == "first\n[image: image/png, about 3 bytes]\ninline\n[resource link: file:///b b]"
    assert result_text({"content": [], "structuredContent": {"x": 1}}) == '{"x": 1}'


# -- list_changed, call_tool, progress -------------------------------------------------------


def test_list_changed_refreshes_the_tool_list() -> None:
    changed = threading.Event()
    seen: List[str] = []

    def on_changed(server: str) -> None:
        seen.append(server)
        changed.set()

    with make_registry({"mcpServers": {"example": EXAMPLE}}, on_tools_changed=on_changed) as registry:
        assert "mcp__example__fresh" not in {tool["name"] for tool in registry.tools()}
        message = registry.execute(openai_call("mcp__example__define_tool", {"name": "fresh", "text": "new!"}))
        assert message["content"] == "defined 'fresh'"
        assert changed.wait(WAIT_S) and seen == ["example"]
        assert "mcp__example__fresh" in {tool["name"] for tool in registry.tools()}
        assert registry.execute(openai_call("mcp__example__fresh", {}))["content"] == "new!"


def test_a_tool_that_appears_without_notice_is_found_on_a_miss() -> None:
    with make_registry({"mcpServers": {"example": EXAMPLE}}) as registry:
        registry.start()
        # Define the tool behind the registry's back: straight on the session.
        registry.session("example").call_tool("define_tool", {"name": "quiet", "text": "found"})
        assert registry.execute(anthropic_call("mcp__example__quiet", {}))["content"][0]["text"] == "found"


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
