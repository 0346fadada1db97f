"""HttpTransport (MCP Streamable HTTP) against a real HTTP server on 127.0.0.1.

Most tests run ``JsonRpcClient(HttpTransport(url))`` against tests/peers/http_peer.py
served in-process; the mode of each exchange (JSON or SSE answers, sessions,
cut streams, ...) is chosen by the URL's query.  The last tests run the
official MCP Python SDK's server as a child process.
"""

from __future__ import annotations

import ast
import base64
import json
import logging
import queue
import socket
import threading
import time
from concurrent.futures import Future
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple
from urllib.parse import urlsplit

import pytest
import requests

from jsonrpc_threads.client import JsonRpcClient
from jsonrpc_threads.errors import (
    HttpConnectionError,
    HttpError,
    JsonRpcError,
    MessageTooLarge,
    RemoteError,
    RequestId,
    RequestTimeout,
    SessionExpired,
    TransportClosed,
)
from jsonrpc_threads.transports.base import Transport
from jsonrpc_threads.transports.config import transport_from_config
from jsonrpc_threads.transports.http import HttpTransport, redact_headers, url_label
from jsonrpc_threads.transports.stdio import StdioTransport

from .conftest import peer_command
from .peers.http_peer import UNICODE_TEXT, HttpPeer
from .peers.mcp_launch import ServerProcess
from .strategies import SENDERS

#: Upper bound for any single wait in these tests.
WAIT_S = 10.0
INIT_PARAMS = {
    "protocolVersion": "2025-06-18",
    "capabilities": {},
    "clientInfo": {"name": "jsonrpc-threads-tests", "version": "0"},
}


@pytest.fixture
def peer() -> Iterator[HttpPeer]:
    server = HttpPeer().start()
    try:
        yield server
    finally:
        server.close()


#: The sender this test runs with (``tests/strategies.py``).
CHOSEN: Dict[str, str] = {}


@pytest.fixture(autouse=True, params=SENDERS)
def sender(request: pytest.FixtureRequest) -> Iterator[str]:
    """Every test here, with the direct sender (the default) and with requests' own (the plain one)."""
    CHOSEN["sender"] = request.param
    try:
        yield str(request.param)
    finally:
        CHOSEN.clear()


def http_transport(url: str, **options: Any) -> HttpTransport:
    return HttpTransport(url, **{**CHOSEN, **options})


def make_client(url: str, **options: Any) -> JsonRpcClient:
    cancellation = options.pop("cancellation", None)
    return JsonRpcClient(http_transport(url, **options), default_timeout=WAIT_S, cancellation=cancellation)


class RecordingSink:
    """Records what the transport reports; every wait has a timeout."""

    def __init__(self) -> None:
        self.messages: queue.Queue[bytes] = queue.Queue()
        self.failed: queue.Queue[Tuple[List[RequestId], JsonRpcError]] = queue.Queue()
        self.closed: List[TransportClosed] = []

    def message_received(self, data: bytes) -> Sequence[RequestId]:
        """Records ``data``; returns the ids of the responses in it, as the client does."""
        self.messages.put(data)
        value = json.loads(data)
        items = value if isinstance(value, list) else [value]
        return [item["id"] for item in items if isinstance(item, dict) and "method" not in item and "id" in item]

    def requests_failed(self, request_ids: Sequence[RequestId], error: JsonRpcError) -> None:
        self.failed.put((list(request_ids), error))

    def has_pending(self) -> bool:
        return True

    def transport_closed(self, error: TransportClosed) -> None:
        self.closed.append(error)

    def next_message(self) -> Any:
        return json.loads(self.messages.get(timeout=WAIT_S))

    def drained(self) -> List[Any]:
        items = []
        while True:
            try:
                items.append(json.loads(self.messages.get_nowait()))
            except queue.Empty:
                return items


def request_bytes(request_id: int, method: str, params: Any = None) -> bytes:
    message: Dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return json.dumps(message).encode()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# -- plain exchanges ------------------------------------------------------------------


def test_is_a_transport(peer: HttpPeer) -> None:
    transport = http_transport(peer.url)
    try:
        assert isinstance(transport, Transport)
    finally:
        transport.close()


@pytest.mark.parametrize("modes", [(), ("sse",), ("sse", "priming")], ids=["json", "sse", "sse-priming"])
def test_requests_and_headers(peer: HttpPeer, modes: Tuple[str, ...]) -> None:
    with make_client(peer.url_with(*modes)) as client:
        assert client.call("echo", {"a": [1, "two"]}) == {"a": [1, "two"]}
        assert client.call("add", [2, 3]) == 5
        assert client.call("unicode") == UNICODE_TEXT
        with pytest.raises(JsonRpcError) as info:
            client.call("no_such_method")
        assert info.value.code == -32601
    post = peer.records_for("echo")[0]
    assert post.http_method == "POST"
    assert post.headers["content-type"] == "application/json"
    assert post.headers["accept"] == "application/json, text/event-stream"
    assert "mcp-session-id" not in post.headers
    assert "mcp-protocol-version" not in post.headers


def test_batch_gets_one_json_array(peer: HttpPeer) -> None:
    with make_client(peer.url) as client:
        with client.batch() as batch:
            total = batch.request("add", [1, 2])
            echoed = batch.request("echo", ["x"])
            batch.notify("note", {"n": 1})
        assert total.result(WAIT_S) == 3
        assert echoed.result(WAIT_S) == ["x"]
    assert len(peer.records_for("add")) == 1
    assert peer.records_for("add")[0].rpc_methods() == ["add", "echo", "note"]


def test_sse_progress_arrives_before_the_response(peer: HttpPeer) -> None:
    order: List[Any] = []
    with make_client(peer.url_with("sse")) as client:
        client.on_notification("progress", lambda params: order.append(params["step"]))
        result = client.call("notify", {"method": "progress", "params": {"step": "p"}, "count": 3})
        order.append("returned")
    assert result == 3
    assert order == ["p", "p", "p", "returned"]


