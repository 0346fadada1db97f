"""The exception tree (jsonrpc_threads/errors.py): codes, origins, builtin bases, pickling, the table."""

from __future__ import annotations

import copy
import inspect
import pickle
import re
from typing import Any, Dict, Optional, Type

import pytest

from jsonrpc_threads import auth, errors, mcp
from jsonrpc_threads.errors import (
    AuthorizationError,
    ConfigError,
    HttpConnectionError,
    HttpError,
    InternalError,
    InvalidParams,
    InvalidRequest,
    JsonRpcError,
    MessageTooLarge,
    MethodNotFound,
    ParseError,
    RemoteError,
    RemoteInternalError,
    RemoteInvalidParams,
    RemoteInvalidRequest,
    RemoteMethodNotFound,
    RemoteParseError,
    RequestCancelled,
    RequestTimeout,
    SessionExpired,
    TransportClosed,
    error_from_response,
)
from jsonrpc_threads.mcp import ProtocolVersionError, ServerUnavailable, UnknownServer, UnknownTool, config, registry
from jsonrpc_threads.mcp import errors as mcp_errors

STANDARD = [
    (ParseError, -32700),
    (InvalidRequest, -32600),
    (MethodNotFound, -32601),
    (InvalidParams, -32602),
    (InternalError, -32603),
]

#: One instance of every exception class errors.py defines, built with every argument.
SAMPLES: Dict[Type[JsonRpcError], JsonRpcError] = {
    JsonRpcError: JsonRpcError(5, "x", {"y": 2}),
    RemoteError: RemoteError(-32050, "server exploded", {"detail": "kaboom"}),
    ParseError: ParseError("bad json", data="{"),
    InvalidRequest: InvalidRequest(message="no method", data=None),
    MethodNotFound: MethodNotFound("no such method", data={"method": "m"}),
    InvalidParams: InvalidParams("bad", data=[1]),
    InternalError: InternalError(),
    RemoteParseError: RemoteParseError("peer could not parse"),
    RemoteInvalidRequest: RemoteInvalidRequest("peer says invalid", data=1),
    RemoteMethodNotFound: RemoteMethodNotFound("peer has no m", data={"m": 1}),
    RemoteInvalidParams: RemoteInvalidParams("peer says bad params"),
    RemoteInternalError: RemoteInternalError("peer failed", data=[1, 2]),
    RequestCancelled: RequestCancelled("cancelled by the server", data={"why": "edit"}),
    RequestTimeout: RequestTimeout("tools/call", "id-1", 2.0),
    TransportClosed: TransportClosed("gone", returncode=-9, stderr_tail="last words"),
    MessageTooLarge: MessageTooLarge(1024, "line"),
    HttpError: HttpError("teapot", status_code=418, body_excerpt="short"),
    HttpConnectionError: HttpConnectionError("refused", status_code=None, body_excerpt=""),
    SessionExpired: SessionExpired("expired", status_code=404, body_excerpt="gone"),
    AuthorizationError: AuthorizationError("denied", status_code=401, body_excerpt="b", oauth_error="access_denied"),
    ConfigError: ConfigError("server 'x': needs 'command'", server="x"),
    UnknownTool: UnknownTool("mcp__x__y", "x"),
    UnknownServer: UnknownServer("nope", ["a", "b"]),
    ServerUnavailable: ServerUnavailable("x", "exit code 3", timed_out=True),
    ProtocolVersionError: ProtocolVersionError("1999-01-01", ("2025-11-25", "2025-06-18")),
    errors.StreamLost: errors.StreamLost("the SSE stream ended before the response", status_code=None, body_excerpt=""),
    errors.ProtocolError: errors.ProtocolError("unknown resultType 'x'", {"resultType": "x"}),
    mcp_errors.SkillVerificationError: mcp_errors.SkillVerificationError("skill://a/SKILL.md", "digest differs"),
    mcp_errors.HeaderMismatch: mcp_errors.HeaderMismatch("Mcp-Name does not match", {"header": "Mcp-Name"}),
    mcp_errors.MissingClientCapability: mcp_errors.MissingClientCapability(
        "roots", {"requiredCapabilities": {"roots": {}}}
    ),
    mcp_errors.UnsupportedProtocolVersion: mcp_errors.UnsupportedProtocolVersion(
        "unsupported", {"supported": ["2026-07-28"], "requested": "1999-01-01"}
    ),
}


