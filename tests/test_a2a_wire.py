"""The pure parts of the A2A client: both versions' JSON, the card's interfaces and origins, A2A's errors.

No agent here: objects in, objects out (the SDK-served agents are in test_a2a.py).
"""

from __future__ import annotations

import pickle
from typing import Any, Dict

import pytest

from jsonrpc_threads import RemoteError, RequestTimeout
from jsonrpc_threads.a2a import (
    A2A_ERRORS,
    A2aError,
    TaskNotFound,
    UnsupportedOperation,
    VersionNotSupported,
    card_url,
    error_from_a2a,
    event_kind,
    is_done,
    state_of,
    text_of,
)
from jsonrpc_threads.a2a.card import Origins, choose_interface, origin_of
from jsonrpc_threads.a2a.wire import V03, V1, ends_stream, list_params, normalize_state
from jsonrpc_threads.errors import ProtocolError, error_from_response

# -- messages ----------------------------------------------------------------------------------


def test_a_str_becomes_one_text_part_in_each_version() -> None:
    v1 = V1.message("hi")
    assert v1["role"] == "ROLE_USER" and v1["parts"] == [{"text": "hi"}] and v1["messageId"]
    assert "kind" not in v1
    old = V03.message("hi", context_id="c", task_id="t")
    assert old["role"] == "user" and old["parts"] == [{"kind": "text", "text": "hi"}] and old["kind"] == "message"
    assert (old["contextId"], old["taskId"]) == ("c", "t")
    assert V1.message("a")["messageId"] != V1.message("a")["messageId"]


def test_a_message_dict_keeps_what_it_has() -> None:
    given = {"role": "ROLE_AGENT", "parts": [{"data": {"x": 1}}], "messageId": "m", "taskId": "t"}
    built = V1.message(given, task_id="t")
    assert built == given and built is not given
    with pytest.raises(ValueError, match="taskId"):
        V1.message(given, task_id="other")
    with pytest.raises(ValueError, match="parts"):
        V1.message({"role": "ROLE_USER"})
    with pytest.raises(TypeError):
        V1.message(b"bytes")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        V1.message("hi", context_id="")


def test_send_params_say_how_to_wait_in_each_version() -> None:
    message = V1.message("hi")
    assert V1.send_params(message, return_immediately=False, tenant=None) == {"message": message}
    assert V1.send_params(message, return_immediately=True, tenant="acme") == {
        "message": message,
        "configuration": {"returnImmediately": True},
        "tenant": "acme",
    }
    assert V03.send_params(message, return_immediately=False, tenant="acme")["configuration"] == {"blocking": True}
    assert "tenant" not in V03.send_params(message, return_immediately=True, tenant="acme")


def test_list_params_are_camel_case_with_the_state_spelled_for_the_version() -> None:
    filters = {"context_id": "c", "status": "input-required", "page_size": 5, "includeArtifacts": True, "x": None}
    assert list_params(V1, filters, None) == {
        "contextId": "c",
        "status": "TASK_STATE_INPUT_REQUIRED",
        "pageSize": 5,
        "includeArtifacts": True,
    }
    assert list_params(V1, {"status": "TASK_STATE_WORKING"}, "t") == {"status": "TASK_STATE_WORKING", "tenant": "t"}
    assert V1.state_name("unknown") == "TASK_STATE_UNSPECIFIED"
    with pytest.raises(ValueError):
        list_params(V1, {"status": "asleep"}, None)


# -- results and events ------------------------------------------------------------------------

TASK_V1: Dict[str, Any] = {
    "id": "t1",
    "contextId": "c1",
    "status": {"state": "TASK_STATE_COMPLETED", "message": {"role": "ROLE_AGENT", "parts": [{"text": "ok"}]}},
    "artifacts": [{"artifactId": "a", "parts": [{"text": "one"}, {"data": {}}]}, {"artifactId": "b", "parts": []}],
}
TASK_V03: Dict[str, Any] = {
    "kind": "task",
    "id": "t1",
    "status": {"state": "input-required", "message": {"kind": "message", "parts": [{"kind": "text", "text": "?"}]}},
}