def test_sse_events_are_dispatched_while_the_stream_is_open(peer: HttpPeer) -> None:
    seen = threading.Event()
    with make_client(peer.url_with("sse")) as client:
        client.on_notification("progress", lambda params: seen.set())
        future = client.request("notify", {"method": "progress", "params": {}, "count": 1, "gate": "g"})
        # The server holds the response back until the gate opens: the
        # notification must have been read from the open stream already.
        assert seen.wait(WAIT_S)
        assert peer.wait_arrived("g")
        assert not future.done()
        peer.open_gate("g")
        assert future.result(WAIT_S) == 1


def test_priming_event_is_not_delivered(peer: HttpPeer) -> None:
    sink = RecordingSink()
    transport = http_transport(peer.url_with("sse", "priming"))
    transport.start(sink)
    try:
        transport.send(request_bytes(1, "echo", ["hi"]), [1])
        assert sink.next_message() == {"jsonrpc": "2.0", "id": 1, "result": ["hi"]}
        transport.send(request_bytes(2, "notify", {"method": "n", "count": 2}), [2])
        assert [sink.next_message()["method"] for _ in range(2)] == ["n", "n"]
        assert sink.next_message()["id"] == 2
    finally:
        transport.close()
    assert sink.drained() == []
    assert sink.failed.empty()


def test_notification_is_sent_synchronously_and_202(peer: HttpPeer) -> None:
    with make_client(peer.url_with("sse")) as client:
        client.notify("notifications/initialized")
        # notify() returned: the server has it already, no waiting needed.
        assert peer.notifications == [{"method": "notifications/initialized", "params": None}]
        client.notify("note", {"x": 1})
        assert client.call("notifications_log")[-1] == {"method": "note", "params": {"x": 1}}


def test_notification_failures_raise_from_notify(peer: HttpPeer) -> None:
    with make_client(peer.url) as client:
        with pytest.raises(HttpError) as info:
            client.notify("fault", {"kind": "500"})
        assert info.value.status_code == 500
        with pytest.raises(JsonRpcError) as rpc_info:
            client.notify("fault", {"kind": "500-rpc-null"})
        assert rpc_info.value.code == -32050
        assert rpc_info.value.data == {"detail": "kaboom"}
        assert client.call("echo", ["still fine"]) == ["still fine"]


# -- sessions ----------------------------------------------------------------------------


def test_session_id_and_protocol_version_headers(peer: HttpPeer) -> None:
    with make_client(peer.url_with("session", "sse")) as client:
        transport = client.transport
        assert isinstance(transport, HttpTransport)
        assert transport.session_id is None
        result = client.call("initialize", INIT_PARAMS)
        assert result["protocolVersion"] == "2025-06-18"
        session_id = transport.session_id
        assert session_id is not None and session_id in peer.sessions
        client.notify("notifications/initialized")
        headers = client.call("headers")
        assert headers["mcp-session-id"] == session_id
        assert "mcp-protocol-version" not in headers
        transport.protocol_version = "2025-06-18"
        headers = client.call("headers")
        assert headers["mcp-protocol-version"] == "2025-06-18"
        assert headers["mcp-session-id"] == session_id
    initialize = peer.records_for("initialize")[0]
    assert "mcp-session-id" not in initialize.headers
    assert peer.records_for("notifications/initialized")[0].headers["mcp-session-id"] == session_id


def test_expired_session_is_404_session_expired_until_reset(peer: HttpPeer) -> None:
    with make_client(peer.url_with("session")) as client:
        transport = client.transport
        assert isinstance(transport, HttpTransport)
        client.call("initialize", INIT_PARAMS)
        old = transport.session_id
        assert client.call("expire_session") is True
        with pytest.raises(SessionExpired) as info:
            client.call("echo", [1])
        assert info.value.status_code == 404
        assert isinstance(info.value, HttpError)
        with pytest.raises(SessionExpired):
            client.notify("note")
        transport.reset_session()
        assert transport.session_id is None
        client.call("initialize", INIT_PARAMS)
        assert transport.session_id not in (None, old)
        assert client.call("echo", [2]) == [2]


def test_404_without_a_session_is_a_plain_http_error(peer: HttpPeer) -> None:
    with make_client(peer.url) as client:
        with pytest.raises(HttpError) as info:
            client.call("fault", {"kind": "404"})
        assert not isinstance(info.value, SessionExpired)
        assert info.value.status_code == 404


def test_delete_on_close(peer: HttpPeer) -> None:
    with make_client(peer.url_with("session")) as client:
        transport = client.transport
        assert isinstance(transport, HttpTransport)
        client.call("initialize", INIT_PARAMS)
        session_id = transport.session_id
    assert peer.deleted_sessions == [session_id]
    delete = [r for r in peer.records if r.http_method == "DELETE"]
    assert len(delete) == 1 and delete[0].headers["mcp-session-id"] == session_id
    assert session_id not in peer.sessions


def test_delete_405_is_tolerated_and_no_delete_without_session(peer: HttpPeer) -> None:
    with make_client(peer.url_with("session", "nodelete")) as client:
        client.call("initialize", INIT_PARAMS)
    with make_client(peer.url) as client:
        client.call("echo", [])
    assert [r.http_method for r in peer.records].count("DELETE") == 1
    assert peer.deleted_sessions == []


# -- HTTP failures ----------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["500-rpc", "500-rpc-null"])
def test_500_with_a_jsonrpc_body_is_that_error(peer: HttpPeer, kind: str) -> None:
    with make_client(peer.url) as client:
        with pytest.raises(JsonRpcError) as info:
            client.call("fault", {"kind": kind})
        assert type(info.value) is RemoteError  # the peer's answer, with its own code
        assert info.value.code == -32050
        assert info.value.message == "server exploded"
        assert info.value.data == {"detail": "kaboom"}
        assert client.call("add", [1, 1]) == 2


@pytest.mark.parametrize(("kind", "status", "excerpt"), [("500", 500, "boom"), ("400", 400, "you did it wrong")])
def test_error_status_without_jsonrpc_body_is_http_error(peer: HttpPeer, kind: str, status: int, excerpt: str) -> None:
    with make_client(peer.url) as client:
        with pytest.raises(HttpError) as info:
            client.call("fault", {"kind": kind})
        assert type(info.value) is HttpError
        assert info.value.status_code == status
        assert excerpt in info.value.body_excerpt
        assert info.value.data["status_code"] == status
        assert client.call("add", [1, 1]) == 2