def defined_here() -> set:
    """Every public exception class of errors.py and mcp/errors.py (known by that module's name)."""
    return {
        value
        for module in (errors, mcp_errors)
        for value in vars(module).values()
        if inspect.isclass(value) and issubclass(value, JsonRpcError) and value.__module__ == module.__name__
    }


# -- codes and origins ---------------------------------------------------------------------


@pytest.mark.parametrize(("cls", "code"), STANDARD)
def test_standard_errors_have_their_codes_and_take_message_and_data(cls: Type[JsonRpcError], code: int) -> None:
    error = cls(message="boom", data={"x": 1})  # type: ignore[call-arg]
    assert isinstance(error, JsonRpcError) and not isinstance(error, RemoteError)
    assert (error.code, error.message, error.data) == (code, "boom", {"x": 1})
    assert cls().message  # type: ignore[call-arg]  # a default message
    assert errors.STANDARD_ERRORS[code] is cls


@pytest.mark.parametrize(("cls", "code"), STANDARD)
def test_a_standard_code_from_the_peer_is_that_class_and_a_remote_error(cls: Type[JsonRpcError], code: int) -> None:
    error = error_from_response({"code": code, "message": "m", "data": [1]})
    assert isinstance(error, cls) and isinstance(error, RemoteError)
    assert type(error) is errors.REMOTE_ERRORS[code]
    assert (error.code, error.message, error.data) == (code, "m", [1])
    assert error_from_response({"code": code}).message == cls().message  # type: ignore[call-arg]


def test_except_method_not_found_catches_the_peers_answer_and_a_handlers_raise() -> None:
    caught = []
    for raised in (error_from_response({"code": -32601, "message": "no"}), MethodNotFound("no")):
        try:
            raise raised
        except MethodNotFound as exc:
            caught.append(isinstance(exc, RemoteError))
    assert caught == [True, False]


def test_unknown_code_becomes_a_plain_remote_error_with_data() -> None:
    error = error_from_response({"code": -32001, "message": "server says timeout", "data": {"a": 1}})
    assert type(error) is RemoteError
    assert not isinstance(error, RequestTimeout)
    assert (error.code, error.message, error.data) == (-32001, "server says timeout", {"a": 1})


def test_the_lsp_request_cancelled_code_is_its_own_remote_error() -> None:
    error = error_from_response({"code": -32800, "message": "cancelled", "data": {"id": 3}})
    assert type(error) is RequestCancelled and isinstance(error, RemoteError)
    assert (error.code, error.message, error.data) == (-32800, "cancelled", {"id": 3})
    assert error_from_response({"code": -32800}).message == "Request cancelled"
    assert errors.PROTOCOL_ERRORS[errors.REQUEST_CANCELLED] is RequestCancelled


@pytest.mark.parametrize("bad", [None, "text", {"message": "no code"}, {"code": True, "message": "x"}, {"code": "1"}])
def test_malformed_error_objects_still_become_remote_errors(bad: object) -> None:
    error = error_from_response(bad)
    assert type(error) is RemoteInternalError
    assert error.data == bad


def test_local_failures_are_not_remote_errors() -> None:
    local = {cls for cls in SAMPLES if not issubclass(cls, RemoteError)}
    assert {TransportClosed, RequestTimeout, HttpError, ConfigError, ServerUnavailable, MethodNotFound} <= local
    remote = set(SAMPLES) - local
    assert remote == {
        RemoteError,
        *errors.REMOTE_ERRORS.values(),
        *errors.PROTOCOL_ERRORS.values(),
        *mcp_errors.MCP_ERRORS.values(),
    }


