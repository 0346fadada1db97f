"""ToolRegistry: from the tool calls an LLM emitted to the tool messages of its next turn.

Theory of operation.  A registry holds the servers of an ``mcpServers``
configuration (:mod:`jsonrpc_threads.mcp.config`), one :class:`McpClient`
session each, started on first use (or all at once with ``eager=True``).  A
server is started once however many threads need it at the same moment: the
first one creates a future under the registry's lock and starts the session
outside of it; the others wait on that future.  A server that fails to start
is left out (its tools are missing) and the reason is kept in
:attr:`ToolRegistry.errors` and logged; the other servers work as usual.  A
failed start is tried again after ``retry_failed_after`` seconds; a server
that stopped after it started (a crash) is started again on its next use.

Tool names.  Each tool is offered to the model as ``mcp__<server>__<tool>``.
The name is used exactly as the server and the configuration spell it when it
matches ``[A-Za-z0-9_-]{1,64}`` (the limit of the OpenAI and Anthropic APIs).
Otherwise it is rewritten, always the same way:

1. every character outside ``A-Z a-z 0-9 _ -`` becomes ``_``;
2. a name still longer than 64 characters keeps its first 55 characters,
   followed by ``_`` and 8 hex digits of the SHA-256 of ``"<server>\\0<tool>"``
   (the original spellings);
3. when two tools end up with the same name, a name that needed no rewriting
   keeps it (between two such names, the one from the server listed first in
   the configuration keeps it); each of the others gets the form of step 2
   (its first 55 characters, ``_``, 8 hex digits), whatever its length.

So ``files`` / ``read.file`` is ``mcp__files__read_file`` (or
``mcp__files__read_file_<hash>`` when the server also has ``read_file``),
and a name is stable for as long as the tools it could clash with are.
:func:`namespaced_name` and :func:`assign_names` compute it.

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

``notifications/tools/list_changed`` marks the server's tool list stale; the
next :meth:`ToolRegistry.tools` (or a call of an unknown name) fetches it again.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from types import TracebackType
from typing import (
    Any,
    Callable,
    Dict,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    Type,
    TypedDict,
)

from ..client import DEFAULT_TIMEOUT, Timeout
from ..errors import (
    INVALID_PARAMS,
    TRANSPORT_CLOSED,
    HttpConnectionError,
    HttpError,
    JsonRpcError,
    RequestTimeout,
    TransportClosed,
)
from ..transports.base import Transport
from ..transports.config import transport_from_config
from ..transports.stdio import StdioTransport
from .config import ConfigError, McpConfig, PathOrMapping, ServerConfig, load_config
from .session import McpClient, ProgressCallback
from .types import CallToolResult, Tool

logger = logging.getLogger(__name__)

#: The names the OpenAI and Anthropic APIs accept for a tool.
TOOL_NAME_PATTERN = re.compile(r"[A-Za-z0-9_-]{1,64}")
MAX_TOOL_NAME_CHARS = 64
#: Hex digits of the hash in a rewritten name.
NAME_HASH_CHARS = 8
#: Characters kept before ``_<hash>`` in a rewritten name (64 - 1 - 8).
NAME_HASH_PREFIX_CHARS = MAX_TOOL_NAME_CHARS - 1 - NAME_HASH_CHARS

#: Default seconds a tool call may take (a server's ``timeout`` overrides it).
DEFAULT_CALL_TIMEOUT_S = 60.0
#: Default seconds a server gets to start: spawn or connect, ``initialize``, ``tools/list``.
DEFAULT_STARTUP_TIMEOUT_S = 60.0
#: Default seconds before a server that failed to start is tried again.
DEFAULT_RETRY_FAILED_AFTER_S = 30.0
#: Default number of calls :meth:`ToolRegistry.execute_all` runs at once.
DEFAULT_MAX_CONCURRENCY = 16

_INVALID_CHARS = re.compile(r"[^A-Za-z0-9_-]")
#: The most of a server's stderr tail quoted in an error message.
_STDERR_LINE_CHARS = 200


# -- errors -------------------------------------------------------------------------


class UnknownTool(JsonRpcError, LookupError):
    """No configured server offers a tool of this name.

    Attributes:
        name: the name asked for (namespaced, or as the server spells it).
        server: the server it was looked up on, when one was named.
    """

    def __init__(self, name: str, server: Optional[str] = None) -> None:
        where = f" on server {server!r}" if server is not None else ""
        super().__init__(INVALID_PARAMS, f"Unknown tool {name!r}{where}", {"name": name, "server": server})
        self.name = name
        self.server = server

    def __str__(self) -> str:
        return self.message

    def __reduce__(self) -> Any:
        return (type(self), (self.name, self.server))


class UnknownServer(JsonRpcError, LookupError):
    """The configuration names no server of this name.

    Attributes:
        server: the name asked for.
    """

    def __init__(self, server: str, known: Sequence[str] = ()) -> None:
        hint = f" (configured: {', '.join(known)})" if known else " (none is configured)"
        super().__init__(INVALID_PARAMS, f"Unknown server {server!r}{hint}", {"server": server})
        self.server = server
        self.known = tuple(known)

    def __str__(self) -> str:
        return self.message

    def __reduce__(self) -> Any:
        return (type(self), (self.server, self.known))


class ServerUnavailable(JsonRpcError, ConnectionError):
    """A server could not be started (spawned or reached, then ``initialize`` and ``tools/list``).

    The start is tried again on a use after ``retry_failed_after`` seconds.

    Attributes:
        server: the server's name.
        reason: one line saying why.
        timed_out: True when the server did not answer in time.
    """

    def __init__(self, server: str, reason: str, *, timed_out: bool = False) -> None:
        super().__init__(TRANSPORT_CLOSED, f"server {server!r} failed to start: {reason}", {"server": server})
        self.server = server
        self.reason = reason
        self.timed_out = timed_out

    def __str__(self) -> str:
        return self.message

    def __reduce__(self) -> Any:
        return (_rebuild_unavailable, (type(self), self.server, self.reason, self.timed_out))


def _rebuild_unavailable(cls: Type[ServerUnavailable], server: str, reason: str, timed_out: bool) -> ServerUnavailable:
    return cls(server, reason, timed_out=timed_out)


# -- names --------------------------------------------------------------------------


def _name_hash(server: str, tool: str) -> str:
    data = f"{server}\0{tool}".encode("utf-8", "surrogatepass")
    return hashlib.sha256(data).hexdigest()[:NAME_HASH_CHARS]


def _sanitized(server: str, tool: str) -> str:
    return f"mcp__{_INVALID_CHARS.sub('_', server)}__{_INVALID_CHARS.sub('_', tool)}"


def _hashed_name(server: str, tool: str) -> str:
    return f"{_sanitized(server, tool)[:NAME_HASH_PREFIX_CHARS]}_{_name_hash(server, tool)}"


def _server_prefix(server: str) -> str:
    """What every name of ``server``'s tools starts with."""
    return f"mcp__{_INVALID_CHARS.sub('_', server)}__"[:NAME_HASH_PREFIX_CHARS]


