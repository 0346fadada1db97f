"""The protocol core (jsonrpc_threads/core/protocol.py): bytes in, events out; no threads, no I/O."""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional, Tuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jsonrpc_threads.cancellation import lsp_cancellation, mcp_cancellation, resolve_style
from jsonrpc_threads.core.events import (
    Answered,
    Event,
    Failed,
    Held,
    Ignored,
    PeerNotification,
    PeerRequest,
    Rejected,
    TimedOut,
)
from jsonrpc_threads.core.protocol import COMPACT_MIN_ENTRIES, Connection
from jsonrpc_threads.errors import (
    InvalidRequest,
    RemoteError,
    RemoteMethodNotFound,
    RequestCancelled,
    TransportClosed,
)
from jsonrpc_threads.framing import LineDecoder

from .tiers import budget


def wire(value: Any) -> bytes:
    return json.dumps(value).encode()


def result(request_id: Any, value: Any) -> bytes:
    return wire({"jsonrpc": "2.0", "id": request_id, "result": value})


def error(request_id: Any, code: int, message: str = "no", data: Any = None) -> bytes:
    body: Dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        body["data"] = data
    return wire({"jsonrpc": "2.0", "id": request_id, "error": body})


def note(method: str, params: Any = None) -> bytes:
    message: Dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return wire(message)


def sent(connection: Connection, method: str = "m", **options: Any) -> int:
    """A request made and registered, its token the string ``"t<id>"``."""
    request_id, data = connection.request(method, [1])
    assert json.loads(data) == {"jsonrpc": "2.0", "id": request_id, "method": method, "params": [1]}
    connection.register(request_id, method, token=f"t{request_id}", **options)
    return request_id


# -- requests and their answers -------------------------------------------------------------------


def test_ids_count_up_and_an_answer_settles_its_request_once() -> None:
    connection = Connection()
    first, second = sent(connection), sent(connection)
    assert (first, second) == (1, 2) and connection.requests_made == 2 and len(connection) == 2
    assert connection.receive(result(2, {"ok": True})) == [Answered(2, "t2", {"ok": True})]
    assert connection.receive(result(2, "again")) == [Ignored("a late or unknown response", 2, warning=False)]
    assert connection.receive(result(99, None)) == [Ignored("a late or unknown response", 99, warning=False)]
    assert 1 in connection and 2 not in connection and len(connection) == 1


def test_error_answers_become_the_matching_exception() -> None:
    connection = Connection()
    ids = [sent(connection) for _ in range(5)]
    events = connection.receive(
        b"["
        + b",".join(
            [
                error(ids[0], -32601, "nope"),
                error(ids[1], 7, "custom", {"x": 1}),
                error(ids[2], -32800, "cancelled"),
                wire({"jsonrpc": "2.0", "id": ids[3], "result": 1, "error": {"code": 1, "message": "x"}}),
                wire({"jsonrpc": "2.0", "id": ids[4]}),
            ]
        )
        + b"]"
    )
    assert [type(e) for e in events] == [Failed] * 5
    errors = [e.error for e in events]  # type: ignore[attr-defined]
    assert isinstance(errors[0], RemoteMethodNotFound) and errors[0].message == "nope"
    assert type(errors[1]) is RemoteError and (errors[1].code, errors[1].data) == (7, {"x": 1})
    assert isinstance(errors[2], RequestCancelled)
    assert isinstance(errors[3], InvalidRequest) and "both" in errors[3].message
    assert isinstance(errors[4], InvalidRequest) and "neither" in errors[4].message
    assert connection.errors == 5 and len(connection) == 0


def test_string_ids_are_matched_as_sent() -> None:
    connection = Connection()
    connection.register("abc", "m", token="x")
    assert connection.receive(result("abc", 1)) == [Answered("abc", "x", 1)]
    connection.register(1, "m", token="y")
    # "1" is not 1: the peer must echo the id as it was sent.
    assert connection.receive(result("1", 1)) == [Ignored("a late or unknown response", "1", warning=False)]


