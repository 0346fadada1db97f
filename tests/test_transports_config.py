"""One config model (jsonrpc_threads/transports/config.py): one parser, the same ``${VAR}`` expansion everywhere.

``parse_entry`` is the only validator of a server entry; ``transport_from_config``,
``McpClient(entry)`` and ``ToolRegistry`` all go through it, so a variable is
expanded the same way whichever door the entry comes in by.  Real children:
tests/peers/stdio_peer.py (plain JSON-RPC), the bundled example MCP server and
the official-SDK peer.  transport_from_config's behaviour per transport and its
refusals are also in tests/test_http_transport.py.
"""

from __future__ import annotations

import ast
import os
import re
import sys
from pathlib import Path
from typing import Any, Dict, List, Set

import pytest

import jsonrpc_threads
from jsonrpc_threads.client import JsonRpcClient
from jsonrpc_threads.errors import ConfigError
from jsonrpc_threads.mcp import McpClient
from jsonrpc_threads.transports.config import (
    ServerConfig,
    build_transport,
    expand_variables,
    parse_entry,
    transport_from_config,
)

from .conftest import needs_sdk, peer_command
from .registry_support import SDK, WAIT_S, anthropic_call, anthropic_text, make_registry

PACKAGE = Path(jsonrpc_threads.__file__).resolve().parent


def test_variables_are_expanded_with_defaults() -> None:
    env = {"HOME": "/home/ada", "EMPTY": ""}
    assert expand_variables("${HOME}/docs", env) == "/home/ada/docs"
    assert expand_variables("${NOPE:-fallback}", env) == "fallback"
    assert expand_variables("${EMPTY:-fallback}", env) == "fallback"
    assert expand_variables("${EMPTY}", env) == ""
    assert expand_variables("$HOME ${1} plain", env) == "$HOME ${1} plain"
    with pytest.raises(ConfigError, match="NOPE is not set"):
        expand_variables("${NOPE}", env)


# -- the parser -----------------------------------------------------------------------


def test_an_entry_is_checked_and_expanded_once_into_a_server_config() -> None:
    entry = {
        "command": "${PY}",
        "args": ["-m", "${MOD:-server}"],
        "env": {"TOKEN": "${TOKEN}"},
        "cwd": "sub",
        "timeout": 5,
        "description": "ignored: the caller's key",
    }
    config = parse_entry("local", entry, {"PY": "python3", "TOKEN": "s3cret"}, base_dir=Path("/srv"))
    assert config == ServerConfig(
        "local",
        "stdio",
        command="python3",
        args=("-m", "server"),
        env={"TOKEN": "s3cret"},
        cwd="/srv/sub",
        timeout=5.0,
    )
    assert parse_entry(None, config.entry(), {}) == ServerConfig(
        None, "stdio", command="python3", args=("-m", "server"), env={"TOKEN": "s3cret"}, cwd="/srv/sub", timeout=5.0
    )
    remote = parse_entry(None, {"type": "streamable-http", "url": "https://${HOST}/mcp"}, {"HOST": "example.com"})
    assert (remote.transport, remote.url, dict(remote.headers)) == ("http", "https://example.com/mcp", {})
    legacy = parse_entry(None, {"type": "sse", "url": "http://${HOST}/sse", "headers": {"K": "v"}}, {"HOST": "h"})
    assert (legacy.transport, legacy.url, dict(legacy.headers)) == ("sse", "http://h/sse", {"K": "v"})
    assert parse_entry(None, legacy.entry(), {}) == legacy


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"url": "http://127.0.0.1:1/mcp", "command": "x"}, "keep one, not both"),
        ({"args": []}, "needs 'command' (stdio) or 'url' (HTTP)"),
        ({"type": "sse", "command": "x"}, "server type 'sse' does not take a 'command'"),
        ({"type": "stdio", "url": "http://127.0.0.1:1/mcp"}, "server type 'stdio' does not take a 'url'"),
        ({"url": "ftp://127.0.0.1/mcp"}, "must start with http:// or https://"),
        ({"command": "  "}, "'command' must be a non-empty string"),
        ({"command": "x", "timeout": 0}, "'timeout' must be a positive number"),
        ({"command": "x", "timeout": True}, "'timeout' must be a positive number"),
        ({"command": "x", "env": {"K": "${UNSET_VAR}"}}, "env.K: environment variable UNSET_VAR is not set"),
        ([], "must be an object (a mapping), not list"),
    ],
)
def test_a_bad_entry_is_one_config_error_naming_the_server(entry: Any, message: str) -> None:
    with pytest.raises(ConfigError) as named:
        parse_entry("srv", entry, {})
    assert message in str(named.value) and named.value.server == "srv"
    assert str(named.value).startswith("server 'srv'")
    with pytest.raises(ValueError, match=re.escape(message)) as unnamed:
        parse_entry(None, entry, {})
    assert isinstance(unnamed.value, ConfigError) and unnamed.value.server is None
    assert "srv" not in str(unnamed.value)


