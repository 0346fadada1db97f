"""The framing decoders, pure: every input split at every offset decodes the same."""

from __future__ import annotations

import json
from typing import Any, Callable, List, Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jsonrpc_threads.framing import (
    ContentLengthDecoder,
    FramingError,
    LineDecoder,
    Oversized,
    SseDecoder,
    encode_content_length,
    encode_line,
)

from .tiers import budget

Frame = Any

Decoder = Any


def decode_in_pieces(make: Callable[[], Decoder], data: bytes, cuts: Sequence[int]) -> List[Frame]:
    decoder = make()
    out: List[Frame] = []
    start = 0
    for cut in sorted(set(cuts)):
        out += decoder.feed(data[start:cut])
        start = cut
    out += decoder.feed(data[start:])
    out += decoder.end()
    return out


def every_two_way_split(make: Callable[[], Decoder], data: bytes) -> List[Frame]:
    whole = decode_in_pieces(make, data, [])
    for offset in range(len(data) + 1):
        assert decode_in_pieces(make, data, [offset]) == whole, offset
    return whole


json_texts = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=6,
).map(lambda value: json.dumps({"jsonrpc": "2.0", "id": 1, "result": value}, ensure_ascii=False).encode())

# -- lines --------------------------------------------------------------------------------


def test_lines_split_on_newline_only() -> None:
    data = '{"a":"x\u2028y\u2029z"}\r\n\n  \n{"b":1}\n{"c":2}'.encode()
    assert every_two_way_split(lambda: LineDecoder(100), data) == [
        '{"a":"x\u2028y\u2029z"}\r'.encode(),
        b'{"b":1}',
        b'{"c":2}',
    ]


def test_a_line_at_the_limit_passes_and_one_byte_more_is_skipped() -> None:
    ok = b"x" * 10
    too_long = b"y" * 11
    data = ok + b"\n" + too_long + b"\n" + ok + b"\n"
    out = every_two_way_split(lambda: LineDecoder(10), data)
    assert out == [ok, Oversized(too_long, 11, 10), ok]


def test_an_oversized_line_is_never_held_whole() -> None:
    decoder = LineDecoder(1000)
    decoder.feed(b"z" * 500)
    for _ in range(100):
        assert decoder.feed(b"z" * 10_000) == []
        assert decoder.buffered <= 1000
    (note,) = decoder.feed(b"zz\n")
    assert isinstance(note, Oversized)
    assert note.size == 500 + 100 * 10_000 + 2
    assert len(note.head) <= 64 * 1024


def test_a_cut_oversized_line_at_end_of_stream_is_reported() -> None:
    decoder = LineDecoder(4)
    assert decoder.feed(b"123456") == []
    assert decoder.end() == [Oversized(b"123456", 6, 4)]


def test_content_length_on_a_line_stream_is_noticed() -> None:
    decoder = LineDecoder(100)
    decoder.feed(b'Content-Length: 40\r\n\r\n{"jsonrpc":"2.0"}\n')
    assert decoder.saw_content_length


def test_encode_line_refuses_a_newline() -> None:
    assert encode_line(b"{}") == b"{}\n"
    with pytest.raises(ValueError):
        encode_line(b"{\n}")


