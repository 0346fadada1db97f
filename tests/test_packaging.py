"""The package's metadata: who made it, and a description that reads right on an index page.

An index shows the long description away from the source tree, so a relative
link in it (``docs/mcp.md``, ``LICENSE``) leads nowhere: every link in it must
be absolute.  A project URL must be one a reader can open (``https://``); the
project has none yet, and names none (see pyproject.toml).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Dict

import pytest

ROOT = Path(__file__).resolve().parent.parent

#: A markdown link or image target: ``[text](target)`` / ``![alt](target)``, or an autolink ``<target>``.
_LINK = re.compile(r"\]\(\s*<?([^)\s>]+)|<((?:[a-z][a-z0-9+.-]*:)[^>\s]+)>")
_ABSOLUTE = re.compile(r"^(?:https?://|mailto:)")


def _project() -> Dict[str, Any]:
    tomllib = pytest.importorskip("tomllib", reason="tomllib comes with Python 3.11+")
    with open(ROOT / "pyproject.toml", "rb") as file:
        project: Dict[str, Any] = tomllib.load(file)["project"]
    return project


def test_the_long_description_has_no_link_into_the_source_tree() -> None:
    readme = _project()["readme"]
    path = ROOT / (readme if isinstance(readme, str) else readme["file"])
    text = path.read_text(encoding="utf-8")
    prose = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)  # links live in the prose, not in code
    targets = [first or second for first, second in _LINK.findall(prose)]
    relative = [target for target in targets if not _ABSOLUTE.match(target)]
    assert relative == [], f"{path.name} links to {relative}: they lead nowhere on an index page"
    assert "jsonrpc_threads" in text.splitlines()[0]


def test_the_authors_and_urls_are_stated_and_real() -> None:
    project = _project()
    assert project["authors"] and all(author.get("name") for author in project["authors"])
    for name, url in project.get("urls", {}).items():
        assert _ABSOLUTE.match(url) and ".example" not in url, f"project URL {name}: {url!r}"


def test_the_link_check_sees_relative_links() -> None:
    found = [a or b for a, b in _LINK.findall("see [the docs](docs/mcp.md), <https://x.org/> and ![i](img.png)")]
    assert found == ["docs/mcp.md", "https://x.org/", "img.png"]
