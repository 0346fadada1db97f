"""Case 12's other servers: the official SDK's ``MCPServer`` and FastMCP, each with the same ``echo`` tool.

Usage::

    python benchmarks/server_peers.py sdk stdio            # MCPServer over stdio
    python benchmarks/server_peers.py sdk http             # under uvicorn: stateless, JSON answers
    python benchmarks/server_peers.py sdk http --session   # under uvicorn: sessions, JSON answers
    python benchmarks/server_peers.py fastmcp http         # FastMCP under uvicorn: stateless, JSON answers

Over HTTP the server listens on a free port of 127.0.0.1 and prints one line,
``listening on http://127.0.0.1:PORT/mcp``, once uvicorn accepts connections
(one process, uvicorn's defaults: its asyncio loop and h11, as installed).
The listening socket is made with ``IPPROTO_TCP`` and ``TCP_NODELAY``, as
uvicorn makes its own (see the A2A case in benchmarks/README.md).
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import warnings
from typing import Any

warnings.simplefilter("ignore")  # the SDK marks parts of the 2025 era deprecated for 2026-07-28


def sdk_server() -> Any:
    from mcp.server.mcpserver import MCPServer  # type: ignore[import-not-found,unused-ignore]  # noqa: PLC0415

    server = MCPServer("bench-echo")

    @server.tool()
    def echo(text: str) -> str:
        """Echo the text back."""
        return text

    return server


def fastmcp_server() -> Any:
    from fastmcp import FastMCP  # type: ignore[import-not-found,unused-ignore]  # noqa: PLC0415

    server = FastMCP("bench-echo")

    @server.tool  # type: ignore[untyped-decorator,unused-ignore]
    def echo(text: str) -> str:
        """Echo the text back."""
        return text

    return server


async def serve_http(app: Any) -> None:
    import uvicorn  # type: ignore[import-not-found,unused-ignore]  # noqa: PLC0415

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on"))

    async def announce() -> None:
        while not server.started:
            await asyncio.sleep(0.01)
        print(f"listening on http://127.0.0.1:{port}/mcp", flush=True)

    announcing = asyncio.ensure_future(announce())
    await server.serve(sockets=[sock])
    announcing.cancel()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("kind", choices=("sdk", "fastmcp"))
    parser.add_argument("transport", choices=("stdio", "http"))
    parser.add_argument("--session", action="store_true", help="over HTTP: sessions (the 2025 era), JSON answers")
    args = parser.parse_args()
    server = sdk_server() if args.kind == "sdk" else fastmcp_server()
    if args.transport == "stdio":
        server.run("stdio")
        return
    stateless = not args.session
    if args.kind == "sdk":
        app = server.streamable_http_app(stateless_http=stateless, json_response=True, host="127.0.0.1")
    else:
        app = server.http_app(stateless_http=stateless, json_response=True)
    asyncio.run(serve_http(app))


if __name__ == "__main__":
    main()