@pytest.mark.parametrize(
    ("data", "reason", "warning"),
    [
        (b"not json", "a message that is not JSON", True),
        (b"[]", "a message that is not JSON-RPC", True),
        (b"42", "a message that is not JSON-RPC", True),
        (b"[1]", "a batch item that is not an object", True),
        (wire({"jsonrpc": "2.0", "id": None, "error": {"code": 1, "message": "x"}}), "an error response", True),
        (wire({"jsonrpc": "2.0", "id": 1.5, "result": 1}), "a response with an invalid id", True),
        (wire({"jsonrpc": "2.0", "id": True, "result": 1}), "a response with an invalid id", True),
        (note("unhandled"), "a notification nobody handles", False),
    ],
)
def test_what_cannot_settle_anything_is_ignored_with_a_reason(data: bytes, reason: str, warning: bool) -> None:
    connection = Connection()
    sent(connection)
    events = connection.receive(data)
    assert len(events) == 1 and isinstance(events[0], Ignored)
    assert events[0].reason.startswith(reason) and events[0].warning is warning
    assert len(connection) == 1


def test_the_peers_requests_and_invalid_ones() -> None:
    connection = Connection()
    connection.handle_notifications("progress")
    events = connection.receive(
        b"["
        + b",".join(
            [
                wire({"jsonrpc": "2.0", "id": "a", "method": "ask", "params": {"q": 1}}),
                wire({"jsonrpc": "2.0", "id": 3, "method": 5}),
                note("progress", [1]),
                wire({"jsonrpc": "2.0", "id": 4, "method": "m", "params": 7}),
            ]
        )
        + b"]"
    )
    assert events[0] == PeerRequest("a", "ask", {"q": 1})
    assert isinstance(events[1], Rejected) and isinstance(events[1].error, InvalidRequest)
    assert json.loads(events[1].answer)["id"] == 3 and json.loads(events[1].answer)["error"]["code"] == -32600
    assert events[2] == PeerNotification("progress", [1], 1)
    assert isinstance(events[3], Rejected) and json.loads(events[3].answer)["id"] == 4


def test_response_ids_as_the_peer_wrote_them() -> None:
    connection = Connection()
    assert connection.response_ids(json.loads(result(5, 1))) == (5,)
    assert connection.response_ids(json.loads(result("x", 1))) == ("x",)
    assert connection.response_ids(json.loads(note("n"))) == ()
    assert connection.response_ids(
        json.loads(b"[" + result(1, 1) + b"," + note("n") + b"," + error(None, 1) + b"]")
    ) == [1]
    assert connection.response_ids(7) == ()


# -- ordering: answers wait for the notifications before them ---------------------------------------


def test_an_answer_waits_for_the_handled_notifications_received_before_it() -> None:
    connection = Connection()
    connection.handle_notifications("progress")
    request_id = sent(connection)
    events = connection.receive(note("progress", {"p": 1}))
    assert events == [PeerNotification("progress", {"p": 1}, 1)]
    assert connection.receive(result(request_id, "done")) == [Held(request_id, f"t{request_id}")]  # behind ticket 1
    assert request_id in connection
    later = connection.receive(note("progress", {"p": 2}))  # after the answer: it does not hold it
    assert later == [PeerNotification("progress", {"p": 2}, 2)]
    assert connection.notification_done(1) == [Answered(request_id, f"t{request_id}", "done")]
    assert connection.notification_done(2) == []


def test_unhandled_notifications_and_immediate_requests_hold_nothing_back() -> None:
    connection = Connection()
    connection.handle_notifications("progress")
    plain, immediate = sent(connection), sent(connection, immediate=True)
    connection.receive(note("progress"))
    assert connection.receive(result(immediate, 1)) == [Answered(immediate, f"t{immediate}", 1)]
    connection.notification_done(1)
    connection.receive(note("log"))  # nobody handles it
    assert connection.receive(result(plain, 2)) == [Answered(plain, f"t{plain}", 2)]


