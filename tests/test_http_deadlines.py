"""HTTP: every exchange ends by its deadline, and a settled request frees the thread that carried it.

Against tests/peers/http_peer.py on 127.0.0.1, with its faulty modes: an SSE
stream (or a POST) that never answers, a slowloris body that trickles bytes
forever, a server that resets every stream after one event.  The pool is
kept at one thread where it matters: a later request can run only if the
abandoned one gave its thread back.

Then the hooks: a slow ``requests.auth.AuthBase`` and a slow
``header_provider`` (each blocked on a gate the test opens) must not hold a
``call()`` or a ``notify()`` past its deadline, and a request nobody waits for
any more is not sent once the hook returns.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

import pytest
import requests

from jsonrpc_threads.client import JsonRpcClient
from jsonrpc_threads.core import peer_messages as client_module
from jsonrpc_threads.errors import HttpConnectionError, RequestTimeout
from jsonrpc_threads.transports.http import DEFAULT_MAX_RESUMPTIONS, HttpTransport
from jsonrpc_threads.transports.http import _transport as http_transport_module

from .peers.http_peer import HttpPeer

#: Upper bound for any single wait in these tests.
WAIT_S = 10.0
#: A request's timeout in these tests.
SHORT_S = 0.3
#: How late a call may end after its deadline (timer lateness, a loaded machine).
SLACK_S = 0.7
#: How long a hook blocks at most if a test forgot to open its gate.
GATE_S = 20.0


@pytest.fixture
def peer() -> Iterator[HttpPeer]:
    server = HttpPeer().start()
    try:
        yield server
    finally:
        server.close()


def make_client(url: str, **options: Any) -> JsonRpcClient:
    cancellation = options.pop("cancellation", None)
    workers = options.pop("handler_workers", 4)
    return JsonRpcClient(
        HttpTransport(url, **options), default_timeout=WAIT_S, cancellation=cancellation, handler_workers=workers
    )


def pool_threads() -> List[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("jsonrpc-http[")]


#: The never-answering exchanges, by name: (modes, method, params).
NEVER = {
    "json-no-headers": ((), "never", None),
    "sse-never-answers": (("sse",), "never", None),
    "sse-primed-never-answers": (("sse", "priming"), "never", None),
    "slowloris-json": (
        (),
        "raw_answer",
        {"chunks": ['{"jsonrpc": "2.0", "id": {id}, "result": "', "x"], "repeat": 100_000, "interval": 0.05},
    ),
    "slowloris-sse": (
        (),
        "raw_answer",
        {"content_type": "text/event-stream", "chunks": [": keep-alive\n"], "repeat": 100_000, "interval": 0.05},
    ),
}


def _arrived(peer: HttpPeer, method: str, count: int = 1) -> bool:
    return peer.wait_for(lambda: len(peer.records_for(method)) >= count, WAIT_S)


# -- item 7: a settled future frees its pool thread ----------------------------------------------


@pytest.mark.parametrize("how", ["timeout", "cancel"])
@pytest.mark.parametrize("fault", sorted(NEVER))
def test_a_settled_request_frees_its_pool_thread(peer: HttpPeer, fault: str, how: str) -> None:
    modes, method, params = NEVER[fault]
    with make_client(peer.url_with(*modes), max_workers=1) as client:
        if how == "timeout":
            stuck = client.request(method, params, timeout=SHORT_S)
            with pytest.raises(RequestTimeout):
                stuck.result(WAIT_S)
        else:
            stuck = client.request(method, params, timeout=None)  # only the cancel can end it
            assert _arrived(peer, method)
            assert stuck.cancel()
        started = time.monotonic()
        # One pool thread: this runs only once the abandoned exchange gave it back.
        assert client.request("echo", ["after"]).result(WAIT_S) == ["after"]
        assert time.monotonic() - started < SLACK_S + 1.0
        assert len(pool_threads()) == 1


def test_a_batch_exchange_stops_only_when_all_its_requests_are_settled(peer: HttpPeer) -> None:
    with make_client(peer.url, max_workers=1) as client:
        with client.batch() as batch:
            first = batch.request("block", {"gate": "batch", "result": 1}, timeout=None)
            second = batch.request("echo", [2], timeout=None)
        assert peer.wait_arrived("batch")
        assert first.cancel()  # the other one still waits: the exchange goes on
        assert not second.done()
        peer.open_gate("batch")
        assert second.result(WAIT_S) == [2]
        with client.batch() as batch:
            both = [batch.request("never", timeout=None), batch.request("never", timeout=None)]
        assert _arrived(peer, "never")
        for future in both:
            assert future.cancel()
        # Both settled: the exchange stopped and gave the one pool thread back.
        assert client.request("echo", ["after"]).result(WAIT_S) == ["after"]


@pytest.mark.parametrize("fault", ["slowloris-json", "slowloris-sse"])
def test_a_call_to_a_slowloris_body_returns_by_its_deadline(peer: HttpPeer, fault: str) -> None:
    # read_timeout (300 s) never fires: a byte arrives every 50 ms.
    modes, method, params = NEVER[fault]
    with make_client(peer.url_with(*modes)) as client:
        started = time.monotonic()
        with pytest.raises(RequestTimeout):
            client.call(method, params, timeout=SHORT_S)
        assert time.monotonic() - started < SHORT_S + SLACK_S
        assert client.call("echo", ["usable"]) == ["usable"]


def test_a_pool_request_waiting_to_resume_is_bounded_by_its_deadline(peer: HttpPeer) -> None:
    # The stream breaks before the response and asks for 3 s before resuming.
    with make_client(peer.url_with("sse", "priming", "cut", retry=3000), max_workers=1) as client:
        future = client.request("echo", ["late"], timeout=SHORT_S)
        with pytest.raises(RequestTimeout):
            future.result(WAIT_S)
        started = time.monotonic()
        # One pool thread (a fault is answered at once, never cut): it runs after the first exchange ended.
        with pytest.raises(HttpConnectionError):
            client.request("fault", {"kind": "reset"}).result(WAIT_S)
        assert time.monotonic() - started < SLACK_S + 1.0  # the 3 s were not waited out
    assert peer.resume_gets == []  # and no GET went out past the deadline


@pytest.mark.parametrize("use", ["call", "request"])
def test_resumption_is_bounded_in_all_when_every_stream_resets(peer: HttpPeer, use: str) -> None:
    # Every stream delivers one event (an id) and is reset: the attempts are never refunded.
    with make_client(peer.url_with("sse", "resetall", retry=20), max_workers=1) as client:
        started = time.monotonic()
        with pytest.raises(HttpConnectionError) as info:
            if use == "call":
                client.call("echo", ["never"], timeout=WAIT_S)
            else:
                client.request("echo", ["never"], timeout=WAIT_S).result(WAIT_S)
        elapsed = time.monotonic() - started
        assert f"after {DEFAULT_MAX_RESUMPTIONS} attempt(s)" in info.value.message
        assert elapsed < WAIT_S / 2
    assert len(peer.resume_gets) == DEFAULT_MAX_RESUMPTIONS
    # The server's retry, doubled on each further attempt: 20, 40, 80 ms at least.
    times = [peer.cut_times[0]] + [at for at, _ in peer.resume_gets]
    for index, (before, after) in enumerate(zip(times, times[1:])):
        assert after - before >= 0.9 * 0.020 * 2**index


def test_a_listen_stream_reset_at_once_backs_off(peer: HttpPeer) -> None:
    with make_client(peer.url_with("resetall", retry=50)) as client:
        transport = client.transport
        assert isinstance(transport, HttpTransport)
        transport.open_listen_stream()
        assert peer.wait_for(lambda: peer.listen_count + len(peer.resume_gets) >= 5, WAIT_S)
        transport.reset_session()  # stops the listen stream at once
    gets = [record.at for record in peer.records if record.http_method == "GET"][:5]
    gaps = [after - before for before, after in zip(gets, gets[1:])]
    # 50 ms after the first empty stream, then doubling: never ~20 GETs a second.
    for index, gap in enumerate(gaps):
        assert gap >= 0.9 * 0.050 * 2**index, gaps


def test_reset_session_interrupts_a_listen_stream_at_once(peer: HttpPeer) -> None:
    with make_client(peer.url_with(retry=50)) as client:
        transport = client.transport
        assert isinstance(transport, HttpTransport)
        transport.open_listen_stream(wait=WAIT_S)
        listener = next(t for t in threading.enumerate() if t.name.startswith("jsonrpc-http-listen["))
        started = time.monotonic()
        transport.reset_session()
        listener.join(WAIT_S)
        assert not listener.is_alive()
        assert time.monotonic() - started < SLACK_S + 1.0  # not at its next event, nor at read_timeout


def test_a_notification_the_server_never_accepts_returns_by_its_deadline(peer: HttpPeer) -> None:
    with make_client(peer.url) as client:
        started = time.monotonic()
        with pytest.raises(RequestTimeout) as info:
            client.notify("fault", {"kind": "never"}, timeout=SHORT_S)
        assert time.monotonic() - started < SHORT_S + SLACK_S
        assert "did not accept the message" in info.value.message
        client.notify("note", timeout=WAIT_S)
        assert client.call("notifications_log")[-1]["method"] == "note"


def test_a_cancellation_the_server_never_accepts_frees_the_handler_worker(
    peer: HttpPeer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The cancellation goes out on the client's one handler worker, with its own deadline.
    monkeypatch.setattr(client_module, "CANCELLATION_SEND_TIMEOUT_S", SHORT_S)
    url = peer.url_with("sse", "holdnotes")
    with make_client(url, cancellation="mcp", handler_workers=1) as client:
        client.on_request("roots/list", lambda params: {"roots": []})
        with pytest.raises(RequestTimeout):
            client.call("block", {"gate": "held"}, timeout=SHORT_S)
        assert peer.wait_for(lambda: len(peer.records_for("notifications/cancelled")) == 1, WAIT_S)
        # The server's request needs that worker: free again once the held POST's deadline passed.
        started = time.monotonic()
        assert client.call("reverse_call", {"method": "roots/list"}) == {"result": {"roots": []}}
        assert time.monotonic() - started < SHORT_S + SLACK_S + 1.0


# -- item 8: slow hooks never hold a caller past its deadline -----------------------------------------


class Gate:
    """A hook that blocks (on an Event, bounded) for the requests whose body holds ``marker``."""

    def __init__(self, marker: bytes) -> None:
        self.marker = marker
        self.opened = threading.Event()
        self.entered = threading.Event()
        self.calls: List[Optional[bytes]] = []

    def block(self, body: Optional[bytes]) -> None:
        self.calls.append(body)
        if body is None or self.marker in body:
            self.entered.set()
            self.opened.wait(GATE_S)


class GatedAuth(requests.auth.AuthBase):
    """A real AuthBase that is slow (a token endpoint that hangs, a user who does not click)."""

    def __init__(self, gate: Gate) -> None:
        self.gate = gate

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        body = request.body if isinstance(request.body, bytes) else None
        self.gate.block(body)
        request.headers["Authorization"] = "Bearer slow-but-valid"
        return request


def gated_provider(gate: Gate) -> Callable[[], Dict[str, str]]:
    """A slow header provider: every call blocks until the gate opens."""

    def provider() -> Dict[str, str]:
        gate.block(None)
        return {"X-Fresh-Token": "t"}

    return provider


HOOKS = ["auth", "header_provider"]


def hooked_client(peer: HttpPeer, hook: str, gate: Gate, **options: Any) -> JsonRpcClient:
    if hook == "auth":
        options["auth"] = GatedAuth(gate)
    else:
        options["header_provider"] = gated_provider(gate)
    return make_client(peer.url, **options)


@pytest.mark.parametrize("hook", HOOKS)
def test_a_call_is_a_hard_deadline_whatever_the_hook_does(peer: HttpPeer, hook: str) -> None:
    gate = Gate(b'"slow"')
    with hooked_client(peer, hook, gate, max_workers=1) as client:
        started = time.monotonic()
        with pytest.raises(RequestTimeout):
            client.call("echo", ["slow"], timeout=SHORT_S)
        assert time.monotonic() - started < SHORT_S + SLACK_S
        assert gate.entered.is_set()
        gate.opened.set()
        # One pool thread: this runs after the hook returned and the stale request was dropped.
        assert client.call("echo", ["after"], timeout=WAIT_S) == ["after"]
    assert [record.message["params"] for record in peer.records_for("echo")] == [["after"]]


@pytest.mark.parametrize("hook", HOOKS)
def test_notify_returns_by_its_deadline_whatever_the_hook_does(
    peer: HttpPeer, hook: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(http_transport_module, "HOOK_SEND_WORKERS", 1)  # so the next notify queues behind
    gate = Gate(b"slow-note")
    with hooked_client(peer, hook, gate) as client:
        started = time.monotonic()
        with pytest.raises(RequestTimeout):
            client.notify("slow-note", timeout=SHORT_S)
        assert time.monotonic() - started < SHORT_S + SLACK_S
        gate.opened.set()
        client.notify("next-note", timeout=WAIT_S)  # on the same sender thread, after the slow one
        methods = [n["method"] for n in client.call("notifications_log", timeout=WAIT_S)]
    assert methods == ["next-note"]  # the timed-out one was never sent


def test_a_call_with_hooks_runs_on_the_pool_and_one_without_on_the_caller(peer: HttpPeer) -> None:
    gate = Gate(b"never-blocks")
    gate.opened.set()
    with hooked_client(peer, "auth", gate) as client:
        assert client.call("headers")["authorization"] == "Bearer slow-but-valid"
        assert pool_threads() != []  # the hook may block: not on the caller's thread
    basic = requests.auth.HTTPBasicAuth("user", "password")
    with make_client(peer.url, auth=basic) as client:
        assert client.call("headers")["authorization"].startswith("Basic ")
        assert pool_threads() == []  # requests' own basic auth only sets a header: the fast path


@pytest.mark.parametrize("hook", HOOKS)
def test_close_is_bounded_while_a_hook_blocks(peer: HttpPeer, hook: str) -> None:
    gate = Gate(b'"stuck"')
    client = hooked_client(peer, hook, gate, max_workers=1)
    try:
        future = client.request("echo", ["stuck"], timeout=None)
        assert gate.entered.wait(WAIT_S)
        started = time.monotonic()
        client.close()
        assert time.monotonic() - started < 2 * 2.0 + SLACK_S  # CLOSE_JOIN_GRACE_S for the pool, and the DELETE
        assert future.done()
    finally:
        gate.opened.set()  # lets the stuck hook thread end (a daemon, joined by the leak check)


# -- the fast path stays -------------------------------------------------------------------------


@pytest.mark.parametrize("modes", [(), ("sse",)], ids=["json", "sse"])
def test_calls_and_notifications_without_hooks_stay_on_the_callers_thread(
    peer: HttpPeer, modes: Tuple[str, ...]
) -> None:
    with make_client(peer.url_with(*modes)) as client:
        for i in range(3):
            assert client.call("add", [i, 1]) == i + 1
            client.notify("note", {"i": i})
        assert pool_threads() == []
        assert not [t for t in threading.enumerate() if t.name.startswith("jsonrpc-http-send[")]
