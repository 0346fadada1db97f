"""``subscriptions/listen`` (MCP 2026-07-28): the one long-lived request that carries change notifications.

Theory of operation.  The stateless era has no GET stream and no
``resources/subscribe``: a client that wants list-changed and
resource-updated notifications sends ``subscriptions/listen`` with a filter
(``toolsListChanged``, ``promptsListChanged``, ``resourcesListChanged``,
``resourceSubscriptions``).  The request stays pending (no deadline); the
server first sends ``notifications/subscriptions/acknowledged`` (with the
subset of the filter it honours), then the notifications, each tagged with
``_meta["io.modelcontextprotocol/subscriptionId"]``, the listen request's id.
They reach the client's ordinary notification handlers.  The server ends a
subscription gracefully by answering the request.

``Subscriptions`` keeps one listen request for the client.  Changing the
filter (a new resource subscription) cancels the old request (over HTTP that
closes its stream; over stdio it sends ``notifications/cancelled``) and opens
a new one.  A listen request that fails without the client asking (the
stream broke) is opened again, ``MAX_REOPENS`` times in a row at most; a
graceful end, a refusal (a server without subscriptions) or the client's
close ends it for good.

Thread-safety: every method may be called from any thread; the reopening
runs on the client's callback workers (a done-callback of the listen future),
never on a reader or timer thread, and never runs user code.
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import CancelledError, Future
from typing import Any, Callable, Dict, List, Optional

from ..errors import RemoteError, TransportClosed
from .protocol import META_SUBSCRIPTION_ID

logger = logging.getLogger(__name__)

#: Listen requests opened again in a row after they failed (before one is acknowledged).
MAX_REOPENS = 3
#: How long opening a subscription waits for the server's acknowledgment by default.
ACK_WAIT_S = 2.0

Opener = Callable[[Dict[str, Any]], "Future[Any]"]
Canceller = Callable[["Future[Any]", str], bool]


class _Listen:
    __slots__ = ("acked", "filters", "future", "honoured", "settled")

    def __init__(self, future: Future[Any], filters: Dict[str, Any]) -> None:
        self.future = future
        self.filters = filters
        self.acked = threading.Event()
        self.settled = threading.Event()  # acknowledged, or the request is over (refused, ended, broken)
        self.honoured: Optional[Dict[str, Any]] = None


class Subscriptions:
    """The client's ``subscriptions/listen`` request.

    Args:
        open_listen: sends ``subscriptions/listen`` with the given params (no
            deadline) and returns its future (with a ``request_id``).
        cancel: withdraws such a future (``JsonRpcClient.cancel``).
        label: for log lines.
    """

    def __init__(self, open_listen: Opener, cancel: Canceller, label: str) -> None:
        self._open = open_listen
        self._cancel = cancel
        self._label = label
        # _lock guards _current, _closed and _reopens.
        self._lock = threading.Lock()
        self._current: Optional[_Listen] = None
        self._closed = False
        self._reopens = 0

    @property
    def filters(self) -> Dict[str, Any]:
        """The filter of the current subscription (``{}`` without one)."""
        current = self._current
        return dict(current.filters) if current is not None else {}

    @property
    def honoured(self) -> Optional[Dict[str, Any]]:
        """What the server acknowledged it will send, or ``None`` before an acknowledgment."""
        current = self._current
        return dict(current.honoured) if current is not None and current.honoured is not None else None

    def listen(self, filters: Dict[str, Any], *, wait: Optional[float] = ACK_WAIT_S) -> bool:
        """Subscribe with ``filters`` (replacing the current subscription); wait for the acknowledgment.

        An empty filter ends the subscription and opens none.

        Returns:
            True when the server acknowledged within ``wait`` (False also when
            it refused: a server without ``subscriptions/listen``; a refusal,
            or the request's end, returns at once rather than at ``wait``).
        """
        with self._lock:
            if self._closed:
                return False
            old = self._current
            self._current = None
            self._reopens = 0
        if old is not None:
            self._cancel(old.future, "Subscription replaced")
        if not any(filters.values()):
            return False
        listen = self._start(filters)
        if listen is None:
            return False
        if wait is not None:
            listen.settled.wait(wait)  # a refusal ends the wait at once, as an acknowledgment does
        return listen.acked.is_set()

    def is_current(self, subscription_id: Any) -> bool:
        """True when ``subscription_id`` is the current subscription's (the listen request's id)."""
        current = self._current
        return current is not None and getattr(current.future, "request_id", None) == subscription_id

    def acknowledged(self, params: Any) -> None:
        """``notifications/subscriptions/acknowledged``: the server took the subscription (a handler)."""
        if not isinstance(params, dict):
            return
        meta = params.get("_meta")
        subscription = meta.get(META_SUBSCRIPTION_ID) if isinstance(meta, dict) else None
        with self._lock:
            current = self._current
            if current is None or getattr(current.future, "request_id", None) != subscription:
                return
            self._reopens = 0
        honoured = params.get("notifications")
        current.honoured = dict(honoured) if isinstance(honoured, dict) else {}
        current.acked.set()
        current.settled.set()
        logger.debug("%s: subscription %r acknowledged: %r", self._label, subscription, current.honoured)

    def register(self, rpc: Any) -> None:
        """Route the ``notifications/subscriptions/acknowledged`` of ``rpc`` (a ``JsonRpcClient``) here."""
        rpc.on_notification("notifications/subscriptions/acknowledged", self.acknowledged)

    def close(self) -> None:
        """End the subscription for good (the client is closing).  Idempotent."""
        with self._lock:
            self._closed = True
            current, self._current = self._current, None
        if current is not None and not current.future.done():
            self._cancel(current.future, "Client closing")

    # -- internals ----------------------------------------------------------------------

    def _start(self, filters: Dict[str, Any]) -> Optional[_Listen]:
        try:
            future = self._open({"notifications": dict(filters)})
        except TransportClosed:
            return None
        listen = _Listen(future, dict(filters))
        with self._lock:
            if self._closed:
                replaced = True
            else:
                replaced = False
                self._current = listen
        if replaced:
            self._cancel(future, "Client closing")
            return None
        future.add_done_callback(lambda done: self._ended(listen, done))
        return listen

    def _ended(self, listen: _Listen, future: Future[Any]) -> None:
        """The listen request is over (a done-callback): reopen it if it broke."""
        listen.settled.set()
        with self._lock:
            if self._current is not listen or self._closed:
                return
            try:
                future.result()
            except CancelledError:
                return
            except TransportClosed:
                self._current = None
                return
            except RemoteError as exc:  # refused: a server without subscriptions/listen
                logger.debug("%s: subscriptions/listen refused: %s", self._label, exc)
                self._current = None
                return
            except Exception as exc:
                if self._reopens >= MAX_REOPENS:
                    logger.warning(
                        "%s: subscriptions/listen given up after %d attempts: %s", self._label, self._reopens, exc
                    )
                    self._current = None
                    return
                self._reopens += 1
                logger.debug("%s: subscriptions/listen ended (%s); opening it again", self._label, exc)
            else:
                logger.debug("%s: the server ended the subscription", self._label)
                self._current = None
                return
            self._current = None
        self._start(listen.filters)


class ListenFilter:
    """What the client's ``subscriptions/listen`` asks for: the list-changed callbacks given, and the resources.

    Args:
        tools, resources, prompts: whether a callback for that list's changes was given.

    Thread-safety: every method may be called from any thread (one lock).
    """

    def __init__(self, *, tools: bool, resources: bool, prompts: bool) -> None:
        self._lists = {"toolsListChanged": tools, "promptsListChanged": prompts, "resourcesListChanged": resources}
        # _lock guards _resources.
        self._lock = threading.Lock()
        self._resources: List[str] = []

    def add(self, uri: str) -> None:
        """Ask for ``notifications/resources/updated`` about ``uri`` too."""
        with self._lock:
            if uri not in self._resources:
                self._resources.append(uri)

    def remove(self, uri: str) -> None:
        """No longer ask about ``uri``."""
        with self._lock:
            if uri in self._resources:
                self._resources.remove(uri)

    def filters(self) -> Dict[str, Any]:
        """The ``notifications`` filter of the listen request (empty: nothing to listen for)."""
        filters: Dict[str, Any] = {name: True for name, wanted in self._lists.items() if wanted}
        with self._lock:
            if self._resources:
                filters["resourceSubscriptions"] = list(self._resources)
        return filters


__all__ = ["ACK_WAIT_S", "MAX_REOPENS", "ListenFilter", "Subscriptions"]