def namespaced_name(server: str, tool: str) -> str:
    """The name of ``tool`` of ``server`` for a model, before any clash is resolved.

    ``mcp__<server>__<tool>`` when that matches ``[A-Za-z0-9_-]{1,64}``; else
    rewritten by the rules in this module's docstring (invalid characters to
    ``_``, then, when too long, 55 characters + ``_`` + 8 hex digits of a hash).
    """
    name = f"mcp__{server}__{tool}"
    if TOOL_NAME_PATTERN.fullmatch(name):
        return name
    name = _sanitized(server, tool)
    if len(name) <= MAX_TOOL_NAME_CHARS:
        return name
    return _hashed_name(server, tool)


def assign_names(pairs: Sequence[Tuple[str, str]]) -> Dict[Tuple[str, str], str]:
    """Give every ``(server, tool)`` pair a distinct name for a model.

    Args:
        pairs: the tools, in configuration order (servers) and server order (tools).

    Returns:
        ``{(server, tool): name}``; see the module docstring for the rules.
    """
    preferred: Dict[Tuple[str, str], str] = {}
    for pair in pairs:
        preferred.setdefault(pair, namespaced_name(*pair))
    groups: Dict[str, List[Tuple[str, str]]] = {}
    for pair, name in preferred.items():
        groups.setdefault(name, []).append(pair)
    names: Dict[Tuple[str, str], str] = {}
    for name, group in groups.items():
        if len(group) == 1:
            names[group[0]] = name
            continue
        exact = [pair for pair in group if f"mcp__{pair[0]}__{pair[1]}" == name]
        keeper = exact[0] if exact else None
        for pair in group:
            names[pair] = name if pair == keeper else _hashed_name(*pair)
    taken: Dict[str, Tuple[str, str]] = {}
    for pair, name in names.items():
        unique, salt = name, 0
        while unique in taken:  # a hash collision: practically never
            salt += 1
            unique = f"{_sanitized(*pair)[:NAME_HASH_PREFIX_CHARS]}_{_name_hash(pair[0], f'{pair[1]}#{salt}')}"
        taken[unique] = pair
        names[pair] = unique
    return names


