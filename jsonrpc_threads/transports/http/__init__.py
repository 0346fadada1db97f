"""The Streamable HTTP transport of MCP (revision 2025-11-25), over ``requests``.

Theory of operation.  Every message the client sends is one POST to the
server's URL; the answer is JSON, a stream of server-sent events, or ``202
Accepted``, and each received message goes to the client's sink as bytes.
The transport never reads a method name.  The pieces, each one concern:

- :mod:`._transport`: :class:`HttpTransport`, the contract of
  :mod:`..base` (``send``, ``drive_call``, ``abandon``, ``close``, the
  session); which thread runs which exchange, and the hooks rule;
- :mod:`._exchange`: the state of one exchange (its requests, its deadline,
  its resumptions) and how it stops early, freeing its thread;
- :mod:`._post`: one POST and its answer (JSON, SSE, 202), and the
  resumption of a broken SSE stream (``Last-Event-ID``, ``retry``);
- :mod:`._reading`: reading a body with every socket read bounded by the
  exchange; SSE bodies are decoded by :mod:`jsonrpc_threads.framing.sse`;
- :mod:`._listen`: the GET stream for server-initiated messages;
- :mod:`._endpoint`: the URL over one ``requests.Session``, the headers of
  each request, and the request itself;
- :mod:`._connections`: connections whose sockets ``close()`` and a stopped
  exchange can shut down, so a blocked read ends at once;
- :mod:`._session`: the ``Mcp-Session-Id`` and protocol version, and the
  DELETE that ends the session;
- :mod:`._errors`: the one place where network errors and HTTP statuses
  become this library's exceptions;
- :mod:`._redact`: secrets kept out of every log line, urllib3's included;
- :mod:`._sink`: the guarded calls into the client's sink;
- :mod:`._wire`: header names, media types, and every named limit and delay.
"""

from __future__ import annotations

from ._redact import redact_headers, url_label
from ._transport import HttpTransport
from ._wire import (
    CLOSE_JOIN_GRACE_S,
    CLOSE_WAIT_S,
    DEFAULT_CONNECT_TIMEOUT_S,
    DEFAULT_MAX_MESSAGE_BYTES,
    DEFAULT_MAX_RESUMPTIONS,
    DEFAULT_MAX_WORKERS,
    DEFAULT_READ_TIMEOUT_S,
    DEFAULT_RETRY_S,
    DELETE_TIMEOUT_S,
    MAX_RETRY_S,
)

__all__ = [
    "CLOSE_JOIN_GRACE_S",
    "CLOSE_WAIT_S",
    "DEFAULT_CONNECT_TIMEOUT_S",
    "DEFAULT_MAX_MESSAGE_BYTES",
    "DEFAULT_MAX_RESUMPTIONS",
    "DEFAULT_MAX_WORKERS",
    "DEFAULT_READ_TIMEOUT_S",
    "DEFAULT_RETRY_S",
    "DELETE_TIMEOUT_S",
    "MAX_RETRY_S",
    "HttpTransport",
    "redact_headers",
    "url_label",
]
