"""``jsonrpc_threads.acp`` is built on the package's public faces only.

The claim of the design is that a new protocol needs nothing below the public
API of the client, the transports and the exception tree.  This holds the ACP
package to it: none of its modules imports a private module or name (one that
starts with ``_``) from outside ``acp/``.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import List

ACP = Path(__file__).resolve().parent.parent / "jsonrpc_threads" / "acp"


def _private_imports(path: Path) -> List[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            outside = node.level >= 2 or (node.level == 0 and module.startswith("jsonrpc_threads"))
            if not outside:
                continue
            parts = [part for part in module.split(".") if part]
            names = [alias.name for alias in node.names]
            if any(part.startswith("_") for part in parts) or any(
                n.startswith("_") and n != "__version__" for n in names
            ):
                found.append(f"{path.name}:{node.lineno}: from {'.' * node.level}{module} import {', '.join(names)}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("jsonrpc_threads") and any(p.startswith("_") for p in alias.name.split(".")):
                    found.append(f"{path.name}:{node.lineno}: import {alias.name}")
    return found


def test_the_acp_package_imports_nothing_private_from_outside_it() -> None:
    modules = sorted(ACP.glob("*.py"))
    assert len(modules) >= 10
    assert [line for path in modules for line in _private_imports(path)] == []


def test_the_check_finds_a_private_import(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("from ..errors._tree import JsonRpcError\nfrom ..client import _request_future\n")
    assert len(_private_imports(sample)) == 2