# -- descriptors --------------------------------------------------------------------


class RegistryTool(TypedDict):
    """A tool as the registry offers it.

    Keys:
        name: the namespaced name a model sees and calls.
        server: the server's name in the configuration.
        tool: the tool's name as the server spells it.
        description: the tool's description (its title when it has none; may be empty).
        inputSchema: the JSON Schema of its arguments (an object schema).
        definition: the server's descriptor, untouched.
    """

    name: str
    server: str
    tool: str
    description: str
    inputSchema: Dict[str, Any]
    definition: Tool


def _object_schema(schema: Any) -> Dict[str, Any]:
    if not isinstance(schema, dict):
        return {"type": "object", "properties": {}}
    result: Dict[str, Any] = dict(schema)
    result.setdefault("type", "object")
    if result.get("type") == "object":
        result.setdefault("properties", {})
    return result


def _descriptor(name: str, server: str, tool: Tool) -> RegistryTool:
    description = tool.get("description") or tool.get("title") or ""
    return {
        "name": name,
        "server": server,
        "tool": tool["name"],
        "description": description if isinstance(description, str) else "",
        "inputSchema": _object_schema(tool.get("inputSchema")),
        "definition": tool,
    }


# -- tool calls and messages --------------------------------------------------------

_OPENAI = "openai"
_ANTHROPIC = "anthropic"
_RESPONSES = "responses"


@dataclass
class _Call:
    style: str
    call_id: Any
    name: str
    arguments: Optional[Dict[str, Any]]
    problem: Optional[str] = None  # why the call cannot be made at all


def _parse_arguments(value: Any, name: str) -> Tuple[Optional[Dict[str, Any]], Optional[str]]:
    if value is None or value == "":
        return {}, None
    if isinstance(value, (str, bytes)):
        try:
            value = json.loads(value)
        except ValueError as exc:
            return None, f"the arguments for {name!r} are not valid JSON ({exc}); send one JSON object"
    if not isinstance(value, Mapping):
        return None, f"the arguments for {name!r} must be a JSON object, not {type(value).__name__}"
    return dict(value), None


def _parse_call(tool_call: Any) -> _Call:
    dump = getattr(tool_call, "model_dump", None)
    if callable(dump) and not isinstance(tool_call, Mapping):  # an SDK object (pydantic)
        try:
            tool_call = dump()
        except Exception as exc:  # then it is just not a tool call
            logger.debug("model_dump() of a tool call failed: %r", exc)
    if not isinstance(tool_call, Mapping):
        return _Call(_OPENAI, None, "", None, f"a tool call must be an object, not {type(tool_call).__name__}")
    kind = tool_call.get("type")
    if kind == "tool_use" or (kind is None and "input" in tool_call and "function" not in tool_call):
        call_id, name, raw = tool_call.get("id"), tool_call.get("name"), tool_call.get("input")
        style = _ANTHROPIC
    elif kind == "function_call":
        call_id, name, raw = tool_call.get("call_id"), tool_call.get("name"), tool_call.get("arguments")
        style = _RESPONSES
    else:
        function = tool_call.get("function")
        call_id = tool_call.get("id")
        if not isinstance(function, Mapping):
            return _Call(_OPENAI, call_id, "", None, "the tool call has no 'function' object with a 'name'")
        name, raw = function.get("name"), function.get("arguments")
        style = _OPENAI
    if not isinstance(name, str) or not name:
        return _Call(style, call_id, "", None, "the tool call names no tool")
    arguments, problem = _parse_arguments(raw, name)
    return _Call(style, call_id, name, arguments, problem)


