"""ToolRegistry: the tools of many MCP servers for a model, and the model's tool calls routed to them.

Theory of operation.  A registry holds the servers of an ``mcpServers``
configuration (``jsonrpc_threads.mcp.config``), one
``ServerSupervisor`` each, which starts
its server's ``McpClient`` session on first use (or all at once with
``eager=True``), once however many threads need it, restarts it with a
backoff when it stops (at most ``max_restarts`` in ``restart_window``, then
failed until ``retry_failed_after``), closes it after ``idle_timeout`` with no
call on it, pings it every ``health_interval``, and keeps its tool list fresh
(``notifications/tools/list_changed`` marks it stale).  A server that fails
to start is left out (its tools are missing) and the reason is kept in
``ToolRegistry.errors`` and logged; the other servers work as usual.
``ToolRegistry.status`` reports each server's state for a health
endpoint, ``ToolRegistry.stats`` its counters.

The registry names every server's tools for the model (``naming``:
``mcp__<server>__<tool>``) in its routing table (``tool_index``), and
runs a model's tool calls (``model_calls``: every failure a tool
message, never an exception); the formats are ``llm_formats``.  Calls to
one server are pipelined on its one session, never queued behind a lock.

Parts.  ``ToolRegistry`` is a facade over parts that own their state, each
held and delegated to: ``registry_servers`` (the supervisors by name, what
they report, and the work on many at once: starting or listing them
concurrently, stopping them all), ``model_calls`` (the model's face) and
``registry_settings`` (what every supervisor reads at each start and call).

Deadlines.  Every public call makes its deadline as it enters (its
``timeout``, else the server's ``timeout``, else ``default_timeout``) and
every step it triggers spends what is left: the lookup of a tool's name
(which may start servers and fetch their lists), the wait for a start or a
restart, the call itself.  A start is shared by every caller (one flight on a
background worker, bounded by ``startup_timeout``); each waits for it no
longer than its own deadline, or fails with
``ServerUnavailable``, and the start goes on
for the others.

Fork.  In a process forked after the registry was made (gunicorn
``--preload``, uWSGI, ``multiprocessing``), the registry lets go of the
parent's sessions (closing only this process's copies of their pipes and
sockets: the parent's servers live on) and starts its own on first use.
"""

from __future__ import annotations

import functools
import logging
import threading
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from ..deadlines.timeouts import DEFAULT_TIMEOUT, Deadline, Timeout, check_timeout
from ..errors import JsonRpcError
from ..observe import WireMessage
from ..runtime import fork as _fork
from ..runtime.closing import Closing
from ..transports.config import build_transport
from .background import Background
from .config import McpConfig, PathOrMapping, load_config
from .errors import ServerUnavailable, UnknownServer, UnknownTool
from .llm_formats import RegistryTool, result_text
from .model_calls import ModelToolCalls
from .naming import (
    MAX_TOOL_NAME_CHARS,
    NAME_HASH_CHARS,
    NAME_HASH_PREFIX_CHARS,
    TOOL_NAME_PATTERN,
    assign_names,
    namespaced_name,
)
from .progress import ProgressCallback
from .protocol import arguments_object
from .registry_servers import RegistryServers
from .registry_settings import DEFAULT_HEALTH_TIMEOUT_S, Settings, TransportFactory
from .restarts import (
    DEFAULT_MAX_RESTART_BACKOFF_S,
    DEFAULT_MAX_RESTARTS,
    DEFAULT_RESTART_BACKOFF_S,
    DEFAULT_RESTART_WINDOW_S,
    RestartPolicy,
)
from .session import McpClient
from .supervisor import ServerSupervisor
from .tool_index import ToolIndex
from .types import CallToolResult

logger = logging.getLogger(__name__)

#: Default seconds a tool call may take (a server's ``timeout`` overrides it).
DEFAULT_CALL_TIMEOUT_S = 60.0
#: Default seconds a server gets to start: spawn or connect, ``initialize``, ``tools/list``.
DEFAULT_STARTUP_TIMEOUT_S = 60.0
#: Default seconds before a server that failed to start is tried again.
DEFAULT_RETRY_FAILED_AFTER_S = 30.0
#: Default number of calls ``ToolRegistry.execute_all`` runs at once (and of background workers).
DEFAULT_MAX_CONCURRENCY = 16
#: How long ``ToolRegistry.close`` lets background work (reaping, starts) finish.
BACKGROUND_SHUTDOWN_GRACE_S = 5.0

