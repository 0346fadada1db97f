"""What the supervisors of one registry share: their settings, how a session starts, how a failure reads, many at once.

Theory of operation.  ``Settings`` is the registry's configuration, read
by every ``ServerSupervisor`` of it at
each start and call.  ``start_session`` is one start, on a background
worker: the transport, the ``McpClient`` (its
hooks attached to its connection, so they follow it through a fallback to
the legacy transport), the handshake and the first ``tools/list``, all
within one deadline made from ``startup_timeout`` as the start begins.
``session_hook`` is what every JSON-RPC client of a session gets (its close
listener, the wire trace).  ``describe_start_failure`` turns what a start or a session ended with
into the one line that ``status()``, the log and the command line show.
``refresh_all`` and ``stop_all`` work on many supervisors at once.

Thread-safety: the functions may be called from any thread; ``Settings``
is read without a lock (the registry changes a field at a time).
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, List, Mapping, Optional, Sequence, Tuple

from .._deadlines import Deadline, check_timeout
from .._flight import as_call_timeout
from ..client import JsonRpcClient
from ..errors import JsonRpcError, RequestTimeout, TransportClosed
from ..observe import ToolTracing, WireMessage, add_close_listener, trace_wire
from ..transports.base import Transport
from ..transports.config import ServerConfig
from .background import Background
from .listing import Listing
from .restarts import RestartPolicy
from .session import McpClient
from .transport_roles import session_of

if TYPE_CHECKING:
    from .supervisor import ServerSupervisor

logger = logging.getLogger(__name__)

#: Builds the transport of a server from its entry.
TransportFactory = Callable[[ServerConfig], Transport]
#: ``hook(client, rpc)`` for every JSON-RPC client a session makes (its close listener, its wire trace).
SessionHook = Callable[[McpClient, JsonRpcClient], None]

#: The most of a server's stderr tail quoted in an error message.
STDERR_LINE_CHARS = 200
#: The most sessions closed at once by ``stop_all``.
MAX_PARALLEL_CLOSES = 8
#: Default seconds a health ping may take before the server is taken for hung.
DEFAULT_HEALTH_TIMEOUT_S = 10.0
#: The message of what a closed registry refuses.
CLOSED = "ToolRegistry closed"


@dataclass
class Settings:
    """What every supervisor of one registry reads when it starts or calls (shared; the registry may change it).

    Attributes:
        default_timeout: seconds a call may take unless the call or the server's
            ``timeout`` says otherwise.
        startup_timeout: seconds for a start in all: spawn or connect,
            ``initialize`` and the first ``tools/list``.
        retry_failed_after: seconds before a failed server is tried again (``None``: never).
        client_info: ``{"name", "version"}`` sent in ``initialize``.
        policy: how stopped servers are restarted.
        idle_timeout: seconds a session may go without a lease before it is closed (``None``: never).
        health_interval: seconds between health pings of a running session (``None``: none).
        health_timeout: seconds a health ping may take.
        tracing: OpenTelemetry spans for tool calls, or ``None``.
        wire_trace: ``callback(server, message)`` for every message of every
            session (see ``jsonrpc_threads.observe.trace_wire``), or ``None``.
        background: where starts, closes and pings run (replaced after a fork).
    """

    default_timeout: Optional[float]
    startup_timeout: Optional[float]
    retry_failed_after: Optional[float]
    client_info: Optional[Mapping[str, Any]] = None
    policy: RestartPolicy = field(default_factory=RestartPolicy)
    idle_timeout: Optional[float] = None
    health_interval: Optional[float] = None
    health_timeout: float = DEFAULT_HEALTH_TIMEOUT_S
    tracing: Optional[ToolTracing] = None
    wire_trace: Optional[Callable[[str, WireMessage], object]] = None
    background: Background = field(default_factory=lambda: Background(4))

    @classmethod
    def checked(
        cls,
        *,
        default_timeout: Optional[float],
        startup_timeout: Optional[float],
        retry_failed_after: Optional[float],
        client_info: Optional[Mapping[str, Any]],
        policy: RestartPolicy,
        idle_timeout: Optional[float],
        health_interval: Optional[float],
        health_timeout: float,
        tracing: Any,
        wire_trace: Optional[Callable[[str, WireMessage], object]],
        workers: int,
    ) -> Settings:
        """The registry's settings, each checked as it enters; ``workers`` background threads.

        ``tracing``: ``True`` (the global tracer provider), a ``TracerProvider``, or false.

        Raises:
            ValueError, TypeError: for a bad timeout or interval.
            ImportError: ``tracing`` without ``opentelemetry-api``.
        """
        return cls(
            check_timeout(default_timeout, "default_timeout"),
            check_timeout(startup_timeout, "startup_timeout"),
            retry_failed_after,
            client_info,
            policy=policy,
            idle_timeout=_positive_or_none(idle_timeout, "idle_timeout"),
            health_interval=_positive_or_none(health_interval, "health_interval"),
            health_timeout=check_timeout(health_timeout, "health_timeout") or DEFAULT_HEALTH_TIMEOUT_S,
            tracing=None if tracing is False or tracing is None else ToolTracing(None if tracing is True else tracing),
            wire_trace=wire_trace,
            background=Background(workers, "jsonrpc-registry"),
        )


def _positive_or_none(value: Optional[float], name: str) -> Optional[float]:
    seconds = check_timeout(value, name)
    if seconds is not None and seconds <= 0:
        raise ValueError(f"{name} must be > 0 (or None), not {value!r}")
    return seconds


def start_session(
    config: ServerConfig,
    settings: Settings,
    transport_factory: TransportFactory,
    *,
    call_timeout: Optional[float],
    on_tools_changed: Callable[[], None],
    adopt: Callable[[McpClient], bool],
    hook: SessionHook,
) -> Tuple[McpClient, Listing]:
    """Start one session of a server and fetch its tools, within ``startup_timeout`` in all.

    Args:
        config: the server's entry.
        settings: the registry's.
        transport_factory: builds the transport.
        call_timeout: the session's default timeout (the server's ``timeout``, else the registry's).
        on_tools_changed: called on the server's ``notifications/tools/list_changed``.
        adopt: told of the client as soon as it exists (False: the start is
            no longer wanted, and the client is closed).
        hook: attached to every JSON-RPC client of the session.

    Returns:
        The running session and its tools (with how long the server says they stay fresh).

    Raises:
        RequestTimeout: the start took longer than ``startup_timeout`` (its message names that).
        TransportClosed: the server could not be spawned or reached, or the start is no longer wanted.
        JsonRpcError: the handshake or ``tools/list`` failed.
    """
    deadline = Deadline.after(settings.startup_timeout)
    client: Optional[McpClient] = None
    transport: Optional[Transport] = None
    try:
        transport = transport_factory(config)
        client = McpClient(
            transport,
            client_info=settings.client_info,
            default_timeout=call_timeout,
            on_tools_changed=on_tools_changed,
        )
        transport = None  # the client owns it now
        if not adopt(client):
            raise TransportClosed(CLOSED)
        session = client
        client.connection.add_hook(lambda rpc: hook(session, rpc))
        try:
            client.initialize(timeout=deadline.remaining())
            listing = client.listing("tools/list", timeout=deadline.remaining())
        except RequestTimeout as exc:  # it had what was left of the start's timeout: name the whole
            raise as_call_timeout(exc, deadline) from None
        _open_listen_stream(client)
    except BaseException:
        if client is not None:
            client.close()
        elif transport is not None:
            transport.close()
        raise
    return client, listing


def session_hook(
    name: str,
    config: Optional[ServerConfig],
    settings: Settings,
    on_stop: Callable[[McpClient, TransportClosed], None],
) -> SessionHook:
    """The hook ``start_session`` attaches to every JSON-RPC client of a server's sessions.

    Each gets a close listener, which calls ``on_stop(client, error)`` on the
    thread that saw the end (unless the client was replaced meanwhile: the
    first of a fallback to the legacy transport is no stop), and the wire
    trace when ``settings`` asks for one.  Both survive a fallback.
    """
    headers = config.headers if config is not None else None

    def hook(client: McpClient, rpc: JsonRpcClient) -> None:
        def closed(error: TransportClosed) -> None:
            if client.rpc is rpc:
                on_stop(client, error)

        add_close_listener(rpc, closed)
        callback = settings.wire_trace
        if callback is not None:
            trace_wire(rpc, lambda message: callback(name, message), headers=headers)

    return hook


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


def stop_error(client: McpClient) -> TransportClosed:
    """What is known of a session found closed: the transport's exit code and stderr, when it has them."""
    transport = client.rpc.transport
    returncode = getattr(transport, "returncode", None)
    tail_of = getattr(transport, "stderr_tail", None)
    tail = tail_of() if callable(tail_of) else ""
    return TransportClosed(
        "the server stopped",
        returncode=returncode if isinstance(returncode, int) else None,
        stderr_tail=tail if isinstance(tail, str) else "",
    )


