"""AcpClient against the example agent of the official TypeScript SDK (npm ``@agentclientprotocol/sdk``).

The agent ships in the SDK's package up to 1.9.0 (``dist/examples/agent.js``;
later releases leave the examples out), pinned in tests/node/package.json and
installed by ``make test`` (``npm ci --prefix tests/node``).  It needs no model
credentials and runs on Node 20: each turn streams text, a tool call and its
update, then asks permission to edit a file, pausing a second between steps.
"""

from __future__ import annotations

import shutil
import threading
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest

from jsonrpc_threads.acp import AcpClient

EXAMPLE_AGENT = (
    Path(__file__).resolve().parent / "node" / "node_modules" / "@agentclientprotocol" / "sdk" / "dist" / "examples"
) / "agent.js"
#: The agent pauses a second between its five steps.
TIMEOUT_S = 30.0

NODE = shutil.which("node")
pytestmark = [
    pytest.mark.skipif(NODE is None, reason="node is not installed: the TypeScript SDK's example agent needs it"),
    pytest.mark.skipif(
        not EXAMPLE_AGENT.is_file(),
        reason="@agentclientprotocol/sdk is not installed in tests/node (make test runs npm ci --prefix tests/node)",
    ),
]


def texts(updates: List[Dict[str, Any]]) -> List[str]:
    return [u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_message_chunk"]


def _turn(on_permission: Any = None) -> Dict[str, Any]:
    seen: List[Dict[str, Any]] = []
    assert NODE is not None
    with AcpClient([NODE, str(EXAMPLE_AGENT)], on_permission=on_permission, default_timeout=TIMEOUT_S) as agent:
        assert agent.protocol_version == 1
        session = agent.new_session()
        result = agent.prompt(session, "Fix the configuration", on_update=seen.append, timeout=TIMEOUT_S)
    assert result["updates"] == seen
    return result


def test_a_turn_whose_edit_is_refused_by_default() -> None:
    result = _turn()
    assert result["stopReason"] == "end_turn"
    kinds = [u["sessionUpdate"] for u in result["updates"]]
    assert kinds == [
        "agent_message_chunk",
        "tool_call",
        "tool_call_update",
        "agent_message_chunk",
        "tool_call",
        "agent_message_chunk",
    ]
    assert "prefer not to make that change" in texts(result["updates"])[-1]


def test_a_turn_whose_edit_is_allowed() -> None:
    asked: List[Dict[str, Any]] = []

    def on_permission(params: Dict[str, Any]) -> Optional[str]:
        asked.append(params)
        return "allow"

    result = _turn(on_permission)
    assert [o["optionId"] for o in asked[0]["options"]] == ["allow", "reject"]
    assert result["updates"][-2] == {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "call_2",
        "status": "completed",
        "rawOutput": {"success": True, "message": "Configuration updated"},
    }
    assert "successfully updated the configuration" in texts(result["updates"])[-1]


def test_cancel_mid_turn() -> None:
    first = threading.Event()
    assert NODE is not None
    with AcpClient([NODE, str(EXAMPLE_AGENT)], default_timeout=TIMEOUT_S) as agent:
        session = agent.new_session()
        canceller = threading.Thread(target=lambda: first.wait(TIMEOUT_S) and agent.cancel(session))
        canceller.start()
        try:
            result = agent.prompt(session, "Fix the configuration", on_update=lambda update: first.set())
        finally:
            canceller.join(TIMEOUT_S)
    assert result["stopReason"] == "cancelled"
    assert len(texts(result["updates"])) == 1
