"""A streamed answer: many responses to one request id (core/protocol.py's streamed requests, core/streams.py).

The core part is pure (bytes in, events out); the client part runs a
``JsonRpcClient`` over a ``MemoryTransport`` pair whose other end is a scripted
peer that answers one request with several responses, as an A2A agent does
over SSE (no process, no socket: the same over real HTTP is
tests/test_http_streams.py).
"""

from __future__ import annotations

import gc
import json
import threading
import time
from typing import Any, Dict, Iterator, Optional, Sequence, Tuple

import pytest

from jsonrpc_threads import (
    HttpConnectionError,
    JsonRpcClient,
    RemoteError,
    RequestTimeout,
    ResponseStream,
    TransportClosed,
)
from jsonrpc_threads.core.events import Failed, Held, Ignored, PeerNotification, Streamed, TimedOut
from jsonrpc_threads.core.protocol import Connection
from jsonrpc_threads.errors import InvalidRequest

from .helpers import MemoryPeer, Message, error, response, scripted

#: Bounds for a timeout's promptness: a stream with ``SHORT_S`` ends within ``SHORT_S + LATE_S``.
SHORT_S = 0.1
LATE_S = 0.25
#: Any wait that must not run out.
WAIT_S = 5.0


def wire(value: Any) -> bytes:
    return json.dumps(value).encode()


def streamed(connection: Connection, request_id: Any = 1, deadline: Optional[float] = None) -> Any:
    connection.register(request_id, "s", timeout=1.0, deadline=deadline, token="t", streamed=True)
    return request_id


# -- the core: bytes in, events out ---------------------------------------------------------------


def test_each_result_of_a_streamed_request_is_an_event_and_it_stays_pending() -> None:
    connection = Connection()
    streamed(connection)
    assert connection.receive(wire(response(1, {"n": 1}))) == [Streamed(1, "t", {"n": 1})]
    assert connection.receive(wire([response(1, {"n": 2}), response(1, {"n": 3})])) == [
        Streamed(1, "t", {"n": 2}),
        Streamed(1, "t", {"n": 3}),
    ]
    assert 1 in connection and len(connection) == 1


def test_the_consumer_ends_a_stream_without_a_cancel_and_later_answers_are_ignored() -> None:
    connection = Connection()
    streamed(connection)
    connection.receive(wire(response(1, "last")))
    assert connection.end_stream(1) is True and connection.end_stream(1) is False
    assert connection.cancels == 0 and len(connection) == 0
    assert connection.receive(wire(response(1, "late"))) == [Ignored("a late or unknown response", 1, warning=False)]


def test_an_error_response_or_a_malformed_one_ends_a_stream() -> None:
    connection = Connection()
    streamed(connection, 1)
    streamed(connection, 2)
    events = connection.receive(wire(error(1, -32001, "no such task")))
    assert [type(e) for e in events] == [Failed] and isinstance(events[0].error, RemoteError)  # type: ignore[attr-defined]
    both = connection.receive(wire({"jsonrpc": "2.0", "id": 2, "result": 1, "error": {"code": 1, "message": "x"}}))
    assert isinstance(both[0].error, InvalidRequest)  # type: ignore[attr-defined]
    assert len(connection) == 0 and connection.errors == 2


def test_a_streams_deadline_withdrawal_and_close_end_it_as_any_request() -> None:
    connection = Connection()
    streamed(connection, 1, deadline=10.0)
    streamed(connection, 2)
    streamed(connection, 3)
    connection.receive(wire(response(1, "first")))
    assert connection.expire(10.0) == [TimedOut([1], ["t"], ["s"], [1.0])]
    assert connection.withdraw(2) is True and connection.cancels == 1
    assert [type(e) for e in connection.close(TransportClosed("gone"))] == [Failed]
    assert len(connection) == 0


