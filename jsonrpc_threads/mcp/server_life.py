"""One supervised server's life as a pure state machine: events in, decisions out; no I/O, no threads, no clock.

Theory of operation.  A ``ServerLife`` decides everything about a server's
life that is a decision rather than an action, as ``core.protocol``'s
``Connection`` does for a request's: which state the server is in, who
starts it, who waits for a start, when it restarts or is failed, what to
close.  It never starts, stops, waits or reads a clock: each method is one
event (a caller needs the session, a start made its client, a start failed,
the session stopped, it was unused, the registry closed), the time it
happened passed in as ``now`` (``time.monotonic`` seconds), and returns what
must be done about it.  Its clients are opaque: it stores and compares
them, and never calls them.  It takes no lock: whoever drives it (the
threaded shell, ``supervisor.ServerSupervisor``, or a test) calls it from one
thread at a time and acts on what it returns.

The states (what ``status()`` reports):

- ``idle``: no session: never used yet, closed for being unused, or in a
  process forked since;
- ``starting``: the first start (or the first after ``idle``) is under way;
- ``running``: the session is up;
- ``restarting``: the server stopped and starts again after a backoff
  (``restarts``), at most ``max_restarts`` in ``restart_window``;
- ``failed``: the first start failed, or the server stopped once too often;
  its error is kept (and every caller refused with a copy of it) until
  ``retry_failed_after`` has passed;
- ``closed``: the registry closed; every event is refused or ignored
  (``status()`` goes on reporting the state the server was in).

A start is a *flight*, a number: every caller that needs the session while
it is under way waits for the same flight (``Wait``), the first one runs it
(``Start``); a restart goes on with the flight of the stop it follows, so
callers waiting across a failed restart keep waiting, within their own
deadlines.  A flight ends when its start succeeds (``running``), fails for
good (``failed``: ``Ended.failed`` is what its waiters get), or the registry
closes.
"""

from __future__ import annotations

import copy
from typing import Any, Generic, List, NamedTuple, Optional, Protocol, Tuple, TypeVar, Union

from ..errors import JsonRpcError, RequestTimeout, TransportClosed
from .errors import ServerUnavailable
from .restarts import RestartPolicy, StopHistory

IDLE = "idle"
STARTING = "starting"
RUNNING = "running"
RESTARTING = "restarting"
FAILED = "failed"
CLOSED_STATE = "closed"
#: Every state ``status()`` may report.
STATES = (IDLE, STARTING, RUNNING, RESTARTING, FAILED)
#: The message of what a closed registry refuses.
CLOSED = "ToolRegistry closed"

#: The opaque session type (the shell's ``McpClient``; any object in a test).
C = TypeVar("C")


class Use(NamedTuple):
    """Use the running session ``client`` (the shell checks that it is not closed, and leases it)."""

    client: Any


class Start(NamedTuple):
    """Run the start of ``flight`` (it begins now, in state ``starting``), then wait for it."""

    flight: int


class Wait(NamedTuple):
    """Wait for the start of ``flight``, no longer than the caller's deadline."""

    flight: int


class Refuse(NamedTuple):
    """Fail the caller with ``error`` (a fresh copy, each caller its own)."""

    error: JsonRpcError


#: What a caller that needs the session must do (``ServerLife.need``).
Need = Union[Use, Start, Wait, Refuse]


class Ended(NamedTuple):
    """What a failed start or the end of a running session asks for.

    Attributes:
        flight: the flight its callers wait for (a restart goes on with it), or ``None``.
        restart_in: seconds before ``flight`` is started again, or ``None``: no restart.
        failed: what the waiters of ``flight`` fail with (the server is
            failed, or the registry closed), or ``None``.
    """

    flight: Optional[int]
    restart_in: Optional[float]
    failed: Optional[JsonRpcError]


#: A failed start that is no longer wanted (superseded by a fork or a close): nothing to do.
NOTHING = Ended(None, None, None)


class Rules(Protocol):
    """What the machine reads of its registry's settings (``registry_settings.Settings`` is one)."""

    @property
    def policy(self) -> RestartPolicy:
        """How a stopped server is restarted."""

    @property
    def retry_failed_after(self) -> Optional[float]:
        """Seconds before a failed server is tried again (``None``: never)."""


