"""Who hears of changes: the sessions of the 2025 era, and the stateless era's ``subscriptions/listen`` requests.

Theory of operation.  A change (the tool, prompt or resource list, or one
resource) is announced to every session (on its stdio output, or its HTTP GET
stream; a resource's update only where it was subscribed to) and to every
``subscriptions/listen`` request that asked for that kind of change, each
notification tagged with the listen request's id
(``io.modelcontextprotocol/subscriptionId``).  A task's change of status (the
tasks extension) goes as ``notifications/tasks`` to the listen requests that
named its id in ``taskIds``.  A listen request holds its
thread (a worker) until the client cancels it or goes away.

Thread-safety: ``Listeners`` guards its table with one lock; notifications go
out after it is released.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Dict, List

from ...errors import InvalidParams
from ..protocol import META_SUBSCRIPTION_ID
from .context import Exchange
from .sessions import Session

__all__ = ["Listeners"]


class _Listener:
    """One ``subscriptions/listen`` request: which notifications it wants, and where they go."""

    def __init__(
        self, subscription_id: Any, wanted: Dict[str, Any], notify: Callable[[str, Dict[str, Any]], None]
    ) -> None:
        self.subscription_id = subscription_id
        self.wanted = wanted
        self.notify = notify


_LISTEN_FILTER = {
    "notifications/tools/list_changed": "toolsListChanged",
    "notifications/prompts/list_changed": "promptsListChanged",
    "notifications/resources/list_changed": "resourcesListChanged",
}


class Listeners:
    """The open ``subscriptions/listen`` requests of one server.  Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # guards _listeners
        self._listeners: List[_Listener] = []

    def listen(self, params: Dict[str, Any], exchange: Exchange) -> Dict[str, Any]:
        """Serve one ``subscriptions/listen``: acknowledge, then pass on what it asked for until it is cancelled.

        Raises:
            InvalidParams: ``notifications`` is not an object.
        """
        wanted = params.get("notifications")
        if wanted is not None and not isinstance(wanted, dict):
            raise InvalidParams("subscriptions/listen: notifications must be an object")
        listener = _Listener(exchange.request_id, dict(wanted or {}), exchange.notify)
        with self._lock:
            self._listeners.append(listener)
        try:
            exchange.notify(  # once listening: what follows the acknowledgement reaches the client
                "notifications/subscriptions/acknowledged",
                {"_meta": {META_SUBSCRIPTION_ID: exchange.request_id}},
            )
            exchange.cancelled.wait()
        finally:
            with self._lock:
                self._listeners.remove(listener)
        return {}

    def broadcast(self, method: str, params: Dict[str, Any], sessions: List[Session]) -> None:
        """Send a change notification to every session and every listener that wants it.

        ``notifications/resources/updated`` goes only to sessions subscribed to its URI.
        """
        for session in sessions:
            if method == "notifications/resources/updated" and not session.subscribed(str(params.get("uri"))):
                continue
            session.announce(method, params)
        with self._lock:
            listeners = list(self._listeners)
        flag = _LISTEN_FILTER.get(method)
        for listener in listeners:
            if method == "notifications/resources/updated":
                uris = listener.wanted.get("resourceSubscriptions")
                if not isinstance(uris, list) or params.get("uri") not in uris:
                    continue
            elif flag is None or not listener.wanted.get(flag):
                continue
            meta = {META_SUBSCRIPTION_ID: listener.subscription_id}
            listener.notify(method, {**params, "_meta": meta})

    def task_changed(self, task: Dict[str, Any]) -> None:
        """Send ``notifications/tasks`` (the task as ``tasks/get`` shows it) to the listeners watching its id."""
        with self._lock:
            listeners = list(self._listeners)
        for listener in listeners:
            watched = listener.wanted.get("taskIds")
            if isinstance(watched, list) and task.get("taskId") in watched:
                meta = {META_SUBSCRIPTION_ID: listener.subscription_id}
                listener.notify("notifications/tasks", {**task, "_meta": meta})
