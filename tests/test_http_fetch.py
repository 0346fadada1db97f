"""``HttpTransport.fetch``: one GET whose JSON body the caller takes as bytes, against a real server on 127.0.0.1.

The server is a small WSGI app on wsgiref whose answer each test sets: a JSON
body, an empty one, an error status, another content type, one that stalls.
Each test checks what the caller gets, that every wait ends by the deadline,
and that no thread is left (the fetch's own thread ends with its GET, when the
caller leaves at its deadline, and when the transport closes).
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any, Dict, Iterator, List, Optional, Tuple

import pytest

from jsonrpc_threads import HttpError, JsonRpcError, RequestTimeout, TransportClosed
from jsonrpc_threads.errors import MessageTooLarge
from jsonrpc_threads.transports.http import CLOSE_JOIN_GRACE_S, HttpTransport

from .wsgi_support import WsgirefServer

#: Seconds a fetch that must end may take.
TIMEOUT_S = 10.0
SHORT_S = 0.3
LATE_S = 0.5
FETCH_THREAD = "jsonrpc-http-fetch"


class Document:
    """A WSGI app answering every GET with what the test set; it records the headers it saw."""

    def __init__(self) -> None:
        self.status = "200 OK"
        self.content_type = "application/json"
        self.body = b'{"name": "card"}'
        self.stall = threading.Event()  # set: the answer waits for ``release`` before its body
        self.release = threading.Event()
        self.stalled = threading.Event()  # set once a stalled answer is waiting
        self.seen: List[Dict[str, str]] = []

    def __call__(self, environ: Dict[str, Any], start_response: Any) -> Iterator[bytes]:
        self.seen.append({k[5:].lower(): v for k, v in environ.items() if k.startswith("HTTP_")})
        headers: List[Tuple[str, str]] = [("Content-Type", self.content_type)] if self.content_type else []
        if not self.stall.is_set():
            headers.append(("Content-Length", str(len(self.body))))
        start_response(self.status, headers)
        return self._body()

    def _body(self) -> Iterator[bytes]:
        if self.stall.is_set():
            yield self.body[:1]
            self.stalled.set()
            self.release.wait(TIMEOUT_S)
            yield self.body[1:]
            return
        yield self.body


@pytest.fixture
def document() -> Iterator[Tuple[Document, str]]:
    app = Document()
    with WsgirefServer(app) as server:
        try:
            yield app, server.url
        finally:
            app.release.set()


@pytest.fixture
def transport(document: Tuple[Document, str]) -> Iterator[HttpTransport]:
    http = HttpTransport(document[1], headers={"X-Key": "k"})
    try:
        yield http
    finally:
        http.close()


def fetch_threads() -> List[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith(FETCH_THREAD)]


def no_fetch_thread_within(timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    for thread in fetch_threads():
        thread.join(max(0.0, deadline - time.monotonic()))
    return fetch_threads() == []


def deadline_in(seconds: float) -> float:
    return time.monotonic() + seconds


def test_a_json_body_comes_back_as_bytes_with_the_transports_headers(
    transport: HttpTransport, document: Tuple[Document, str]
) -> None:
    app, _ = document
    assert json.loads(transport.fetch(deadline=deadline_in(TIMEOUT_S))) == {"name": "card"}
    assert app.seen[-1]["x_key"] == "k" and app.seen[-1]["accept"] == "application/json"
    assert transport.fetch(deadline=None, headers={"X-Other": "o"}) == b'{"name": "card"}'
    assert app.seen[-1]["x_other"] == "o"
    assert no_fetch_thread_within(TIMEOUT_S)


@pytest.mark.parametrize("status", ["200 OK", "202 Accepted", "204 No Content"])
def test_an_empty_answer_is_an_empty_body(
    transport: HttpTransport, document: Tuple[Document, str], status: str
) -> None:
    app, _ = document
    app.status, app.content_type, app.body = status, "", b""
    assert transport.fetch(deadline=deadline_in(TIMEOUT_S)) == b""


def test_an_error_status_or_another_type_is_raised(transport: HttpTransport, document: Tuple[Document, str]) -> None:
    app, _ = document
    app.status, app.content_type, app.body = "500 Internal Server Error", "text/plain", b"boom"
    with pytest.raises(HttpError) as status:
        transport.fetch(deadline=deadline_in(TIMEOUT_S))
    assert status.value.status_code == 500 and status.value.body_excerpt == "boom"
    app.status, app.content_type = "404 Not Found", "application/json"
    app.body = json.dumps({"error": {"code": -32603, "message": "no such thing"}}).encode()
    with pytest.raises(JsonRpcError) as missing:
        transport.fetch(deadline=deadline_in(TIMEOUT_S))
    assert isinstance(missing.value, HttpError) and missing.value.status_code == 404
    app.status, app.content_type, app.body = "200 OK", "text/html", b"<p>hi</p>"
    with pytest.raises(HttpError, match="unexpected Content-Type 'text/html'"):
        transport.fetch(deadline=deadline_in(TIMEOUT_S))


def test_a_body_over_the_limit_is_refused(document: Tuple[Document, str]) -> None:
    app, url = document
    app.body = json.dumps({"x": "x" * 5000}).encode()
    small = HttpTransport(url, max_message_bytes=1000)
    try:
        with pytest.raises(MessageTooLarge):
            small.fetch(deadline=deadline_in(TIMEOUT_S))
    finally:
        small.close()


def test_the_deadline_bounds_a_stalled_answer_and_its_thread_ends(
    transport: HttpTransport, document: Tuple[Document, str]
) -> None:
    app, _ = document
    app.stall.set()
    started = time.monotonic()
    with pytest.raises(RequestTimeout) as timed_out:
        transport.fetch(deadline=deadline_in(SHORT_S))
    assert SHORT_S <= time.monotonic() - started < SHORT_S + LATE_S
    assert timed_out.value.timeout == SHORT_S and "did not end within" in timed_out.value.message
    assert no_fetch_thread_within(TIMEOUT_S)  # its socket was shut down: the read ended


def test_a_blocking_header_provider_never_holds_the_caller_past_its_deadline(document: Tuple[Document, str]) -> None:
    _, url = document
    release = threading.Event()
    hooked = HttpTransport(url, header_provider=lambda: {"X-Wait": str(release.wait(TIMEOUT_S))})
    try:
        started = time.monotonic()
        with pytest.raises(RequestTimeout):
            hooked.fetch(deadline=deadline_in(SHORT_S))
        assert time.monotonic() - started < SHORT_S + LATE_S
    finally:
        release.set()
        hooked.close()
    assert no_fetch_thread_within(TIMEOUT_S)


def test_closing_the_transport_fails_a_fetch_at_once_and_refuses_new_ones(document: Tuple[Document, str]) -> None:
    app, url = document
    app.stall.set()
    http = HttpTransport(url)
    failure: List[Optional[BaseException]] = []

    def fetch() -> None:
        try:
            http.fetch(deadline=deadline_in(TIMEOUT_S))
            failure.append(None)
        except BaseException as exc:
            failure.append(exc)

    caller = threading.Thread(target=fetch)
    caller.start()
    assert app.stalled.wait(TIMEOUT_S)
    started = time.monotonic()
    http.close()
    caller.join(TIMEOUT_S)
    assert isinstance(failure[0], TransportClosed) and time.monotonic() - started < CLOSE_JOIN_GRACE_S + LATE_S
    assert no_fetch_thread_within(LATE_S)
    with pytest.raises(TransportClosed):
        http.fetch()