def _one_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1][-STDERR_LINE_CHARS:] if lines else ""


def describe_start_failure(exc: BaseException) -> str:
    """One line saying why a start failed or a session stopped (exit code and the last line of stderr included)."""
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


# -- many at once ------------------------------------------------------------------------------


def refresh_all(
    supervisors: Sequence[ServerSupervisor], deadline: Deadline, *, refresh: bool = False, max_concurrency: int = 1
) -> List[JsonRpcError]:
    """Start (or fetch the tools of) the servers that need it, concurrently, within ``deadline``.

    Returns:
        What the starts and fetches failed with, in the order of
        ``supervisors`` (each also logged): a failed start (which the
        supervisor remembers too), or a deadline that passed before a server
        was up or its list was in (which it does not: the start goes on).
    """
    todo = [supervisor for supervisor in supervisors if refresh or supervisor.needs_work()]
    if len(todo) == 1:
        outcomes = [_refresh_quietly(todo[0], refresh, deadline)]
    elif todo:
        with ThreadPoolExecutor(min(len(todo), max_concurrency), thread_name_prefix="jsonrpc-registry-start") as pool:
            outcomes = list(pool.map(lambda supervisor: _refresh_quietly(supervisor, refresh, deadline), todo))
    else:
        outcomes = []
    return [error for error in outcomes if error is not None]


