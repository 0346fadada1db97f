"""One supervised server's state machine: idle, starting, running, restarting, failed; every transition, no I/O.

Theory of operation.  A ``ServerState`` holds what a
``ServerSupervisor`` knows of its
server, and decides each transition under its one lock; it never blocks,
starts nothing and calls nobody.  Each method is one event (a caller needs the
session, a start made its client, a start failed, the session stopped, it was
unused, the registry closed) and returns what the supervisor must do about it
(run a start, wait for one, schedule a restart, close a client), which the
supervisor then does with no lock held: decide under the lock, act after.

The states (what ``status()`` reports):

- ``idle``: no session: never used yet, closed for being unused, or in a
  process forked since;
- ``starting``: the first start (or the first after ``idle``) is under way;
- ``running``: the session is up;
- ``restarting``: the server stopped and starts again after a backoff
  (``restarts``), at most ``max_restarts`` in ``restart_window``;
- ``failed``: the first start failed, or the server stopped once too often;
  its error is kept until ``retry_failed_after`` has passed.

One ``Future`` stands for the start in progress (or its outcome): every
caller waits on it, a restart keeps it, and a failed server keeps its error
in it, set under the lock so that whoever sees ``failed`` finds the error.

Thread-safety: every method may be called from any thread.
"""

from __future__ import annotations

import copy
import threading
import time
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, Dict, List, NamedTuple, Optional, Tuple

from ..errors import JsonRpcError, RequestTimeout, TransportClosed
from ..observe import STAT_KEYS, add_stats
from .errors import ServerUnavailable
from .restarts import StopHistory
from .supervision import CLOSED, Settings

if TYPE_CHECKING:
    from .session import McpClient

IDLE = "idle"
STARTING = "starting"
RUNNING = "running"
RESTARTING = "restarting"
FAILED = "failed"
#: Every state ``status()`` may report.
STATES = (IDLE, STARTING, RUNNING, RESTARTING, FAILED)


class Need(NamedTuple):
    """What a caller that needs the session must do (``ServerState.need``).

    Exactly one is set: ``client`` (the running session, leased when asked),
    ``stopped`` (a running session found closed: report it, then ask again),
    ``start`` (run this start, then wait for it) or ``wait`` (wait for it).
    """

    client: Optional[McpClient] = None
    stopped: Optional[McpClient] = None
    start: Optional[Future[McpClient]] = None
    wait: Optional[Future[McpClient]] = None


class Stop(NamedTuple):
    """What the end of a running session asks for (``ServerState.stopped``).

    Attributes:
        restart: the start the callers wait for, to run after ``delay`` (``None``: the server is failed).
        delay: seconds before the restart.
        failed: the error the server is failed with, or ``None``.
    """

    restart: Optional[Future[McpClient]]
    delay: Optional[float]
    failed: Optional[JsonRpcError]


