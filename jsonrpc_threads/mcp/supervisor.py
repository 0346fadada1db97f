"""One configured MCP server's lifecycle, for the tool registry: start, retry, restart, tool list.

Theory of operation.  A :class:`ServerSupervisor` owns at most one
:class:`~jsonrpc_threads.mcp.McpClient` session for its server, held as a
``Future``: the start in progress, or its outcome.  Whoever needs the session
(:meth:`ServerSupervisor.session`) decides under the supervisor's lock, and
acts after releasing it:

- no session yet, or the last start failed more than ``retry_failed_after``
  seconds ago, or the running session has stopped (the server crashed): this
  thread creates a new future, becomes the one that starts the server, and
  starts it (spawn or connect, ``initialize``, the first ``tools/list``) with
  no lock held;
- a start in progress: wait for its future, so many threads that need the
  server at the same moment cause one start;
- otherwise: the running session, or the start's error.

A failed start becomes :class:`~jsonrpc_threads.errors.ServerUnavailable`,
logged with the reason (and the last line of the server's stderr), and kept
until it may be tried again.  The tool list is fetched when the server starts
and again when it is stale: the server sent ``notifications/tools/list_changed``
since it was fetched (:meth:`ServerSupervisor.refresh_tools`).  Each time the
list changes the supervisor calls ``on_listed`` (with no lock held), for the
registry to name the tools again.

Calls (:meth:`ServerSupervisor.call_tool`) go straight to the session: they are
pipelined on it, never serialized behind a lock.
"""

from __future__ import annotations

import copy
import logging
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, List, Mapping, Optional, Sequence

from ..client import DEFAULT_TIMEOUT, Timeout
from ..errors import ConfigError, JsonRpcError, RequestTimeout, ServerUnavailable, TransportClosed, UnknownTool
from ..transports.base import Transport, session_of
from ..transports.config import ServerConfig
from .session import McpClient, ProgressCallback
from .types import CallToolResult, Tool

logger = logging.getLogger(__name__)

#: Builds the transport of a server from its entry.
TransportFactory = Callable[[ServerConfig], Transport]

#: The most of a server's stderr tail quoted in an error message.
STDERR_LINE_CHARS = 200
#: The most sessions closed at once by :func:`stop_all`.
MAX_PARALLEL_CLOSES = 8
_CLOSED = "ToolRegistry closed"


@dataclass
class Settings:
    """What every supervisor of one registry reads when it starts or calls (shared; the registry may change it).

    Attributes:
        default_timeout: seconds a call may take unless the call or the server's
            ``timeout`` says otherwise.
        startup_timeout: seconds for ``initialize`` and the first ``tools/list``.
        retry_failed_after: seconds before a failed start is tried again (``None``: never).
        client_info: ``{"name", "version"}`` sent in ``initialize``.
    """

    default_timeout: Optional[float]
    startup_timeout: Optional[float]
    retry_failed_after: Optional[float]
    client_info: Optional[Mapping[str, Any]] = None


