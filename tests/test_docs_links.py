"""Every protocol the library speaks can be found from where a reader starts (issue 47, first hour).

Pure checks of the Markdown sources (the site itself is built and opened in
tests/test_docs.py): the landing page's "Where to go next" links every guide,
the API reference's landing table lists every reference page, and the
package's long description names every client and the server.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
GUIDES_NOT_LINKED_FROM_THE_LANDING_PAGE = {"index.md", "changelog.md"}


def test_where_to_go_next_links_every_guide() -> None:
    landing = (DOCS / "index.md").read_text(encoding="utf-8")
    section = landing.split("## Where to go next", 1)[1]
    linked = set(re.findall(r"\]\(([a-z0-9-]+\.md)\)", section))
    guides = {path.name for path in DOCS.glob("*.md")} - GUIDES_NOT_LINKED_FROM_THE_LANDING_PAGE
    assert sorted(guides - linked) == []


def test_the_reference_landing_table_lists_every_reference_page() -> None:
    table = (DOCS / "reference" / "index.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"\]\(([a-z0-9-]+\.md)\)", table))
    pages = {path.name for path in (DOCS / "reference").glob("*.md")} - {"index.md"}
    assert sorted(pages - listed) == []


def test_the_long_description_names_every_client_and_the_server() -> None:
    text = (ROOT / "LONG_DESCRIPTION.md").read_text(encoding="utf-8")
    for name in ("McpClient", "ToolRegistry", "LspClient", "AcpClient", "A2aClient", "McpServer"):
        assert name in text, name
