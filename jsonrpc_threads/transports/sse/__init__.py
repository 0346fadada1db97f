"""The legacy HTTP+SSE transport of MCP (revision 2024-11-05), over ``requests``.

Theory of operation.  The client GETs the server's URL and keeps the event
stream open; the server's first event, ``endpoint``, names the URL where the
client POSTs each of its messages (one POST per message, answered ``202
Accepted``); every message of the server (responses, its requests and
notifications) comes as a ``message`` event on the stream.  The transport
never reads a method name.  The pieces:

- ``_transport``: ``SseTransport``, the contract of ``base``
  (``send``, ``close``, fork safety), the POSTs and their deadlines;
- ``_stream``: the event stream's thread: the endpoint, the messages,
  the size limit, bounded resumption, and the end of the transport.

The HTTP pieces are those Streamable HTTP uses too (``_httpbase``): the
settings, the endpoint and its connections (every socket read bounded,
``close()`` interrupting reads), the one resumable SSE stream, the one place
where network errors become this library's exceptions; secrets are kept out
of log lines by ``redact``, and SSE is decoded by
``jsonrpc_threads.framing.sse``.

Servers that speak only this transport are reached through it directly
(``SseTransport(url)``, or ``{"type": "sse", "url": ...}`` in ``mcpServers``);
``McpClient`` also falls back to it, once, when a Streamable HTTP URL refuses
the ``initialize`` POST with 400, 404 or 405.
"""

from __future__ import annotations

from .._httpbase.settings import HttpSettings
from ._transport import ENDPOINT_WAIT_S, SseTransport

__all__ = ["ENDPOINT_WAIT_S", "HttpSettings", "SseTransport"]
