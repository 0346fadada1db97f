"""What the MCP layer asks of a transport beyond the contract: a server session, a legacy fallback, a revision.

Theory of operation.  The transport contract
(``jsonrpc_threads.transports.base``) moves bytes and knows nothing of
MCP.  Some transports carry more that only MCP uses: Streamable HTTP has a
server session (its id, the negotiated version header, the listen stream,
and the stateless revision that has none of them) and a legacy transport at
the same URL (made here, from its settings: ``legacy_transport_for``); the
HTTP+SSE transport exists only in one old revision.  The protocols below name
those roles.  A transport plays one by its methods and
attributes alone (``runtime_checkable`` structural checks), without importing
this module: the arrows point from ``mcp/`` down, never back up.

No I/O: protocols, one lookup, and the legacy transport made (not started).
"""

from __future__ import annotations

from typing import Any, Optional, Protocol, runtime_checkable

from ..transports.base import Transport


@runtime_checkable
class SessionTransport(Protocol):
    """A transport with a server session (MCP Streamable HTTP).

    ``stateless`` (False until the MCP layer sets it): the transport speaks the
    stateless revision (2026-07-28) of Streamable HTTP: no session id is taken
    from answers or sent, no listen stream opens, no DELETE is sent at close,
    and a broken SSE answer is not resumed (its requests fail, to be sent
    again as new requests).  The MCP layer sets it before its first request.
    """

    protocol_version: Optional[str]
    stateless: bool

    @property
    def session_id(self) -> Optional[str]:
        """The session the server assigned, or ``None``."""

    def reset_session(self) -> None:
        """Forget the session, so the next request starts a new one."""

    def open_listen_stream(self, *, wait: Optional[float] = None) -> None:
        """Open the stream for server-initiated messages (bounded by ``wait``)."""


@runtime_checkable
class RevisionBound(Protocol):
    """A transport that an old protocol revision defines, and that carries only that era.

    The HTTP+SSE transport exists only in MCP 2024-11-05: over it the MCP
    layer speaks the ``initialize`` handshake, never the stateless revision.
    """

    #: The revision that defines the transport (``"2024-11-05"``).
    revision: str


def session_of(transport: Any) -> Optional[SessionTransport]:
    """``transport`` as a ``SessionTransport``, or ``None`` when it has no session."""
    return transport if isinstance(transport, SessionTransport) else None


def legacy_transport_for(transport: Transport) -> Optional[Transport]:
    """For a Streamable HTTP transport, a new, unstarted legacy HTTP+SSE transport to its URL with its settings.

    The fallback the MCP layer makes when a server refuses Streamable HTTP's
    first POST (MCP 2024-11-05's transport lives at the same URL); ``None``
    for any other transport.  ``transport`` is not changed: the caller closes it.
    """
    from ..transports.http import HttpTransport  # noqa: PLC0415 - loaded already when it is one
    from ..transports.sse import SseTransport  # noqa: PLC0415 - the legacy transport, only when asked for

    if type(transport) is not HttpTransport:
        return None
    return SseTransport.from_settings(transport.url, transport.settings)


__all__ = ["RevisionBound", "SessionTransport", "legacy_transport_for", "session_of"]
