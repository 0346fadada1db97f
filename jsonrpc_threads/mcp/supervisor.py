"""One configured MCP server for the tool registry: the thin shell that does what its life's state machine decides.

Theory of operation.  A ``ServerSupervisor`` owns at most one running
``McpClient`` session for its server.  Every decision (the state, who
starts, who waits, a restart or a failure, what to close) is its state
machine's (``server_life.ServerLife``: pure, no I/O, no clock of its own),
taken under the supervisor's one lock with the time read once; the
supervisor then does what it returned with no lock held: it runs a start on
the registry's background workers (``session_start.start_session``, bounded
by ``startup_timeout``), waits for one, closes a session, arms a timer
(``session_timers``: the restart's backoff, the idle and health checks).
Its tool list, kept while the server restarts or idles, is ``tool_cache``.

A start is a single flight: one ``Future`` per flight of the machine, that
every caller waits on, each no longer than its own deadline (the
``Deadline`` its public call made): a call made while the server starts or
restarts either gets the session in time or fails with a clear
``ServerUnavailable`` (at once, when the restart is not due before its
deadline), and the start goes on for the others.

The end of a session is seen at once: a close listener, attached to every
JSON-RPC client the session makes (a fallback to the legacy transport
included), runs on the thread that saw the end, records it and schedules the
restart, and hands the reaping of the old process to a background worker.
Calls go straight to the session: pipelined, never serialized behind a lock,
each holding a lease on it (``leases``), so ``idle_timeout`` never closes
a session in use.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import logging
import threading
import time
from concurrent.futures import Future
from typing import Any, Callable, Dict, List, Mapping, Optional, cast

from ..deadlines.flight import as_call_timeout, wait_for_outcome
from ..deadlines.timeouts import Deadline
from ..errors import ConfigError, JsonRpcError, RequestTimeout, TransportClosed
from ..transports.config import ServerConfig
from .errors import ServerUnavailable, UnknownTool
from .progress import ProgressCallback
from .registry_settings import Settings, TransportFactory
from .server_counters import SERVER_STAT_KEYS, ServerCounters
from .server_life import (
    CLOSED,
    CLOSED_STATE,
    FAILED,
    IDLE,
    RESTARTING,
    RUNNING,
    STARTING,
    STATES,
    Refuse,
    ServerLife,
    Start,
    Use,
)
from .session import McpClient
from .session_start import describe_start_failure, session_hook, start_session, stop_error
from .session_timers import SessionTimers
from .tool_cache import ToolCache
from .types import CallToolResult, Tool

logger = logging.getLogger(__name__)


class ServerSupervisor:
    """The session, the state and the tool list of one configured server.  Thread-safe.

    Args:
        name, config, config_error: the server's name, and its parsed entry
            or (``None`` and) why the entry is unusable.
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
        # _lock guards _life and _flights (_acquire reads the running session without it, see there).
        self._lock = threading.Lock()
        self._life: ServerLife[McpClient] = ServerLife(name, settings)
        self._flights: Dict[int, Future[McpClient]] = {}  # what the callers of each flight wait on
        self._counters = ServerCounters()
        self._timers = SessionTimers(
            name, settings, is_current=self._is_current, on_idle=self._idle, on_unhealthy=self._stopped
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
        with self._lock:
            return self._life.failure if self._life.shown == FAILED else None

    def started(self) -> bool:
        """True while the server has a running session."""
        self._notice_stop()
        with self._lock:
            return self._life.running() is not None

    def status(self) -> Dict[str, Any]:
        """``{"state", "pid", "restarts", "last_error"}`` (see ``server_life`` for the states)."""
        if self.config_error is not None:
            return {"state": FAILED, "pid": None, "restarts": 0, "last_error": self.config_error.message}
        self._notice_stop()
        with self._lock:
            state, client, restarts, last_error = self._life.status()
        pid = getattr(client.rpc.transport, "pid", None) if client is not None else None
        pid = pid if isinstance(pid, int) else None
        return {"state": state, "pid": pid, "restarts": restarts, "last_error": last_error}

    def stats(self) -> Dict[str, int]:
        """Its counters (``server_counters``): tool calls, the requests of all its sessions, restarts."""
        with self._lock:
            live, restarts = self._life.live(), self._life.restarts
        return self._counters.snapshot(live, restarts)

    def needs_work(self) -> bool:
        """True when ``refresh_tools`` would start the server or fetch its tools."""
        if self.config is None:
            return False
        self._notice_stop()
        with self._lock:
            state, may_retry = self._life.state, self._life.may_retry(time.monotonic())
        if state == CLOSED_STATE:
            return False
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
        running = self._life.running()  # every call's case, read without the lock:
        if running is not None and not running.rpc.closed:  # Leases orders a take against a retirement itself,
            with contextlib.suppress(TransportClosed):  # and a lease refused (retired just now) goes on below
                if lease:
                    running.leases.take()
                return running
        if self._life.closed:
            raise TransportClosed(CLOSED)
        if self.config is None:
            assert self.config_error is not None
            raise copy.copy(self.config_error)
        while True:
            future: Optional[Future[McpClient]] = None
            with self._lock:
                need = self._life.need(time.monotonic(), deadline.at)
                if isinstance(need, Use):
                    client = cast(McpClient, need.client)
                    if not client.rpc.closed:
                        if lease:
                            client.leases.take()  # under the lock: the idle decision is taken under it too
                        return client
                elif not isinstance(need, Refuse):
                    future = self._flights.get(need.flight)
                    if future is None:
                        future = self._flights[need.flight] = Future()
            if isinstance(need, Use):
                self._stopped(client, None)  # found closed before its listener said so
                continue
            if isinstance(need, Refuse):
                raise need.error
            assert future is not None
            if isinstance(need, Start) and not self._settings.background.submit(self._start, need.flight):
                self._start_failed(need.flight, TransportClosed(CLOSED))
            self._wait(future, deadline)

    def _wait(self, future: Future[Any], deadline: Deadline, what: str = "") -> None:
        """Wait for a start's (or a shared fetch's) outcome until ``deadline``; raise its error.

        On time-out: ServerUnavailable for a start; RequestTimeout naming ``what`` else.
        """

        def timed_out() -> JsonRpcError:
            if what:
                return RequestTimeout("tools/list", None, deadline.timeout, f"{what} was still running")
            with self._lock:
                return self._life.waited_too_long(deadline.timeout)

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
            if not self.cache.fetch_needed(listings, refresh=refresh):
                return
            if refresh:
                self._fetch_tools(client, deadline)
                return
            self.cache.shared_fetch(
                functools.partial(self._fetch_tools, client, deadline),
                lambda fetch: self._wait(fetch, deadline, "another call's fetch of the tool list"),
            )
        finally:
            client.leases.release()

    def _fetch_tools(self, client: McpClient, deadline: Deadline) -> None:
        changes = self.cache.changes()
        try:
            listing = client.listing("tools/list", timeout=deadline.remaining())
        except RequestTimeout as exc:
            raise as_call_timeout(exc, deadline) from None
        if self._is_current(client):
            self.cache.store(cast(List[Tool], listing.items), changes, listing.expires_at)
            self._on_listed()

    def call_tool(
        self,
        tool: str,
        arguments: Optional[Mapping[str, Any]],
        deadline: Deadline,
        on_progress: Optional[ProgressCallback] = None,
    ) -> CallToolResult:
        """Check that the server offers ``tool`` (starting it, fetching its list again once), and call it.

        All within ``deadline``.  With tracing on, the call is an
        OpenTelemetry span whose ``traceparent`` travels in the request's ``_meta``.

        Raises:
            UnknownTool: the server does not offer ``tool``; nothing was sent.
            As ``session``, then as ``McpClient.call_tool``.
        """
        if not self.cache.offers(tool):
            self.refresh_tools(deadline)
            if not self.cache.offers(tool):
                self.refresh_tools(deadline, refresh=True)
                if not self.cache.offers(tool):
                    raise UnknownTool(tool, self.name)
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
        self._counters.count("tool_calls")
        try:
            return client.call_tool(tool, arguments, timeout=deadline.remaining(), on_progress=on_progress, meta=meta)
        except RequestTimeout as exc:  # it had what was left of the call's timeout: name the whole
            self._counters.count("tool_calls_cancelled")
            raise as_call_timeout(exc, deadline) from None
        except JsonRpcError:
            self._counters.count("tool_calls_failed")
            raise
        finally:
            client.leases.release()

    # -- starting (on a background worker) --------------------------------------------------

    def _start(self, flight: int) -> None:
        config = self.config
        assert config is not None
        try:
            client, listing = start_session(
                config,
                self._settings,
                self._transport_factory,
                call_timeout=self.call_timeout(),
                on_tools_changed=self._tools_changed,
                adopt=functools.partial(self._adopt, flight),
                hook=self._hook,
            )
        except BaseException as exc:
            self._start_failed(flight, exc)
            if not isinstance(exc, Exception):
                raise
            return
        with self._lock:
            up = self._life.start_succeeded(flight, client)
            future = self._flights.pop(flight, None) if up else None
        if not up:
            client.close()  # no longer wanted: closed (its waiters were failed then), or forked
            return
        self.cache.store(cast(List[Tool], listing.items), self.cache.changes(), listing.expires_at)
        self._timers.arm(client)
        self._on_listed()
        logger.info("MCP server %r started with %d tools", self.name, len(listing.items))
        if future is not None:
            future.set_result(client)

    def _adopt(self, flight: int, client: McpClient) -> bool:
        with self._lock:
            return self._life.adopt(flight, client)

    def _start_failed(self, flight: int, exc: BaseException) -> None:
        """A start failed: the server is failed, or (a restart, within the bound) tried again after a backoff."""
        reason = describe_start_failure(exc)
        with self._lock:
            ended = self._life.start_failed(flight, exc, reason, time.monotonic())
            future = self._flights.pop(flight, None) if ended.failed is not None else None
        if ended.restart_in is not None:
            self._timers.later(ended.restart_in, self._start, flight)
            logger.warning(
                "MCP server %r failed to restart (%s); trying again in %.3gs", self.name, reason, ended.restart_in
            )
            return
        if ended.failed is None:
            return  # superseded
        if isinstance(ended.failed, ServerUnavailable):
            self.cache.clear()
            logger.warning("MCP %s", ended.failed.message)
            if isinstance(exc, TransportClosed) and exc.stderr_tail:
                logger.warning("server %r: stderr ends with:\n%s", self.name, exc.stderr_tail)
        self._on_listed()
        if future is not None and not future.done():
            future.set_exception(ended.failed)

    # -- the end of a session -----------------------------------------------------------------

    def _is_current(self, client: McpClient) -> bool:
        with self._lock:
            return self._life.is_current(client)

    def _notice_stop(self) -> None:  # a running session found closed stopped (its listener may be late)
        with self._lock:
            client = self._life.running()
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
        with self._lock:
            ended = self._life.stopped(client, error, reason, time.monotonic())
            if ended is None:
                return
            self._counters.retire(client)
        self._timers.cancel_all()
        # Off this thread: reap the old process, and only then (at the earliest) start the new one.
        restart = ended.flight if ended.restart_in is not None else None
        self._settings.background.submit(self._reap_then_restart, client, restart)
        if ended.failed is not None:
            self.cache.clear()
            logger.warning("MCP %s", ended.failed.message)
            self._on_listed()
        else:
            logger.warning("MCP server %r stopped (%s); restarting in %.3gs", self.name, reason, ended.restart_in)

    def _reap_then_restart(self, client: McpClient, flight: Optional[int]) -> None:
        """On a background worker: close the stopped session, then schedule the restart at its due time."""
        client.close()
        if flight is None:
            return
        with self._lock:
            delay = self._life.restart_due(flight, time.monotonic())
        if delay is not None:
            self._timers.later(delay, self._start, flight)

    def _idle(self, client: McpClient) -> None:
        """On a background worker: the session had no lease for ``idle_timeout``: close it (if still so)."""
        idle_timeout = self._settings.idle_timeout
        with self._lock:
            life = self._life
            idle = (
                idle_timeout is not None
                and life.is_current(client)
                and client.leases.retire_if_idle(idle_timeout)
                and life.went_idle(client)
            )
            if idle:
                self._counters.retire(client)
            current = life.is_current(client)
        if not idle:
            if current:
                self._timers.watch_idle(client)  # a lease came meanwhile
            return
        self._timers.cancel_all()
        logger.info("MCP server %r unused for %.3gs: closed (started again on its next use)", self.name, idle_timeout)
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
        with self._lock:
            _, clients = self._life.close()
            waiting = list(self._flights.values())
            self._flights.clear()
        self._timers.cancel_all()
        for future in waiting:
            if not future.done():
                future.set_exception(TransportClosed(CLOSED))
        return clients

    def after_fork(self) -> None:
        """In a process forked since the registry was made: forget the parent's session, start afresh on use.

        Takes no old lock (a thread of the parent may have held it): the
        caller serializes resets.  The parent's session is let go of with
        ``close()``, which in a forked process only closes this process's
        copies of its pipes and sockets; the tool list is kept.
        """
        self._lock = threading.Lock()
        inherited = self._life.live()
        self._life.reset()
        self._flights = {}
        self._counters = ServerCounters()
        self._timers.forget_all()
        for client in inherited:
            client.close()

    def __repr__(self) -> str:
        return f"<ServerSupervisor {self.name!r} {self._life.shown}>"


__all__ = [
    "FAILED",
    "IDLE",
    "RESTARTING",
    "RUNNING",
    "SERVER_STAT_KEYS",
    "STARTING",
    "STATES",
    "ServerSupervisor",
    "Settings",
    "describe_start_failure",
]
