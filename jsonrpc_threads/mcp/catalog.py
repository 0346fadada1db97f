"""Lists and resource updates, two parts of McpClient that own their state.

Theory of operation.  ``McpClient`` is a facade: each of its calls makes
its deadline as it enters, holds a lease on the session while it runs
(``leases``), and hands the work to a part.  Two parts live here, each
given, once, what it needs; each reaches nothing else:

- ``Lists`` follows a list (``tools/list``, ``resources/list``, ...)
  through every page within one deadline (``listing``), learns the tools of
  the stateless era (their ``x-mcp-header`` annotations), and holds the
  cached pages of the list until the smallest ``ttlMs`` they gave;
- ``ResourceUpdates`` owns the listen filter (which list-changed callbacks
  were given, which resources are subscribed to) and the
  ``subscriptions/listen`` stream that carries them in the stateless era
  (``subscriptions``); in the session era (un)subscribing is one request.

Thread-safety: every method may be called from any thread;
``ResourceUpdates.settled`` runs on the handshake's thread.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any, Dict, List, Optional, cast

from ..deadlines.flight import Budget
from ..deadlines.timeouts import Deadline
from . import protocol
from .cache import ResultCache
from .connection import McpConnection
from .handshake import LISTEN_OPEN_WAIT_S
from .listing import LISTS, MAX_PAGES, Listing, fetch_list
from .subscriptions import ListenFilter, Subscriptions
from .types import Tool

logger = logging.getLogger(__name__)


class Lists:
    """Whole lists of one server, every page within one deadline, cached while fresh.  Thread-safe."""

    def __init__(self, connection: McpConnection, cache: Optional[ResultCache]) -> None:
        self._connection = connection
        self._cache = cache

    def fetch(self, method: str, deadline: Deadline) -> Listing:
        """Every page of ``method``'s list within ``deadline``; the cached pages of it expire together.

        Raises:
            ProtocolError: a malformed page (it names the server, the page and the field).
            RequestTimeout, JsonRpcError: as any request.
        """
        connection = self._connection

        def stateless() -> bool:
            return connection.handshake.era == protocol.MODE_STATELESS

        listing = fetch_list(connection.request, method, deadline, server=connection.label, stateless=stateless)
        if method == "tools/list" and stateless():
            tools = connection.stateless.learn_tools(cast(List[Tool], listing.items))
            listing = replace(listing, items=cast(List[Dict[str, Any]], tools))
        fresh_for = listing.fresh_for()
        if self._cache is not None and fresh_for is not None:
            self._cache.hold_list(method, fresh_for)
        return listing


class ResourceUpdates:
    """What the server's own notifications should carry, and the stream that carries them.  Thread-safe.

    Args:
        connection: the session's connection.
        listen_filter: the list-changed callbacks given, and the resources subscribed to.
        listen: whether to listen at all (``McpClient``'s ``listen``).
    """

    def __init__(self, connection: McpConnection, listen_filter: ListenFilter, listen: bool) -> None:
        self._connection = connection
        self._filter = listen_filter
        self._listen = listen
        self._subscriptions = Subscriptions(connection.open_listen, connection.cancel, connection.label)
        connection.add_hook(self._subscriptions.register)

    def subscribe(self, uri: str, deadline: Deadline) -> None:
        """``resources/subscribe`` (session era), or ``uri`` added to the listen filter (stateless era)."""
        self._change("resources/subscribe", uri, deadline, add=True)

    def unsubscribe(self, uri: str, deadline: Deadline) -> None:
        """``resources/unsubscribe`` (session era), or ``uri`` taken from the listen filter (stateless era)."""
        self._change("resources/unsubscribe", uri, deadline, add=False)

    def settled(self, budget: Budget) -> None:
        """The stateless era was settled (on the handshake's thread): listen for the callbacks given."""
        filters = self._filter.filters()
        if self._listen and filters:
            left = budget.remaining()
            wait = LISTEN_OPEN_WAIT_S if left is None else min(left, LISTEN_OPEN_WAIT_S)
            self._subscriptions.listen(filters, wait=wait)

    def is_current(self, subscription_id: Any) -> bool:
        """Whether a notification's subscription id is the listen stream open now."""
        return self._subscriptions.is_current(subscription_id)

    def close(self) -> None:
        """Withdraw the listen stream.  Idempotent."""
        self._subscriptions.close()

    def _change(self, method: str, uri: str, deadline: Deadline, *, add: bool) -> None:
        handshake = self._connection.handshake
        handshake.settle(deadline)
        if handshake.era != protocol.MODE_STATELESS:
            self._connection.request(method, {"uri": uri}, deadline)
            return
        if add:
            self._filter.add(uri)
        else:
            self._filter.remove(uri)
        if self._listen:
            self._subscriptions.listen(self._filter.filters(), wait=deadline.remaining())


__all__ = ["LISTS", "MAX_PAGES", "Listing", "Lists", "ResourceUpdates"]