def test_connection_refused_is_http_connection_error() -> None:
    url = f"http://127.0.0.1:{free_port()}/mcp"
    with make_client(url) as client:
        with pytest.raises(HttpConnectionError) as info:
            client.call("echo", [], timeout=WAIT_S)
        assert isinstance(info.value, ConnectionError)
        assert info.value.status_code is None
        assert "refused" in info.value.message.lower()
        with pytest.raises(HttpConnectionError):
            client.notify("note")
        assert not client.closed


def test_connection_dropped_without_answer(peer: HttpPeer) -> None:
    with make_client(peer.url) as client:
        with pytest.raises(HttpConnectionError):
            client.call("fault", {"kind": "reset"})
        assert client.call("echo", ["after"]) == ["after"]


def test_garbage_body_is_http_error(peer: HttpPeer) -> None:
    with make_client(peer.url) as client:
        with pytest.raises(HttpError) as info:
            client.call("garbage")
        assert info.value.status_code == 200
        assert "not valid JSON" in info.value.message
        assert "{this is not json" in info.value.body_excerpt
        assert client.call("echo", [1]) == [1]


def test_what_an_answer_settled_is_what_the_sink_says(peer: HttpPeer) -> None:
    # The transport strikes the ids the sink returns; it never decodes an answer to find them.
    class SaysNothing(RecordingSink):
        def message_received(self, data: bytes) -> Sequence[RequestId]:
            super().message_received(data)
            return ()

    for modes in ((), ("sse",)):
        sink = SaysNothing()
        transport = http_transport(peer.url_with(*modes))
        transport.start(sink)
        try:
            transport.send(request_bytes(3, "echo", ["x"]), [3])
            assert sink.next_message()["id"] == 3  # delivered ...
            failed_ids, error = sink.failed.get(timeout=WAIT_S)  # ... yet unanswered for the transport
            assert failed_ids == [3] and isinstance(error, HttpError)
        finally:
            transport.close()


def test_garbage_events_are_skipped(peer: HttpPeer) -> None:
    with make_client(peer.url_with("sse")) as client:
        assert client.call("garbage") == "ok"


@pytest.mark.parametrize(("kind", "expected"), [("html", "text/html"), ("empty", "without answering")])
def test_wrong_content_type_is_http_error(peer: HttpPeer, kind: str, expected: str) -> None:
    with make_client(peer.url) as client:
        with pytest.raises(HttpError) as info:
            client.call("fault", {"kind": kind})
        assert info.value.status_code == 200
        assert expected in info.value.message
        assert client.call("echo", [1]) == [1]


def test_202_to_a_request_is_http_error(peer: HttpPeer) -> None:
    with make_client(peer.url) as client:
        with pytest.raises(HttpError) as info:
            client.call("fault", {"kind": "202"})
        assert info.value.status_code == 202


def test_redirect_to_another_host_is_refused(peer: HttpPeer) -> None:
    with make_client(peer.url) as client:
        with pytest.raises(HttpError) as info:
            client.call("fault", {"kind": "redirect"})
        assert info.value.status_code == 307
        assert "redirect" in info.value.message
        assert "127.0.0.2" in info.value.message
        assert client.call("echo", [1]) == [1]
    assert all(record.path == "/mcp" for record in peer.records)


@pytest.mark.parametrize(
    ("modes", "as_response"),
    [((), True), (("sse",), True), (("sse",), False)],
    ids=["json-body", "sse-response", "sse-notification"],
)
def test_oversized_message_is_message_too_large(peer: HttpPeer, modes: Tuple[str, ...], as_response: bool) -> None:
    with make_client(peer.url_with(*modes), max_message_bytes=10_000) as client:
        with pytest.raises(MessageTooLarge) as info:
            client.call("oversized", {"bytes": 50_000, "response": as_response})
        assert info.value.limit == 10_000
        assert client.call("oversized", {"bytes": 100, "response": True}) == "x" * 100


# -- SSE resumption -----------------------------------------------------------------------


@pytest.mark.parametrize("how", ["cut", "reset"])
def test_broken_stream_is_resumed_after_the_retry_delay(peer: HttpPeer, how: str) -> None:
    progress: List[Any] = []
    with make_client(peer.url_with("sse", "priming", how, retry=400)) as client:
        client.on_notification("progress", progress.append)
        result = client.call("notify", {"method": "progress", "params": {"n": 1}, "count": 2})
        assert result == 2
        assert progress == [{"n": 1}, {"n": 1}]
    assert len(peer.resume_gets) == 1
    resumed_at, last_event_id = peer.resume_gets[0]
    assert last_event_id.endswith(":3")  # priming + two notifications
    waited = resumed_at - peer.cut_times[0]
    assert 0.35 <= waited < 3.0
    get = next(r for r in peer.records if r.http_method == "GET")
    assert get.headers["accept"] == "text/event-stream"
    assert get.headers["last-event-id"] == last_event_id


def test_resumption_without_retry_field_waits_one_second(peer: HttpPeer) -> None:
    with make_client(peer.url_with("sse", "priming", "cut")) as client:
        assert client.call("echo", ["back"]) == ["back"]
    waited = peer.resume_gets[0][0] - peer.cut_times[0]
    assert 0.9 <= waited < 4.0


def test_resumed_response_settles_the_original_request(peer: HttpPeer) -> None:
    sink = RecordingSink()
    transport = http_transport(peer.url_with("sse", "priming", "cut", retry=50))
    transport.start(sink)
    try:
        transport.send(request_bytes(7, "echo", {"k": "v"}), [7])
        assert sink.next_message() == {"jsonrpc": "2.0", "id": 7, "result": {"k": "v"}}
    finally:
        transport.close()
    assert sink.failed.empty()


@pytest.mark.parametrize(
    ("modes", "expected"),
    [(("sse", "cut", "noids"), "no event id"), (("sse", "priming", "cut", "noresume"), "405")],
    ids=["no-event-id", "get-405"],
)
def test_resumption_impossible_is_http_connection_error(peer: HttpPeer, modes: Tuple[str, ...], expected: str) -> None:
    with make_client(peer.url_with(*modes, retry=50)) as client:
        started = time.monotonic()
        with pytest.raises(HttpConnectionError) as info:
            client.call("echo", [1])
        assert time.monotonic() - started < 5.0
        assert expected in info.value.message