def test_a_stream_that_fails_in_transit_after_its_final_result_is_no_error() -> None:
    # The peer ends its answer right after the final result, before the consumer took it: the transport
    # reports the request failed; the consumer then finds the final result, and it was no failure.
    connection = Connection()
    streamed(connection, 1)
    streamed(connection, 2)
    connection.receive(wire([response(1, "last"), response(2, "not last")]))
    assert [type(e) for e in connection.fail([1, 2], HttpConnectionError("ended"))] == [Failed, Failed]
    assert connection.errors == 2
    assert connection.end_stream(1) is False and connection.errors == 1  # its consumer took "last": the final
    assert connection.end_stream(2, final=False) is False and connection.errors == 1  # a failure indeed
    assert connection.end_stream(1) is False and connection.errors == 1  # forgotten: once


def test_a_streams_answers_are_never_held_behind_notifications() -> None:
    connection = Connection()
    connection.handle_notifications("progress")
    streamed(connection, 1)
    connection.register(2, "m", token="plain")
    events = connection.receive(wire([{"jsonrpc": "2.0", "method": "progress"}, response(1, "a"), response(2, "b")]))
    assert [type(e) for e in events] == [PeerNotification, Streamed, Held]


# -- the client: request_stream over a transport ------------------------------------------------


def streaming(count: int, *, then: Optional[Message] = None, gap: float = 0.0) -> Any:
    """A peer script: ``stream`` is answered with ``count`` results {"n": i, "last": i == count - 1}, then ``then``."""

    def script(peer: MemoryPeer, request: Message) -> Optional[Sequence[Tuple[float, Message]]]:
        if request["method"] != "stream":
            return None
        rid = request["id"]
        replies = [(gap * n, response(rid, {"n": n, "last": n == count - 1})) for n in range(count)]
        if then is not None:
            replies.append((gap * count, {**then, "id": rid}))
        return replies

    return script


@pytest.fixture
def peer_and_client(request: pytest.FixtureRequest) -> Iterator[Tuple[MemoryPeer, JsonRpcClient]]:
    script, options = request.param if hasattr(request, "param") else (streaming(3), {})
    peer = MemoryPeer(script)
    client = JsonRpcClient(scripted(peer), **options)
    try:
        yield peer, client
    finally:
        client.close()
        peer.stop()


def is_last(result: Dict[str, Any]) -> bool:
    return bool(result["last"])


def test_a_stream_hands_over_every_result_and_ends_after_the_final_one(
    peer_and_client: Tuple[MemoryPeer, JsonRpcClient],
) -> None:
    _, client = peer_and_client
    with client.request_stream("stream", timeout=WAIT_S, is_final=is_last) as stream:
        assert isinstance(stream, ResponseStream) and client.has_pending()
        assert [r["n"] for r in stream] == [0, 1, 2]
        assert stream.closed and not client.has_pending()
    assert client.stats()["cancels"] == 0 and client.call("echo", [1], timeout=WAIT_S) == [1]


@pytest.mark.parametrize("peer_and_client", [(streaming(2, then=error(0, -32001, "no such task")), {})], indirect=True)
def test_an_error_response_is_raised_after_the_results_before_it(
    peer_and_client: Tuple[MemoryPeer, JsonRpcClient],
) -> None:
    _, client = peer_and_client
    stream = client.request_stream("stream", timeout=WAIT_S)  # no is_final: only the error ends it
    assert [next(stream)["n"], next(stream)["n"]] == [0, 1]
    with pytest.raises(RemoteError) as refused:
        next(stream)
    assert refused.value.code == -32001 and stream.closed and not client.has_pending()
    with pytest.raises(StopIteration):
        next(stream)


@pytest.mark.parametrize("peer_and_client", [(streaming(1), {})], indirect=True)
def test_the_timeout_bounds_the_whole_stream_promptly(peer_and_client: Tuple[MemoryPeer, JsonRpcClient]) -> None:
    _, client = peer_and_client
    started = time.monotonic()
    stream = client.request_stream("stream", timeout=SHORT_S)  # one result, then silence
    assert next(stream)["n"] == 0
    with pytest.raises(RequestTimeout) as timed_out:
        next(stream)
    assert SHORT_S <= time.monotonic() - started < SHORT_S + LATE_S
    assert (timed_out.value.method, timed_out.value.timeout) == ("stream", SHORT_S)
    assert timed_out.value.request_id == stream.request_id
    assert stream.closed and not client.has_pending() and client.stats()["timeouts"] == 1