# Serializes the resets of registries in a forked process (made anew in each child).
_fork_lock = threading.Lock()


def _new_fork_lock() -> None:
    global _fork_lock
    _fork_lock = threading.Lock()


_fork.at_fork_in_child(_new_fork_lock)


class ToolRegistry(Closing):
    """The tools of many MCP servers, for a model; calls routed to the right server.

    Thread-safe: every method may be called from any number of threads at once.
    A context manager; ``close`` ends every session it started.

    Build it with ``from_config``; the arguments here are the same, with a
    parsed ``McpConfig`` instead of a file.

    Args:
        config: the parsed configuration.
        eager: start every server now (concurrently) instead of on first use.
        default_timeout: seconds a tool call may take when neither the call
            nor the server's ``timeout`` says otherwise; ``None`` waits forever.
        startup_timeout: seconds a server's start may take in all (spawn or
            connect, ``initialize``, the first ``tools/list``); a call waits
            for a start no longer than its own deadline.
        retry_failed_after: seconds before a server that failed to start is
            tried again on its next use (``None``: never).
        max_concurrency: the most calls ``execute_all`` runs at once.
        client_info: ``{"name", "version"}`` sent in ``initialize``.
        inherit_env: stdio servers get the whole environment of this process
            (plus their ``env``), not only the allowlist of ``StdioTransport``.
        transport_factory: builds the transport of a server (to add an ``auth``
            to an ``HttpTransport``, say); by default
            ``build_transport``
            (``StdioTransport`` for a ``command``, ``HttpTransport`` for a ``url``).
        on_tools_changed: ``callback(server)`` when a server says its tools
            changed (on a worker thread; the list is fetched again on the next
            ``tools``).
        max_restarts: the most restarts of a server within ``restart_window``
            seconds; the next stop leaves it failed until ``retry_failed_after``.
        restart_window: seconds over which a server's stops are counted.
        restart_backoff: seconds before the first restart; each stop in the
            window doubles it, up to ``max_restart_backoff``.
        max_restart_backoff: the longest wait before a restart.
        idle_timeout: seconds a server's session may go without a call running
            on it (through the registry or through ``session``) before it
            is closed (it starts again on its next use); ``None``: never.
        health_interval: seconds between health pings of each running server
            (one that does not answer within ``health_timeout`` is restarted);
            ``None``: no pings.
        health_timeout: seconds a health ping may take.
        tracing: an OpenTelemetry span per tool call, its ``traceparent`` sent
            in the request's ``_meta``: ``True`` (the global tracer provider)
            or a ``TracerProvider``.  Needs ``opentelemetry-api`` (the ``otel``
            extra); nothing of it is imported otherwise.
        wire_trace: ``callback(server, message)`` for every message of every
            session, redacted (see ``jsonrpc_threads.observe.trace_wire``).

    Raises:
        ValueError: ``max_concurrency`` is below 1, or a bad restart, idle or
            health setting.
        ImportError: ``tracing`` without ``opentelemetry-api``.
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
        max_restarts: int = DEFAULT_MAX_RESTARTS,
        restart_window: float = DEFAULT_RESTART_WINDOW_S,
        restart_backoff: float = DEFAULT_RESTART_BACKOFF_S,
        max_restart_backoff: float = DEFAULT_MAX_RESTART_BACKOFF_S,
        idle_timeout: Optional[float] = None,
        health_interval: Optional[float] = None,
        health_timeout: float = DEFAULT_HEALTH_TIMEOUT_S,
        tracing: Any = False,
        wire_trace: Optional[Callable[[str, WireMessage], object]] = None,
    ) -> None:
        if max_concurrency < 1:
            raise ValueError("max_concurrency must be at least 1")
        self.max_concurrency = max_concurrency
        self.source = config.source
        policy = RestartPolicy(max_restarts, restart_window, restart_backoff, max_restart_backoff)
        self._settings = Settings.checked(
            default_timeout=default_timeout,
            startup_timeout=startup_timeout,
            retry_failed_after=retry_failed_after,
            client_info=client_info,
            policy=policy,
            idle_timeout=idle_timeout,
            health_interval=health_interval,
            health_timeout=health_timeout,
            tracing=tracing,
            wire_trace=wire_trace,
            workers=max_concurrency,
        )
        factory = transport_factory or functools.partial(build_transport, inherit_env=inherit_env)
        # _lock guards _closed (each supervisor guards its own state, the index its table).
        self._lock = threading.Lock()
        self._closed = False
        self._made_in = _fork.generation  # a fork resets the registry on its first use there
        supervisors = [
            ServerSupervisor(
                name,
                config.servers.get(name),
                config.errors.get(name),
                self._settings,
                transport_factory=factory,
                on_listed=self._rebuild_names,
                on_tools_changed=on_tools_changed,
            )
            for name in config.names
        ]
        for name in config.names:
            if name in config.errors:
                logger.warning("%s", config.errors[name])
        self._servers = RegistryServers(supervisors, max_concurrency)
        self._index = ToolIndex(supervisors)
        self._calls = ModelToolCalls(self._servers, self._index, self._settings, max_concurrency, self._is_closed)
        if eager:
            self.start()

    @classmethod
    def from_config(
        cls,
        path_or_mapping: PathOrMapping,
        *,
        environ: Optional[Mapping[str, str]] = None,
        eager: bool = False,
        default_timeout: Optional[float] = DEFAULT_CALL_TIMEOUT_S,
        startup_timeout: Optional[float] = DEFAULT_STARTUP_TIMEOUT_S,
        retry_failed_after: Optional[float] = DEFAULT_RETRY_FAILED_AFTER_S,
        max_concurrency: int = DEFAULT_MAX_CONCURRENCY,
        client_info: Optional[Mapping[str, Any]] = None,
        inherit_env: bool = False,
        transport_factory: Optional[TransportFactory] = None,
        on_tools_changed: Optional[Callable[[str], None]] = None,
        max_restarts: int = DEFAULT_MAX_RESTARTS,
        restart_window: float = DEFAULT_RESTART_WINDOW_S,
        restart_backoff: float = DEFAULT_RESTART_BACKOFF_S,
        max_restart_backoff: float = DEFAULT_MAX_RESTART_BACKOFF_S,
        idle_timeout: Optional[float] = None,
        health_interval: Optional[float] = None,
        health_timeout: float = DEFAULT_HEALTH_TIMEOUT_S,
        tracing: Any = False,
        wire_trace: Optional[Callable[[str, WireMessage], object]] = None,
    ) -> ToolRegistry:
        """Build a registry from an ``mcpServers`` file (a path) or mapping.

        Args:
            path_or_mapping: the JSON file's path, or the parsed object.
            environ: where ``${VAR}`` comes from (``os.environ`` by default).
            eager, default_timeout, ...: as the class takes them (see there).

        Returns:
            The registry; nothing is started unless ``eager``.

        Raises:
            ConfigError: the file cannot be read or has no ``mcpServers``
                object.  A bad *entry* raises nothing: that server is
                unavailable, and ``errors`` says why.
            ValueError, ImportError: as the class.
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
            max_restarts=max_restarts,
            restart_window=restart_window,
            restart_backoff=restart_backoff,
            max_restart_backoff=max_restart_backoff,
            idle_timeout=idle_timeout,
            health_interval=health_interval,
            health_timeout=health_timeout,
            tracing=tracing,
            wire_trace=wire_trace,
        )

    # -- settings (read by every server on its next start or call) ----------------------

    @property
    def default_timeout(self) -> Optional[float]:
        """Seconds a tool call may take when neither the call nor the server says otherwise."""
        return self._settings.default_timeout

    @default_timeout.setter
    def default_timeout(self, value: Optional[float]) -> None:
        self._settings.default_timeout = check_timeout(value, "default_timeout")

    @property
    def startup_timeout(self) -> Optional[float]:
        """Seconds a server's start may take in all (spawn or connect, ``initialize``, the first ``tools/list``)."""
        return self._settings.startup_timeout

    @startup_timeout.setter
    def startup_timeout(self, value: Optional[float]) -> None:
        self._settings.startup_timeout = check_timeout(value, "startup_timeout")

    @property
    def retry_failed_after(self) -> Optional[float]:
        """Seconds before a failed start is tried again (``None``: never)."""
        return self._settings.retry_failed_after

    @retry_failed_after.setter
    def retry_failed_after(self, value: Optional[float]) -> None:
        self._settings.retry_failed_after = value

    # -- servers ------------------------------------------------------------------------

    def start(self, servers: Optional[Sequence[str]] = None) -> Dict[str, str]:
        """Start the servers (all by default) that are not running, concurrently, and list their tools.

        Bounded by ``startup_timeout`` in all.

        Returns:
            ``errors`` afterwards.

        Raises:
            UnknownServer: a name is not in the configuration.
        """
        self._check_fork()
        deadline = Deadline.after(self._settings.startup_timeout)
        chosen = [self._servers.get(name) for name in servers] if servers is not None else self._servers.all()
        self._servers.refresh(chosen, deadline)
        return self.errors

    def session(self, server: str, *, timeout: Timeout = DEFAULT_TIMEOUT) -> McpClient:
        """The running session of ``server`` (started now if needed), for resources, prompts, ...

        A call made on it holds it in use while it runs (``idle_timeout``
        never closes it then); between calls it may be closed for being idle,
        and a later call on it fails with ``TransportClosed``: ask for the
        session again for each use.

        Args:
            server: the server's name in the configuration.
            timeout: how long to wait for its start; ``startup_timeout`` by default.

        Raises:
            UnknownServer: the name is not in the configuration.
            ConfigError: the server's entry is unusable.
            ServerUnavailable: the server failed to start, or is failed (see
                ``status``), or was not up within ``timeout``.
        """
        self._check_fork()
        return self._servers.get(server).session(Deadline.after(timeout, self._settings.startup_timeout))

    # -- what it reports (starts nothing, never blocks on a server) ----------------------

    @property
    def servers(self) -> List[str]:
        """Every configured server's name (usable or not), in configuration order."""
        return self._servers.names()

    @property
    def errors(self) -> Dict[str, str]:
        """``{server: why it is unavailable}`` (one line) for bad entries and failed starts."""
        return {name: str(error) for name, error in self.failures.items()}

    @property
    def failures(self) -> Dict[str, JsonRpcError]:
        """``{server: exception}`` for bad entries (``ConfigError``) and failed starts
        (``ServerUnavailable``), in configuration order."""
        return self._servers.failures()

    def started(self, server: str) -> bool:
        """True when ``server`` has a running session (it was used, or started eagerly).

        Raises:
            UnknownServer: the name is not in the configuration.
        """
        self._check_fork()
        return self._servers.get(server).started()

    def status(self) -> Dict[str, Dict[str, Any]]:
        """Each server's state, for a health endpoint (starts nothing, never blocks on a server).

        Returns:
            ``{server: {"state", "pid", "restarts", "last_error"}}`` in
            configuration order.  ``state`` is ``"idle"`` (not started, or
            closed after ``idle_timeout``), ``"starting"``, ``"running"``,
            ``"restarting"`` (it stopped; back after a backoff) or ``"failed"``
            (a bad entry, a failed start, or too many restarts: see
            ``retry_failed_after``); ``pid`` is the server process's (stdio,
            while it runs or starts), else ``None``; ``restarts`` counts the
            restarts since the registry was made (or forked); ``last_error``
            is one line on the last failure or stop (exit code and the last
            line of stderr included), else ``None``.
        """
        self._check_fork()
        return self._servers.status()

    def stats(self) -> Dict[str, Dict[str, int]]:
        """Each server's counters, and their sum under ``"*"`` (cheap; starts nothing).

        Returns:
            ``{server: {...}, ..., "*": {...}}``, each with: ``tool_calls``
            (tool calls sent through the registry: ``call_tool``,
            ``execute``, ``execute_all``), ``tool_calls_failed`` (those that
            ended with an error; an ``isError`` result is an answer),
            ``tool_calls_cancelled`` (those that outlasted their deadline,
            cancelled on the server); ``requests``, ``request_errors``,
            ``request_timeouts``, ``requests_withdrawn``,
            ``requests_pending`` (every protocol request of the server's
            sessions, ``initialize``, ``tools/list`` and health pings
            included, as ``McpClient.stats()`` counts them; the
            ``server/discover`` probe that only told the era is no error);
            ``restarts``; and the old names of the request counters,
            ``calls``, ``errors``, ``timeouts``, ``cancels``, ``pending``.
        """
        self._check_fork()
        return self._servers.stats()

    # -- tools --------------------------------------------------------------------------

    def tools(self) -> List[RegistryTool]:
        """Every tool of every available server, in configuration order.

        Starts the servers not started yet (concurrently) and fetches again
        the lists that are stale (the server said they changed, or the
        ``ttlMs`` it gave them passed), within ``startup_timeout`` in all.  A server
        that cannot start contributes no tools (see ``errors``); one that
        restarts or idles keeps offering the tools it had.
        """
        self._check_fork()
        return self._calls.tools()

    def openai_tools(self) -> List[Dict[str, Any]]:
        """The tools for OpenAI function calling (as ``tools`` starts them).

        Returns:
            ``[{"type": "function", "function": {"name", "description", "parameters"}}]``.
        """
        self._check_fork()
        return self._calls.openai_tools()

    def anthropic_tools(self) -> List[Dict[str, Any]]:
        """The tools for the Anthropic Messages API: ``[{"name", "description", "input_schema"}]``."""
        self._check_fork()
        return self._calls.anthropic_tools()

    def resolve(self, name: str, *, timeout: Timeout = DEFAULT_TIMEOUT) -> Tuple[str, str]:
        """The ``(server, tool)`` behind a namespaced name.

        Starts only the servers the name could belong to (by its prefix),
        and fetches their tool lists again when stale, within ``timeout``
        (by default the servers' call timeout).

        Raises:
            UnknownTool: no server offers it.
            ServerUnavailable, ConfigError: the server it belongs to cannot start,
                or (``timed_out``) was not up by the deadline.
            RequestTimeout: the deadline passed before the server had listed its tools.
        """
        self._check_fork()
        return self._calls.resolve(name, timeout)

    # -- calls --------------------------------------------------------------------------

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
            timeout: as for ``call_tool``; it bounds the lookup of the
                tool's name too (which may start its server).

        Raises:
            TypeError, ValueError: for a bad ``timeout`` (a bug of the caller, not of the call).
        """
        self._check_fork()
        return self._calls.execute(tool_call, timeout)

    def execute_all(self, tool_calls: Sequence[Any], *, timeout: Timeout = DEFAULT_TIMEOUT) -> List[Dict[str, Any]]:
        """Run tool calls concurrently; return their messages in the order of the calls.

        Up to ``max_concurrency`` calls run at once, on threads that end when
        this returns.  Calls to the same server are pipelined on its session.
        Every call's deadline counts from this call (a call that waited for a
        free thread has less left).  Never raises for a bad call (see ``execute``).
        """
        self._check_fork()
        return self._calls.execute_all(tool_calls, timeout)

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
            arguments: the tool's arguments, a dict; a model's arguments arrive
                as a JSON string: ``json.loads`` it first, or hand the model's
                whole tool call to ``execute``, which does.
            timeout: seconds for the whole call (a wait for the server to start
                or restart, and a fetch of its tools, included); by default the
                server's ``timeout``, else the registry's ``default_timeout``;
                ``None`` waits forever.
            on_progress: ``callback(params)`` for each progress notification.

        Returns:
            The ``tools/call`` result (``isError: true`` is returned, not raised).

        Raises:
            TypeError: ``arguments`` is not a dict (a JSON string, say); nothing is started or sent.
            UnknownServer, UnknownTool, ConfigError, ServerUnavailable: before
                anything is sent.
            RequestTimeout, TransportClosed, JsonRpcError: as
                ``McpClient.call_tool``.
        """
        self._check_fork()
        checked = arguments_object(arguments)
        supervisor = self._servers.get(server)
        deadline = Deadline.after(timeout, supervisor.call_timeout())
        return supervisor.call_tool(tool, checked, deadline, on_progress)

    def close(self) -> None:
        """Close every session this registry started (and reclaim their processes).

        Starts in progress are interrupted.  Idempotent and thread-safe; bounded
        in time (each session closes concurrently with the others).
        """
        self._check_fork()
        with self._lock:
            self._closed = True
        self._servers.stop()
        self._settings.background.shutdown(BACKGROUND_SHUTDOWN_GRACE_S)

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"{len(self._servers.names())} servers"
        return f"<ToolRegistry {state}>"

    # -- internals ----------------------------------------------------------------------

    def _check_fork(self) -> None:
        if self._made_in != _fork.generation:
            self._after_fork()

    def _after_fork(self) -> None:
        """In a forked process: new locks and workers, the parent's sessions let go of (see the module docstring)."""
        with _fork_lock:
            if self._made_in == _fork.generation:
                return  # another thread of this process reset it first
            self._lock = threading.Lock()
            self._settings.background = Background(self.max_concurrency, "jsonrpc-registry")
            self._servers.after_fork()
            logger.info("forked: the parent's MCP sessions are let go of; servers start again on use")
            self._made_in = _fork.generation

    def _is_closed(self) -> bool:
        return self._closed

    def _rebuild_names(self) -> None:
        # Called by a supervisor whose tool list changed (it holds no lock).
        self._index.rebuild()


__all__ = [
    "BACKGROUND_SHUTDOWN_GRACE_S",
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
