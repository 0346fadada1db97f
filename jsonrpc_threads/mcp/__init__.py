"""The Model Context Protocol on top of ``jsonrpc_threads.JsonRpcClient``; and its server side, ``McpServer``.

The server's names (``McpServer``, ``Context``, the content blocks) load on
first use: a program that only calls servers never imports the server side.
"""

from typing import TYPE_CHECKING, Any

from .errors import (
    HEADER_MISMATCH,
    MCP_ERRORS,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    UNSUPPORTED_PROTOCOL_VERSION,
    HeaderMismatch,
    MissingClientCapability,
    ProtocolVersionError,
    ServerUnavailable,
    SkillVerificationError,
    UnknownServer,
    UnknownTool,
    UnsupportedProtocolVersion,
    error_from_mcp,
)
from .listing import Listing
from .registry import ToolRegistry
from .session import McpClient
from .tasks import TaskFuture
from .types import LATEST_PROTOCOL_VERSION, LATEST_SESSION_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS

if TYPE_CHECKING:
    from .server import Audio, Context, EmbeddedResource, Image, McpServer, ResourceLink

#: The server side's names, loaded from ``jsonrpc_threads.mcp.server`` on first use.
_SERVER_NAMES = frozenset({"Audio", "Context", "EmbeddedResource", "Image", "McpServer", "ResourceLink"})


def __getattr__(name: str) -> Any:
    """The server side's names (``McpServer``, ...), imported when first asked for."""
    if name in _SERVER_NAMES:
        from . import server  # noqa: PLC0415

        return getattr(server, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "HEADER_MISMATCH",
    "MCP_ERRORS",
    "MISSING_REQUIRED_CLIENT_CAPABILITY",
    "UNSUPPORTED_PROTOCOL_VERSION",
    "LATEST_PROTOCOL_VERSION",
    "LATEST_SESSION_PROTOCOL_VERSION",
    "SUPPORTED_PROTOCOL_VERSIONS",
    "Audio",
    "Context",
    "EmbeddedResource",
    "Image",
    "Listing",
    "McpClient",
    "McpServer",
    "HeaderMismatch",
    "MissingClientCapability",
    "ProtocolVersionError",
    "ServerUnavailable",
    "SkillVerificationError",
    "UnknownServer",
    "UnknownTool",
    "UnsupportedProtocolVersion",
    "ResourceLink",
    "TaskFuture",
    "ToolRegistry",
    "error_from_mcp",
]
