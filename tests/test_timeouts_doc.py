"""docs/timeouts.md's table names every public blocking call, and only those: the table is checked against the code.

A public method of the client classes that takes a ``timeout`` blocks (or
bounds a life) by that timeout, so it must have its row, saying what the
timeout bounds; so must the few that block without one (``close``, the
registry's listings and starts).  Every command of the command line has its
row too.  A row that names nothing of the code fails as well.
"""

from __future__ import annotations

import argparse
import inspect
import re
from pathlib import Path
from typing import Dict, Set

import pytest

from jsonrpc_threads import JsonRpcClient
from jsonrpc_threads.a2a import A2aClient
from jsonrpc_threads.acp import AcpClient
from jsonrpc_threads.cli import build_parser
from jsonrpc_threads.lsp import LspClient
from jsonrpc_threads.mcp import McpClient, ToolRegistry

PAGE = Path(__file__).resolve().parent.parent / "docs" / "timeouts.md"
CLASSES = {cls.__name__: cls for cls in (JsonRpcClient, McpClient, ToolRegistry, LspClient, AcpClient, A2aClient)}
#: Public methods that block without a ``timeout`` parameter (bounded by named graces or a setting).
BLOCKING_WITHOUT_TIMEOUT: Dict[str, Set[str]] = {
    "JsonRpcClient": {"batch", "close"},
    "McpClient": {"close"},
    "ToolRegistry": {"anthropic_tools", "close", "from_config", "openai_tools", "start", "tools"},
    "LspClient": {"close"},
    "AcpClient": {"close"},
    "A2aClient": {"close"},
}
#: Public methods that take a ``timeout`` only to check or resolve it, never to wait.
NOT_BLOCKING: Dict[str, Set[str]] = {"JsonRpcClient": {"resolve_timeout"}}
_ROW = re.compile(r"^\| `([^`]+)` \| (.+?) \| (.+) \|$", re.MULTILINE)


def rows() -> Dict[str, str]:
    """The table's rows: the call's name -> what its timeout bounds."""
    section = PAGE.read_text(encoding="utf-8").split("## What each timeout bounds", 1)[1].split("\n## ", 1)[0]
    found = {name: bounds for name, _, bounds in _ROW.findall(section)}
    assert found, "no table under '## What each timeout bounds'"
    return found


def blocking_methods(cls: type) -> Set[str]:
    """The public methods of ``cls`` that take a ``timeout``, and those known to block without one."""
    names = set(BLOCKING_WITHOUT_TIMEOUT[cls.__name__])
    for name, member in inspect.getmembers(cls, callable):
        if name.startswith("_") or isinstance(inspect.getattr_static(cls, name), property):
            continue
        try:
            parameters = inspect.signature(member).parameters
        except (TypeError, ValueError):
            continue
        if "timeout" in parameters:
            names.add(name)
    return names - NOT_BLOCKING.get(cls.__name__, set())


def commands() -> Set[str]:
    """The command line's commands (the choices of its subparsers, as tests/test_docs.py reads the options)."""
    found: Set[str] = set()
    for action in build_parser()._actions:
        if isinstance(action, argparse._SubParsersAction):
            found.update(action.choices)
    assert found
    return found


@pytest.mark.parametrize("class_name", sorted(CLASSES))
def test_every_public_blocking_method_has_its_row(class_name: str) -> None:
    listed = {name.split(".", 1)[1] for name in rows() if name.startswith(f"{class_name}.")}
    assert sorted(blocking_methods(CLASSES[class_name]) - listed) == []


def test_every_command_has_its_row() -> None:
    listed = {name.split(" ", 1)[1] for name in rows() if name.startswith("jsonrpc-threads ")}
    assert listed == commands()


def test_every_row_names_a_blocking_call_of_the_code() -> None:
    for name, bounds in rows().items():
        assert bounds.strip(), name
        if name.startswith("jsonrpc-threads "):
            assert name.split(" ", 1)[1] in commands(), name
            continue
        class_name, _, method = name.partition(".")
        assert class_name in CLASSES, name
        assert method in blocking_methods(CLASSES[class_name]), f"{name} is not a blocking method"
