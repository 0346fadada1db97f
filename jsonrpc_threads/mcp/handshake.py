"""The era of an MCP connection: its negotiation on first use, and a session's renewal, as shared steps.

Theory of operation.  ``Handshake`` settles the era once, on the first
use of the connection (``Handshake.settle``): in ``mode="auto"`` a
``server/discover`` probe, and the stateless era (2026-07-28) when the server
answers it; otherwise ``initialize``.  Over Streamable HTTP an ``initialize``
refused with 400, 404 or 405 (no JSON-RPC error in the body) is tried once
more over the legacy HTTP+SSE transport, a new JSON-RPC client the connection
makes through its hooks.  In the session era over HTTP, a 404 on a known
session (``SessionExpired``) starts a new session
(``Handshake.renew``), once however many requests saw it.

Deadlines.  Negotiation and renewal are shared steps (``SingleFlight``): one
flight on a thread of its own, each caller waiting with its own deadline,
the flight's budget the latest of theirs; every request of the step spends
what is left of that budget and starts no timeout of its own.  In
``mode="auto"`` the probe and ``initialize`` share the budget: over stdio the
probe gets at most ``PROBE_SHARE`` of what is left (and
``DISCOVER_PROBE_TIMEOUT_S``), since some servers of the session era never
answer a request that comes before ``initialize``; ``initialize`` gets the
rest.  A server that answers nothing fails once, at the deadline, naming the
step that was waiting.  ``initialize`` is never cancelled on the wire (MCP
forbids it): given up, its late answer is dropped.

The probe is no failure.  Its error answer (``MethodNotFound`` from every
server of the session era) and its withdrawal are not counted by the
connection's ``stats()`` (``Handshake.adjustments``), nor is anything the
first transport counted before a fallback; a handshake request given up at
the deadline counts as the timeout it is.

Thread-safety: every method may be called from any thread; the era's fields
are written by the step only, and read without a lock.
"""

from __future__ import annotations

import functools
import logging
import threading
from typing import Any, Callable, Dict, Mapping, Optional, Protocol, Set

from ..client import JsonRpcClient
from ..deadlines.flight import Budget, SingleFlight
from ..deadlines.timeouts import Deadline
from ..errors import INVALID_REQUEST, HttpError, JsonRpcError, RemoteError, RequestTimeout
from ..transports.base import Transport
from . import protocol
from .cache import ResultCache
from .client_features import ClientFeatures
from .errors import ProtocolVersionError, UnsupportedProtocolVersion
from .stateless import StatelessRequests
from .transport_roles import RevisionBound, SessionTransport, legacy_transport_for, session_of

logger = logging.getLogger(__name__)

#: Over HTTP, how long the handshake waits (within its budget) for the answer to the GET of the listen stream.
LISTEN_OPEN_WAIT_S = 2.0
#: The longest the ``mode="auto"`` probe waits over stdio before taking the server for one of the session era.
DISCOVER_PROBE_TIMEOUT_S = 10.0
#: Over stdio, the share of what is left of the budget that the probe may spend (``initialize`` gets the rest).
PROBE_SHARE = 0.5
#: HTTP statuses of a refused ``initialize`` POST that mean "try the legacy HTTP+SSE transport".
LEGACY_SSE_STATUSES = frozenset({400, 404, 405})

#: ``on_settled(budget)``: the stateless era was settled (the client opens its subscriptions).
Settled = Callable[[Budget], None]


class Link(Protocol):
    """What the handshake needs of its connection: the JSON-RPC client, and a new one for the fallback."""

    @property
    def rpc(self) -> JsonRpcClient: ...

    def replace_rpc(self, transport: Transport) -> None: ...