class ServerLife(Generic[C]):
    """The life of one server.  Not thread-safe: its driver calls it one event at a time.

    Args:
        name: the server's name (for the errors).
        rules: the restart policy and ``retry_failed_after``, read at each
            event that needs them (the registry may change the latter at any time).
    """

    def __init__(self, name: str, rules: Rules) -> None:
        self.name = name
        self.rules = rules
        self._flights = 0  # the last flight number given out
        self.reset()

    def reset(self) -> None:
        """Forget everything: ``idle``, no session, no history (a process forked since)."""
        self.state = IDLE
        self.shown = IDLE  # what status() reports: the state, or the one it was closed in
        self.flight: Optional[int] = None  # the start callers wait for (starting, restarting)
        self.client: Optional[C] = None  # the running session
        self.starting: Optional[C] = None  # the session a start is making (a close closes it)
        self.ran = False  # a session ran since the server was last idle or failed
        self.history = StopHistory()
        self.restarts = 0
        self.restart_at = 0.0  # restarting: when the next start begins
        self.failed_at = 0.0
        self.failure: Optional[ServerUnavailable] = None  # failed: why
        self.last_error: Optional[str] = None

    # -- what it reports ---------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        """True once the registry closed."""
        return self.state == CLOSED_STATE

    def running(self) -> Optional[C]:
        """The running session, or ``None``."""
        return self.client if self.state == RUNNING else None

    def is_current(self, client: C) -> bool:
        """True while ``client`` is the running session."""
        return self.state == RUNNING and self.client is client

    def live(self) -> List[C]:
        """The sessions that exist now: the running one, and the one a start is making."""
        return [client for client in (self.client, self.starting) if client is not None]

    def status(self) -> Tuple[str, Optional[C], int, Optional[str]]:
        """``(state, the client whose process to report, restarts, last_error)``."""
        client = self.client if self.state == RUNNING else self.starting
        return self.shown, client, self.restarts, self.last_error

    def may_retry(self, now: float) -> bool:
        """True when a failed server may be tried again at ``now``."""
        retry = self.rules.retry_failed_after
        return retry is not None and now - self.failed_at >= retry

    def retry_after(self, now: float) -> Optional[float]:
        """Seconds from ``now`` until a failed server may be tried again (``None``: never)."""
        retry = self.rules.retry_failed_after
        return None if retry is None else max(0.0, self.failed_at + retry - now)

    def needs_start(self, now: float) -> bool:
        """True when a caller needing the session now would start it (idle, or failed and due a retry)."""
        return self.state == IDLE or (self.state == FAILED and self.may_retry(now))

    # -- a caller needs the session ----------------------------------------------------------

    def need(self, now: float, deadline_at: Optional[float]) -> Need:
        """A caller needs the session by ``deadline_at`` (``None``: no deadline): what it must do."""
        state = self.state
        if state == RUNNING and self.client is not None:
            return Use(self.client)
        if state == CLOSED_STATE:
            return Refuse(TransportClosed(CLOSED))
        if self.needs_start(now):
            if state == FAILED:  # tried again: with a clean slate
                self.history.clear()
                self.ran = False
                self.failure = None
            self._set(STARTING)
            self._flights += 1
            self.flight = self._flights
            return Start(self.flight)
        if state == FAILED:
            assert self.failure is not None
            error = copy.copy(self.failure)
            error.retry_after = self.retry_after(now)
            return Refuse(error)
        if state == RESTARTING and deadline_at is not None and self.restart_at > deadline_at:
            wait = self.restart_at - now
            due = f"the next start is due in {wait:.3g}s, after this call's deadline"
            reason = f"it stopped ({self.last_error}); {due}"
            return Refuse(ServerUnavailable(self.name, reason, what="is restarting", retry_after=max(0.0, wait)))
        assert self.flight is not None
        return Wait(self.flight)

    def waited_too_long(self, timeout: Optional[float]) -> ServerUnavailable:
        """The error of a caller whose deadline (of ``timeout`` seconds) passed while the server started."""
        what = "is restarting" if self.state == RESTARTING else "is starting"
        reason = f"it was not up within the call's deadline ({timeout}s)"
        if self.last_error:
            reason += f"; it had stopped: {self.last_error}"
        return ServerUnavailable(self.name, reason, timed_out=True, what=what)

    # -- a start -----------------------------------------------------------------------------

    def adopt(self, flight: int, client: C) -> bool:
        """The start of ``flight`` made ``client``: a close closes it from now on (False: not wanted; close it)."""
        if self.closed or self.flight != flight:
            return False
        self.starting = client
        return True

    def start_succeeded(self, flight: int, client: C) -> bool:
        """The start of ``flight`` is up: ``running`` (False: no longer wanted; close ``client``)."""
        self.starting = None
        if self.closed or self.flight != flight or self.state not in (STARTING, RESTARTING):
            return False
        self._set(RUNNING)
        self.client = client
        self.flight = None
        self.ran = True
        return True

    def start_failed(self, flight: int, error: BaseException, reason: str, now: float) -> Ended:
        """The start of ``flight`` failed (``reason``: one line): a restart after a backoff, or failed."""
        self.starting = None
        if self.closed:
            return Ended(flight, None, TransportClosed(CLOSED))
        if self.flight != flight:
            return NOTHING  # superseded (a fork)
        self.last_error = reason
        if self.ran:  # a restart failed: one more stop
            delay = self._delay(now)
            if delay is not None:
                self._restarting(now, delay)
                return Ended(flight, delay, None)
        return Ended(flight, None, self._fail(error, reason, now))

    # -- the end of a session ----------------------------------------------------------------

    def stopped(self, client: C, error: BaseException, reason: str, now: float) -> Optional[Ended]:
        """The running session ``client`` ended: a restart after a backoff, or failed (``None``: not it)."""
        if not self.is_current(client):
            return None  # our own close, a stale session, or closed
        self.client = None
        self.last_error = reason
        delay = self._delay(now)
        self._flights += 1
        self.flight = self._flights
        if delay is None:
            return Ended(self.flight, None, self._fail(error, reason, now))
        self._restarting(now, delay)
        return Ended(self.flight, delay, None)

    def restart_due(self, flight: int, now: float) -> Optional[float]:
        """Seconds from ``now`` until the restart of ``flight``, or ``None`` when it is off."""
        if self.state != RESTARTING or self.flight != flight:
            return None
        return self.restart_at - now

    def went_idle(self, client: C) -> bool:
        """The running session ``client`` was unused for ``idle_timeout``: ``idle`` (False: not the running one)."""
        if not self.is_current(client):
            return False
        self._set(IDLE)
        self.client = None
        return True

    def close(self) -> Tuple[Optional[int], List[C]]:
        """The registry closes: the flight whose waiters to fail, and the sessions to close."""
        clients = self.live()
        flight = self.flight
        self.client = self.starting = None
        self.flight = None
        self.state = CLOSED_STATE
        return flight, clients

    # -- inside ------------------------------------------------------------------------------

    def _delay(self, now: float) -> Optional[float]:
        policy = self.rules.policy
        return policy.delay(self.history.record(now, policy.window))

    def _set(self, state: str) -> None:
        self.state = self.shown = state

    def _restarting(self, now: float, delay: float) -> None:
        self._set(RESTARTING)  # the same flight goes on waiting for the next start
        self.restarts += 1
        self.restart_at = now + delay

    def _fail(self, error: BaseException, reason: str, now: float) -> ServerUnavailable:
        restarted = self.ran
        self._set(FAILED)  # until retry_failed_after
        self.flight = None
        self.failed_at = now
        what = "failed to start"
        if restarted:
            policy = self.rules.policy
            reason = f"it stopped more than {policy.max_restarts} times within {policy.window:g}s; last: {reason}"
            what = "is failed"
        self.failure = ServerUnavailable(
            self.name,
            reason,
            timed_out=isinstance(error, RequestTimeout),
            what=what,
            retry_after=self.retry_after(now),
            returncode=error.returncode if isinstance(error, TransportClosed) else None,
            stderr_tail=error.stderr_tail if isinstance(error, TransportClosed) else "",
        )
        return self.failure


__all__ = [
    "CLOSED",
    "CLOSED_STATE",
    "FAILED",
    "IDLE",
    "NOTHING",
    "RESTARTING",
    "RUNNING",
    "STARTING",
    "STATES",
    "Ended",
    "Need",
    "Refuse",
    "Rules",
    "ServerLife",
    "Start",
    "Use",
    "Wait",
]
