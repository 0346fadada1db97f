"""Lists of an MCP server: malformed pages, and how long a list stays fresh (issue 37, items 6 and 7).

Every case runs over a real peer, tests/peers/mcp_pages_peer.py as a child
process: the test writes its pages (malformed ones too), it counts the list
requests it was sent (``test/requests``), and its tool ``add_tool`` adds a
tool without a ``list_changed`` notification, as a server of the stateless
era that cannot send one.
"""

from __future__ import annotations

import json
import time
from typing import Any, Dict, Iterator, List, Optional

import pytest

from jsonrpc_threads import JsonRpcError
from jsonrpc_threads.errors import ProtocolError
from jsonrpc_threads.mcp import McpClient, ToolRegistry
from jsonrpc_threads.mcp.listing import Listing
from jsonrpc_threads.mcp.tool_cache import ToolCache

from .conftest import peer_command
from .registry_support import baseline, make_registry, openai_call  # noqa: F401 - an autouse fixture

TOOL = {"name": "echo", "inputSchema": {"type": "object"}}


def pages_peer(pages: Optional[Dict[str, List[Any]]] = None, *flags: str) -> Dict[str, Any]:
    argv = peer_command("mcp_pages_peer", *flags, "--pages", json.dumps(pages or {}))
    return {"command": argv[0], "args": argv[1:]}


@pytest.fixture
def clients() -> Iterator[List[McpClient]]:
    made: List[McpClient] = []
    yield made
    for client in made:
        client.close()


def client_for(made: List[McpClient], pages: Optional[Dict[str, List[Any]]] = None, *flags: str) -> McpClient:
    client = McpClient(pages_peer(pages, *flags), default_timeout=30.0)
    made.append(client)
    client.initialize()
    return client


def list_requests(client: McpClient) -> List[List[Any]]:
    requests: List[List[Any]] = client.request("test/requests")["requests"]
    return requests


# -- item 6: a malformed page is a library error that names the server and the field ------------

MALFORMED = [
    pytest.param("tools/list", [{"tools": [TOOL], "nextCursor": {"page": 2}}], "nextCursor", 1, id="object-cursor"),
    pytest.param("tools/list", [{"tools": 5}], "tools", 1, id="tools-a-number"),
    pytest.param("tools/list", [{"tools": [TOOL, "echo"]}], "tools[1]", 1, id="tool-not-an-object"),
    pytest.param("tools/list", [{"tools": [{"description": "nameless"}]}], "tools[0].name", 1, id="no-name"),
    pytest.param("tools/list", [{"tools": [{"name": 7}]}], "tools[0].name", 1, id="name-a-number"),
    pytest.param("tools/list", [{"tools": [TOOL], "nextCursor": "1"}, {"tools": {}}], "tools", 2, id="page-2"),
    pytest.param("tools/list", ["not a page"], "result", 1, id="page-a-string"),
    pytest.param("prompts/list", [{"prompts": [{"title": "x"}]}], "prompts[0].name", 1, id="prompt"),
    pytest.param("resources/list", [{"resources": [{"name": "r"}]}], "resources[0].uri", 1, id="resource"),
    pytest.param(
        "resources/templates/list",
        [{"resourceTemplates": [{"uri": "x"}]}],
        "resourceTemplates[0].uriTemplate",
        1,
        id="template",
    ),
    pytest.param("skills/list", [{"skills": [{"frontmatter": {}}]}], "skills[0].uri", 1, id="skill"),
    pytest.param("prompts/list", [{"prompts": [], "nextCursor": 2}], "nextCursor", 1, id="number-cursor"),
]
CALLS = {
    "tools/list": McpClient.list_tools,
    "prompts/list": McpClient.list_prompts,
    "resources/list": McpClient.list_resources,
    "resources/templates/list": McpClient.list_resource_templates,
    "skills/list": McpClient.list_skills,
}


@pytest.mark.parametrize(("method", "pages", "field", "page"), MALFORMED)
def test_a_malformed_page_raises_a_protocol_error_naming_the_server_and_the_field(
    clients: List[McpClient], method: str, pages: List[Any], field: str, page: int
) -> None:
    client = client_for(clients, {method: pages})
    with pytest.raises(ProtocolError) as caught:
        CALLS[method](client)
    error = caught.value
    assert isinstance(error, JsonRpcError) and not isinstance(error, TypeError)
    assert error.data == {"server": client.connection.label, "method": method, "page": page, "field": field}
    assert str(error).startswith(f"{client.connection.label}: {method} page {page}: {field!r} ")
    assert client.call_tool("echo", {"text": "still here"})["content"][0]["text"] == "still here"


def test_a_page_without_its_items_is_an_empty_page(clients: List[McpClient]) -> None:
    client = client_for(clients, {"tools/list": [{"nextCursor": "1"}, {"tools": [TOOL], "nextCursor": None}]})
    assert [tool["name"] for tool in client.list_tools()] == ["echo"]


def test_a_registry_server_with_a_malformed_list_is_reported_by_name() -> None:
    config = {"mcpServers": {"bad": pages_peer({"tools/list": [{"tools": [{"name": None}]}]})}}
    with make_registry(config) as registry:
        assert registry.tools() == []
        assert "tools/list page 1: 'tools[0].name' is missing" in registry.errors["bad"]


# -- item 7: ttlMs, through pagination, in McpClient ----------------------------------------------


