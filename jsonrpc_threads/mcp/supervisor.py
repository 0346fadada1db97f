"""One configured MCP server's lifecycle, for the tool registry: the state machine of start, restart, idle and failure.

Theory of operation.  A :class:`ServerSupervisor` owns at most one
:class:`~jsonrpc_threads.mcp.McpClient` session for its server and is, at any
moment, in one of five states (what :meth:`ServerSupervisor.status` reports):

- ``idle``: no session: never used yet, closed after ``idle_timeout`` seconds
  without a lease (:mod:`.leases`), or in a process forked since (the
  parent's session is not ours);
- ``starting``: the first start (or the first after ``idle``) is under way;
- ``running``: the session is up;
- ``restarting``: the server stopped (its process exited, it stopped
  answering the health ping) and starts again after a backoff
  (:mod:`.restarts`: doubling delays, at most ``max_restarts`` in
  ``restart_window`` seconds);
- ``failed``: the first start failed, or the server stopped once too often;
  the error (exit code and the end of stderr included) is kept and raised as
  :class:`~jsonrpc_threads.mcp.errors.ServerUnavailable` until
  ``retry_failed_after`` seconds have passed, then a use tries again.

A start is a single flight: it runs on the registry's background workers
(:func:`.supervision.start_session`, bounded by ``startup_timeout``) and is a
``Future`` every caller waits on, each no longer than its own deadline (the
:class:`~jsonrpc_threads._deadlines.Deadline` its public call made): a call
made while the server starts or restarts either gets the session in time or
fails with a clear ``ServerUnavailable`` (at once, when the restart is not
due before its deadline), and the start goes on for the others.

Decide under the lock, act after.  The supervisor's lock guards its state and
is never held while anything blocks: starts, closes, pings and the
registry's callbacks run with no lock held.  The end of a session is seen at
once: a close listener, attached to every JSON-RPC client the session makes
(a fallback to the legacy transport included), runs on the thread that saw
the end, records it and schedules the restart, and hands the reaping of the
old process to a background worker.  The timers are :mod:`.session_timers`;
the tool list, kept while the server restarts or idles, is :mod:`.tool_cache`.
Calls go straight to the session: pipelined, never serialized behind a lock,
each holding a lease on it.
"""

from __future__ import annotations

import copy
import functools
import logging
import threading
import time
from concurrent.futures import Future
from concurrent.futures import wait as futures_wait
from typing import Any, Callable, Dict, List, Mapping, Optional

from .._deadlines import Deadline, wait_slice
from ..client import JsonRpcClient
from ..errors import ConfigError, JsonRpcError, RequestTimeout, TransportClosed
from ..observe import STAT_KEYS, add_close_listener, add_stats, trace_wire
from ..transports.config import ServerConfig
from .errors import ServerUnavailable, UnknownTool
from .progress import ProgressCallback
from .restarts import StopHistory
from .session import McpClient
from .session_timers import SessionTimers
from .supervision import CLOSED, Settings, TransportFactory, describe_start_failure, start_session, stop_error
from .tool_cache import ToolCache
from .types import CallToolResult

logger = logging.getLogger(__name__)

