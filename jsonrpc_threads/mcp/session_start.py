"""How one session of a configured server starts, and how its end reads: the I/O of a supervisor's start.

Theory of operation.  ``start_session`` is one start, run on a background
worker by the ``ServerSupervisor``: the transport, the ``McpClient`` (its
hooks attached to its connection, so they follow it through a fallback to
the legacy transport), the handshake and the first ``tools/list``, all
within one deadline made from ``startup_timeout`` as the start begins.
``session_hook`` is what every JSON-RPC client of a session gets (its close
listener, the wire trace).  ``stop_error`` is what is known of a session
found closed, and ``describe_start_failure`` turns what a start or a session
ended with into the one line that ``status()``, the log and the command line show.

Thread-safety: the functions may be called from any thread.
"""

from __future__ import annotations

import logging
from typing import Callable, Optional, Tuple

from ..client import JsonRpcClient
from ..deadlines.flight import as_call_timeout
from ..deadlines.timeouts import Deadline
from ..errors import JsonRpcError, RequestTimeout, TransportClosed
from ..observe import add_close_listener, trace_wire
from ..transports.base import Transport
from ..transports.config import ServerConfig
from .listing import Listing
from .registry_settings import Settings, TransportFactory
from .server_life import CLOSED
from .session import McpClient
from .transport_roles import session_of

logger = logging.getLogger(__name__)

#: ``hook(client, rpc)`` for every JSON-RPC client a session makes (its close listener, its wire trace).
SessionHook = Callable[[McpClient, JsonRpcClient], None]
#: The most of a server's stderr tail quoted in an error message.
STDERR_LINE_CHARS = 200


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


__all__ = ["STDERR_LINE_CHARS", "SessionHook", "describe_start_failure", "session_hook", "start_session", "stop_error"]
