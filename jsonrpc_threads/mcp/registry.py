"""ToolRegistry: from the tool calls an LLM emitted to the tool messages of its next turn.

Theory of operation.  A registry holds the servers of an ``mcpServers``
configuration (:mod:`jsonrpc_threads.mcp.config`), one
:class:`~jsonrpc_threads.mcp.supervisor.ServerSupervisor` each, which starts
its server's :class:`McpClient` session on first use (or all at once with
``eager=True``), once however many threads need it, tries a failed start
again after ``retry_failed_after`` seconds, starts a crashed server again on
its next use, and keeps its tool list fresh (``notifications/tools/list_changed``
marks it stale).  A server that fails to start is left out (its tools are
missing) and the reason is kept in :attr:`ToolRegistry.errors` and logged; the
other servers work as usual.

This module is the facade.  It names every server's tools for the model
(:mod:`jsonrpc_threads.mcp.naming`: ``mcp__<server>__<tool>``, kept as the
server spells it when it fits ``[A-Za-z0-9_-]{1,64}``, rewritten stably
otherwise), rebuilding the names whenever a supervisor's list changes, and
routes a model's tool call to the server behind its name.  The formats of tool
lists, tool calls and tool messages are :mod:`jsonrpc_threads.mcp.llm_formats`.

Calls.  :meth:`ToolRegistry.execute` takes a tool call in the OpenAI chat
format, the Anthropic ``tool_use`` format or the OpenAI Responses
``function_call`` format, runs ``tools/call`` on the right server, and returns
the matching tool message.  Every failure (bad JSON arguments, an unknown
tool, a server that cannot start, a timeout, a server that crashed, a
protocol error, an ``isError`` result) becomes a tool message that says what
went wrong: an agent loop never gets an exception from a bad call.
:meth:`ToolRegistry.execute_all` runs many calls at once on short-lived
threads; calls to one server are pipelined on its one session (never queued
behind a lock), and the messages come back in the order of the calls.
"""

from __future__ import annotations

import copy
import functools
import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from .._closing import Closing
from ..client import DEFAULT_TIMEOUT, Timeout
from ..errors import JsonRpcError, ServerUnavailable, UnknownServer, UnknownTool
from ..transports.config import build_transport
from .config import McpConfig, PathOrMapping, load_config
from .llm_formats import (
    RegistryTool,
    anthropic_tool,
    error_message,
    explain_failure,
    explain_lookup,
    model_visible,
    openai_tool,
    parse_tool_call,
    registry_tool,
    result_text,
    tool_message,
)
from .naming import (
    MAX_TOOL_NAME_CHARS,
    NAME_HASH_CHARS,
    NAME_HASH_PREFIX_CHARS,
    TOOL_NAME_PATTERN,
    ToolKey,
    assign_names,
    namespaced_name,
    server_prefix,
)
from .session import McpClient, ProgressCallback
from .supervisor import ServerSupervisor, Settings, TransportFactory, refresh_all, stop_all
from .types import CallToolResult, Tool

logger = logging.getLogger(__name__)

#: Default seconds a tool call may take (a server's ``timeout`` overrides it).
DEFAULT_CALL_TIMEOUT_S = 60.0
#: Default seconds a server gets to start: spawn or connect, ``initialize``, ``tools/list``.
DEFAULT_STARTUP_TIMEOUT_S = 60.0
#: Default seconds before a server that failed to start is tried again.
DEFAULT_RETRY_FAILED_AFTER_S = 30.0
#: Default number of calls :meth:`ToolRegistry.execute_all` runs at once.
DEFAULT_MAX_CONCURRENCY = 16


