"""``HttpTransport.open_stream``: an answer the caller reads itself, against a real HTTP server on 127.0.0.1.

The peer (tests/peers/http_peer.py) answers ``raw_answer`` with the bytes it is
told to write: an SSE stream of several messages, a JSON body, an error
status, a stream that stalls or is cut.  Each test checks what the caller
gets, that every wait ends by the deadline, and that no thread is left: the
stream's own thread ends when the answer ends, when the stream is closed (or
dropped), and when the transport closes.
"""

from __future__ import annotations

import gc
import json
import threading
import time
from typing import Any, Iterator, List

import pytest

from jsonrpc_threads import HttpConnectionError, HttpError, JsonRpcError, RequestTimeout, TransportClosed, messages
from jsonrpc_threads.errors import MessageTooLarge
from jsonrpc_threads.transports.http import HttpTransport, MessageStream

from .peers.http_peer import HttpPeer

#: Seconds a stream that must end may take.
TIMEOUT_S = 10.0
SHORT_S = 0.5
LATE_S = 2.0
STREAM_THREAD = "jsonrpc-http-stream"


@pytest.fixture
def peer() -> Iterator[HttpPeer]:
    """A peer per test: a stalled answer holds its handler thread until the peer closes."""
    with HttpPeer() as server:
        yield server


@pytest.fixture
def transport(peer: HttpPeer) -> Iterator[HttpTransport]:
    http = HttpTransport(peer.url)
    try:
        yield http
    finally:
        http.close()


def raw(**answer: Any) -> bytes:
    """A request the peer answers with exactly these bytes (see ``raw_answer`` in the peer)."""
    return messages.encode_request(1, "raw_answer", answer)


def events(*values: Any) -> List[str]:
    return [f"data: {json.dumps(value)}\n\n" for value in values]


def stream_threads() -> List[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith(STREAM_THREAD)]


