"""The map of the package in the docs matches the package.

``docs/internals.md`` lists every module with the first paragraph of its
docstring, and the README's "Architecture" table names every top-level module
and package.  Regenerate the internals table with::

    python -m tests.test_architecture

and paste it over the one under "## Every module".
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Dict, List, Set

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "jsonrpc_threads"
INTERNALS = ROOT / "docs" / "internals.md"
README = ROOT / "README.md"

_ROLE = re.compile(r":[a-z]+:`~?\.*([^`]+)`")


def modules() -> Dict[str, str]:
    """Every module of the package (path relative to it) -> the first paragraph of its docstring, as Markdown."""
    found: Dict[str, str] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
        first = " ".join(doc.split("\n\n")[0].split())
        first = _ROLE.sub(lambda m: f"`{m.group(1)}`", first).replace("``", "`").replace("|", "\\|")
        found[path.relative_to(PACKAGE).as_posix()] = first
    return found


def internals_table() -> str:
    lines = ["| module | holds |", "| --- | --- |"]
    lines += [f"| `{name}` | {text} |" for name, text in modules().items()]
    return "\n".join(lines) + "\n"


def _table_after(text: str, heading: str) -> List[List[str]]:
    section = text.split(heading, 1)[1]
    rows = []
    for line in section.splitlines()[1:]:
        if line.startswith("## "):
            break
        if line.startswith("| ") and not line.startswith("| ---") and not line.startswith("| module"):
            rows.append([cell.strip() for cell in line.strip().strip("|").split(" | ")])
    return rows


def test_every_module_is_in_the_internals_table_with_its_docstring() -> None:
    listed = {
        row[0].strip("`"): row[1] for row in _table_after(INTERNALS.read_text(encoding="utf-8"), "## Every module")
    }
    expected = modules()
    assert sorted(set(expected) - set(listed)) == [], "modules missing from docs/internals.md"
    assert sorted(set(listed) - set(expected)) == [], "docs/internals.md lists modules that do not exist"
    stale = [name for name, text in expected.items() if listed[name] != text]
    assert not stale, f"regenerate the table (python -m tests.test_architecture): {stale}"


def test_the_readme_names_every_top_level_module_and_package() -> None:
    rows = _table_after(README.read_text(encoding="utf-8"), "## Architecture")
    named: Set[str] = set()
    for row in rows:
        named.update(re.findall(r"`([^`]+)`", row[0]))
    top = {p.name for p in PACKAGE.glob("*.py")} | {
        p.name + "/" for p in PACKAGE.iterdir() if (p / "__init__.py").exists()
    }
    top.discard("__init__.py")
    assert sorted(top - named) == [], "top-level modules the README's Architecture table does not name"
    assert sorted(named - top) == [], "the README's Architecture table names what does not exist"


if __name__ == "__main__":
    print(internals_table(), end="")
