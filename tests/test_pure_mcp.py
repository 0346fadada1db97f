"""MCP lists and eras, and the registry's lists, in memory: tests/test_mcp_listing.py's cases in the pure tier.

The server is tests/peers/mcp_pages_peer.py's, run in this process over a
``MemoryTransport`` pair (tests/memory_peers.py): the test writes its pages
(malformed ones too), ``test/requests`` counts the list requests, ``add_tool``
adds a tool without ``list_changed``.  The registry reaches it through its
public ``transport_factory``.  tests/test_mcp_listing.py keeps the same
behaviours over the real child process.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Iterator, List

import pytest

from jsonrpc_threads import JsonRpcError
from jsonrpc_threads.errors import ProtocolError
from jsonrpc_threads.mcp import McpClient, ToolRegistry

from .memory_peers import PeerEnd, PeerEnds, pages_peer
from .registry_support import openai_call

TOOL = {"name": "echo", "inputSchema": {"type": "object"}}
WAIT_S = 10.0

MALFORMED = [
    pytest.param("tools/list", [{"tools": [TOOL], "nextCursor": {"page": 2}}], "nextCursor", 1, id="object-cursor"),
    pytest.param("tools/list", [{"tools": 5}], "tools", 1, id="tools-a-number"),
    pytest.param("tools/list", [{"tools": [TOOL, "echo"]}], "tools[1]", 1, id="tool-not-an-object"),
    pytest.param("tools/list", [{"tools": [{"description": "nameless"}]}], "tools[0].name", 1, id="no-name"),
    pytest.param("tools/list", [{"tools": [TOOL], "nextCursor": "1"}, {"tools": {}}], "tools", 2, id="page-2"),
    pytest.param("tools/list", ["not a page"], "result", 1, id="page-a-string"),
    pytest.param("prompts/list", [{"prompts": [{"title": "x"}]}], "prompts[0].name", 1, id="prompt"),
    pytest.param("resources/list", [{"resources": [{"name": "r"}]}], "resources[0].uri", 1, id="resource"),
    pytest.param("skills/list", [{"skills": [{"frontmatter": {}}]}], "skills[0].uri", 1, id="skill"),
]
CALLS: Dict[str, Callable[[McpClient], Any]] = {
    "tools/list": McpClient.list_tools,
    "prompts/list": McpClient.list_prompts,
    "resources/list": McpClient.list_resources,
    "skills/list": McpClient.list_skills,
}


@pytest.fixture
def ends() -> Iterator[PeerEnds]:
    made = PeerEnds()
    yield made
    made.close_all()


@pytest.fixture
def clients(ends: PeerEnds) -> Iterator[List[McpClient]]:
    made: List[McpClient] = []
    yield made
    for client in made:
        client.close()


def client_for(clients: List[McpClient], ends: PeerEnds, end: PeerEnd) -> McpClient:
    ends.add(end)
    client = McpClient(end.transport, default_timeout=WAIT_S)
    clients.append(client)
    client.initialize()
    return client


def list_requests(client: McpClient) -> List[List[Any]]:
    requests: List[List[Any]] = client.request("test/requests")["requests"]
    return requests


def registry_of(ends: PeerEnds, make: Callable[[], PeerEnd], **options: Any) -> ToolRegistry:
    """A registry of one server ``p`` whose every start makes a fresh peer in memory."""
    options.setdefault("default_timeout", WAIT_S)
    options.setdefault("startup_timeout", WAIT_S)
    return ToolRegistry.from_config(
        {"mcpServers": {"p": {"command": "in-memory"}}},
        transport_factory=lambda config: ends.add(make()).transport,
        **options,
    )


def tool_names(registry: ToolRegistry) -> List[str]:
    return [tool["name"] for tool in registry.tools()]


def tool_lists(registry: ToolRegistry) -> int:
    return sum(1 for method, _ in list_requests(registry.session("p")) if method == "tools/list")


# -- a malformed page is a library error that names the server and the field ------------------------


@pytest.mark.parametrize(("method", "pages", "field", "page"), MALFORMED)
def test_a_malformed_page_raises_a_protocol_error_naming_the_server_and_the_field(
    clients: List[McpClient], ends: PeerEnds, method: str, pages: List[Any], field: str, page: int
) -> None:
    client = client_for(clients, ends, pages_peer({method: pages}))
    with pytest.raises(ProtocolError) as caught:
        CALLS[method](client)
    error = caught.value
    assert isinstance(error, JsonRpcError) and not isinstance(error, TypeError)
    assert error.data == {"server": client.connection.label, "method": method, "page": page, "field": field}
    assert str(error).startswith(f"{client.connection.label}: {method} page {page}: {field!r} ")
    assert client.call_tool("echo", {"text": "still here"})["content"][0]["text"] == "still here"


def test_a_page_without_its_items_is_an_empty_page(clients: List[McpClient], ends: PeerEnds) -> None:
    pages = {"tools/list": [{"nextCursor": "1"}, {"tools": [TOOL], "nextCursor": None}]}
    client = client_for(clients, ends, pages_peer(pages))
    assert [tool["name"] for tool in client.list_tools()] == ["echo"]


def test_a_registry_server_with_a_malformed_list_is_reported_by_name(ends: PeerEnds) -> None:
    with registry_of(ends, lambda: pages_peer({"tools/list": [{"tools": [{"name": None}]}]})) as registry:
        assert registry.tools() == []
        assert "tools/list page 1: 'tools[0].name' is missing" in registry.errors["p"]


# -- eras: how long a list stays fresh (ttlMs, stateless era) or until list_changed (session era) -----


@pytest.mark.parametrize("stateless", [False, True], ids=["session-era", "stateless-era"])
def test_each_era_is_spoken_with_its_own_handshake(clients: List[McpClient], ends: PeerEnds, stateless: bool) -> None:
    client = client_for(clients, ends, pages_peer(stateless=stateless))
    assert client.call_tool("echo", {"text": "hi"})["content"][0]["text"] == "hi"
    assert client.server_info is not None and client.server_info.get("name") == "pages-peer"
    assert [tool["name"] for tool in client.list_tools()] == ["echo", "add_tool", "chatty"]


def test_a_list_is_as_fresh_as_its_stalest_page(clients: List[McpClient], ends: PeerEnds) -> None:
    fresh = {"tools": [TOOL], "nextCursor": "1", "ttlMs": 60_000}
    stale = {"tools": [{"name": "second", "inputSchema": {"type": "object"}}], "ttlMs": 0}
    client = client_for(clients, ends, pages_peer({"tools/list": [fresh, stale]}, stateless=True))
    assert [tool["name"] for tool in client.list_tools()] == ["echo", "second"]
    listing = client.listing("tools/list")
    assert listing.ttl_ms == 0 and listing.stale
    assert list_requests(client) == [["tools/list", None], ["tools/list", "1"]] * 2


def test_a_fresh_list_is_not_fetched_again(clients: List[McpClient], ends: PeerEnds) -> None:
    first = {"tools": [TOOL], "nextCursor": "1", "ttlMs": 60_000}
    second = {"tools": [{"name": "second", "inputSchema": {"type": "object"}}], "ttlMs": 30_000}
    client = client_for(clients, ends, pages_peer({"tools/list": [first, second]}, stateless=True))
    listing = client.listing("tools/list")
    assert listing.ttl_ms == 30_000 and not listing.stale
    again = client.listing("tools/list")
    assert [tool["name"] for tool in again.items] == ["echo", "second"]
    assert again.ttl_ms is not None and 0 < again.ttl_ms <= 30_000
    assert list_requests(client) == [["tools/list", None], ["tools/list", "1"]]


def test_a_session_era_list_has_no_freshness_hint(clients: List[McpClient], ends: PeerEnds) -> None:
    client = client_for(clients, ends, pages_peer())
    listing = client.listing("tools/list")
    assert (listing.ttl_ms, listing.expires_at, listing.stale, listing.fresh_for()) == (None, None, False, None)
    with pytest.raises(ValueError, match="not a list"):
        client.listing("tools/call")


# -- the registry lists again a server whose list went stale -----------------------------------------


def test_a_tool_added_at_run_time_reaches_the_model_when_the_list_is_stale_at_once(ends: PeerEnds) -> None:
    with registry_of(ends, lambda: pages_peer(stateless=True)) as registry:
        assert "mcp__p__added" not in tool_names(registry)
        registry.call_tool("p", "add_tool", {"name": "added"})
        assert "mcp__p__added" in tool_names(registry)
        assert registry.resolve("mcp__p__added") == ("p", "added")


def test_a_stale_list_is_fetched_again_by_execute_within_its_deadline(ends: PeerEnds) -> None:
    with registry_of(ends, lambda: pages_peer(stateless=True)) as registry:
        registry.tools()
        before = tool_lists(registry)
        message = registry.execute(openai_call("mcp__p__echo", {"text": "hi"}), timeout=WAIT_S)
        assert message["content"] == "hi"
        assert tool_lists(registry) == before + 1


def test_calls_that_find_a_fetch_of_a_stale_list_under_way_share_it(ends: PeerEnds) -> None:
    # Each tools/list takes a quarter of a second; four model calls at once, the list stale at once: one fetch.
    with registry_of(ends, lambda: pages_peer(stateless=True, slow=0.25, slow_tools_list=True)) as registry:
        registry.tools()
        before = tool_lists(registry)
        calls = [openai_call("mcp__p__echo", {"text": str(n)}, f"call_{n}") for n in range(4)]
        assert [message["content"] for message in registry.execute_all(calls)] == ["0", "1", "2", "3"]
        assert tool_lists(registry) == before + 1


def test_a_list_fresh_for_its_ttl_is_not_fetched_again(ends: PeerEnds) -> None:
    page = {"tools/list": [{"tools": [TOOL, {"name": "add_tool", "inputSchema": {}}], "ttlMs": 600_000}]}
    with registry_of(ends, lambda: pages_peer(page, stateless=True)) as registry:
        registry.tools()
        registry.call_tool("p", "add_tool", {"name": "added"})
        assert "mcp__p__added" not in tool_names(registry)
        registry.execute(openai_call("mcp__p__echo", {"text": "hi"}))
        assert tool_lists(registry) == 1


def test_a_session_era_list_is_kept_until_the_server_says_it_changed(ends: PeerEnds) -> None:
    with registry_of(ends, pages_peer) as registry:
        registry.tools()
        registry.call_tool("p", "add_tool", {"name": "added"})
        assert "mcp__p__added" not in tool_names(registry)
        assert tool_lists(registry) == 1