class ToolRegistry(Closing):
    """The tools of many MCP servers, for a model; calls routed to the right server.

    Thread-safe: every method may be called from any number of threads at once.
    A context manager; :meth:`close` ends every session it started.

    Build it with :meth:`from_config`; the arguments here are the same, with a
    parsed :class:`~jsonrpc_threads.mcp.config.McpConfig` instead of a file.

    Args:
        config: the parsed configuration.
        eager: start every server now (concurrently) instead of on first use.
        default_timeout: seconds a tool call may take when neither the call
            nor the server's ``timeout`` says otherwise; ``None`` waits forever.
        startup_timeout: seconds for ``initialize`` and the first ``tools/list``.
        retry_failed_after: seconds before a server that failed to start is
            tried again on its next use (``None``: never).
        max_concurrency: the most calls :meth:`execute_all` runs at once.
        client_info: ``{"name", "version"}`` sent in ``initialize``.
        inherit_env: stdio servers get the whole environment of this process
            (plus their ``env``), not only the allowlist of ``StdioTransport``.
        transport_factory: builds the transport of a server (to add an ``auth``
            to an ``HttpTransport``, say); by default
            :func:`~jsonrpc_threads.transports.config.build_transport`
            (``StdioTransport`` for a ``command``, ``HttpTransport`` for a ``url``).
        on_tools_changed: ``callback(server)`` when a server says its tools
            changed (on a worker thread; the list is fetched again on the next
            :meth:`tools`).

    Raises:
        ValueError: ``max_concurrency`` is below 1.
    """

    def __init__(
        self,
        config: McpConfig,
        *,
        eager: bool = False,
        default_timeout: Optional[float] = DEFAULT_CALL_TIMEOUT_S,
        startup_timeout: Optional[float] = DEFAULT_STARTUP_TIMEOUT_S,
        retry_failed_after: Optional[float] = DEFAULT_RETRY_FAILED_AFTER_S,
        max_concurrency: int = DEFAULT_MAX_CONCURRENCY,
        client_info: Optional[Mapping[str, Any]] = None,
        inherit_env: bool = False,
        transport_factory: Optional[TransportFactory] = None,
        on_tools_changed: Optional[Callable[[str], None]] = None,
    ) -> None:
        if max_concurrency < 1:
            raise ValueError("max_concurrency must be at least 1")
        self.max_concurrency = max_concurrency
        self.source = config.source
        self._settings = Settings(default_timeout, startup_timeout, retry_failed_after, client_info)
        factory = transport_factory or functools.partial(build_transport, inherit_env=inherit_env)
        # _lock guards _closed, _names and _entries (each supervisor guards its own state).
        self._lock = threading.Lock()
        self._closed = False
        self._names: Dict[str, Tuple[ServerSupervisor, str]] = {}
        self._entries: List[RegistryTool] = []
        self._servers: Dict[str, ServerSupervisor] = {}
        for name in config.names:
            self._servers[name] = ServerSupervisor(
                name,
                config.servers.get(name),
                config.errors.get(name),
                self._settings,
                transport_factory=factory,
                on_listed=self._rebuild_names,
                on_tools_changed=on_tools_changed,
            )
            if name in config.errors:
                logger.warning("%s", config.errors[name])
        if eager:
            self.start()

    @classmethod
    def from_config(
        cls,
        path_or_mapping: PathOrMapping,
        *,
        eager: bool = False,
        default_timeout: Optional[float] = DEFAULT_CALL_TIMEOUT_S,
        startup_timeout: Optional[float] = DEFAULT_STARTUP_TIMEOUT_S,
        retry_failed_after: Optional[float] = DEFAULT_RETRY_FAILED_AFTER_S,
        max_concurrency: int = DEFAULT_MAX_CONCURRENCY,
        client_info: Optional[Mapping[str, Any]] = None,
        inherit_env: bool = False,
        transport_factory: Optional[TransportFactory] = None,
        on_tools_changed: Optional[Callable[[str], None]] = None,
        environ: Optional[Mapping[str, str]] = None,
    ) -> ToolRegistry:
        """Build a registry from an ``mcpServers`` file (a path) or mapping.

        Args:
            path_or_mapping: the JSON file's path, or the parsed object.
            environ: where ``${VAR}`` comes from (``os.environ`` by default).
            others: as for the class.

        Returns:
            The registry; nothing is started unless ``eager``.

        Raises:
            ConfigError: the file cannot be read or has no ``mcpServers``
                object.  A bad *entry* raises nothing: that server is
                unavailable, and :attr:`errors` says why.
        """
        return cls(
            load_config(path_or_mapping, environ=environ),
            eager=eager,
            default_timeout=default_timeout,
            startup_timeout=startup_timeout,
            retry_failed_after=retry_failed_after,
            max_concurrency=max_concurrency,
            client_info=client_info,
            inherit_env=inherit_env,
            transport_factory=transport_factory,
            on_tools_changed=on_tools_changed,
        )

    # -- settings (read by every server on its next start or call) ----------------------

    @property
    def default_timeout(self) -> Optional[float]:
        """Seconds a tool call may take when neither the call nor the server says otherwise."""
        return self._settings.default_timeout

    @default_timeout.setter
    def default_timeout(self, value: Optional[float]) -> None:
        self._settings.default_timeout = value

    @property
    def startup_timeout(self) -> Optional[float]:
        """Seconds for ``initialize`` and the first ``tools/list`` of a start."""
        return self._settings.startup_timeout

    @startup_timeout.setter
    def startup_timeout(self, value: Optional[float]) -> None:
        self._settings.startup_timeout = value

    @property
    def retry_failed_after(self) -> Optional[float]:
        """Seconds before a failed start is tried again (``None``: never)."""
        return self._settings.retry_failed_after

    @retry_failed_after.setter
    def retry_failed_after(self, value: Optional[float]) -> None:
        self._settings.retry_failed_after = value

    # -- servers ------------------------------------------------------------------------

    @property
    def servers(self) -> List[str]:
        """Every configured server's name (usable or not), in configuration order."""
        return list(self._servers)

    @property
    def errors(self) -> Dict[str, str]:
        """``{server: why it is unavailable}`` (one line) for bad entries and failed starts."""
        return {name: str(error) for name, error in self.failures.items()}

    @property
    def failures(self) -> Dict[str, JsonRpcError]:
        """``{server: exception}`` for bad entries (:class:`ConfigError`) and failed starts
        (:class:`ServerUnavailable`), in configuration order."""
        failures: Dict[str, JsonRpcError] = {}
        for name, server in self._servers.items():
            error = server.failure()
            if error is not None:
                failures[name] = error
        return failures

    def started(self, server: str) -> bool:
        """True when ``server`` has a running session (it was used, or started eagerly).

        Raises:
            UnknownServer: the name is not in the configuration.
        """
        return self._server(server).started()

    def start(self, servers: Optional[Sequence[str]] = None) -> Dict[str, str]:
        """Start the servers (all by default) that are not running, concurrently, and list their tools.

        Returns:
            :attr:`errors` afterwards.

        Raises:
            UnknownServer: a name is not in the configuration.
        """
        chosen = [self._server(name) for name in servers] if servers is not None else list(self._servers.values())
        refresh_all(chosen, max_concurrency=self.max_concurrency)
        return self.errors

    def session(self, server: str) -> McpClient:
        """The running session of ``server`` (started now if needed), for resources, prompts, ...

        Raises:
            UnknownServer, ConfigError, ServerUnavailable.
        """
        return self._server(server).session()

    # -- tools --------------------------------------------------------------------------

    def tools(self) -> List[RegistryTool]:
        """Every tool of every available server, in configuration order.

        Starts the servers not started yet (concurrently) and fetches again
        the lists that changed.  A server that cannot start contributes no
        tools (see :attr:`errors`).
        """
        refresh_all(list(self._servers.values()), max_concurrency=self.max_concurrency)
        with self._lock:
            return list(self._entries)

    def openai_tools(self) -> List[Dict[str, Any]]:
        """The tools for OpenAI function calling.

        Returns:
            ``[{"type": "function", "function": {"name", "description", "parameters"}}]``.
        """
        return [openai_tool(tool) for tool in self.tools()]

    def anthropic_tools(self) -> List[Dict[str, Any]]:
        """The tools for the Anthropic Messages API: ``[{"name", "description", "input_schema"}]``."""
        return [anthropic_tool(tool) for tool in self.tools()]

    def resolve(self, name: str) -> Tuple[str, str]:
        """The ``(server, tool)`` behind a namespaced name.

        Starts only the servers the name could belong to (by its prefix).

        Raises:
            UnknownTool: no server offers it.
            ServerUnavailable, ConfigError: the server it belongs to cannot start.
        """
        server, tool = self._resolve(name)
        return server.name, tool

    # -- calls --------------------------------------------------------------------------

    def call_tool(
        self,
        server: str,
        tool: str,
        arguments: Optional[Mapping[str, Any]] = None,
        *,
        timeout: Timeout = DEFAULT_TIMEOUT,
        on_progress: Optional[ProgressCallback] = None,
    ) -> CallToolResult:
        """Call ``tool`` (as the server spells it) on ``server`` and return its result.

        Args:
            server: the server's name in the configuration.
            tool: the tool's name as the server spells it.
            arguments: the tool's arguments.
            timeout: seconds; by default the server's ``timeout``, else the
                registry's ``default_timeout``; ``None`` waits forever.
            on_progress: ``callback(params)`` for each progress notification.

        Returns:
            The ``tools/call`` result (``isError: true`` is returned, not raised).

        Raises:
            UnknownServer, UnknownTool, ConfigError, ServerUnavailable: before
                anything is sent.
            RequestTimeout, TransportClosed, JsonRpcError: as
                :meth:`McpClient.call_tool`.
        """
        supervisor = self._server(server)
        supervisor.ensure_tool(tool)
        return supervisor.call_tool(tool, arguments, timeout, on_progress)

    def execute(self, tool_call: Any, *, timeout: Timeout = DEFAULT_TIMEOUT) -> Dict[str, Any]:
        """Run one tool call from a model and return the message for the next turn.

        Accepted calls (dicts, or SDK objects with ``model_dump()``):

        - OpenAI chat: ``{"id", "type": "function", "function": {"name", "arguments": "<JSON>"}}``
          -> ``{"role": "tool", "tool_call_id", "content": "<text>"}``;
        - Anthropic: ``{"type": "tool_use", "id", "name", "input": {...}}``
          -> ``{"type": "tool_result", "tool_use_id", "content": [blocks], "is_error"?: True}``;
        - OpenAI Responses: ``{"type": "function_call", "call_id", "name", "arguments"}``
          -> ``{"type": "function_call_output", "call_id", "output": "<text>"}``.

        Never raises for a bad call: malformed arguments, an unknown tool, an
        unavailable server, a timeout, a crash, a protocol error or an
        ``isError`` result each give a message whose text starts with
        ``Error:`` and says what went wrong (Anthropic: also ``is_error``).

        Args:
            tool_call: the call.
            timeout: as for :meth:`call_tool`.
        """
        call = parse_tool_call(tool_call)
        if call.problem is not None:
            return error_message(call, f"{call.problem}.")
        assert call.arguments is not None
        try:
            server, tool = self._resolve(call.name)
        except JsonRpcError as exc:
            return error_message(call, explain_lookup(call.name, exc))
        except Exception as exc:
            logger.exception("looking up tool %r failed", call.name)
            return error_message(call, f"looking up {call.name!r} failed ({type(exc).__name__}).")
        try:
            result = server.call_tool(tool, call.arguments, timeout, None)
        except JsonRpcError as exc:
            return error_message(call, explain_failure(server.name, tool, exc, registry_closed=self._closed))
        except Exception as exc:
            logger.exception("tool %r on server %r failed", tool, server.name)
            text = f"the call to tool {tool!r} on server {server.name!r} failed ({type(exc).__name__}: {exc})."
            return error_message(call, text)
        if not isinstance(result, Mapping):
            text = f"server {server.name!r} answered tool {tool!r} with something that is not a result."
            return error_message(call, text)
        is_error = result.get("isError") is True
        return tool_message(call, text=result_text(result), is_error=is_error, result=result)

    def execute_all(self, tool_calls: Sequence[Any], *, timeout: Timeout = DEFAULT_TIMEOUT) -> List[Dict[str, Any]]:
        """Run tool calls concurrently; return their messages in the order of the calls.

        Up to ``max_concurrency`` calls run at once, on threads that end when
        this returns.  Calls to the same server are pipelined on its session.
        Never raises for a bad call (see :meth:`execute`).
        """
        calls = list(tool_calls)
        if len(calls) <= 1:
            return [self.execute(call, timeout=timeout) for call in calls]
        workers = min(len(calls), self.max_concurrency)
        with ThreadPoolExecutor(workers, thread_name_prefix="jsonrpc-registry-call") as pool:
            futures = [pool.submit(self.execute, call, timeout=timeout) for call in calls]
            return [future.result() for future in futures]

    def close(self) -> None:
        """Close every session this registry started (and reclaim their processes).

        Starts in progress are interrupted.  Idempotent and thread-safe; bounded
        in time (each session closes concurrently with the others).
        """
        with self._lock:
            self._closed = True
        stop_all(list(self._servers.values()))

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"{len(self._servers)} servers"
        return f"<ToolRegistry {state}>"

    # -- internals ----------------------------------------------------------------------

    def _server(self, name: str) -> ServerSupervisor:
        server = self._servers.get(name)
        if server is None:
            raise UnknownServer(name, list(self._servers))
        return server

    def _rebuild_names(self) -> None:
        # Called by a supervisor whose tool list changed (it holds no lock).
        with self._lock:
            pairs: List[ToolKey] = []
            tools: Dict[ToolKey, Tuple[ServerSupervisor, Tool]] = {}
            for server in self._servers.values():
                for tool in server.tools():
                    name = tool.get("name") if isinstance(tool, dict) else None
                    if not isinstance(name, str) or not model_visible(tool):
                        continue  # unnamed, or for an MCP App's eyes only
                    pair = (server.name, name)
                    if pair not in tools:
                        pairs.append(pair)
                        tools[pair] = (server, tool)
            names = assign_names(pairs)
            self._names = {names[pair]: (tools[pair][0], pair[1]) for pair in pairs}
            self._entries = [registry_tool(names[pair], pair[0], tools[pair][1]) for pair in pairs]

    def _resolve(self, name: str) -> Tuple[ServerSupervisor, str]:
        with self._lock:
            hit = self._names.get(name)
        if hit is not None:
            return hit
        candidates = [server for server in self._servers.values() if name.startswith(server_prefix(server.name))]
        # Start the servers it could belong to; fetch again the lists already known
        # (a tool may have appeared without a list_changed notification).
        refresh_all(
            [server for server in candidates if server.config is not None],
            refresh=True,
            max_concurrency=self.max_concurrency,
        )
        with self._lock:
            hit = self._names.get(name)
        if hit is not None:
            return hit
        failures = [error for error in (server.failure() for server in candidates) if error is not None]
        if failures:
            raise copy.copy(failures[0])
        raise UnknownTool(name)


__all__ = [
    "DEFAULT_CALL_TIMEOUT_S",
    "DEFAULT_MAX_CONCURRENCY",
    "DEFAULT_RETRY_FAILED_AFTER_S",
    "DEFAULT_STARTUP_TIMEOUT_S",
    "MAX_TOOL_NAME_CHARS",
    "NAME_HASH_CHARS",
    "NAME_HASH_PREFIX_CHARS",
    "TOOL_NAME_PATTERN",
    "RegistryTool",
    "ServerUnavailable",
    "ToolRegistry",
    "TransportFactory",
    "UnknownServer",
    "UnknownTool",
    "assign_names",
    "namespaced_name",
    "result_text",
]