class Handshake:
    """The era of one connection: see the module docstring.  Thread-safe.

    Args:
        link: the connection.
        mode: ``"auto"``, ``"stateless"`` or ``"session"``.
        features: the client's handlers (its capabilities).
        client_info: ``{"name", "version"}``.
        stateless: the stateless era's requests (the probe goes through it).
        cache: where a fresh ``server/discover`` result is kept, or ``None``.
        listen: over HTTP in the session era, open the listen stream after ``initialize``.
        legacy_sse_fallback: try the legacy HTTP+SSE transport when ``initialize`` is refused.
        on_settled: called on the step's thread when the stateless era is settled.
        label: for logs and the step's thread.

    Attributes:
        settled: True once the era is settled (False again while an expired
            session is renewed).  Read on every request; only this class writes it.
        generation: sessions started so far (a renewal is for the one that expired).
        era: ``"stateless"`` or ``"session"`` once settled, else ``None``.
        init_result: the ``initialize`` or ``server/discover`` result (``{}`` before).
        session_version: the revision ``initialize`` negotiated, or ``None``.
    """

    def __init__(
        self,
        link: Link,
        *,
        mode: str,
        features: ClientFeatures,
        client_info: Mapping[str, Any],
        stateless: StatelessRequests,
        cache: Optional[ResultCache],
        listen: bool,
        legacy_sse_fallback: bool,
        on_settled: Settled,
        label: str,
    ) -> None:
        self._link = link
        self._mode = mode
        self._features = features
        self._client_info = dict(client_info)
        self._stateless = stateless
        self._cache = cache
        self._listen = listen
        self._legacy_sse_fallback = legacy_sse_fallback
        self._on_settled = on_settled
        self._label = label
        self._step: SingleFlight[Dict[str, Any]] = SingleFlight(
            f"jsonrpc-mcp-handshake[{label}]",
            what="the handshake",
            doing="the handshake",
            closed_message="MCP client closed",
        )
        # _lock guards _adjust and _quiet.
        self._lock = threading.Lock()
        self._adjust: Dict[str, int] = {}  # stats() corrections (see the module docstring)
        self._quiet: Set[Any] = set()  # ids of initialize requests in flight: never cancelled on the wire
        self.settled = False
        self.generation = 0
        self.era: Optional[str] = None
        self.init_result: Dict[str, Any] = {}
        self.session_version: Optional[str] = None
        self._probe_note = ""  # why initialize came after a probe (added to its timeout's message)
        self._session_era = False  # the probe said so: a handshake tried again needs no probe

    def settle(self, deadline: Deadline) -> Dict[str, Any]:
        """Settle the era (once; one flight however many threads ask); the ``initialize`` or ``server/discover`` result.

        Raises:
            RequestTimeout: ``deadline`` passed first (the handshake goes on for
                the others; its message names the step it was waiting for).
            ProtocolVersionError: the server speaks no revision this client
                knows (the connection is closed).
            UnsupportedProtocolVersion: (``mode="stateless"``) no stateless
                revision in common.
            JsonRpcError: the server refused; TransportClosed when it is gone.
        """
        if self.settled:
            return self.init_result
        return self._step.join(deadline, self._negotiate, what="the handshake")

    def renew(self, generation: int, deadline: Deadline) -> None:
        """Start a new session after ``generation`` expired (one flight), within ``deadline``.

        Raises:
            As ``settle``.
        """
        if self.generation == generation:
            self._step.join(deadline, functools.partial(self._renewal, generation), what="the session's renewal")

    def is_quiet(self, request_id: Any) -> bool:
        """True for a request whose cancellation the server must not be told of (``initialize``)."""
        with self._lock:
            return request_id in self._quiet

    def adjustments(self) -> Dict[str, int]:
        """What to add to the counters of the JSON-RPC client now in use (see the module docstring)."""
        with self._lock:
            return dict(self._adjust)

    def close(self) -> None:
        """Let a step still running end (call after closing the transport)."""
        self._step.close()

    # -- the steps (on the step's thread) ----------------------------------------------------

    def _negotiate(self, budget: Budget) -> Dict[str, Any]:
        if self.settled:
            return self.init_result
        if isinstance(self._link.rpc.transport, RevisionBound) or self._session_era:
            self._handshake(budget)  # HTTP+SSE carries the session era only; a known era needs no probe
        elif self._mode == protocol.MODE_SESSION or not self._discover(budget, probe=self._mode == protocol.MODE_AUTO):
            self._handshake(budget)
        return self.init_result

    def _discover(self, budget: Budget, *, probe: bool) -> bool:
        """``server/discover``: True when the server speaks the stateless era (now settled)."""
        session = session_of(self._link.rpc.transport)
        if session is not None:
            session.stateless = True  # a probe takes no session id, whatever the server sends
        cap: Optional[float] = None
        if probe and session is None:
            left = budget.remaining()
            cap = DISCOVER_PROBE_TIMEOUT_S if left is None else min(DISCOVER_PROBE_TIMEOUT_S, left * PROBE_SHARE)
        send = self._budget_sender(budget, cap)
        version = protocol.STATELESS_PROTOCOL_VERSIONS[0]
        retried = False
        while True:
            try:
                result = self._stateless.once(send, "server/discover", None, None, version)
            except UnsupportedProtocolVersion as exc:
                self._adjust_stats("errors", -1)  # the negotiation's own question, answered
                again = protocol.retry_version(exc)
                if again is not None and not retried:
                    version, retried = again, True
                    continue
                if probe and not again:
                    logger.info("%s: no stateless revision in common (%s); trying initialize", self._label, exc)
                    return self._leave_stateless(session)
                raise
            except RequestTimeout:
                if not probe or budget.deadline.expired:
                    self._adjust_stats("cancels", -1)
                    self._adjust_stats("timeouts", +1)
                    raise
                self._adjust_stats("cancels", -1)
                self._probe_note = budget.note = f"server/discover went unanswered for {cap:.3g}s before it"
                logger.debug("%s: %s; a server of the session era", self._label, self._probe_note)
                return self._leave_stateless(session)
            except (RemoteError, HttpError) as exc:
                if not probe or protocol.is_modern_error(exc):
                    raise
                self._adjust_stats("errors", -1)
                logger.debug("%s: server/discover answered %s: a server of the session era", self._label, exc)
                return self._leave_stateless(session)
            break
        versions = protocol.discover_versions(result)
        chosen = protocol.choose_version(versions)
        if chosen is None:
            if probe:
                logger.debug("%s: server/discover named no stateless revision: the session era", self._label)
                return self._leave_stateless(session)
            raise UnsupportedProtocolVersion(
                "the server supports no stateless revision this client speaks",
                {"supported": list(versions), "requested": version},
            )
        self._stateless.version = chosen
        self.era = protocol.MODE_STATELESS
        self.init_result = dict(result)
        if self._cache is not None and chosen == version:
            self._cache.put("server/discover", None, result)
        self.settled = True
        self._on_settled(budget)
        return True

    def _leave_stateless(self, session: Optional[SessionTransport]) -> bool:
        if session is not None:
            session.stateless = False
        self._session_era = True
        return False

    def _handshake(self, budget: Budget) -> None:
        """``initialize`` (over the legacy transport, once, when refused), then ``notifications/initialized``."""
        session = session_of(self._link.rpc.transport)
        if session is not None:
            session.stateless = False
        params = {
            "protocolVersion": protocol.SESSION_PROTOCOL_VERSIONS[0],
            "capabilities": self._features.capabilities(),
            "clientInfo": self._client_info,
        }
        try:
            result = self._initialize(params, budget)
        except HttpError as exc:
            if not self._falls_back_to_sse(exc):
                raise
            logger.info("%s: initialize refused (%s); trying the legacy HTTP+SSE transport", self._label, exc.message)
            self._switch_to_legacy_sse()
            result = self._initialize(params, budget)
            session = None
        if not isinstance(result, dict):
            raise JsonRpcError(INVALID_REQUEST, "initialize answered with something that is not an object", result)
        version = result.get("protocolVersion")
        if version not in protocol.SESSION_PROTOCOL_VERSIONS:
            self._link.rpc.close()
            raise ProtocolVersionError(version, protocol.SESSION_PROTOCOL_VERSIONS)
        if session is not None:
            session.protocol_version = version
        self._link.rpc.notify("notifications/initialized", timeout=budget.remaining())
        self.init_result = result
        self.session_version = version
        self.era = protocol.MODE_SESSION
        self._session_era = True
        self.generation += 1
        self.settled = True
        # A server without sessions cannot tell our GET stream from anyone else's.
        if self._listen and session is not None and session.session_id:
            left = budget.remaining()
            try:
                # Wait (bounded) for the server's answer to the GET: what it sends
                # there before the stream is up (its first roots/list) would be lost.
                session.open_listen_stream(wait=LISTEN_OPEN_WAIT_S if left is None else min(left, LISTEN_OPEN_WAIT_S))
            except JsonRpcError as exc:  # closed meanwhile: the next request says so
                logger.debug("could not open the listen stream: %s", exc)

    def _initialize(self, params: Dict[str, Any], budget: Budget) -> Any:
        rpc = self._link.rpc
        future = rpc.request("initialize", params, timeout=None)
        request_id = getattr(future, "request_id", None)
        with self._lock:
            self._quiet.add(request_id)
        try:
            result = budget.wait_for(future, "initialize", _giving_up(rpc), hint=self._probe_note)
        except RequestTimeout:  # given up: its id stays quiet (the cancellation is decided on another thread)
            self._adjust_stats("cancels", -1)
            self._adjust_stats("timeouts", +1)
            raise
        except BaseException:
            with self._lock:
                self._quiet.discard(request_id)
            raise
        with self._lock:
            self._quiet.discard(request_id)
        return result

    def _falls_back_to_sse(self, exc: HttpError) -> bool:
        return (
            self._legacy_sse_fallback
            and type(exc) is HttpError
            and exc.status_code in LEGACY_SSE_STATUSES
            and legacy_transport_for(self._link.rpc.transport) is not None
        )

    def _switch_to_legacy_sse(self) -> None:
        """Replace the Streamable HTTP transport by the legacy HTTP+SSE one (once, before any session)."""
        legacy = legacy_transport_for(self._link.rpc.transport)
        assert legacy is not None
        self._link.replace_rpc(legacy)
        with self._lock:
            self._adjust = {}  # the refused exchanges stay with the old client

    def _renewal(self, generation: int, budget: Budget) -> Dict[str, Any]:
        if self.generation != generation:
            return self.init_result  # renewed already
        logger.info("%s: MCP session expired; starting a new one", self._label)
        self.settled = False  # until the new session is up (a renewal that fails is tried again on the next use)
        session = session_of(self._link.rpc.transport)
        if session is not None:
            session.reset_session()
            session.protocol_version = None  # negotiated anew
        self._handshake(budget)
        return self.init_result

    def _budget_sender(
        self, budget: Budget, cap: Optional[float]
    ) -> Callable[[str, Optional[Dict[str, Any]], Any, Optional[Mapping[str, str]]], Any]:
        """How a request of the step is sent: no deadline of its own, waited for within the budget."""

        def send(method: str, params: Optional[Dict[str, Any]], _: Any, headers: Any) -> Any:
            rpc = self._link.rpc
            future = rpc.request(method, params, timeout=None, headers=headers)
            return budget.wait_for(future, method, _giving_up(rpc), cap=cap)

        return send

    def _adjust_stats(self, key: str, delta: int) -> None:
        with self._lock:
            self._adjust[key] = self._adjust.get(key, 0) + delta


def _giving_up(rpc: JsonRpcClient) -> Callable[[Any], bool]:
    return lambda future: rpc.cancel(future, "The deadline passed")


__all__ = [
    "DISCOVER_PROBE_TIMEOUT_S",
    "LEGACY_SSE_STATUSES",
    "LISTEN_OPEN_WAIT_S",
    "PROBE_SHARE",
    "Handshake",
    "Link",
    "Settled",
]
