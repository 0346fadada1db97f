"""The counters of one supervised server: its tool calls, the requests of all its sessions, named for what they count.

Theory of operation.  ``ServerCounters`` counts the tool calls a registry
sends to one server (``tool_calls``; those that failed,
``tool_calls_failed``; those that outlasted their deadline and were
cancelled on the server, ``tool_calls_cancelled``), and keeps the request
counters (``McpClient.stats()``) of the server's sessions that ended, so
that ``ServerCounters.snapshot`` adds the live sessions' to them and
reports every protocol request under a name that says so (``requests``,
``request_errors``, ...), each also under its old name (``calls``,
``errors``, ...), and the restarts.

Thread-safety: every method may be called from any thread (one lock, held
for a few additions).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Dict, Iterable

from ..observe import STAT_KEYS, add_stats

if TYPE_CHECKING:
    from .session import McpClient

#: The counters of the tool calls a registry made on a server.
TOOL_CALL_KEYS = ("tool_calls", "tool_calls_failed", "tool_calls_cancelled")
#: The request counters of ``McpClient.stats()`` (the old names) -> the names that say what they count.
REQUEST_KEYS = {
    "calls": "requests",
    "errors": "request_errors",
    "timeouts": "request_timeouts",
    "cancels": "requests_withdrawn",
    "pending": "requests_pending",
}
#: Every key of a server's ``stats()``, in its order.
SERVER_STAT_KEYS = (*TOOL_CALL_KEYS, *REQUEST_KEYS.values(), "restarts", *REQUEST_KEYS)


class ServerCounters:
    """The counters of one server.  Thread-safe."""

    def __init__(self) -> None:
        # _lock guards _tool_calls and _retired.
        self._lock = threading.Lock()
        self._tool_calls = dict.fromkeys(TOOL_CALL_KEYS, 0)
        self._retired: Dict[str, int] = dict.fromkeys(STAT_KEYS, 0)  # the requests of sessions that ended

    def count(self, key: str) -> None:
        """One more of ``key`` (one of ``TOOL_CALL_KEYS``)."""
        with self._lock:
            self._tool_calls[key] += 1

    def retire(self, client: McpClient) -> None:
        """The session of ``client`` ended: keep its request counters (nothing of it is pending any more)."""
        stats = client.stats()
        stats["pending"] = 0
        with self._lock:
            add_stats(self._retired, stats)

    def snapshot(self, live: Iterable[McpClient], restarts: int) -> Dict[str, int]:
        """Every counter (``SERVER_STAT_KEYS``): of the sessions that ended and the ``live`` ones; ``restarts``."""
        with self._lock:
            requests, stats = dict(self._retired), dict(self._tool_calls)
        for client in live:
            add_stats(requests, client.stats())
        stats.update((name, requests[key]) for key, name in REQUEST_KEYS.items())
        stats["restarts"] = restarts
        stats.update((key, requests[key]) for key in REQUEST_KEYS)
        return stats


__all__ = ["REQUEST_KEYS", "SERVER_STAT_KEYS", "TOOL_CALL_KEYS", "ServerCounters"]
