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
    encode_content_length,
    encode_line,
)
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


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
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
    data = b"Content-Length: twelve\r\n\r\n" + encode_content_length(good) + b"X-Other: 1\r\n\r\n" + encode_content_length(good)
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


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(json_texts, max_size=6), st.lists(st.integers(min_value=0, max_value=500), max_size=5))
def test_content_length_any_split_same_messages(messages: List[bytes], cuts: List[int]) -> None:
    data = b"".join(encode_content_length(m) for m in messages)
    assert decode_in_pieces(lambda: ContentLengthDecoder(1 << 20), data, cuts) == messages


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=300), st.lists(st.integers(min_value=0, max_value=300), max_size=4))
def test_content_length_never_raises_on_any_bytes(data: bytes, cuts: List[int]) -> None:
    good = b'{"after":"garbage"}'
    out = decode_in_pieces(lambda: ContentLengthDecoder(1000), data + b"\r\n\r\n" + encode_content_length(good), cuts)
    assert all(isinstance(item, (bytes, FramingError, Oversized)) for item in out)
