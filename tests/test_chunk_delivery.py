"""A read that brings several messages: handed to the client at once, settled together, in order, none lost.

The stdio reader gives a chunk of messages to ``JsonRpcClient.messages_received``,
which settles the responses among them with one round trip of the pending map's
lock (``PendingTable.deliver_many``).  These tests hold it to what delivering one
message at a time promised: arrival order against notifications, every answer to
its own request, nothing stranded by an interrupt.
"""

from __future__ import annotations

import collections
import json
import logging
import threading
import time
from typing import Any, Deque, Dict, Iterator, List, Optional

import pytest

from jsonrpc_threads import JsonRpcClient, StdioTransport
from jsonrpc_threads._pending import Pending, PendingTable
from jsonrpc_threads._settling import CallWaiter
from jsonrpc_threads._workers import SerialLane

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
    client._observer = _InterruptOnThird()  # type: ignore[assignment]
    try:
        with pytest.raises(KeyboardInterrupt):
            client.messages_received(chunk)
    finally:
        client._observer = None
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

    def set_result(self, result: Any) -> None:
        self.tries += 1
        if self.tries == 1:
            raise KeyboardInterrupt
        self.results.append(result)

    def set_exception(self, exception: Optional[BaseException]) -> None:
        raise AssertionError(f"not expected: {exception!r}")


def test_deliver_many_interrupted_part_way_settles_every_response_it_removed() -> None:
    lane = SerialLane("test-chunk-lane")
    table = PendingTable("test", lane)
    release = threading.Event()
    lane.submit(release.wait, WAIT_S)  # a notification handler still running
    try:
        waiters = [CallWaiter() for _ in range(3)]
        interrupted = _Interrupting()
        # Sent from the lane (immediate) the first three, answered at once; the last waits for the handler.
        futures: List[Any] = [waiters[0], interrupted, waiters[1], waiters[2]]
        for request_id, future in enumerate(futures):
            table.add(request_id, Pending(future, "m", None, immediate=request_id < 3))
        answers = [{"jsonrpc": "2.0", "id": request_id, "result": request_id} for request_id in range(4)]
        with pytest.raises(KeyboardInterrupt):
            table.deliver_many(answers)
        assert interrupted.results == [1]  # settled again after the interrupt, once
        assert [waiter.wait(0) and waiter.result() for waiter in waiters[:2]] == [0, 2]
        assert not waiters[2].wait(0)  # behind the handler still
        release.set()
        assert waiters[2].wait(time.monotonic() + WAIT_S) and waiters[2].result() == 3  # its marker was queued
        assert len(table) == 0
    finally:
        release.set()
        lane.shutdown(WAIT_S)


class _Failing:
    """A future whose settling always fails (a bug): the answers after it must still arrive."""

    def set_result(self, result: Any) -> None:
        raise RuntimeError("settling failed")

    def set_exception(self, exception: Optional[BaseException]) -> None:
        raise RuntimeError("settling failed")


def test_deliver_many_settles_the_rest_when_settling_one_fails(caplog: pytest.LogCaptureFixture) -> None:
    lane = SerialLane("test-chunk-lane")
    table = PendingTable("test", lane)
    try:
        waiters = [CallWaiter() for _ in range(2)]
        futures: List[Any] = [waiters[0], _Failing(), waiters[1]]
        for request_id, future in enumerate(futures):
            table.add(request_id, Pending(future, "m", None, immediate=False))
        answers = [{"jsonrpc": "2.0", "id": request_id, "result": request_id} for request_id in range(3)]
        with caplog.at_level(logging.ERROR, logger="jsonrpc_threads"), pytest.raises(RuntimeError):
            table.deliver_many(answers)
        assert [waiter.wait(0) and waiter.result() for waiter in waiters] == [0, 2]
        assert "settling a response failed" in caplog.text
        assert len(table) == 0
    finally:
        lane.shutdown(WAIT_S)


class _LaneCatchingUp:
    """A notification lane whose handler ends while answers are looked at: busy at the first look, idle after.

    Stands in for the client's lane in the two tests below, which need that moment
    to fall between two answers; its tasks (the answers' markers) run when the test says.
    """

    def __init__(self) -> None:
        self.looks = 0
        self.tasks: List[Any] = []

    def busy(self) -> bool:
        self.looks += 1
        return self.looks == 1

    def submit(self, fn: Any, *args: Any) -> None:
        self.tasks.append((fn, args))

    def run_tasks(self) -> None:
        for fn, args in self.tasks:
            fn(*args)


class _Recording:
    """A future that records what it was settled with, in the order settled."""

    def __init__(self, request_id: int, log: List[Any]) -> None:
        self.request_id = request_id
        self.log = log

    def set_result(self, result: Any) -> None:
        self.log.append((self.request_id, result))

    def set_exception(self, exception: Optional[BaseException]) -> None:
        self.log.append((self.request_id, exception))


def test_deliver_many_keeps_answers_in_arrival_order_when_the_lane_catches_up_part_way() -> None:
    lane = _LaneCatchingUp()
    table = PendingTable("test", lane)  # type: ignore[arg-type]
    settled: List[Any] = []
    for request_id in (1, 2):
        table.add(request_id, Pending(_Recording(request_id, settled), "m", None, immediate=False))
    table.deliver_many(
        [
            {"jsonrpc": "2.0", "id": 1, "result": "first"},  # the lane is busy: it waits
            {"jsonrpc": "2.0", "id": 1, "result": "a second answer"},  # dropped, though the lane caught up
            {"jsonrpc": "2.0", "id": 2, "result": "after it"},  # waits behind the first answer
        ]
    )
    assert settled == []
    assert lane.looks == 1  # one look at the lane for the chunk
    lane.run_tasks()
    assert settled == [(1, "first"), (2, "after it")]
    assert len(table) == 0


def test_a_second_answer_is_dropped_even_when_the_lane_caught_up_since_the_first() -> None:
    lane = _LaneCatchingUp()
    table = PendingTable("test", lane)  # type: ignore[arg-type]
    settled: List[Any] = []
    table.add(1, Pending(_Recording(1, settled), "m", None, immediate=False))
    table.deliver({"jsonrpc": "2.0", "id": 1, "result": "first"})  # the lane is busy: it waits
    table.deliver({"jsonrpc": "2.0", "id": 1, "result": "a second answer"})  # from another thread (HTTP)
    lane.run_tasks()
    assert settled == [(1, "first")]
