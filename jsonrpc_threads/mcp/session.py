"""McpClient: a synchronous MCP client that works from any thread, in every era of the protocol.

Theory of operation.  An :class:`McpClient` wraps one
:class:`~jsonrpc_threads.client.JsonRpcClient` and adds the Model Context
Protocol on top.  MCP has two eras (:mod:`.protocol`):

- the *stateless* era (2026-07-28): no handshake; every request carries the
  protocol version and the client's capabilities in ``_meta``; the server
  says what it supports in ``server/discover``; results say what they are in
  ``resultType``; a server that needs the client's input answers
  ``input_required`` and the client sends the request again with the answers
  (:mod:`.mrtr`); change notifications come on ``subscriptions/listen``
  (:mod:`.subscriptions`); some results may be reused while fresh
  (:mod:`.cache`); over Streamable HTTP each POST mirrors its method and name
  into headers (:mod:`.http_headers`); :mod:`.stateless` puts one request
  through all of that;
- the *session* era (2024-11-05 .. 2025-11-25): ``initialize`` negotiates a
  version for the whole session, and the server may send the client requests
  (``roots/list``, ``sampling/createMessage``, ``elicitation/create``),
  answered by :class:`~jsonrpc_threads.mcp.client_features.ClientFeatures`.

``mode="auto"`` (the default) asks ``server/discover`` first and speaks the
stateless era when the server does; any other answer (an error that is not
one only a stateless server sends, no answer within the probe's time) falls
back to ``initialize``.  Over Streamable HTTP, an ``initialize`` whose POST is
refused with 400, 404 or 405 without a JSON-RPC error is tried once more over
the legacy HTTP+SSE transport of 2024-11-05.  ``mode="stateless"`` and
``mode="session"`` force one era.

Every method may be called from any thread, concurrently: requests are
pipelined on the one connection, never serialized behind a lock.  The era is
settled once, on the first use or in ``__enter__``, whichever comes first;
over HTTP in the session era, an expired session (404) is renewed once,
transparently, by whichever thread sees it first, and the failed request is
retried once.

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
from typing import Any, Callable, Dict, List, Mapping, Optional, Set, Tuple, Union, cast

from .. import __version__
from .._closing import Closing
from .._deadlines import check_timeout
from ..cancellation import mcp_cancellation
from ..client import DEFAULT_TIMEOUT, JsonRpcClient, Timeout
from ..errors import (
    INVALID_REQUEST,
    HttpError,
    JsonRpcError,
    ProtocolVersionError,
    RemoteError,
    RequestId,
    RequestTimeout,
    SessionExpired,
    UnsupportedProtocolVersion,
    error_from_mcp,
)
from ..transports.base import HasLegacyTransport, RevisionBound, Transport, session_of
from ..transports.config import ServerConfig, build_transport, transport_from_config
from . import protocol, skills
from .cache import ResultCache
from .client_features import ClientFeatures, Handler, Roots, server_logger
from .stateless import StatelessRequests
from .subscriptions import Subscriptions
from .tasks import TaskFuture, TaskRunner, is_task
from .types import (
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
#: How long ``mode="auto"`` waits for the answer to its ``server/discover``
#: probe over stdio before taking the server for one of the session era
#: (some of those never answer a request that comes before ``initialize``).
DISCOVER_PROBE_TIMEOUT_S = 10.0
#: HTTP statuses of a refused ``initialize`` POST that mean "try the legacy HTTP+SSE transport".
LEGACY_SSE_STATUSES = frozenset({400, 404, 405})

ProgressCallback = Callable[[Dict[str, Any]], None]

#: The notifications each subscription filter member asks for.
_LIST_CHANGED = {
    "toolsListChanged": ("tools/list",),
    "promptsListChanged": ("prompts/list",),
    "resourcesListChanged": ("resources/list", "resources/templates/list"),
}


class _ProgressRoute:
    __slots__ = ("callback", "last")

    def __init__(self, callback: ProgressCallback) -> None:
        self.callback = callback
        self.last = time.monotonic()


class McpClient(Closing):
    """A synchronous MCP client.  Thread-safe; a context manager.

    Args:
        transport_or_config: a transport (``StdioTransport``, ``HttpTransport``,
            ``SseTransport``), or a server entry of an ``mcpServers``
            configuration (``{"command": ...}``, ``{"url": ...}`` or
            ``{"type": "sse", "url": ...}``, ``${VAR}`` expanded from
            ``os.environ``, as
            :func:`~jsonrpc_threads.transports.config.transport_from_config`
            does), or an entry already parsed (a
            :class:`~jsonrpc_threads.transports.config.ServerConfig`).
        client_info: ``{"name", "version"}`` sent in ``initialize`` (session
            era) or in every request's ``_meta`` (stateless era); defaults to
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
        listen: receive the server's own notifications: over HTTP in the
            session era, open the GET stream right after the handshake; in the
            stateless era, open ``subscriptions/listen`` for the list-changed
            callbacks given (and for the resources of :meth:`subscribe_resource`).
        mode: ``"auto"`` (the stateless era when the server speaks it, else
            the ``initialize`` handshake), ``"stateless"`` or ``"session"``.
        cache: in the stateless era, reuse results while their ``ttlMs`` says
            they are fresh (list-changed notifications make them stale).
        tasks: declare the tasks extension, so a server may answer
            ``tools/call`` with a task (:meth:`call_tool` then waits for it;
            :meth:`submit_tool` returns a future).
        legacy_sse_fallback: over Streamable HTTP, when the server refuses the
            ``initialize`` POST with 400, 404 or 405, try the legacy HTTP+SSE
            transport once.

    A capability is declared only when its handler is given.  Handlers run on
    worker threads (session era) or on the thread of the request that needs
    them (stateless era), and may call back into the client.

    Raises:
        TransportClosed: when the transport cannot be started.
        ConfigError: (a ``ValueError``) for a bad configuration entry.
        ValueError: for an unknown ``mode``.
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
        mode: str = protocol.MODE_AUTO,
        cache: bool = True,
        tasks: bool = True,
        legacy_sse_fallback: bool = True,
    ) -> None:
        if mode not in protocol.MODES:
            raise ValueError(f"unknown mode {mode!r} (use 'auto', 'stateless' or 'session')")
        transport: Transport
        if isinstance(transport_or_config, ServerConfig):
            transport = build_transport(transport_or_config)
        elif isinstance(transport_or_config, Mapping):
            transport = transport_from_config(transport_or_config)
        else:
            transport = transport_or_config
        if mode == protocol.MODE_STATELESS and isinstance(transport, RevisionBound):
            transport.close()
            raise ValueError(
                f"mode='stateless' over a transport of MCP {transport.revision}, which carries the session era only"
            )
        self._client_info: Dict[str, Any] = dict(client_info or {"name": "jsonrpc_threads", "version": __version__})
        self._user_callbacks = (on_tools_changed, on_resources_changed, on_prompts_changed, on_resource_updated)
        self._features = ClientFeatures(
            roots=roots,
            on_sampling=on_sampling,
            on_elicitation=on_elicitation,
            on_log=on_log,
            on_tools_changed=self._changed("tools/list", on_tools_changed),
            on_resources_changed=self._changed(("resources/list", "resources/templates/list"), on_resources_changed),
            on_prompts_changed=self._changed("prompts/list", on_prompts_changed),
            on_resource_updated=self._updated(on_resource_updated),
            is_current_subscription=self._is_current_subscription,
        )
        self._mode = mode
        self._listen = listen
        self._legacy_sse_fallback = legacy_sse_fallback
        self._default_timeout = default_timeout
        self._tokens = itertools.count(1)
        # _lock guards _progress and _resource_subscriptions.
        self._lock = threading.Lock()
        self._progress: Dict[Any, _ProgressRoute] = {}
        self._resource_subscriptions: List[str] = []
        # _init_lock serializes the era's negotiation (and a session's renewal).
        self._init_lock = threading.Lock()
        self._initialized = False
        self._generation = 0
        self._init_result: Dict[str, Any] = {}
        self._session_version: Optional[str] = None
        self._era: Optional[str] = None
        self._cache = ResultCache() if cache else None
        self._rpc = self._make_rpc(transport)
        label = getattr(transport, "label", None) or type(transport).__name__
        self._label = str(label)
        self._stateless = StatelessRequests(
            self._features,
            self._client_info,
            tasks=tasks,
            cache=self._cache,
            over_http=self._over_http,
            refresh_tools=lambda timeout: self.list_tools(timeout=timeout),
            label=self._label,
        )
        self._subscriptions = Subscriptions(self._open_listen, self._cancel_future, self._label)
        self._tasks = TaskRunner(self._task_request, self._features, self._label)

    # -- lifecycle ------------------------------------------------------------------

    def initialize(self, *, timeout: Timeout = DEFAULT_TIMEOUT) -> Dict[str, Any]:
        """Settle the era (once; later calls return the first answer).

        Returns:
            The server's ``initialize`` result (session era) or its
            ``server/discover`` result (stateless era).

        Raises:
            ProtocolVersionError: the server speaks no revision this client
                knows (the client is closed).
            UnsupportedProtocolVersion: (``mode="stateless"``) the server
                supports no stateless revision this client speaks.
            JsonRpcError: the server refused; RequestTimeout, TransportClosed as
                for any request.
        """
        with self._init_lock:
            if not self._initialized:
                self._negotiate(timeout)
            return self._init_result

    def close(self) -> None:
        """End the session (or the subscriptions): close the transport (and reclaim its process).  Idempotent."""
        self._subscriptions.close()
        self._tasks.close()
        self._rpc.close()

    def _on_enter(self) -> None:
        """Entering ``with``: settle the era (the client is closed if it fails); leaving closes it."""
        self.initialize()

    @property
    def rpc(self) -> JsonRpcClient:
        """The underlying JSON-RPC client (for methods this class does not wrap).

        It is replaced once, during the handshake, when the server is reached
        over the legacy HTTP+SSE transport instead (``legacy_sse_fallback``).
        """
        return self._rpc

    @property
    def era(self) -> Optional[str]:
        """``"stateless"`` (2026-07-28) or ``"session"`` (``initialize``), once settled; ``None`` before."""
        return self._era

    @property
    def protocol_version(self) -> Optional[str]:
        """The revision spoken: negotiated by ``initialize``, or the stateless one of ``server/discover``
        (then the one the server named, after it refused another); ``None`` before."""
        if self._era == protocol.MODE_STATELESS:
            return self._stateless.version
        return self._session_version

    @protocol_version.setter
    def protocol_version(self, version: str) -> None:
        if self._era == protocol.MODE_STATELESS:
            self._stateless.version = version
        else:
            self._session_version = version

    @property
    def server_info(self) -> Implementation:
        """The server's identity from the handshake or ``server/discover`` (``{}`` before)."""
        return cast(Implementation, protocol.server_info_of(self._init_result))

    @property
    def server_capabilities(self) -> Dict[str, Any]:
        """The server's ``capabilities`` from the handshake or ``server/discover`` (``{}`` before)."""
        return cast(Dict[str, Any], self._init_result.get("capabilities") or {})

    @property
    def instructions(self) -> Optional[str]:
        """The server's ``instructions``, if it sent any."""
        value = self._init_result.get("instructions")
        return value if isinstance(value, str) else None

    @property
    def server_extensions(self) -> Dict[str, Any]:
        """The extensions the server declared (``capabilities.extensions``), by identifier."""
        extensions = self.server_capabilities.get("extensions")
        return dict(extensions) if isinstance(extensions, dict) else {}

    # -- requests -------------------------------------------------------------------

    def ping(self, *, timeout: Timeout = DEFAULT_TIMEOUT) -> None:
        """Check that the server answers (``ping``; in the stateless era, which has none, ``server/discover``).

        Raises as any request does.
        """
        self._ensure_initialized()
        if self._era == protocol.MODE_STATELESS:
            self._stateless.once(self._sender(), "server/discover", None, timeout)  # never from the cache
        else:
            self.request("ping", None, timeout=timeout)

    def list_tools(self, *, timeout: Timeout = DEFAULT_TIMEOUT) -> List[Tool]:
        """Every tool of the server, following ``nextCursor`` through all pages.

        In the stateless era over HTTP, a tool whose ``x-mcp-header``
        annotations are invalid is left out (with a warning in the log), as
        the 2026-07-28 transport requires.
        """
        tools = cast(List[Tool], self._paginate("tools/list", "tools", timeout))
        return self._stateless.learn_tools(tools) if self._era == protocol.MODE_STATELESS else tools

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

        In the stateless era, a server that needs input first (``input_required``)
        gets it from the client's handlers and the call is sent again; a
        server that makes a task of the call (the tasks extension) is polled
        until the task ends.  ``timeout`` bounds each request of the call (the
        time the handlers take is not counted), and, for a task, the wait for
        it in all.

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
            RequestTimeout: no result in time (the server is told: over stdio
                ``notifications/cancelled``, over HTTP the answer's stream is
                closed; a task gets ``tasks/cancel``).
            JsonRpcError: the server's protocol error (unknown tool, bad
                arguments, ...); TransportClosed when the server went away.
        """
        params: Dict[str, Any] = {"name": name, "arguments": dict(arguments or {})}
        result = self._request_with_progress(
            "tools/call", params, timeout, on_progress, reset_timeout_on_progress, max_timeout
        )
        if is_task(result):
            resolved = self._rpc._resolve_timeout(timeout)
            result = self._tasks.wait(result, None if resolved is None else time.monotonic() + resolved)
        return cast(CallToolResult, result)

    def submit_tool(
        self,
        name: str,
        arguments: Optional[Mapping[str, Any]] = None,
        *,
        timeout: Timeout = None,
        on_progress: Optional[ProgressCallback] = None,
    ) -> TaskFuture:
        """Call a tool in the background; a ``concurrent.futures.Future`` of its result.

        Meant for long-running tools: a server with the tasks extension makes
        a task of the call, and the future is settled when the task ends
        (``future.task_id`` names it); ``future.cancel()`` sends
        ``tasks/cancel``.  A server that answers at once settles the future at
        once.  ``timeout`` bounds the whole call (by default none).

        Raises:
            TransportClosed: when the client is closed.
        """
        resolved = check_timeout(timeout) if timeout is not DEFAULT_TIMEOUT else self._default_timeout
        deadline = None if resolved is None else time.monotonic() + resolved
        params: Dict[str, Any] = {"name": name, "arguments": dict(arguments or {})}

        def start() -> Any:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            return self._request_with_progress("tools/call", params, left, on_progress, False, None)

        return self._tasks.submit(start, deadline)

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
        """Ask for ``notifications/resources/updated`` about ``uri`` (see ``on_resource_updated``).

        In the stateless era this (re)opens ``subscriptions/listen`` with the
        resource added, and returns once the server acknowledged it (or
        ``timeout`` passed).
        """
        self._ensure_initialized()
        if self._era != protocol.MODE_STATELESS:
            self.request("resources/subscribe", {"uri": uri}, timeout=timeout)
            return
        with self._lock:
            if uri not in self._resource_subscriptions:
                self._resource_subscriptions.append(uri)
        self._resubscribe(self._rpc._resolve_timeout(timeout))

    def unsubscribe_resource(self, uri: str, *, timeout: Timeout = DEFAULT_TIMEOUT) -> None:
        """Stop the updates asked for by :meth:`subscribe_resource`."""
        self._ensure_initialized()
        if self._era != protocol.MODE_STATELESS:
            self.request("resources/unsubscribe", {"uri": uri}, timeout=timeout)
            return
        with self._lock:
            if uri in self._resource_subscriptions:
                self._resource_subscriptions.remove(uri)
        self._resubscribe(self._rpc._resolve_timeout(timeout))

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

    def list_skills(self, *, timeout: Optional[float] = None) -> List[Dict[str, Any]]:
        """The skill entries of a server with the skills extension (``skills/list``); no file is read.

        See :mod:`jsonrpc_threads.mcp.skills`.
        """
        return skills.list_skills(self, timeout=timeout)

    def get_skill(self, uri: str, *, timeout: Optional[float] = None) -> Dict[str, Any]:
        """The entry of the skill whose ``SKILL.md`` is at ``uri`` (``skills/get``)."""
        return skills.get_skill(self, uri, timeout=timeout)

    def load_skill(
        self, entry_or_uri: Union[str, Mapping[str, Any]], *, timeout: Optional[float] = None
    ) -> skills.LoadedSkill:
        """Read a skill's ``SKILL.md``, verified (size, digest, frontmatter) against its entry.

        Raises:
            SkillVerificationError: the content does not match the entry (it is not used).
            ImportError: PyYAML (the ``skills`` extra) is missing.
        """
        return skills.load_skill(self, entry_or_uri, timeout=timeout)

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
        """Ask the server to send log messages of ``level`` and above (``"debug"`` .. ``"emergency"``).

        In the stateless era, which has no ``logging/setLevel``, the level goes
        into the ``_meta`` of every later request
        (``io.modelcontextprotocol/logLevel``), which is how that era asks.
        """
        self._ensure_initialized()
        if self._era == protocol.MODE_STATELESS:
            self._stateless.set_log_level(level)
            return
        self.request("logging/setLevel", {"level": level}, timeout=timeout)

    def notify_roots_changed(self) -> None:
        """Tell the server the roots changed (``notifications/roots/list_changed``).

        In the stateless era there is nothing to tell: the server asks for the
        roots when it needs them, and gets them as they are then.

        Raises:
            TransportClosed: when the client is closed; over HTTP, the
                ``HttpError`` of a refused POST.
        """
        self._ensure_initialized()
        if self._era == protocol.MODE_STATELESS:
            return
        generation = self._generation
        try:
            self._rpc.notify("notifications/roots/list_changed")
        except SessionExpired:
            self._renew_session(generation, DEFAULT_TIMEOUT)
            self._rpc.notify("notifications/roots/list_changed")

    def request(
        self, method: str, params: Optional[Mapping[str, Any]] = None, *, timeout: Timeout = DEFAULT_TIMEOUT
    ) -> Any:
        """Send any MCP request and return its result (settling the era first if needed).

        In the stateless era the request gets its ``_meta``, an
        ``input_required`` answer is fulfilled and the request sent again,
        and a fresh cached result may answer it.

        Raises:
            JsonRpcError: as :meth:`JsonRpcClient.call`; the MCP codes as their
                classes (:class:`~jsonrpc_threads.errors.UnsupportedProtocolVersion`, ...).
        """
        return self._request_with_progress(
            method, dict(params) if params is not None else None, timeout, None, False, None
        )

    # -- internals: the era ---------------------------------------------------------

    def _make_rpc(self, transport: Transport) -> JsonRpcClient:
        rpc = JsonRpcClient(transport, default_timeout=self._default_timeout, cancellation=self._cancellation)
        self._features.register(rpc)
        rpc.on_notification("notifications/progress", self._route_progress)
        rpc.on_notification("notifications/subscriptions/acknowledged", self._acknowledged)
        return rpc

    def _acknowledged(self, params: Any) -> None:
        self._subscriptions.acknowledged(params)

    def _is_current_subscription(self, subscription_id: Any) -> bool:
        return self._subscriptions.is_current(subscription_id)

    def _cancellation(self, request_id: RequestId, reason: str) -> Optional[Tuple[str, Dict[str, Any]]]:
        # Over HTTP in the stateless era, closing the answer's stream is the cancellation.
        if self._era == protocol.MODE_STATELESS and self._over_http():
            return None
        return mcp_cancellation(request_id, reason)

    def _over_http(self) -> bool:
        return session_of(self._rpc.transport) is not None

    def _ensure_initialized(self) -> None:
        if not self._initialized:
            self.initialize()

    def _negotiate(self, timeout: Timeout) -> None:
        # Called with _init_lock held.
        if isinstance(self._rpc.transport, RevisionBound):
            self._handshake(timeout)  # the HTTP+SSE transport of 2024-11-05 carries the session era only
            return
        stateless_first = self._mode in (protocol.MODE_AUTO, protocol.MODE_STATELESS)
        if stateless_first and self._discover(timeout, probe=self._mode == protocol.MODE_AUTO):
            return
        self._handshake(timeout)

    def _discover(self, timeout: Timeout, *, probe: bool) -> bool:
        """``server/discover``: True when the server speaks the stateless era (and it is now settled)."""
        session = session_of(self._rpc.transport)
        if session is not None:
            session.stateless = True  # a probe takes no session id, whatever the server sends
        version = protocol.STATELESS_PROTOCOL_VERSIONS[0]
        send = self._sender()
        probe_timeout: Timeout = timeout
        if probe and session is None:
            resolved = self._rpc._resolve_timeout(timeout)
            probe_timeout = DISCOVER_PROBE_TIMEOUT_S if resolved is None else min(resolved, DISCOVER_PROBE_TIMEOUT_S)
        retried = False
        while True:
            try:
                result = self._stateless.once(send, "server/discover", None, probe_timeout, version)
            except UnsupportedProtocolVersion as exc:
                again = protocol.retry_version(exc)
                if again is not None and not retried:
                    version, retried = again, True
                    continue
                if probe and not again:
                    logger.info("%s: no stateless revision in common (%s); trying initialize", self._label, exc)
                    return self._leave_stateless(session)
                raise
            except (RequestTimeout, RemoteError, HttpError) as exc:
                if not probe or protocol.is_modern_error(exc):
                    raise
                logger.debug("%s: server/discover answered %s: a server of the session era", self._label, exc)
                return self._leave_stateless(session)
            break
        versions = protocol.discover_versions(result)
        chosen = protocol.choose_version(versions)
        if chosen is None:
            if probe:
                logger.debug(
                    "%s: server/discover named no stateless revision: a server of the session era", self._label
                )
                return self._leave_stateless(session)
            raise UnsupportedProtocolVersion(
                "the server supports no stateless revision this client speaks",
                {"supported": list(versions), "requested": version},
            )
        self._stateless.version = chosen
        self._era = protocol.MODE_STATELESS
        self._init_result = dict(result)
        self._initialized = True
        if self._cache is not None and chosen == version:
            self._cache.put("server/discover", None, result)
        self._open_subscriptions(LISTEN_OPEN_WAIT_S)
        return True

    def _leave_stateless(self, session: Any) -> bool:
        if session is not None:
            session.stateless = False
        return False

    def _handshake(self, timeout: Timeout) -> None:
        # Called with _init_lock held.
        session = session_of(self._rpc.transport)
        if session is not None:
            session.stateless = False
        params = {
            "protocolVersion": protocol.SESSION_PROTOCOL_VERSIONS[0],
            "capabilities": self._features.capabilities(),
            "clientInfo": self._client_info,
        }
        try:
            result = self._rpc.call("initialize", params, timeout=timeout)
        except HttpError as exc:
            if not self._falls_back_to_sse(exc):
                raise
            logger.info("%s: initialize refused (%s); trying the legacy HTTP+SSE transport", self._label, exc.message)
            self._switch_to_legacy_sse()
            result = self._rpc.call("initialize", params, timeout=timeout)
            session = None
        if not isinstance(result, dict):
            raise JsonRpcError(INVALID_REQUEST, "initialize answered with something that is not an object", result)
        version = result.get("protocolVersion")
        if version not in protocol.SESSION_PROTOCOL_VERSIONS:
            self.close()
            raise ProtocolVersionError(version, protocol.SESSION_PROTOCOL_VERSIONS)
        if session is not None:
            session.protocol_version = version
        self._init_result = result
        self._session_version = version
        self._era = protocol.MODE_SESSION
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
        transport = cast(HasLegacyTransport, old.transport).legacy_transport()
        self._rpc = self._make_rpc(transport)
        old.close()

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

    # -- internals: sending ---------------------------------------------------------

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
        if self._era == protocol.MODE_STATELESS:
            send = self._sender(on_progress, reset_on_progress, max_timeout)
            return self._stateless.request(send, method, params, timeout)
        generation = self._generation
        try:
            try:
                return self._send_once(method, params, timeout, on_progress, reset_on_progress, max_timeout)
            except SessionExpired:
                self._renew_session(generation, DEFAULT_TIMEOUT)
                return self._send_once(method, params, timeout, on_progress, reset_on_progress, max_timeout)
        except RemoteError as exc:  # a dual-era server uses MCP's codes in the session era too
            raise error_from_mcp(exc) from None

    def _sender(
        self,
        on_progress: Optional[ProgressCallback] = None,
        reset_on_progress: bool = False,
        max_timeout: Optional[float] = None,
    ) -> Callable[[str, Optional[Dict[str, Any]], Timeout, Optional[Mapping[str, str]]], Any]:
        """How :class:`~.stateless.StatelessRequests` sends one request (with this call's progress settings)."""

        def send(method: str, params: Optional[Dict[str, Any]], timeout: Timeout, headers: Any) -> Any:
            return self._send_once(method, params, timeout, on_progress, reset_on_progress, max_timeout, headers)

        return send

    def _task_request(self, method: str, params: Dict[str, Any], timeout: Optional[float]) -> Any:
        """A request of the tasks extension (``tasks/get`` ..., for :class:`~.tasks.TaskRunner`)."""
        return self.request(method, params, timeout=timeout)

    def _send_once(
        self,
        method: str,
        params: Optional[Dict[str, Any]],
        timeout: Timeout,
        on_progress: Optional[ProgressCallback],
        reset_on_progress: bool,
        max_timeout: Optional[float],
        headers: Optional[Mapping[str, str]] = None,
    ) -> Any:
        if on_progress is None:
            return self._rpc.call(method, params, timeout=timeout, headers=headers)
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
                return self._rpc.call(method, params, timeout=resolved, headers=headers)
            hard_limit = max_timeout if max_timeout is not None else resolved * 10
            future = self._rpc.request(method, params, timeout=hard_limit, headers=headers)
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

    # -- internals: notifications --------------------------------------------------------

    def _changed(
        self, methods: Union[str, Tuple[str, ...]], callback: Optional[Callable[[], None]]
    ) -> Callable[[], None]:
        """A list-changed handler: the cached lists go stale, then the user's callback runs."""
        names = (methods,) if isinstance(methods, str) else methods

        def changed() -> None:
            if self._cache is not None:
                self._cache.invalidate(names)
            if callback is not None:
                callback()

        return changed

    def _updated(self, callback: Optional[Callable[[str], None]]) -> Callable[[str], None]:
        def updated(uri: str) -> None:
            if self._cache is not None:
                self._cache.invalidate(("resources/read",), uri)
            if callback is not None:
                callback(uri)

        return updated

    def _subscription_filters(self) -> Dict[str, Any]:
        on_tools, on_resources, on_prompts, _ = self._user_callbacks
        filters: Dict[str, Any] = {}
        if on_tools is not None:
            filters["toolsListChanged"] = True
        if on_prompts is not None:
            filters["promptsListChanged"] = True
        if on_resources is not None:
            filters["resourcesListChanged"] = True
        with self._lock:
            if self._resource_subscriptions:
                filters["resourceSubscriptions"] = list(self._resource_subscriptions)
        return filters

    def _open_subscriptions(self, wait: Optional[float]) -> None:
        """Open ``subscriptions/listen`` for the list-changed callbacks given (stateless era)."""
        if not self._listen:
            return
        filters = self._subscription_filters()
        if filters:
            self._subscriptions.listen(filters, wait=wait)

    def _resubscribe(self, timeout: Optional[float]) -> None:
        if self._listen:
            self._subscriptions.listen(self._subscription_filters(), wait=timeout)

    def _open_listen(self, params: Dict[str, Any]) -> Future[Any]:
        full, headers = self._stateless.prepare("subscriptions/listen", params)
        return self._rpc.request("subscriptions/listen", full, timeout=None, headers=headers)

    def _cancel_future(self, future: Future[Any], reason: str) -> bool:
        return self._rpc.cancel(future, reason)

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


__all__ = [
    "DISCOVER_PROBE_TIMEOUT_S",
    "LEGACY_SSE_STATUSES",
    "LISTEN_OPEN_WAIT_S",
    "MAX_PAGES",
    "Handler",
    "McpClient",
    "ProgressCallback",
    "Roots",
    "TaskFuture",
    "server_logger",
]
