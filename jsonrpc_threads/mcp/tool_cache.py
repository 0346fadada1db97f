"""One supervised server's tool list: as last fetched, kept across restarts, stale on list_changed or at its ttlMs.

Theory of operation.  A ``ToolCache`` holds the tools a server listed,
and knows when the list goes stale: when the server says its tools changed
(``notifications/tools/list_changed``, ``ToolCache.changed``), or when the
``ttlMs`` it gave passes (MCP 2026-07-28: the smallest of the list's pages;
0, or none in that era, means stale at once; a server of the session era
gives none, and its list stays fresh until it says it changed).  A fetch
remembers the count of changes it started from (``ToolCache.changes``),
so a change that arrives while the list is on its way still leaves it stale.

A fetch of a stale list is shared (``ToolCache.join_fetch``): callers
that find one under way wait for it (each no longer than its own deadline)
instead of asking the server again, so a burst of calls to a server whose
list is always stale costs one ``tools/list``, not one each.

The list survives a restart or an idle close (a model keeps seeing the tools
of a server that will be back) and is emptied only when the server is
failed.  ``ToolCache.version`` changes with every fetch and every
emptying: the registry rebuilds its names when a version it built from moved.

Thread-safety: every method may be called from any thread (one lock; no call
out under it).
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future
from typing import Callable, FrozenSet, List, Optional, Sequence, Tuple

from .types import Tool


class ToolCache:
    """The tool list of one server.  Thread-safe."""

    def __init__(self) -> None:
        # _lock guards every field (_names is written under it, read without it: offers).
        self._lock = threading.Lock()
        self._tools: List[Tool] = []
        self._names: FrozenSet[str] = frozenset()  # the names in _tools (empty while not listed): offers() reads it
        self._listed = False
        self._listings = 0  # how many times the list was fetched
        self._changes = 0  # list_changed notifications received
        self._listed_changes = 0  # the value of _changes the last fetch started from
        self._expires_at: Optional[float] = None  # when the list's ttlMs passes (monotonic); None: no hint
        self._version = 0
        self._fetch: Optional[Future[None]] = None  # the shared fetch under way, if any

    def tools(self) -> List[Tool]:
        """The tools as last fetched (empty before, and once the server failed)."""
        with self._lock:
            return list(self._tools)

    def listing(self) -> Tuple[List[Tool], int]:
        """The tools and their ``version``, read together."""
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

    def needs_fetch(self, *, expired: bool = True) -> bool:
        """True when the list was never fetched, or is stale (``expired=False``: by list_changed only)."""
        with self._lock:
            if not self._listed or self._listed_changes != self._changes:
                return True
            return expired and self._expires_at is not None and time.monotonic() >= self._expires_at

    def store(self, tools: Sequence[Tool], changes: int, expires_at: Optional[float]) -> None:
        """Keep a fetched list.

        Args:
            tools: the list.
            changes: ``changes`` as the fetch started.
            expires_at: the ``time.monotonic`` moment its ``ttlMs`` passes, or ``None`` for no hint.
        """
        with self._lock:
            self._tools = list(tools)
            self._names = frozenset(
                tool["name"] for tool in self._tools if isinstance(tool, dict) and isinstance(tool.get("name"), str)
            )
            self._listed = True
            self._listings += 1
            self._version += 1
            self._listed_changes = changes
            self._expires_at = expires_at

    def clear(self) -> None:
        """The server failed: it offers nothing until it starts again."""
        with self._lock:
            self._tools = []
            self._names = frozenset()
            self._listed = False
            self._expires_at = None
            self._version += 1

    def offers(self, name: str) -> bool:
        """True when the list as fetched has a tool ``name``.

        Lock-free (it runs on every call): the names are one frozenset,
        empty until a list is stored and once cleared, replaced whole; a
        list stored meanwhile is seen before or after, as by a call made a
        moment earlier or later.
        """
        return name in self._names

    def fetch_needed(self, listings_before: int, *, refresh: bool) -> bool:
        """True when a caller that saw ``listings`` at ``listings_before`` must fetch the list (``refresh``: always).

        A list fetched since (the server just started) is as fresh as it
        gets: only a list_changed that came meanwhile makes it stale.
        """
        if self.listings != listings_before:
            return self.needs_fetch(expired=False)
        return refresh or self.needs_fetch()

    def shared_fetch(self, fetch: Callable[[], None], wait: Callable[[Future[None]], None]) -> None:
        """Run ``fetch()`` as the shared fetch, or ``wait(future)`` for the one under way (``join_fetch``)."""
        flight, mine = self.join_fetch()
        if not mine:
            wait(flight)
            return
        try:
            fetch()
        except BaseException as exc:
            self.end_fetch(flight, exc)
            raise
        self.end_fetch(flight)

    def join_fetch(self) -> Tuple[Future[None], bool]:
        """The shared fetch: the one under way and ``False``, or a new one and ``True`` (the caller runs it).

        The caller that gets ``True`` must settle the future when its fetch
        ends (``end_fetch``), whatever happens.
        """
        with self._lock:
            if self._fetch is not None:
                return self._fetch, False
            future: Future[None] = Future()
            self._fetch = future
            return future, True

    def end_fetch(self, future: Future[None], error: Optional[BaseException] = None) -> None:
        """The shared fetch ``future`` ended (``error``: how it failed); the next stale list starts another."""
        with self._lock:
            if self._fetch is future:
                self._fetch = None
        if error is None:
            future.set_result(None)
        else:
            future.set_exception(error)


__all__ = ["ToolCache"]
