"""One supervised server's tool list: as last fetched, kept while the server restarts or idles, stale on list_changed.

Theory of operation.  A :class:`ToolCache` holds the tools a server listed,
and counts two things: the server's ``notifications/tools/list_changed``
(:meth:`ToolCache.changed`) and the fetches.  A fetch remembers the count of
changes it started from (:meth:`ToolCache.changes`), so a change that arrives
while the list is on its way still leaves it stale.  The list survives a
restart or an idle close (a model keeps seeing the tools of a server that
will be back) and is emptied only when the server is failed.
:attr:`ToolCache.version` changes with every fetch and every emptying: the
registry rebuilds its names when a version it built from moved.

Thread-safety: every method may be called from any thread (one lock; no call
out under it).
"""

from __future__ import annotations

import threading
from typing import List, Sequence, Tuple

from .types import Tool


class ToolCache:
    """The tool list of one server.  Thread-safe."""

    def __init__(self) -> None:
        # _lock guards every field.
        self._lock = threading.Lock()
        self._tools: List[Tool] = []
        self._listed = False
        self._listings = 0  # how many times the list was fetched
        self._changes = 0  # list_changed notifications received
        self._listed_changes = 0  # the value of _changes the last fetch started from
        self._version = 0

    def tools(self) -> List[Tool]:
        """The tools as last fetched (empty before, and once the server failed)."""
        with self._lock:
            return list(self._tools)

    def listing(self) -> Tuple[List[Tool], int]:
        """The tools and their :attr:`version`, read together."""
        with self._lock:
            return list(self._tools), self._version

    @property
    def version(self) -> int:
        """A number that changes whenever the list does (fetched, or emptied)."""
        return self._version

    @property
    def listed(self) -> bool:
        """True once a list was fetched (and not emptied since)."""
        return self._listed

    @property
    def listings(self) -> int:
        """How many times the list was fetched (a start fetches it too)."""
        return self._listings

    def changes(self) -> int:
        """The count of list_changed notifications so far (a fetch starts from it)."""
        return self._changes

    def changed(self) -> None:
        """The server said its tools changed: the list is stale."""
        with self._lock:
            self._changes += 1

    def needs_fetch(self) -> bool:
        """True when the list was never fetched, or is stale."""
        with self._lock:
            return not self._listed or self._listed_changes != self._changes

    def store(self, tools: Sequence[Tool], changes: int) -> None:
        """Keep a fetched list; ``changes`` is :meth:`changes` as the fetch started."""
        with self._lock:
            self._tools = list(tools)
            self._listed = True
            self._listings += 1
            self._version += 1
            self._listed_changes = changes

    def clear(self) -> None:
        """The server failed: it offers nothing until it starts again."""
        with self._lock:
            self._tools = []
            self._listed = False
            self._version += 1

    def offers(self, name: str) -> bool:
        """True when the list as fetched has a tool ``name``."""
        with self._lock:
            return self._listed and any(isinstance(tool, dict) and tool.get("name") == name for tool in self._tools)


__all__ = ["ToolCache"]