def _block_text(block: Any) -> Optional[str]:
    """A content block as text (None for an empty text block)."""
    if not isinstance(block, Mapping):
        return json.dumps(block)
    kind = block.get("type")
    if kind == "text":
        text = block.get("text")
        return text if isinstance(text, str) and text else None
    if kind in ("image", "audio"):
        size = len(block.get("data") or "") * 3 // 4
        return f"[{kind}: {block.get('mimeType', 'unknown type')}, about {size} bytes]"
    if kind == "resource_link":
        label = block.get("title") or block.get("name") or ""
        return f"[resource link: {block.get('uri')}{' ' + str(label) if label else ''}]"
    if kind == "resource":
        resource = block.get("resource")
        if isinstance(resource, Mapping):
            text = resource.get("text")
            if isinstance(text, str):
                return text
            return f"[resource: {resource.get('uri')} ({resource.get('mimeType', 'binary')})]"
    return json.dumps(dict(block))


def result_text(result: Mapping[str, Any]) -> str:
    """A ``tools/call`` result as one text: its text blocks joined by newlines.

    Images, audio and resources are described in brackets; when there is no
    content at all, ``structuredContent`` as JSON (else the empty string).
    """
    content = result.get("content")
    parts = [text for text in (_block_text(block) for block in content or ()) if text is not None]
    if not parts and result.get("structuredContent") is not None:
        return json.dumps(result["structuredContent"])
    return "\n".join(parts)


def _anthropic_blocks(result: Mapping[str, Any]) -> List[Dict[str, Any]]:
    blocks: List[Dict[str, Any]] = []
    for block in result.get("content") or ():
        if isinstance(block, Mapping) and block.get("type") == "image" and isinstance(block.get("data"), str):
            source = {"type": "base64", "media_type": block.get("mimeType", "image/png"), "data": block["data"]}
            blocks.append({"type": "image", "source": source})
            continue
        text = _block_text(block)
        if text is not None:
            blocks.append({"type": "text", "text": text})
    if not blocks and result.get("structuredContent") is not None:
        blocks.append({"type": "text", "text": json.dumps(result["structuredContent"])})
    return blocks


def _message(call: _Call, *, text: str, is_error: bool, result: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
    if call.style == _ANTHROPIC:
        blocks = _anthropic_blocks(result) if result is not None else [{"type": "text", "text": text}]
        if not blocks and is_error:
            blocks = [{"type": "text", "text": "Error: the tool failed without saying why"}]
        message: Dict[str, Any] = {"type": "tool_result", "tool_use_id": call.call_id, "content": blocks}
        if is_error:
            message["is_error"] = True
        return message
    if is_error and result is not None:
        text = f"Error: {text}" if text else "Error: the tool failed without saying why"
    if call.style == _RESPONSES:
        return {"type": "function_call_output", "call_id": call.call_id, "output": text}
    return {"role": "tool", "tool_call_id": call.call_id, "content": text}


def _one_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1][-_STDERR_LINE_CHARS:] if lines else ""


def _describe_start_failure(exc: BaseException) -> str:
    if isinstance(exc, TransportClosed):
        text = exc.message
        if exc.returncode is not None:
            text += f" (exit code {exc.returncode})"
        last = _one_line(exc.stderr_tail)
        if last:
            text += f"; stderr: {last}"
        return text
    if isinstance(exc, RequestTimeout):
        return f"no answer to {exc.method!r} within {exc.timeout}s"
    if isinstance(exc, JsonRpcError):
        return exc.message
    return f"{type(exc).__name__}: {exc}"


# -- the registry -------------------------------------------------------------------


class _Server:
    """One configured server.  Every field is guarded by the registry's lock."""

    def __init__(self, name: str, config: Optional[ServerConfig], config_error: Optional[ConfigError]) -> None:
        self.name = name
        self.config = config
        self.config_error = config_error
        self.session: Optional[Future[McpClient]] = None  # the start in progress, or its outcome
        self.starting: Optional[McpClient] = None  # the session being started (close() may close it)
        self.failed_at = 0.0
        self.tools: List[Tool] = []
        self.listed = False
        self.listings = 0  # how many times ``tools`` was fetched
        self.changes = 0  # list_changed notifications received
        self.listed_changes = 0  # the value of ``changes`` when ``tools`` was fetched

    @property
    def stale(self) -> bool:
        return self.listed_changes != self.changes


