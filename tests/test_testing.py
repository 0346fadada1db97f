"""jsonrpc_threads.testing.MemoryTransport: a connected pair without processes."""

from __future__ import annotations

import threading
from typing import Any, Dict, List, Sequence

import pytest

from jsonrpc_threads import InvalidParams, JsonRpcClient, MethodNotFound, RequestTimeout, TransportClosed
from jsonrpc_threads.server import current_request_id, notify
from jsonrpc_threads.testing import MemoryTransport

WAIT_S = 10.0
BLOCKERS: Dict[str, threading.Event] = {}
STARTED = threading.Event()


class Recorder:
    """A raw sink: every message as bytes, and the end of stream."""

    def __init__(self) -> None:
        self.messages: List[bytes] = []
        self.closed = threading.Event()
        self.got = threading.Condition()

    def message_received(self, data: bytes) -> Sequence[Any]:
        with self.got:
            self.messages.append(data)
            self.got.notify_all()
        return ()

    def transport_closed(self, error: TransportClosed) -> None:
        self.closed.set()

    def requests_failed(self, request_ids: Sequence[Any], error: Exception) -> None:
        pass

    def has_pending(self) -> bool:
        return False

    def wait_for(self, count: int) -> List[bytes]:
        with self.got:
            assert self.got.wait_for(lambda: len(self.messages) >= count, WAIT_S)
            return list(self.messages)


def tools(method: str, params: Any) -> Any:
    if method == "add":
        return params[0] + params[1]
    if method == "progress":
        for step in range(3):
            notify("progress", {"step": step, "of": current_request_id()})
        return "done"
    if method == "bad":
        raise InvalidParams("no")
    if method == "block":
        STARTED.set()
        BLOCKERS[params["name"]].wait(WAIT_S)
        return None
    raise MethodNotFound(method)


def test_serving_answers_as_serve_does() -> None:
    steps: List[Any] = []
    with JsonRpcClient(MemoryTransport.serving(tools)) as client:
        client.on_notification("progress", steps.append)
        assert client.call("add", [2, 3]) == 5
        assert client.request("add", [1, 1]).result(WAIT_S) == 2
        with pytest.raises(InvalidParams):
            client.call("bad")
        with pytest.raises(MethodNotFound):
            client.call("nothing")
        future = client.request("progress")
        assert future.result(WAIT_S) == "done"
        # Progress sent before the answer has reached its handler by then.
        assert [s["step"] for s in steps] == [0, 1, 2]
        assert {s["of"] for s in steps} == {future.request_id}  # type: ignore[attr-defined]
        with client.batch() as batch:
            a = batch.request("add", [1, 2])
            b = batch.request("add", [3, 4])
        assert (a.result(WAIT_S), b.result(WAIT_S)) == (3, 7)


def test_a_client_on_each_end_can_call_the_other() -> None:
    end, peer = MemoryTransport.pair()
    with JsonRpcClient(peer) as server, JsonRpcClient(end) as client:
        server.on_request("double", lambda params: 2 * params[0])
        client.on_request("ping", lambda params: "pong")
        server.on_request("ask_back", lambda params: server.call("ping"))
        assert client.call("double", [21]) == 42
        assert client.call("ask_back") == "pong"


def test_raw_messages_in_order_and_the_end_of_stream() -> None:
    end, peer = MemoryTransport.pair("raw")
    recorder = Recorder()
    peer.start(recorder)
    client = JsonRpcClient(end, default_timeout=0.2)
    try:
        futures = [client.request("m", [i]) for i in range(50)]
        got = recorder.wait_for(50)
        assert [int(m.split(b'"params":[')[1].rstrip(b"]}")) for m in got] == list(range(50))
        peer.send(b'{"jsonrpc":"2.0","id":1,"result":"one"}')
        assert futures[0].result(WAIT_S) == "one"
        with pytest.raises(RequestTimeout):
            futures[1].result(WAIT_S)
    finally:
        client.close()
    assert recorder.closed.wait(WAIT_S)
    with pytest.raises(TransportClosed):
        peer.send(b"{}")
    peer.close()


def test_closing_the_peer_fails_what_is_pending() -> None:
    end, peer = MemoryTransport.pair()
    recorder = Recorder()
    peer.start(recorder)
    with JsonRpcClient(end, default_timeout=None) as client:
        future = client.request("never")
        recorder.wait_for(1)
        peer.close()
        with pytest.raises(TransportClosed):
            future.result(WAIT_S)
        assert client.closed
        with pytest.raises(TransportClosed):
            client.call("again")


def test_closing_the_client_ends_a_busy_server() -> None:
    release = BLOCKERS["busy"] = threading.Event()
    client = JsonRpcClient(MemoryTransport.serving(tools, drain_timeout=WAIT_S))
    try:
        future = client.request("block", {"name": "busy"}, timeout=None)
        assert STARTED.wait(WAIT_S)
        release.set()  # the server's drain at the end of input then returns at once
    finally:
        client.close()
    assert future.done()  # answered in time, or failed by close()


def test_start_twice_and_bad_data_are_refused() -> None:
    end, peer = MemoryTransport.pair()
    try:
        end.start(Recorder())
        with pytest.raises(RuntimeError):
            end.start(Recorder())
        with pytest.raises(TypeError):
            end.send("text")  # type: ignore[arg-type]
    finally:
        end.close()
        peer.close()
        end.close()
    with pytest.raises(TransportClosed):
        end.start(Recorder())


def test_the_sink_tells_the_transport_which_responses_a_message_carried() -> None:
    end, peer = MemoryTransport.pair()
    peer.start(Recorder())
    with JsonRpcClient(end) as client:
        pending = client.request("m")
        request_id = pending.request_id  # type: ignore[attr-defined]
        received = client.message_received
        assert list(received(b'{"jsonrpc":"2.0","id":%d,"result":1}' % request_id)) == [request_id]
        assert pending.result(WAIT_S) == 1
        assert list(received(b'{"jsonrpc":"2.0","id":"late","error":{"code":1,"message":"x"}}')) == ["late"]
        batch = (
            b'[{"jsonrpc":"2.0","id":7,"result":1},{"jsonrpc":"2.0","method":"n"},'
            b'{"jsonrpc":"2.0","id":null,"error":{"code":1,"message":"x"}}]'
        )
        assert list(received(batch)) == [7]
        assert list(received(b'{"jsonrpc":"2.0","method":"note"}')) == []
        assert list(received(b'{"jsonrpc":"2.0","id":3,"method":"ask"}')) == []
        assert list(received(b"not json")) == []
        assert list(received(b"[1, 2]")) == []
    peer.close()
