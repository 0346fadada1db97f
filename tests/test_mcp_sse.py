"""The legacy HTTP+SSE transport of MCP 2024-11-05: ``SseTransport``, its guarantees, and MCP over it.

The transport's guarantees (deadlines, the size limit, bounded resumption,
close, fork safety) are checked against tests/peers/sse_peer.py, a real
HTTP server on 127.0.0.1 that speaks the transport and misbehaves on demand;
MCP over the transport against the official Python SDK's legacy SSE server
(tests/peers/mcp_sdk_server.py --sse), where ``McpClient`` also finds its way
on its own from a Streamable HTTP URL (the fallback).  The reference server's
``sse`` mode is in tests/test_mcp_everything.py, and the calls every
transport shares in tests/test_contract.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time
from concurrent.futures import Future
from typing import Any, Dict, Iterator, List, Optional

import pytest
import requests.auth

from jsonrpc_threads import (
    HttpError,
    JsonRpcClient,
    MessageTooLarge,
    RequestTimeout,
    SseTransport,
    TransportClosed,
    transport_from_config,
)
from jsonrpc_threads.mcp import LATEST_SESSION_PROTOCOL_VERSION, McpClient
from jsonrpc_threads.mcp.transport_roles import RevisionBound, legacy_transport_for
from jsonrpc_threads.transports.http import HttpTransport

from .conftest import peer_command
from .peers.mcp_launch import ServerProcess
from .peers.sse_peer import SsePeer

#: Upper bound for any single wait in these tests.
WAIT_S = 20.0
#: A short wait: what a step that should be at once may take on a loaded machine.
SHORT_S = 0.5
#: The name of the threads that send a message without requests when the transport has hooks.
SSE_SENDER_THREAD = "jsonrpc-sse-send["


@pytest.fixture
def peer() -> Iterator[SsePeer]:
    with SsePeer() as running:
        yield running


def connect(url: str, **options: Any) -> JsonRpcClient:
    transport_options = {key: options.pop(key) for key in ("max_message_bytes", "max_reconnects") if key in options}
    return JsonRpcClient(SseTransport(url, **transport_options), **options)


# -- the transport ---------------------------------------------------------------------------


def test_requests_notifications_batches_and_the_servers_own_requests(peer: SsePeer) -> None:
    with connect(peer.url_with(), default_timeout=WAIT_S) as client:
        client.on_request("ping_client", lambda params: {"pong": params})
        assert client.call("add", [2, 3]) == 5
        client.notify("note", {"x": 1})
        with client.batch() as batch:
            total = batch.request("add", [1, 2])
            echoed = batch.request("echo", {"y": 2})
        assert total.result(WAIT_S) == 3 and echoed.result(WAIT_S) == {"y": 2}
        assert client.call("notifications_log", {"wait_for": 1})[0] == {"method": "note", "params": {"x": 1}}
        # A request of the server comes on the stream; the answer goes back by POST.
        assert client.call("reverse_call", {"method": "ping_client", "params": [7]}) == {"result": {"pong": [7]}}
        transport = client.transport
        assert isinstance(transport, SseTransport) and isinstance(transport, RevisionBound)
        assert transport.post_url is not None and "/messages?session=" in transport.post_url


def test_message_headers_go_with_the_post_and_invalid_ones_are_refused(peer: SsePeer) -> None:
    with connect(peer.url_with(), default_timeout=WAIT_S) as client:
        seen = client.call("headers", None, headers={"Mcp-Method": "headers", "X-Trace": "abc"})
        assert seen["mcp-method"] == "headers" and seen["x-trace"] == "abc"
        with pytest.raises(HttpError):
            client.call("echo", [1], headers={"X-Bad": "line\nbreak"})
        assert client.call("echo", [1]) == [1]


def test_a_request_waits_for_the_endpoint_no_longer_than_its_deadline(peer: SsePeer) -> None:
    with connect(peer.url_with("noendpoint"), default_timeout=WAIT_S) as client:
        started = time.monotonic()
        with pytest.raises(RequestTimeout):
            client.call("echo", [1], timeout=0.5)
        with pytest.raises(RequestTimeout):
            client.notify("note", {"x": 1}, timeout=0.5)
        assert time.monotonic() - started < 5.0


def test_an_endpoint_on_another_origin_is_refused(peer: SsePeer) -> None:
    client = connect(peer.url_with("crossorigin"), default_timeout=WAIT_S)
    with client, pytest.raises(TransportClosed) as caught:
        client.call("echo", [1])
    assert "endpoint" in caught.value.message
    assert not any(session.notifications for session in peer.sessions.values())


def test_an_event_over_the_limit_fails_only_its_request(peer: SsePeer) -> None:
    with connect(peer.url_with(), default_timeout=WAIT_S, max_message_bytes=4096) as client:
        with pytest.raises(MessageTooLarge):
            client.call("oversized", {"bytes": 10_000, "response": True})
        # An oversized notification is dropped; its request still gets its (small) answer.
        assert client.call("oversized", {"bytes": 10_000}) == "ok"
        assert client.call("add", [1, 1]) == 2


def test_an_oversized_event_fails_its_own_request_and_never_another(peer: SsePeer) -> None:
    # Issue 37, item 4: the answer is written result first (as the TypeScript SDK does), and its
    # result holds an "id" that is another pending request's.  That one must get its own answer.
    with connect(peer.url_with(), default_timeout=WAIT_S, max_message_bytes=4096) as client:
        innocent = client.request("gated", {"gate": "innocent", "result": "mine"})
        started = time.monotonic()
        with pytest.raises(MessageTooLarge):
            params = {"bytes": 10_000, "result_first": True, "nested_id": innocent.request_id}
            client.call("oversized", params, timeout=SHORT_S * 10)
        assert time.monotonic() - started < SHORT_S * 10  # failed at once, not at its deadline
        assert not innocent.done()
        assert client.call("release", {"gate": "innocent"}) is True
        assert innocent.result(WAIT_S) == "mine"


def test_a_broken_stream_is_resumed_with_last_event_id(peer: SsePeer) -> None:
    # The stream ends after each message: every answer needs a resumption.
    with connect(peer.url_with("ids", "cut=1"), default_timeout=WAIT_S, max_reconnects=2) as client:
        assert [client.call("add", [i, 1]) for i in range(5)] == [1, 2, 3, 4, 5]
    resumed = [get.get("last-event-id") for get in peer.gets[1:]]
    assert len(resumed) >= 4 and all(resumed)


def test_resumption_is_bounded_and_then_the_transport_ends(peer: SsePeer) -> None:
    # Every resumed stream ends at once, empty: two resumptions, then the transport is over.
    with connect(peer.url_with("ids", "cut=1", "flap"), default_timeout=WAIT_S, max_reconnects=2) as client:
        pending = client.request("never", timeout=None)
        assert client.call("add", [1, 1]) == 2  # the stream ends after this answer
        with pytest.raises(TransportClosed) as caught:
            pending.result(WAIT_S)
        assert "resumed" in caught.value.message
        with pytest.raises(TransportClosed):
            client.call("echo", [1])
    assert len(peer.gets) == 1 + 2
    assert all(get.get("last-event-id") for get in peer.gets[1:])


def test_a_stream_that_ends_without_event_ids_ends_the_transport(peer: SsePeer) -> None:
    with connect(peer.url_with("cut=1"), default_timeout=WAIT_S) as client:
        assert client.call("add", [1, 2]) == 3
        with pytest.raises(TransportClosed) as caught:
            client.call("sleep", {"seconds": 0.2, "result": 1})
        assert "ended" in caught.value.message
    assert len(peer.gets) == 1  # nothing to resume with: no second GET


def test_a_resumed_stream_with_a_new_session_fails_what_the_old_one_owed(peer: SsePeer) -> None:
    with connect(peer.url_with("ids", "cut=1", "newsession"), default_timeout=WAIT_S) as client:
        assert client.call("add", [1, 2]) == 3
        # The first session's stream ended; its resumption is a new session: a request sent meanwhile is lost.
        slow = client.request("sleep", {"seconds": 0.3, "result": "late"})
        with pytest.raises(TransportClosed):
            slow.result(WAIT_S)


def test_a_refused_post_fails_its_request_with_the_status(peer: SsePeer) -> None:
    with connect(peer.url_with("postfail"), default_timeout=WAIT_S) as client:
        with pytest.raises(HttpError) as caught:
            client.call("echo", [1])
        assert caught.value.status_code == 500
        with pytest.raises(HttpError):
            client.notify("note", None)


def test_a_refused_stream_ends_the_transport_at_once(peer: SsePeer) -> None:
    with connect(peer.url_with("refuse"), default_timeout=WAIT_S) as client:
        started = time.monotonic()
        with pytest.raises(TransportClosed):
            client.call("echo", [1])
        assert time.monotonic() - started < 5.0
    assert len(peer.gets) == 1


def test_notify_racing_close_raises_transport_closed(peer: SsePeer, monkeypatch: pytest.MonkeyPatch) -> None:
    # Issue 37, item 2.  The stream's thread is held in the header provider before its first
    # GET (so no endpoint comes, and the stream cannot end before the race is over); the
    # notification's sender thread is waiting for the endpoint when close() begins.
    gate = threading.Event()
    sender_waits = threading.Event()
    condition_wait = threading.Condition.wait

    def watched_wait(self: threading.Condition, timeout: Optional[float] = None) -> bool:
        if threading.current_thread().name.startswith(SSE_SENDER_THREAD):
            sender_waits.set()
        return condition_wait(self, timeout)

    def held_headers() -> Dict[str, str]:
        gate.wait(WAIT_S)
        return {}

    monkeypatch.setattr(threading.Condition, "wait", watched_wait)
    client = JsonRpcClient(SseTransport(peer.url_with(), header_provider=held_headers), default_timeout=WAIT_S)
    outcome: Future[None] = Future()

    def notify() -> None:
        try:
            client.notify("note", {"x": 1})
            outcome.set_result(None)
        except BaseException as exc:  # AssertionError before the fix: the point of the test
            outcome.set_exception(exc)

    notifier = threading.Thread(target=notify, name="test-notifier")
    notifier.start()
    closer = threading.Thread(target=client.close, name="test-closer")
    try:
        assert sender_waits.wait(WAIT_S)
        closer.start()
        error = outcome.exception(WAIT_S)
    finally:
        gate.set()
        notifier.join(WAIT_S)
        if closer.ident is not None:
            closer.join(WAIT_S)
        client.close()
    assert isinstance(error, TransportClosed), repr(error)


def test_close_is_bounded_and_fails_what_is_pending(peer: SsePeer) -> None:
    client = connect(peer.url_with(), default_timeout=WAIT_S)
    futures = [client.request("never", timeout=None) for _ in range(10)]
    assert client.call("echo", [1]) == [1]
    started = time.monotonic()
    client.close()
    assert time.monotonic() - started < 5.0
    assert all(isinstance(f.exception(WAIT_S), TransportClosed) for f in futures)
    client.close()  # idempotent


def test_a_legacy_transport_is_made_with_the_settings_of_a_streamable_one() -> None:
    auth = requests.auth.HTTPBasicAuth("user", "secret")
    http = HttpTransport(
        "http://127.0.0.1:9/mcp", headers={"X-Team": "a"}, auth=auth, read_timeout=7.0, max_resumptions=5, verify=False
    )
    legacy = SseTransport.from_settings("http://127.0.0.1:9/sse", http.settings)
    made: Any = legacy_transport_for(http)
    assert legacy_transport_for(legacy) is None  # a legacy transport has no legacy of its own
    again = HttpTransport.from_settings(http.url, http.settings)
    try:
        assert isinstance(made, SseTransport) and made.url == http.url
        assert legacy.settings == made.settings == http.settings == again.settings
        assert legacy.settings.max_resumptions == 5 and legacy.settings.auth is auth
        assert dict(legacy.settings.headers) == {"X-Team": "a"}
        with pytest.raises(TypeError):
            legacy.settings.headers["X-Other"] = "b"  # type: ignore[index]
    finally:
        for transport in (http, legacy, made, again):
            transport.close()


def test_bad_arguments_are_refused_where_they_enter() -> None:
    with pytest.raises(ValueError):
        SseTransport("ftp://127.0.0.1/sse")
    with pytest.raises(ValueError):
        SseTransport("http://127.0.0.1/sse", max_message_bytes=0)
    with pytest.raises(ValueError):
        SseTransport("http://127.0.0.1/sse", max_reconnects=-1)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_process_lets_go_of_its_copies_and_leaves_the_stream_alone(peer: SsePeer) -> None:
    script = textwrap.dedent(
        f"""
        import os, sys, warnings
        warnings.simplefilter("ignore", DeprecationWarning)
        sys.path.insert(0, {os.getcwd()!r})
        from jsonrpc_threads import JsonRpcClient, SseTransport, TransportClosed
        client = JsonRpcClient(SseTransport({peer.url_with()!r}), default_timeout=10)
        print("parent:", client.call("add", [1, 2]))
        pid = os.fork()
        if pid == 0:
            try:
                client.call("add", [1, 1])
                print("child: the call went through")
            except TransportClosed as exc:
                print("child: refused", "fork" in str(exc))
            client.close()
            os._exit(0)
        os.waitpid(pid, 0)
        print("parent again:", client.call("add", [2, 2]))
        client.close()
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.split("\n")
    assert "parent: 3" in lines and "child: refused True" in lines and "parent again: 4" in lines


