"""jsonrpc_threads: a synchronous, thread-safe JSON-RPC 2.0 and MCP client.

Start with ``JsonRpcClient`` over a ``StdioTransport`` (a child
process), an ``HttpTransport`` (MCP Streamable HTTP) or an
``SseTransport`` (MCP's legacy HTTP+SSE transport), or with
``jsonrpc_threads.mcp.McpClient`` for MCP servers.

Importing the package costs almost nothing: only the exception tree is loaded
here.  Every other public name is imported the first time it is used
(``from jsonrpc_threads import HttpTransport`` loads ``requests`` then, not
before), so a stdio-only program, and a tool server written on
``jsonrpc_threads.server``, never pay for the HTTP stack.
"""

from __future__ import annotations

from ._version import __version__
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
    RequestCancelled,
    RequestTimeout,
    SessionExpired,
    TransportClosed,
)

TYPE_CHECKING = False  # typing, logging and importlib are not loaded here: see the docstring
if TYPE_CHECKING:
    from typing import Any, Dict, List

    from .client import DEFAULT_TIMEOUT, Batch, JsonRpcClient, ResponseStream, lsp_cancellation, mcp_cancellation
    from .transports.base import MessageSink, Transport
    from .transports.config import transport_from_config
    from .transports.http import HttpTransport
    from .transports.sse import SseTransport
    from .transports.stdio import StdioTransport

#: Public names imported on first use: name -> the module that defines it.
_LAZY: Dict[str, str] = {
    "DEFAULT_TIMEOUT": ".client",
    "Batch": ".client",
    "JsonRpcClient": ".client",
    "ResponseStream": ".client",
    "lsp_cancellation": ".client",
    "mcp_cancellation": ".client",
    "MessageSink": ".transports.base",
    "Transport": ".transports.base",
    "transport_from_config": ".transports.config",
    "HttpTransport": ".transports.http",
    "SseTransport": ".transports.sse",
    "StdioTransport": ".transports.stdio",
}


def __getattr__(name: str) -> Any:
    """Import a public name on first use (PEP 562) and keep it in the module's namespace."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module  # noqa: PLC0415 - on first use only

    value = getattr(import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> List[str]:
    return sorted(set(globals()) | set(_LAZY))


# The package logger gets its NullHandler when logging is first used (see runtime/logs.py).

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
    "RequestCancelled",
    "RequestTimeout",
    "ResponseStream",
    "SessionExpired",
    "SseTransport",
    "StdioTransport",
    "Transport",
    "TransportClosed",
    "__version__",
    "lsp_cancellation",
    "mcp_cancellation",
    "transport_from_config",
]
