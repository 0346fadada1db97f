"""The Model Context Protocol on top of ``jsonrpc_threads.JsonRpcClient``."""

from .errors import ProtocolVersionError
from .listing import Listing
from .registry import ToolRegistry
from .session import McpClient
from .tasks import TaskFuture
from .types import LATEST_PROTOCOL_VERSION, LATEST_SESSION_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS

__all__ = [
    "LATEST_PROTOCOL_VERSION",
    "LATEST_SESSION_PROTOCOL_VERSION",
    "SUPPORTED_PROTOCOL_VERSIONS",
    "Listing",
    "McpClient",
    "ProtocolVersionError",
    "TaskFuture",
    "ToolRegistry",
]
