"""McpClient: a synchronous MCP client that works from any thread, in every era of the protocol.

Theory of operation.  An ``McpClient`` is a facade: every method makes
the call's deadline where the call enters (its ``timeout``, else the
client's ``default_timeout``) and hands it, with the call, to the
``McpConnection`` underneath, which
settles the era on first use (the ``server/discover`` probe of ``mode="auto"``,
``initialize``, the legacy HTTP+SSE fallback), renews an expired session,
and sends the request.  Every step a call triggers spends what is left of
that one deadline (docs/timeouts.md lists them, call by call).

MCP has two eras (``protocol``): the *stateless* era (2026-07-28), where
every request carries the protocol version and the client's capabilities in
``_meta``, a result may ask for the client's input (``mrtr``), change
notifications come on ``subscriptions/listen`` (``subscriptions``), some
results may be reused while fresh (``cache``), and over Streamable HTTP
each POST mirrors its method and name into headers (``http_headers``);
and the *session* era (2024-11-05 .. 2025-11-25), where ``initialize``
negotiates one version and the server may send the client requests,
answered by ``ClientFeatures``.

Every method may be called from any thread, concurrently: requests are
pipelined on the one connection, never serialized behind a lock, and a call
that finds another thread's handshake under way waits for it no longer than
its own deadline.  Each call holds a lease on the session while it runs
(``leases``), so a registry never closes a session in use.

Results are the wire JSON as plain dicts (typed with the TypedDicts of
``jsonrpc_threads.mcp.types``).  A tool result with ``isError: true`` is data,
not an exception; protocol errors raise ``JsonRpcError``.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Dict, List, Mapping, Optional, Union, cast

from .. import __version__
from ..client import JsonRpcClient
from ..deadlines.flight import Budget
from ..deadlines.timeouts import DEFAULT_TIMEOUT, Deadline, Timeout, check_timeout
from ..runtime.closing import Closing
from ..transports.base import Transport
from ..transports.config import ServerConfig, build_transport, transport_from_config
from . import protocol, skills
from .cache import ResultCache, stale_resource_then, stale_then
from .catalog import LISTS, MAX_PAGES, Listing, Lists, ResourceUpdates
from .client_features import ClientFeatures, Handler, Roots, server_logger
from .connection import McpConnection
from .handshake import DISCOVER_PROBE_TIMEOUT_S, LEGACY_SSE_STATUSES, LISTEN_OPEN_WAIT_S
from .leases import Leases
from .progress import Progress, ProgressCallback
from .subscriptions import ListenFilter
from .tasks import TaskFuture, TaskRunner, is_task
from .transport_roles import RevisionBound
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


class McpClient(Closing):
    """A synchronous MCP client.  Thread-safe; a context manager.

    Args:
        transport_or_config: a transport (``StdioTransport``, ``HttpTransport``,
            ``SseTransport``), or a server entry of an ``mcpServers``
            configuration (``{"command": ...}``, ``{"url": ...}`` or
            ``{"type": "sse", "url": ...}``, ``${VAR}`` expanded from
            ``os.environ``, as
            ``transport_from_config``
            does), or an entry already parsed (a
            ``ServerConfig``).
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
            In the stateless era, where a server logs only when a request asks
            for it, a client with ``on_log`` asks for every level
            (``"debug"``, ``DEFAULT_LOG_LEVEL``)
            until ``set_logging_level`` says otherwise.
        default_timeout: seconds a call may take (the handshake it may trigger
            included) unless the call says otherwise; ``None`` waits forever.
        on_tools_changed, on_resources_changed, on_prompts_changed: called (with
            no argument) on the matching ``list_changed`` notification.
        on_resource_updated: ``callback(uri)`` for ``notifications/resources/updated``.
        listen: receive the server's own notifications: over HTTP in the
            session era, open the GET stream right after the handshake; in the
            stateless era, open ``subscriptions/listen`` for the list-changed
            callbacks given (and for the resources of ``subscribe_resource``).
        mode: ``"auto"`` (the stateless era when the server speaks it, else
            the ``initialize`` handshake), ``"stateless"`` or ``"session"``.
        cache: in the stateless era, reuse results while their ``ttlMs`` says
            they are fresh (list-changed notifications make them stale).
        tasks: declare the tasks extension, so a server may answer
            ``tools/call`` with a task (``call_tool`` then waits for it;
            ``submit_tool`` returns a future).
        legacy_sse_fallback: over Streamable HTTP, when the server refuses the
            ``initialize`` POST with 400, 404 or 405, try the legacy HTTP+SSE
            transport once.

    A capability is declared only when its handler is given.  Handlers run on
    worker threads (session era) or on the thread of the request that needs
    them (stateless era), and may call back into the client.

    Raises:
        TransportClosed: when the transport cannot be started.
        ConfigError: (a ``ValueError``) for a bad configuration entry.
        ValueError: for an unknown ``mode``, or a bad ``default_timeout``.
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
        self.default_timeout = check_timeout(default_timeout, "default_timeout")
        transport = _transport(transport_or_config)
        if mode == protocol.MODE_STATELESS and isinstance(transport, RevisionBound):
            transport.close()
            raise ValueError(
                f"mode='stateless' over a transport of MCP {transport.revision}, which carries the session era only"
            )
        self._cache = ResultCache() if cache else None
        listen_filter = ListenFilter(
            tools=on_tools_changed is not None,
            resources=on_resources_changed is not None,
            prompts=on_prompts_changed is not None,
        )
        features = ClientFeatures(
            roots=roots,
            on_sampling=on_sampling,
            on_elicitation=on_elicitation,
            on_log=on_log,
            on_tools_changed=stale_then(self._cache, ("tools/list",), on_tools_changed),
            on_resources_changed=stale_then(
                self._cache, ("resources/list", "resources/templates/list"), on_resources_changed
            ),
            on_prompts_changed=stale_then(self._cache, ("prompts/list",), on_prompts_changed),
            on_resource_updated=stale_resource_then(self._cache, on_resource_updated),
            is_current_subscription=self._is_current_subscription,
        )
        #: The calls running on this session now (see ``jsonrpc_threads.mcp.leases``).
        self.leases = Leases()
        self._connection = McpConnection(
            transport,
            mode=mode,
            features=features,
            client_info=dict(client_info or {"name": "jsonrpc_threads", "version": __version__}),
            default_timeout=self.default_timeout,
            tasks=tasks,
            cache=self._cache,
            listen=listen,
            legacy_sse_fallback=legacy_sse_fallback,
            refresh_tools=self._list_tools,
            on_settled=self._stateless_settled,
        )
        self._lists = Lists(self._connection, self._cache)
        self._updates = ResourceUpdates(self._connection, listen_filter, listen)
        self._tasks = TaskRunner(self._connection.request, features, self._connection.label)

    # -- lifecycle ------------------------------------------------------------------

    def initialize(self, *, timeout: Timeout = DEFAULT_TIMEOUT) -> Dict[str, Any]:
        """Settle the era (once; later calls return the first answer).

        One handshake runs however many threads ask; each waits for it no
        longer than its own ``timeout``, and the handshake goes on for the
        others.  The ``server/discover`` probe of ``mode="auto"``, a fallback
        to the legacy transport and ``initialize`` all spend that one timeout.

        Returns:
            The server's ``initialize`` result (session era) or its
            ``server/discover`` result (stateless era).

        Raises:
            RequestTimeout: no answer within ``timeout``; its message names the
                step that was waiting (``server/discover``, ``initialize``).
            ProtocolVersionError: the server speaks no revision this client
                knows (the client is closed).
            UnsupportedProtocolVersion: (``mode="stateless"``) the server
                supports no stateless revision this client speaks.
            JsonRpcError: the server refused; TransportClosed when it is gone.
        """
        return self._connection.handshake.settle(self._deadline(timeout))

    def close(self) -> None:
        """End the session (or the subscriptions): close the transport (and reclaim its process).  Idempotent."""
        self._updates.close()
        self._tasks.close()
        self._connection.close()

    def __repr__(self) -> str:
        rpc = self._connection.rpc
        if rpc.closed:
            state = "closed"
        elif self.era is None:
            state = "not connected"
        else:
            name = self.server_info.get("name")
            state = f"{self.protocol_version}" + (f" with {str(name)[:60]!r}" if name else "")
        return f"<McpClient {rpc.transport!r} {state}>"  # the transport's repr shows no secret

    def _on_enter(self) -> None:
        """Entering ``with``: settle the era (the client is closed if it fails); leaving closes it."""
        self.initialize()

    @property
    def connection(self) -> McpConnection:
        """The connection under this facade (its hooks, its counters, a ping that holds no lease)."""
        return self._connection

    @property
    def rpc(self) -> JsonRpcClient:
        """The underlying JSON-RPC client (for methods this class does not wrap).

        It is replaced once, during the handshake, when the server is reached
        over the legacy HTTP+SSE transport instead (``legacy_sse_fallback``).
        """
        return self._connection.rpc

    @property
    def era(self) -> Optional[str]:
        """``"stateless"`` (2026-07-28) or ``"session"`` (``initialize``), once settled; ``None`` before."""
        return self._connection.handshake.era

    @property
    def protocol_version(self) -> Optional[str]:
        """The revision spoken: negotiated by ``initialize``, or the stateless one of ``server/discover``
        (then the one the server named, after it refused another); ``None`` before."""
        if self.era == protocol.MODE_STATELESS:
            return self._connection.stateless.version
        return self._connection.handshake.session_version

    @protocol_version.setter
    def protocol_version(self, version: str) -> None:
        if self.era == protocol.MODE_STATELESS:
            self._connection.stateless.version = version
        else:
            self._connection.handshake.session_version = version

    @property
    def server_info(self) -> Implementation:
        """The server's identity from the handshake or ``server/discover`` (``{}`` before)."""
        return cast(Implementation, protocol.server_info_of(self._connection.handshake.init_result))

    @property
    def server_capabilities(self) -> Dict[str, Any]:
        """The server's ``capabilities`` from the handshake or ``server/discover`` (``{}`` before)."""
        return cast(Dict[str, Any], self._connection.handshake.init_result.get("capabilities") or {})

    @property
    def instructions(self) -> Optional[str]:
        """The server's ``instructions``, if it sent any."""
        value = self._connection.handshake.init_result.get("instructions")
        return value if isinstance(value, str) else None

    @property
    def server_extensions(self) -> Dict[str, Any]:
        """The extensions the server declared (``capabilities.extensions``), by identifier."""
        extensions = self.server_capabilities.get("extensions")
        return dict(extensions) if isinstance(extensions, dict) else {}

    def stats(self) -> Dict[str, int]:
        """``JsonRpcClient.stats()`` of the session: ``{"calls", "errors", "timeouts", "cancels", "pending"}``.

        The ``server/discover`` probe of ``mode="auto"`` is not counted as a
        failure when its answer (an error from a server of the session era)
        only told the era.
        """
        return self._connection.stats()

    # -- requests -------------------------------------------------------------------

    def ping(self, *, timeout: Timeout = DEFAULT_TIMEOUT) -> None:
        """Check that the server answers (``ping``; in the stateless era, which has none, ``server/discover``).

        Raises as any request does.
        """
        deadline = Deadline.after(timeout, self.default_timeout)
        with self.leases:
            self._connection.ping(deadline)

    def list_tools(self, *, timeout: Timeout = DEFAULT_TIMEOUT) -> List[Tool]:
        """Every tool of the server, following ``nextCursor`` through all pages (``timeout`` bounds them all).

        In the stateless era over HTTP, a tool whose ``x-mcp-header``
        annotations are invalid is left out (with a warning in the log), as
        the 2026-07-28 transport requires.  ``listing`` returns the same
        tools with how long the server says they stay fresh.

        Raises:
            ProtocolError: a malformed page (it names the server, the page and the field).
            RequestTimeout, JsonRpcError: as any request.
        """
        with self.leases:
            return self._list_tools(self._deadline(timeout))

    def call_tool(
        self,
        name: str,
        arguments: Optional[Mapping[str, Any]] = None,
        *,
        timeout: Timeout = DEFAULT_TIMEOUT,
        on_progress: Optional[ProgressCallback] = None,
        reset_timeout_on_progress: bool = False,
        max_timeout: Optional[float] = None,
        meta: Optional[Mapping[str, Any]] = None,
    ) -> CallToolResult:
        """Call a tool and return its result as the server sent it.

        In the stateless era, a server that needs input first (``input_required``)
        gets it from the client's handlers and the call is sent again; a
        server that makes a task of the call (the tasks extension) is polled
        until the task ends.  ``timeout`` bounds the whole call: the handshake
        it may trigger, every round (your handlers' time included), and the
        wait for a task.

        Args:
            name: the tool's name, as the server spells it.
            arguments: the tool's arguments, a dict (``{}`` when None); a
                model's arguments arrive as a JSON string: ``json.loads`` it first.
            timeout: seconds to wait for the result.
            on_progress: ``callback(params)`` for each ``notifications/progress`` of
                this call (``progress``, ``total``, ``message``); it runs on a
                worker thread, and every progress report that arrived before the
                result has been delivered before this method returns.
            reset_timeout_on_progress: each progress report restarts ``timeout``,
                never beyond ``max_timeout`` seconds in all.
            max_timeout: the hard limit with ``reset_timeout_on_progress``
                (default: ten times ``timeout``).
            meta: keys for the request's ``_meta`` (a W3C ``traceparent``, say).

        Returns:
            The ``tools/call`` result; ``isError: true`` is returned, not raised.

        Raises:
            TypeError: ``arguments`` is not a dict (a JSON string, say); nothing is sent.
            RequestTimeout: no result in time (the server is told: over stdio
                ``notifications/cancelled``, over HTTP the answer's stream is
                closed; a task gets ``tasks/cancel``).
            JsonRpcError: the server's protocol error (unknown tool, bad
                arguments, ...); TransportClosed when the server went away.
        """
        params: Dict[str, Any] = {"name": name, "arguments": protocol.arguments_object(arguments)}
        deadline = self._deadline(timeout)
        progress = None if on_progress is None else Progress(on_progress, reset_timeout_on_progress, max_timeout)
        if meta:
            params["_meta"] = dict(meta)
        with self.leases:
            result = self._connection.request("tools/call", params, deadline, progress=progress)
            if is_task(result):
                result = self._tasks.wait(result, deadline)
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
        (``future.task_id`` names it).  ``future.cancel()`` withdraws the
        call (the server gets ``notifications/cancelled``), or sends
        ``tasks/cancel`` once there is a task.  A server that answers at once
        settles the future at once.  ``timeout`` bounds the whole call (by
        default none): the future fails with ``RequestTimeout`` then, even
        while the client's task workers are all busy.

        Raises:
            TypeError: ``arguments`` is not a dict (a JSON string, say).
            TransportClosed: when the client is closed.
        """
        params: Dict[str, Any] = {"name": name, "arguments": protocol.arguments_object(arguments)}
        deadline = self._deadline(timeout)
        progress = None if on_progress is None else Progress(on_progress)

        def start(future: TaskFuture) -> Any:
            return self._connection.request("tools/call", params, deadline, progress=progress, tracker=future)

        self.leases.take()
        try:
            future = self._tasks.submit(start, deadline)
        except BaseException:
            self.leases.release()
            raise
        future.add_library_callback(self.leases.release)
        return future

    def set_logging_level(self, level: str, *, timeout: Timeout = DEFAULT_TIMEOUT) -> None:
        """Ask the server to send log messages of ``level`` and above (``"debug"`` .. ``"emergency"``).

        In the stateless era, which has no ``logging/setLevel``, the level goes
        into the ``_meta`` of every later request
        (``io.modelcontextprotocol/logLevel``), which is how that era asks
        (a client with ``on_log`` asks for ``"debug"`` until this is called).
        """
        deadline = self._deadline(timeout)
        with self.leases:
            self._connection.handshake.settle(deadline)
            if self.era == protocol.MODE_STATELESS:
                self._connection.stateless.set_log_level(level)
                return
            self._connection.request("logging/setLevel", {"level": level}, deadline)

    def notify_roots_changed(self, *, timeout: Timeout = DEFAULT_TIMEOUT) -> None:
        """Tell the server the roots changed (``notifications/roots/list_changed``).

        In the stateless era there is nothing to tell: the server asks for the
        roots when it needs them, and gets them as they are then.

        Raises:
            TransportClosed: when the client is closed; over HTTP, the
                ``HttpError`` of a refused POST.
            RequestTimeout: the handshake, or (HTTP) the POST, took longer than ``timeout``.
        """
        deadline = self._deadline(timeout)
        with self.leases:
            self._connection.handshake.settle(deadline)
            if self.era != protocol.MODE_STATELESS:
                self._connection.notify("notifications/roots/list_changed", deadline)

    # -- resources, prompts, completions, skills, any request (``catalog``) -------------------

    def list_resources(self, *, timeout: Timeout = DEFAULT_TIMEOUT) -> List[Resource]:
        """Every resource of the server, through all pages (``timeout`` bounds them all)."""
        return cast(List[Resource], self._paginate("resources/list", timeout))

    def list_resource_templates(self, *, timeout: Timeout = DEFAULT_TIMEOUT) -> List[ResourceTemplate]:
        """Every resource template of the server, through all pages (``timeout`` bounds them all)."""
        return cast(List[ResourceTemplate], self._paginate("resources/templates/list", timeout))

    def read_resource(self, uri: str, *, timeout: Timeout = DEFAULT_TIMEOUT) -> ReadResourceResult:
        """Read one resource: ``{"contents": [...]}``."""
        return cast(ReadResourceResult, self._call("resources/read", {"uri": uri}, timeout))

    def subscribe_resource(self, uri: str, *, timeout: Timeout = DEFAULT_TIMEOUT) -> None:
        """Ask for ``notifications/resources/updated`` about ``uri`` (see ``on_resource_updated``).

        In the stateless era this (re)opens ``subscriptions/listen`` with the
        resource added, and returns once the server acknowledged it (or
        ``timeout`` passed).
        """
        deadline = self._deadline(timeout)
        with self.leases:
            self._updates.subscribe(uri, deadline)

    def unsubscribe_resource(self, uri: str, *, timeout: Timeout = DEFAULT_TIMEOUT) -> None:
        """Stop the updates asked for by ``subscribe_resource``."""
        deadline = self._deadline(timeout)
        with self.leases:
            self._updates.unsubscribe(uri, deadline)

    def list_prompts(self, *, timeout: Timeout = DEFAULT_TIMEOUT) -> List[Prompt]:
        """Every prompt of the server, through all pages (``timeout`` bounds them all)."""
        return cast(List[Prompt], self._paginate("prompts/list", timeout))

    def get_prompt(
        self, name: str, arguments: Optional[Mapping[str, str]] = None, *, timeout: Timeout = DEFAULT_TIMEOUT
    ) -> GetPromptResult:
        """Render a prompt with its arguments."""
        params: Dict[str, Any] = {"name": name}
        if arguments:
            params["arguments"] = protocol.arguments_object(arguments)
        return cast(GetPromptResult, self._call("prompts/get", params, timeout))

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
        return cast(CompleteResult, self._call("completion/complete", params, timeout))

    def list_skills(self, *, timeout: Timeout = DEFAULT_TIMEOUT) -> List[Dict[str, Any]]:
        """The skill entries of a server with the skills extension (``skills/list``, every page); no file is read.

        ``timeout`` bounds every page; ``None`` waits forever.  See ``jsonrpc_threads.mcp.skills``.
        """
        return skills.list_skills(self, timeout=timeout)

    def get_skill(self, uri: str, *, timeout: Timeout = DEFAULT_TIMEOUT) -> Dict[str, Any]:
        """The entry of the skill whose ``SKILL.md`` is at ``uri`` (``skills/get``)."""
        return skills.get_skill(self, uri, timeout=timeout)

    def load_skill(
        self, entry_or_uri: Union[str, Mapping[str, Any]], *, timeout: Timeout = DEFAULT_TIMEOUT
    ) -> skills.LoadedSkill:
        """Read a skill's ``SKILL.md``, verified (size, digest, frontmatter) against its entry.

        ``timeout`` bounds the whole load: ``skills/get`` (given a URI), then
        ``resources/read``; ``None`` waits forever.

        Raises:
            SkillVerificationError: the content does not match the entry (it is not used).
            ImportError: PyYAML (the ``skills`` extra) is missing.
        """
        return skills.load_skill(self, entry_or_uri, timeout=timeout)

    def listing(self, method: str, *, timeout: Timeout = DEFAULT_TIMEOUT) -> Listing:
        """A whole list (every page, ``timeout`` bounding them all), and how long the server says it stays fresh.

        What ``list_tools()`` and the other ``list_*`` calls return is its
        ``items``; its ``ttl_ms``, ``expires_at`` and ``stale`` tell when to
        ask again: the smallest ``ttlMs`` of the pages (MCP 2026-07-28; in that
        era a page without one is stale at once), or no hint (``None``) from
        a server of the session era.

        Args:
            method: ``"tools/list"``, ``"prompts/list"``, ``"resources/list"``,
                ``"resources/templates/list"`` or ``"skills/list"``.

        Raises:
            ValueError: another method.
            ProtocolError: a malformed page (it names the server, the page and the field).
            RequestTimeout, JsonRpcError: as any request.
        """
        if method not in LISTS:
            raise ValueError(f"{method!r} is not a list this client follows (one of: {', '.join(LISTS)})")
        deadline = self._deadline(timeout)
        with self.leases:
            return self._lists.fetch(method, deadline)

    def request(
        self, method: str, params: Optional[Mapping[str, Any]] = None, *, timeout: Timeout = DEFAULT_TIMEOUT
    ) -> Any:
        """Send any MCP request and return its result (settling the era first if needed).

        In the stateless era the request gets its ``_meta``, an
        ``input_required`` answer is fulfilled and the request sent again,
        and a fresh cached result may answer it.  ``timeout`` bounds all of it.

        Raises:
            JsonRpcError: as ``JsonRpcClient.call``; the MCP codes as their
                classes (``UnsupportedProtocolVersion``, ...).
        """
        return self._call(method, dict(params) if params is not None else None, timeout)

    # -- internals ------------------------------------------------------------------

    def _deadline(self, timeout: Timeout) -> Deadline:
        """The deadline of a call that enters now with ``timeout`` (the client's default for the default)."""
        return Deadline.after(timeout, self.default_timeout)

    def _call(self, method: str, params: Optional[Dict[str, Any]], timeout: Timeout) -> Any:
        """One request within the call's deadline, holding a lease."""
        deadline = self._deadline(timeout)
        with self.leases:
            return self._connection.request(method, params, deadline)

    def _paginate(self, method: str, timeout: Timeout) -> List[Dict[str, Any]]:
        deadline = self._deadline(timeout)
        with self.leases:
            return self._lists.fetch(method, deadline).items

    def _list_tools(self, deadline: Deadline) -> List[Tool]:
        return cast(List[Tool], self._lists.fetch("tools/list", deadline).items)

    def _stateless_settled(self, budget: Budget) -> None:
        """The stateless era was settled (on the handshake's thread): listen for the callbacks given."""
        self._updates.settled(budget)

    def _is_current_subscription(self, subscription_id: Any) -> bool:
        return self._updates.is_current(subscription_id)


def _transport(transport_or_config: Union[Transport, Mapping[str, Any], ServerConfig]) -> Transport:
    if isinstance(transport_or_config, ServerConfig):
        return build_transport(transport_or_config)
    if isinstance(transport_or_config, Mapping):
        return transport_from_config(transport_or_config)
    return transport_or_config


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
