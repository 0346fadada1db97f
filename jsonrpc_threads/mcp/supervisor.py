"""One configured MCP server's lifecycle, for the tool registry: its starts, its calls, and the end of its sessions.

Theory of operation.  A ``ServerSupervisor`` owns at most one
``McpClient`` session for its server.  What it
knows and every transition (idle, starting, running, restarting, failed) is
its state machine (``server_state``), which decides under its lock and
returns what to do; the supervisor does it with no lock held.  Its timers
(the restart's backoff, the idle and health checks) are ``session_timers``,
its tool list, kept while the server restarts or idles, ``tool_cache``.

A start is a single flight: it runs on the registry's background workers
(``supervision.start_session``, bounded by ``startup_timeout``) and is a
``Future`` every caller waits on, each no longer than its own deadline (the
``Deadline`` its public call made): a call
made while the server starts or restarts either gets the session in time or
fails with a clear ``ServerUnavailable`` (at
once, when the restart is not due before its deadline), and the start goes on
for the others.

The end of a session is seen at once: a close listener, attached to every
JSON-RPC client the session makes (a fallback to the legacy transport
included), runs on the thread that saw the end, records it and schedules the
restart, and hands the reaping of the old process to a background worker.
Calls go straight to the session: pipelined, never serialized behind a lock,
each holding a lease on it (``leases``), so ``idle_timeout`` never closes
a session in use.
"""

from __future__ import annotations

import copy
import functools
import logging
from concurrent.futures import Future
from typing import Any, Callable, Dict, List, Mapping, Optional, cast

from .._deadlines import Deadline
from .._flight import as_call_timeout, wait_for_outcome
from ..errors import ConfigError, JsonRpcError, RequestTimeout, TransportClosed
from ..transports.config import ServerConfig
from .errors import ServerUnavailable, UnknownTool
from .progress import ProgressCallback
from .server_state import FAILED, IDLE, RESTARTING, RUNNING, STARTING, STATES, ServerState, Stop
from .session import McpClient
from .session_timers import SessionTimers
from .supervision import (
    CLOSED,
    Settings,
    TransportFactory,
    describe_start_failure,
    session_hook,
    start_session,
    stop_error,
)
from .tool_cache import ToolCache
from .types import CallToolResult, Tool

logger = logging.getLogger(__name__)