IDLE = "idle"
STARTING = "starting"
RUNNING = "running"
RESTARTING = "restarting"
FAILED = "failed"
#: Every state :meth:`ServerSupervisor.status` may report.
STATES = (IDLE, STARTING, RUNNING, RESTARTING, FAILED)


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
        self.cache = ToolCache()
        self._settings = settings
        self._transport_factory = transport_factory
        self._on_listed = on_listed
        self._on_tools_changed = on_tools_changed
        self._timers = SessionTimers(
            name, settings, is_current=self._is_current, on_idle=self._idle, on_unhealthy=self._stopped
        )
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
        self._retired: Dict[str, int] = {}  # the counters of sessions that ended

    # -- what it reports ----------------------------------------------------------------------

    def call_timeout(self) -> Optional[float]:
        """A call's default timeout on this server: its entry's ``timeout``, else the registry's ``default_timeout``."""
        config = self.config
        if config is not None and config.timeout is not None:
            return config.timeout
        return self._settings.default_timeout

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
        """The counters of every session of this server (``McpClient.stats()``), and its restarts."""
        with self._lock:
            total = dict(self._retired)
            live = [client for client in (self._client, self._starting) if client is not None]
            restarts = self._restarts
        for key in STAT_KEYS:
            total.setdefault(key, 0)
        for client in live:
            add_stats(total, client.stats())
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
        while True:
            with self._lock:
                if self._closed:
                    raise TransportClosed(CLOSED)
                if self.config is None:
                    assert self.config_error is not None
                    raise copy.copy(self.config_error)
                state, future, client = self._state, self._session, self._client
                if state == RUNNING and client is not None and not client.rpc.closed:
                    if lease:
                        client.leases.take()  # under the lock: the idle check decides under it too
                    return client
                start = False
                if state == IDLE or (state == FAILED and self._may_retry()):
                    future = self._begin_start_locked()
                    start = True
                elif state == FAILED:
                    assert future is not None
                    raise self._failed_error_locked(future)
                elif state == RESTARTING and deadline.at is not None and self._restart_at > deadline.at:
                    raise self._restart_too_late_locked()
            if state == RUNNING:  # it stopped and the listener has not said so yet
                assert client is not None
                self._stopped(client, None)
                continue
            assert future is not None
            if start and not self._settings.background.submit(self._start, future):
                self._start_failed(future, TransportClosed(CLOSED))
            self._wait(future, deadline)

    def _wait(self, future: Future[McpClient], deadline: Deadline) -> None:
        """Wait for a start's outcome until ``deadline``; raise its error, or ServerUnavailable on time-out."""
        done, _ = futures_wait((future,), timeout=wait_slice(deadline.at))
        while not done and not deadline.expired:
            done, _ = futures_wait((future,), timeout=wait_slice(deadline.at))
        if not done:
            with self._lock:
                what = "is restarting" if self._state == RESTARTING else "is starting"
                last = self._last_error
            reason = f"it was not up within the call's deadline ({deadline.timeout:.3g}s)"
            if last:
                reason += f"; it had stopped: {last}"
            raise ServerUnavailable(self.name, reason, timed_out=True, what=what)
        error = future.exception()
        if error is not None:  # one error kept for many callers: raise a copy (a fresh traceback)
            raise copy.copy(error) from None

    def _is_current(self, client: McpClient) -> bool:
        with self._lock:
            return not self._closed and self._client is client and self._state == RUNNING

    # -- the tool list and calls -------------------------------------------------------------

    def refresh_tools(self, deadline: Deadline, *, refresh: bool = False) -> None:
        """Start the server if needed, and fetch its tools when stale (or ``refresh``), within ``deadline``.

        Raises:
            ConfigError, ServerUnavailable, TransportClosed: as :meth:`session`.
            JsonRpcError: ``tools/list`` failed.
        """
        listings = self.cache.listings
        client = self._acquire(deadline, lease=True)
        try:
            changes = self.cache.changes()
            if self.cache.listings != listings:
                refresh = False  # just started: the list is fresh
            if not (refresh or self.cache.needs_fetch()):
                return
            tools = client.list_tools(timeout=deadline.remaining())
        except RequestTimeout as exc:
            raise _whole(exc, deadline) from None
        finally:
            client.leases.release()
        with self._lock:
            current = self._state == RUNNING and self._client is client
            if current:
                self.cache.store(tools, changes)
        if current:
            self._on_listed()

    def ensure_tool(self, tool: str, deadline: Deadline) -> None:
        """Start the server if needed and check that it offers ``tool`` (fetching its list again once).

        Raises:
            UnknownTool: it does not.
            ConfigError, ServerUnavailable, TransportClosed: as :meth:`session`.
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
            As :meth:`session`, then as :meth:`McpClient.call_tool`.
        """
        tracing = self._settings.tracing
        span = carrier = None
        if tracing is not None:
            config = self.config
            span, carrier = tracing.start(self.name, tool, config.transport if config is not None else "")
        try:
            client = self._acquire(deadline, lease=True)
            try:
                result = client.call_tool(
                    tool, arguments, timeout=deadline.remaining(), on_progress=on_progress, meta=carrier
                )
            except RequestTimeout as exc:  # it had what was left of the call's timeout: name the whole
                raise _whole(exc, deadline) from None
            finally:
                client.leases.release()
        except BaseException as exc:
            if tracing is not None:
                tracing.end(span, error=exc)
            raise
        if tracing is not None:
            tracing.end(span, tool_error=isinstance(result, Mapping) and result.get("isError") is True)
        return result

    # -- starting (on a background worker) --------------------------------------------------

    def _start(self, future: Future[McpClient]) -> None:
        config = self.config
        assert config is not None
        try:
            client, tools = start_session(
                config,
                self._settings,
                self._transport_factory,
                call_timeout=self.call_timeout(),
                on_tools_changed=self._tools_changed,
                adopt=functools.partial(self._adopt, future),
                hook=self._attach,
            )
        except BaseException as exc:
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
                self.cache.store(tools, self.cache.changes())
                self._timers.arm(client)
        if not current:
            client.close()
            if not future.done():
                future.set_exception(TransportClosed(CLOSED))
            return
        self._on_listed()
        logger.info("MCP server %r started with %d tools", self.name, len(tools))
        future.set_result(client)

    def _adopt(self, future: Future[McpClient], client: McpClient) -> bool:
        """The start made its client: ``stop()`` closes it from now on (False: the start is no longer wanted)."""
        with self._lock:
            current = not self._closed and self._session is future
            if current:
                self._starting = client
        return current

    def _attach(self, client: McpClient, rpc: JsonRpcClient) -> None:
        """Every JSON-RPC client of a session gets the close listener and the wire trace: they survive a fallback."""
        add_close_listener(rpc, functools.partial(self._rpc_closed, client, rpc))
        callback = self._settings.wire_trace
        if callback is not None:
            headers = self.config.headers if self.config is not None else None
            trace_wire(rpc, lambda message: callback(self.name, message), headers=headers)

    def _rpc_closed(self, client: McpClient, rpc: JsonRpcClient, error: TransportClosed) -> None:
        # On the thread that saw the end: a replaced client (the fallback's first) is no stop.
        if client.rpc is rpc:
            self._stopped(client, error)

    def _start_failed(self, future: Future[McpClient], exc: BaseException) -> None:
        """A start failed: the server is failed, or (a restart, within the bound) tried again after a backoff."""
        reason = describe_start_failure(exc)
        error: Optional[JsonRpcError] = None
        delay: Optional[float] = None
        with self._lock:
            self._starting = None
            if self._closed:
                error = TransportClosed(CLOSED)
            elif self._session is not future:
                return  # superseded (a fork, a stop)
            else:
                self._last_error = reason
                now = time.monotonic()
                if self._ran:  # a restart failed: one more stop
                    delay = self._settings.policy.delay(self._history.record(now, self._settings.policy.window))
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

    # -- state changes, with the lock held ---------------------------------------------------

    def _begin_start_locked(self) -> Future[McpClient]:
        if self._state == FAILED:  # idle or failed -> starting
            self._history.clear()
            self._ran = False
        self._state = STARTING
        future: Future[McpClient] = Future()
        self._session = future
        return future

    def _may_retry(self) -> bool:
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

    def _restart_too_late_locked(self) -> ServerUnavailable:
        wait = self._restart_at - time.monotonic()
        reason = f"it stopped ({self._last_error}); the next start is due in {wait:.3g}s, after this call's deadline"
        return ServerUnavailable(self.name, reason, what="is restarting", retry_after=max(0.0, wait))

    def _fail_locked(self, exc: Optional[BaseException], reason: str, now: float, *, restarted: bool) -> JsonRpcError:
        self._state = FAILED  # until retry_failed_after
        self._failed_at = now
        self.cache.clear()
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
            returncode=exc.returncode if isinstance(exc, TransportClosed) else None,
            stderr_tail=exc.stderr_tail if isinstance(exc, TransportClosed) else "",
        )

    def _schedule_restart_locked(self, future: Future[McpClient], now: float, delay: float) -> None:
        self._state = RESTARTING  # the same future goes on waiting for the next start
        self._session = future
        self._restarts += 1
        self._restart_at = now + delay
        self._timers.later(delay, self._start, future)

    def _retire_locked(self, client: McpClient) -> None:
        stats = client.stats()
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
            error = stop_error(client)
        reason = describe_start_failure(error)
        failed: Optional[JsonRpcError] = None
        with self._lock:
            if self._closed or self._client is not client or self._state != RUNNING:
                return  # not the running session (our own close, a stale one)
            self._client = None
            self._retire_locked(client)
            self._last_error = reason
            now = time.monotonic()
            delay = self._settings.policy.delay(self._history.record(now, self._settings.policy.window))
            future: Future[McpClient] = Future()
            self._session = future
            if delay is None:
                failed = self._fail_locked(error, reason, now, restarted=True)
                future.set_exception(failed)  # under the lock: whoever sees "failed" finds the error
            else:
                self._state = RESTARTING
                self._restarts += 1
                self._restart_at = now + delay
        self._timers.cancel_all()
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
            self._timers.later(delay, self._start, future)

    def _idle(self, client: McpClient) -> None:
        """On a background worker: the session had no lease for ``idle_timeout``: close it (if still so)."""
        idle_timeout = self._settings.idle_timeout
        with self._lock:
            if idle_timeout is None or self._closed or self._client is not client or self._state != RUNNING:
                return
            if not client.leases.retire_if_idle(idle_timeout):
                self._timers.watch_idle(client)  # a lease came meanwhile
                return
            self._state = IDLE
            self._client = None
            self._session = None
            self._retire_locked(client)
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
            self._closed = True
            future = self._session
            clients = [client for client in (self._client, self._starting) if client is not None]
            self._client = None
            self._starting = None
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
        self._lock = threading.Lock()
        inherited = [client for client in (self._client, self._starting) if client is not None]
        self._client = None
        self._starting = None
        self._session = None
        self._timers.forget_all()
        self._state = IDLE
        self._history = StopHistory()
        self._restarts = 0
        self._ran = False
        self._last_error = None
        self._retired = {}
        for client in inherited:
            client.close()

    def __repr__(self) -> str:
        return f"<ServerSupervisor {self.name!r} {self._state}>"


def _whole(exc: RequestTimeout, deadline: Deadline) -> RequestTimeout:
    """``exc`` naming the whole call's timeout (the step had only what was left of it)."""
    if exc.timeout == deadline.timeout:
        return exc
    return RequestTimeout(exc.method, exc.request_id, deadline.timeout, exc.hint)


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
