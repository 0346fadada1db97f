"""An MCP server written with the official Python SDK, over Streamable HTTP.

Run as ``python tests/peers/fastmcp_http_peer.py --port N [--json]``; it listens
on 127.0.0.1:N at ``/mcp``.  ``--json`` makes it stateless with JSON answers
(``stateless_http=True, json_response=True``); without it, it is stateful and
answers with SSE streams (sessions, ``Mcp-Session-Id``).

Works with ``mcp`` 2.x (``MCPServer``) and 1.x (``FastMCP``).  Tools:

- ``add(a: int, b: int) -> int``
- ``count(steps: int) -> str``: reports progress ``1..steps`` (when the
  request carries ``_meta.progressToken``), then returns ``"counted <steps>"``.
"""

from __future__ import annotations

import argparse
from typing import Any

try:  # mcp 2.x
    from mcp.server.mcpserver import Context, MCPServer

    _V2 = True
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp import Context, FastMCP

    _V2 = False


def build(port: int, json_mode: bool) -> Any:
    if _V2:
        server = MCPServer("jsonrpc-threads-test", log_level="WARNING")
    else:
        server = FastMCP(
            "jsonrpc-threads-test",
            host="127.0.0.1",
            port=port,
            stateless_http=json_mode,
            json_response=json_mode,
            log_level="WARNING",
        )

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @server.tool()
    async def count(steps: int, ctx: Context) -> str:
        """Count to ``steps``, reporting progress at each step."""
        for step in range(1, steps + 1):
            await ctx.report_progress(step, steps)
        return f"counted {steps}"

    return server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--json", action="store_true", help="stateless, JSON answers")
    args = parser.parse_args()
    server = build(args.port, args.json)
    if _V2:
        server.run(
            "streamable-http",
            host="127.0.0.1",
            port=args.port,
            stateless_http=args.json,
            json_response=args.json,
        )
    else:
        server.run("streamable-http")


if __name__ == "__main__":
    main()