def test_config_type_sse_builds_the_legacy_transport(peer: SsePeer) -> None:
    transport = transport_from_config({"type": "sse", "url": peer.url_with(), "headers": {"X-Team": "a"}})
    assert isinstance(transport, SseTransport)
    with JsonRpcClient(transport, default_timeout=WAIT_S) as client:
        assert client.call("headers")["x-team"] == "a"


# -- MCP over the legacy transport: the official SDK's SSE server ---------------------------------


def sampling(params: Dict[str, Any]) -> Dict[str, Any]:
    return {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "test-model"}


def elicitation(params: Dict[str, Any]) -> Dict[str, Any]:
    return {"action": "accept", "content": {"name": "Ada"}}


@pytest.fixture(scope="module")
def sdk_sse_url() -> Iterator[str]:
    pytest.importorskip("mcp.server.mcpserver", reason="the official MCP Python SDK (mcp>=2) is needed")
    with ServerProcess(peer_command("mcp_sdk_server", "--sse"), name="sdk-sse") as server:
        yield server.wait_for(r"listening on (\S+)").group(1)


def test_mcp_over_the_sdks_legacy_sse_server(sdk_sse_url: str) -> None:
    reports: List[Dict[str, Any]] = []
    transport = SseTransport(sdk_sse_url)
    with McpClient(
        transport, roots=["file:///sse"], on_sampling=sampling, on_elicitation=elicitation, default_timeout=WAIT_S
    ) as client:
        # mode="auto" over this transport: the session era, the only one it carries.
        assert client.era == "session" and client.protocol_version == LATEST_SESSION_PROTOCOL_VERSION
        assert client.server_info["name"] == "jsonrpc-threads-sdk-peer"
        assert client.call_tool("add", {"a": 2, "b": 3})["structuredContent"] == {"result": 5}
        assert client.call_tool("count", {"steps": 3}, on_progress=reports.append)["content"][0]["text"] == "counted 3"
        assert [r["progress"] for r in reports] == [1, 2, 3]
        answers = client.call_tool("ask_client")["structuredContent"]["result"]
        assert answers["roots"] == {"roots": [{"uri": "file:///sse"}]}
        assert answers["elicitation"] == {"action": "accept", "content": {"name": "Ada", "age": 30}}
        with pytest.raises(RequestTimeout) as caught:
            client.call_tool("never", timeout=0.5)
        received = client.call_tool("cancellations", {"wait": WAIT_S})["structuredContent"]["result"]
        assert caught.value.request_id in [c["requestId"] for c in received]