@settings(max_examples=budget(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(json_texts, max_size=6), st.lists(st.integers(min_value=0, max_value=400), max_size=5))
def test_lines_any_split_same_messages(messages: List[bytes], cuts: List[int]) -> None:
    data = b"".join(encode_line(m) for m in messages)
    assert decode_in_pieces(lambda: LineDecoder(1 << 20), data, cuts) == messages


# -- Content-Length ----------------------------------------------------------------------


def test_content_length_messages_with_content_type_and_lf_only_headers() -> None:
    body1 = b'{"jsonrpc":"2.0","id":1,"result":null}'
    body2 = '{"text":"caf\u00e9"}'.encode()
    data = (
        encode_content_length(body1)
        + b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\ncontent-length: %d\r\n\r\n" % len(body2)
        + body2
        + b"Content-Length: 2\n\n{}"
    )
    assert every_two_way_split(lambda: ContentLengthDecoder(1000), data) == [body1, body2, b"{}"]


def test_a_bad_header_is_skipped_and_the_stream_goes_on() -> None:
    good = b'{"ok":true}'
    data = (
        b"Content-Length: twelve\r\n\r\n"
        + encode_content_length(good)
        + b"X-Other: 1\r\n\r\n"
        + encode_content_length(good)
    )
    out = every_two_way_split(lambda: ContentLengthDecoder(1000), data)
    assert [item for item in out if isinstance(item, bytes)] == [good, good]
    assert sum(isinstance(item, FramingError) for item in out) == 2


def test_stray_bytes_before_a_header_are_skipped() -> None:
    good = b'{"ok":1}'
    data = b"log line from the server\n" + encode_content_length(good) + b"garbage" + encode_content_length(good)
    out = every_two_way_split(lambda: ContentLengthDecoder(1000), data)
    assert [item for item in out if isinstance(item, bytes)] == [good, good]
    assert all(isinstance(item, (bytes, FramingError)) for item in out)


def test_no_header_end_within_the_limit_resyncs_on_the_next_content_length() -> None:
    good = b'{"ok":2}'
    data = b"x" * 20_000 + encode_content_length(good)
    out = decode_in_pieces(lambda: ContentLengthDecoder(1000), data, [100, 9000, 15000])
    assert out[-1] == good
    assert all(isinstance(item, FramingError) for item in out[:-1])


def test_an_oversized_body_is_reported_and_skipped() -> None:
    big = b"[" + b"1," * 600 + b"1]"
    good = b"[1]"
    data = encode_content_length(big) + encode_content_length(good)
    out = every_two_way_split(lambda: ContentLengthDecoder(1000), data)
    assert out == [Oversized(big, len(big), 1000), good]


def test_an_oversized_body_is_never_held_whole() -> None:
    decoder = ContentLengthDecoder(100)
    assert decoder.feed(b"Content-Length: 1000000\r\n\r\n") == []
    for _ in range(99):
        assert decoder.feed(b"a" * 10_000) == []
        assert decoder.buffered < 200
    (note,) = decoder.feed(b"a" * 10_000 + encode_content_length(b"{}"))[:1]
    assert isinstance(note, Oversized) and note.size == 1_000_000 and note.head == b"a" * (64 * 1024)


def test_a_message_cut_by_the_end_of_the_stream_is_reported() -> None:
    decoder = ContentLengthDecoder(100)
    decoder.feed(b"Content-Length: 10\r\n\r\n{}")
    (note,) = decoder.end()
    assert isinstance(note, FramingError)


@settings(max_examples=budget(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(json_texts, max_size=6), st.lists(st.integers(min_value=0, max_value=500), max_size=5))
def test_content_length_any_split_same_messages(messages: List[bytes], cuts: List[int]) -> None:
    data = b"".join(encode_content_length(m) for m in messages)
    assert decode_in_pieces(lambda: ContentLengthDecoder(1 << 20), data, cuts) == messages


@settings(max_examples=budget(100), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=300), st.lists(st.integers(min_value=0, max_value=300), max_size=4))
def test_content_length_never_raises_on_any_bytes(data: bytes, cuts: List[int]) -> None:
    good = b'{"after":"garbage"}'
    out = decode_in_pieces(lambda: ContentLengthDecoder(1000), data + b"\r\n\r\n" + encode_content_length(good), cuts)
    assert all(isinstance(item, (bytes, FramingError, Oversized)) for item in out)


# -- server-sent events ------------------------------------------------------------------

SseItem = Any


def sse_items(frames: Sequence[Any]) -> List[SseItem]:
    """Events as comparable tuples (sseclient's Event has no equality); notes as they are."""
    return [
        frame if isinstance(frame, Oversized) else (frame.id, frame.event, frame.data, frame.retry) for frame in frames
    ]


def sse_in_pieces(data: bytes, cuts: Sequence[int], limit: int = 1000) -> List[SseItem]:
    return sse_items(decode_in_pieces(lambda: SseDecoder(limit), data, cuts))


def sse_every_split(data: bytes, limit: int = 1000) -> List[SseItem]:
    """The same events however the stream is split; an Oversized note is reported as soon as
    the event crosses the limit, so its ``size`` (at least) and ``head`` depend on the split:
    only its being there, once, and its limit are compared."""

    def comparable(items: List[SseItem]) -> List[SseItem]:
        return [("oversized", item.limit) if isinstance(item, Oversized) else item for item in items]

    whole = sse_in_pieces(data, [], limit)
    for offset in range(len(data) + 1):
        assert comparable(sse_in_pieces(data, [offset], limit)) == comparable(whole), offset
    return whole


SSE_STREAM = (
    b"\xef\xbb\xbf: a comment, and a BOM before it\r\n"
    b"id: s1:0\r\nretry: 250\r\ndata:\r\n\r\n"  # MCP priming: an id and a retry, empty data
    b'event: note\nid: s1:1\ndata: {"a":\ndata:  1}\nunknown: x\n\n'  # two data lines; one space stripped
    b"data:x\rid\r\r"  # CR line ends; a bare "id" resets the id
    b"retry: soon\nid: a\x00b\ndata: \xc3\xa9\xf0\x9f\x98\x80\n\n"  # bad retry and NUL id ignored; UTF-8
    b": only comments\n: make no event\n\n"
    b"data\ndata\n\n"  # names alone: two empty data lines
    b"data: cut off by the end"  # never dispatched
)
SSE_EXPECTED = [
    ("s1:0", "message", "", 250),
    ("s1:1", "note", '{"a":\n 1}', None),
    ("", "message", "x", None),
    (None, "message", "\u00e9\U0001f600", None),
    (None, "message", "\n", None),
]


def test_sse_the_whatwg_rules_split_at_every_offset() -> None:
    assert sse_every_split(SSE_STREAM) == SSE_EXPECTED


def test_sse_byte_by_byte() -> None:
    decoder = SseDecoder(1000)
    frames: List[Any] = []
    for i in range(len(SSE_STREAM)):
        frames += decoder.feed(SSE_STREAM[i : i + 1])
    frames += decoder.end()
    assert sse_items(frames) == SSE_EXPECTED


def test_sse_crlf_split_between_reads_is_one_line_end() -> None:
    decoder = SseDecoder(100)
    assert decoder.feed(b"data: a\r") == []
    assert decoder.feed(b"\n") == []  # the LF of the CRLF: not a blank line
    assert sse_items(decoder.feed(b"\r\n")) == [(None, "message", "a", None)]


def test_sse_a_bom_only_at_the_start() -> None:
    stream = b"\xef\xbb\xbfdata: 1\n\n\xef\xbb\xbfdata: 2\n\n"
    # The second BOM is part of a field name that is not "data": ignored, no event.
    assert sse_every_split(stream) == [(None, "message", "1", None)]


def test_sse_data_at_the_limit_passes_and_one_byte_more_is_oversized() -> None:
    ok = b"data: " + b"x" * 6 + b"\ndata: " + b"y" * 3 + b"\n\n"  # 6 + 1 + 3 = 10 bytes of data
    too_big = b'data: {"id":7,' + b"z" * 10 + b"\n\n"
    stream = ok + too_big + ok
    out = sse_every_split(stream, limit=10)
    assert out[0] == out[2] == (None, "message", "xxxxxx\nyyy", None)
    note = out[1]
    assert isinstance(note, Oversized) and note.limit == 10 and note.head.startswith(b'{"id":7,')
    assert len(out) == 3


def test_sse_an_oversized_event_is_never_held_whole() -> None:
    decoder = SseDecoder(1000)
    (note,) = decoder.feed(b"data: " + b"a" * 2000)  # reported as soon as it crosses the limit
    assert isinstance(note, Oversized) and note.head.startswith(b"aaa")
    for _ in range(100):
        assert decoder.feed(b"a" * 10_000) == []
        assert decoder.feed(b"\ndata: " + b"b" * 10_000 + b"\n") == []
        assert decoder.buffered <= 1000 + 4096
    assert sse_items(decoder.feed(b"\ndata: next\n\n")) == [(None, "message", "next", None)]


def test_sse_a_long_comment_line_is_dropped_as_it_arrives() -> None:
    decoder = SseDecoder(100)
    decoder.feed(b": ")
    for _ in range(100):
        assert decoder.feed(b"k" * 10_000) == []
        assert decoder.buffered == 0
    assert sse_items(decoder.feed(b"\ndata: ok\n\n")) == [(None, "message", "ok", None)]


@pytest.mark.parametrize("line", [b"id: ", b"event: ", b"whatever: "])
def test_sse_any_field_line_past_the_slack_makes_its_event_oversized(line: bytes) -> None:
    stream = b"data: head\n" + line + b"v" * (100 + 4096) + b"\ndata: more\n\ndata: after\n\n"
    out = sse_every_split(stream, limit=100)
    assert [type(item) for item in out] == [Oversized, tuple]
    assert out[0].head == b"head"
    assert out[1] == (None, "message", "after", None)


def test_sse_a_cut_event_is_dropped_and_end_starts_over() -> None:
    decoder = SseDecoder(100)
    assert decoder.feed(b"id: 1\ndata: partial\n") == []
    assert decoder.end() == []
    assert sse_items(decoder.feed(b"data: fresh\n\n")) == [(None, "message", "fresh", None)]


sse_text = st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters="\r\n\x00"), max_size=12)


