"""``jsonrpc_threads.a2a`` is built on the package's public faces only.

The design's claim: with the protocol layer and the transports orthogonal, a
new protocol needs nothing below the public API of the client, the transports
and the exception tree.  This holds the A2A package to it, as
tests/test_acp_layering.py holds the ACP package: none of its modules imports
a private module or name (one that starts with ``_``) from outside ``a2a/``;
and nothing outside ``a2a/`` (but the command line, which dispatches to it,
and the examples, which sit above every layer) imports it.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import List

from .test_acp_layering import _private_imports

PACKAGE = Path(__file__).resolve().parent.parent / "jsonrpc_threads"
A2A = PACKAGE / "a2a"


def test_the_a2a_package_imports_nothing_private_from_outside_it() -> None:
    modules = sorted(A2A.glob("*.py"))
    assert len(modules) >= 8
    assert [line for path in modules for line in _private_imports(path)] == []


def _imports_a2a(path: Path) -> bool:
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if (node.level and module.split(".")[0] == "a2a") or module.startswith("jsonrpc_threads.a2a"):
                return True
        elif isinstance(node, ast.Import) and any(a.name.startswith("jsonrpc_threads.a2a") for a in node.names):
            return True
    return False


def test_no_layer_below_imports_the_a2a_package() -> None:
    outside: List[str] = [
        str(path.relative_to(PACKAGE))
        for path in sorted(PACKAGE.rglob("*.py"))
        if "a2a" not in path.relative_to(PACKAGE).parts
        and path.relative_to(PACKAGE).as_posix() != "cli/__init__.py"
        and path.relative_to(PACKAGE).parts[0] != "examples"  # above every layer (the example agent)
        and _imports_a2a(path)
    ]
    assert outside == []
