"""Property-based tests: any bytes in, a well-formed answer or a logged skip out."""

from __future__ import annotations

import io
import itertools
import json
import threading
from typing import Any, List

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jsonrpc_threads import JsonRpcClient, StdioTransport, messages
from jsonrpc_threads.errors import InvalidRequest, JsonRpcError, ParseError
from jsonrpc_threads.framing import Oversized, SseDecoder
from jsonrpc_threads.server import serve

from .conftest import peer_command
from .tiers import budget

json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False), st.text()
)
json_values = st.recursive(
    json_scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
ids = st.one_of(st.integers(), st.text(max_size=8), st.none(), st.booleans(), st.floats(allow_nan=False))
envelopes = st.fixed_dictionaries(
    {},
    optional={
        "jsonrpc": st.sampled_from(["2.0", "1.0", 2]),
        "id": ids,
        "method": st.one_of(st.text(max_size=10), st.integers()),
        "params": json_values,
        "result": json_values,
        "error": st.one_of(json_values, st.fixed_dictionaries({"code": st.integers(), "message": st.text()})),
    },
)

SETTINGS = settings(max_examples=budget(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(st.binary(max_size=200))
def test_decode_any_bytes_returns_or_raises_parse_error(data: bytes) -> None:
    try:
        messages.decode(data)
    except ParseError:
        pass


@SETTINGS
@given(json_values, st.text(alphabet=" \t\n\r\x0b\x0c\u00a0\u2028x,]}", max_size=4))
def test_decode_takes_what_json_loads_takes_after_a_value(value: Any, tail: str) -> None:
    # Only JSON's own four whitespace characters may follow a value; anything else
    # (a form feed, a no-break space, a stray comma or bracket) is a parse error.
    text = json.dumps(value) + tail
    try:
        expected = json.loads(text)
    except ValueError:
        try:
            messages.decode(text.encode())
        except ParseError:
            return
        raise AssertionError(f"decode took {text!r}, which json.loads refuses") from None
    assert messages.decode(text.encode()) == expected


@SETTINGS
@given(st.one_of(envelopes, json_values))
def test_parse_message_classifies_or_raises_invalid_request(obj: Any) -> None:
    try:
        message = messages.parse_message(obj)
    except InvalidRequest as exc:
        assert exc.code == -32600
        return
    assert isinstance(message, (messages.Request, messages.Notification, messages.Response, messages.ErrorResponse))
    if isinstance(message, messages.Request):
        assert messages.is_valid_id(message.id)
    if isinstance(message, messages.ErrorResponse):
        assert isinstance(message.error, JsonRpcError)


@SETTINGS
@given(st.text(max_size=40), json_values)
def test_encode_decode_round_trip_is_one_line(method: str, params: Any) -> None:
    params = params if isinstance(params, (dict, list)) else [params]
    data = messages.encode(messages.request_message(7, method, params))
    assert b"\n" not in data
    assert messages.decode(data) == {"jsonrpc": "2.0", "id": 7, "method": method, "params": params}


def _echo(method: str, params: Any) -> Any:
    if method == "boom":
        raise RuntimeError("handler failure")
    return params


def _answers(output: bytes) -> List[Any]:
    return [json.loads(line) for line in output.splitlines(keepends=False) if line.strip()]


def _well_formed(answer: Any) -> bool:
    if isinstance(answer, list):
        return bool(answer) and all(_well_formed(item) for item in answer)
    if not isinstance(answer, dict) or answer.get("jsonrpc") != "2.0" or "id" not in answer:
        return False
    if ("result" in answer) == ("error" in answer):
        return False
    if "error" in answer:
        error = answer["error"]
        return (
            isinstance(error.get("code"), int)
            and isinstance(error.get("message"), str)
            and "Traceback" not in json.dumps(error)
        )
    return True


@settings(max_examples=budget(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(st.binary(max_size=60), envelopes.map(lambda o: json.dumps(o).encode())), max_size=8))
def test_server_loop_answers_any_input_and_keeps_going(lines: List[bytes]) -> None:
    # Whatever comes first, a valid request at the end is still answered.
    chunks = [line.replace(b"\n", b" ") for line in lines]
    chunks.append(b'{"jsonrpc": "2.0", "id": "last", "method": "ping", "params": [1]}')
    stdout = io.BytesIO()
    serve(_echo, stdin=io.BytesIO(b"\n".join(chunks) + b"\n"), stdout=stdout, drain_timeout=5.0)
    answers = _answers(stdout.getvalue())
    assert all(_well_formed(answer) for answer in answers)
    assert {"jsonrpc": "2.0", "id": "last", "result": [1]} in answers


class _RecordingTransport:
    """An in-memory transport: records what the client sends, delivers nothing by itself."""

    label = "memory"

    def __init__(self) -> None:
        self.sent: List[bytes] = []

    def start(self, sink: Any) -> None:
        self.sink = sink

    def send(self, data: bytes, request_ids: Any = (), *, deadline: Any = None) -> None:
        self.sent.append(data)

    def close(self) -> None:
        pass


@settings(max_examples=budget(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.one_of(st.binary(max_size=60), st.one_of(envelopes, json_values).map(lambda o: json.dumps(o).encode())),
        max_size=8,
    )
)
def test_client_dispatch_never_raises_and_still_matches_responses(incoming: List[bytes]) -> None:
    transport = _RecordingTransport()
    client = JsonRpcClient(transport, default_timeout=None)  # type: ignore[arg-type]
    try:
        future = client.request("echo", [1])
        for data in incoming:
            client.message_received(data)
        request_id = json.loads(transport.sent[0])["id"]
        client.message_received(json.dumps({"jsonrpc": "2.0", "id": request_id, "result": "ok"}).encode())
        assert future.done()
        if not any(_may_answer(data, request_id) for data in incoming):
            assert future.result(0) == "ok"
    finally:
        client.close()


def _may_answer(data: bytes, request_id: int) -> bool:
    """Could this incoming text have settled the request before our own answer?"""
    try:
        value = json.loads(data)
    except ValueError:
        return False
    items = value if isinstance(value, list) else [value]
    return any(
        isinstance(item, dict) and "method" not in item and type(item.get("id")) is int and item["id"] == request_id
        for item in items
    )


# -- stdio framing through a real pipe -----------------------------------------------------------

#: A small line limit, so that generated lines cross it often.
FRAMING_LIMIT = 64
FRAMING_WAIT_S = 10.0

framing_chunks = st.lists(
    st.one_of(
        st.binary(max_size=150),
        st.sampled_from([b"\n", b"\r\n", b" \n", b"\n\n", b"\r", b"\xe2\x80\xa8"]),  # ... and U+2028, not a line break
        st.binary(min_size=FRAMING_LIMIT - 2, max_size=FRAMING_LIMIT + 2).map(lambda b: b.replace(b"\n", b"") + b"\n"),
    ),
    max_size=8,
)


class _LineSink:
    """Collects the lines the transport delivers; waits for a marker line with a timeout."""

    def __init__(self) -> None:
        self.lines: List[bytes] = []
        self.changed = threading.Condition()

    def message_received(self, data: bytes) -> None:
        with self.changed:
            self.lines.append(data)
            self.changed.notify_all()

    def requests_failed(self, request_ids: Any, error: Any) -> None:
        pass  # an oversized line that looked like a response: not what is tested here

    def has_pending(self) -> bool:
        return True

    def transport_closed(self, error: Any) -> None:
        with self.changed:
            self.changed.notify_all()

    def take_until(self, marker: bytes) -> List[bytes]:
        with self.changed:
            assert self.changed.wait_for(lambda: marker in self.lines, FRAMING_WAIT_S), "marker never arrived"
            index = self.lines.index(marker)
            taken, self.lines = self.lines[:index], self.lines[index + 1 :]
            return taken


def _expected_lines(data: bytes, limit: int) -> List[bytes]:
    """The model: split on LF only; drop blank lines and lines over the limit."""
    lines = data.split(b"\n")[:-1]  # data ends with a newline
    return [line for line in lines if line.strip() and len(line) <= limit]


def test_stdio_framing_of_any_bytes_through_a_real_pipe() -> None:
    """Any bytes, in any chunks, written by a real child: the lines delivered are exactly the model's."""
    sink = _LineSink()
    transport = StdioTransport(peer_command("stdio_peer"), max_line_bytes=FRAMING_LIMIT)
    transport.start(sink)
    counter = itertools.count()

    @settings(max_examples=budget(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(framing_chunks)
    def check(chunks: List[bytes]) -> None:
        marker = b"marker-%d" % next(counter)
        # The newline before the marker ends whatever line the chunks left open.
        chunks = [*chunks, b"\n" + marker + b"\n"]
        request = {"jsonrpc": "2.0", "id": 1, "method": "raw_write", "params": {"hex": [c.hex() for c in chunks]}}
        transport.send(json.dumps(request).encode())
        assert sink.take_until(marker) == _expected_lines(b"".join(chunks[:-1]) + b"\n", FRAMING_LIMIT)

    try:
        check()
    finally:
        transport.close()


# -- the SSE decoder the HTTP transport reads with ----------------------------------------------

_sse_field_text = st.text(st.characters(blacklist_characters="\r\n\x00", blacklist_categories=("Cs",)), max_size=12)
sse_events = st.lists(
    st.tuples(
        st.none() | _sse_field_text,  # id
        st.lists(_sse_field_text, min_size=1, max_size=3),  # data lines
        st.none() | st.integers(min_value=0, max_value=10**6),  # retry
        st.booleans(),  # a comment line before the event
    ),
    max_size=6,
)


@SETTINGS
@given(
    sse_events,
    st.sampled_from([b"\n", b"\r", b"\r\n"]),
    st.lists(st.integers(min_value=0, max_value=400), max_size=10),
)
def test_sse_decoder_yields_exactly_the_events_written_however_split(
    events: List[Any], newline: bytes, cuts: List[int]
) -> None:
    stream = b""
    expected = []
    for event_id, data_lines, retry, comment in events:
        lines = [": keep-alive"] if comment else []
        if event_id is not None:
            lines.append("id: " + event_id)
        if retry is not None:
            lines.append(f"retry: {retry}")
        lines.extend("data: " + line for line in data_lines)
        stream += newline.join(line.encode("utf-8") for line in lines) + newline + newline
        expected.append((event_id, "\n".join(data_lines), retry))
    points = sorted({min(cut, len(stream)) for cut in cuts})
    chunks = [stream[a:b] for a, b in zip([0, *points], [*points, len(stream)])]
    decoder = SseDecoder(10_000)
    events = [event for chunk in chunks for event in decoder.feed(chunk)] + decoder.end()
    assert [(e.id, e.data, e.retry) for e in events] == expected


@SETTINGS
@given(st.lists(st.binary(max_size=80), max_size=10), st.integers(min_value=1, max_value=100))
def test_sse_decoder_on_any_bytes_yields_bounded_events_or_oversized_notes(chunks: List[bytes], limit: int) -> None:
    decoder = SseDecoder(limit)
    for event in [frame for chunk in chunks for frame in decoder.feed(chunk)] + decoder.end():
        if isinstance(event, Oversized):
            assert event.limit == limit and event.size > limit
            continue
        assert isinstance(event.data, str) and len(event.data) <= limit
        assert event.retry is None or (isinstance(event.retry, int) and event.retry >= 0)
