"""Paginated lists (tools, prompts, resources, templates, skills): every page within one deadline, each checked.

Theory of operation.  ``fetch_list`` asks for a list's first page, then
follows ``nextCursor`` until a page has none, every request spending what is
left of the one deadline of the public call that wants the list.  Each page
is checked before anything of it is used: it must be an object, its items a
list of objects that each have their identifying field as a string (a
tool's or a prompt's ``name``, a resource's ``uri``, a template's
``uriTemplate``, a skill's ``uri``), and its ``nextCursor`` absent, ``null``
or a string.  A page that is not raises
``ProtocolError`` naming the server, the page
and the field (``data``: ``{"server", "method", "page", "field"}``), never a
bare ``TypeError`` from deep inside.  A server that repeats a cursor is taken
at its word once: the list ends there (logged), as it does after
``MAX_PAGES`` pages.

The result is a ``Listing``: the items of every page, and how long the
server says the whole list stays fresh, the smallest ``ttlMs`` of its pages
(``page_ttl_ms``; in the stateless era a page
without one is stale at once).

Pure but for the requests it is given: no thread, no lock.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Set, Tuple

from ..deadlines.timeouts import Deadline
from ..errors import ProtocolError
from .cache import page_ttl_ms

logger = logging.getLogger(__name__)

#: Upper bound on pages followed by one list (a server that never stops
#: paginating is a bug, not a reason to loop forever).
MAX_PAGES = 10_000

#: The lists this module follows: method -> (the key of its items, the field that names an item).
LISTS: Dict[str, Tuple[str, str]] = {
    "tools/list": ("tools", "name"),
    "prompts/list": ("prompts", "name"),
    "resources/list": ("resources", "uri"),
    "resources/templates/list": ("resourceTemplates", "uriTemplate"),
    "skills/list": ("skills", "uri"),
}

#: ``request(method, params, deadline) -> result``: one request of the call, within its deadline.
Request = Callable[[str, Optional[Dict[str, Any]], Deadline], Any]


@dataclass(frozen=True)
class Listing:
    """One whole list, every page of it, and how long the server says it stays fresh.  Immutable.

    Attributes:
        items: the items of every page, in order, as the server sent them.
        ttl_ms: the smallest ``ttlMs`` of the pages (``0.0``: stale at once);
            ``None`` when no page gave one in the session era (no hint: fresh
            until the server says the list changed).
        expires_at: the ``time.monotonic`` moment the list goes stale, or
            ``None`` for no hint.
    """

    items: List[Dict[str, Any]]
    ttl_ms: Optional[float]
    expires_at: Optional[float]

    @property
    def stale(self) -> bool:
        """True once the server's ``ttlMs`` has passed (never without a hint)."""
        return self.expires_at is not None and time.monotonic() >= self.expires_at

    def fresh_for(self) -> Optional[float]:
        """Seconds until the list goes stale (0.0 once it has); ``None`` for no hint."""
        if self.expires_at is None:
            return None
        return max(0.0, self.expires_at - time.monotonic())


def fetch_list(
    request: Request, method: str, deadline: Deadline, *, server: str, stateless: Callable[[], bool]
) -> Listing:
    """Every page of ``method``'s list, checked, within ``deadline``.

    Args:
        request: sends one request of the call (the era settled first).
        method: one of ``LISTS``.
        deadline: the public call's.
        server: names the server in errors (its transport's label).
        stateless: tells, once the first page is in, whether the era is the
            stateless one (where an absent ``ttlMs`` means stale at once).

    Raises:
        ProtocolError: a page is malformed (see the module docstring).
        JsonRpcError: as the requests.
    """
    key, identity = LISTS[method]
    items: List[Dict[str, Any]] = []
    expires_at: Optional[float] = None
    smallest: Optional[float] = None
    cursor: Optional[str] = None
    seen: Set[str] = set()
    for number in range(1, MAX_PAGES + 1):
        page = request(method, {"cursor": cursor} if cursor is not None else None, deadline)
        where = _Where(server, method, number)
        items.extend(_items(page, key, identity, where))
        ttl = page_ttl_ms(page, stateless=stateless())
        if ttl is not None:
            ends = time.monotonic() + ttl / 1000.0
            smallest = ttl if smallest is None else min(smallest, ttl)
            expires_at = ends if expires_at is None else min(expires_at, ends)
        cursor = _next_cursor(page, where)
        if not cursor:
            break
        if cursor in seen:
            logger.warning("%s: %s: the server repeated cursor %r; stopping", server, method, cursor)
            break
        seen.add(cursor)
    return Listing(items, smallest, expires_at)


class _Where:
    """Which page of which list of which server: for the error that says what is wrong with it."""

    __slots__ = ("method", "page", "server")

    def __init__(self, server: str, method: str, page: int) -> None:
        self.server = server
        self.method = method
        self.page = page

    def error(self, field: str, problem: str) -> ProtocolError:
        data = {"server": self.server, "method": self.method, "page": self.page, "field": field}
        return ProtocolError(f"{self.server}: {self.method} page {self.page}: {field!r} {problem}", data)


def _items(page: Any, key: str, identity: str, where: _Where) -> List[Dict[str, Any]]:
    if not isinstance(page, dict):
        raise where.error("result", f"is {_kind(page)}, not an object")
    values = page.get(key)
    if values is None:
        return []
    if not isinstance(values, list):
        raise where.error(key, f"is {_kind(values)}, not a list")
    for index, item in enumerate(values):
        if not isinstance(item, dict):
            raise where.error(f"{key}[{index}]", f"is {_kind(item)}, not an object")
        name = item.get(identity)
        if not isinstance(name, str):
            problem = "is missing" if name is None else f"is {_kind(name)}, not a string"
            raise where.error(f"{key}[{index}].{identity}", problem)
    return values


def _next_cursor(page: Dict[str, Any], where: _Where) -> Optional[str]:
    cursor = page.get("nextCursor")
    if cursor is None or isinstance(cursor, str):
        return cursor
    raise where.error("nextCursor", f"is {_kind(cursor)}, not a string")


def _kind(value: Any) -> str:
    """What a JSON value is, in a message: ``an object``, ``the number 5``, ``a list``..."""
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (int, float)):
        return f"the number {value!r}"
    if isinstance(value, str):
        return "a string"
    return type(value).__name__


__all__ = ["LISTS", "MAX_PAGES", "Listing", "Request", "fetch_list"]
