"""Where the real language servers of the tests are, and a small throwaway project for them.

Not a peer itself.  ``python-lsp-server`` comes from PyPI (the test extras),
``pyright`` from npm (tests/node, ``make test`` installs it); a test whose
server is missing skips and says how to install it.  The project is written
into a test's ``tmp_path``: two modules that import each other's names, and
one with an error both servers report.
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path
from typing import Dict, List

import pytest

NODE_DIR = Path(__file__).resolve().parent.parent / "node"
PYRIGHT_LANGSERVER = NODE_DIR / "node_modules" / "pyright" / "langserver.index.js"

#: The throwaway project: file name -> text.
PROJECT: Dict[str, str] = {
    "lib.py": (
        "def greet(name: str) -> str:\n"
        '    """Say hello to someone."""\n'
        '    return "hello " + name\n'
        "\n"
        "\n"
        "class Greeter:\n"
        "    def shout(self, name: str) -> str:\n"
        "        return greet(name).upper()\n"
    ),
    "main.py": ('from lib import Greeter, greet\n\nmessage = greet("world")\nprint(message, Greeter().shout("you"))\n'),
    "broken.py": ("import os\n\nprint(undefined_name)\n"),
}


def pylsp_command() -> List[str]:
    """The argv of python-lsp-server, or a skip when it is not installed."""
    if importlib.util.find_spec("pylsp") is None:
        pytest.skip("python-lsp-server is not installed (the test extras install it: make test)")
    return [sys.executable, "-m", "pylsp"]


def pyright_command() -> List[str]:
    """The argv of pyright's language server, or a skip when node or pyright is missing."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed: pyright (npm) needs it")
    if not PYRIGHT_LANGSERVER.exists():
        pytest.skip("pyright is not installed in tests/node/node_modules (make test runs npm ci --prefix tests/node)")
    return [node, str(PYRIGHT_LANGSERVER), "--stdio"]


def write_project(root: Path) -> Path:
    """Write ``PROJECT`` into ``root``; returns ``root``."""
    for name, text in PROJECT.items():
        (root / name).write_text(text, encoding="utf-8")
    return root
