"""An MCP server written with the official Python SDK (``mcp`` 2.x, ``MCPServer``).

Run as a real child process::

    python tests/peers/mcp_sdk_server.py                 # stdio
    python tests/peers/mcp_sdk_server.py --http          # streamable HTTP, stateful (SSE answers)
    python tests/peers/mcp_sdk_server.py --http --json   # stateless_http=True, json_response=True
    python tests/peers/mcp_sdk_server.py --sse           # the legacy HTTP+SSE transport (2024-11-05), at /sse

Over HTTP it listens on 127.0.0.1 on a free port and prints one line,
``listening on http://127.0.0.1:PORT/mcp`` (``.../sse`` with ``--sse``), on
stdout once it accepts connections (the test reads it; no port is guessed).

Tools:

- ``add(a, b)``: ``a + b`` (structured output ``{"result": ...}``).
- ``count(steps, interval=0)``: reports progress ``1..steps`` (``total`` and a
  ``message`` too), ``interval`` seconds apart, then returns ``"counted <steps>"``.
- ``fail(message)``: a tool error: ``isError: true`` with ``message``.
- ``ask_client()``: asks the client for its roots, a sampled message and an
  elicited form (the SDK's resolvers: in 2026-07-28 one ``input_required``
  round, in the session era three requests to the client) and returns the
  answers as ``{"roots": ..., "sampling": ..., "elicitation": ...}``.
- ``ask_client_on_stream()`` (session era): the same three requests, sent by
  hand on the tool call's own stream (``related_request_id``).
- ``roots_standalone()``: sends ``roots/list`` on the connection's own
  channel (over HTTP: the client's GET stream), retrying every 0.5 s until
  answered (a request sent before the GET stream is up is lost), and returns it.
- ``client_capabilities()``: the capabilities the client declared.
- ``never()``: never answers (until cancelled).
- ``cancellations(wait)``: the params of every ``notifications/cancelled``
  this server received, waiting up to ``wait`` seconds for the first one.
- ``log(level, message)``: sends one ``notifications/message`` (in 2026-07-28
  only to a request that named a ``logLevel`` in its ``_meta``).
- ``change_lists(related)``: adds a tool ``extra``, then sends the three
  ``list_changed`` notifications (session era: on the call's stream when
  ``related``; 2026-07-28: to the ``subscriptions/listen`` streams).
- ``touch(uri)`` (2026-07-28): publishes ``notifications/resources/updated``
  for ``uri`` to the ``subscriptions/listen`` streams.
- ``era()``: the protocol version of this request.
- ``abandoned(wait)``: the tools/call request ids whose handler was cancelled
  (over HTTP in 2026-07-28 a closed stream cancels), waiting up to ``wait`` s.
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
from mcp.server.elicitation import ElicitationResult
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.resolve import Elicit, ListRoots, Resolve, Sample
from mcp.shared.message import ServerMessageMetadata
from pydantic import BaseModel
from typing_extensions import Annotated

warnings.simplefilter("ignore")  # the SDK marks logging and roots deprecated for 2026-07-28

NAMES = ["alice", "albert", "bob", "carol"]

#: Every notifications/cancelled received (its params), across sessions.
CANCELLED: List[Dict[str, Any]] = []
_cancelled_event: List[anyio.Event] = []


#: The request ids of tools/call handlers that were cancelled.
ABANDONED: List[str] = []
_abandoned_event: List[anyio.Event] = []


def _abandon_event() -> anyio.Event:
    if not _abandoned_event:
        _abandoned_event.append(anyio.Event())
    return _abandoned_event[0]


class Person(BaseModel):
    name: str
    age: int = 30


def _roots() -> ListRoots:
    return ListRoots()


def _sample() -> Sample:
    return Sample(
        [types.SamplingMessage(role="user", content=types.TextContent(type="text", text="Say hi"))], max_tokens=20
    )


def _who() -> Elicit[Person]:
    return Elicit("Who are you?", Person)


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
    async def ask_client(
        roots: Annotated[types.ListRootsResult, Resolve(_roots)],
        sampled: Annotated[types.CreateMessageResult, Resolve(_sample)],
        elicited: Annotated[ElicitationResult[Person], Resolve(_who)],
    ) -> Dict[str, Any]:
        """Ask the client for its roots, a sampled message and an elicited form (either era)."""
        elicitation: Dict[str, Any] = {"action": elicited.action}
        if elicited.action == "accept":
            elicitation["content"] = elicited.data.model_dump()
        return {
            "roots": roots.model_dump(mode="json", by_alias=True, exclude_none=True),
            "sampling": sampled.model_dump(mode="json", by_alias=True, exclude_none=True),
            "elicitation": elicitation,
        }

    @server.tool()
    async def ask_client_on_stream(ctx: Context) -> Dict[str, Any]:  # type: ignore[type-arg]
        """Session era: ask for roots, sampling and elicitation on the call's own stream."""
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
    async def never(ctx: Context) -> str:  # type: ignore[type-arg]
        """Never answer (until cancelled)."""
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            ABANDONED.append(ctx.request_id)
            _abandon_event().set()
            raise
        return "unreachable"

    @server.tool()
    async def abandoned(wait: float = 0.0) -> List[str]:
        """The request ids of cancelled ``never`` calls, waiting up to ``wait`` s for the first."""
        with anyio.move_on_after(wait):
            await _abandon_event().wait()
        return list(ABANDONED)

    @server.tool()
    def era(ctx: Context) -> str:  # type: ignore[type-arg]
        """The protocol version of this request."""
        return str(ctx.protocol_version)

    @server.tool()
    async def touch(uri: str, ctx: Context) -> str:  # type: ignore[type-arg]
        """Publish resources/updated for ``uri`` (2026-07-28 subscriptions)."""
        await ctx.notify_resource_updated(uri)
        return "touched"

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
        if ctx.protocol_version == "2026-07-28":
            await ctx.notify_tools_changed()
            await ctx.notify_prompts_changed()
            await ctx.notify_resources_changed()
            return "changed"
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


async def serve_http(server: MCPServer, json_mode: bool, sse: bool = False) -> None:  # type: ignore[type-arg]
    if sse:
        app = server.sse_app(host="127.0.0.1")
        path = "/sse"
    else:
        app = server.streamable_http_app(stateless_http=json_mode, json_response=json_mode, host="127.0.0.1")
        path = "/mcp"
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    uv_server = uvicorn.Server(config)

    async def announce() -> None:
        while not uv_server.started:
            await anyio.sleep(0.01)
        print(f"listening on http://127.0.0.1:{port}{path}", flush=True)

    async with anyio.create_task_group() as group:
        group.start_soon(announce)
        await uv_server.serve(sockets=[sock])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", action="store_true", help="streamable HTTP on 127.0.0.1 (a free port)")
    parser.add_argument("--json", action="store_true", help="with --http: stateless, JSON answers")
    parser.add_argument("--sse", action="store_true", help="the legacy HTTP+SSE transport on 127.0.0.1")
    args = parser.parse_args()
    server = build()
    if args.http or args.sse:
        anyio.run(serve_http, server, args.json, args.sse)
    else:
        server.run("stdio")


if __name__ == "__main__":
    main()