class ServerSupervisor:
    """The session and the tool list of one configured server.  Thread-safe.

    Args:
        name: the server's name in the configuration.
        config: its parsed entry, or ``None`` when the entry is unusable.
        config_error: why the entry is unusable, or ``None``.
        settings: the registry's timeouts and client info.
        transport_factory: builds the server's transport.
        on_listed: called (no argument, no lock held) whenever the tool list
            changed: fetched, or emptied because the server is starting again.
        on_tools_changed: ``callback(name)`` when the server says its tools
            changed (on a worker thread of its session).
    """

    def __init__(
        self,
        name: str,
        config: Optional[ServerConfig],
        config_error: Optional[ConfigError],
        settings: Settings,
        *,
        transport_factory: TransportFactory,
        on_listed: Callable[[], None],
        on_tools_changed: Optional[Callable[[str], None]] = None,
    ) -> None:
        self.name = name
        self.config = config
        self.config_error = config_error
        self._settings = settings
        self._transport_factory = transport_factory
        self._on_listed = on_listed
        self._on_tools_changed = on_tools_changed
        # _lock guards every field below.
        self._lock = threading.Lock()
        self._closed = False
        self._session: Optional[Future[McpClient]] = None  # the start in progress, or its outcome
        self._starting: Optional[McpClient] = None  # the session being started (stop() closes it)
        self._failed_at = 0.0
        self._tools: List[Tool] = []
        self._listed = False
        self._listings = 0  # how many times _tools was fetched
        self._changes = 0  # list_changed notifications received
        self._listed_changes = 0  # the value of _changes when _tools was fetched

    # -- state ------------------------------------------------------------------------------

    def tools(self) -> List[Tool]:
        """The tools as last fetched (empty before the server started)."""
        with self._lock:
            return list(self._tools)

    def failure(self) -> Optional[JsonRpcError]:
        """Why the server is unavailable: its :class:`ConfigError`, or its last start's :class:`ServerUnavailable`."""
        if self.config_error is not None:
            return self.config_error
        with self._lock:
            session = self._session
        if session is not None and session.done():
            error = session.exception()
            if isinstance(error, ServerUnavailable):
                return error
        return None

    def started(self) -> bool:
        """True while the server has a running session."""
        with self._lock:
            session = self._session
        if session is None or not session.done() or session.exception() is not None:
            return False
        return not session.result().rpc.closed

    def needs_work(self) -> bool:
        """True when :meth:`refresh_tools` would start the server or fetch its tools."""
        with self._lock:
            if self.config is None or self._closed:
                return False
            session = self._session
            if session is None or not session.done():
                return True
            error = session.exception()
            if error is not None:
                return isinstance(error, ServerUnavailable) and self._may_retry()
            return session.result().rpc.closed or self._stale() or not self._listed

    # -- the session -------------------------------------------------------------------------

    def session(self) -> McpClient:
        """The running session: started now (once, however many threads ask) if needed.

        Raises:
            ConfigError: the entry is unusable.
            ServerUnavailable: the server failed to start (now, or recently).
            TransportClosed: the registry is closed.
        """
        stale_client: Optional[McpClient] = None
        with self._lock:
            if self._closed:
                raise TransportClosed(_CLOSED)
            if self.config is None:
                assert self.config_error is not None
                raise copy.copy(self.config_error)
            future = self._session
            if future is not None and future.done():
                error = future.exception()
                if error is None:
                    client = future.result()
                    if client.rpc.closed:  # it stopped (crashed) since: start it again
                        stale_client = client
                        future = None
                elif isinstance(error, ServerUnavailable) and self._may_retry():
                    future = None
            owner = future is None
            if future is None:
                future = self._session = Future()
                self._tools = []
                self._listed = False
        if owner:
            self._on_listed()  # its tools are gone until it is up again
        if stale_client is not None:
            logger.info("server %r stopped; starting it again", self.name)
            stale_client.close()  # reap the old process
        if owner:
            self._start(future)
        try:
            return future.result()
        except JsonRpcError as exc:  # one error kept for many callers: raise a copy (a fresh traceback)
            raise copy.copy(exc) from None

    def _may_retry(self) -> bool:
        # Called with _lock held.
        retry = self._settings.retry_failed_after
        return retry is not None and time.monotonic() - self._failed_at >= retry

    def _stale(self) -> bool:
        # Called with _lock held.
        return self._listed_changes != self._changes

    def _call_timeout(self) -> Optional[float]:
        config = self.config
        if config is not None and config.timeout is not None:
            return config.timeout
        return self._settings.default_timeout

    def _start(self, future: Future[McpClient]) -> None:
        config = self.config
        assert config is not None
        settings = self._settings
        client: Optional[McpClient] = None
        transport: Optional[Transport] = None
        try:
            transport = self._transport_factory(config)
            client = McpClient(
                transport,
                client_info=settings.client_info,
                default_timeout=self._call_timeout(),
                on_tools_changed=self._tools_changed,
            )
            transport = None  # the client owns it now
            with self._lock:
                closed = self._closed
                if not closed:
                    self._starting = client
            if closed:
                raise TransportClosed(_CLOSED)
            client.initialize(timeout=settings.startup_timeout)
            tools = client.list_tools(timeout=settings.startup_timeout)
            _open_listen_stream(client)
        except BaseException as exc:
            if client is not None:
                client.close()
            elif transport is not None:
                transport.close()
            with self._lock:
                self._starting = None
                self._failed_at = time.monotonic()
                closed = self._closed
            if closed:
                error: JsonRpcError = TransportClosed(_CLOSED)
            else:
                reason = describe_start_failure(exc)
                error = ServerUnavailable(self.name, reason, timed_out=isinstance(exc, RequestTimeout))
                logger.warning("MCP %s", error.message)
                if isinstance(exc, TransportClosed) and exc.stderr_tail:
                    logger.warning("server %r: stderr ends with:\n%s", self.name, exc.stderr_tail)
            future.set_exception(error)
            if not isinstance(exc, Exception):
                raise
            return
        with self._lock:
            self._starting = None
            closed = self._closed
            if not closed:
                self._set_tools(tools, self._changes)
        if closed:
            client.close()
            future.set_exception(TransportClosed(_CLOSED))
            return
        self._on_listed()
        logger.info("MCP server %r started with %d tools", self.name, len(tools))
        future.set_result(client)

    def _set_tools(self, tools: Sequence[Tool], changes: int) -> None:
        # Called with _lock held.
        self._tools = list(tools)
        self._listed = True
        self._listings += 1
        self._listed_changes = changes

    def _tools_changed(self) -> None:
        # Runs on a worker thread of the server's session.
        with self._lock:
            self._changes += 1
        logger.info("server %r: tool list changed", self.name)
        if self._on_tools_changed is not None:
            self._on_tools_changed(self.name)

    # -- the tool list and calls -------------------------------------------------------------

    def refresh_tools(self, *, refresh: bool = False) -> None:
        """Start the server if needed, and fetch its tools when stale (or ``refresh``).

        Raises:
            ConfigError, ServerUnavailable, TransportClosed: as :meth:`session`.
            JsonRpcError: ``tools/list`` failed.
        """
        with self._lock:
            listings = self._listings
        client = self.session()
        with self._lock:
            changes = self._changes
            if self._listings != listings:
                refresh = False  # just started: the list is fresh
            needed = refresh or self._stale() or not self._listed
        if not needed:
            return
        tools = client.list_tools()
        with self._lock:
            session = self._session
            current = (
                session is not None and session.done() and session.exception() is None and session.result() is client
            )
            if current:
                self._set_tools(tools, changes)
        if current:
            self._on_listed()

    def ensure_tool(self, tool: str) -> None:
        """Start the server if needed and check that it offers ``tool`` (fetching its list again once).

        Raises:
            UnknownTool: it does not.
            ConfigError, ServerUnavailable, TransportClosed: as :meth:`session`.
        """
        self.refresh_tools()
        for refresh in (False, True):
            if refresh:
                self.refresh_tools(refresh=True)
            with self._lock:
                if any(isinstance(known, dict) and known.get("name") == tool for known in self._tools):
                    return
        raise UnknownTool(tool, self.name)

    def call_tool(
        self,
        tool: str,
        arguments: Optional[Mapping[str, Any]],
        timeout: Timeout = DEFAULT_TIMEOUT,
        on_progress: Optional[ProgressCallback] = None,
    ) -> CallToolResult:
        """Call ``tool`` on the running session (started now if needed).

        ``timeout`` defaults to the server's ``timeout``, else the registry's
        ``default_timeout``.

        Raises:
            As :meth:`session`, then as :meth:`McpClient.call_tool`.
        """
        client = self.session()
        if timeout is DEFAULT_TIMEOUT:
            timeout = self._call_timeout()
        return client.call_tool(tool, arguments, timeout=timeout, on_progress=on_progress)

    # -- the end -----------------------------------------------------------------------------

    def stop(self) -> Optional[Future[McpClient]]:
        """Refuse new starts and interrupt the one in progress (it fails at once, and closes it).

        Returns:
            The session's future, for the caller to close the session once it
            settles (``None`` when it never started).
        """
        with self._lock:
            self._closed = True
            session, starting = self._session, self._starting
        if starting is not None:
            starting.close()
        return session

    def __repr__(self) -> str:
        return f"<ServerSupervisor {self.name!r}{' running' if self.started() else ''}>"


