"""An MCP server written with the official Python SDK (``mcp`` 2.x, ``MCPServer``).

Run as a real child process::

    python tests/peers/mcp_sdk_server.py                 # stdio
    python tests/peers/mcp_sdk_server.py --http          # streamable HTTP, stateful (SSE answers)
    python tests/peers/mcp_sdk_server.py --http --json   # stateless_http=True, json_response=True

Over HTTP it listens on 127.0.0.1 on a free port and prints one line,
``listening on http://127.0.0.1:PORT/mcp``, on stdout once it accepts
connections (the test reads it; no port is guessed).

Tools:

- ``add(a, b)``: ``a + b`` (structured output ``{"result": ...}``).
- ``count(steps, interval=0)``: reports progress ``1..steps`` (``total`` and a
  ``message`` too), ``interval`` seconds apart, then returns ``"counted <steps>"``.
- ``fail(message)``: a tool error: ``isError: true`` with ``message``.
- ``ask_client()``: sends ``roots/list``, ``sampling/createMessage`` and
  ``elicitation/create`` to the client (on the tool call's own stream) and
  returns their results as ``{"roots": ..., "sampling": ..., "elicitation": ...}``.
- ``roots_standalone()``: sends ``roots/list`` on the connection's own
  channel (over HTTP: the client's GET stream), retrying every 0.5 s until
  answered (a request sent before the GET stream is up is lost), and returns it.
- ``client_capabilities()``: the capabilities the client declared.
- ``never()``: never answers (until cancelled).
- ``cancellations(wait)``: the params of every ``notifications/cancelled``
  this server received, waiting up to ``wait`` seconds for the first one.
- ``log(level, message)``: sends one ``notifications/message``.
- ``change_lists(related)``: adds a tool ``extra``, then sends the three
  ``list_changed`` notifications (on the call's stream when ``related``).
- ``request_headers()``: the HTTP headers of this request (``{}`` over stdio).
- ``crash(code)``: writes a last word on stderr and exits with ``code`` at once.

Resources: ``memo://greeting`` (text), template ``memo://users/{name}``.
Prompts: ``review(code)``.  Completion: the template's ``name`` argument
completes from a fixed list of names.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import warnings
from typing import Any, Dict, List

import anyio
import mcp_types as types
import uvicorn
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.message import ServerMessageMetadata

warnings.simplefilter("ignore")  # the SDK marks logging and roots deprecated for 2026-07-28

NAMES = ["alice", "albert", "bob", "carol"]

#: Every notifications/cancelled received (its params), across sessions.
CANCELLED: List[Dict[str, Any]] = []
_cancelled_event: List[anyio.Event] = []


def _cancel_event() -> anyio.Event:
    if not _cancelled_event:
        _cancelled_event.append(anyio.Event())
    return _cancelled_event[0]


class RecordCancellations:
    """Middleware: note every ``notifications/cancelled`` before the SDK applies it."""

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        if ctx.method == "notifications/cancelled":
            CANCELLED.append(dict(ctx.params or {}))
            _cancel_event().set()
        return await call_next(ctx)


def build() -> MCPServer:  # type: ignore[type-arg]
    server: MCPServer = MCPServer(  # type: ignore[type-arg]
        "jsonrpc-threads-sdk-peer",
        version="1.0.0",
        instructions="A test peer: tools, resources, prompts and server-to-client requests.",
        log_level="WARNING",
        middleware=[RecordCancellations()],
    )

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @server.tool()
    async def count(steps: int, ctx: Context, interval: float = 0.0) -> str:  # type: ignore[type-arg]
        """Count to ``steps``, reporting progress at each step."""
        for step in range(1, steps + 1):
            if interval:
                await anyio.sleep(interval)
            await ctx.report_progress(step, steps, f"step {step}")
        return f"counted {steps}"

    @server.tool()
    def fail(message: str) -> str:
        """Fail with ``message`` (a tool error, not a protocol error)."""
        raise ToolError(message)

    @server.tool()
    async def ask_client(ctx: Context) -> Dict[str, Any]:  # type: ignore[type-arg]
        """Ask the client for its roots, a sampled message and an elicited form."""
        session = ctx.session
        related = ServerMessageMetadata(related_request_id=ctx.request_context.request_id)
        roots = await session.send_request(types.ListRootsRequest(), types.ListRootsResult, metadata=related)
        sampled = await session.create_message(
            [types.SamplingMessage(role="user", content=types.TextContent(type="text", text="Say hi"))],
            max_tokens=20,
            related_request_id=ctx.request_context.request_id,
        )
        elicited = await session.elicit_form(
            "Who are you?",
            {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "age": {"type": "integer", "default": 30},
                },
                "required": ["name"],
            },
            related_request_id=ctx.request_context.request_id,
        )
        return {
            "roots": roots.model_dump(mode="json", by_alias=True, exclude_none=True),
            "sampling": sampled.model_dump(mode="json", by_alias=True, exclude_none=True),
            "elicitation": elicited.model_dump(mode="json", by_alias=True, exclude_none=True),
        }

    @server.tool()
    async def roots_standalone(ctx: Context) -> Dict[str, Any]:  # type: ignore[type-arg]
        """Ask for the roots on the connection's own channel, not the call's stream."""
        for _ in range(40):
            with anyio.move_on_after(0.5):
                roots = await ctx.session.list_roots()
                return roots.model_dump(mode="json", by_alias=True, exclude_none=True)
        raise ToolError("roots/list on the standalone channel was never answered")

    @server.tool()
    def client_capabilities(ctx: Context) -> Dict[str, Any]:  # type: ignore[type-arg]
        """The capabilities the client declared in initialize."""
        capabilities = ctx.session.client_capabilities
        return capabilities.model_dump(mode="json", by_alias=True, exclude_none=True) if capabilities else {}

    @server.tool()
    async def never() -> str:
        """Never answer."""
        await anyio.sleep_forever()
        return "unreachable"

    @server.tool()
    async def cancellations(wait: float = 0.0) -> List[Dict[str, Any]]:
        """The cancellations received so far, waiting up to ``wait`` s for the first."""
        with anyio.move_on_after(wait):
            await _cancel_event().wait()
        return list(CANCELLED)

    @server.tool()
    async def log(level: str, message: str, ctx: Context) -> str:  # type: ignore[type-arg]
        """Send one log message to the client."""
        await ctx.log(level, message, logger_name="sdk-peer")  # type: ignore[arg-type]
        return "logged"

    @server.tool()
    async def change_lists(ctx: Context, related: bool = False) -> str:  # type: ignore[type-arg]
        """Add a tool, then tell the client that tools, prompts and resources changed."""
        server.add_tool(lambda: "extra", name="extra", description="Added by change_lists")
        related_id = ctx.request_context.request_id if related else None
        for notification in (
            types.ToolListChangedNotification(),
            types.PromptListChangedNotification(),
            types.ResourceListChangedNotification(),
        ):
            await ctx.session.send_notification(notification, related_id)
        return "changed"

    @server.tool()
    def request_headers(ctx: Context) -> Dict[str, str]:  # type: ignore[type-arg]
        """The HTTP headers of this request, names in lower case."""
        return {name.lower(): value for name, value in (ctx.headers or {}).items()}

    @server.tool()
    def crash(code: int) -> str:
        """Exit the process at once, in the middle of the call."""
        sys.stderr.write(f"sdk-peer: crashing with exit code {code}\n")
        sys.stderr.flush()
        os._exit(code)

    @server.resource("memo://greeting", mime_type="text/plain", description="A greeting")
    def greeting() -> str:
        return "hello from the sdk peer"

    @server.resource("memo://users/{name}", mime_type="text/plain", description="One user")
    def user(name: str) -> str:
        return f"user {name}"

    @server.prompt()
    def review(code: str) -> str:
        """Review a piece of code."""
        return f"Please review this code:\n{code}"

    @server.completion()
    async def complete(ref: Any, argument: Any, context: Any) -> types.Completion:
        values = [name for name in NAMES if name.startswith(argument.value)]
        return types.Completion(values=values, total=len(values), has_more=False)

    return server


async def serve_http(server: MCPServer, json_mode: bool) -> None:  # type: ignore[type-arg]
    app = server.streamable_http_app(stateless_http=json_mode, json_response=json_mode, host="127.0.0.1")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    uv_server = uvicorn.Server(config)

    async def announce() -> None:
        while not uv_server.started:
            await anyio.sleep(0.01)
        print(f"listening on http://127.0.0.1:{port}/mcp", flush=True)

    async with anyio.create_task_group() as group:
        group.start_soon(announce)
        await uv_server.serve(sockets=[sock])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", action="store_true", help="streamable HTTP on 127.0.0.1 (a free port)")
    parser.add_argument("--json", action="store_true", help="with --http: stateless, JSON answers")
    args = parser.parse_args()
    server = build()
    if args.http:
        anyio.run(serve_http, server, args.json)
    else:
        server.run("stdio")


if __name__ == "__main__":
    main()
