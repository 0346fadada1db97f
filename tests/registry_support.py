"""What the tool registry's tests share: server entries, a registry maker, tool-call builders, child tracking.

Not a test module.  The entries start real servers as child processes: the
bundled example MCP server (jsonrpc_threads/examples/mcp_tool_server.py), the
official-SDK peer (tests/peers/registry_sdk_peer.py), and a command that does
not exist.
"""

from __future__ import annotations

import json
import os
import re
import sys
from typing import Any, Dict, List

import psutil
import pytest

from jsonrpc_threads.mcp import ToolRegistry

from .conftest import PEERS_DIR

WAIT_S = 30.0
EXAMPLE = {"command": sys.executable, "args": ["-m", "jsonrpc_threads.examples.mcp_tool_server"]}
SDK = {"command": sys.executable, "args": [str(PEERS_DIR / "registry_sdk_peer.py")]}
MISSING = {"command": "jsonrpc-threads-no-such-command"}
#: The 80-character tool name of registry_sdk_peer.py.
LONG_NAME = "a_tool_name_that_is_much_longer_than_the_sixty_four_characters_a_model_api_allows"
NAME_RE = re.compile(r"[A-Za-z0-9_-]{1,64}")

#: Children running before the test (a module's HTTP servers): not the registry's.
_BASELINE: List[int] = []


@pytest.fixture(autouse=True)
def baseline() -> None:
    """Record the children that run before the test (import it into a test module to use it)."""
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


def make_registry(config: Any, **options: Any) -> ToolRegistry:
    options.setdefault("default_timeout", WAIT_S)
    options.setdefault("startup_timeout", WAIT_S)
    options.setdefault("environ", {"PATH": os.environ.get("PATH", "")})
    return ToolRegistry.from_config(config, **options)


def openai_call(name: str, arguments: Any, call_id: str = "call_1") -> Dict[str, Any]:
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": text}}


def anthropic_call(name: str, arguments: Any, call_id: str = "toolu_1") -> Dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": arguments}


def anthropic_text(message: Dict[str, Any]) -> str:
    return "\n".join(block["text"] for block in message["content"] if block["type"] == "text")
