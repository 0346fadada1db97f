"""The MCP server side: tool servers written as plain synchronous functions (``McpServer``).

Theory of operation.  A server is a catalog of definitions (tools, resources,
prompts, completions) made by decorators from plain functions; the protocol
engine answers MCP's methods from that catalog in both eras of the protocol
(2025-11-25 with its sessions, and the stateless 2026-07-28), request by
request; the ways to run it (stdio, WSGI, in memory for tests) only move
messages.  User code runs on the server's worker threads or on the WSGI
server's request thread, never on a reader thread or under a library lock.
"""

from .content import Audio, EmbeddedResource, Image, ResourceLink
from .context import Context
from .mcp_server import McpServer

__all__ = ["Audio", "Context", "EmbeddedResource", "Image", "McpServer", "ResourceLink"]
