"""A read that brings several messages: handed to the client at once, settled together, in order, none lost.

The stdio reader gives a chunk of messages to ``JsonRpcClient.messages_received``,
which hands them all to the protocol core under one round trip of its lock and
settles what the core decided.  These tests hold it to what delivering one
message at a time promised: arrival order against notifications, every answer to
its own request, nothing stranded by an interrupt.
"""

from __future__ import annotations

import collections
import json
import logging
import threading
from typing import Any, Deque, Dict, Iterator, List, Optional

import pytest

from jsonrpc_threads import JsonRpcClient, StdioTransport
from jsonrpc_threads.core.events import Answered, Held, Ignored, PeerNotification
from jsonrpc_threads.core.protocol import Connection
from jsonrpc_threads.runtime.settling import CallWaiter
from jsonrpc_threads.testing import MemoryTransport

from .conftest import peer_command

WAIT_S = 10.0
#: How long the notification handler of the ordering test holds the lane at most (the test releases it).
HANDLER_HOLD_S = 6 * WAIT_S


@pytest.fixture
def client() -> Iterator[JsonRpcClient]:
    c = JsonRpcClient(StdioTransport(peer_command("stdio_peer")))
    try:
        yield c
    finally:
        c.close()


def count_chunks(client: JsonRpcClient) -> List[int]:
    """Record the size of every chunk the transport hands to the client (and hand it on)."""
    sizes: List[int] = []
    take_chunk = client.messages_received

    def counted(chunk: Deque[bytes]) -> None:
        sizes.append(len(chunk))
        take_chunk(chunk)

    client.messages_received = counted  # type: ignore[method-assign]
    return sizes


def line(message: Dict[str, Any]) -> bytes:
    return json.dumps(message, separators=(",", ":")).encode() + b"\n"


def test_answers_and_a_notification_in_one_read_are_delivered_in_arrival_order(client: JsonRpcClient) -> None:
    sizes = count_chunks(client)
    in_handler, release = threading.Event(), threading.Event()
    seen: List[Any] = []

    def note(params: Any) -> None:
        seen.append(params)
        in_handler.set()
        release.wait(HANDLER_HOLD_S)

    client.on_notification("note", note)
    # Deadlines past the test's waits: at its deadline an answer held behind the lane is delivered anyway.
    first = client.request("never", timeout=HANDLER_HOLD_S)
    second = client.request("never", timeout=HANDLER_HOLD_S)
    # One write of the peer: the first answer, a notification, the second answer.
    data = (
        line({"jsonrpc": "2.0", "id": first.request_id, "result": "first"})
        + line({"jsonrpc": "2.0", "method": "note", "params": {"n": 1}})
        + line({"jsonrpc": "2.0", "id": second.request_id, "result": "second"})
    )
    writer = client.request("raw_write", {"hex": [data.hex()]}, timeout=None)  # the peer answers nothing
    try:
        assert first.result(WAIT_S) == "first"  # nothing came before it
        assert in_handler.wait(WAIT_S)
        assert not second.done()  # it waits for the notification that came before it
        release.set()
        assert second.result(WAIT_S) == "second"
        assert seen == [{"n": 1}]
        assert 3 in sizes, sizes  # the three lines came in one read, and went over as one chunk
    finally:
        release.set()
        writer.cancel()


def test_a_burst_of_answers_goes_over_in_chunks_each_to_its_own_request(client: JsonRpcClient) -> None:
    sizes = count_chunks(client)
    futures = [client.request("echo", {"i": i}, timeout=WAIT_S) for i in range(2000)]
    assert [future.result(WAIT_S) for future in futures] == [{"i": i} for i in range(2000)]
    assert sizes  # the peer's answers came several to a read, at least once


def test_chunks_that_end_with_a_response_split_mid_run_lose_nothing(client: JsonRpcClient) -> None:
    # More answers in one read than are settled in one lock round trip, an unknown id
    # and a second answer among them: each request gets its own answer, once.
    futures = [client.request("never", timeout=WAIT_S) for _ in range(100)]
    chunk: Deque[bytes] = collections.deque()
    for future in futures:
        chunk.append(line({"jsonrpc": "2.0", "id": future.request_id, "result": future.request_id}))
        if future is futures[40]:
            chunk.append(line({"jsonrpc": "2.0", "id": 10**9, "result": "nobody asked"}))
            chunk.append(line({"jsonrpc": "2.0", "id": future.request_id, "result": "a second answer"}))
    client.messages_received(chunk)
    assert not chunk
    assert [future.result(0) for future in futures] == [future.request_id for future in futures]


class _InterruptOnThird:
    """An observer of what the client receives that raises KeyboardInterrupt at the third message."""

    def __init__(self) -> None:
        self.count = 0

    def received(self, data: bytes) -> None:
        self.count += 1
        if self.count == 3:
            raise KeyboardInterrupt

    def sent(self, data: bytes) -> None:
        pass


