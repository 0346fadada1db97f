"""One configured MCP server's lifecycle, for the tool registry: start, restart, idle, health, tool list.

Theory of operation.  A :class:`ServerSupervisor` owns at most one
:class:`~jsonrpc_threads.mcp.McpClient` session for its server and is, at any
moment, in one of five states (what :meth:`ServerSupervisor.status` reports):

- ``idle``: no session: never used yet, closed after ``idle_timeout`` seconds
  unused, or in a process forked since (the parent's session is not ours);
- ``starting``: the first start (or the first after ``idle``) is under way;
- ``running``: the session is up;
- ``restarting``: the server stopped (its process exited, it stopped
  answering the health ping) and starts again after a backoff
  (:mod:`jsonrpc_threads.mcp.restarts`: doubling delays, at most
  ``max_restarts`` in ``restart_window`` seconds);
- ``failed``: the first start failed, or the server stopped once too often;
  the error (exit code and the end of stderr included) is kept and raised as
  :class:`~jsonrpc_threads.errors.ServerUnavailable` until
  ``retry_failed_after`` seconds have passed, then a use tries again.

Every start runs on the registry's background workers
(:mod:`jsonrpc_threads.mcp.background`) and is a ``Future`` the callers wait
on, each no longer than its own deadline: a call made while the server
restarts either gets the new session in time or fails with a clear
``ServerUnavailable`` (at once, when the restart is not due before its
deadline).  However many threads need the server, one start runs.

Decide under the lock, act after.  The supervisor's lock guards its state and
is never held while anything blocks: starts, closes, pings and the
registry's callbacks run with no lock held.  The end of a session is seen at
once: a close listener on its client (:func:`jsonrpc_threads.observe.add_close_listener`)
runs on the reader thread that saw the end, records it and schedules the
restart, and hands the reaping of the old process to a background worker.
The backoff, idle and health timers live on the process-wide timer thread and
only hand their work to the background workers.

The tool list is fetched with every start and again when it is stale (the
server sent ``notifications/tools/list_changed``); it is kept while the
server restarts or idles, so a model keeps seeing the tools of a server that
will be back.  Calls go straight to the session: pipelined, never serialized
behind a lock.  With tracing on, each call is an OpenTelemetry span whose
``traceparent`` travels in the request's ``_meta``.
"""

from __future__ import annotations

import copy
import functools
import logging
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as futures_wait
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from .._deadlines import DEFAULT_TIMEOUT, UseDefault, check_timeout, deadline_after
from .._scheduler import TimerHandle
from ..errors import (
    ConfigError,
    HttpConnectionError,
    JsonRpcError,
    RequestTimeout,
    ServerUnavailable,
    TransportClosed,
    UnknownTool,
)
from ..observe import STAT_KEYS, ToolTracing, WireMessage, add_close_listener, add_stats, trace_wire
from ..transports.base import Transport, session_of
from ..transports.config import ServerConfig
from .background import Background
from .restarts import RestartPolicy, StopHistory
from .session import McpClient, ProgressCallback
from .types import CallToolResult, Tool

logger = logging.getLogger(__name__)

#: Builds the transport of a server from its entry.
TransportFactory = Callable[[ServerConfig], Transport]

#: The most of a server's stderr tail quoted in an error message.
STDERR_LINE_CHARS = 200
#: The most sessions closed at once by :func:`stop_all`.
MAX_PARALLEL_CLOSES = 8
#: Default seconds a health ping may take before the server is taken for hung.
DEFAULT_HEALTH_TIMEOUT_S = 10.0
_CLOSED = "ToolRegistry closed"

IDLE = "idle"
STARTING = "starting"
RUNNING = "running"
RESTARTING = "restarting"
FAILED = "failed"
#: Every state :meth:`ServerSupervisor.status` may report.
STATES = (IDLE, STARTING, RUNNING, RESTARTING, FAILED)


