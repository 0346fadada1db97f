from __future__ import annotations

import json
from types import MappingProxyType
from typing import Any, List

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jsonrpc_threads import messages
from jsonrpc_threads.errors import InvalidParams, InvalidRequest, ParseError
from jsonrpc_threads.messages import ErrorResponse, Notification, Request, Response, parse_message

from .tiers import budget


def test_request_and_notification_builders() -> None:
    assert messages.request_message(1, "m", [1]) == {"jsonrpc": "2.0", "id": 1, "method": "m", "params": [1]}
    assert messages.request_message("a", "m") == {"jsonrpc": "2.0", "id": "a", "method": "m"}
    assert messages.notification_message("n", {"a": 1}) == {"jsonrpc": "2.0", "method": "n", "params": {"a": 1}}
    assert messages.request_message(1, "m", (1, 2))["params"] == [1, 2]
    assert messages.request_message(1, "m", MappingProxyType({"k": 1}))["params"] == {"k": 1}


@pytest.mark.parametrize("bad_id", [True, False, 1.5, None, [1], {"a": 1}])
def test_request_ids_must_be_int_or_str(bad_id: object) -> None:
    with pytest.raises(TypeError):
        messages.request_message(bad_id, "m")  # type: ignore[arg-type]


@pytest.mark.parametrize("bad_params", ["text", 5, b"bytes", 1.0])
def test_params_must_be_structured(bad_params: object) -> None:
    with pytest.raises(TypeError):
        messages.request_message(1, "m", bad_params)  # type: ignore[arg-type]


def test_encode_is_one_line_and_keeps_unicode_separators() -> None:
    data = messages.encode(messages.request_message(1, "m", {"text": "a\nb\u2028c\u2029d \U0001f600"}))
    assert b"\n" not in data
    assert "\u2028".encode() in data
    assert messages.decode(data)["params"]["text"] == "a\nb\u2028c\u2029d \U0001f600"


def test_encode_refuses_what_json_cannot_hold() -> None:
    with pytest.raises(TypeError):
        messages.encode({"x": object()})
    loop: list = []
    loop.append(loop)
    with pytest.raises(ValueError):
        messages.encode(loop)


@pytest.mark.parametrize("data", [b"{", b"\xff\xfe", b"nope", b""])
def test_decode_raises_parse_error(data: bytes) -> None:
    with pytest.raises(ParseError):
        messages.decode(data)


def test_parse_message_classifies() -> None:
    assert parse_message({"jsonrpc": "2.0", "id": 1, "method": "m"}) == Request(1, "m", None)
    assert parse_message({"jsonrpc": "2.0", "method": "n", "params": [1]}) == Notification("n", [1])
    assert parse_message({"jsonrpc": "2.0", "id": "x", "result": None}) == Response("x", None)
    error = parse_message({"jsonrpc": "2.0", "id": None, "error": {"code": -32602, "message": "p"}})
    assert isinstance(error, ErrorResponse) and error.id is None and isinstance(error.error, InvalidParams)


@pytest.mark.parametrize(
    ("obj", "carries_id"),
    [
        ([1], False),
        ({"id": 1, "method": "m"}, True),
        ({"jsonrpc": "1.0", "id": 1, "method": "m"}, True),
        ({"jsonrpc": "2.0", "id": 1, "method": 5}, True),
        ({"jsonrpc": "2.0", "id": 1, "method": "m", "params": "s"}, True),
        ({"jsonrpc": "2.0", "id": True, "method": "m"}, False),
        ({"jsonrpc": "2.0", "id": 1.5, "method": "m"}, False),
        ({"jsonrpc": "2.0", "id": 1}, True),
        ({"jsonrpc": "2.0", "id": 1, "result": 1, "error": {}}, True),
        ({"jsonrpc": "2.0", "id": None, "result": 1}, False),
    ],
)
def test_parse_message_refuses_bad_envelopes(obj: object, carries_id: bool) -> None:
    with pytest.raises(InvalidRequest) as info:
        parse_message(obj)
    assert ("id" in (info.value.data or {})) is carries_id


def test_split_batch() -> None:
    assert messages.split_batch({"a": 1}) == [{"a": 1}]
    assert messages.split_batch([1, 2]) == [1, 2]
    with pytest.raises(InvalidRequest):
        messages.split_batch([])


def test_error_message_has_null_id_when_unknown() -> None:
    text = messages.encode(messages.error_message(None, ParseError()))
    assert json.loads(text) == {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}


def test_encode_refuses_nan_and_decode_insists_on_utf8() -> None:
    with pytest.raises(ValueError):
        messages.encode({"x": float("nan")})
    with pytest.raises(ParseError):
        messages.decode('{"a": 1}'.encode("utf-16"))


@settings(max_examples=budget(300), deadline=None)
@given(
    st.integers(min_value=0, max_value=2**63),
    st.text(max_size=10),
    st.none()
    | st.lists(st.integers() | st.text(max_size=5), max_size=4)
    | st.dictionaries(st.text(max_size=5), st.integers(), max_size=4),
)
def test_encode_request_is_the_envelope_encoded(request_id: int, method: str, params: Any) -> None:
    assert messages.encode_request(request_id, method, params) == messages.encode(
        messages.request_message(request_id, method, params)
    )


def test_encode_request_keeps_a_bounded_number_of_method_names() -> None:
    messages._method_json.clear()  # what earlier tests left
    for method in ("tools/call", 'quote"and\\back\nslash', "\u2028"):
        for request_id in (1, 2):  # the second time from what the first one kept
            assert messages.encode_request(request_id, method, [1]) == messages.encode(
                messages.request_message(request_id, method, [1])
            )
    assert "tools/call" in messages._method_json
    with pytest.raises(UnicodeEncodeError):  # as the envelope's encoding fails, and nothing is kept
        messages.encode_request(1, "\ud800")
    with pytest.raises(UnicodeEncodeError):
        messages.encode(messages.request_message(1, "\ud800"))
    assert "\ud800" not in messages._method_json
    for index in range(2 * messages._METHOD_JSON_ENTRIES):
        messages.encode_request(1, f"method/{index}")
    assert len(messages._method_json) == messages._METHOD_JSON_ENTRIES
    assert json.loads(messages.encode_request(7, "method/1000")) == {"jsonrpc": "2.0", "id": 7, "method": "method/1000"}


def test_encode_request_refuses_what_request_message_refuses() -> None:
    with pytest.raises(ValueError):
        messages.encode_request(1, "m", [float("nan")])
    circular: List[Any] = []
    circular.append(circular)
    with pytest.raises(ValueError):
        messages.encode_request(1, "m", circular)
    with pytest.raises(TypeError):
        messages.encode_request(1, "m", "not params")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        messages.encode_request(True, "m")
    with pytest.raises(TypeError):
        messages.encode_request(1, 5)  # type: ignore[arg-type]
