"""The timers of one supervised server: the restart's backoff, and the idle and health checks of its running session.

Theory of operation.  Every timer lives on the process-wide timer thread and,
when due, only hands its work to the registry's background workers
(``call_later``): nothing else
runs on the timer thread.

- The idle check (``idle_timeout``) reads the session's leases
  (``leases``): a session on which a call runs is in use, however long
  the call takes; one without a lease for ``idle_timeout`` seconds is handed
  to ``on_idle``, which closes it only if it is still unused then.  The check
  comes back when the last lease may reach ``idle_timeout``.
- The health check (``health_interval``) pings the running session through
  its connection (a ping holds no lease: it is not a use) within
  ``health_timeout``; a session that does not answer, or whose transport is
  gone, is handed to ``on_unhealthy``.

``SessionTimers`` keeps the handles, so that the supervisor cancels
them all at once when the session ends (stop, idle close, restart).

Thread-safety: every method may be called from any thread (one lock, held
for the list of handles only).
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Callable, List

from ..deadlines.timeouts import Deadline
from ..errors import HttpConnectionError, JsonRpcError, RequestTimeout, TransportClosed
from ..runtime.scheduler import TimerHandle
from .registry_settings import Settings
from .session import McpClient

logger = logging.getLogger(__name__)


class SessionTimers:
    """The timers of one server.

    Args:
        name: the server's name (for the log).
        settings: the registry's (``idle_timeout``, ``health_interval``,
            ``health_timeout``, ``background``; read when a timer is armed).
        is_current: True while ``client`` is the server's running session.
        on_idle: ``on_idle(client)``: the session had no lease for ``idle_timeout`` seconds.
        on_unhealthy: ``on_unhealthy(client, error)``: it failed its health ping.
    """

    def __init__(
        self,
        name: str,
        settings: Settings,
        *,
        is_current: Callable[[McpClient], bool],
        on_idle: Callable[[McpClient], None],
        on_unhealthy: Callable[[McpClient, TransportClosed], None],
    ) -> None:
        self._name = name
        self._settings = settings
        self._is_current = is_current
        self._on_idle = on_idle
        self._on_unhealthy = on_unhealthy
        # _lock guards _handles.
        self._lock = threading.Lock()
        self._handles: List[TimerHandle] = []

    def later(self, delay: float, fn: Callable[..., Any], *args: Any) -> None:
        """Run ``fn(*args)`` on a background worker after ``delay`` seconds (cancelled by ``cancel_all``)."""
        handle = self._settings.background.call_later(delay, fn, *args)
        with self._lock:
            self._handles = [timer for timer in self._handles if timer.active]
            self._handles.append(handle)

    def arm(self, client: McpClient) -> None:
        """The session of ``client`` starts running: arm its idle and health checks."""
        self.watch_idle(client)
        if self._settings.health_interval is not None:
            self.later(self._settings.health_interval, self._health_check, client)

    def watch_idle(self, client: McpClient) -> None:
        """Check ``idle_timeout`` seconds from now whether the session is still without a lease."""
        if self._settings.idle_timeout is not None:
            self.later(self._settings.idle_timeout, self._idle_check, client)

    def cancel_all(self) -> None:
        """Cancel every timer (the session ended, or the server is stopped)."""
        with self._lock:
            handles, self._handles = self._handles, []
        for handle in handles:
            handle.cancel()

    def forget_all(self) -> None:
        """Drop the handles without cancelling them (a forked process: the parent's timer thread did not come along)."""
        self._lock = threading.Lock()
        self._handles = []

    def _idle_check(self, client: McpClient) -> None:
        """On a background worker: hand over a session unused for ``idle_timeout``, else look again later."""
        idle_timeout = self._settings.idle_timeout
        if idle_timeout is None or not self._is_current(client):
            return
        idle = client.leases.idle_for()
        if idle is not None and idle >= idle_timeout:
            self._on_idle(client)
            return
        self.later(idle_timeout - (idle or 0.0), self._idle_check, client)

    def _health_check(self, client: McpClient) -> None:
        """On a background worker: ping the running session; one that does not answer is handed over."""
        settings = self._settings
        if not self._is_current(client):
            return
        try:
            client.connection.ping(Deadline.after(settings.health_timeout))
        except (RequestTimeout, TransportClosed, HttpConnectionError) as exc:
            logger.warning("MCP server %r failed its health ping: %s", self._name, exc.message)
            stop = exc if isinstance(exc, TransportClosed) else None
            self._on_unhealthy(client, stop or TransportClosed(f"no answer to the health ping: {exc.message}"))
            return
        except JsonRpcError as exc:  # it answered (with an error): it is alive
            logger.debug("server %r answered the health ping with %s", self._name, exc)
        interval = settings.health_interval
        if interval is not None and self._is_current(client):
            self.later(interval, self._health_check, client)


__all__ = ["SessionTimers"]