def test_a_streamable_http_url_refused_with_4xx_falls_back_to_the_legacy_transport(sdk_sse_url: str) -> None:
    transport = HttpTransport(sdk_sse_url)
    assert legacy_transport_for(transport) is not None
    with McpClient(transport, default_timeout=WAIT_S) as client:
        # server/discover, then initialize, were refused (405): the same URL, over HTTP+SSE, once.
        assert isinstance(client.rpc.transport, SseTransport)
        assert client.era == "session"
        assert client.call_tool("add", {"a": 20, "b": 22})["structuredContent"] == {"result": 42}
    assert transport.url == sdk_sse_url


def test_the_fallback_can_be_turned_off(sdk_sse_url: str) -> None:
    client = McpClient(HttpTransport(sdk_sse_url), default_timeout=WAIT_S, legacy_sse_fallback=False)
    with pytest.raises(HttpError) as caught, client:
        pass
    assert caught.value.status_code in (400, 404, 405)


def test_stateless_mode_is_refused_over_the_legacy_transport(sdk_sse_url: str) -> None:
    with pytest.raises(ValueError):
        McpClient(SseTransport(sdk_sse_url), mode="stateless")


def test_mcp_from_an_sse_config_entry(sdk_sse_url: str) -> None:
    with McpClient({"type": "sse", "url": sdk_sse_url}, default_timeout=WAIT_S) as client:
        assert isinstance(client.rpc.transport, SseTransport)
        assert {"add", "count"} <= {tool["name"] for tool in client.list_tools()}
