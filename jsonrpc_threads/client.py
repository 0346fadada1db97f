"""JsonRpcClient: the public face of a JSON-RPC 2.0 client over any transport.

The client lives in ``jsonrpc_threads.core`` (the protocol core in
``protocol``, the threaded shell in
``client``); this module keeps the names importable
from where they always were.
"""

from __future__ import annotations

from .core.client import (
    DEFAULT_HANDLER_WORKERS,
    DEFAULT_TIMEOUT,
    HANDLER_SHUTDOWN_GRACE_S,
    SECOND_CLOSE_WAIT_S,
    Batch,
    JsonRpcClient,
    Timeout,
    lsp_cancellation,
    mcp_cancellation,
)
from .core.peer_messages import ANSWER_SEND_TIMEOUT_S, CANCELLATION_SEND_TIMEOUT_S
from .core.streams import ResponseStream
from .core.teardown import CALLBACK_SHUTDOWN_GRACE_S

__all__ = [
    "ANSWER_SEND_TIMEOUT_S",
    "CALLBACK_SHUTDOWN_GRACE_S",
    "CANCELLATION_SEND_TIMEOUT_S",
    "HANDLER_SHUTDOWN_GRACE_S",
    "SECOND_CLOSE_WAIT_S",
    "DEFAULT_HANDLER_WORKERS",
    "DEFAULT_TIMEOUT",
    "Batch",
    "JsonRpcClient",
    "ResponseStream",
    "Timeout",
    "lsp_cancellation",
    "mcp_cancellation",
]
