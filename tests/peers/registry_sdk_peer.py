"""An MCP server written with the official Python SDK, for the tool registry tests.

``python tests/peers/registry_sdk_peer.py`` serves over stdio;
``python tests/peers/registry_sdk_peer.py --http`` binds 127.0.0.1 on a free
port, prints ``PORT <n>`` on stdout once the socket listens, and serves
Streamable HTTP at ``/mcp`` (stateless, JSON answers).

Tools (``mcp`` 2.x ``MCPServer``):

- ``add(a, b)``: the same name as a tool of the bundled example server;
- ``multiply(a, b)``;
- ``sleep(seconds, steps)``: waits, reporting progress after each step;
- ``getenv(name)``: the value of an environment variable of this process
  (``"<unset>"`` when unset);
- ``files.read``: a name with a dot, rewritten by the registry;
- a name of 80 characters, shortened by the registry.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys

import anyio
from mcp.server.mcpserver import Context, MCPServer

LONG_NAME = "a_tool_name_that_is_much_longer_than_the_sixty_four_characters_a_model_api_allows"


def build() -> MCPServer:
    server = MCPServer("registry-sdk-peer", log_level="WARNING")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers (the SDK server's add)."""
        return a + b

    @server.tool()
    def multiply(a: int, b: int) -> int:
        """Multiply two integers."""
        return a * b

    @server.tool()
    async def sleep(seconds: float, ctx: Context, steps: int = 1) -> str:  # type: ignore[type-arg]
        """Wait ``seconds`` in ``steps`` steps, reporting progress after each."""
        for step in range(1, steps + 1):
            await anyio.sleep(seconds / steps)
            await ctx.report_progress(step, steps, f"step {step}")
        return f"slept {seconds}"

    @server.tool()
    def getenv(name: str) -> str:
        """The value of an environment variable of the server's process."""
        return os.environ.get(name, "<unset>")

    @server.tool(name="files.read")
    def files_read(path: str) -> str:
        """A tool whose name has a dot."""
        return f"read {path}"

    @server.tool(name=LONG_NAME)
    def long_name() -> str:
        """A tool whose name is too long for model APIs."""
        return "long"

    return server


def serve_http(server: MCPServer) -> None:
    import uvicorn  # noqa: PLC0415 - only for --http

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    app = server.streamable_http_app(stateless_http=True, json_response=True)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    uvicorn.Server(config).run(sockets=[sock])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", action="store_true")
    args = parser.parse_args()
    server = build()
    if args.http:
        serve_http(server)
    else:
        server.run("stdio")


if __name__ == "__main__":
    sys.exit(main())