def test_results_are_unwrapped_as_the_agent_spelled_them() -> None:
    assert V1.unwrap({"task": TASK_V1}) is TASK_V1
    assert V1.unwrap({"statusUpdate": {"taskId": "t"}}) == {"taskId": "t"}
    assert V03.unwrap(TASK_V03) is TASK_V03
    for bad in ({}, {"task": TASK_V1, "message": {}}, {"task": "x"}, ["task"]):
        with pytest.raises(ProtocolError):
            V1.unwrap(bad)
    with pytest.raises(ProtocolError):
        V03.unwrap("text")


def test_kinds_states_and_text_of_both_versions() -> None:
    assert [event_kind(TASK_V1), state_of(TASK_V1), text_of(TASK_V1), is_done(TASK_V1)] == [
        "task",
        "completed",
        "one",
        True,
    ]
    assert [event_kind(TASK_V03), state_of(TASK_V03), text_of(TASK_V03)] == ["task", "input-required", "?"]
    status = {"taskId": "t", "contextId": "c", "status": {"state": "TASK_STATE_WORKING"}}
    artifact = {"taskId": "t", "contextId": "c", "artifact": {"parts": [{"text": "x"}, {"text": "y"}]}}
    message = {"messageId": "m", "role": "ROLE_AGENT", "parts": [{"text": "hi"}]}
    assert [event_kind(e) for e in (status, artifact, message)] == ["status-update", "artifact-update", "message"]
    assert [text_of(artifact), text_of(message), text_of(status), state_of(message)] == ["xy", "hi", "", None]
    with pytest.raises(ProtocolError):
        event_kind({"what": "ever"})


def test_a_stream_ends_at_a_message_or_a_terminal_or_interrupted_state() -> None:
    def update(state: str, **extra: Any) -> Dict[str, Any]:
        return {"taskId": "t", "status": {"state": state}, **extra}

    assert [ends_stream(update(s)) for s in ("TASK_STATE_WORKING", "TASK_STATE_SUBMITTED")] == [False, False]
    assert all(ends_stream(update(s)) for s in ("TASK_STATE_AUTH_REQUIRED", "canceled", "rejected", "failed"))
    assert ends_stream(update("working", final=True))  # v0.3 says so
    assert ends_stream({"messageId": "m", "parts": []})
    assert not ends_stream({"taskId": "t", "artifact": {"parts": []}})
    assert normalize_state("TASK_STATE_UNSPECIFIED") == "unknown" and normalize_state(None) == "unknown"


# -- the card ----------------------------------------------------------------------------------


def test_the_card_url_of_a_base_url_or_a_card_url() -> None:
    assert card_url("http://127.0.0.1:8000") == "http://127.0.0.1:8000/.well-known/agent-card.json"
    assert card_url("https://h/agents/one/") == "https://h/agents/one/.well-known/agent-card.json"
    assert card_url("https://h/cards/agent.json?v=2#x") == "https://h/cards/agent.json?v=2"
    for bad in ("127.0.0.1:8000", "file:///card.json", "http://", "http://h:port"):
        with pytest.raises(ValueError):
            card_url(bad)


def _entry(url: str, version: str, binding: str = "JSONRPC", **extra: Any) -> Dict[str, Any]:
    return {"url": url, "protocolBinding": binding, "protocolVersion": version, **extra}


def test_the_first_jsonrpc_interface_of_1_0_wins_then_0_3() -> None:
    card = {
        "supportedInterfaces": [
            _entry("https://h/grpc", "1.0", "GRPC"),
            _entry("https://h/old", "0.3"),
            _entry("https://h/v1", "1.0.2", tenant="acme"),
            _entry("https://h/v1b", "1.0"),
        ]
    }
    chosen = choose_interface(card, "https://h/.well-known/agent-card.json")
    assert (chosen.url, chosen.dialect, chosen.tenant) == ("https://h/v1", V1, "acme")
    old = choose_interface({"supportedInterfaces": [_entry("/rpc", "0.3")]}, "https://h/x/card.json")
    assert (old.url, old.dialect) == ("https://h/rpc", V03)