# -- concurrency, timeouts, cancellation, close -----------------------------------------------


@pytest.mark.parametrize("modes", [(), ("sse",)], ids=["json", "sse"])
def test_slow_request_does_not_block_fast_ones(peer: HttpPeer, modes: Tuple[str, ...]) -> None:
    with make_client(peer.url_with(*modes)) as client:
        slow = client.request("block", {"gate": "slow", "result": "slow done"})
        assert peer.wait_arrived("slow")
        fast = [client.request("add", [i, i]) for i in range(10)]
        assert [f.result(WAIT_S) for f in fast] == [2 * i for i in range(10)]
        assert not slow.done()
        peer.open_gate("slow")
        assert slow.result(WAIT_S) == "slow done"


def test_request_timeout_and_cancel_over_http(peer: HttpPeer) -> None:
    with make_client(peer.url_with("sse"), cancellation="mcp") as client:
        started = time.monotonic()
        with pytest.raises(RequestTimeout):
            client.call("block", {"gate": "never-opened"}, timeout=0.2)
        assert time.monotonic() - started < 3.0
        future = client.request("block", {"gate": "cancelled"})
        assert peer.wait_arrived("cancelled")
        assert future.cancel()
        # Cancellations go out in the background: their order is not guaranteed.
        assert peer.wait_for(
            lambda: sum(n["method"] == "notifications/cancelled" for n in peer.notifications) == 2, WAIT_S
        )
        cancelled = [n["params"] for n in peer.notifications if n["method"] == "notifications/cancelled"]
        assert sorted(c["requestId"] for c in cancelled) == [1, 2]
        assert client.call("echo", ["alive"]) == ["alive"]


def test_read_timeout_is_http_connection_error(peer: HttpPeer) -> None:
    with make_client(peer.url, read_timeout=0.3) as client:
        started = time.monotonic()
        with pytest.raises(HttpConnectionError) as info:
            client.call("sleep", {"seconds": 5})
        assert time.monotonic() - started < 3.0
        assert "timed out" in info.value.message


# -- call() on the calling thread (exchange_directly) -------------------------------------

#: How late a call to a stalled server may end after its deadline (timer lateness, scheduling).
DEADLINE_SLACK_S = 0.5
_STALL_JSON = '{"jsonrpc": "2.0", "id": {id}, "result": '
_STALL_SSE = 'data: {"jsonrpc": "2.0", "id": {id}, "result": "never dispatched"}\n'


def _http_pool_threads() -> List[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("jsonrpc-http[")]


@pytest.mark.parametrize("modes", [(), ("sse",)], ids=["json", "sse"])
def test_call_runs_on_the_calling_thread(peer: HttpPeer, modes: Tuple[str, ...]) -> None:
    with make_client(peer.url_with(*modes)) as client:
        seen: List[Any] = []
        client.on_notification("progress", seen.append)
        assert client.call("notify", {"method": "progress", "params": {"step": 1}, "count": 3}) == 3
        assert client.call("echo", ["here"]) == ["here"]
        assert _http_pool_threads() == []  # nothing was handed to the pool
        if modes:
            assert seen == [{"step": 1}] * 3  # delivered before call() returned
        assert client.request("echo", ["pool"]).result(WAIT_S) == ["pool"]  # request() still uses it
        assert _http_pool_threads() != []


@pytest.mark.parametrize("kind", ["json", "sse"])
@pytest.mark.parametrize("stall", ["no-answer", "mid-body"])
def test_call_to_a_stalled_server_ends_at_its_deadline(peer: HttpPeer, kind: str, stall: str) -> None:
    # read_timeout stays at its default (300 s): only the call's deadline frees the caller.
    with make_client(peer.url_with("sse") if kind == "sse" else peer.url) as client:
        if stall == "no-answer":
            method, params = "never", None
        else:
            method = "raw_answer"
            params = {
                "chunks": [_STALL_SSE if kind == "sse" else _STALL_JSON],
                "content_type": "text/event-stream" if kind == "sse" else "application/json",
                "then": "stall",
            }
        started = time.monotonic()
        with pytest.raises(RequestTimeout):
            client.call(method, params, timeout=0.3)
        assert time.monotonic() - started < 0.3 + DEADLINE_SLACK_S
        assert client.call("echo", ["usable"]) == ["usable"]


def test_a_stream_that_ends_with_its_connection_is_interrupted_when_abandoned(peer: HttpPeer) -> None:
    # No length, no chunks: http.client hands the socket over to the answer, which reads it to the
    # end of the connection.  A notification, then a keep-alive comment every 50 ms (no event that
    # would let the reader look up): only shutting that socket down frees the one pool thread.
    notification = 'data: {"jsonrpc": "2.0", "method": "started", "params": {}}\n\n'
    params = {"content_type": "text/event-stream", "chunks": [notification] + [": keep-alive\n"] * 2000}
    params.update({"chunked": False, "content_length": "none", "interval": 0.05})
    with make_client(peer.url, max_workers=1) as client:
        reading = threading.Event()
        client.on_notification("started", lambda _: reading.set())
        stuck = client.request("raw_answer", params, timeout=None)
        assert reading.wait(WAIT_S)  # the answer is being read
        assert stuck.cancel()
        started = time.monotonic()
        assert client.request("echo", ["usable"]).result(WAIT_S) == ["usable"]
        assert time.monotonic() - started < 1.0 + DEADLINE_SLACK_S


def test_call_waiting_to_resume_ends_at_its_deadline(peer: HttpPeer) -> None:
    # The stream is cut before the response and asks for 3 s before resuming.
    with make_client(peer.url_with("sse", "priming", "cut", retry=3000)) as client:
        started = time.monotonic()
        with pytest.raises(RequestTimeout):
            client.call("echo", ["late"], timeout=0.3)
        assert time.monotonic() - started < 0.3 + DEADLINE_SLACK_S


