"""An MCP server on the official Python SDK's low-level ``Server`` (``mcp.server.lowlevel``), over stdio.

``MCPServer`` always answers a ``*/list`` in one page and has no
``logging/setLevel`` or ``resources/subscribe``; this peer has what it lacks::

    python tests/peers/mcp_lowlevel_server.py [--items N] [--page-size K] [--repeat-cursor]

- ``tools/list``, ``resources/list``, ``resources/templates/list`` and
  ``prompts/list`` each hold ``N`` items (``tool-0`` .. ``tool-<N-1>``, ...),
  ``K`` per page; the cursor is an opaque string.  With ``--repeat-cursor``
  every ``tools/list`` page names the same ``nextCursor`` (a buggy server).
- ``logging/setLevel`` sets the threshold; the tool ``log_all`` sends one
  ``notifications/message`` per level at or above it (data ``"<level> message"``)
  and returns how many it sent.
- ``resources/subscribe`` / ``unsubscribe``; the tool ``touch {"uri"}`` sends
  ``notifications/resources/updated`` when ``uri`` is subscribed.
"""

from __future__ import annotations

import argparse
import base64
import warnings
from typing import Any, Dict, List, Optional, Set

import anyio
import mcp_types as types
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.stdio import stdio_server

warnings.simplefilter("ignore")  # logging is marked deprecated for 2026-07-28

LEVELS = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]


def _page(items: List[Any], cursor: Optional[str], size: int, repeat: bool = False) -> Dict[str, Any]:
    start = int(base64.urlsafe_b64decode(cursor.encode()).decode()) if cursor else 0
    end = start + size
    page: Dict[str, Any] = {"items": items[start:end], "next": None}
    if repeat:
        page["next"] = base64.urlsafe_b64encode(b"0").decode()
    elif end < len(items):
        page["next"] = base64.urlsafe_b64encode(str(end).encode()).decode()
    return page


def build(count: int, page_size: int, repeat_cursor: bool) -> Server:  # type: ignore[type-arg]
    state: Dict[str, Any] = {"level": "debug", "subscribed": set()}
    subscribed: Set[str] = state["subscribed"]
    tools = [
        types.Tool(name=f"tool-{i}", description=f"Tool {i}", input_schema={"type": "object"}) for i in range(count)
    ]
    tools += [
        types.Tool(name="log_all", description="One log message per level", input_schema={"type": "object"}),
        types.Tool(
            name="touch",
            description="Send resources/updated for a subscribed uri",
            input_schema={"type": "object", "properties": {"uri": {"type": "string"}}, "required": ["uri"]},
        ),
    ]
    resources = [types.Resource(name=f"res-{i}", uri=f"memo://res/{i}") for i in range(count)]
    templates = [types.ResourceTemplate(name=f"tpl-{i}", uri_template=f"memo://tpl/{i}/{{x}}") for i in range(count)]
    prompts = [types.Prompt(name=f"prompt-{i}") for i in range(count)]

    async def list_tools(ctx: Any, params: Optional[types.PaginatedRequestParams]) -> types.ListToolsResult:
        page = _page(tools, params.cursor if params else None, page_size, repeat_cursor)
        return types.ListToolsResult(tools=page["items"], next_cursor=page["next"])

    async def list_resources(ctx: Any, params: Optional[types.PaginatedRequestParams]) -> types.ListResourcesResult:
        page = _page(resources, params.cursor if params else None, page_size)
        return types.ListResourcesResult(resources=page["items"], next_cursor=page["next"])

    async def list_templates(
        ctx: Any, params: Optional[types.PaginatedRequestParams]
    ) -> types.ListResourceTemplatesResult:
        page = _page(templates, params.cursor if params else None, page_size)
        return types.ListResourceTemplatesResult(resource_templates=page["items"], next_cursor=page["next"])

    async def list_prompts(ctx: Any, params: Optional[types.PaginatedRequestParams]) -> types.ListPromptsResult:
        page = _page(prompts, params.cursor if params else None, page_size)
        return types.ListPromptsResult(prompts=page["items"], next_cursor=page["next"])

    async def set_level(ctx: Any, params: types.SetLevelRequestParams) -> types.EmptyResult:
        state["level"] = params.level
        return types.EmptyResult()

    async def subscribe(ctx: Any, params: types.SubscribeRequestParams) -> types.EmptyResult:
        subscribed.add(str(params.uri))
        return types.EmptyResult()

    async def unsubscribe(ctx: Any, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
        subscribed.discard(str(params.uri))
        return types.EmptyResult()

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        arguments = params.arguments or {}
        if params.name == "log_all":
            sent = 0
            for level in LEVELS[LEVELS.index(state["level"]) :]:
                await ctx.session.send_log_message(level, f"{level} message", logger="lowlevel-peer")
                sent += 1
            return types.CallToolResult(content=[types.TextContent(type="text", text=str(sent))])
        if params.name == "touch":
            uri = str(arguments.get("uri"))
            if uri in subscribed:
                await ctx.session.send_resource_updated(uri)
            return types.CallToolResult(content=[types.TextContent(type="text", text=str(uri in subscribed))])
        return types.CallToolResult(content=[types.TextContent(type="text", text=f"called {params.name}")])

    return Server(
        "jsonrpc-threads-lowlevel-peer",
        version="1.0.0",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_list_prompts=list_prompts,
        on_set_logging_level=set_level,
        on_subscribe_resource=subscribe,
        on_unsubscribe_resource=unsubscribe,
    )


async def serve(server: Server) -> None:  # type: ignore[type-arg]
    options = server.create_initialization_options(NotificationOptions(tools_changed=True))
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, options)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=50)
    parser.add_argument("--page-size", type=int, default=3)
    parser.add_argument("--repeat-cursor", action="store_true")
    args = parser.parse_args()
    anyio.run(serve, build(args.items, args.page_size, args.repeat_cursor))


if __name__ == "__main__":
    main()