def test_a_held_answer_is_what_its_deadline_close_or_failure_settle_it_with() -> None:
    connection = Connection()
    connection.handle_notifications("progress")
    a = sent(connection, deadline=10.0, timeout=1.0)
    b, c = sent(connection), sent(connection)
    connection.receive(note("progress"))
    for request_id in (a, b, c):
        assert connection.receive(result(request_id, request_id)) == [Held(request_id, f"t{request_id}")]
    assert connection.receive(result(a, "twice")) == [Ignored("a late or unknown response", a, warning=False)]
    assert connection.expire(10.0) == [Answered(a, f"t{a}", a)]
    assert connection.fail([b], TransportClosed("x")) == [Answered(b, f"t{b}", b)]
    assert connection.close(TransportClosed("bye")) == [Answered(c, f"t{c}", c)]
    assert connection.notification_done(1) == []
    assert connection.timeouts == 0 and connection.errors == 0


def test_a_lost_connection_fails_a_request_only_after_the_notifications_received_before_it() -> None:
    connection = Connection()
    connection.handle_notifications("progress")
    waiting, answered = sent(connection, deadline=10.0, timeout=1.0), sent(connection)
    immediate = sent(connection, immediate=True)
    connection.receive(note("progress"))
    assert connection.receive(result(answered, "in")) == [Held(answered, f"t{answered}")]
    events = connection.close(TransportClosed("gone"), behind_notifications=True)
    assert [type(event) for event in events] == [Held, Failed]  # the immediate one fails now
    assert events[0] == Held(waiting, f"t{waiting}") and events[1].request_id == immediate  # type: ignore[attr-defined]
    assert connection.closed and waiting in connection
    with pytest.raises(TransportClosed):
        sent(connection)
    done = connection.notification_done(1)
    assert [type(event) for event in done] == [Answered, Failed]  # in arrival order: the answer came first
    assert done[0].request_id == answered and done[1].request_id == waiting  # type: ignore[attr-defined]
    assert isinstance(done[1].error, TransportClosed) and str(done[1].error) == "gone"  # type: ignore[attr-defined]
    assert len(connection) == 0 and connection.errors == 2


def test_a_held_failure_still_ends_at_its_deadline_or_a_later_close() -> None:
    connection = Connection()
    connection.handle_notifications("progress")
    a, b = sent(connection, deadline=10.0, timeout=1.0), sent(connection)
    connection.receive(note("progress"))
    connection.close(TransportClosed("gone"), behind_notifications=True)
    (expired,) = connection.expire(10.0)
    assert isinstance(expired, Failed) and expired.request_id == a and isinstance(expired.error, TransportClosed)
    (closed,) = connection.close(TransportClosed("Client closed"))
    assert isinstance(closed, Failed) and closed.request_id == b and str(closed.error) == "gone"
    assert connection.notification_done(1) == [] and connection.timeouts == 0


def test_a_lost_connection_with_no_notification_outstanding_fails_at_once() -> None:
    connection = Connection()
    connection.handle_notifications("progress")
    request_id = sent(connection)
    connection.receive(note("progress"))
    connection.notification_done(1)
    (event,) = connection.close(TransportClosed("gone"), behind_notifications=True)
    assert isinstance(event, Failed) and event.request_id == request_id


def test_held_answers_are_released_in_arrival_order_ticket_by_ticket() -> None:
    connection = Connection()
    connection.handle_notifications("n")
    ids = [sent(connection) for _ in range(4)]
    connection.receive(note("n"))
    connection.receive(result(ids[0], 0))
    connection.receive(result(ids[1], 1))
    connection.receive(note("n"))
    connection.receive(result(ids[2], 2))
    connection.withdraw(ids[1])
    connection.receive(result(ids[3], 3))
    assert [e.result for e in connection.notification_done(1)] == [0]  # type: ignore[attr-defined]
    assert [e.result for e in connection.notification_done(2)] == [2, 3]  # type: ignore[attr-defined]