@dataclass
class Settings:
    """What every supervisor of one registry reads when it starts or calls (shared; the registry may change it).

    Attributes:
        default_timeout: seconds a call may take unless the call or the server's
            ``timeout`` says otherwise.
        startup_timeout: seconds for ``initialize`` and the first ``tools/list``.
        retry_failed_after: seconds before a failed server is tried again (``None``: never).
        client_info: ``{"name", "version"}`` sent in ``initialize``.
        policy: how stopped servers are restarted.
        idle_timeout: seconds unused after which a session is closed (``None``: never).
        health_interval: seconds between health pings of a running session (``None``: none).
        health_timeout: seconds a health ping may take.
        tracing: OpenTelemetry spans for tool calls, or ``None``.
        wire_trace: ``callback(server, message)`` for every message of every
            session (see :func:`jsonrpc_threads.observe.trace_wire`), or ``None``.
        background: where starts, closes and pings run (replaced after a fork).
    """

    default_timeout: Optional[float]
    startup_timeout: Optional[float]
    retry_failed_after: Optional[float]
    client_info: Optional[Mapping[str, Any]] = None
    policy: RestartPolicy = field(default_factory=RestartPolicy)
    idle_timeout: Optional[float] = None
    health_interval: Optional[float] = None
    health_timeout: float = DEFAULT_HEALTH_TIMEOUT_S
    tracing: Optional[ToolTracing] = None
    wire_trace: Optional[Callable[[str, WireMessage], object]] = None
    background: Background = field(default_factory=lambda: Background(4))


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
        self._settings = settings
        self._transport_factory = transport_factory
        self._on_listed = on_listed
        self._on_tools_changed = on_tools_changed
        # _lock guards every field below.
        self._lock = threading.Lock()
        self._closed = False
        self._state = IDLE
        self._session: Optional[Future[McpClient]] = None  # the start in progress, or its outcome
        self._client: Optional[McpClient] = None  # the running session (state running)
        self._starting: Optional[McpClient] = None  # the session being started (stop() closes it)
        self._ran = False  # a session of this server ran since it was last idle or failed
        self._history = StopHistory()
        self._restarts = 0
        self._restart_at = 0.0  # restarting: when the next start begins (monotonic)
        self._failed_at = 0.0
        self._last_error: Optional[str] = None
        self._timers: List[TimerHandle] = []  # the running session's idle and health timers, the restart's
        self._inflight = 0  # calls on the running session (counted with idle_timeout only)
        self._last_used = 0.0
        self._retired: Dict[str, int] = {}  # the counters of sessions that ended
        self._tools: List[Tool] = []
        self._listed = False
        self._listings = 0  # how many times _tools was fetched
        self._changes = 0  # list_changed notifications received
        self._listed_changes = 0  # the value of _changes when _tools was fetched
        self._version = 0  # changes with _tools (see listing_version)

    # -- state ------------------------------------------------------------------------------

    def tools(self) -> List[Tool]:
        """The tools as last fetched (kept while the server restarts or idles; empty once it failed)."""
        with self._lock:
            return list(self._tools)

    def listing(self) -> Tuple[List[Tool], int]:
        """The tools and their :meth:`listing_version`, read together."""
        with self._lock:
            return list(self._tools), self._version

    def listing_version(self) -> int:
        """A number that changes whenever the tool list does (fetched, or emptied)."""
        return self._version

    def failure(self) -> Optional[JsonRpcError]:
        """Why the server is unavailable: its :class:`ConfigError`, or the :class:`ServerUnavailable` it failed with."""
        if self.config_error is not None:
            return self.config_error
        with self._lock:
            session = self._session if self._state == FAILED else None
        if session is not None and session.done():
            error = session.exception()
            if isinstance(error, ServerUnavailable):
                return error
        return None

    def started(self) -> bool:
        """True while the server has a running session."""
        self._notice_stop()
        with self._lock:
            return self._state == RUNNING

    def status(self) -> Dict[str, Any]:
        """``{"state", "pid", "restarts", "last_error"}`` (see the module docstring for the states)."""
        if self.config_error is not None:
            return {"state": FAILED, "pid": None, "restarts": 0, "last_error": self.config_error.message}
        self._notice_stop()
        with self._lock:
            client = self._client if self._state == RUNNING else self._starting
            status: Dict[str, Any] = {
                "state": self._state,
                "pid": None,
                "restarts": self._restarts,
                "last_error": self._last_error,
            }
        if client is not None:
            pid = getattr(client.rpc.transport, "pid", None)
            status["pid"] = pid if isinstance(pid, int) else None
        return status

    def stats(self) -> Dict[str, int]:
        """The counters of every session of this server (``JsonRpcClient.stats()``), and its restarts."""
        with self._lock:
            total = dict(self._retired)
            live = [client for client in (self._client, self._starting) if client is not None]
            restarts = self._restarts
        for key in STAT_KEYS:
            total.setdefault(key, 0)
        for client in live:
            add_stats(total, client.rpc.stats())
        total["restarts"] = restarts
        return total

    def needs_work(self) -> bool:
        """True when :meth:`refresh_tools` would start the server or fetch its tools."""
        self._notice_stop()
        with self._lock:
            if self.config is None or self._closed:
                return False
            state = self._state
            if state == FAILED:
                return self._may_retry()
            if state == RUNNING:
                return self._stale() or not self._listed
            if state == STARTING:
                return True
            return not self._listed  # idle or restarting: the tools known are kept

    # -- the session -------------------------------------------------------------------------

    def session(self, deadline: Optional[float] = None) -> McpClient:
        """The running session: started now (once, however many threads ask) if needed.

        Args:
            deadline: the latest moment (:func:`time.monotonic`) to wait for a
                start or restart; ``None`` waits for its outcome (a start is
                bounded by ``startup_timeout``).

        Raises:
            ConfigError: the entry is unusable.
            ServerUnavailable: the server failed (now, or recently), or is
                restarting and was not back by ``deadline``.
            TransportClosed: the registry is closed.
        """
        return self._acquire(deadline, use=False)

    def _acquire(self, deadline: Optional[float], *, use: bool) -> McpClient:
        while True:
            with self._lock:
                if self._closed:
                    raise TransportClosed(_CLOSED)
                if self.config is None:
                    assert self.config_error is not None
                    raise copy.copy(self.config_error)
                state, future = self._state, self._session
                client = self._client
                if state == RUNNING and client is not None and not client.rpc.closed:
                    if use and self._settings.idle_timeout is not None:
                        self._inflight += 1
                    return client
                start = False
                if state == IDLE or (state == FAILED and self._may_retry()):
                    future = self._begin_start_locked()
                    start = True
                elif state == FAILED:
                    assert future is not None
                    raise self._failed_error_locked(future)
                elif state == RESTARTING and deadline is not None and self._restart_at > deadline:
                    raise self._restart_too_late_locked(deadline)
            if state == RUNNING:  # it stopped and the listener has not said so yet
                assert client is not None
                self._stopped(client, None)
                continue
            assert future is not None
            if start and not self._settings.background.submit(self._start, future):
                self._start_failed(future, TransportClosed(_CLOSED))
            self._wait(future, deadline)

    def _wait(self, future: Future[McpClient], deadline: Optional[float]) -> None:
        """Wait for a start's outcome until ``deadline``; raise its error, or ServerUnavailable on time-out."""
        remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
        done, _ = futures_wait((future,), timeout=remaining)
        if not done:
            with self._lock:
                what = "is restarting" if self._state == RESTARTING else "is starting"
                last = self._last_error
            reason = f"it was not up within the call's deadline ({remaining:.3g}s)"
            if last:
                reason += f"; it had stopped: {last}"
            raise ServerUnavailable(self.name, reason, timed_out=True, what=what)
        error = future.exception()
        if error is not None:  # one error kept for many callers: raise a copy (a fresh traceback)
            raise copy.copy(error) from None

    def _release(self) -> None:
        """A call made through ``_acquire(use=True)`` ended."""
        if self._settings.idle_timeout is None:
            return
        with self._lock:
            self._inflight = max(0, self._inflight - 1)
            self._last_used = time.monotonic()

    def _begin_start_locked(self) -> Future[McpClient]:
        # Called with _lock held: idle or failed -> starting.
        if self._state == FAILED:
            self._history.clear()
            self._ran = False
        self._state = STARTING
        future: Future[McpClient] = Future()
        self._session = future
        return future

    def _may_retry(self) -> bool:
        # Called with _lock held.
        retry = self._settings.retry_failed_after
        return retry is not None and time.monotonic() - self._failed_at >= retry

    def _retry_after_locked(self) -> Optional[float]:
        retry = self._settings.retry_failed_after
        return None if retry is None else max(0.0, self._failed_at + retry - time.monotonic())

    def _failed_error_locked(self, future: Future[McpClient]) -> JsonRpcError:
        error = future.exception()
        assert isinstance(error, JsonRpcError)
        error = copy.copy(error)
        if isinstance(error, ServerUnavailable):
            error.retry_after = self._retry_after_locked()
        return error

    def _restart_too_late_locked(self, deadline: float) -> ServerUnavailable:
        now = time.monotonic()
        wait = self._restart_at - now
        reason = f"it stopped ({self._last_error}); the next start is due in {wait:.3g}s, after this call's deadline"
        return ServerUnavailable(self.name, reason, what="is restarting", retry_after=max(0.0, wait))

    def _stale(self) -> bool:
        # Called with _lock held.
        return self._listed_changes != self._changes

    def _call_timeout(self) -> Optional[float]:
        config = self.config
        if config is not None and config.timeout is not None:
            return config.timeout
        return self._settings.default_timeout

    # -- starting (on a background worker) --------------------------------------------------

    def _start(self, future: Future[McpClient]) -> None:
        config = self.config
        assert config is not None
        settings = self._settings
        client: Optional[McpClient] = None
        transport: Optional[Transport] = None
        try:
            transport = self._transport_factory(config)
            client = McpClient(
                transport,
                client_info=settings.client_info,
                default_timeout=self._call_timeout(),
                on_tools_changed=self._tools_changed,
            )
            transport = None  # the client owns it now
            with self._lock:
                current = not self._closed and self._session is future
                if current:
                    self._starting = client
            if not current:
                raise TransportClosed(_CLOSED)
            add_close_listener(client.rpc, functools.partial(self._stopped, client))
            if settings.wire_trace is not None:
                callback = settings.wire_trace
                trace_wire(client.rpc, lambda message: callback(self.name, message), headers=config.headers)
            client.initialize(timeout=settings.startup_timeout)
            tools = client.list_tools(timeout=settings.startup_timeout)
            _open_listen_stream(client)
        except BaseException as exc:
            if client is not None:
                client.close()
            elif transport is not None:
                transport.close()
            self._start_failed(future, exc)
            if not isinstance(exc, Exception):
                raise
            return
        with self._lock:
            self._starting = None
            current = not self._closed and self._session is future
            if current:
                self._state = RUNNING
                self._client = client
                self._ran = True
                self._last_used = time.monotonic()
                self._inflight = 0
                self._set_tools(tools, self._changes)
                self._arm_session_timers_locked(client)
        if not current:
            client.close()
            if not future.done():
                future.set_exception(TransportClosed(_CLOSED))
            return
        self._on_listed()
        logger.info("MCP server %r started with %d tools", self.name, len(tools))
        future.set_result(client)

    def _start_failed(self, future: Future[McpClient], exc: BaseException) -> None:
        """A start failed: the server is failed, or (a restart, within the bound) tried again after a backoff."""
        reason = describe_start_failure(exc)
        error: Optional[JsonRpcError] = None
        delay: Optional[float] = None
        with self._lock:
            self._starting = None
            if self._closed:
                error = TransportClosed(_CLOSED)
            elif self._session is not future:
                return  # superseded (a fork, a stop)
            else:
                self._last_error = reason
                now = time.monotonic()
                if self._ran:  # a restart failed: one more stop
                    stops = self._history.record(now, self._settings.policy.window)
                    delay = self._settings.policy.delay(stops)
                    if delay is not None:
                        self._schedule_restart_locked(future, now, delay)
                if delay is None:
                    error = self._fail_locked(exc, reason, now, restarted=self._ran)
                    # Settled under the lock: whoever sees "failed" finds the error in place.
                    future.set_exception(error)
        if delay is not None:
            logger.warning("MCP server %r failed to restart (%s); trying again in %.3gs", self.name, reason, delay)
            return
        assert error is not None
        if isinstance(error, ServerUnavailable):
            logger.warning("MCP %s", error.message)
            if isinstance(exc, TransportClosed) and exc.stderr_tail:
                logger.warning("server %r: stderr ends with:\n%s", self.name, exc.stderr_tail)
        self._on_listed()
        if not future.done():
            future.set_exception(error)

    def _fail_locked(self, exc: Optional[BaseException], reason: str, now: float, *, restarted: bool) -> JsonRpcError:
        # Called with _lock held: the server is failed until retry_failed_after.
        self._state = FAILED
        self._failed_at = now
        self._tools = []
        self._listed = False
        self._version += 1
        returncode = exc.returncode if isinstance(exc, TransportClosed) else None
        tail = exc.stderr_tail if isinstance(exc, TransportClosed) else ""
        what = "failed to start"
        if restarted:
            policy = self._settings.policy
            reason = f"it stopped more than {policy.max_restarts} times within {policy.window:g}s; last: {reason}"
            what = "is failed"
        return ServerUnavailable(
            self.name,
            reason,
            timed_out=isinstance(exc, RequestTimeout),
            what=what,
            retry_after=self._retry_after_locked(),
            returncode=returncode,
            stderr_tail=tail,
        )

    def _schedule_restart_locked(self, future: Future[McpClient], now: float, delay: float) -> None:
        # Called with _lock held: restarting; the same future goes on waiting for the next start.
        self._state = RESTARTING
        self._session = future
        self._restarts += 1
        self._restart_at = now + delay
        self._timers.append(self._settings.background.call_later(delay, self._start, future))

    def _arm_session_timers_locked(self, client: McpClient) -> None:
        # Called with _lock held, as the session starts running.
        settings = self._settings
        if settings.idle_timeout is not None:
            self._timers.append(settings.background.call_later(settings.idle_timeout, self._idle_check, client))
        if settings.health_interval is not None:
            self._timers.append(settings.background.call_later(settings.health_interval, self._health_check, client))

    def _take_timers_locked(self) -> List[TimerHandle]:
        timers, self._timers = self._timers, []
        return timers

    def _retire_locked(self, client: McpClient) -> None:
        stats = client.rpc.stats()
        stats["pending"] = 0
        add_stats(self._retired, stats)

    # -- the end of a session -----------------------------------------------------------------

    def _notice_stop(self) -> None:
        """A running session whose client is closed stopped: handle it now (the listener may be late)."""
        with self._lock:
            client = self._client if self._state == RUNNING else None
        if client is not None and client.rpc.closed:
            self._stopped(client, None)

    def _stopped(self, client: McpClient, error: Optional[BaseException]) -> None:
        """The session of ``client`` ended (a close listener, a failed health ping, or noticed on use).

        Runs on any thread, a reader thread included: records, schedules, and
        hands the reaping of the old process to a background worker.
        """
        if error is None:
            error = _stop_error(client)
        reason = describe_start_failure(error)
        failed: Optional[JsonRpcError] = None
        delay: Optional[float] = None
        with self._lock:
            if self._closed or self._client is not client or self._state != RUNNING:
                return  # not the running session (our own close, a stale one)
            self._client = None
            timers = self._take_timers_locked()
            self._retire_locked(client)
            self._last_error = reason
            now = time.monotonic()
            stops = self._history.record(now, self._settings.policy.window)
            delay = self._settings.policy.delay(stops)
            future: Future[McpClient] = Future()
            if delay is None:
                failed = self._fail_locked(error, reason, now, restarted=True)
                future.set_exception(failed)  # under the lock: whoever sees "failed" finds the error
                self._session = future
            else:
                self._state = RESTARTING
                self._session = future
                self._restarts += 1
                self._restart_at = now + delay
        for timer in timers:
            timer.cancel()
        # Off this thread: reap the old process, and only then (at the earliest) start the new one.
        self._settings.background.submit(self._reap_then_restart, client, None if failed else future)
        if failed is not None:
            logger.warning("MCP %s", failed.message)
            self._on_listed()
        else:
            logger.warning("MCP server %r stopped (%s); restarting in %.3gs", self.name, reason, delay)

    def _reap_then_restart(self, client: McpClient, future: Optional[Future[McpClient]]) -> None:
        """On a background worker: close the stopped session, then schedule the restart at its due time."""
        client.close()
        if future is None:
            return
        with self._lock:
            if self._closed or self._session is not future or self._state != RESTARTING:
                return
            delay = self._restart_at - time.monotonic()
            self._timers.append(self._settings.background.call_later(delay, self._start, future))

    def _idle_check(self, client: McpClient) -> None:
        """On a background worker, ``idle_timeout`` after the last use: close the session if still unused."""
        idle_timeout = self._settings.idle_timeout
        assert idle_timeout is not None
        with self._lock:
            if self._closed or self._client is not client or self._state != RUNNING:
                return
            unused = time.monotonic() - self._last_used
            if self._inflight or unused < idle_timeout:
                wait = idle_timeout if self._inflight else idle_timeout - unused
                self._timers = [timer for timer in self._timers if timer.active]
                self._timers.append(self._settings.background.call_later(wait, self._idle_check, client))
                return
            self._state = IDLE
            self._client = None
            self._session = None
            timers = self._take_timers_locked()
            self._retire_locked(client)
        for timer in timers:
            timer.cancel()
        logger.info("MCP server %r unused for %.3gs: closed (started again on its next use)", self.name, unused)
        client.close()

    def _health_check(self, client: McpClient) -> None:
        """On a background worker: ping the running session; one that does not answer is restarted."""
        settings = self._settings
        with self._lock:
            if self._closed or self._client is not client:
                return
        try:
            client.ping(timeout=settings.health_timeout)
        except (RequestTimeout, TransportClosed, HttpConnectionError) as exc:
            logger.warning("MCP server %r failed its health ping: %s", self.name, exc.message)
            stop = TransportClosed(f"no answer to the health ping: {exc.message}")
            if isinstance(exc, TransportClosed):
                stop = exc
            self._stopped(client, stop)
            return
        except JsonRpcError as exc:  # it answered (with an error): it is alive
            logger.debug("server %r answered the health ping with %s", self.name, exc)
        interval = settings.health_interval
        with self._lock:
            if self._closed or self._client is not client or interval is None:
                return
            self._timers = [timer for timer in self._timers if timer.active]
            self._timers.append(settings.background.call_later(interval, self._health_check, client))

    # -- the tool list and calls -------------------------------------------------------------

    def _set_tools(self, tools: Sequence[Tool], changes: int) -> None:
        # Called with _lock held.
        self._tools = list(tools)
        self._listed = True
        self._listings += 1
        self._version += 1
        self._listed_changes = changes

    def _tools_changed(self) -> None:
        # Runs on a worker thread of the server's session.
        with self._lock:
            self._changes += 1
        logger.info("server %r: tool list changed", self.name)
        if self._on_tools_changed is not None:
            self._on_tools_changed(self.name)

    def refresh_tools(self, *, refresh: bool = False, deadline: Optional[float] = None) -> None:
        """Start the server if needed, and fetch its tools when stale (or ``refresh``).

        Raises:
            ConfigError, ServerUnavailable, TransportClosed: as :meth:`session`.
            JsonRpcError: ``tools/list`` failed.
        """
        with self._lock:
            listings = self._listings
        client = self.session(deadline)
        with self._lock:
            changes = self._changes
            if self._listings != listings:
                refresh = False  # just started: the list is fresh
            needed = refresh or self._stale() or not self._listed
        if not needed:
            return
        remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
        tools = client.list_tools(timeout=remaining if deadline is not None else DEFAULT_TIMEOUT)
        with self._lock:
            current = self._state == RUNNING and self._client is client
            if current:
                self._set_tools(tools, changes)
        if current:
            self._on_listed()

    def ensure_tool(self, tool: str, deadline: Optional[float] = None) -> None:
        """Start the server if needed and check that it offers ``tool`` (fetching its list again once).

        Raises:
            UnknownTool: it does not.
            ConfigError, ServerUnavailable, TransportClosed: as :meth:`session`.
        """
        with self._lock:
            known = self._listed and any(isinstance(t, dict) and t.get("name") == tool for t in self._tools)
        if known:
            return
        self.refresh_tools(deadline=deadline)
        for refresh in (False, True):
            if refresh:
                self.refresh_tools(refresh=True, deadline=deadline)
            with self._lock:
                if any(isinstance(known, dict) and known.get("name") == tool for known in self._tools):
                    return
        raise UnknownTool(tool, self.name)

    def call_tool(
        self,
        tool: str,
        arguments: Optional[Mapping[str, Any]],
        timeout: Any = DEFAULT_TIMEOUT,
        on_progress: Optional[ProgressCallback] = None,
    ) -> CallToolResult:
        """Call ``tool`` on the running session (started, or waited for, within the call's deadline).

        ``timeout`` defaults to the server's ``timeout``, else the registry's
        ``default_timeout``; it bounds the whole call, the wait for a start or
        restart included.

        Raises:
            As :meth:`session`, then as :meth:`McpClient.call_tool`.
        """
        if isinstance(timeout, UseDefault) or timeout is Ellipsis:
            resolved = self._call_timeout()
        else:
            resolved = check_timeout(timeout)
        deadline = deadline_after(resolved)
        tracing = self._settings.tracing
        if tracing is None:
            client = self._acquire(deadline, use=True)
            try:
                return client.call_tool(tool, arguments, timeout=_remaining(deadline), on_progress=on_progress)
            except RequestTimeout as exc:  # it had what was left of the call's timeout: name the whole
                raise RequestTimeout(exc.method, exc.request_id, resolved, exc.hint) from None
            finally:
                self._release()
        config = self.config
        span, carrier = tracing.start(self.name, tool, config.transport if config is not None else "")
        try:
            client = self._acquire(deadline, use=True)
            try:
                params = {"name": tool, "arguments": dict(arguments or {}), "_meta": carrier}
                result: CallToolResult = client._request_with_progress(
                    "tools/call", params, _remaining(deadline), on_progress, False, None
                )
            except RequestTimeout as exc:
                raise RequestTimeout(exc.method, exc.request_id, resolved, exc.hint) from None
            finally:
                self._release()
        except BaseException as exc:
            tracing.end(span, error=exc)
            raise
        tracing.end(span, tool_error=isinstance(result, Mapping) and result.get("isError") is True)
        return result

    # -- the end -----------------------------------------------------------------------------

    def stop(self) -> List[McpClient]:
        """Refuse new starts and calls; fail the waiters; return the sessions to close (none is closed here)."""
        with self._lock:
            self._closed = True
            future = self._session
            clients = [client for client in (self._client, self._starting) if client is not None]
            self._client = None
            self._starting = None
            timers = self._take_timers_locked()
        for timer in timers:
            timer.cancel()
        if future is not None and not future.done():
            future.set_exception(TransportClosed(_CLOSED))
        return clients

    def after_fork(self) -> None:
        """In a process forked since the registry was made: forget the parent's session, start afresh on use.

        Takes no old lock (a thread of the parent may have held it): the
        caller serializes resets.  The parent's session is let go of with
        ``close()``, which in a forked process only closes this process's
        copies of its pipes and sockets; the tool list is kept.
        """
        self._lock = threading.Lock()
        inherited = [client for client in (self._client, self._starting) if client is not None]
        self._client = None
        self._starting = None
        self._session = None
        self._timers = []  # the parent's timers: its timer thread did not come along
        self._state = IDLE
        self._history = StopHistory()
        self._restarts = 0
        self._ran = False
        self._inflight = 0
        self._last_error = None
        self._retired = {}
        for client in inherited:
            client.close()

    def __repr__(self) -> str:
        return f"<ServerSupervisor {self.name!r} {self._state}>"