def test_builtin_bases() -> None:
    timeout = RequestTimeout("tools/call", 7, 1.5)
    assert isinstance(timeout, TimeoutError) and isinstance(timeout, JsonRpcError)
    assert (timeout.method, timeout.request_id, timeout.timeout) == ("tools/call", 7, 1.5)
    closed = TransportClosed("gone", returncode=3, stderr_tail="last words")
    assert isinstance(closed, ConnectionError) and isinstance(closed, JsonRpcError)
    assert (closed.returncode, closed.stderr_tail) == (3, "last words")
    assert "exit code 3" in str(closed) and "last words" in str(closed)
    assert isinstance(HttpConnectionError("refused"), ConnectionError)
    assert isinstance(SessionExpired("gone", status_code=404), HttpError)
    assert isinstance(AuthorizationError("no"), HttpError)
    assert isinstance(ConfigError("bad"), ValueError)
    assert isinstance(UnknownTool("t"), LookupError) and isinstance(UnknownServer("s"), LookupError)
    assert isinstance(ServerUnavailable("s", "r"), ConnectionError)
    assert all(issubclass(cls, JsonRpcError) for cls in defined_here())


def test_the_layers_raise_the_classes_defined_here() -> None:
    assert auth.AuthorizationError is AuthorizationError
    assert mcp.ProtocolVersionError is ProtocolVersionError
    assert config.ConfigError is ConfigError
    assert (registry.UnknownTool, registry.UnknownServer, registry.ServerUnavailable) == (
        UnknownTool,
        UnknownServer,
        ServerUnavailable,
    )


def test_to_error_object_omits_absent_data() -> None:
    assert MethodNotFound().to_error_object() == {"code": -32601, "message": "Method not found"}
    assert InvalidParams("p", data=0).to_error_object() == {"code": -32602, "message": "p", "data": 0}


# -- pickling: one mechanism for every class ------------------------------------------------


def test_every_class_has_a_sample() -> None:
    assert defined_here() == set(SAMPLES)


@pytest.mark.parametrize("error", list(SAMPLES.values()), ids=[cls.__name__ for cls in SAMPLES])
def test_every_error_survives_pickling_and_copying_with_its_attributes(error: JsonRpcError) -> None:
    for clone in (
        pickle.loads(pickle.dumps(error)),
        pickle.loads(pickle.dumps(error, protocol=2)),
        copy.copy(error),
        copy.deepcopy(error),
    ):
        assert clone is not error
        assert type(clone) is type(error)
        assert vars(clone) == vars(error)
        assert (clone.code, clone.message, clone.data) == (error.code, error.message, error.data)
        assert clone.args == error.args
        assert (str(clone), repr(clone)) == (str(error), repr(error))


def test_a_changed_attribute_and_a_users_subclass_survive_pickling() -> None:
    error = MessageTooLarge(10)
    error.message = "changed after construction"
    assert pickle.loads(pickle.dumps(error)).message == "changed after construction"
    clone = pickle.loads(pickle.dumps(_UserError("tool", retries=2)))
    assert (type(clone), clone.tool, clone.retries, clone.message) == (_UserError, "tool", 2, "tool failed 2 times")


class _UserError(JsonRpcError):
    """A subclass as a user writes it: its own constructor, keyword arguments, no __reduce__."""

    def __init__(self, tool: str, *, retries: int = 0) -> None:
        super().__init__(-32099, f"{tool} failed {retries} times")
        self.tool = tool
        self.retries = retries


# -- the table in the module docstring ----------------------------------------------------

_ROW = re.compile(r"^\s{4}(\w+)\s+(-?\d+|any|peer)\s+(local|remote|either)\b", re.MULTILINE)


def test_the_docstring_table_lists_every_class_with_its_code_and_origin() -> None:
    rows = {name: (code, origin) for name, code, origin in _ROW.findall(errors.__doc__ or "")}
    assert set(rows) == {cls.__name__ for cls in SAMPLES}
    for cls, sample in SAMPLES.items():
        code, origin = rows[cls.__name__]
        expected_code: Optional[int] = None if code in ("any", "peer") else int(code)
        if expected_code is not None:
            assert sample.code == expected_code, cls
        if origin != "either":
            assert isinstance(sample, RemoteError) == (origin == "remote"), cls


def test_codes_are_named_once() -> None:
    local: Dict[str, Any] = {
        name: value for name, value in vars(errors).items() if re.fullmatch(r"[A-Z_]+", name) and isinstance(value, int)
    }
    assert len(set(local.values())) == len(local)
    assert local["CONFIG_ERROR"] == ConfigError("x").code