# -- deadlines --------------------------------------------------------------------------------------


def test_expire_ends_every_due_request_at_once_in_deadline_order() -> None:
    connection = Connection()
    late = sent(connection, deadline=30.0, timeout=30.0)
    early = [sent(connection, method=f"m{i}", deadline=10.0 + i, timeout=1.5) for i in range(5)]
    never = sent(connection)
    assert connection.next_deadline() == 10.0
    assert connection.expire(9.9) == []
    connection.receive(result(early[2], "in time"))
    events = connection.expire(20.0)
    due = [early[0], early[1], early[3], early[4]]
    assert events == [TimedOut(due, [f"t{i}" for i in due], [f"m{i - 2}" for i in due], [1.5] * 4)]
    assert connection.timeouts == 4
    assert connection.next_deadline() == 30.0
    assert connection.time_out(never) == [TimedOut([never], [f"t{never}"], ["m"], [None])]
    assert connection.time_out(never) == []
    assert connection.receive(result(late, 1)) == [Answered(late, f"t{late}", 1)]
    assert connection.next_deadline() is None


def test_the_deadline_heap_is_compacted_and_stays_proportional_to_what_is_pending() -> None:
    connection = Connection()
    for i in range(10 * COMPACT_MIN_ENTRIES):
        request_id = sent(connection, deadline=1000.0 + i)
        connection.receive(result(request_id, i))
    assert connection.deadline_entries <= COMPACT_MIN_ENTRIES + 1
    assert connection.next_deadline() is None


# -- the other ends ----------------------------------------------------------------------------------


def test_withdraw_fail_and_close() -> None:
    connection = Connection()
    a, b, c, d = (sent(connection, deadline=5.0) for _ in range(4))
    assert connection.withdraw(a) and not connection.withdraw(a) and connection.cancels == 1
    broken = TransportClosed("write failed")
    events = connection.fail([a, b, c], broken)
    assert [(e.request_id, type(e.error)) for e in events] == [(b, TransportClosed), (c, TransportClosed)]  # type: ignore[attr-defined]
    assert events[0].error is broken and events[1].error is not broken  # type: ignore[attr-defined]
    gone = TransportClosed("exited", returncode=3)
    closing = connection.close(gone)
    assert [e.request_id for e in closing] == [d]  # type: ignore[attr-defined]
    assert closing[0].error is not gone and closing[0].error.returncode == 3  # type: ignore[attr-defined]
    assert connection.expire(100.0) == [] and connection.closed
    with pytest.raises(TransportClosed) as info:
        connection.register(99, "m")
    assert info.value.returncode == 3 and info.value is not gone
    connection.close(TransportClosed("later"))
    error = connection.closed_error()
    assert error is not None and error.returncode == 3
    assert connection.errors == 3


def test_cancellation_styles() -> None:
    assert mcp_cancellation(3, "why") == ("notifications/cancelled", {"requestId": 3, "reason": "why"})
    assert lsp_cancellation("x", "why") == ("$/cancelRequest", {"id": "x"})
    assert resolve_style("mcp") is mcp_cancellation and resolve_style(None) is None
    with pytest.raises(ValueError):
        resolve_style("grpc")
    with pytest.raises(TypeError):
        resolve_style(42)  # type: ignore[arg-type]


# -- framing in front of the core: the same events however the bytes are split ----------------------


def _stream() -> Tuple[bytes, int]:
    parts = [note("progress", {"p": 1}), result(1, "one"), note("progress", {"p": 2}), error(2, -32601), result(3, [3])]
    return b"\n".join(parts) + b"\n", len(parts)


def _run(chunks: List[bytes]) -> List[str]:
    """The events, as text (an exception compares by identity, its repr by value)."""
    return [repr(event) for event in _events(chunks)]