def _remaining(deadline: Optional[float]) -> Optional[float]:
    return None if deadline is None else max(0.0, deadline - time.monotonic())


def _stop_error(client: McpClient) -> TransportClosed:
    """What is known of a session found closed: the transport's exit code and stderr, when it has them."""
    transport = client.rpc.transport
    returncode = getattr(transport, "returncode", None)
    tail_of = getattr(transport, "stderr_tail", None)
    tail = tail_of() if callable(tail_of) else ""
    return TransportClosed(
        "the server stopped",
        returncode=returncode if isinstance(returncode, int) else None,
        stderr_tail=tail if isinstance(tail, str) else "",
    )


# -- many at once ------------------------------------------------------------------------------


def refresh_all(supervisors: Sequence[ServerSupervisor], *, refresh: bool = False, max_concurrency: int = 1) -> None:
    """Start (or fetch the tools of) the servers that need it, concurrently; failures are logged, not raised."""
    todo = [supervisor for supervisor in supervisors if refresh or supervisor.needs_work()]
    if len(todo) == 1:
        _refresh_quietly(todo[0], refresh)
    elif todo:
        with ThreadPoolExecutor(min(len(todo), max_concurrency), thread_name_prefix="jsonrpc-registry-start") as pool:
            for _ in pool.map(lambda supervisor: _refresh_quietly(supervisor, refresh), todo):
                pass