def test_a_v03_card_is_told_by_its_own_fields() -> None:
    card = {"url": "http://h/a2a", "protocolVersion": "0.3.0"}
    assert choose_interface(card, "http://h/card.json").dialect is V03
    grpc_first = {
        "url": "h:50051",
        "preferredTransport": "GRPC",
        "additionalInterfaces": [{"url": "http://h/jsonrpc", "transport": "JSONRPC"}],
    }
    assert choose_interface(grpc_first, "http://h/card.json").url == "http://h/jsonrpc"


def test_a_card_without_an_interface_this_client_speaks_is_refused() -> None:
    for card in (
        {"name": "x"},
        {"supportedInterfaces": [_entry("https://h/v2", "2.0"), _entry("https://h/g", "1.0", "GRPC")]},
        {"supportedInterfaces": [_entry("", "1.0")]},
        {"supportedInterfaces": [_entry("ftp://h/rpc", "1.0")]},
        {"url": "h:1", "preferredTransport": "GRPC"},
    ):
        with pytest.raises(ProtocolError):
            choose_interface(card, "https://h/card.json")


def test_credentials_go_to_the_cards_origin_and_the_allowed_ones_only() -> None:
    origins = Origins.of("https://agent.example/.well-known/agent-card.json", ["http://127.0.0.1:9000/x"])
    assert origins.trust("https://AGENT.example:443/rpc")
    assert origins.trust("http://127.0.0.1:9000/rpc")
    for other in (
        "http://agent.example/rpc",  # another scheme
        "https://agent.example:8443/rpc",  # another port
        "https://evil.example/rpc",
        "https://agent.example.evil.example/rpc",
        "http://127.0.0.1:9001/rpc",
    ):
        assert not origins.trust(other), other
    assert origin_of("http://u:p@H:80/p?q") == ("http", "h", 80)
    assert Origins.of("https://a/card.json", "https://b").trust("https://b/rpc")  # one origin as a str
    with pytest.raises(ValueError):
        Origins.of("https://a/card.json", ["b.example"])


# -- errors ------------------------------------------------------------------------------------


def test_a2as_codes_become_their_classes_and_nothing_else_does() -> None:
    assert sorted(A2A_ERRORS) == list(range(-32009, -32000))
    refused = error_from_a2a(error_from_response({"code": -32001, "message": "gone", "data": [{"@type": "x"}]}))
    assert type(refused) is TaskNotFound and isinstance(refused, (A2aError, RemoteError, LookupError))
    assert (refused.code, refused.message, refused.data) == (-32001, "gone", [{"@type": "x"}])
    assert type(error_from_a2a(error_from_response({"code": -32009, "message": ""}))) is VersionNotSupported
    assert error_from_a2a(error_from_response({"code": -32009, "message": ""})).message == "Version not supported"
    other = error_from_response({"code": -32050, "message": "x"})
    assert error_from_a2a(other) is other
    local = RequestTimeout("m", 1, 1.0)  # -32001 too, but ours: never turned
    assert error_from_a2a(local) is local
    standard = error_from_response({"code": -32601, "message": "no"})
    assert error_from_a2a(standard) is standard


def test_a2a_errors_are_built_by_message_and_data_and_pickle() -> None:
    error = UnsupportedOperation("not now", data={"why": 1})
    assert (error.code, error.message, error.data) == (-32004, "not now", {"why": 1})
    assert UnsupportedOperation().message == "Unsupported operation"
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is UnsupportedOperation and (copy.code, copy.message, copy.data) == (
        -32004,
        "not now",
        {"why": 1},
    )
