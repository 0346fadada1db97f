"""jsonrpc_threads: a synchronous, thread-safe JSON-RPC 2.0 and MCP client.

Start with :class:`JsonRpcClient` over a :class:`StdioTransport` (a child
process) or an :class:`HttpTransport` (MCP Streamable HTTP), or with
:class:`jsonrpc_threads.mcp.McpClient` for MCP servers.
"""

import logging

from .client import DEFAULT_TIMEOUT, Batch, JsonRpcClient, lsp_cancellation, mcp_cancellation
from .errors import (
    HttpConnectionError,
    HttpError,
    InternalError,
    InvalidParams,
    InvalidRequest,
    JsonRpcError,
    MessageTooLarge,
    MethodNotFound,
    ParseError,
    RemoteError,
    RequestTimeout,
    SessionExpired,
    TransportClosed,
)
from .transports.base import MessageSink, Transport
from .transports.config import transport_from_config
from .transports.http import HttpTransport
from .transports.stdio import StdioTransport

__version__ = "0.1.0"

logging.getLogger(__name__).addHandler(logging.NullHandler())

__all__ = [
    "DEFAULT_TIMEOUT",
    "Batch",
    "HttpConnectionError",
    "HttpError",
    "HttpTransport",
    "InternalError",
    "InvalidParams",
    "InvalidRequest",
    "JsonRpcClient",
    "JsonRpcError",
    "MessageSink",
    "MessageTooLarge",
    "MethodNotFound",
    "ParseError",
    "RemoteError",
    "RequestTimeout",
    "SessionExpired",
    "StdioTransport",
    "Transport",
    "TransportClosed",
    "lsp_cancellation",
    "mcp_cancellation",
    "transport_from_config",
]
