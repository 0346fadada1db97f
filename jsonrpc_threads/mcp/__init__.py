"""The Model Context Protocol on top of ``jsonrpc_threads.JsonRpcClient``."""

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
from .server import Audio, Context, EmbeddedResource, Image, McpServer, ResourceLink
from .session import McpClient
from .tasks import TaskFuture
from .types import LATEST_PROTOCOL_VERSION, LATEST_SESSION_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS

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