def test_a_secret_in_a_bad_url_is_not_repeated() -> None:
    with pytest.raises(ConfigError) as info:
        parse_entry("s", {"url": "ftp://user:${PASSWORD}@127.0.0.1/mcp"}, {"PASSWORD": "hunter2"})
    assert "hunter2" not in str(info.value) and "ftp" in str(info.value)


# -- the same expansion through every door --------------------------------------------


def test_transport_from_config_expands_variables(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("JT_CONFIG_TOKEN", "s3cret")
    monkeypatch.setenv("JT_CONFIG_DIR", str(tmp_path))
    argv = peer_command("stdio_peer")
    entry = {"command": argv[0], "args": argv[1:], "env": {"K": "${JT_CONFIG_TOKEN}"}, "cwd": "${JT_CONFIG_DIR}"}
    with JsonRpcClient(transport_from_config(entry), default_timeout=WAIT_S) as client:
        assert client.call("env")["K"] == "s3cret"
        assert Path(client.call("cwd")) == tmp_path


def test_mcp_client_expands_variables_in_its_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JT_CONFIG_PYTHON", sys.executable)
    entry = {
        "command": "${JT_CONFIG_PYTHON}",
        "args": ["-m", "${JT_CONFIG_MODULE:-jsonrpc_threads.examples.mcp_tool_server}"],
    }
    with McpClient(entry, default_timeout=WAIT_S) as client:
        assert "add" in {tool["name"] for tool in client.list_tools()}


@needs_sdk
def test_mcp_client_expands_variables_in_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JT_CONFIG_T", "from the environment")
    entry: Dict[str, Any] = {**SDK, "env": {"K": "${JT_CONFIG_T}"}}
    with McpClient(entry, default_timeout=WAIT_S) as client:
        result = client.call_tool("getenv", {"name": "K"})
    assert result["content"][0]["text"] == "from the environment"


def test_mcp_client_takes_a_parsed_entry_and_refuses_an_unset_variable() -> None:
    config = parse_entry(
        "example", {"command": sys.executable, "args": ["-m", "jsonrpc_threads.examples.mcp_tool_server"]}
    )
    with McpClient(config, default_timeout=WAIT_S) as client:
        assert client.call_tool("add", {"a": 1, "b": 2})["content"][0]["text"] == "3"
    with pytest.raises(ConfigError, match="JT_CONFIG_UNSET is not set"):
        McpClient({"command": "${JT_CONFIG_UNSET}"})
    assert os.environ.get("JT_CONFIG_UNSET") is None


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


def test_build_transport_labels_a_named_stdio_server() -> None:
    config = parse_entry(
        "my-server", {"command": sys.executable, "args": ["-m", "jsonrpc_threads.examples.mcp_tool_server"]}
    )
    transport = build_transport(config)
    try:
        assert transport.label == "my-server"
    finally:
        transport.close()


# -- imports --------------------------------------------------------------------------


def _module_level_imports(path: Path) -> Set[str]:
    """The modules ``path`` imports when it is imported (not inside a function, nor under TYPE_CHECKING)."""
    found: Set[str] = set()

    def visit(nodes: List[ast.stmt]) -> None:
        for node in nodes:
            if isinstance(node, ast.ImportFrom):
                found.add("." * node.level + (node.module or ""))
            elif isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.If) and "TYPE_CHECKING" not in ast.dump(node.test):
                visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body)
                for handler in node.handlers:
                    visit(handler.body)
            elif isinstance(node, ast.ClassDef):
                visit(node.body)

    visit(ast.parse(path.read_text(encoding="utf-8")).body)
    return found


def test_the_config_and_the_mcp_layer_import_no_transport_when_imported() -> None:
    heavy = {".http", ".stdio", "..transports.http", "..transports.stdio", "requests", "urllib3", "sseclient", "psutil"}
    assert _module_level_imports(PACKAGE / "transports" / "config.py") & heavy == set()
    for path in sorted((PACKAGE / "mcp").glob("*.py")):
        assert _module_level_imports(path) & heavy == set(), path.name