class ServerState:
    """The state of one server.  Thread-safe.

    Args:
        name: the server's name (for the errors).
        settings: the registry's (the restart policy, ``retry_failed_after``, ``idle_timeout``).
    """

    def __init__(self, name: str, settings: Settings) -> None:
        self._name = name
        self._settings = settings
        self._lock = threading.Lock()
        self._reset()

    def _reset(self) -> None:
        # _lock guards every field set here.
        self.closed = False
        self.state = IDLE
        self._session: Optional[Future[McpClient]] = None  # the start in progress, or its outcome
        self._client: Optional[McpClient] = None  # the running session
        self._starting: Optional[McpClient] = None  # the session being started (stop() closes it)
        self._ran = False  # a session ran since the server was last idle or failed
        self._history = StopHistory()
        self.restarts = 0
        self._restart_at = 0.0  # restarting: when the next start begins (monotonic)
        self._failed_at = 0.0
        self.last_error: Optional[str] = None
        self._retired: Dict[str, int] = {}  # the counters of sessions that ended

    # -- what it reports ---------------------------------------------------------------------

    def status(self) -> Dict[str, Any]:
        """``{"state", "pid", "restarts", "last_error"}``; ``pid``: the process of the server's client now, if any."""
        with self._lock:
            client = self._client if self.state == RUNNING else self._starting
            status = {"state": self.state, "pid": None, "restarts": self.restarts, "last_error": self.last_error}
        pid = getattr(client.rpc.transport, "pid", None) if client is not None else None
        status["pid"] = pid if isinstance(pid, int) else None
        return status

    def stats(self) -> Dict[str, int]:
        """The counters of every session (``McpClient.stats()``: those that ended, and the live ones), and the restarts.

        The live clients are asked with no lock held.
        """
        with self._lock:
            live = [client for client in (self._client, self._starting) if client is not None]
            total, restarts = dict(self._retired), self.restarts
        for key in STAT_KEYS:
            total.setdefault(key, 0)
        for client in live:
            add_stats(total, client.stats())
        total["restarts"] = restarts
        return total

    def failure(self) -> Optional[ServerUnavailable]:
        """The error the server is failed with, or ``None``."""
        with self._lock:
            session = self._session if self.state == FAILED else None
        error = session.exception() if session is not None and session.done() else None
        return error if isinstance(error, ServerUnavailable) else None

    def running(self) -> Optional[McpClient]:
        """The running session, or ``None``."""
        with self._lock:
            return self._client if self.state == RUNNING else None

    def is_current(self, client: McpClient) -> bool:
        """True while ``client`` is the running session."""
        with self._lock:
            return not self.closed and self._client is client and self.state == RUNNING

    def for_work(self) -> Optional[Tuple[str, bool]]:
        """The state, and whether a failed server may be tried again now; ``None`` once closed."""
        with self._lock:
            return None if self.closed else (self.state, self._may_retry())

    # -- a caller needs the session ----------------------------------------------------------

    def ready(self, *, lease: bool) -> Optional[McpClient]:
        """The running session (leased when asked), or None: then ``need`` says what to do.

        The usual case of every call, answered without building a ``Need``.
        """
        with self._lock:
            client = self._client
            if self.closed or self.state != RUNNING or client is None or client.rpc.closed:
                return None
            if lease:
                client.leases.take()  # under the lock: the idle decision is taken under it too
            return client

    def need(self, deadline_at: Optional[float], *, lease: bool) -> Need:
        """A caller needs the session by ``deadline_at`` (monotonic): what it must do.

        Raises:
            TransportClosed: the registry is closed.
            ServerUnavailable: the server is failed, or restarts after ``deadline_at``.
        """
        with self._lock:
            if self.closed:
                raise TransportClosed(CLOSED)
            state, client = self.state, self._client
            if state == RUNNING and client is not None:
                if client.rpc.closed:
                    return Need(stopped=client)  # the listener has not said so yet
                if lease:
                    client.leases.take()  # under the lock: the idle decision is taken under it too
                return Need(client=client)
            if state == IDLE or (state == FAILED and self._may_retry()):
                if state == FAILED:
                    self._history.clear()
                    self._ran = False
                self.state = STARTING
                future: Future[McpClient] = Future()
                self._session = future
                return Need(start=future)
            future_now = self._session
            assert future_now is not None
            if state == FAILED:
                error = future_now.exception()
                assert isinstance(error, JsonRpcError)
                error = copy.copy(error)
                if isinstance(error, ServerUnavailable):
                    error.retry_after = self._retry_after()
                raise error
            if state == RESTARTING and deadline_at is not None and self._restart_at > deadline_at:
                wait = self._restart_at - time.monotonic()
                due = f"the next start is due in {wait:.3g}s, after this call's deadline"
                reason = f"it stopped ({self.last_error}); {due}"
                raise ServerUnavailable(self._name, reason, what="is restarting", retry_after=max(0.0, wait))
            return Need(wait=future_now)

    def waited_too_long(self, timeout: Optional[float]) -> ServerUnavailable:
        """The error of a caller whose deadline passed while the server started (or restarted)."""
        with self._lock:
            what = "is restarting" if self.state == RESTARTING else "is starting"
            last = self.last_error
        reason = f"it was not up within the call's deadline ({timeout}s)"
        if last:
            reason += f"; it had stopped: {last}"
        return ServerUnavailable(self._name, reason, timed_out=True, what=what)

    # -- a start -----------------------------------------------------------------------------

    def adopt(self, future: Future[McpClient], client: McpClient) -> bool:
        """A start made its client: ``stop()`` closes it from now on (False: the start is no longer wanted)."""
        with self._lock:
            current = not self.closed and self._session is future
            if current:
                self._starting = client
            return current

    def start_succeeded(self, future: Future[McpClient], client: McpClient) -> bool:
        """The start of ``future`` is up: running (False: no longer wanted; close the client)."""
        with self._lock:
            self._starting = None
            if self.closed or self._session is not future:
                return False
            self.state = RUNNING
            self._client = client
            self._ran = True
            return True

    def start_failed(self, future: Future[McpClient], exc: BaseException, reason: str) -> Stop:
        """The start of ``future`` failed: a restart within the bound after a backoff, or failed.

        The error of a failed server is set on ``future`` here, under the lock.
        """
        with self._lock:
            self._starting = None
            if self.closed:
                return Stop(None, None, TransportClosed(CLOSED))
            if self._session is not future:
                return Stop(None, None, None)  # superseded (a fork, a stop)
            self.last_error = reason
            now = time.monotonic()
            if self._ran:  # a restart failed: one more stop
                delay = self._settings.policy.delay(self._history.record(now, self._settings.policy.window))
                if delay is not None:
                    self._restarting(future, now, delay)
                    return Stop(future, delay, None)
            error = self._fail(exc, reason, now, restarted=self._ran)
            future.set_exception(error)
            return Stop(None, None, error)

    # -- the end of a session ------------------------------------------------------------------

    def stopped(self, client: McpClient, error: BaseException, reason: str) -> Optional[Stop]:
        """The running session of ``client`` ended: a restart after a backoff, or failed (``None``: not ours)."""
        with self._lock:
            if self.closed or self._client is not client or self.state != RUNNING:
                return None  # not the running session (our own close, a stale one)
            self._client = None
            self._retire(client)
            self.last_error = reason
            now = time.monotonic()
            delay = self._settings.policy.delay(self._history.record(now, self._settings.policy.window))
            future: Future[McpClient] = Future()
            self._session = future
            if delay is None:
                failed = self._fail(error, reason, now, restarted=True)
                future.set_exception(failed)  # under the lock: whoever sees "failed" finds the error
                return Stop(None, None, failed)
            self._restarting(future, now, delay)
            return Stop(future, delay, None)

    def restart_due(self, future: Future[McpClient]) -> Optional[float]:
        """Seconds until the restart of ``future`` (the old process is reaped), or ``None`` when it is off."""
        with self._lock:
            if self.closed or self._session is not future or self.state != RESTARTING:
                return None
            return self._restart_at - time.monotonic()

    def went_idle(self, client: McpClient) -> bool:
        """True (and ``idle``) when ``client``'s session held no lease for ``idle_timeout``."""
        idle_timeout = self._settings.idle_timeout
        with self._lock:
            if idle_timeout is None or self.closed or self._client is not client or self.state != RUNNING:
                return False
            if not client.leases.retire_if_idle(idle_timeout):
                return False
            self.state = IDLE
            self._client = None
            self._session = None
            self._retire(client)
            return True

    def stop(self) -> Tuple[Optional[Future[McpClient]], List[McpClient]]:
        """The registry closes: the start callers wait for, and the sessions to close."""
        with self._lock:
            self.closed = True
            clients = [client for client in (self._client, self._starting) if client is not None]
            self._client = None
            self._starting = None
            return self._session, clients

    def after_fork(self) -> List[McpClient]:
        """In a forked process: forget everything (no old lock taken); the parent's clients, to let go of."""
        self._lock = threading.Lock()
        inherited = [client for client in (self._client, self._starting) if client is not None]
        self._reset()
        return inherited

    # -- with the lock held ------------------------------------------------------------------

    def _may_retry(self) -> bool:
        retry = self._settings.retry_failed_after
        return retry is not None and time.monotonic() - self._failed_at >= retry

    def _retry_after(self) -> Optional[float]:
        retry = self._settings.retry_failed_after
        return None if retry is None else max(0.0, self._failed_at + retry - time.monotonic())

    def _restarting(self, future: Future[McpClient], now: float, delay: float) -> None:
        self.state = RESTARTING  # the same future goes on waiting for the next start
        self._session = future
        self.restarts += 1
        self._restart_at = now + delay

    def _fail(self, exc: Optional[BaseException], reason: str, now: float, *, restarted: bool) -> ServerUnavailable:
        self.state = FAILED  # until retry_failed_after
        self._failed_at = now
        what = "failed to start"
        if restarted:
            policy = self._settings.policy
            reason = f"it stopped more than {policy.max_restarts} times within {policy.window:g}s; last: {reason}"
            what = "is failed"
        return ServerUnavailable(
            self._name,
            reason,
            timed_out=isinstance(exc, RequestTimeout),
            what=what,
            retry_after=self._retry_after(),
            returncode=exc.returncode if isinstance(exc, TransportClosed) else None,
            stderr_tail=exc.stderr_tail if isinstance(exc, TransportClosed) else "",
        )

    def _retire(self, client: McpClient) -> None:
        stats = client.stats()
        stats["pending"] = 0
        add_stats(self._retired, stats)


__all__ = ["FAILED", "IDLE", "RESTARTING", "RUNNING", "STARTING", "STATES", "Need", "ServerState", "Stop"]
