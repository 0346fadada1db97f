"""mkdocs hooks: a site that works opened from disk.

Opened from disk (``build/site/index.html``), a page cannot fetch the search
index (``search/search_index.json``): the theme then loads
``search/search_index.js`` as a script instead, which :func:`on_post_build`
writes (the same index, as ``var __index = ...``).  The theme's ``offline``
plugin would write it too, but it also makes every page load a script from
unpkg.com; the site loads nothing from outside, so the worker stand-in it
fetches is ``docs/javascripts/file-worker.js``, written here.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

#: Docstring warnings known and left to the owners of those files (the docs build
#: is --strict: any other warning fails it).  (file, start of griffe's message).
KNOWN_DOCSTRING_WARNINGS: tuple = ()


class _KnownDocstringWarnings(logging.Filter):
    """Turns the known warnings into INFO lines that say so; every other record passes unchanged."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno == logging.WARNING:
            text = record.getMessage()
            if any(path in text and message in text for path, message in KNOWN_DOCSTRING_WARNINGS):
                record.levelno, record.levelname = logging.INFO, "INFO"
                record.msg, record.args = f"(known, see docs/hooks.py) {text}", ()
        return True


def on_startup(**kwargs: Any) -> None:
    logging.getLogger("mkdocs.plugins.griffe").addFilter(_KnownDocstringWarnings())


def on_post_build(config: Any, **kwargs: Any) -> None:
    """Write ``search/search_index.js`` beside the index, for pages opened from disk."""
    search = Path(config["site_dir"]) / "search"
    index = search / "search_index.json"
    if index.is_file():
        text = index.read_text(encoding="utf-8")
        (search / "search_index.js").write_text(f"var __index = {text};\n", encoding="utf-8")
