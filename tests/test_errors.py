from __future__ import annotations

import pickle

import pytest

from jsonrpc_threads import errors
from jsonrpc_threads.errors import (
    HttpConnectionError,
    HttpError,
    InternalError,
    InvalidParams,
    InvalidRequest,
    JsonRpcError,
    MethodNotFound,
    ParseError,
    RequestTimeout,
    SessionExpired,
    TransportClosed,
    error_from_response,
)


@pytest.mark.parametrize(
    ("cls", "code"),
    [(ParseError, -32700), (InvalidRequest, -32600), (MethodNotFound, -32601), (InvalidParams, -32602), (InternalError, -32603)],
)
def test_standard_errors_have_their_codes_and_take_message_and_data(cls: type, code: int) -> None:
    error = cls(message="boom", data={"x": 1})
    assert isinstance(error, JsonRpcError)
    assert (error.code, error.message, error.data) == (code, "boom", {"x": 1})
    assert cls().message  # a default message
    assert errors.STANDARD_ERRORS[code] is cls
    assert error_from_response({"code": code, "message": "m", "data": [1]}).__class__ is cls


def test_unknown_code_becomes_plain_error_with_data() -> None:
    error = error_from_response({"code": -32001, "message": "server says timeout", "data": {"a": 1}})
    assert type(error) is JsonRpcError
    assert not isinstance(error, RequestTimeout)
    assert (error.code, error.message, error.data) == (-32001, "server says timeout", {"a": 1})


@pytest.mark.parametrize("bad", [None, "text", {"message": "no code"}, {"code": True, "message": "x"}, {"code": "1"}])
def test_malformed_error_objects_still_become_errors(bad: object) -> None:
    error = error_from_response(bad)
    assert isinstance(error, JsonRpcError)


def test_builtin_bases() -> None:
    timeout = RequestTimeout("tools/call", 7, 1.5)
    assert isinstance(timeout, TimeoutError) and isinstance(timeout, JsonRpcError)
    assert (timeout.method, timeout.request_id, timeout.timeout) == ("tools/call", 7, 1.5)
    closed = TransportClosed("gone", returncode=3, stderr_tail="last words")
    assert isinstance(closed, ConnectionError) and isinstance(closed, JsonRpcError)
    assert "exit code 3" in str(closed) and "last words" in str(closed)
    assert isinstance(HttpConnectionError("refused"), ConnectionError)
    assert isinstance(SessionExpired("gone", status_code=404), HttpError)


@pytest.mark.parametrize(
    "error",
    [
        InvalidParams("bad", data=[1]),
        JsonRpcError(5, "x", {"y": 2}),
        RequestTimeout("m", "id-1", 2.0),
        TransportClosed("gone", returncode=-9, stderr_tail="tail"),
        HttpError("teapot", status_code=418, body_excerpt="short"),
    ],
)
def test_errors_survive_pickling(error: JsonRpcError) -> None:
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is type(error)
    assert (copy.code, copy.message, copy.data) == (error.code, error.message, error.data)


def test_to_error_object_omits_absent_data() -> None:
    assert MethodNotFound().to_error_object() == {"code": -32601, "message": "Method not found"}
    assert InvalidParams("p", data=0).to_error_object() == {"code": -32602, "message": "p", "data": 0}