def _refresh_quietly(supervisor: ServerSupervisor, refresh: bool) -> None:
    try:
        supervisor.refresh_tools(refresh=refresh)
    except JsonRpcError as exc:
        logger.debug("server %r: %s", supervisor.name, exc)


def stop_all(supervisors: Sequence[ServerSupervisor]) -> None:
    """Stop every supervisor, then close their sessions (concurrently, each bounded by ``McpClient.close``).

    Plain threads, not an executor: this runs from ``atexit`` too (a web app's
    registry is closed as its worker exits), when ``concurrent.futures``
    refuses new work.  Where no thread can be started, the sessions are closed
    one after the other.
    """
    clients = [client for supervisor in supervisors for client in supervisor.stop()]
    for start in range(0, len(clients), MAX_PARALLEL_CLOSES):
        group = clients[start : start + MAX_PARALLEL_CLOSES]
        if len(group) == 1:
            group[0].close()
            continue
        threads: List[threading.Thread] = []
        for client in group:
            thread = threading.Thread(target=client.close, name="jsonrpc-registry-close", daemon=True)
            try:
                thread.start()
            except RuntimeError:  # the interpreter is finalizing: no new threads
                client.close()
                continue
            threads.append(thread)
        for thread in threads:
            thread.join()  # each close() is bounded (the transport's escalation)