@settings(max_examples=budget(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(
            st.none() | sse_text,
            st.none() | st.sampled_from(["note", "message", "x y"]),
            st.lists(sse_text, max_size=3),
            st.none() | st.integers(min_value=0, max_value=10**6),
            st.booleans(),
        ),
        max_size=6,
    ),
    st.sampled_from([b"\n", b"\r", b"\r\n"]),
    st.lists(st.integers(min_value=0, max_value=600), max_size=6),
)
def test_sse_any_split_same_events(events: List[Any], newline: bytes, cuts: List[int]) -> None:
    stream = b""
    expected = []
    for event_id, name, data_lines, retry, comment in events:
        lines = [": keep-alive"] if comment else []
        if event_id is not None:
            lines.append("id: " + event_id)
        if name is not None:
            lines.append("event: " + name)
        if retry is not None:
            lines.append(f"retry: {retry}")
        lines.extend("data: " + line for line in data_lines)
        event_data = data_lines
        if len(lines) == int(comment):
            lines.append("data:")  # every event has a field
            event_data = [""]
        stream += newline.join(line.encode() for line in lines) + newline + newline
        expected.append((event_id, name or "message", "\n".join(event_data), retry))
    assert sse_in_pieces(stream, cuts, 10_000) == expected


@settings(max_examples=budget(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.binary(max_size=80), max_size=10),
    st.integers(min_value=1, max_value=100),
)
def test_sse_never_raises_on_any_bytes_and_events_stay_in_the_limit(chunks: List[bytes], limit: int) -> None:
    decoder = SseDecoder(limit)
    frames: List[Any] = []
    for chunk in chunks:
        frames += decoder.feed(chunk)
        assert decoder.buffered <= limit + 4096
    frames += decoder.end()
    for frame in frames:
        if isinstance(frame, Oversized):
            assert frame.limit == limit and frame.size > limit
        else:
            assert isinstance(frame.data, str) and len(frame.data) <= limit  # a character comes from >= 1 byte
            assert frame.retry is None or frame.retry >= 0
    assert sse_items(decoder.feed(b"\n\ndata: z\n\n"))[-1] == (None, "message", "z", None)  # the stream goes on


