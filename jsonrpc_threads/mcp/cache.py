"""The caching hints of MCP 2026-07-28: results reused while the server says they are fresh.

Theory of operation.  In the stateless era the results of ``server/discover``,
the four list methods and ``resources/read`` carry ``ttlMs`` (how long the
result may be taken as fresh, in milliseconds) and ``cacheScope``.
``ResultCache`` keeps a result whose ``ttlMs`` is positive, keyed by the
method and the parameters that decide it (``_meta`` aside), and hands out a
copy of it until ``ttlMs`` has passed since it was received.  Each page of a
paginated list is its own entry (its cursor is part of the key).  A result of
a multi round-trip retry (``inputResponses``/``requestState``) is never kept:
it depends on more than the key.  A list-changed or resource-updated
notification makes the entries it concerns stale at once.  A result handed
out from the cache carries the ``ttlMs`` left of it, not the one it came with
(as an HTTP cache's ``Age`` does), so whoever reads it knows how fresh it is.

A paginated list is as fresh as its stalest page: ``page_ttl_ms`` reads
one page's hint, and once every page is in, ``ResultCache.hold_list``
makes the pages of that list expire together, when the first of them does
(an absent ``ttlMs`` counts as 0, as the specification says: a list with one
such page is fetched whole again the next time).

One cache belongs to one client, and so to one authorization context: a
``"private"`` result is never shared beyond it; ``"public"`` changes nothing here.

Thread-safety: every method may be called from any thread (one lock; no I/O
and no user code under it).
"""

from __future__ import annotations

import copy
import json
import threading
import time
from typing import Any, Callable, Dict, Iterable, Mapping, Optional, Sequence, Tuple

from ..deadlines.timeouts import is_nan
from .protocol import CACHEABLE_METHODS, RESULT_COMPLETE

#: Entries kept at most (the oldest go first).
MAX_ENTRIES = 512

_Key = Tuple[str, str]


def _key(method: str, params: Optional[Mapping[str, Any]]) -> Optional[_Key]:
    decisive = {key: value for key, value in (params or {}).items() if key != "_meta"}
    if "inputResponses" in decisive or "requestState" in decisive:
        return None
    try:
        return method, json.dumps(decisive, sort_keys=True, separators=(",", ":"), default=str)
    except (TypeError, ValueError):
        return None


class ResultCache:
    """Fresh cacheable results, by method and parameters.

    Args:
        clock: the clock ``ttlMs`` is measured on.
        max_entries: the most entries kept.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic, max_entries: int = MAX_ENTRIES) -> None:
        self._clock = clock
        self._max_entries = max_entries
        # _lock guards _entries (key -> (expiry, result)), kept in insertion order.
        self._lock = threading.Lock()
        self._entries: Dict[_Key, Tuple[float, Dict[str, Any]]] = {}

    def get(self, method: str, params: Optional[Mapping[str, Any]]) -> Optional[Dict[str, Any]]:
        """A copy of the fresh result for this request, or ``None``."""
        if method not in CACHEABLE_METHODS:
            return None
        key = _key(method, params)
        if key is None:
            return None
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            left = entry[0] - self._clock()
            if left <= 0:
                del self._entries[key]
                return None
            result = entry[1]
        fresh = copy.deepcopy(result)
        fresh["ttlMs"] = int(left * 1000.0)
        return fresh

    def put(self, method: str, params: Optional[Mapping[str, Any]], result: Any) -> None:
        """Keep ``result`` when its method is cacheable, it is complete, and its ``ttlMs`` is positive."""
        if method not in CACHEABLE_METHODS or not isinstance(result, dict):
            return
        if result.get("resultType", RESULT_COMPLETE) != RESULT_COMPLETE:
            return
        ttl = result.get("ttlMs")
        if isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or not ttl > 0:
            return  # absent, zero or negative: immediately stale
        key = _key(method, params)
        if key is None:
            return
        expiry = self._clock() + float(ttl) / 1000.0
        kept = copy.deepcopy(result)
        with self._lock:
            self._entries.pop(key, None)
            self._entries[key] = (expiry, kept)
            while len(self._entries) > self._max_entries:
                del self._entries[next(iter(self._entries))]

    def hold_list(self, method: str, fresh_for: float) -> None:
        """The pages of ``method``'s list expire within ``fresh_for`` seconds (at once for 0): all together."""
        until = self._clock() + fresh_for
        with self._lock:
            for key in [key for key in self._entries if key[0] == method]:
                expiry, result = self._entries[key]
                if fresh_for <= 0:
                    del self._entries[key]
                elif until < expiry:
                    self._entries[key] = (until, result)

    def invalidate(self, methods: Iterable[str], uri: Optional[str] = None) -> None:
        """Make the entries of ``methods`` stale (only those for ``uri``, when given)."""
        wanted = frozenset(methods)
        with self._lock:
            for key in [key for key in self._entries if key[0] in wanted]:
                if uri is None or json.loads(key[1]).get("uri") == uri:
                    del self._entries[key]

    def clear(self) -> None:
        """Forget everything (a new era, a new session)."""
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)


def page_ttl_ms(page: Mapping[str, Any], *, stateless: bool) -> Optional[float]:
    """A result's ``ttlMs``: how many milliseconds it stays fresh (0: stale at once).

    In the stateless era an absent or invalid ``ttlMs`` counts as 0, as the
    specification says; in the session era, which has no caching hints,
    ``None`` (no hint: the list is fresh until its server says it changed).
    """
    ttl = page.get("ttlMs")
    if isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or is_nan(ttl) or ttl < 0:
        return 0.0 if stateless else None
    return float(ttl)


def stale_then(
    cache: Optional[ResultCache], methods: Sequence[str], callback: Optional[Callable[[], None]]
) -> Callable[[], None]:
    """A list-changed handler: the cached results of ``methods`` go stale, then ``callback()`` runs (if given)."""

    def changed() -> None:
        if cache is not None:
            cache.invalidate(methods)
        if callback is not None:
            callback()

    return changed


def stale_resource_then(
    cache: Optional[ResultCache], callback: Optional[Callable[[str], None]]
) -> Callable[[str], None]:
    """A resource-updated handler: the cached ``resources/read`` of the URI goes stale, then ``callback(uri)`` runs."""

    def updated(uri: str) -> None:
        if cache is not None:
            cache.invalidate(("resources/read",), uri)
        if callback is not None:
            callback(uri)

    return updated


__all__ = ["MAX_ENTRIES", "ResultCache", "page_ttl_ms", "stale_resource_then", "stale_then"]
