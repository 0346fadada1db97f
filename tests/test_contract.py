"""One contract, every transport: the same calls behave the same in memory, over stdio, over HTTP and over HTTP+SSE."""

from __future__ import annotations

import threading
import time
from concurrent.futures import CancelledError, wait
from typing import Any, Iterator, List

import pytest

from jsonrpc_threads import (
    HttpTransport,
    JsonRpcClient,
    MethodNotFound,
    RequestTimeout,
    SseTransport,
    StdioTransport,
    TransportClosed,
)
from jsonrpc_threads.testing import MemoryTransport

from .conftest import peer_command
from .helpers import scripted
from .peers.http_peer import HttpPeer
from .peers.sse_peer import SsePeer

WAIT_S = 10.0
#: "-plain": every strategy's plain reference (tests/strategies.py): the client's waiter and
#: futures, stdio's reads by the reader thread, HTTP's requests sent by requests itself.
TRANSPORTS = ["memory", "stdio", "http-json", "http-sse", "legacy-sse", "stdio-plain", "http-json-plain"]
PLAIN_CLIENT = {"waiter": "plain", "futures": "plain"}


@pytest.fixture(params=TRANSPORTS)
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def connect(kind: str) -> Iterator[Any]:
    """``connect(**client_options) -> JsonRpcClient`` on a fresh peer of this kind."""
    peers: List[Any] = []
    clients: List[JsonRpcClient] = []

    def make(**options: Any) -> JsonRpcClient:
        if kind == "memory":
            transport: Any = scripted()
        elif kind.startswith("stdio"):
            reads = "reader_thread" if kind.endswith("-plain") else "caller"
            transport = StdioTransport(peer_command("stdio_peer"), reads=reads)
        elif kind == "legacy-sse":
            legacy = SsePeer().start()
            peers.append(legacy)
            transport = SseTransport(legacy.url_with())
        else:
            peer = HttpPeer().start()
            peers.append(peer)
            sender = "requests" if kind.endswith("-plain") else "direct"
            transport = HttpTransport(peer.url_with("sse") if kind == "http-sse" else peer.url, sender=sender)
        if kind.endswith("-plain"):
            options = {**PLAIN_CLIENT, **options}
        client = JsonRpcClient(transport, **options)
        clients.append(client)
        return client

    try:
        yield make
    finally:
        for client in clients:
            client.close()
        for peer in peers:
            peer.close()


@pytest.fixture
def client(connect: Any) -> JsonRpcClient:
    return connect()  # type: ignore[no-any-return]


def test_call_and_request(client: JsonRpcClient) -> None:
    assert client.call("add", [2, 3]) == 5
    assert client.request("echo", {"k": [1, None]}).result(WAIT_S) == {"k": [1, None]}


def test_many_threads_each_result_matched(client: JsonRpcClient) -> None:
    failures: List[BaseException] = []

    def worker(n: int) -> None:
        try:
            for i in range(40):
                assert client.call("echo", {"n": n, "i": i}) == {"n": n, "i": i}
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not failures


def test_timeout_then_still_usable_and_late_answer_dropped(client: JsonRpcClient) -> None:
    with pytest.raises(RequestTimeout):
        client.call("sleep", {"seconds": 0.3, "result": "late"}, timeout=0.05)
    assert client.call("sleep", {"seconds": 0.5, "result": "on time"}) == "on time"
    assert client.call("add", [1, 1]) == 2
    assert not client.has_pending()


def test_slow_answer_does_not_hold_back_a_fast_one(client: JsonRpcClient) -> None:
    slow = client.request("sleep", {"seconds": 2, "result": "slow"})
    start = time.monotonic()
    assert client.call("echo", ["fast"]) == ["fast"]
    assert time.monotonic() - start < 1.5
    assert not slow.done()
    assert slow.result(WAIT_S) == "slow"


def test_peer_errors_keep_their_class(client: JsonRpcClient) -> None:
    with pytest.raises(MethodNotFound):
        client.call("no_such_method")
    assert client.call("echo", [1]) == [1]


def test_cancel_withdraws_and_tells_the_peer(connect: Any) -> None:
    client = connect(cancellation="mcp")
    future = client.request("never", timeout=None)
    assert future.cancel()
    with pytest.raises(CancelledError):
        future.result()
    log = client.call("notifications_log", {"wait_for": 1, "timeout": 5.0})
    assert {
        "method": "notifications/cancelled",
        "params": {"requestId": future.request_id, "reason": "Cancelled by the client"},
    } in log
    assert client.call("echo", [2]) == [2]


def test_batch(client: JsonRpcClient) -> None:
    with client.batch() as b:
        total = b.request("add", [1, 2])
        missing = b.request("no_such_method")
        b.notify("note", {"x": 1})
    assert total.result(WAIT_S) == 3
    assert isinstance(missing.exception(WAIT_S), MethodNotFound)
    log = client.call("notifications_log", {"wait_for": 1, "timeout": 5.0})
    assert {"method": "note", "params": {"x": 1}} in log


def test_unicode(client: JsonRpcClient) -> None:
    text = "line\u2028sep\u2029para \U0001f600 é"
    assert client.call("echo", [text]) == [text]


def test_close_fails_everything_pending_at_once(client: JsonRpcClient) -> None:
    futures = [client.request("never", timeout=None) for _ in range(50)]
    start = time.monotonic()
    client.close()
    assert time.monotonic() - start < 5
    _done, not_done = wait(futures, timeout=WAIT_S)
    assert not not_done
    assert all(isinstance(f.exception(), TransportClosed) for f in futures)
    with pytest.raises(TransportClosed):
        client.call("echo", [1])


# -- the sink's side of the contract ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "ids"),
    [
        (b'{"jsonrpc": "2.0", "id": 5, "result": 1}', (5,)),
        (b'{"jsonrpc": "2.0", "error": {"code": -1, "message": "no"}, "id": "late"}', ("late",)),
        (
            b'[{"jsonrpc": "2.0", "id": 1, "result": 1}, {"jsonrpc": "2.0", "method": "n"}, 3, '
            b'{"jsonrpc": "2.0", "id": "a", "result": null}]',
            (1, "a"),
        ),
        (b'{"jsonrpc": "2.0", "method": "note", "params": {"id": 4}}', ()),
        (b'{"jsonrpc": "2.0", "id": true, "result": 1}', ()),
        (b"this is not json", ()),
        (b"[]", ()),
    ],
    ids=["response", "error", "batch", "notification", "bad-id", "not-json", "empty-batch"],
)
def test_the_client_tells_its_transport_which_responses_a_message_carried(message: bytes, ids: Any) -> None:
    ours, theirs = MemoryTransport.pair()
    with theirs, JsonRpcClient(ours) as client:
        assert tuple(client.message_received(message)) == ids