def test_close_interrupts_a_call_reading_on_its_own_thread(peer: HttpPeer) -> None:
    client = make_client(peer.url_with("sse"))
    outcome: queue.Queue[BaseException] = queue.Queue()

    def caller() -> None:
        try:
            client.call("never", timeout=None)
        except BaseException as exc:
            outcome.put(exc)

    thread = threading.Thread(target=caller, name="inline-caller")
    thread.start()
    try:
        assert peer.wait_for(lambda: len(peer.records_for("never")) == 1)
        assert _http_pool_threads() == []
    finally:
        started = time.monotonic()
        client.close()
        elapsed = time.monotonic() - started
        thread.join(WAIT_S)
    assert elapsed < 1.5
    assert not thread.is_alive()
    assert isinstance(outcome.get_nowait(), TransportClosed)


def test_more_callers_than_max_workers_fall_back_to_the_pool(peer: HttpPeer) -> None:
    with make_client(peer.url, max_workers=2) as client:
        results: queue.Queue[Any] = queue.Queue()
        threads = [
            threading.Thread(target=lambda i=i: results.put(client.call("block", {"gate": "many", "result": i})))
            for i in range(5)
        ]
        for thread in threads:
            thread.start()
        assert peer.wait_for(lambda: len(peer.records_for("block")) == 4)  # 2 direct + 2 pool threads
        peer.open_gate("many")
        for thread in threads:
            thread.join(WAIT_S)
        assert sorted(results.get_nowait() for _ in range(5)) == [0, 1, 2, 3, 4]


# -- the environment (proxies), read once ----------------------------------------------------


