"""McpClient: a synchronous MCP client session that works from any thread.

Theory of operation.  An :class:`McpClient` wraps one
:class:`~jsonrpc_threads.client.JsonRpcClient` and adds the Model Context
Protocol on top: the ``initialize`` handshake (offering the newest revision and
accepting the older ones this package knows), the typed request methods, cursor
pagination, and progress routing by ``progressToken``.  What the server may
send the client (``ping``, ``roots/list``, ``sampling/createMessage``,
``elicitation/create``; log messages, list-changed, resource-updated) is
answered by :class:`~jsonrpc_threads.mcp.client_features.ClientFeatures`.
Over Streamable HTTP the session uses the transport's
:class:`~jsonrpc_threads.transports.base.SessionTransport` side (the
negotiated version header, the session id, starting over, the listen stream).

Every method may be called from any thread, concurrently: requests are
pipelined on the one connection, never serialized behind a lock.  The handshake
runs once, on the first use or in ``__enter__``, whichever comes first; over
HTTP, an expired session (404) is renewed once, transparently, by whichever
thread sees it first, and the failed request is retried once.

Results are the wire JSON as plain dicts (typed with the TypedDicts of
:mod:`jsonrpc_threads.mcp.types`).  A tool result with ``isError: true`` is data,
not an exception; protocol errors raise :class:`~jsonrpc_threads.JsonRpcError`.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from concurrent.futures import Future
from concurrent.futures import wait as futures_wait
from typing import Any, Callable, Dict, List, Mapping, Optional, Set, Union, cast

from .. import __version__
from .._closing import Closing
from ..client import DEFAULT_TIMEOUT, JsonRpcClient, Timeout, mcp_cancellation
from ..errors import INVALID_REQUEST, JsonRpcError, ProtocolVersionError, RequestTimeout, SessionExpired
from ..transports.base import Transport, session_of
from ..transports.config import ServerConfig, build_transport, transport_from_config
from .client_features import ClientFeatures, Handler, Roots, server_logger
from .types import (
    LATEST_PROTOCOL_VERSION,
    SUPPORTED_PROTOCOL_VERSIONS,
    CallToolResult,
    CompleteResult,
    GetPromptResult,
    Implementation,
    Prompt,
    ReadResourceResult,
    Resource,
    ResourceTemplate,
    Tool,
)

logger = logging.getLogger(__name__)

#: Over HTTP, how long the handshake waits for the server to answer the GET
#: that opens the listen stream (a server that holds it unanswered costs this once).
LISTEN_OPEN_WAIT_S = 2.0

#: Upper bound on pages followed by one ``list_*`` call (a server that never
#: stops paginating is a bug, not a reason to loop forever).
MAX_PAGES = 10_000

ProgressCallback = Callable[[Dict[str, Any]], None]


class _ProgressRoute:
    __slots__ = ("callback", "last")

    def __init__(self, callback: ProgressCallback) -> None:
        self.callback = callback
        self.last = time.monotonic()


class McpClient(Closing):
    """A synchronous MCP client session.  Thread-safe; a context manager.

    Args:
        transport_or_config: a transport (``StdioTransport``, ``HttpTransport``), or
            a server entry of an ``mcpServers`` configuration (``{"command": ...}``
            or ``{"url": ...}``, ``${VAR}`` expanded from ``os.environ``, as
            :func:`~jsonrpc_threads.transports.config.transport_from_config`
            does), or an entry already parsed (a
            :class:`~jsonrpc_threads.transports.config.ServerConfig`).
        client_info: ``{"name", "version"}`` sent in ``initialize``; defaults to
            this package.
        roots: the roots offered to the server, as URIs or ``{"uri", "name"}``
            dicts, or a callable returning them (called on each ``roots/list``).
        on_sampling: ``handler(params) -> result`` for ``sampling/createMessage``.
        on_elicitation: ``handler(params) -> result`` for ``elicitation/create``;
            when it accepts, fields it left out that the requested schema gives a
            ``default`` for are filled in with that default.
        on_log: ``callback(params)`` for the server's ``notifications/message``;
            by default they go to the ``jsonrpc_threads.mcp.server_log`` logger.
        default_timeout: seconds a request may take unless the call says otherwise.
        on_tools_changed, on_resources_changed, on_prompts_changed: called (with
            no argument) on the matching ``list_changed`` notification.
        on_resource_updated: ``callback(uri)`` for ``notifications/resources/updated``.
        listen: over HTTP, when the server gave a session id, open the GET
            stream on which it sends the requests and notifications that
            belong to no call of ours (its own ``roots/list``, list-changed,
            log messages) right after the handshake; a server without one
            (405) costs one request.

    A capability is declared in ``initialize`` only when its handler is given.
    Handlers run on worker threads and may call back into the client.

    Raises:
        TransportClosed: when the transport cannot be started.
        ConfigError: (a ``ValueError``) for a bad configuration entry.
    """

    def __init__(
        self,
        transport_or_config: Union[Transport, Mapping[str, Any], ServerConfig],
        *,
        client_info: Optional[Mapping[str, Any]] = None,
        roots: Optional[Roots] = None,
        on_sampling: Optional[Handler] = None,
        on_elicitation: Optional[Handler] = None,
        on_log: Optional[Callable[[Dict[str, Any]], None]] = None,
        default_timeout: Optional[float] = 30.0,
        on_tools_changed: Optional[Callable[[], None]] = None,
        on_resources_changed: Optional[Callable[[], None]] = None,
        on_prompts_changed: Optional[Callable[[], None]] = None,
        on_resource_updated: Optional[Callable[[str], None]] = None,
        listen: bool = True,
    ) -> None:
        transport: Transport
        if isinstance(transport_or_config, ServerConfig):
            transport = build_transport(transport_or_config)
        elif isinstance(transport_or_config, Mapping):
            transport = transport_from_config(transport_or_config)
        else:
            transport = transport_or_config
        self._client_info: Dict[str, Any] = dict(client_info or {"name": "jsonrpc_threads", "version": __version__})
        self._features = ClientFeatures(
            roots=roots,
            on_sampling=on_sampling,
            on_elicitation=on_elicitation,
            on_log=on_log,
            on_tools_changed=on_tools_changed,
            on_resources_changed=on_resources_changed,
            on_prompts_changed=on_prompts_changed,
            on_resource_updated=on_resource_updated,
        )
        self._listen = listen
        self._tokens = itertools.count(1)
        # _lock guards _progress; _init_lock serializes handshakes.
        self._lock = threading.Lock()
        self._progress: Dict[Any, _ProgressRoute] = {}
        self._init_lock = threading.Lock()
        self._initialized = False
        self._generation = 0
        self._init_result: Dict[str, Any] = {}
        self.protocol_version: Optional[str] = None
        self._rpc = JsonRpcClient(transport, default_timeout=default_timeout, cancellation=mcp_cancellation)
        self._features.register(self._rpc)
        self._rpc.on_notification("notifications/progress", self._route_progress)

    # -- lifecycle ------------------------------------------------------------------

    def initialize(self, *, timeout: Timeout = DEFAULT_TIMEOUT) -> Dict[str, Any]:
        """Run the handshake (once; later calls return the first answer).

        Returns:
            The server's ``initialize`` result.

        Raises:
            ProtocolVersionError: the server speaks no revision this client knows
                (the client is closed).
            JsonRpcError: the server refused ``initialize``; RequestTimeout,
                TransportClosed as for any request.
        """
        with self._init_lock:
            if not self._initialized:
                self._handshake(timeout)
            return self._init_result

    def close(self) -> None:
        """End the session: close the transport (and reclaim its process).  Idempotent."""
        self._rpc.close()

    def __enter__(self) -> McpClient:
        """Run the handshake (closing the client if it fails); ``__exit__`` closes it."""
        try:
            self.initialize()
        except BaseException:
            self.close()
            raise
        return self

    @property
    def rpc(self) -> JsonRpcClient:
        """The underlying JSON-RPC client (for methods this class does not wrap)."""
        return self._rpc

    @property
    def server_info(self) -> Implementation:
        """``serverInfo`` from the handshake (``{}`` before it)."""
        return cast(Implementation, self._init_result.get("serverInfo") or {})

    @property
    def server_capabilities(self) -> Dict[str, Any]:
        """``capabilities`` from the handshake (``{}`` before it)."""
        return cast(Dict[str, Any], self._init_result.get("capabilities") or {})

    @property
    def instructions(self) -> Optional[str]:
        """The server's ``instructions``, if it sent any."""
        value = self._init_result.get("instructions")
        return value if isinstance(value, str) else None

    # -- requests -------------------------------------------------------------------

    def ping(self, *, timeout: Timeout = DEFAULT_TIMEOUT) -> None:
        """Check that the server answers.  Raises as any request does."""
        self.request("ping", None, timeout=timeout)

    def list_tools(self, *, timeout: Timeout = DEFAULT_TIMEOUT) -> List[Tool]:
        """Every tool of the server, following ``nextCursor`` through all pages."""
        return cast(List[Tool], self._paginate("tools/list", "tools", timeout))

    def call_tool(
        self,
        name: str,
        arguments: Optional[Mapping[str, Any]] = None,
        *,
        timeout: Timeout = DEFAULT_TIMEOUT,
        on_progress: Optional[ProgressCallback] = None,
        reset_timeout_on_progress: bool = False,
        max_timeout: Optional[float] = None,
    ) -> CallToolResult:
        """Call a tool and return its result as the server sent it.

        Args:
            name: the tool's name, as the server spells it.
            arguments: the tool's arguments (``{}`` when None).
            timeout: seconds to wait for the result.
            on_progress: ``callback(params)`` for each ``notifications/progress`` of
                this call (``progress``, ``total``, ``message``); it runs on a
                worker thread, and every progress report that arrived before the
                result has been delivered before this method returns.
            reset_timeout_on_progress: each progress report restarts ``timeout``,
                never beyond ``max_timeout`` seconds in all.
            max_timeout: the hard limit with ``reset_timeout_on_progress``
                (default: ten times ``timeout``).

        Returns:
            The ``tools/call`` result; ``isError: true`` is returned, not raised.

        Raises:
            RequestTimeout: no result in time (the server is sent
                ``notifications/cancelled``).
            JsonRpcError: the server's protocol error (unknown tool, bad
                arguments, ...); TransportClosed when the server went away.
        """
        params: Dict[str, Any] = {"name": name, "arguments": dict(arguments or {})}
        return cast(
            CallToolResult,
            self._request_with_progress(
                "tools/call", params, timeout, on_progress, reset_timeout_on_progress, max_timeout
            ),
        )

    def list_resources(self, *, timeout: Timeout = DEFAULT_TIMEOUT) -> List[Resource]:
        """Every resource of the server, through all pages."""
        return cast(List[Resource], self._paginate("resources/list", "resources", timeout))

    def list_resource_templates(self, *, timeout: Timeout = DEFAULT_TIMEOUT) -> List[ResourceTemplate]:
        """Every resource template of the server, through all pages."""
        return cast(List[ResourceTemplate], self._paginate("resources/templates/list", "resourceTemplates", timeout))

    def read_resource(self, uri: str, *, timeout: Timeout = DEFAULT_TIMEOUT) -> ReadResourceResult:
        """Read one resource: ``{"contents": [...]}``."""
        return cast(ReadResourceResult, self.request("resources/read", {"uri": uri}, timeout=timeout))

    def subscribe_resource(self, uri: str, *, timeout: Timeout = DEFAULT_TIMEOUT) -> None:
        """Ask for ``notifications/resources/updated`` about ``uri`` (see ``on_resource_updated``)."""
        self.request("resources/subscribe", {"uri": uri}, timeout=timeout)

    def unsubscribe_resource(self, uri: str, *, timeout: Timeout = DEFAULT_TIMEOUT) -> None:
        """Stop the updates asked for by :meth:`subscribe_resource`."""
        self.request("resources/unsubscribe", {"uri": uri}, timeout=timeout)

    def list_prompts(self, *, timeout: Timeout = DEFAULT_TIMEOUT) -> List[Prompt]:
        """Every prompt of the server, through all pages."""
        return cast(List[Prompt], self._paginate("prompts/list", "prompts", timeout))

    def get_prompt(
        self, name: str, arguments: Optional[Mapping[str, str]] = None, *, timeout: Timeout = DEFAULT_TIMEOUT
    ) -> GetPromptResult:
        """Render a prompt with its arguments."""
        params: Dict[str, Any] = {"name": name}
        if arguments:
            params["arguments"] = dict(arguments)
        return cast(GetPromptResult, self.request("prompts/get", params, timeout=timeout))

    def complete(
        self,
        ref: Mapping[str, Any],
        argument: Mapping[str, Any],
        *,
        context: Optional[Mapping[str, Any]] = None,
        timeout: Timeout = DEFAULT_TIMEOUT,
    ) -> CompleteResult:
        """Ask for completions of a prompt or resource-template argument.

        Args:
            ref: ``{"type": "ref/prompt", "name": ...}`` or
                ``{"type": "ref/resource", "uri": ...}``.
            argument: ``{"name": ..., "value": ...}``.
            context: ``{"arguments": {...}}`` already chosen (2025-06-18 and later).
        """
        params: Dict[str, Any] = {"ref": dict(ref), "argument": dict(argument)}
        if context is not None:
            params["context"] = dict(context)
        return cast(CompleteResult, self.request("completion/complete", params, timeout=timeout))

    def set_logging_level(self, level: str, *, timeout: Timeout = DEFAULT_TIMEOUT) -> None:
        """Ask the server to send log messages of ``level`` and above (``"debug"`` .. ``"emergency"``)."""
        self.request("logging/setLevel", {"level": level}, timeout=timeout)

    def notify_roots_changed(self) -> None:
        """Tell the server the roots changed (``notifications/roots/list_changed``).

        Raises:
            TransportClosed: when the client is closed; over HTTP, the
                ``HttpError`` of a refused POST.
        """
        self._ensure_initialized()
        generation = self._generation
        try:
            self._rpc.notify("notifications/roots/list_changed")
        except SessionExpired:
            self._renew_session(generation, DEFAULT_TIMEOUT)
            self._rpc.notify("notifications/roots/list_changed")

    def request(
        self, method: str, params: Optional[Mapping[str, Any]] = None, *, timeout: Timeout = DEFAULT_TIMEOUT
    ) -> Any:
        """Send any MCP request and return its result (initializing first if needed).

        Raises:
            JsonRpcError: as :meth:`JsonRpcClient.call`.
        """
        return self._request_with_progress(
            method, dict(params) if params is not None else None, timeout, None, False, None
        )

    # -- internals ------------------------------------------------------------------

    def _ensure_initialized(self) -> None:
        if not self._initialized:
            self.initialize()

    def _handshake(self, timeout: Timeout) -> None:
        # Called with _init_lock held.
        params = {
            "protocolVersion": LATEST_PROTOCOL_VERSION,
            "capabilities": self._features.capabilities(),
            "clientInfo": self._client_info,
        }
        result = self._rpc.call("initialize", params, timeout=timeout)
        if not isinstance(result, dict):
            raise JsonRpcError(INVALID_REQUEST, "initialize answered with something that is not an object", result)
        version = result.get("protocolVersion")
        if version not in SUPPORTED_PROTOCOL_VERSIONS:
            self.close()
            raise ProtocolVersionError(version, SUPPORTED_PROTOCOL_VERSIONS)
        session = session_of(self._rpc.transport)
        if session is not None:
            session.protocol_version = version
        self._init_result = result
        self.protocol_version = version
        self._rpc.notify("notifications/initialized")
        self._initialized = True
        # A server without sessions cannot tell our GET stream from anyone else's.
        if self._listen and session is not None and session.session_id:
            try:
                # Wait (bounded) for the server's answer to the GET: what it sends
                # there before the stream is up (its first roots/list, an
                # elicitation) would be lost.
                session.open_listen_stream(wait=LISTEN_OPEN_WAIT_S)
            except JsonRpcError as exc:  # closed meanwhile: the next request says so
                logger.debug("could not open the listen stream: %s", exc)

    def _renew_session(self, generation: int, timeout: Timeout) -> None:
        with self._init_lock:
            if self._generation != generation:
                return  # another thread already renewed it
            logger.info("MCP session expired; starting a new one")
            session = session_of(self._rpc.transport)
            if session is not None:
                session.reset_session()
                session.protocol_version = None  # negotiated anew
            self._initialized = False
            self._handshake(timeout)
            self._generation += 1

    def _request_with_progress(
        self,
        method: str,
        params: Optional[Dict[str, Any]],
        timeout: Timeout,
        on_progress: Optional[ProgressCallback],
        reset_on_progress: bool,
        max_timeout: Optional[float],
    ) -> Any:
        self._ensure_initialized()
        generation = self._generation
        try:
            return self._send_once(method, params, timeout, on_progress, reset_on_progress, max_timeout)
        except SessionExpired:
            self._renew_session(generation, DEFAULT_TIMEOUT)
            return self._send_once(method, params, timeout, on_progress, reset_on_progress, max_timeout)

    def _send_once(
        self,
        method: str,
        params: Optional[Dict[str, Any]],
        timeout: Timeout,
        on_progress: Optional[ProgressCallback],
        reset_on_progress: bool,
        max_timeout: Optional[float],
    ) -> Any:
        if on_progress is None:
            return self._rpc.call(method, params, timeout=timeout)
        token = f"jsonrpc-threads-{next(self._tokens)}"
        params = dict(params or {})
        meta = dict(params.get("_meta") or {})
        meta["progressToken"] = token
        params["_meta"] = meta
        route = _ProgressRoute(on_progress)
        with self._lock:
            self._progress[token] = route
        try:
            resolved = self._rpc._resolve_timeout(timeout)
            if not reset_on_progress or resolved is None:
                return self._rpc.call(method, params, timeout=resolved)
            hard_limit = max_timeout if max_timeout is not None else resolved * 10
            future = self._rpc.request(method, params, timeout=hard_limit)
            return self._wait_with_progress(future, method, route, resolved)
        finally:
            with self._lock:
                self._progress.pop(token, None)

    def _wait_with_progress(self, future: Future[Any], method: str, route: _ProgressRoute, timeout: float) -> Any:
        # (A request sent from a notification handler never queues its response
        # behind that handler: JsonRpcClient marks it when it is sent.)
        # concurrent.futures.wait, not future.result(timeout): since Python 3.11 the
        # future's own RequestTimeout (the hard limit) is a TimeoutError too, and
        # must not be mistaken for "no progress yet".
        while True:
            remaining = route.last + timeout - time.monotonic()
            done, _ = futures_wait((future,), timeout=max(0.0, remaining))
            if done:
                return future.result()
            if route.last + timeout > time.monotonic():
                continue  # progress arrived meanwhile: the deadline moved
            reason = f"No progress for {timeout}s"
            if self._rpc.cancel(future, reason):
                raise RequestTimeout(method, getattr(future, "request_id", None), timeout)
            return future.result()  # settled in the meantime

    def _paginate(self, method: str, key: str, timeout: Timeout) -> List[Dict[str, Any]]:
        items: List[Dict[str, Any]] = []
        cursor: Optional[str] = None
        seen: Set[str] = set()
        for _ in range(MAX_PAGES):
            params = {"cursor": cursor} if cursor is not None else None
            page = self.request(method, params, timeout=timeout)
            if not isinstance(page, dict):
                raise JsonRpcError(INVALID_REQUEST, f"{method} answered with something that is not an object", page)
            items.extend(page.get(key) or [])
            cursor = page.get("nextCursor")
            if not cursor:
                break
            if cursor in seen:
                logger.warning("%s: the server repeated cursor %r; stopping", method, cursor)
                break
            seen.add(cursor)
        return items

    def _route_progress(self, params: Any) -> None:
        if not isinstance(params, dict):
            return
        with self._lock:
            route = self._progress.get(params.get("progressToken"))
        if route is None:
            logger.debug("progress for an unknown token %r dropped", params.get("progressToken"))
            return
        route.last = time.monotonic()
        route.callback(params)


__all__ = ["LISTEN_OPEN_WAIT_S", "MAX_PAGES", "Handler", "McpClient", "ProgressCallback", "Roots", "server_logger"]