def test_an_interrupted_chunk_settles_what_it_took_and_leaves_the_rest(client: JsonRpcClient) -> None:
    futures = [client.request("never", timeout=WAIT_S) for _ in range(5)]
    chunk: Deque[bytes] = collections.deque(
        line({"jsonrpc": "2.0", "id": future.request_id, "result": index}) for index, future in enumerate(futures)
    )
    client._shell.observer = _InterruptOnThird()  # type: ignore[assignment]
    try:
        with pytest.raises(KeyboardInterrupt):
            client.messages_received(chunk)
    finally:
        client._shell.observer = None
    # The two taken before the interrupt are settled; the third was taken and not looked
    # at (as a single message_received interrupted there); the rest are still in the chunk.
    assert [future.result(0) for future in futures[:2]] == [0, 1]
    assert not any(future.done() for future in futures[2:])
    assert len(chunk) == 2
    client.messages_received(chunk)
    assert [future.result(0) for future in futures[3:]] == [3, 4]


class _Interrupting:
    """A future whose first settling is interrupted (KeyboardInterrupt) before it takes hold."""

    def __init__(self) -> None:
        self.results: List[Any] = []
        self.tries = 0

    def settle_result(self, result: Any) -> None:
        self.tries += 1
        if self.tries == 1:
            raise KeyboardInterrupt
        self.results.append(result)

    def settle_exception(self, exception: Optional[BaseException]) -> None:
        raise AssertionError(f"not expected: {exception!r}")


@pytest.fixture
def idle() -> Iterator[JsonRpcClient]:
    """A client over an in-memory pair whose other end never answers (the tests settle by hand)."""
    end, peer = MemoryTransport.pair()
    peer.start(_Silent())  # type: ignore[arg-type]
    client = JsonRpcClient(end)
    try:
        yield client
    finally:
        client.close()
        peer.close()


class _Silent:
    def message_received(self, data: bytes) -> Any:
        return ()

    def transport_closed(self, error: Any) -> None:
        pass


def test_settling_interrupted_part_way_settles_every_request_the_core_ended(idle: JsonRpcClient) -> None:
    waiters = [CallWaiter() for _ in range(3)]
    interrupted = _Interrupting()
    targets: List[Any] = [waiters[0], interrupted, waiters[1], waiters[2]]
    events: List[Any] = [Answered(request_id, target, request_id) for request_id, target in enumerate(targets)]
    with pytest.raises(KeyboardInterrupt):
        idle._shell.dispatch(events)
    assert interrupted.results == [1]  # settled again after the interrupt, once
    assert [waiter.wait(0) and waiter.result() for waiter in waiters] == [0, 2, 3]


def test_an_answer_held_behind_a_handler_is_settled_once_the_handler_is_done() -> None:
    core = Connection()
    core.handle_notifications("note")
    core.register(1, "m", token="held")
    assert [type(e) for e in core.receive(line({"jsonrpc": "2.0", "method": "note"}))] == [PeerNotification]
    assert core.receive(line({"jsonrpc": "2.0", "id": 1, "result": 3})) == [Held(1, "held")]  # behind the handler
    assert core.notification_done(1) == [Answered(1, "held", 3)]
    assert len(core) == 0


class _Failing:
    """A future whose settling always fails (a bug): the answers after it must still arrive."""

    def settle_result(self, result: Any) -> None:
        raise RuntimeError("settling failed")

    def settle_exception(self, exception: Optional[BaseException]) -> None:
        raise RuntimeError("settling failed")


def test_settling_the_rest_goes_on_when_settling_one_fails(
    idle: JsonRpcClient, caplog: pytest.LogCaptureFixture
) -> None:
    waiters = [CallWaiter() for _ in range(2)]
    targets: List[Any] = [waiters[0], _Failing(), waiters[1]]
    events: List[Any] = [Answered(request_id, target, request_id) for request_id, target in enumerate(targets)]
    with caplog.at_level(logging.ERROR, logger="jsonrpc_threads"), pytest.raises(RuntimeError):
        idle._shell.dispatch(events)
    assert [waiter.wait(0) and waiter.result() for waiter in waiters] == [0, 2]
    assert "settling a response failed" in caplog.text


def test_answers_keep_their_arrival_order_when_the_handler_is_done_between_them() -> None:
    core = Connection()
    core.handle_notifications("note")
    for request_id in (1, 2):
        core.register(request_id, "m", token=request_id)
    (note,) = core.receive(line({"jsonrpc": "2.0", "method": "note"}))
    settled: List[Any] = []
    settled += core.receive(line({"jsonrpc": "2.0", "id": 1, "result": "first"}))  # the handler runs: it waits
    settled += core.notification_done(note.ticket)  # type: ignore[attr-defined]
    settled += core.receive(line({"jsonrpc": "2.0", "id": 1, "result": "a second answer"}))  # dropped
    settled += core.receive(line({"jsonrpc": "2.0", "id": 2, "result": "after it"}))
    answers = [(e.request_id, e.result) for e in settled if isinstance(e, Answered)]
    assert answers == [(1, "first"), (2, "after it")]
    assert len(core) == 0


def test_a_second_answer_is_dropped_even_when_the_handler_was_done_since_the_first() -> None:
    core = Connection()
    core.handle_notifications("note")
    core.register(1, "m", token=1)
    (note,) = core.receive(line({"jsonrpc": "2.0", "method": "note"}))
    assert core.receive(line({"jsonrpc": "2.0", "id": 1, "result": "first"})) == [Held(1, 1)]  # waits for the handler
    second = core.receive(line({"jsonrpc": "2.0", "id": 1, "result": "a second answer"}))  # another thread (HTTP)
    assert [type(e) for e in second] == [Ignored]
    assert core.notification_done(note.ticket) == [Answered(1, 1, "first")]  # type: ignore[attr-defined]
