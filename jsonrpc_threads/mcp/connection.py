"""The connection under an McpClient: its JSON-RPC client, the era's negotiation, the session's renewal, one request.

Theory of operation.  An :class:`McpConnection` owns the
:class:`~jsonrpc_threads.client.JsonRpcClient` that carries one MCP server,
and every deadline-bound step between a call and the wire:

- **Negotiation** (:meth:`McpConnection.settle`), once, on the first use: in
  ``mode="auto"`` a ``server/discover`` probe, and the stateless era
  (2026-07-28) when the server answers it; otherwise ``initialize``.  Over
  Streamable HTTP an ``initialize`` refused with 400, 404 or 405 (no JSON-RPC
  error in the body) is tried once more over the legacy HTTP+SSE transport
  (a new JSON-RPC client, made through the same hooks).
- **Renewal**: in the session era over HTTP, a 404 on a known session
  (:class:`~jsonrpc_threads.errors.SessionExpired`) starts a new session once,
  and the failed request is sent again.
- **One request** (:meth:`McpConnection.request`): settled era first, the
  era's ``_meta`` and rounds (:mod:`.stateless`), progress (:mod:`.progress`),
  MCP's error classes (:func:`.errors.error_from_mcp`).

Deadlines.  Each of those takes the deadline made where the public call
entered (a :class:`~jsonrpc_threads._deadlines.Deadline`) and spends what is
left of it; none starts a timeout of its own.  Negotiation and renewal are
shared steps (:mod:`.flight`): one flight, each caller waiting with its own
deadline, the flight's budget the latest of theirs.  In ``mode="auto"`` the
probe and the handshake share that budget: over stdio the probe gets at most
:data:`PROBE_SHARE` of what is left (and :data:`DISCOVER_PROBE_TIMEOUT_S`),
since some servers of the session era never answer a request that comes
before ``initialize``; ``initialize`` gets the rest.  A server that answers
nothing fails once, at the deadline, naming the step that was waiting.

The probe is no failure.  Its error answer (``MethodNotFound`` from every
server of the session era), its withdrawal, and a refusal the fallback
answers are not counted by :meth:`McpConnection.stats`; a handshake request
given up at the deadline counts as the timeout it is.

Hooks.  Every JSON-RPC client the connection makes (the first, and the
fallback's) goes through the hooks given to :meth:`McpConnection.add_hook`,
so handlers, wire traces and close listeners belong to the connection, not to
one transport object.

Thread-safety: every method may be called from any thread; requests are
pipelined, never serialized behind a lock.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from concurrent.futures import CancelledError, Future
from typing import Any, Callable, Dict, List, Mapping, Optional, Protocol, Set, Tuple

from .._deadlines import Deadline
from ..cancellation import mcp_cancellation
from ..client import JsonRpcClient
from ..errors import INVALID_REQUEST, HttpError, JsonRpcError, RemoteError, RequestId, RequestTimeout, SessionExpired
from ..transports.base import Transport
from . import protocol
from .cache import ResultCache
from .client_features import ClientFeatures
from .errors import ProtocolVersionError, UnsupportedProtocolVersion, error_from_mcp
from .flight import Budget, SharedStep
from .progress import Progress, ProgressRoutes, hard_limit
from .stateless import StatelessRequests
from .transport_roles import HasLegacyTransport, RevisionBound, SessionTransport, session_of

logger = logging.getLogger(__name__)

#: Over HTTP, how long the handshake waits (within its budget) for the answer to the GET of the listen stream.
LISTEN_OPEN_WAIT_S = 2.0
#: The longest the ``mode="auto"`` probe waits over stdio before taking the server for one of the session era.
DISCOVER_PROBE_TIMEOUT_S = 10.0
#: Over stdio, the share of what is left of the budget that the probe may spend (``initialize`` gets the rest).
PROBE_SHARE = 0.5
#: HTTP statuses of a refused ``initialize`` POST that mean "try the legacy HTTP+SSE transport".
LEGACY_SSE_STATUSES = frozenset({400, 404, 405})

#: Called with every JSON-RPC client the connection makes, before its first request.
RpcHook = Callable[[JsonRpcClient], None]
#: ``on_settled(budget)``: the stateless era was settled (the client opens its subscriptions).
Settled = Callable[[Budget], None]


class Tracker(Protocol):
    """Learns each request a call sends, to withdraw it when the call is cancelled (a :class:`~.tasks.TaskFuture`)."""

    def track(self, request: Future[Any], withdraw: Callable[[Future[Any], str], bool]) -> None: ...

    def cancelled(self) -> bool: ...


class McpConnection:
    """One MCP server's connection: see the module docstring.  Thread-safe.

    Args:
        transport: the transport (owned from now on).
        mode: ``"auto"``, ``"stateless"`` or ``"session"``.
        features: the client's handlers.
        client_info: ``{"name", "version"}``.
        default_timeout: the JSON-RPC client's default (for requests sent
            through :attr:`rpc` directly).
        tasks: declare the tasks extension.
        cache: where results with caching hints are kept, or ``None``.
        listen: over HTTP in the session era, open the listen stream after the handshake.
        legacy_sse_fallback: try the legacy HTTP+SSE transport when ``initialize`` is refused.
        refresh_tools: lists the tools again (``refresh_tools(deadline)``, after a ``HeaderMismatch``).
        on_settled: called on the handshake's thread when the stateless era is settled.
    """

    def __init__(
        self,
        transport: Transport,
        *,
        mode: str,
        features: ClientFeatures,
        client_info: Mapping[str, Any],
        default_timeout: Optional[float],
        tasks: bool,
        cache: Optional[ResultCache],
        listen: bool,
        legacy_sse_fallback: bool,
        refresh_tools: Callable[[Deadline], Any],
        on_settled: Settled,
    ) -> None:
        self.label = str(getattr(transport, "label", None) or type(transport).__name__)
        self.default_timeout = default_timeout
        self._mode = mode
        self._features = features
        self._client_info = dict(client_info)
        self._cache = cache
        self._listen = listen
        self._legacy_sse_fallback = legacy_sse_fallback
        self._on_settled = on_settled
        self.progress = ProgressRoutes()
        self.stateless = StatelessRequests(
            features,
            client_info,
            tasks=tasks,
            cache=cache,
            over_http=self.over_http,
            refresh_tools=refresh_tools,
            label=self.label,
        )
        self._step: SharedStep[Dict[str, Any]] = SharedStep(self.label)
        # _lock guards _hooks, _adjust and _quiet; the era's fields are written by the handshake only.
        self._lock = threading.Lock()
        self._hooks: List[RpcHook] = [features.register, self._route_progress]
        self._adjust: Dict[str, int] = {}  # stats() corrections for the probe (see the module docstring)
        self._quiet: Set[Any] = set()  # ids of initialize requests: never cancelled on the wire (MCP forbids it)
        self._settled = False
        self._generation = 0  # sessions started so far (a renewal is for the one that expired)
        self.init_result: Dict[str, Any] = {}
        self.session_version: Optional[str] = None
        self.era: Optional[str] = None
        self._probe_note = ""  # why initialize came after a probe (added to its timeout's message)
        self._rpc = self._make_rpc(transport)

    # -- the JSON-RPC client -----------------------------------------------------------------

    @property
    def rpc(self) -> JsonRpcClient:
        """The JSON-RPC client now in use (replaced once, by the legacy HTTP+SSE fallback)."""
        return self._rpc

    def add_hook(self, hook: RpcHook) -> None:
        """Call ``hook(rpc)`` for the JSON-RPC client in use now and for every one made later."""
        with self._lock:
            self._hooks.append(hook)
        hook(self._rpc)

    def over_http(self) -> bool:
        """True over Streamable HTTP (a transport with a server session)."""
        return session_of(self._rpc.transport) is not None

    def cancel(self, future: Future[Any], reason: str) -> bool:
        """Withdraw a request sent on :attr:`rpc` (``JsonRpcClient.cancel``)."""
        return self._rpc.cancel(future, reason)

    def stats(self) -> Dict[str, int]:
        """``JsonRpcClient.stats()`` of :attr:`rpc`, the era's probe not counted (see the module docstring)."""
        stats = self._rpc.stats()
        with self._lock:
            adjust = dict(self._adjust)
        for key, delta in adjust.items():
            stats[key] = max(0, stats.get(key, 0) + delta)
        return stats

    def close(self) -> None:
        """Close the JSON-RPC client (and its transport), then let a handshake still running end.  Idempotent."""
        self._rpc.close()
        self._step.close()

    # -- the era ---------------------------------------------------------------------------

    @property
    def settled(self) -> bool:
        """True once the era is settled."""
        return self._settled

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
        if self._settled:
            return self.init_result
        return self._step.join(deadline, self._negotiate, "the handshake")

    def _negotiate(self, budget: Budget) -> Dict[str, Any]:
        # On the handshake's thread.
        if self._settled:
            return self.init_result
        if isinstance(self._rpc.transport, RevisionBound) or self.era == protocol.MODE_SESSION:
            self._handshake(budget)  # HTTP+SSE carries the session era only; a failed renewal needs no probe
        elif self._mode == protocol.MODE_SESSION or not self._discover(budget, probe=self._mode == protocol.MODE_AUTO):
            self._handshake(budget)
        return self.init_result

    def _discover(self, budget: Budget, *, probe: bool) -> bool:
        """``server/discover``: True when the server speaks the stateless era (now settled)."""
        session = session_of(self._rpc.transport)
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
                result = self.stateless.once(send, "server/discover", None, None, version)
            except UnsupportedProtocolVersion as exc:
                self._count("errors", -1)  # the negotiation's own question, answered
                again = protocol.retry_version(exc)
                if again is not None and not retried:
                    version, retried = again, True
                    continue
                if probe and not again:
                    logger.info("%s: no stateless revision in common (%s); trying initialize", self.label, exc)
                    return self._leave_stateless(session)
                raise
            except RequestTimeout:
                if not probe or budget.deadline.expired:
                    self._count("cancels", -1)
                    self._count("timeouts", +1)
                    raise
                self._count("cancels", -1)
                self._probe_note = budget.note = f"server/discover went unanswered for {cap:.3g}s before it"
                logger.debug("%s: %s; a server of the session era", self.label, self._probe_note)
                return self._leave_stateless(session)
            except (RemoteError, HttpError) as exc:
                if not probe or protocol.is_modern_error(exc):
                    raise
                self._count("errors", -1)
                logger.debug("%s: server/discover answered %s: a server of the session era", self.label, exc)
                return self._leave_stateless(session)
            break
        versions = protocol.discover_versions(result)
        chosen = protocol.choose_version(versions)
        if chosen is None:
            if probe:
                logger.debug("%s: server/discover named no stateless revision: the session era", self.label)
                return self._leave_stateless(session)
            raise UnsupportedProtocolVersion(
                "the server supports no stateless revision this client speaks",
                {"supported": list(versions), "requested": version},
            )
        self.stateless.version = chosen
        self.era = protocol.MODE_STATELESS
        self.init_result = dict(result)
        if self._cache is not None and chosen == version:
            self._cache.put("server/discover", None, result)
        self._settled = True
        self._on_settled(budget)
        return True

    def _leave_stateless(self, session: Optional[SessionTransport]) -> bool:
        if session is not None:
            session.stateless = False
        return False

    def _handshake(self, budget: Budget) -> None:
        """``initialize`` (over the legacy transport, once, when refused), then ``notifications/initialized``."""
        session = session_of(self._rpc.transport)
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
            logger.info("%s: initialize refused (%s); trying the legacy HTTP+SSE transport", self.label, exc.message)
            self._switch_to_legacy_sse()
            result = self._initialize(params, budget)
            session = None
        if not isinstance(result, dict):
            raise JsonRpcError(INVALID_REQUEST, "initialize answered with something that is not an object", result)
        version = result.get("protocolVersion")
        if version not in protocol.SESSION_PROTOCOL_VERSIONS:
            self._rpc.close()
            raise ProtocolVersionError(version, protocol.SESSION_PROTOCOL_VERSIONS)
        if session is not None:
            session.protocol_version = version
        self._rpc.notify("notifications/initialized", timeout=budget.remaining())
        self.init_result = result
        self.session_version = version
        self.era = protocol.MODE_SESSION
        self._generation += 1
        self._settled = True
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
        rpc = self._rpc
        future = rpc.request("initialize", params, timeout=None)
        request_id = getattr(future, "request_id", None)
        with self._lock:
            self._quiet.add(request_id)
        try:
            return budget.wait_for(future, "initialize", self._giving_up(rpc), hint=self._probe_note)
        except RequestTimeout:
            self._count("cancels", -1)
            self._count("timeouts", +1)
            raise
        finally:
            with self._lock:
                self._quiet.discard(request_id)

    def _falls_back_to_sse(self, exc: HttpError) -> bool:
        return (
            self._legacy_sse_fallback
            and type(exc) is HttpError
            and exc.status_code in LEGACY_SSE_STATUSES
            and isinstance(self._rpc.transport, HasLegacyTransport)
        )

    def _switch_to_legacy_sse(self) -> None:
        """Replace the Streamable HTTP transport by the legacy HTTP+SSE one (once, before any session)."""
        old = self._rpc
        assert isinstance(old.transport, HasLegacyTransport)
        self._rpc = self._make_rpc(old.transport.legacy_transport())
        with self._lock:
            self._adjust = {}  # the refused exchanges stay with the old client
        old.close()

    def _renew(self, generation: int, deadline: Deadline) -> None:
        """Start a new session after ``generation`` expired (one flight), within ``deadline``."""
        if self._generation == generation:
            self._step.join(deadline, functools.partial(self._renewal, generation), "the session's renewal")

    def _renewal(self, generation: int, budget: Budget) -> Dict[str, Any]:
        # On the handshake's thread.
        if self._generation != generation:
            return self.init_result  # renewed already
        logger.info("%s: MCP session expired; starting a new one", self.label)
        self._settled = False  # until the new session is up (a renewal that fails is tried again on the next use)
        session = session_of(self._rpc.transport)
        if session is not None:
            session.reset_session()
            session.protocol_version = None  # negotiated anew
        self._handshake(budget)
        return self.init_result

    # -- requests --------------------------------------------------------------------------

    def request(
        self,
        method: str,
        params: Optional[Dict[str, Any]],
        deadline: Deadline,
        *,
        progress: Optional[Progress] = None,
        tracker: Optional[Tracker] = None,
    ) -> Any:
        """Send one MCP request (the era settled first) and return its result, all within ``deadline``.

        Raises:
            RequestTimeout: ``deadline`` passed (its ``timeout`` is the whole call's).
            JsonRpcError: as :meth:`JsonRpcClient.call`; MCP's codes as their classes.
        """
        self.settle(deadline)
        if self.era == protocol.MODE_STATELESS:
            return self.stateless.request(self._sender(progress, tracker), method, params, deadline)
        generation = self._generation
        try:
            try:
                return self._send(method, params, deadline, None, progress, tracker)
            except SessionExpired:
                self._renew(generation, deadline)
                return self._send(method, params, deadline, None, progress, tracker)
        except RemoteError as exc:  # a dual-era server uses MCP's codes in the session era too
            raise error_from_mcp(exc) from None

    def ping(self, deadline: Deadline) -> None:
        """``ping``; in the stateless era, which has none, ``server/discover`` (never from the cache)."""
        self.settle(deadline)
        if self.era == protocol.MODE_STATELESS:
            self.stateless.once(self._sender(), "server/discover", None, deadline)
        else:
            self.request("ping", None, deadline)

    def notify(self, method: str, deadline: Deadline) -> None:
        """Send a notification of the session era (a new session first, when the old one expired)."""
        generation = self._generation
        try:
            self._rpc.notify(method, timeout=deadline.remaining())
        except SessionExpired:
            self._renew(generation, deadline)
            self._rpc.notify(method, timeout=deadline.remaining())

    def open_listen(self, params: Dict[str, Any]) -> Future[Any]:
        """Send ``subscriptions/listen`` (no deadline: it stays open) with the era's ``_meta``; its future."""
        full, headers = self.stateless.prepare("subscriptions/listen", params)
        return self._rpc.request("subscriptions/listen", full, timeout=None, headers=headers)

    def _sender(
        self, progress: Optional[Progress] = None, tracker: Optional[Tracker] = None
    ) -> Callable[[str, Optional[Dict[str, Any]], Any, Optional[Mapping[str, str]]], Any]:
        """How :class:`~.stateless.StatelessRequests` sends one request of this call."""

        def send(method: str, params: Optional[Dict[str, Any]], deadline: Any, headers: Any) -> Any:
            return self._send(method, params, deadline, headers, progress, tracker)

        return send

    def _budget_sender(
        self, budget: Budget, cap: Optional[float]
    ) -> Callable[[str, Optional[Dict[str, Any]], Any, Optional[Mapping[str, str]]], Any]:
        """How a request of the handshake is sent: no deadline of its own, waited for within the budget."""

        def send(method: str, params: Optional[Dict[str, Any]], _: Any, headers: Any) -> Any:
            rpc = self._rpc
            future = rpc.request(method, params, timeout=None, headers=headers)
            return budget.wait_for(future, method, self._giving_up(rpc), cap=cap)

        return send

    def _send(
        self,
        method: str,
        params: Optional[Dict[str, Any]],
        deadline: Deadline,
        headers: Optional[Mapping[str, str]],
        progress: Optional[Progress],
        tracker: Optional[Tracker],
    ) -> Any:
        rpc = self._rpc
        if tracker is not None and tracker.cancelled():
            raise CancelledError()
        token = route = None
        window = deadline.timeout if progress is not None and progress.reset else None  # reset on progress
        sliding = None if window is None else hard_limit(window, progress.max_timeout if progress else None)
        if progress is not None:
            token, route = self.progress.open(progress.callback, _entered(deadline))
            params = dict(params or {})
            params["_meta"] = {**dict(params.get("_meta") or {}), "progressToken": token}
        try:
            if route is not None and window is not None and sliding is not None:
                limit = _entered(deadline) + sliding - time.monotonic()
                future = rpc.request(method, params, timeout=max(0.0, limit), headers=headers)
                if tracker is not None:
                    tracker.track(future, self.cancel)
                return self.progress.wait_sliding(future, method, route, window, self.cancel)
            if tracker is not None:
                future = rpc.request(method, params, timeout=deadline.remaining(), headers=headers)
                tracker.track(future, self.cancel)
                return future.result()
            return rpc.call(method, params, timeout=deadline.remaining(), headers=headers)
        except RequestTimeout as exc:
            if window is not None and exc.timeout == window:
                raise  # no progress within the sliding timeout
            whole = sliding if sliding is not None else deadline.timeout
            if exc.timeout == whole:
                raise
            raise RequestTimeout(exc.method, exc.request_id, whole, exc.hint) from None  # the whole call's
        finally:
            if token is not None:
                self.progress.close(token)

    # -- internals -------------------------------------------------------------------------

    def _make_rpc(self, transport: Transport) -> JsonRpcClient:
        rpc = JsonRpcClient(transport, default_timeout=self.default_timeout, cancellation=self._cancellation)
        with self._lock:
            hooks = list(self._hooks)
        for hook in hooks:
            hook(rpc)
        return rpc

    def _route_progress(self, rpc: JsonRpcClient) -> None:
        rpc.on_notification("notifications/progress", self.progress.route)

    def _giving_up(self, rpc: JsonRpcClient) -> Callable[[Future[Any]], bool]:
        return lambda future: rpc.cancel(future, "The deadline passed")

    def _cancellation(self, request_id: RequestId, reason: str) -> Optional[Tuple[str, Dict[str, Any]]]:
        with self._lock:
            if request_id in self._quiet:
                return None  # initialize is never cancelled (MCP): the server is closed instead, or it answers late
        # Over HTTP in the stateless era, closing the answer's stream is the cancellation.
        if self.era == protocol.MODE_STATELESS and self.over_http():
            return None
        return mcp_cancellation(request_id, reason)

    def _count(self, key: str, delta: int) -> None:
        with self._lock:
            self._adjust[key] = self._adjust.get(key, 0) + delta


def _entered(deadline: Deadline) -> float:
    """When the call of ``deadline`` entered the library (now, for a call without a deadline)."""
    if deadline.at is None or deadline.timeout is None:
        return time.monotonic()
    return deadline.at - deadline.timeout


__all__ = [
    "DISCOVER_PROBE_TIMEOUT_S",
    "LEGACY_SSE_STATUSES",
    "LISTEN_OPEN_WAIT_S",
    "PROBE_SHARE",
    "McpConnection",
    "RpcHook",
    "Tracker",
]
