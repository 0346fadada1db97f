"""Streamed answers over real HTTP: one POST whose SSE answer brings many responses to its id.

``JsonRpcClient.request_stream`` over an ``HttpTransport`` to the test peer
(tests/peers/http_peer.py, its ``raw_answer``: the SSE events each test
writes): the answer is read until the stream's final result and then let go
(the exchange stopped, its pool thread free: the transport has one), the
deadline ends a stalled one, an answer that ends early is a connection error,
and one that ends right after its final result is no error.
"""

from __future__ import annotations

import json
import time
from typing import Any, Dict, Iterator, List

import pytest

from jsonrpc_threads import HttpConnectionError, HttpTransport, JsonRpcClient, RequestTimeout

from .peers.http_peer import HttpPeer

#: A stream with ``SHORT_S`` ends within ``SHORT_S + LATE_S``.
SHORT_S = 0.1
LATE_S = 0.25
#: Any wait that must not run out.
WAIT_S = 5.0


def is_last(result: Dict[str, Any]) -> bool:
    return bool(result["last"])


def sse(*results: Any) -> List[str]:
    """SSE events, each a response to the request (the peer writes the request's id for ``{id}``)."""
    return ['data: {"jsonrpc": "2.0", "id": {id}, "result": ' + json.dumps(r) + "}\n\n" for r in results]


@pytest.fixture
def http_client() -> Iterator[JsonRpcClient]:
    # One pool thread: a stream whose exchange were not stopped would hold it, and the next would wait.
    with HttpPeer() as peer, JsonRpcClient(HttpTransport(peer.url, max_workers=1)) as client:
        yield client


def test_over_http_the_sse_answer_is_read_until_the_final_result_then_let_go(http_client: JsonRpcClient) -> None:
    results = [{"n": n, "last": n == 2} for n in range(3)]
    for _ in range(2):  # the answer stalls after its final event: the exchange is stopped, its thread free
        params = {"content_type": "text/event-stream", "chunks": sse(*results), "then": "stall"}
        stream = http_client.request_stream("raw_answer", params, timeout=WAIT_S, is_final=is_last)
        assert list(stream) == results and not http_client.has_pending()


def test_over_http_an_answer_that_ends_right_after_its_final_result_is_no_error(http_client: JsonRpcClient) -> None:
    results = [{"n": n, "last": n == 1} for n in range(2)]
    params = {"content_type": "text/event-stream", "chunks": sse(*results)}  # then the answer ends
    for _ in range(10):  # the end often comes before the consumer took the final result
        assert list(http_client.request_stream("raw_answer", params, timeout=WAIT_S, is_final=is_last)) == results
    assert http_client.stats()["errors"] == 0 and not http_client.has_pending()


def test_over_http_the_deadline_ends_a_stalled_stream_and_frees_its_thread(http_client: JsonRpcClient) -> None:
    for _ in range(2):
        params = {"content_type": "text/event-stream", "chunks": sse({"n": 0, "last": False}), "then": "stall"}
        started = time.monotonic()
        stream = http_client.request_stream("raw_answer", params, timeout=SHORT_S, is_final=is_last)
        assert next(stream)["n"] == 0
        with pytest.raises(RequestTimeout):
            next(stream)
        assert SHORT_S <= time.monotonic() - started < SHORT_S + LATE_S


def test_over_http_an_answer_that_ends_early_is_a_connection_error(http_client: JsonRpcClient) -> None:
    params = {"content_type": "text/event-stream", "chunks": sse({"n": 0, "last": False})}
    stream = http_client.request_stream("raw_answer", params, timeout=WAIT_S, is_final=is_last)
    assert next(stream)["n"] == 0
    with pytest.raises(HttpConnectionError, match="cannot be resumed"):
        next(stream)
