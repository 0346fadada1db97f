"""One server's lifecycle in the registry (jsonrpc_threads/mcp/supervisor.py), over real child processes.

Started once on first use (or eagerly), however many threads ask; a failed
start tried again after ``retry_failed_after``; a crashed server started again
on its next use; the tool list fetched again when the server says it changed
(or when a name is missed); ``close()`` reclaiming every process.
"""

from __future__ import annotations

import stat
import sys
import threading
from pathlib import Path
from typing import List

import pytest

from jsonrpc_threads.mcp import ServerUnavailable

from .conftest import needs_sdk
from .registry_support import (
    EXAMPLE,
    MISSING,
    SDK,
    WAIT_S,
    anthropic_call,
    baseline,  # noqa: F401 - an autouse fixture
    child_commands,
    children,
    make_registry,
    openai_call,
)


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


def test_a_crash_is_a_message_and_the_next_call_restarts_the_server() -> None:
    with make_registry({"mcpServers": {"example": EXAMPLE}}) as registry:
        registry.start()
        first_pid = children()[0].pid
        message = registry.execute(openai_call("mcp__example__crash", {"code": 3}))
        assert message["content"].startswith("Error: server 'example' stopped while running tool 'crash'")
        assert "exit code 3" in message["content"]
        assert registry.execute(openai_call("mcp__example__add", {"a": 2, "b": 2}))["content"] == "4"
        assert [p.pid for p in children()] != [first_pid]


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


def test_a_failed_start_is_one_error_raised_as_a_fresh_copy_each_time() -> None:
    with make_registry({"mcpServers": {"missing": MISSING}}, retry_failed_after=None) as registry:
        raised = []
        for _ in range(2):
            with pytest.raises(ServerUnavailable, match="jsonrpc-threads-no-such-command") as info:
                registry.session("missing")
            raised.append(info.value)
        assert raised[0] is not raised[1] and str(raised[0]) == str(raised[1])
        assert registry.failures["missing"].message == raised[0].message


def test_the_retry_delay_can_be_changed_on_a_running_registry(tmp_path: Path) -> None:
    script = tmp_path / "server"
    with make_registry({"mcpServers": {"late": {"command": str(script)}}}, retry_failed_after=None) as registry:
        assert registry.tools() == [] and "late" in registry.errors
        script.write_text(f"#!/bin/sh\nexec {sys.executable} -m jsonrpc_threads.examples.mcp_tool_server\n")
        script.chmod(script.stat().st_mode | stat.S_IXUSR)
        assert registry.tools() == []  # never tried again...
        registry.retry_failed_after = 0.0
        assert "mcp__late__add" in {tool["name"] for tool in registry.tools()}  # ...until allowed
