"""Property-based tests: any bytes in, a well-formed answer or a logged skip out."""

from __future__ import annotations

import io
import json
from typing import Any, List

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jsonrpc_threads import messages
from jsonrpc_threads.errors import InvalidRequest, JsonRpcError, ParseError
from jsonrpc_threads.server import serve

json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False), st.text()
)
json_values = st.recursive(
    json_scalars,
    lambda children: st.one_of(st.lists(children, max_size=4), st.dictionaries(st.text(max_size=8), children, max_size=4)),
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

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(st.binary(max_size=200))
def test_decode_any_bytes_returns_or_raises_parse_error(data: bytes) -> None:
    try:
        messages.decode(data)
    except ParseError:
        pass


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
        return isinstance(error.get("code"), int) and isinstance(error.get("message"), str) and "Traceback" not in json.dumps(error)
    return True


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
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

    def send(self, data: bytes, request_ids: Any = ()) -> None:
        self.sent.append(data)

    def close(self) -> None:
        pass


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(st.binary(max_size=60), st.one_of(envelopes, json_values).map(lambda o: json.dumps(o).encode())), max_size=8))
def test_client_dispatch_never_raises_and_still_matches_responses(incoming: List[bytes]) -> None:
    from jsonrpc_threads import JsonRpcClient

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
