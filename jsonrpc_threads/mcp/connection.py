"""The connection under an McpClient: its JSON-RPC client, its hooks and counters, and one request within a deadline.

Theory of operation.  An ``McpConnection`` owns the
``JsonRpcClient`` that carries one MCP server,
and every step between a public call and the wire:

- the era first (``Handshake``: the ``server/discover``
  probe, ``initialize``, the legacy HTTP+SSE fallback, the renewal of an
  expired session, each a single flight);
- then the request (``McpConnection.request``): the era's ``_meta`` and
  rounds (``stateless``), its progress (``progress``), MCP's error
  classes (``errors.error_from_mcp``), and, in the session era over
  HTTP, the one retry after a renewal.

Deadlines.  Each step takes the deadline made where the public call entered
(a ``Deadline``) and spends what is left of
it; none starts a timeout of its own.  A ``RequestTimeout``
names the whole call's timeout, not what was left for its last step.

Hooks.  Every JSON-RPC client the connection makes (the first, and the
fallback's) goes through the hooks given to ``McpConnection.add_hook``,
so handlers, wire traces and close listeners belong to the connection, not to
one transport object.  ``McpConnection.stats`` counts what the server was
asked, without the probe that only told the era.

Thread-safety: every method may be called from any thread; requests are
pipelined, never serialized behind a lock.
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import CancelledError, Future
from typing import Any, Callable, Dict, List, Mapping, Optional, Protocol, Tuple

from ..cancellation import mcp_cancellation
from ..client import JsonRpcClient
from ..deadlines.flight import as_call_timeout
from ..deadlines.timeouts import Deadline
from ..errors import RemoteError, RequestId, RequestTimeout, SessionExpired
from ..transports.base import Transport
from . import protocol
from .cache import ResultCache
from .client_features import ClientFeatures
from .errors import error_from_mcp
from .handshake import Handshake, Settled
from .progress import Progress, ProgressRoutes, hard_limit
from .stateless import StatelessRequests
from .transport_roles import session_of

logger = logging.getLogger(__name__)

#: Called with every JSON-RPC client the connection makes, before its first request.
RpcHook = Callable[[JsonRpcClient], None]


class Tracker(Protocol):
    """Learns each request a call sends, to withdraw it when the call is cancelled (a ``TaskFuture``)."""

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
            through ``rpc`` directly).
        tasks: declare the tasks extension.
        cache: where results with caching hints are kept, or ``None``.
        listen: over HTTP in the session era, open the listen stream after the handshake.
        legacy_sse_fallback: try the legacy HTTP+SSE transport when ``initialize`` is refused.
        refresh_tools: lists the tools again (``refresh_tools(deadline)``, after a ``HeaderMismatch``).
        on_settled: called on the handshake's thread when the stateless era is settled.

    Attributes:
        handshake: the era (``Handshake``).
        stateless: the stateless era's requests (``StatelessRequests``).
        progress: the progress routes of the requests in flight.
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
        self.handshake = Handshake(
            self,
            mode=mode,
            features=features,
            client_info=client_info,
            stateless=self.stateless,
            cache=cache,
            listen=listen,
            legacy_sse_fallback=legacy_sse_fallback,
            on_settled=on_settled,
            label=self.label,
        )
        # _lock guards _hooks.
        self._lock = threading.Lock()
        self._hooks: List[RpcHook] = [features.register, self._route_progress]
        self._rpc = self._make_rpc(transport)

    # -- the JSON-RPC client -----------------------------------------------------------------

    @property
    def rpc(self) -> JsonRpcClient:
        """The JSON-RPC client now in use (replaced once, by the legacy HTTP+SSE fallback)."""
        return self._rpc

    def replace_rpc(self, transport: Transport) -> None:
        """Carry on over ``transport`` (the fallback): a new JSON-RPC client, made through the hooks; the old closed."""
        old, self._rpc = self._rpc, self._make_rpc(transport)
        old.close()

    def add_hook(self, hook: RpcHook) -> None:
        """Call ``hook(rpc)`` for the JSON-RPC client in use now and for every one made later."""
        with self._lock:
            self._hooks.append(hook)
        hook(self._rpc)

    def over_http(self) -> bool:
        """True over Streamable HTTP (a transport with a server session)."""
        return session_of(self._rpc.transport) is not None

    def cancel(self, future: Future[Any], reason: str) -> bool:
        """Withdraw a request sent on ``rpc`` (``JsonRpcClient.cancel``)."""
        return self._rpc.cancel(future, reason)

    def stats(self) -> Dict[str, int]:
        """``JsonRpcClient.stats()`` of ``rpc``, the era's probe not counted (see the module docstring)."""
        stats = self._rpc.stats()
        for key, delta in self.handshake.adjustments().items():
            stats[key] = max(0, stats.get(key, 0) + delta)
        return stats

    def close(self) -> None:
        """Close the JSON-RPC client (and its transport), then let a handshake still running end.  Idempotent."""
        self._rpc.close()
        self.handshake.close()

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
            JsonRpcError: as ``JsonRpcClient.call``; MCP's codes as their classes.
        """
        handshake = self.handshake
        handshake.settle(deadline)
        if handshake.era == protocol.MODE_STATELESS:
            return self.stateless.request(self._sender(progress, tracker), method, params, deadline)
        return self._in_session(method, params, deadline, progress, tracker)

    def ping(self, deadline: Deadline) -> None:
        """``ping``; in the stateless era, which has none, ``server/discover`` (never from the cache)."""
        handshake = self.handshake
        if not handshake.settled:
            handshake.settle(deadline)
        if handshake.era == protocol.MODE_STATELESS:
            self.stateless.once(self._sender(), "server/discover", None, deadline)
        else:
            self._in_session("ping", None, deadline, None, None)

    def _in_session(
        self,
        method: str,
        params: Optional[Dict[str, Any]],
        deadline: Deadline,
        progress: Optional[Progress],
        tracker: Optional[Tracker],
    ) -> Any:
        """One request of the session era, once the era is settled; a new session first should the old one expire."""
        generation = self.handshake.generation
        try:
            try:
                if progress is None and tracker is None:  # the usual request: _send's first branch, written out
                    try:
                        return self._rpc.call(method, params, timeout=deadline.remaining())
                    except RequestTimeout as exc:
                        raise as_call_timeout(exc, deadline) from None
                return self._send(method, params, deadline, None, progress, tracker)
            except SessionExpired:
                self.handshake.renew(generation, deadline)
                return self._send(method, params, deadline, None, progress, tracker)
        except RemoteError as exc:  # a dual-era server uses MCP's codes in the session era too
            raise error_from_mcp(exc) from None

    def notify(self, method: str, deadline: Deadline) -> None:
        """Send a notification of the session era (a new session first, when the old one expired)."""
        generation = self.handshake.generation
        try:
            self._rpc.notify(method, timeout=deadline.remaining())
        except SessionExpired:
            self.handshake.renew(generation, deadline)
            self._rpc.notify(method, timeout=deadline.remaining())

    def open_listen(self, params: Dict[str, Any]) -> Future[Any]:
        """Send ``subscriptions/listen`` (no deadline: it stays open) with the era's ``_meta``; its future."""
        full, headers = self.stateless.prepare("subscriptions/listen", params)
        return self._rpc.request("subscriptions/listen", full, timeout=None, headers=headers)

    def _sender(
        self, progress: Optional[Progress] = None, tracker: Optional[Tracker] = None
    ) -> Callable[[str, Optional[Dict[str, Any]], Any, Optional[Mapping[str, str]]], Any]:
        """How ``StatelessRequests`` sends one request of this call."""

        def send(method: str, params: Optional[Dict[str, Any]], deadline: Any, headers: Any) -> Any:
            return self._send(method, params, deadline, headers, progress, tracker)

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
        if progress is None and tracker is None:  # the usual request: no progress, no task
            try:
                return rpc.call(method, params, timeout=deadline.remaining(), headers=headers)
            except RequestTimeout as exc:
                raise as_call_timeout(exc, deadline) from None
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
            raise as_call_timeout(exc, sliding if sliding is not None else deadline) from None
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

    def _cancellation(self, request_id: RequestId, reason: str) -> Optional[Tuple[str, Dict[str, Any]]]:
        if self.handshake.is_quiet(request_id):
            return None  # initialize is never cancelled (MCP): given up, its late answer is dropped
        # Over HTTP in the stateless era, closing the answer's stream is the cancellation.
        if self.handshake.era == protocol.MODE_STATELESS and self.over_http():
            return None
        return mcp_cancellation(request_id, reason)


def _entered(deadline: Deadline) -> float:
    """When the call of ``deadline`` entered the library (now, for a call without a deadline)."""
    if deadline.at is None or deadline.timeout is None:
        return time.monotonic()
    return deadline.at - deadline.timeout


__all__ = ["McpConnection", "RpcHook", "Tracker"]