def _events(chunks: List[bytes]) -> List[Event]:
    connection = Connection()
    connection.handle_notifications("progress")
    for _ in range(3):
        sent(connection)
    decoder = LineDecoder(1 << 20)
    events: List[Event] = []
    for chunk in chunks:
        for frame in decoder.feed(chunk):
            assert isinstance(frame, bytes)
            for event in connection.receive(frame):
                events.append(event)
                if isinstance(event, PeerNotification):
                    events.extend(connection.notification_done(event.ticket))
    return events


def test_every_split_of_the_stream_gives_the_same_events() -> None:
    stream, _ = _stream()
    assert [type(e) for e in _events([stream])] == [PeerNotification, Answered, PeerNotification, Failed, Answered]
    whole = _run([stream])
    for cut in range(1, len(stream)):
        assert _run([stream[:cut], stream[cut:]]) == whole, cut
    assert _run([stream[i : i + 1] for i in range(len(stream))]) == whole


# -- properties: whatever happens, each request is reported exactly once ---------------------------

Step = Tuple[str, int, Optional[float]]
steps = st.lists(
    st.tuples(
        st.sampled_from(["send", "answer", "error", "note", "done", "expire", "withdraw", "fail", "late"]),
        st.integers(min_value=0, max_value=12),
        st.one_of(st.none(), st.floats(min_value=0.0, max_value=20.0)),
    ),
    max_size=80,
)


@settings(max_examples=budget(300), deadline=None)
@given(steps, st.booleans())
def test_each_request_is_reported_once_whatever_the_order(plan: List[Step], close_at_end: bool) -> None:
    connection = Connection()
    connection.handle_notifications("n")
    reported: Dict[int, int] = {}
    made: List[int] = []
    tickets: List[int] = []
    now = 0.0

    def take(events: List[Event]) -> None:
        for event in events:
            if isinstance(event, TimedOut):
                for request_id, token in zip(event.request_ids, event.tokens):
                    reported[request_id] = reported.get(request_id, 0) + 1  # type: ignore[index]
                    assert token == f"t{request_id}"
            elif isinstance(event, (Answered, Failed)):
                reported[event.request_id] = reported.get(event.request_id, 0) + 1  # type: ignore[index]
                assert event.token == f"t{event.request_id}"
            elif isinstance(event, PeerNotification):
                tickets.append(event.ticket)

    for action, pick, when in plan:
        target = made[pick % len(made)] if made else 1
        if action == "send":
            made.append(sent(connection, deadline=None if when is None else now + when, timeout=when))
        elif action == "answer":
            take(connection.receive(result(target, target)))
        elif action == "error":
            take(connection.receive(error(target, -32000)))
        elif action == "note":
            take(connection.receive(note("n")))
        elif action == "done" and tickets:
            take(connection.notification_done(tickets.pop(0)))
        elif action == "expire":
            now += when or 0.0
            take(connection.expire(now))
            deadline = connection.next_deadline()
            assert deadline is None or deadline > now
        elif action == "withdraw":
            if connection.withdraw(target):
                reported[target] = reported.get(target, 0) + 1
        elif action == "fail":
            take(connection.fail([target], TransportClosed("x")))
        elif action == "late":
            take(connection.time_out(target))
        assert len(connection) == len(made) - len(reported)
    if close_at_end:
        take(connection.close(TransportClosed("end")))
        assert len(connection) == 0
    for ticket in tickets:
        take(connection.notification_done(ticket))
    assert all(count == 1 for count in reported.values()), reported
    if close_at_end:
        assert sorted(reported) == sorted(made)


def test_deadlines_out_of_order_still_come_due_earliest_first() -> None:
    connection = Connection()
    order = [5.0, 9.0, 3.0, 9.0, 1.0, 12.0, 7.0]
    ids = {sent(connection, deadline=when, timeout=when): when for when in order}
    assert connection.next_deadline() == 1.0
    events = connection.expire(9.0)
    (timed_out,) = events
    assert [ids[i] for i in timed_out.request_ids] == [1.0, 3.0, 5.0, 7.0, 9.0, 9.0]  # type: ignore[attr-defined]
    assert connection.next_deadline() == 12.0
