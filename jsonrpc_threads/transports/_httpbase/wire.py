"""What the wire looks like: header names, media types, and every limit and delay of the HTTP transports.

Pure constants, no code: each wait and bound of the two HTTP transports (Streamable
HTTP and the legacy HTTP+SSE) has its name here.
"""

from __future__ import annotations

#: Seconds to wait for a TCP (and TLS) connection to the server.
DEFAULT_CONNECT_TIMEOUT_S = 10.0
#: Seconds a socket read may wait for the next bytes of an answer.  The
#: per-request deadline is the client's; this only bounds a silent server.
DEFAULT_READ_TIMEOUT_S = 300.0
#: Threads that carry POSTs with requests (one per request in flight).
DEFAULT_MAX_WORKERS = 16
#: The largest JSON body or SSE event accepted.
DEFAULT_MAX_MESSAGE_BYTES = 16 * 1024 * 1024
#: Resumptions of a broken SSE stream: in all for a POST's answer, in a row for a long-lived stream.
DEFAULT_MAX_RESUMPTIONS = 3
#: The reconnection delay when the server sent no ``retry`` field.
DEFAULT_RETRY_S = 1.0
#: Upper bound of the reconnection delay, however much it backs off.
MAX_RETRY_S = 60.0
#: A long-lived stream (the listen stream, the legacy transport's) that stayed open this
#: long, or delivered a message, was healthy: its next resumption waits the server's
#: ``retry`` delay again, without backoff, and the resumptions are counted afresh.
HEALTHY_STREAM_S = 10.0
#: Threads that carry messages without requests for a transport whose hooks
#: (``auth``, ``header_provider``) may block: the sender waits with its deadline.
HOOK_SEND_WORKERS = 4
#: Connect timeout, and read timeout, of the DELETE that ends the session on close.
DELETE_TIMEOUT_S = 2.0
#: How long ``close()`` waits for the pool and listen threads to end.
CLOSE_JOIN_GRACE_S = 2.0
#: How long a second ``close()`` waits for the first one to finish.
CLOSE_WAIT_S = 2 * DELETE_TIMEOUT_S + 2 * CLOSE_JOIN_GRACE_S + 1.0
#: Characters of an unexpected answer's body kept in ``HttpError``.
BODY_EXCERPT_CHARS = 300
#: Bytes of an error answer's body read to look for a JSON-RPC error.
ERROR_BODY_LIMIT_BYTES = 64 * 1024
#: The most bytes one socket read asks for.
CHUNK_BYTES = 64 * 1024

SESSION_HEADER = "Mcp-Session-Id"
PROTOCOL_VERSION_HEADER = "MCP-Protocol-Version"
LAST_EVENT_ID_HEADER = "Last-Event-ID"
ACCEPT_POST = "application/json, text/event-stream"
ACCEPT_STREAM = "text/event-stream"
JSON_TYPE = "application/json"
SSE_TYPE = "text/event-stream"