# -- many at once ------------------------------------------------------------------------------


def refresh_all(supervisors: Sequence[ServerSupervisor], *, refresh: bool = False, max_concurrency: int = 1) -> None:
    """Start (or fetch the tools of) the servers that need it, concurrently; failures are logged, not raised."""
    todo = [supervisor for supervisor in supervisors if refresh or supervisor.needs_work()]
    if len(todo) == 1:
        _refresh_quietly(todo[0], refresh)
    elif todo:
        with ThreadPoolExecutor(min(len(todo), max_concurrency), thread_name_prefix="jsonrpc-registry-start") as pool:
            for _ in pool.map(lambda supervisor: _refresh_quietly(supervisor, refresh), todo):
                pass


def _refresh_quietly(supervisor: ServerSupervisor, refresh: bool) -> None:
    try:
        supervisor.refresh_tools(refresh=refresh)
    except JsonRpcError as exc:
        logger.debug("server %r: %s", supervisor.name, exc)


def stop_all(supervisors: Sequence[ServerSupervisor]) -> None:
    """Stop every supervisor, then close their sessions (concurrently, each bounded by ``McpClient.close``)."""
    sessions = [session for session in (supervisor.stop() for supervisor in supervisors) if session is not None]
    clients: List[McpClient] = []
    for session in sessions:
        try:
            clients.append(session.result())
        except BaseException as exc:  # a failed start holds nothing
            logger.debug("closing: a start had failed: %s", exc)
    if len(clients) == 1:
        clients[0].close()
    elif clients:
        workers = min(len(clients), MAX_PARALLEL_CLOSES)
        with ThreadPoolExecutor(workers, thread_name_prefix="jsonrpc-registry-close") as pool:
            for _ in pool.map(McpClient.close, clients):
                pass


# -- helpers -----------------------------------------------------------------------------------


def _open_listen_stream(client: McpClient) -> None:
    """Over Streamable HTTP, open the stream on which list_changed arrives (when the server sends it)."""
    tools_capability = client.server_capabilities.get("tools")
    if not (isinstance(tools_capability, dict) and tools_capability.get("listChanged")):
        return
    session = session_of(client.rpc.transport)
    if session is None:
        return
    try:
        session.open_listen_stream()
    except JsonRpcError as exc:
        logger.debug("no listen stream for list_changed: %s", exc)


def _one_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1][-STDERR_LINE_CHARS:] if lines else ""


def describe_start_failure(exc: BaseException) -> str:
    """One line saying why a start failed (exit code and the last line of stderr included)."""
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


__all__ = [
    "MAX_PARALLEL_CLOSES",
    "STDERR_LINE_CHARS",
    "ServerSupervisor",
    "Settings",
    "TransportFactory",
    "describe_start_failure",
    "refresh_all",
    "stop_all",
]