# -- helpers -----------------------------------------------------------------------------------


def _open_listen_stream(client: McpClient) -> None:
    """Over Streamable HTTP, open the stream on which list_changed arrives (when the server sends it)."""
    tools_capability = client.server_capabilities.get("tools")
    if not (isinstance(tools_capability, dict) and tools_capability.get("listChanged")):
        return
    session = session_of(client.rpc.transport)
    if session is None:
        return
    try:
        session.open_listen_stream()
    except JsonRpcError as exc:
        logger.debug("no listen stream for list_changed: %s", exc)


def _one_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1][-STDERR_LINE_CHARS:] if lines else ""


def describe_start_failure(exc: BaseException) -> str:
    """One line saying why a start failed or a session stopped (exit code and the last line of stderr included)."""
    if isinstance(exc, TransportClosed):
        text = exc.message
        if exc.returncode is not None:
            text += f" (exit code {exc.returncode})"
        last = _one_line(exc.stderr_tail)
        if last:
            text += f"; stderr: {last}"
        return text
    if isinstance(exc, RequestTimeout):
        return f"no answer to {exc.method!r} within {exc.timeout}s"
    if isinstance(exc, JsonRpcError):
        return exc.message
    return f"{type(exc).__name__}: {exc}"


__all__ = [
    "DEFAULT_HEALTH_TIMEOUT_S",
    "FAILED",
    "IDLE",
    "MAX_PARALLEL_CLOSES",
    "RESTARTING",
    "RUNNING",
    "STARTING",
    "STATES",
    "STDERR_LINE_CHARS",
    "ServerSupervisor",
    "Settings",
    "TransportFactory",
    "describe_start_failure",
    "refresh_all",
    "stop_all",
]