class ServerSupervisor:
    """The session, the state and the tool list of one configured server.  Thread-safe.

    Args:
        name: the server's name in the configuration.
        config: its parsed entry, or ``None`` when the entry is unusable.
        config_error: why the entry is unusable, or ``None``.
        settings: the registry's timeouts, policies and background workers.
        transport_factory: builds the server's transport.
        on_listed: called (no argument, no lock held) whenever the tool list
            changed: fetched, or emptied because the server failed.
        on_tools_changed: ``callback(name)`` when the server says its tools
            changed (on a worker thread of its session).

    Attributes:
        cache: the server's tool list (``ToolCache``).
    """

    def __init__(
        self,
        name: str,
        config: Optional[ServerConfig],
        config_error: Optional[ConfigError],
        settings: Settings,
        *,
        transport_factory: TransportFactory,
        on_listed: Callable[[], None],
        on_tools_changed: Optional[Callable[[str], None]] = None,
    ) -> None:
        self.name = name
        self.config = config
        self.config_error = config_error
        self.cache = ToolCache()
        self._settings = settings
        self._transport_factory = transport_factory
        self._on_listed = on_listed
        self._on_tools_changed = on_tools_changed
        self._state = ServerState(name, settings)
        self._timers = SessionTimers(
            name, settings, is_current=self._state.is_current, on_idle=self._idle, on_unhealthy=self._stopped
        )
        self._hook = session_hook(name, config, settings, self._stopped)

    # -- what it reports ----------------------------------------------------------------------

    def call_timeout(self) -> Optional[float]:
        """A call's default timeout on this server: its entry's ``timeout``, else the registry's ``default_timeout``."""
        config = self.config
        if config is not None and config.timeout is not None:
            return config.timeout
        return self._settings.default_timeout

    def failure(self) -> Optional[JsonRpcError]:
        """Why the server is unavailable: its ``ConfigError``, or the ``ServerUnavailable`` it failed with."""
        if self.config_error is not None:
            return self.config_error
        return self._state.failure()

    def started(self) -> bool:
        """True while the server has a running session."""
        self._notice_stop()
        return self._state.running() is not None

    def status(self) -> Dict[str, Any]:
        """``{"state", "pid", "restarts", "last_error"}`` (see ``server_state`` for the states)."""
        if self.config_error is not None:
            return {"state": FAILED, "pid": None, "restarts": 0, "last_error": self.config_error.message}
        self._notice_stop()
        return self._state.status()

    def stats(self) -> Dict[str, int]:
        """The counters of every session of this server (``McpClient.stats()``), and its restarts."""
        return self._state.stats()

    def needs_work(self) -> bool:
        """True when ``refresh_tools`` would start the server or fetch its tools."""
        if self.config is None:
            return False
        self._notice_stop()
        work = self._state.for_work()
        if work is None:
            return False  # closed
        state, may_retry = work
        if state == FAILED:
            return may_retry
        if state == RUNNING:
            return self.cache.needs_fetch()
        return state == STARTING or not self.cache.listed  # idle or restarting: the tools known are kept

    # -- the session -------------------------------------------------------------------------

    def session(self, deadline: Deadline) -> McpClient:
        """The running session: started now (once, however many threads ask) if needed.

        Args:
            deadline: the calling call's; the wait for a start or restart ends
                there (the start itself goes on, bounded by ``startup_timeout``).

        Raises:
            ConfigError: the entry is unusable.
            ServerUnavailable: the server failed (now, or recently), or is
                starting or restarting and was not up by ``deadline``.
            TransportClosed: the registry is closed.
        """
        return self._acquire(deadline, lease=False)

    def _acquire(self, deadline: Deadline, *, lease: bool) -> McpClient:
        if self._state.closed:
            raise TransportClosed(CLOSED)
        if self.config is None:
            assert self.config_error is not None
            raise copy.copy(self.config_error)
        client = self._state.ready(lease=lease)
        if client is not None:
            return client
        while True:
            need = self._state.need(deadline.at, lease=lease)
            if need.client is not None:
                return need.client
            if need.stopped is not None:
                self._stopped(need.stopped, None)
                continue
            future = need.start or need.wait
            assert future is not None
            if need.start is not None and not self._settings.background.submit(self._start, future):
                self._start_failed(future, TransportClosed(CLOSED))
            self._wait(future, deadline)

    def _wait(self, future: Future[Any], deadline: Deadline, what: str = "") -> None:
        """Wait for a start's (or a shared fetch's) outcome until ``deadline``; raise its error.

        On time-out: ServerUnavailable for a start; RequestTimeout naming ``what`` else.
        """

        def timed_out() -> JsonRpcError:
            if what:
                return RequestTimeout("tools/list", None, deadline.timeout, f"{what} was still running")
            return self._state.waited_too_long(deadline.timeout)

        wait_for_outcome(future, deadline, timed_out)

    # -- the tool list and calls -------------------------------------------------------------

    def refresh_tools(self, deadline: Deadline, *, refresh: bool = False) -> None:
        """Start the server if needed, and fetch its tools when stale (or ``refresh``), within ``deadline``.

        A list is stale when the server said it changed, or when its
        ``ttlMs`` passed.  A fetch of a stale list is shared by the calls
        that find it under way, each waiting no longer than its own deadline;
        ``refresh`` (a name not found in the list) always asks the server anew.

        Raises:
            ConfigError, ServerUnavailable, TransportClosed: as ``session``.
            RequestTimeout: ``deadline`` passed first.
            JsonRpcError: ``tools/list`` failed.
        """
        listings = self.cache.listings
        client = self._acquire(deadline, lease=True)
        try:
            if self.cache.listings != listings:  # just started: the list is as fresh as it gets
                if not self.cache.needs_fetch(expired=False):
                    return
            elif not (refresh or self.cache.needs_fetch()):
                return
            if refresh:
                self._fetch_tools(client, deadline)
                return
            flight, mine = self.cache.join_fetch()
            if not mine:
                self._wait(flight, deadline, "another call's fetch of the tool list")
                return
            try:
                self._fetch_tools(client, deadline)
            except BaseException as exc:
                self.cache.end_fetch(flight, exc)
                raise
            self.cache.end_fetch(flight)
        finally:
            client.leases.release()

    def _fetch_tools(self, client: McpClient, deadline: Deadline) -> None:
        changes = self.cache.changes()
        try:
            listing = client.listing("tools/list", timeout=deadline.remaining())
        except RequestTimeout as exc:
            raise as_call_timeout(exc, deadline) from None
        if self._state.is_current(client):
            self.cache.store(cast(List[Tool], listing.items), changes, listing.expires_at)
            self._on_listed()

    def ensure_tool(self, tool: str, deadline: Deadline) -> None:
        """Start the server if needed and check that it offers ``tool`` (fetching its list again once).

        Raises:
            UnknownTool: it does not.
            ConfigError, ServerUnavailable, TransportClosed: as ``session``.
        """
        if self.cache.offers(tool):
            return
        self.refresh_tools(deadline)
        if self.cache.offers(tool):
            return
        self.refresh_tools(deadline, refresh=True)
        if not self.cache.offers(tool):
            raise UnknownTool(tool, self.name)

    def call_tool(
        self,
        tool: str,
        arguments: Optional[Mapping[str, Any]],
        deadline: Deadline,
        on_progress: Optional[ProgressCallback] = None,
    ) -> CallToolResult:
        """Call ``tool`` on the running session (started, or waited for, within ``deadline``).

        With tracing on, the call is an OpenTelemetry span whose
        ``traceparent`` travels in the request's ``_meta``.

        Raises:
            As ``session``, then as ``McpClient.call_tool``.
        """
        tracing = self._settings.tracing
        if tracing is None:
            return self._call_tool(tool, arguments, deadline, on_progress, None)
        call = functools.partial(self._call_tool, tool, arguments, deadline, on_progress)
        config = self.config
        return cast(CallToolResult, tracing.traced(self.name, tool, config.transport if config else "", call))

    def _call_tool(
        self,
        tool: str,
        arguments: Optional[Mapping[str, Any]],
        deadline: Deadline,
        on_progress: Optional[ProgressCallback],
        meta: Optional[Dict[str, str]],
    ) -> CallToolResult:
        client = self._acquire(deadline, lease=True)
        try:
            return client.call_tool(tool, arguments, timeout=deadline.remaining(), on_progress=on_progress, meta=meta)
        except RequestTimeout as exc:  # it had what was left of the call's timeout: name the whole
            raise as_call_timeout(exc, deadline) from None
        finally:
            client.leases.release()

    # -- starting (on a background worker) --------------------------------------------------

    def _start(self, future: Future[McpClient]) -> None:
        config = self.config
        assert config is not None
        try:
            client, listing = start_session(
                config,
                self._settings,
                self._transport_factory,
                call_timeout=self.call_timeout(),
                on_tools_changed=self._tools_changed,
                adopt=functools.partial(self._state.adopt, future),
                hook=self._hook,
            )
        except BaseException as exc:
            self._start_failed(future, exc)
            if not isinstance(exc, Exception):
                raise
            return
        if not self._state.start_succeeded(future, client):
            client.close()
            if not future.done():
                future.set_exception(TransportClosed(CLOSED))
            return
        self.cache.store(cast(List[Tool], listing.items), self.cache.changes(), listing.expires_at)
        self._timers.arm(client)
        self._on_listed()
        logger.info("MCP server %r started with %d tools", self.name, len(listing.items))
        future.set_result(client)

    def _start_failed(self, future: Future[McpClient], exc: BaseException) -> None:
        """A start failed: the server is failed, or (a restart, within the bound) tried again after a backoff."""
        reason = describe_start_failure(exc)
        stop = self._state.start_failed(future, exc, reason)
        if stop.restart is not None:
            assert stop.delay is not None
            self._timers.later(stop.delay, self._start, stop.restart)
            logger.warning("MCP server %r failed to restart (%s); trying again in %.3gs", self.name, reason, stop.delay)
            return
        if stop.failed is None:
            return  # superseded
        if isinstance(stop.failed, ServerUnavailable):
            self.cache.clear()
            logger.warning("MCP %s", stop.failed.message)
            if isinstance(exc, TransportClosed) and exc.stderr_tail:
                logger.warning("server %r: stderr ends with:\n%s", self.name, exc.stderr_tail)
        self._on_listed()
        if not future.done():
            future.set_exception(stop.failed)

    # -- the end of a session -----------------------------------------------------------------

    def _notice_stop(self) -> None:
        """A running session whose client is closed stopped: handle it now (the listener may be late)."""
        client = self._state.running()
        if client is not None and client.rpc.closed:
            self._stopped(client, None)

    def _stopped(self, client: McpClient, error: Optional[BaseException]) -> None:
        """The session of ``client`` ended (a close listener, a failed health ping, or noticed on use).

        Runs on any thread, a reader thread included: records, schedules, and
        hands the reaping of the old process to a background worker.
        """
        if error is None:
            error = stop_error(client)
        reason = describe_start_failure(error)
        stop: Optional[Stop] = self._state.stopped(client, error, reason)
        if stop is None:
            return
        self._timers.cancel_all()
        # Off this thread: reap the old process, and only then (at the earliest) start the new one.
        self._settings.background.submit(self._reap_then_restart, client, stop.restart)
        if stop.failed is not None:
            self.cache.clear()
            logger.warning("MCP %s", stop.failed.message)
            self._on_listed()
        else:
            logger.warning("MCP server %r stopped (%s); restarting in %.3gs", self.name, reason, stop.delay)

    def _reap_then_restart(self, client: McpClient, future: Optional[Future[McpClient]]) -> None:
        """On a background worker: close the stopped session, then schedule the restart at its due time."""
        client.close()
        delay = None if future is None else self._state.restart_due(future)
        if future is not None and delay is not None:
            self._timers.later(delay, self._start, future)

    def _idle(self, client: McpClient) -> None:
        """On a background worker: the session had no lease for ``idle_timeout``: close it (if still so)."""
        if not self._state.went_idle(client):
            if self._state.is_current(client):
                self._timers.watch_idle(client)  # a lease came meanwhile
            return
        self._timers.cancel_all()
        logger.info(
            "MCP server %r unused for %.3gs: closed (started again on its next use)",
            self.name,
            self._settings.idle_timeout,
        )
        client.close()

    def _tools_changed(self) -> None:
        # Runs on a worker thread of the server's session.
        self.cache.changed()
        logger.info("server %r: tool list changed", self.name)
        if self._on_tools_changed is not None:
            self._on_tools_changed(self.name)

    # -- the end -----------------------------------------------------------------------------

    def stop(self) -> List[McpClient]:
        """Refuse new starts and calls; fail the waiters; return the sessions to close (none is closed here)."""
        future, clients = self._state.stop()
        self._timers.cancel_all()
        if future is not None and not future.done():
            future.set_exception(TransportClosed(CLOSED))
        return clients

    def after_fork(self) -> None:
        """In a process forked since the registry was made: forget the parent's session, start afresh on use.

        Takes no old lock (a thread of the parent may have held it): the
        caller serializes resets.  The parent's session is let go of with
        ``close()``, which in a forked process only closes this process's
        copies of its pipes and sockets; the tool list is kept.
        """
        inherited = self._state.after_fork()
        self._timers.forget_all()
        for client in inherited:
            client.close()

    def __repr__(self) -> str:
        return f"<ServerSupervisor {self.name!r} {self._state.state}>"


__all__ = [
    "FAILED",
    "IDLE",
    "RESTARTING",
    "RUNNING",
    "STARTING",
    "STATES",
    "ServerSupervisor",
    "Settings",
    "describe_start_failure",
]