# -- the ids of the responses an oversized message held ------------------------------------------

#: An answer as the official TypeScript SDK writes it (``result`` first), with an ``id`` nested in it.
TS_ORDER_ANSWER = json.dumps(
    {"result": {"content": [{"type": "text", "text": "x" * 300, "id": 2}]}, "jsonrpc": "2.0", "id": 7}
).encode()
#: A notification whose params carry an ``id``: never the id of a response.
NOTIFICATION_WITH_AN_ID = json.dumps({"jsonrpc": "2.0", "method": "note", "params": {"id": 7, "t": "y" * 300}}).encode()


def test_an_oversized_line_names_the_response_it_held_at_every_split() -> None:
    small = b'{"jsonrpc":"2.0","id":1,"result":1}'
    data = TS_ORDER_ANSWER + b"\n" + NOTIFICATION_WITH_AN_ID + b"\n" + small + b"\n"
    out = every_two_way_split(lambda: LineDecoder(100), data)
    assert [item.response_ids if isinstance(item, Oversized) else item for item in out] == [(7,), (), small]


def test_a_cut_oversized_line_at_end_of_stream_names_its_response() -> None:
    decoder = LineDecoder(100)
    assert decoder.feed(TS_ORDER_ANSWER[:150]) == []
    assert decoder.feed(TS_ORDER_ANSWER[150:]) == []
    (note,) = decoder.end()
    assert note.response_ids == (7,) and note.size == len(TS_ORDER_ANSWER)


def test_an_oversized_body_names_the_response_it_held_at_every_split() -> None:
    data = encode_content_length(TS_ORDER_ANSWER) + encode_content_length(NOTIFICATION_WITH_AN_ID)
    out = every_two_way_split(lambda: ContentLengthDecoder(100), data)
    assert [(type(item), item.response_ids) for item in out] == [(Oversized, (7,)), (Oversized, ())]


