"""The stateless era (2026-07-28) on the wire: what McpClient sends over Streamable HTTP, request by request.

tests/peers/mcp_stateless_peer.py is a hand-written server of that era on
127.0.0.1 that records every POST (its headers and body) and checks what a
server of the era checks.  The official SDK in this era is in
tests/test_mcp_sdk.py; the conformance suite checks the same rules from its side.
"""

from __future__ import annotations

import threading
from typing import Any, Dict, Iterator, List

import pytest

from jsonrpc_threads import RequestTimeout
from jsonrpc_threads.mcp import McpClient
from jsonrpc_threads.transports.http import HttpTransport

from .peers.mcp_stateless_peer import StatelessPeer

WAIT_S = 20.0


@pytest.fixture
def peer() -> Iterator[StatelessPeer]:
    with StatelessPeer() as running:
        yield running


def connect(peer: StatelessPeer, **options: Any) -> McpClient:
    options.setdefault("default_timeout", WAIT_S)
    return McpClient(HttpTransport(peer.url), **options)


def text_of(result: Any) -> str:
    return "".join(item.get("text", "") for item in result["content"])


def test_every_post_carries_the_meta_and_the_headers_and_no_session(peer: StatelessPeer) -> None:
    with connect(peer, roots=["file:///r"], client_info={"name": "wire-test", "version": "9"}) as client:
        assert client.era == "stateless"
        assert text_of(client.call_tool("echo", {"text": "hi"})) == "hi"
        assert client.server_info == {"name": "stateless-peer", "version": "1"}
    assert peer.methods()[:2] == ["server/discover", "tools/call"]
    for headers, body in peer.posts:
        meta = body["params"]["_meta"]
        assert meta["io.modelcontextprotocol/protocolVersion"] == headers["mcp-protocol-version"] == "2026-07-28"
        assert meta["io.modelcontextprotocol/clientCapabilities"]["roots"] == {}
        assert meta["io.modelcontextprotocol/clientInfo"] == {"name": "wire-test", "version": "9"}
        assert headers["mcp-method"] == body["method"]
        assert "mcp-session-id" not in headers  # the server sent one on every answer: ignored
    headers, _ = peer.posts[1]
    assert headers["mcp-name"] == "echo"
    # Nothing but requests: no initialize, no notifications/initialized, no GET stream, no DELETE.
    assert all("id" in body for _, body in peer.posts)


def test_a_fresh_list_is_reused_until_a_notification_or_its_ttl(peer: StatelessPeer) -> None:
    with connect(peer) as client:
        first = client.list_tools()
        second = client.list_tools()
        assert first == second and first is not second
        assert peer.lists == 1  # ttlMs 60000: served from the cache
        client._cache.invalidate(("tools/list",))  # what notifications/tools/list_changed does
        client.list_tools()
        assert peer.lists == 2
    with connect(peer, cache=False) as client:
        client.list_tools()
        client.list_tools()
    assert peer.lists == 4


def test_a_tool_with_an_invalid_header_annotation_is_left_out(
    peer: StatelessPeer, caplog: pytest.LogCaptureFixture
) -> None:
    with connect(peer) as client:
        names = [tool["name"] for tool in client.list_tools()]
    assert "bad_header" not in names and "regional" in names
    assert any("bad_header" in record.getMessage() for record in caplog.records)


def test_designated_arguments_go_into_mcp_param_headers(peer: StatelessPeer) -> None:
    with connect(peer) as client:
        client.list_tools()
        assert text_of(client.call_tool("regional", {"region": "us-west1"})) == "in us-west1"
    headers, _ = peer.posts[-1]
    assert headers["mcp-param-region"] == "us-west1"


def test_a_header_mismatch_makes_the_client_learn_the_tools_again_once() -> None:
    # The first tools/list has no x-mcp-header; the server then wants Mcp-Param-Region.
    with StatelessPeer(headers_after=1) as peer, connect(peer) as client:
        client.list_tools()
        assert text_of(client.call_tool("regional", {"region": "eu"})) == "in eu"
        calls = [body["method"] for _, body in peer.posts]
    assert calls[-3:] == ["tools/call", "tools/list", "tools/call"]


def test_a_broken_answer_stream_is_sent_again_as_a_new_request(peer: StatelessPeer) -> None:
    with connect(peer) as client:
        assert text_of(client.call_tool("cut")) == "second try"
    ids = [body["id"] for _, body in peer.posts if body.get("params", {}).get("name") == "cut"]
    assert len(ids) == 2 and ids[0] != ids[1]


def test_a_timeout_closes_the_stream_and_sends_no_cancellation(peer: StatelessPeer) -> None:
    with connect(peer) as client:
        with pytest.raises(RequestTimeout):
            client.call_tool("slow", {"seconds": 5}, timeout=0.3)
        assert text_of(client.call_tool("echo", {"text": "after"})) == "after"
    assert "notifications/cancelled" not in peer.methods()


def test_an_unsupported_version_is_retried_with_one_the_server_names(peer: StatelessPeer) -> None:
    logs: List[Dict[str, Any]] = []
    with connect(peer, on_log=logs.append) as client:
        client.protocol_version = "2099-01-01"  # as if negotiated with another server: refused with -32022
        assert text_of(client.call_tool("echo", {"text": "again"})) == "again"
        assert client.protocol_version == "2026-07-28"  # the version the server named, from now on
        client.call_tool("echo", {"text": "no more retries"})
    versions = [headers["mcp-protocol-version"] for headers, body in peer.posts if body["method"] == "tools/call"]
    assert versions == ["2099-01-01", "2026-07-28", "2026-07-28"]


def test_many_threads_share_one_stateless_client(peer: StatelessPeer) -> None:
    with connect(peer) as client:
        results: List[str] = []
        lock = threading.Lock()

        def call(index: int) -> None:
            text = text_of(client.call_tool("echo", {"text": str(index)}))
            with lock:
                results.append(text)

        threads = [threading.Thread(target=call, args=(i,)) for i in range(16)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(WAIT_S)
    assert sorted(results, key=int) == [str(i) for i in range(16)]
