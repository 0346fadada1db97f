"""The ``mcpServers`` file (jsonrpc_threads/mcp/config.py): entries checked one by one, one bad entry spoils nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jsonrpc_threads.mcp import ToolRegistry
from jsonrpc_threads.mcp.config import ConfigError, load_config


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
                    "sse-command": {"type": "sse", "command": "x"},
                    "wrong-type": {"type": "stdio", "url": "http://x"},
                    "bad-args": {"command": "x", "args": "one two"},
                    "bad-timeout": {"command": "x", "timeout": -1},
                    "off": {"command": "x", "disabled": True},
                }
            }
        )
    )
    config = load_config(path, environ={"PY": "python3", "TOKEN": "s3cret"})
    assert list(config.servers) == ["local", "remote", "sse"]
    local = config.servers["local"]
    assert (local.transport, local.command, local.args) == ("stdio", "python3", ("--token", "s3cret"))
    assert local.env == {"KEY": "s3cret", "LEVEL": "info"}
    assert local.cwd == str(tmp_path.resolve() / "sub")
    assert local.timeout == 5.0
    remote = config.servers["remote"]
    assert (remote.transport, remote.url, dict(remote.headers)) == ("http", "https://example.com/mcp", {"X": "s3cret"})
    errors = {name: str(error) for name, error in config.errors.items()}
    assert set(errors) == {"no-var", "both", "neither", "sse-command", "wrong-type", "bad-args", "bad-timeout"}
    assert "server 'no-var', env.K: environment variable UNSET_VAR is not set" in errors["no-var"]
    assert config.servers["sse"].transport == "sse"  # the legacy HTTP+SSE transport
    assert "does not take a 'command'" in errors["sse-command"]
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