def _refresh_quietly(supervisor: ServerSupervisor, refresh: bool, deadline: Deadline) -> Optional[JsonRpcError]:
    try:
        supervisor.refresh_tools(deadline, refresh=refresh)
    except JsonRpcError as exc:
        logger.debug("server %r: %s", supervisor.name, exc)
        return exc
    return None


def stop_all(supervisors: Sequence[ServerSupervisor]) -> None:
    """Stop every supervisor, then close their sessions (concurrently, each bounded by ``McpClient.close``).

    Plain threads, not an executor: this runs from ``atexit`` too (a web app's
    registry is closed as its worker exits), when ``concurrent.futures``
    refuses new work.  Where no thread can be started, the sessions are closed
    one after the other.
    """
    clients = [client for supervisor in supervisors for client in supervisor.stop()]
    for start in range(0, len(clients), MAX_PARALLEL_CLOSES):
        group = clients[start : start + MAX_PARALLEL_CLOSES]
        if len(group) == 1:
            group[0].close()
            continue
        threads: List[threading.Thread] = []
        for client in group:
            thread = threading.Thread(target=client.close, name="jsonrpc-registry-close", daemon=True)
            try:
                thread.start()
            except RuntimeError:  # the interpreter is finalizing: no new threads
                client.close()
                continue
            threads.append(thread)
        for thread in threads:
            thread.join()  # each close() is bounded (the transport's escalation)


__all__ = [
    "CLOSED",
    "DEFAULT_HEALTH_TIMEOUT_S",
    "MAX_PARALLEL_CLOSES",
    "STDERR_LINE_CHARS",
    "SessionHook",
    "Settings",
    "TransportFactory",
    "describe_start_failure",
    "refresh_all",
    "start_session",
    "stop_all",
    "stop_error",
]