def test_many_streams_time_out_together_on_time(peer_and_client: Tuple[MemoryPeer, JsonRpcClient]) -> None:
    _, client = peer_and_client
    started = time.monotonic()
    streams = [client.request_stream("never", timeout=SHORT_S) for _ in range(20)]
    for stream in streams:
        with pytest.raises(RequestTimeout):
            next(stream)
    assert time.monotonic() - started < SHORT_S + LATE_S


@pytest.mark.parametrize("peer_and_client", [(streaming(1), {"cancellation": "mcp"})], indirect=True)
def test_close_withdraws_the_request_and_tells_the_peer(peer_and_client: Tuple[MemoryPeer, JsonRpcClient]) -> None:
    _, client = peer_and_client
    stream = client.request_stream("stream", timeout=WAIT_S)
    next(stream)
    stream.close("enough")
    assert stream.closed and not client.has_pending() and client.stats()["cancels"] == 1
    log = client.call("notifications_log", {"wait_for": 1, "timeout": WAIT_S}, timeout=WAIT_S)
    assert log == [
        {"method": "notifications/cancelled", "params": {"requestId": stream.request_id, "reason": "enough"}}
    ]
    with pytest.raises(StopIteration):
        next(stream)
    again = client.request_stream("stream", timeout=WAIT_S)
    assert client.cancel(again, reason="twice") is True and again.closed
    assert client.cancel(again) is False and client.stats()["cancels"] == 2


def test_a_dropped_stream_is_withdrawn(peer_and_client: Tuple[MemoryPeer, JsonRpcClient]) -> None:
    _, client = peer_and_client
    for result in client.request_stream("stream", timeout=WAIT_S):  # no is_final: it stays open
        assert result["n"] == 0
        break
    assert client.stats()["pending"] == 0 and client.stats()["cancels"] == 1
    stream = client.request_stream("never", timeout=WAIT_S)
    assert client.stats()["pending"] == 1
    del stream
    gc.collect()
    assert client.stats()["pending"] == 0 and client.stats()["cancels"] == 2


def test_closing_the_client_ends_a_stream_that_waits(peer_and_client: Tuple[MemoryPeer, JsonRpcClient]) -> None:
    _, client = peer_and_client
    stream = client.request_stream("never", timeout=WAIT_S)
    closer = threading.Timer(SHORT_S, client.close)
    closer.start()
    started = time.monotonic()
    with pytest.raises(TransportClosed):
        next(stream)
    assert time.monotonic() - started < SHORT_S + LATE_S
    closer.join()
    with pytest.raises(TransportClosed):
        client.request_stream("stream")


def test_the_sink_owes_the_transport_no_answer_until_the_stream_ends(
    peer_and_client: Tuple[MemoryPeer, JsonRpcClient],
) -> None:
    # What a transport strikes off an exchange: a stream's results answer nothing until it ends.
    _, client = peer_and_client
    stream = client.request_stream("never", timeout=WAIT_S)
    rid = stream.request_id
    assert client.message_received(wire(response(rid, {"n": 0}))) == ()
    assert client.message_received(wire([response(rid, {"n": 1})])) == []
    assert [next(stream), next(stream)] == [{"n": 0}, {"n": 1}]
    assert client.message_received(wire(error(rid, -32001, "gone"))) == (rid,)
    with pytest.raises(RemoteError):
        next(stream)


def test_what_is_final_raises_closes_the_stream(peer_and_client: Tuple[MemoryPeer, JsonRpcClient]) -> None:
    _, client = peer_and_client

    def refuse(result: Any) -> bool:
        raise ValueError(f"not an event: {result!r}")

    stream = client.request_stream("stream", timeout=WAIT_S, is_final=refuse)
    with pytest.raises(ValueError, match="not an event"):
        next(stream)
    assert stream.closed and not client.has_pending()
