"""Framing without I/O: bytes in, messages out.

Each decoder here is fed the bytes a transport read, in pieces of any size,
and hands back the complete messages they hold; none of them reads or writes
anything, starts a thread or takes a lock, so each is tested by feeding every
input split at every offset.  Transports own the file descriptors and sockets
and call these around their reads and writes.

- ``lines``: one JSON text per line (stdio MCP servers, JSON-RPC tools).
- ``content_length``: ``Content-Length`` headers and a body (language servers).
- ``sse``: server-sent events (MCP Streamable HTTP answers and listen streams).

Every decoder enforces a size limit without ever holding an oversized
message whole: it skips the message as it arrives and reports
``Oversized``, with the ids of the responses the message held where it
could tell (``response_ids``: the one scan for them, so that a transport
fails the request an oversized answer was for, and no other).
"""

from __future__ import annotations

from ._events import FramingError, Oversized
from .content_length import ContentLengthDecoder, encode_content_length
from .lines import LineDecoder, encode_line

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ._events import Frame as Frame  # for the transports' annotations
    from .sse import SseDecoder


def __getattr__(name: str) -> Any:
    """``SseDecoder`` on first use: it loads sseclient-py (the HTTP stack's), which stdio never needs."""
    if name == "SseDecoder":
        from .sse import SseDecoder  # noqa: PLC0415

        return SseDecoder
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "ContentLengthDecoder",
    "FramingError",
    "LineDecoder",
    "Oversized",
    "SseDecoder",
    "encode_content_length",
    "encode_line",
]
