"""The Streamable HTTP transport of MCP (revision 2025-11-25), over ``requests``.

Theory of operation.  Every message the client sends is one POST to the
server's URL; the answer is JSON, a stream of server-sent events, or ``202
Accepted``, and each received message goes to the client's sink as bytes.
The transport never reads a method name.  The pieces, each one concern:

- ``_transport``: ``HttpTransport``, the contract of
  ``base`` (``send``, ``drive_call``, ``abandon``, ``close``, the
  session); which thread runs which exchange, and the hooks rule;
- ``_post``: one POST and its answer (JSON, SSE, 202);
- ``_listen``: the GET stream for server-initiated messages;
- ``_session``: the ``Mcp-Session-Id`` and protocol version, and the
  DELETE that ends the session;
- ``_fetch``: a document the caller reads itself (``HttpTransport.fetch``:
  one GET, its JSON body as bytes).

How a request is made, bounded, interrupted and read, and the one resumable
SSE stream, are shared with the legacy transport (``_httpbase``);
secrets are kept out of every log line by ``redact``.
"""

from __future__ import annotations

from .._httpbase.settings import HttpSettings
from .._httpbase.urls import Origin, connect_origin, prepared_url, url_hazard
from .._httpbase.wire import (
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
from ..redact import redact_headers, url_label
from ._transport import HttpTransport

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
    "HttpSettings",
    "HttpTransport",
    "Origin",
    "connect_origin",
    "prepared_url",
    "redact_headers",
    "url_hazard",
    "url_label",
]
