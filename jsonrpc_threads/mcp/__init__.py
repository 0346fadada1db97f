"""The Model Context Protocol on top of ``jsonrpc_threads.JsonRpcClient``."""

from .errors import ProtocolVersionError
from .listing import Listing
from .registry import ToolRegistry
from .server import Audio, Context, EmbeddedResource, Image, McpServer, ResourceLink
from .session import McpClient
from .tasks import TaskFuture
from .types import LATEST_PROTOCOL_VERSION, LATEST_SESSION_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS

__all__ = [
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
    "ProtocolVersionError",
    "ResourceLink",
    "TaskFuture",
    "ToolRegistry",
]