def test_a_list_is_as_fresh_as_its_stalest_page(clients: List[McpClient]) -> None:
    fresh = {"tools": [TOOL], "nextCursor": "1", "ttlMs": 60_000}
    stale = {"tools": [{"name": "second", "inputSchema": {"type": "object"}}], "ttlMs": 0}
    client = client_for(clients, {"tools/list": [fresh, stale]}, "--stateless")
    assert [tool["name"] for tool in client.list_tools()] == ["echo", "second"]
    listing = client.listing("tools/list")
    assert listing.ttl_ms == 0 and listing.stale
    # Both pages were fetched again each time: the fresh first page expires with the stale second one.
    assert list_requests(client) == [["tools/list", None], ["tools/list", "1"]] * 2


def test_a_fresh_list_is_not_fetched_again(clients: List[McpClient]) -> None:
    first = {"tools": [TOOL], "nextCursor": "1", "ttlMs": 60_000}
    second = {"tools": [{"name": "second", "inputSchema": {"type": "object"}}], "ttlMs": 30_000}
    client = client_for(clients, {"tools/list": [first, second]}, "--stateless")
    listing = client.listing("tools/list")
    assert listing.ttl_ms == 30_000 and not listing.stale
    again = client.listing("tools/list")  # from the cache: the ttlMs left of it
    assert [tool["name"] for tool in again.items] == ["echo", "second"]
    assert again.ttl_ms is not None and 0 < again.ttl_ms <= 30_000
    assert list_requests(client) == [["tools/list", None], ["tools/list", "1"]]


def test_a_session_era_list_has_no_freshness_hint(clients: List[McpClient]) -> None:
    client = client_for(clients)
    listing = client.listing("tools/list")
    assert (listing.ttl_ms, listing.expires_at, listing.stale, listing.fresh_for()) == (None, None, False, None)
    with pytest.raises(ValueError, match="not a list"):
        client.listing("tools/call")


def test_the_tool_cache_goes_stale_when_its_ttl_passes() -> None:
    cache = ToolCache()
    assert cache.needs_fetch()
    cache.store([TOOL], cache.changes(), Listing([TOOL], 60_000.0, time.monotonic() + 60.0).expires_at)
    assert not cache.needs_fetch()
    cache.store([TOOL], cache.changes(), time.monotonic() - 0.001)
    assert cache.needs_fetch()
    cache.store([TOOL], cache.changes(), None)  # no hint: fresh until list_changed
    assert not cache.needs_fetch()
    cache.changed()
    assert cache.needs_fetch()


# -- item 7: the registry lists again a server whose list went stale ------------------------------


def registry_tools(registry: ToolRegistry) -> List[str]:
    return [tool["name"] for tool in registry.tools()]


def tool_lists(registry: ToolRegistry) -> int:
    client = registry.session("p")
    return sum(1 for method, _ in list_requests(client) if method == "tools/list")


def test_a_tool_added_at_run_time_reaches_the_model_when_the_list_is_stale_at_once() -> None:
    # The default tools page of the stateless peer has no ttlMs: stale at once, as the specification says.
    with make_registry({"mcpServers": {"p": pages_peer(None, "--stateless")}}) as registry:
        assert "mcp__p__added" not in registry_tools(registry)
        registry.call_tool("p", "add_tool", {"name": "added"})
        assert "mcp__p__added" in registry_tools(registry)
        assert registry.resolve("mcp__p__added") == ("p", "added")


def test_a_stale_list_is_fetched_again_by_execute_within_its_deadline() -> None:
    with make_registry({"mcpServers": {"p": pages_peer(None, "--stateless")}}) as registry:
        registry.tools()
        before = tool_lists(registry)
        message = registry.execute(openai_call("mcp__p__echo", {"text": "hi"}), timeout=20.0)
        assert message["content"] == "hi"
        assert tool_lists(registry) == before + 1


def test_calls_that_find_a_fetch_of_a_stale_list_under_way_share_it() -> None:
    # Each tools/list takes a second; four model calls at once, their server's list stale at once: one fetch.
    config = {"mcpServers": {"p": pages_peer(None, "--stateless", "--slow", "1", "--slow-tools-list")}}
    with make_registry(config) as registry:
        registry.tools()
        before = tool_lists(registry)
        calls = [openai_call("mcp__p__echo", {"text": str(n)}, f"call_{n}") for n in range(4)]
        assert [message["content"] for message in registry.execute_all(calls)] == ["0", "1", "2", "3"]
        assert tool_lists(registry) == before + 1


def test_a_list_fresh_for_its_ttl_is_not_fetched_again() -> None:
    page = {"tools/list": [{"tools": [TOOL, {"name": "add_tool", "inputSchema": {}}], "ttlMs": 600_000}]}
    with make_registry({"mcpServers": {"p": pages_peer(page, "--stateless")}}) as registry:
        registry.tools()
        registry.call_tool("p", "add_tool", {"name": "added"})
        assert "mcp__p__added" not in registry_tools(registry)  # the server said: fresh for ten minutes
        registry.execute(openai_call("mcp__p__echo", {"text": "hi"}))
        assert tool_lists(registry) == 1


def test_a_session_era_list_is_kept_until_the_server_says_it_changed() -> None:
    with make_registry({"mcpServers": {"p": pages_peer()}}) as registry:
        registry.tools()
        registry.call_tool("p", "add_tool", {"name": "added"})
        assert "mcp__p__added" not in registry_tools(registry)
        assert tool_lists(registry) == 1