def no_stream_thread_within(timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    for thread in stream_threads():
        thread.join(max(0.0, deadline - time.monotonic()))
    return stream_threads() == []


def deadline_in(seconds: float) -> float:
    return time.monotonic() + seconds


def test_each_sse_event_is_one_message_in_order(transport: HttpTransport) -> None:
    answer = raw(content_type="text/event-stream", chunks=[*events(*range(20)), ": keep-alive\n\n"])
    stream = transport.open_stream(answer, deadline=deadline_in(TIMEOUT_S))
    assert isinstance(stream, MessageStream)
    assert [json.loads(m) for m in stream] == list(range(20))
    assert no_stream_thread_within(TIMEOUT_S)


def test_a_json_answer_is_one_message_and_a_get_works_too(transport: HttpTransport) -> None:
    body = transport.open_stream(raw(content_type="application/json", chunks=['{"a": 1}']), deadline=None)
    assert list(body) == [b'{"a": 1}']
    with HttpPeer() as own_peer:
        listen = HttpTransport(own_peer.url)
        try:
            # A GET: the peer answers it with its listen stream (SSE), where it pushes what the test sends.
            stream = listen.open_stream(deadline=deadline_in(TIMEOUT_S))
            own_peer.push({"jsonrpc": "2.0", "method": "hello"})
            assert json.loads(next(stream))["method"] == "hello"
            stream.close()
        finally:
            listen.close()


def test_an_empty_or_accepted_answer_has_no_message(transport: HttpTransport) -> None:
    assert list(transport.open_stream(raw(status=202, content_type="", chunks=[]), deadline=None)) == []
    assert list(transport.open_stream(raw(content_type="application/json", chunks=[""]), deadline=None)) == []


def test_an_error_status_or_type_is_raised_by_the_iteration(transport: HttpTransport) -> None:
    failing = transport.open_stream(raw(status=500, content_type="text/plain", chunks=["boom"]), deadline=None)
    with pytest.raises(HttpError) as status:
        next(failing)
    assert status.value.status_code == 500 and status.value.body_excerpt == "boom"
    with pytest.raises(StopIteration):
        next(failing)  # the error once, then the end
    rpc_error = json.dumps({"jsonrpc": "2.0", "id": 1, "error": {"code": -32050, "message": "no", "data": [1]}})
    refused = transport.open_stream(raw(status=400, content_type="application/json", chunks=[rpc_error]))
    with pytest.raises(JsonRpcError) as answered:
        list(refused)
    assert answered.value.code == -32050 and answered.value.data == [1]
    html = transport.open_stream(raw(content_type="text/html", chunks=["<p>hi</p>"]), deadline=None)
    with pytest.raises(HttpError, match="unexpected Content-Type 'text/html'"):
        list(html)


def test_the_deadline_bounds_a_stream_that_stalls_after_handing_over_what_came(transport: HttpTransport) -> None:
    answer = raw(content_type="text/event-stream", chunks=events(1, 2), then="stall")
    started = time.monotonic()
    stream = transport.open_stream(answer, deadline=deadline_in(SHORT_S))
    got = []
    with pytest.raises(RequestTimeout) as timed_out:
        for message in stream:
            got.append(json.loads(message))
    assert got == [1, 2]
    assert SHORT_S <= time.monotonic() - started < SHORT_S + LATE_S
    assert timed_out.value.timeout == SHORT_S and "did not end within" in timed_out.value.message
    assert no_stream_thread_within(TIMEOUT_S)


def test_a_stream_cut_mid_way_is_a_connection_error_not_resumed(transport: HttpTransport, peer: HttpPeer) -> None:
    answer = raw(content_type="text/event-stream", chunks=events(1), then="reset")
    stream = transport.open_stream(answer, deadline=deadline_in(TIMEOUT_S))
    assert json.loads(next(stream)) == 1
    with pytest.raises(HttpConnectionError, match="the SSE answer broke"):
        next(stream)
    assert not [r for r in peer.records if r.http_method == "GET" and r.headers.get("last-event-id")]


def test_a_message_over_the_limit_ends_the_stream(peer: HttpPeer) -> None:
    small = HttpTransport(peer.url, max_message_bytes=1000)
    try:
        stream = small.open_stream(raw(content_type="text/event-stream", chunks=events("x" * 5000)))
        with pytest.raises(MessageTooLarge):
            list(stream)
    finally:
        small.close()


def test_closing_from_another_thread_ends_the_stream_and_its_thread_at_once(transport: HttpTransport) -> None:
    stream = transport.open_stream(raw(content_type="text/event-stream", chunks=events(1), then="stall"))
    assert json.loads(next(stream)) == 1
    threading.Timer(0.1, stream.close).start()
    started = time.monotonic()
    assert list(stream) == []
    assert time.monotonic() - started < LATE_S and stream.closed
    assert no_stream_thread_within(LATE_S)


def test_a_stream_dropped_unclosed_stops_its_exchange(transport: HttpTransport) -> None:
    stream = transport.open_stream(raw(content_type="text/event-stream", chunks=events(1), then="stall"))
    assert json.loads(next(stream)) == 1
    del stream
    gc.collect()
    assert no_stream_thread_within(LATE_S)


def test_closing_the_transport_fails_open_streams_with_transport_closed(peer: HttpPeer) -> None:
    http = HttpTransport(peer.url)
    streams = [
        http.open_stream(raw(content_type="text/event-stream", chunks=events(n), then="stall")) for n in range(3)
    ]
    assert [json.loads(next(s)) for s in streams] == [0, 1, 2]
    http.close()
    for stream in streams:
        with pytest.raises(TransportClosed):
            next(stream)
    assert no_stream_thread_within(LATE_S)
    with pytest.raises(TransportClosed):
        http.open_stream(raw(content_type="application/json", chunks=["{}"]))


def test_a_slow_reader_holds_the_server_back_not_the_memory(transport: HttpTransport) -> None:
    """At most ``max_buffered`` messages wait: the stream's thread waits for room, within the deadline."""
    answer = raw(content_type="text/event-stream", chunks=events(*range(50)))
    stream = transport.open_stream(answer, deadline=deadline_in(TIMEOUT_S), max_buffered=2)
    assert json.loads(next(stream)) == 0
    answer_state = stream._answer  # the caller takes nothing for a while: the reader fills the buffer, then waits
    with answer_state._ready:
        assert answer_state._ready.wait_for(lambda: len(answer_state.messages) == 2, timeout=TIMEOUT_S)
        assert not answer_state._ready.wait_for(lambda: len(answer_state.messages) > 2, timeout=SHORT_S)
    assert [json.loads(m) for m in stream] == list(range(1, 50))
    with pytest.raises(ValueError):
        transport.open_stream(answer, max_buffered=0)