TransportFactory = Callable[[ServerConfig], Transport]


class ToolRegistry:
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
            to an ``HttpTransport``, say); by default ``StdioTransport`` for a
            ``command`` and ``HttpTransport`` for a ``url``.
        on_tools_changed: ``callback(server)`` when a server says its tools
            changed (on a worker thread; the list is fetched again on the next
            :meth:`tools`).
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
        self.default_timeout = default_timeout
        self.startup_timeout = startup_timeout
        self.retry_failed_after = retry_failed_after
        self.max_concurrency = max_concurrency
        self.source = config.source
        self._client_info = client_info
        self._inherit_env = inherit_env
        self._transport_factory = transport_factory
        self._on_tools_changed = on_tools_changed
        # _lock guards _closed, _names, _entries and every field of every _Server.
        self._lock = threading.Lock()
        self._closed = False
        self._servers: Dict[str, _Server] = {}
        for name in config.names:
            self._servers[name] = _Server(name, config.servers.get(name), config.errors.get(name))
            if name in config.errors:
                logger.warning("%s", config.errors[name])
        self._names: Dict[str, Tuple[_Server, str]] = {}
        self._entries: List[RegistryTool] = []
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

    # -- public API -------------------------------------------------------------------

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
        with self._lock:
            for name, server in self._servers.items():
                error = self._failure(server)
                if error is not None:
                    failures[name] = error
        return failures

    def started(self, server: str) -> bool:
        """True when ``server`` has a running session (it was used, or started eagerly)."""
        entry = self._server(server)
        with self._lock:
            session = entry.session
        if session is None or not session.done() or session.exception() is not None:
            return False
        return not session.result().rpc.closed

    def start(self, servers: Optional[Sequence[str]] = None) -> Dict[str, str]:
        """Start the servers (all by default) that are not running, concurrently, and list their tools.

        Returns:
            :attr:`errors` afterwards.

        Raises:
            UnknownServer: a name is not in the configuration.
        """
        entries = [self._server(name) for name in servers] if servers is not None else list(self._servers.values())
        self._list_many(entries)
        return self.errors

    def tools(self) -> List[RegistryTool]:
        """Every tool of every available server, in configuration order.

        Starts the servers not started yet (concurrently) and fetches again
        the lists that changed.  A server that cannot start contributes no
        tools (see :attr:`errors`).
        """
        self._list_many(list(self._servers.values()))
        with self._lock:
            return list(self._entries)

    def openai_tools(self) -> List[Dict[str, Any]]:
        """The tools for OpenAI function calling.

        Returns:
            ``[{"type": "function", "function": {"name", "description", "parameters"}}]``.
        """
        return [
            {
                "type": "function",
                "function": {
                    "name": tool["name"],
                    "description": tool["description"],
                    "parameters": tool["inputSchema"],
                },
            }
            for tool in self.tools()
        ]

    def anthropic_tools(self) -> List[Dict[str, Any]]:
        """The tools for the Anthropic Messages API: ``[{"name", "description", "input_schema"}]``."""
        return [
            {"name": tool["name"], "description": tool["description"], "input_schema": tool["inputSchema"]}
            for tool in self.tools()
        ]

    def resolve(self, name: str) -> Tuple[str, str]:
        """The ``(server, tool)`` behind a namespaced name.

        Starts only the servers the name could belong to (by its prefix).

        Raises:
            UnknownTool: no server offers it.
            ServerUnavailable, ConfigError: the server it belongs to cannot start.
        """
        server, tool = self._resolve(name)
        return server.name, tool

    def session(self, server: str) -> McpClient:
        """The running session of ``server`` (started now if needed), for resources, prompts, ...

        Raises:
            UnknownServer, ConfigError, ServerUnavailable.
        """
        return self._session(self._server(server))

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
        entry = self._server(server)
        self._known_tool(entry, tool)
        return self._call(entry, tool, arguments, timeout, on_progress)

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
        call = _parse_call(tool_call)
        if call.problem is not None:
            return _message(call, text=f"Error: {call.problem}.", is_error=True)
        assert call.arguments is not None
        try:
            server, tool = self._resolve(call.name)
        except JsonRpcError as exc:
            return _message(call, text=f"Error: {self._explain_lookup(call.name, exc)}", is_error=True)
        except Exception as exc:
            logger.exception("looking up tool %r failed", call.name)
            return _message(call, text=f"Error: looking up {call.name!r} failed ({type(exc).__name__}).", is_error=True)
        try:
            result = self._call(server, tool, call.arguments, timeout, None)
        except JsonRpcError as exc:
            return _message(call, text=f"Error: {self._explain_failure(server.name, tool, exc)}", is_error=True)
        except Exception as exc:
            logger.exception("tool %r on server %r failed", tool, server.name)
            text = f"Error: the call to tool {tool!r} on server {server.name!r} failed ({type(exc).__name__}: {exc})."
            return _message(call, text=text, is_error=True)
        if not isinstance(result, Mapping):
            text = f"Error: server {server.name!r} answered tool {tool!r} with something that is not a result."
            return _message(call, text=text, is_error=True)
        is_error = result.get("isError") is True
        return _message(call, text=result_text(result), is_error=is_error, result=result)

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
            sessions: List[Future[McpClient]] = []
            starting: List[McpClient] = []
            for server in self._servers.values():
                if server.session is not None:
                    sessions.append(server.session)
                if server.starting is not None:
                    starting.append(server.starting)
        for client in starting:  # its start fails at once, and closes it
            client.close()
        clients = []
        for session in sessions:
            try:
                clients.append(session.result())
            except BaseException as exc:  # a failed start holds nothing
                logger.debug("closing: a start had failed: %s", exc)
        if len(clients) == 1:
            clients[0].close()
        elif clients:
            with ThreadPoolExecutor(min(len(clients), 8), thread_name_prefix="jsonrpc-registry-close") as pool:
                for _ in pool.map(McpClient.close, clients):
                    pass

    def __enter__(self) -> ToolRegistry:
        return self

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"{len(self._servers)} servers"
        return f"<ToolRegistry {state}>"

    # -- internals: servers -------------------------------------------------------------

    def _server(self, name: str) -> _Server:
        server = self._servers.get(name)
        if server is None:
            raise UnknownServer(name, list(self._servers))
        return server

    def _failure(self, server: _Server) -> Optional[JsonRpcError]:
        # Called with _lock held.
        if server.config_error is not None:
            return server.config_error
        session = server.session
        if session is not None and session.done():
            error = session.exception()
            if isinstance(error, ServerUnavailable):
                return error
        return None

    def _session(self, server: _Server) -> McpClient:
        """The server's running session: started now (once) if needed."""
        stale_client: Optional[McpClient] = None
        with self._lock:
            if self._closed:
                raise TransportClosed("ToolRegistry closed")
            if server.config is None:
                assert server.config_error is not None
                raise server.config_error
            future = server.session
            if future is not None and future.done():
                error = future.exception()
                if error is None:
                    client = future.result()
                    if client.rpc.closed:  # it stopped (crashed) since: start it again
                        stale_client = client
                        future = None
                elif isinstance(error, ServerUnavailable) and self._may_retry(server):
                    future = None
            owner = future is None
            if future is None:
                future = server.session = Future()
                server.tools = []
                server.listed = False
                self._rebuild_names()
        if stale_client is not None:
            logger.info("server %r stopped; starting it again", server.name)
            stale_client.close()  # reap the old process
        if owner:
            self._start(server, future)
        return future.result()

    def _may_retry(self, server: _Server) -> bool:
        retry = self.retry_failed_after
        return retry is not None and time.monotonic() - server.failed_at >= retry

    def _start(self, server: _Server, future: Future[McpClient]) -> None:
        config = server.config
        assert config is not None
        client: Optional[McpClient] = None
        transport: Optional[Transport] = None
        try:
            transport = self._make_transport(config)
            client = McpClient(
                transport,
                client_info=self._client_info,
                default_timeout=config.timeout if config.timeout is not None else self.default_timeout,
                on_tools_changed=lambda: self._tools_changed(server),
            )
            transport = None  # the client owns it now
            with self._lock:
                closed = self._closed
                if not closed:
                    server.starting = client
            if closed:
                raise TransportClosed("ToolRegistry closed")
            client.initialize(timeout=self.startup_timeout)
            tools = client.list_tools(timeout=self.startup_timeout)
            self._open_listen_stream(client)
        except BaseException as exc:
            if client is not None:
                client.close()
            elif transport is not None:
                transport.close()
            with self._lock:
                server.starting = None
                server.failed_at = time.monotonic()
                closed = self._closed
            if closed:
                error: JsonRpcError = TransportClosed("ToolRegistry closed")
            else:
                reason = _describe_start_failure(exc)
                error = ServerUnavailable(server.name, reason, timed_out=isinstance(exc, RequestTimeout))
                logger.warning("MCP %s", error.message)
                if isinstance(exc, TransportClosed) and exc.stderr_tail:
                    logger.warning("server %r: stderr ends with:\n%s", server.name, exc.stderr_tail)
            future.set_exception(error)
            if not isinstance(exc, Exception):
                raise
            return
        with self._lock:
            server.starting = None
            closed = self._closed
            if not closed:
                server.tools = list(tools)
                server.listed = True
                server.listings += 1
                server.listed_changes = server.changes
                self._rebuild_names()
        if closed:
            client.close()
            future.set_exception(TransportClosed("ToolRegistry closed"))
            return
        logger.info("MCP server %r started with %d tools", server.name, len(tools))
        future.set_result(client)

    def _make_transport(self, config: ServerConfig) -> Transport:
        if self._transport_factory is not None:
            return self._transport_factory(config)
        if config.transport == "stdio":
            assert config.command is not None
            return StdioTransport(
                [config.command, *config.args],
                env=config.env or None,
                cwd=config.cwd,
                inherit_env=self._inherit_env,
                label=config.name,
            )
        return transport_from_config(config.entry())

    def _open_listen_stream(self, client: McpClient) -> None:
        tools_capability = client.server_capabilities.get("tools")
        if not (isinstance(tools_capability, dict) and tools_capability.get("listChanged")):
            return
        open_stream = getattr(client.rpc.transport, "open_listen_stream", None)
        if open_stream is None:
            return
        try:
            open_stream()
        except JsonRpcError as exc:
            logger.debug("no listen stream for list_changed: %s", exc)

    def _tools_changed(self, server: _Server) -> None:
        # Runs on a worker thread of the server's session.
        with self._lock:
            server.changes += 1
        logger.info("server %r: tool list changed", server.name)
        if self._on_tools_changed is not None:
            self._on_tools_changed(server.name)

    def _list(self, server: _Server, *, refresh: bool = False) -> None:
        """Start the server if needed, and fetch its tools when stale (or ``refresh``)."""
        with self._lock:
            listings = server.listings
        client = self._session(server)
        with self._lock:
            changes = server.changes
            if server.listings != listings:
                refresh = False  # just started: the list is fresh
            needed = refresh or server.stale or not server.listed
        if not needed:
            return
        tools = client.list_tools()
        with self._lock:
            session = server.session
            if session is not None and session.done() and session.exception() is None and session.result() is client:
                server.tools = list(tools)
                server.listed = True
                server.listings += 1
                server.listed_changes = changes
                self._rebuild_names()

    def _needs_work(self, server: _Server) -> bool:
        with self._lock:
            if server.config is None or self._closed:
                return False
            session = server.session
            if session is None or not session.done():
                return True
            error = session.exception()
            if error is not None:
                return isinstance(error, ServerUnavailable) and self._may_retry(server)
            return session.result().rpc.closed or server.stale or not server.listed

    def _list_quietly(self, server: _Server, refresh: bool = False) -> None:
        try:
            self._list(server, refresh=refresh)
        except JsonRpcError as exc:
            logger.debug("server %r: %s", server.name, exc)

    def _list_many(self, servers: Sequence[_Server], refresh: bool = False) -> None:
        todo = [server for server in servers if refresh or self._needs_work(server)]
        if len(todo) == 1:
            self._list_quietly(todo[0], refresh)
        elif todo:
            workers = min(len(todo), self.max_concurrency)
            with ThreadPoolExecutor(workers, thread_name_prefix="jsonrpc-registry-start") as pool:
                for _ in pool.map(lambda server: self._list_quietly(server, refresh), todo):
                    pass

    def _rebuild_names(self) -> None:
        # Called with _lock held.
        pairs: List[Tuple[str, str]] = []
        tools: Dict[Tuple[str, str], Tuple[_Server, Tool]] = {}
        for server in self._servers.values():
            for tool in server.tools:
                name = tool.get("name") if isinstance(tool, dict) else None
                if not isinstance(name, str):
                    continue
                pair = (server.name, name)
                if pair not in tools:
                    pairs.append(pair)
                    tools[pair] = (server, tool)
        names = assign_names(pairs)
        self._names = {names[pair]: (tools[pair][0], pair[1]) for pair in pairs}
        self._entries = [_descriptor(names[pair], pair[0], tools[pair][1]) for pair in pairs]

    # -- internals: calls ---------------------------------------------------------------

    def _resolve(self, name: str) -> Tuple[_Server, str]:
        with self._lock:
            hit = self._names.get(name)
        if hit is not None:
            return hit
        candidates = [server for server in self._servers.values() if name.startswith(_server_prefix(server.name))]
        # Start the servers it could belong to; fetch again the lists already known
        # (a tool may have appeared without a list_changed notification).
        self._list_many([server for server in candidates if server.config is not None], refresh=True)
        with self._lock:
            hit = self._names.get(name)
            failures = [error for error in (self._failure(server) for server in candidates) if error is not None]
        if hit is not None:
            return hit
        if failures:
            raise failures[0]
        raise UnknownTool(name)

    def _known_tool(self, server: _Server, tool: str) -> None:
        self._list(server)
        for refresh in (False, True):
            if refresh:
                self._list(server, refresh=True)
            with self._lock:
                if any(isinstance(known, dict) and known.get("name") == tool for known in server.tools):
                    return
        raise UnknownTool(tool, server.name)

    def _call(
        self,
        server: _Server,
        tool: str,
        arguments: Optional[Mapping[str, Any]],
        timeout: Timeout,
        on_progress: Optional[ProgressCallback],
    ) -> CallToolResult:
        client = self._session(server)
        if timeout is DEFAULT_TIMEOUT:
            config = server.config
            timeout = config.timeout if config is not None and config.timeout is not None else self.default_timeout
        return client.call_tool(tool, arguments, timeout=timeout, on_progress=on_progress)

    def _explain_lookup(self, name: str, exc: JsonRpcError) -> str:
        if isinstance(exc, UnknownTool):
            return f"unknown tool {name!r}; use one of the tools offered."
        return f"tool {name!r} is unavailable: {exc.message}."

    def _explain_failure(self, server: str, tool: str, exc: JsonRpcError) -> str:
        what = f"tool {tool!r} on server {server!r}"
        if isinstance(exc, RequestTimeout):
            return f"{what} did not finish within {exc.timeout}s; the call was cancelled."
        if isinstance(exc, (ServerUnavailable, ConfigError)):
            return f"{what} is unavailable: {exc.message}."
        if isinstance(exc, TransportClosed):
            code = f" (exit code {exc.returncode})" if exc.returncode is not None else ""
            if self._closed:
                return f"{what} was not run: the tool registry is closed."
            return f"server {server!r} stopped while running tool {tool!r}{code}; it is started again on the next call."
        if isinstance(exc, (HttpConnectionError, HttpError)):
            return f"server {server!r} could not be reached for {what}: {exc.message}."
        return f"server {server!r} refused the call to {what}: {exc.message} (code {exc.code})."


__all__ = [
    "DEFAULT_CALL_TIMEOUT_S",
    "DEFAULT_MAX_CONCURRENCY",
    "DEFAULT_RETRY_FAILED_AFTER_S",
    "DEFAULT_STARTUP_TIMEOUT_S",
    "RegistryTool",
    "ServerUnavailable",
    "ToolRegistry",
    "UnknownServer",
    "UnknownTool",
    "assign_names",
    "namespaced_name",
    "result_text",
]