def test_proxy_from_the_environment_is_used(peer: HttpPeer, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy", "HTTPS_PROXY", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    proxy = peer.url.rsplit("/", 1)[0]  # the peer plays the proxy: it serves the absolute-form target
    monkeypatch.setenv("HTTP_PROXY", proxy)
    monkeypatch.setenv("http_proxy", proxy)
    with make_client("http://mcp.example.invalid/mcp") as client:
        monkeypatch.setenv("NO_PROXY", "*")  # read once, when the transport was made
        monkeypatch.setenv("no_proxy", "*")
        assert client.call("echo", ["via proxy"]) == ["via proxy"]
        assert client.request("echo", ["pool"]).result(WAIT_S) == ["pool"]
    hosts = {record.headers.get("host") for record in peer.records_for("echo")}
    assert hosts == {"mcp.example.invalid"}


@pytest.mark.parametrize("doubled_slash", [False, True], ids=["path", "path-with-a-doubled-slash"])
def test_every_request_goes_to_the_request_target_of_the_url(peer: HttpPeer, doubled_slash: bool) -> None:
    # The adapter remembers the target it made of the URL: the same path and query every time.
    parts = urlsplit(peer.url_with("sse"))
    url = f"{parts.scheme}://{parts.netloc}/{parts.path}?{parts.query}" if doubled_slash else parts.geturl()
    with make_client(url) as client:
        assert [client.call("echo", [i]) for i in range(3)] == [[0], [1], [2]]
        assert client.request("echo", ["pool"]).result(WAIT_S) == ["pool"]
    targets = [(record.path, record.query) for record in peer.records_for("echo")]
    assert targets == [(parts.path, {"mode": ["sse"]})] * 4


def test_no_proxy_from_the_environment_is_honoured(peer: HttpPeer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{free_port()}")
    monkeypatch.setenv("http_proxy", f"http://127.0.0.1:{free_port()}")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    monkeypatch.setenv("no_proxy", "127.0.0.1")
    with make_client(peer.url) as client:
        assert client.call("echo", ["direct"]) == ["direct"]


@pytest.mark.parametrize("modes", [(), ("sse",)], ids=["json", "sse"])
def test_close_fails_pending_requests_at_once(peer: HttpPeer, modes: Tuple[str, ...]) -> None:
    client = make_client(peer.url_with(*modes))
    try:
        pending = [client.request("never") for _ in range(3)]
        assert peer.wait_for(lambda: len(peer.records_for("never")) == 3)
    finally:
        started = time.monotonic()
        client.close()
        elapsed = time.monotonic() - started
    assert elapsed < 1.5
    for future in pending:
        with pytest.raises(TransportClosed):
            future.result(WAIT_S)
    with pytest.raises(TransportClosed):
        client.call("echo")


def test_close_is_idempotent_thread_safe_and_tells_the_sink_once(peer: HttpPeer) -> None:
    sink = RecordingSink()
    transport = http_transport(peer.url)
    transport.start(sink)
    transport.send(request_bytes(1, "echo", [1]), [1])
    assert sink.next_message()["result"] == [1]
    threads = [threading.Thread(target=transport.close) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT_S)
    transport.close()
    assert len(sink.closed) == 1
    assert isinstance(sink.closed[0], TransportClosed)
    with pytest.raises(TransportClosed):
        transport.send(request_bytes(2, "echo"), [2])
    with pytest.raises(TransportClosed):
        transport.send(b'{"jsonrpc":"2.0","method":"note"}')
    with pytest.raises(TransportClosed):
        transport.open_listen_stream()


def test_pool_threads_are_named(peer: HttpPeer) -> None:
    with make_client(peer.url) as client:
        client.request("block", {"gate": "names"})
        assert peer.wait_arrived("names")
        names = [t.name for t in threading.enumerate()]
        assert any(name.startswith("jsonrpc-http[http://127.0.0.1:") for name in names), names
        assert all(t.daemon for t in threading.enumerate() if t.name.startswith("jsonrpc-http"))
        peer.open_gate("names")


# -- server-to-client messages ------------------------------------------------------------------


def test_reverse_call_on_the_post_stream(peer: HttpPeer) -> None:
    with make_client(peer.url_with("sse")) as client:
        client.on_request("sampling/createMessage", lambda params: {"echo": params})
        result = client.call("reverse_call", {"method": "sampling/createMessage", "params": {"x": 1}})
        assert result == {"result": {"echo": {"x": 1}}}
    answer = next(r for r in peer.records if r.message and "result" in r.message)
    assert answer.message["id"] == "srv-1"


def test_listen_stream_delivers_server_messages(peer: HttpPeer) -> None:
    notes: queue.Queue[Any] = queue.Queue()
    with make_client(peer.url_with(retry=50)) as client:
        transport = client.transport
        assert isinstance(transport, HttpTransport)
        client.on_notification("hello", notes.put)
        client.on_request("roots/list", lambda params: {"roots": []})
        transport.open_listen_stream()
        transport.open_listen_stream()  # a no-op while one runs
        assert peer.wait_for(lambda: peer.listen_count == 1)
        assert transport.listening
        peer.push({"jsonrpc": "2.0", "method": "hello", "params": {"n": 1}})
        assert notes.get(timeout=WAIT_S) == {"n": 1}
        peer.push({"jsonrpc": "2.0", "id": "srv-listen", "method": "roots/list"})
        assert peer.wait_for(lambda: any(r.message and r.message.get("id") == "srv-listen" for r in peer.records))
        # A cut stream is resumed (Last-Event-ID) and keeps delivering.
        peer.cut_listeners()
        assert peer.wait_for(lambda: peer.listen_count == 2)
        peer.push({"jsonrpc": "2.0", "method": "hello", "params": {"n": 2}})
        assert notes.get(timeout=WAIT_S) == {"n": 2}
        # Server-to-client messages of JSON-mode requests go to the listen stream too.
        client.on_request("sampling/createMessage", lambda params: {"answered": params})
        assert client.call("reverse_call", {"method": "sampling/createMessage", "params": [1]}) == {
            "result": {"answered": [1]}
        }
    gets = [r for r in peer.records if r.http_method == "GET"]
    assert "last-event-id" not in gets[0].headers
    assert gets[1].headers["last-event-id"].startswith("L")


def test_reset_session_stops_the_listen_stream(peer: HttpPeer) -> None:
    notes: queue.Queue[Any] = queue.Queue()
    with make_client(peer.url_with("session")) as client:
        transport = client.transport
        assert isinstance(transport, HttpTransport)
        client.on_notification("hello", notes.put)
        client.call("initialize", INIT_PARAMS)
        transport.open_listen_stream()
        assert peer.wait_for(lambda: peer.listen_count == 1)
        transport.reset_session()
        assert not transport.listening
        client.call("initialize", INIT_PARAMS)
        transport.open_listen_stream()
        assert peer.wait_for(lambda: peer.listen_count == 2)
        gets = [r for r in peer.records if r.http_method == "GET"]
        assert gets[0].headers["mcp-session-id"] != gets[1].headers["mcp-session-id"] == transport.session_id
        peer.push({"jsonrpc": "2.0", "method": "hello", "params": {"n": 3}})
        assert notes.get(timeout=WAIT_S) == {"n": 3}


def test_listen_stream_405_ends_quietly(peer: HttpPeer) -> None:
    with make_client(peer.url_with("nolisten")) as client:
        transport = client.transport
        assert isinstance(transport, HttpTransport)
        transport.open_listen_stream()
        assert peer.wait_for(lambda: any(r.http_method == "GET" for r in peer.records))
        for thread in threading.enumerate():
            if thread.name.startswith("jsonrpc-http-listen["):
                thread.join(WAIT_S)  # the refused stream ends its thread
        assert not transport.listening
        assert client.call("echo", [1]) == [1]


# -- headers, auth, logs ---------------------------------------------------------------------------


class _HeaderAuth(requests.auth.AuthBase):
    def __init__(self, value: str) -> None:
        self.value = value

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        request.headers["X-Custom-Auth"] = self.value
        return request


def test_static_headers_provider_and_auth(peer: HttpPeer) -> None:
    calls: List[int] = []

    def provider() -> Dict[str, str]:
        calls.append(1)
        return {"X-Fresh": str(len(calls))}

    options = {"headers": {"X-Static": "s"}, "header_provider": provider, "auth": _HeaderAuth("a")}
    with make_client(peer.url, **options) as client:
        first = client.call("headers")
        second = client.call("headers")
    assert first["x-static"] == second["x-static"] == "s"
    assert first["x-custom-auth"] == "a"
    assert int(second["x-fresh"]) > int(first["x-fresh"])


class _HookingAuth(requests.auth.AuthBase):
    """Registers a response hook, as digest authentication does to answer its 401."""

    def __init__(self) -> None:
        self.statuses: List[int] = []

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        request.register_hook("response", self._seen)
        return request

    def _seen(self, response: requests.Response, **settings: Any) -> requests.Response:
        assert settings["stream"] is True  # hooks get the settings the request was sent with
        self.statuses.append(response.status_code)
        return response


def test_what_requests_adds_to_a_request_is_kept(peer: HttpPeer) -> None:
    # Requests go through the session's adapter without Session.send; what the session adds stays.
    auth = _HookingAuth()
    with make_client(peer.url, auth=auth) as client:
        set_cookie = {
            "headers": {"Set-Cookie": "sticky=node-7; Path=/"},
            "chunks": ['{"jsonrpc": "2.0", "id": {id}, "result": 1}'],
        }
        assert client.call("raw_answer", set_cookie) == 1
        headers = client.call("headers")
        body = ["x" * 200_000]  # above the size whose head and body go out in one write
        assert client.call("echo", body) == body
    assert headers["cookie"] == "sticky=node-7"  # a load balancer's sticky session is kept
    assert headers["user-agent"].startswith("python-requests/")
    assert "gzip" in headers["accept-encoding"]
    assert auth.statuses == [200, 200, 200]  # the response hook the auth registered ran for each answer


def test_a_small_request_goes_out_in_one_write(peer: HttpPeer, monkeypatch: pytest.MonkeyPatch, sender: str) -> None:
    # The direct path's connections write a request's head and body together (OneWrite): urllib3 alone
    # (the plain sender) writes them apart, which costs 14% a call with 16 threads on 2 CPUs. Observed on
    # the real socket.
    port = urlsplit(peer.url).port
    writes: List[bytes] = []
    sendall = socket.socket.sendall

    def recording(sock: socket.socket, data: Any, *args: Any) -> None:
        try:
            ours = sock.getpeername()[1] == port  # the client's side (the peer's own writes go elsewhere)
        except OSError:
            ours = False
        if ours:
            writes.append(bytes(data))
        sendall(sock, data, *args)

    big = ["x" * 200_000]
    with make_client(peer.url) as client:
        assert client.call("echo", [1]) == [1]  # connected before counting
        monkeypatch.setattr(socket.socket, "sendall", recording)
        assert client.call("echo", ["small"]) == ["small"]
        small_writes = list(writes)
        del writes[:]
        assert client.call("echo", big) == big
        monkeypatch.undo()
    if sender == "requests":  # the plain one: the head, then the body
        assert len(small_writes) == 2 and small_writes[1].endswith(b'"params":["small"]}'), small_writes
    else:
        assert len(small_writes) == 1, small_writes
        assert small_writes[0].endswith(b'"params":["small"]}')
    assert small_writes[0].startswith(b"POST ")
    assert len(writes) == 2 and writes[0].startswith(b"POST ")  # a large body goes as it comes, after its head


@pytest.mark.parametrize("chunked", [False, True])
@pytest.mark.parametrize("content_type", ["application/json", "text/event-stream"])
def test_a_compressed_answer_is_decoded(peer: HttpPeer, content_type: str, chunked: bool) -> None:
    # Bodies without a Content-Encoding are read undecoded (cheaper); a gzip one still is decoded.
    message = '{"jsonrpc": "2.0", "id": {id}, "result": "unzipped"}'
    chunks = [message] if content_type == "application/json" else ["event: message\ndata: " + message + "\n\n"]
    raw = {"content_type": content_type, "chunks": chunks, "chunked": chunked, "gzip": True}
    with make_client(peer.url) as client:
        assert client.call("raw_answer", raw, timeout=WAIT_S) == "unzipped"
        assert client.call("echo", [1], timeout=WAIT_S) == [1]  # the connection is fine for the next


class _CookieReadingAuth(requests.auth.AuthBase):
    """A response hook that reads the answer's own cookie jar."""

    def __init__(self) -> None:
        self.seen: List[Dict[str, str]] = []

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        request.register_hook("response", self._seen)
        return request

    def _seen(self, response: requests.Response, **settings: Any) -> requests.Response:
        self.seen.append(response.cookies.get_dict())
        return response


def test_an_answer_cookie_jar_holds_what_the_server_set(peer: HttpPeer) -> None:
    # The jar of each answer is made only when read: what it holds is what requests would put in it.
    auth = _CookieReadingAuth()
    set_cookie = {
        "headers": {"Set-Cookie": "sticky=node-9; Path=/"},
        "chunks": ['{"jsonrpc": "2.0", "id": {id}, "result": 1}'],
    }
    with make_client(peer.url, auth=auth) as client:
        assert client.call("raw_answer", set_cookie, timeout=WAIT_S) == 1
        assert client.call("echo", [2], timeout=WAIT_S) == [2]
    assert auth.seen == [{"sticky": "node-9"}, {}]


def test_credentials_in_the_url_become_basic_auth(peer: HttpPeer) -> None:
    url = peer.url.replace("127.0.0.1", "ann:pa55@127.0.0.1")
    with make_client(url) as client:
        headers = client.call("headers")
    assert headers["authorization"] == "Basic " + base64.b64encode(b"ann:pa55").decode()


def test_a_header_that_http_cannot_carry_is_refused(peer: HttpPeer) -> None:
    client = make_client(peer.url, header_provider=lambda: {"X-Token": "a\r\nX-Injected: 1"})
    with client, pytest.raises(HttpError, match="InvalidHeader"):
        client.call("echo", [1], timeout=WAIT_S)
    assert peer.records_for("echo") == []


def test_secrets_are_never_logged(peer: HttpPeer, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    secrets = ["s3cr3t-bearer", "s3cr3t-api-key", "s3cr3t-token", "s3cr3t-cookie", "s3cr3t-auth"]
    options = {
        "headers": {"Authorization": f"Bearer {secrets[0]}", "X-Api-Key": secrets[1], "Cookie": secrets[3]},
        "header_provider": lambda: {"X-Session-Token": secrets[2]},
        "auth": _HeaderAuth(secrets[4]),
    }
    with make_client(peer.url_with("session", "sse", "priming", "cut", retry=20), **options) as client:
        client.call("initialize", INIT_PARAMS)
        client.notify("note")
        with pytest.raises(HttpError):
            client.call("fault", {"kind": "500"})
    headers = peer.records_for("initialize")[0].headers
    assert headers["authorization"] == f"Bearer {secrets[0]}"
    assert headers["x-session-token"] == secrets[2]
    assert "<redacted>" in caplog.text
    for secret in secrets:
        assert secret not in caplog.text


def test_redact_headers() -> None:
    headers = {
        "Authorization": "a",
        "proxy-authorization": "b",
        "Cookie": "c",
        "X-API-Key": "d",
        "X-Auth-Token": "e",
        "Client-Secret": "f",
        "Accept": "application/json",
        "Mcp-Session-Id": "sid",
    }
    redacted = redact_headers(headers)
    assert redacted == {
        "Authorization": "<redacted>",
        "proxy-authorization": "<redacted>",
        "Cookie": "<redacted>",
        "X-API-Key": "<redacted>",
        "X-Auth-Token": "<redacted>",
        "Client-Secret": "<redacted>",
        "Accept": "application/json",
        "Mcp-Session-Id": "sid",
    }
    assert headers["Authorization"] == "a"


def test_label_hides_credentials_and_query() -> None:
    assert url_label("https://user:pw@example.com:8443/mcp?token=abc#x") == "https://example.com:8443/mcp"
    assert url_label("http://[::1]:9/mcp") == "http://[::1]:9/mcp"
    transport = http_transport("https://user:pw@example.com/mcp?api_key=k")
    try:
        assert transport.label == "https://example.com/mcp"
        assert "pw" not in repr(transport) and "api_key" not in repr(transport)
    finally:
        transport.close()


@pytest.mark.parametrize("url", ["ftp://example.com/x", "http:///nohost", "example.com/mcp"])
def test_bad_url_is_value_error(url: str) -> None:
    with pytest.raises(ValueError):
        http_transport(url)


# -- transport_from_config ------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", [None, "http", "streamable-http"])
def test_config_http_entry(peer: HttpPeer, kind: Optional[str]) -> None:
    entry: Dict[str, Any] = {"url": peer.url, "headers": {"X-From-Config": "yes"}}
    if kind is not None:
        entry["type"] = kind
    transport = transport_from_config(entry)
    assert isinstance(transport, HttpTransport)
    with JsonRpcClient(transport, default_timeout=WAIT_S) as client:
        assert client.call("headers")["x-from-config"] == "yes"


def test_config_stdio_entry(tmp_path: Path) -> None:
    argv = peer_command("stdio_peer")
    entry = {"type": "stdio", "command": argv[0], "args": argv[1:], "env": {"PEER_MARK": "m"}, "cwd": str(tmp_path)}
    transport = transport_from_config(entry)
    assert isinstance(transport, StdioTransport)
    with JsonRpcClient(transport, default_timeout=WAIT_S) as client:
        assert client.call("echo", [1]) == [1]
        assert client.call("env")["PEER_MARK"] == "m"
        assert Path(client.call("cwd")) == tmp_path


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"url": "http://127.0.0.1:1/mcp", "command": "x"}, "not both"),
        ({}, "needs 'command'"),
        ({"url": 5}, "'url'"),
        ({"url": "http://127.0.0.1:1/mcp", "headers": {"a": 1}}, "'headers'"),
        ({"url": "http://127.0.0.1:1/mcp", "headers": ["a"]}, "'headers'"),
        ({"url": "http://127.0.0.1:1/mcp", "type": "stdio"}, "does not take a 'url'"),
        ({"command": "x", "type": "http"}, "does not take a 'command'"),
        ({"command": "x", "type": "sse-legacy"}, "unknown server type"),
        ({"command": ["x"]}, "'command'"),
        ({"command": "x", "args": "a b"}, "'args'"),
        ({"command": "x", "args": [1]}, "'args'"),
        ({"command": "x", "env": {"A": 1}}, "'env'"),
        ({"command": "x", "cwd": 3}, "'cwd'"),
        ("not a mapping", "mapping"),
    ],
)
def test_config_bad_entries(entry: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        transport_from_config(entry)


# -- the official MCP Python SDK as the server --------------------------------------------------------------


@pytest.fixture(params=["json", "sse"])
def sdk_server(request: pytest.FixtureRequest) -> Iterator[Tuple[str, str]]:
    pytest.importorskip("mcp")
    mode = request.param
    flags = ["--http", "--json"] if mode == "json" else ["--http"]
    # The peer prints its URL once it accepts connections: nothing is polled.
    with ServerProcess(peer_command("mcp_sdk_server", *flags), name=f"sdk-http-{mode}") as server:
        yield mode, server.wait_for(r"listening on (\S+)").group(1)


def test_against_the_official_sdk_server(sdk_server: Tuple[str, str]) -> None:
    mode, url = sdk_server
    transport = http_transport(url)
    progress: List[Any] = []
    with JsonRpcClient(transport, default_timeout=WAIT_S) as client:
        client.on_notification("notifications/progress", progress.append)
        result = client.call("initialize", INIT_PARAMS)
        assert result["protocolVersion"] == "2025-06-18"
        assert "tools" in result["capabilities"]
        client.notify("notifications/initialized")
        transport.protocol_version = result["protocolVersion"]
        if mode == "sse":
            assert transport.session_id is not None
        tools = client.call("tools/list")["tools"]
        assert {tool["name"] for tool in tools} >= {"add", "count"}
        added = client.call("tools/call", {"name": "add", "arguments": {"a": 2, "b": 40}})
        assert added["isError"] is False
        assert added["content"][0]["text"] == "42"
        counted = client.call(
            "tools/call", {"name": "count", "arguments": {"steps": 3}, "_meta": {"progressToken": "tok"}}
        )
        assert counted["content"][0]["text"] == "counted 3"
        if mode == "sse":
            assert [p["progress"] for p in progress] == [1, 2, 3]
        futures: List[Future[Any]] = [
            client.request("tools/call", {"name": "add", "arguments": {"a": i, "b": 1}}) for i in range(5)
        ]
        assert [f.result(WAIT_S)["structuredContent"]["result"] for f in futures] == [1, 2, 3, 4, 5]
        with pytest.raises(JsonRpcError):
            client.call("no/such/method")


def test_an_unknown_sender_is_refused_naming_the_choices() -> None:
    with pytest.raises(ValueError, match=r"sender must be one of .*'requests'"):
        HttpTransport("http://127.0.0.1:9/mcp", sender="urllib3")


def test_the_direct_path_is_chosen_in_one_place() -> None:
    # The direct path (transports/_httpbase/direct.py) is a measured strategy over the plain one:
    # one module imports it, where it is chosen.
    package = Path(__file__).resolve().parent.parent / "jsonrpc_threads"
    importers = []
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[-1] == "direct":
                importers.append(path.relative_to(package).as_posix())
    assert importers == ["transports/_httpbase/endpoint.py"]


@pytest.mark.parametrize("raised", [SystemExit(3), KeyboardInterrupt()])
def test_a_header_provider_raising_base_exception_fails_the_call_at_once(peer: HttpPeer, raised: BaseException) -> None:
    """Issue 47, item 8: it left the call hanging (forever with timeout=None)."""

    def provider() -> Dict[str, str]:
        raise raised

    with make_client(peer.url, header_provider=provider) as client:
        started = time.monotonic()
        with pytest.raises(HttpError, match=type(raised).__name__):
            client.call("echo", [1], timeout=WAIT_S)
        assert time.monotonic() - started < WAIT_S / 2


class _RaisingAuth(requests.auth.AuthBase):
    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        raise SystemExit(4)


def test_an_auth_hook_raising_system_exit_fails_the_call_at_once(peer: HttpPeer) -> None:
    with make_client(peer.url, auth=_RaisingAuth()) as client:
        started = time.monotonic()
        with pytest.raises(HttpError, match="SystemExit"):
            client.call("echo", [1], timeout=None)
        assert time.monotonic() - started < WAIT_S / 2