def test_an_oversized_body_cut_by_the_end_of_the_stream_names_nothing() -> None:
    decoder = ContentLengthDecoder(100)
    decoder.feed(encode_content_length(TS_ORDER_ANSWER)[:-1])
    (note,) = decoder.end()
    assert isinstance(note, Oversized) and note.response_ids == ()


def sse_scanning(data: bytes, cuts: Sequence[int], limit: int = 100) -> List[SseItem]:
    return sse_items(decode_in_pieces(lambda: SseDecoder(limit, find_response_ids=True), data, cuts))


def sse_lines(text: bytes) -> bytes:
    """``text`` as the data lines of one event, one line after each ``", "`` (the joining LFs are JSON whitespace)."""
    return b"".join(b"data: " + line + b"\n" for line in text.replace(b", ", b",\n").split(b"\n"))


def test_sse_finding_response_ids_reports_an_oversized_event_once_it_ended_at_every_split() -> None:
    answer = json.dumps({"result": {"text": "z" * 150, "id": 3}, "id": 9}, separators=(",", ":")).encode()
    stream = (
        b"id: e1\n"
        + sse_lines(TS_ORDER_ANSWER)
        + b": a comment inside\nid: e2\nevent: message\ndata\n\n"  # an empty data line: an LF
        + b"data:"
        + answer  # one line, no space after the colon
        + b"\n\n"
        + sse_lines(NOTIFICATION_WITH_AN_ID)
        + b"\n"
        + b"data: small\n\n"
    )

    def comparable(items: List[SseItem]) -> List[SseItem]:  # the head kept depends on the split
        return [(item.size, item.response_ids) if isinstance(item, Oversized) else item for item in items]

    whole = sse_scanning(stream, [])
    for offset in range(len(stream) + 1):
        assert comparable(sse_scanning(stream, [offset])) == comparable(whole), offset
    data = TS_ORDER_ANSWER.replace(b", ", b",\n") + b"\n"  # with the empty data line's LF
    assert comparable(whole) == [
        (len(data), (7,)),
        (len(answer), (9,)),
        (len(NOTIFICATION_WITH_AN_ID), ()),
        (None, "message", "small", None),
    ]
    assert data.startswith(whole[0].head) and len(whole[0].head) > 100


def test_sse_finding_response_ids_an_event_cut_by_the_end_of_the_stream_is_reported_without() -> None:
    decoder = SseDecoder(100, find_response_ids=True)
    assert decoder.feed(sse_lines(TS_ORDER_ANSWER)) == []  # not yet: the event has not ended
    (note,) = decoder.end()
    assert isinstance(note, Oversized) and note.response_ids == () and note.size > 100
    assert sse_items(decoder.feed(b"data: fresh\n\n")) == [(None, "message", "fresh", None)]


def test_sse_finding_response_ids_never_holds_an_oversized_event_whole() -> None:
    decoder = SseDecoder(1000, find_response_ids=True)
    assert decoder.feed(b'data: {"result": "' + b"a" * 2000) == []
    for _ in range(100):
        assert decoder.feed(b"a" * 10_000) == []
        assert decoder.buffered <= 1000 + 4096
    (note,) = decoder.feed(b'", "id": 5}\n\n')
    assert note.response_ids == (5,) and note.size == len(b'{"result": "') + 2000 + 100 * 10_000 + len(b'", "id": 5}')


@settings(max_examples=budget(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.binary(max_size=80), max_size=10), st.integers(min_value=1, max_value=100))
def test_sse_finding_response_ids_yields_the_same_events_and_one_note_per_oversized_event(
    chunks: List[bytes], limit: int
) -> None:
    plain, scanning = SseDecoder(limit), SseDecoder(limit, find_response_ids=True)
    seen_plain = [frame for chunk in chunks for frame in plain.feed(chunk)] + plain.end()
    seen_scanning: List[Any] = []
    for chunk in chunks:
        seen_scanning += scanning.feed(chunk)
        assert scanning.buffered <= limit + 4096
    seen_scanning += scanning.end()
    assert [f for f in sse_items(seen_plain) if not isinstance(f, Oversized)] == [
        f for f in sse_items(seen_scanning) if not isinstance(f, Oversized)
    ]
    assert sum(isinstance(f, Oversized) for f in seen_plain) == sum(isinstance(f, Oversized) for f in seen_scanning)
