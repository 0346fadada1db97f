"""The pure parts of the stateless era (MCP 2026-07-28): ``_meta``, result types, headers, caching, input rounds.

No I/O here: these modules turn what is sent and received into decisions,
and are tested as functions.  The same code against real servers is in
tests/test_mcp_sdk.py (both eras) and in the conformance suite.
"""

from __future__ import annotations

import base64
import pickle
from typing import Any, Dict, List

import pytest

from jsonrpc_threads.errors import InvalidParams, ProtocolError, RemoteError
from jsonrpc_threads.mcp import (
    HeaderMismatch,
    MissingClientCapability,
    UnsupportedProtocolVersion,
    error_from_mcp,
    protocol,
)
from jsonrpc_threads.mcp.cache import ResultCache
from jsonrpc_threads.mcp.client_features import ClientFeatures
from jsonrpc_threads.mcp.http_headers import (
    NO_HEADERS,
    encode_value,
    header_plan,
    message_headers,
    param_text,
)
from jsonrpc_threads.mcp.mrtr import answer_input_requests, retry_params

# -- _meta, versions, result types ------------------------------------------------------------


def test_every_request_gets_the_protocol_meta_and_keeps_its_own() -> None:
    meta = protocol.request_meta("2026-07-28", {"roots": {}}, {"name": "c", "version": "1"}, "error")
    params = protocol.with_meta({"name": "t", "_meta": {"progressToken": 7}}, meta)
    assert params["_meta"] == {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"roots": {}},
        "io.modelcontextprotocol/clientInfo": {"name": "c", "version": "1"},
        "io.modelcontextprotocol/logLevel": "error",
        "progressToken": 7,
    }
    assert params["name"] == "t"
    assert protocol.with_meta(None, {"k": 1}) == {"_meta": {"k": 1}}


def test_result_type_is_complete_when_absent_and_must_be_a_string() -> None:
    assert protocol.result_type({"content": []}) == "complete"
    assert protocol.result_type({"resultType": "input_required"}) == "input_required"
    with pytest.raises(ProtocolError):
        protocol.result_type({"resultType": 3})
    with pytest.raises(ProtocolError):
        protocol.result_type(["not", "an", "object"])


def test_only_mcps_own_codes_from_a_peer_identify_a_stateless_server() -> None:
    assert protocol.is_modern_error(RemoteError(-32022, "x", {"supported": ["2026-07-28"]}))
    assert protocol.is_modern_error(RemoteError(-32020, "x"))
    assert not protocol.is_modern_error(RemoteError(-32601, "Method not found"))
    assert not protocol.is_modern_error(RemoteError(-32000, "Bad Request: no session"))


def test_version_choice_and_the_servers_identity() -> None:
    assert protocol.choose_version(["2025-11-25", "2026-07-28"]) == "2026-07-28"
    assert protocol.choose_version(["2099-01-01"]) is None
    assert protocol.discover_versions({"supportedVersions": ["2026-07-28", 5]}) == ("2026-07-28",)
    assert protocol.discover_versions({}) == ()  # a server answering {}: no discover result
    meta_form = {"_meta": {"io.modelcontextprotocol/serverInfo": {"name": "a", "version": "1"}}}
    assert protocol.server_info_of(meta_form) == {"name": "a", "version": "1"}
    assert protocol.server_info_of({"serverInfo": {"name": "b", "version": "2"}}) == {"name": "b", "version": "2"}
    assert protocol.stateless_capabilities({"roots": {"listChanged": True}}, {"x/y": {}}) == {
        "roots": {},
        "extensions": {"x/y": {}},
    }


def test_mcp_codes_become_their_classes_and_pickle() -> None:
    unsupported = error_from_mcp(RemoteError(-32022, "Unsupported", {"supported": ["2026-07-28"], "requested": "1"}))
    assert isinstance(unsupported, UnsupportedProtocolVersion) and isinstance(unsupported, RemoteError)
    assert unsupported.supported == ("2026-07-28",) and unsupported.requested == "1"
    missing = error_from_mcp(RemoteError(-32021, "Missing", {"requiredCapabilities": {"roots": {}}}))
    assert isinstance(missing, MissingClientCapability) and missing.required_capabilities == {"roots": {}}
    assert isinstance(error_from_mcp(RemoteError(-32020, "Mismatch")), HeaderMismatch)
    plain = RemoteError(-32601, "Method not found")
    assert error_from_mcp(plain) is plain
    copied = pickle.loads(pickle.dumps(unsupported))
    assert type(copied) is UnsupportedProtocolVersion and copied.supported == ("2026-07-28",)


# -- headers of the 2026-07-28 transport -------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "encoded"),
    [
        ("us-west1", "us-west1"),
        ("us west 1", "us west 1"),
        ("", ""),
        ("Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="),
        (" padded ", "=?base64?IHBhZGRlZCA=?="),
        ("line1\nline2", "=?base64?bGluZTEKbGluZTI=?="),
        ("\tindented", "=?base64?" + base64.b64encode(b"\tindented").decode() + "?="),
        ("=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="),
    ],
)
def test_values_that_http_cannot_carry_are_base64_sentinels(value: str, encoded: str) -> None:
    assert encode_value(value) == encoded


def test_parameter_values_become_header_text() -> None:
    assert param_text("x") == "x"
    assert param_text(42) == "42" and param_text(-7) == "-7" and param_text(42.0) == "42"
    assert param_text(True) == "true" and param_text(False) == "false"
    assert param_text(None) is None
    with pytest.raises(InvalidParams):
        param_text(2**53)
    with pytest.raises(InvalidParams):
        param_text({"an": "object"})


def tool_schema(properties: Dict[str, Any]) -> Dict[str, Any]:
    return {"type": "object", "properties": properties}


def test_a_valid_plan_follows_properties_chains() -> None:
    plan, problem = header_plan(
        tool_schema(
            {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "limits": {"type": "object", "properties": {"max": {"type": "integer", "x-mcp-header": "Max"}}},
                "maybe": {"type": ["boolean", "null"], "x-mcp-header": "Maybe"},
                "x-mcp-header": {"type": "string"},  # a property of that name is no annotation
                "example": {"type": "string", "default": {"x-mcp-header": "data, not schema"}},
            }
        )
    )
    assert problem is None
    assert set(plan.params) == {(("region",), "Region"), (("limits", "max"), "Max"), (("maybe",), "Maybe")}
    assert header_plan({"type": "object"}) == (NO_HEADERS, None)


@pytest.mark.parametrize(
    ("schema", "reason"),
    [
        (tool_schema({"v": {"type": "string", "x-mcp-header": ""}}), "empty"),
        (tool_schema({"v": {"type": "string", "x-mcp-header": "My Region"}}), "token"),
        (tool_schema({"v": {"type": "string", "x-mcp-header": "Region:Primary"}}), "token"),
        (tool_schema({"v": {"type": "string", "x-mcp-header": "Région"}}), "token"),
        (tool_schema({"v": {"type": "string", "x-mcp-header": "Region\t1"}}), "token"),
        (tool_schema({"v": {"type": "object", "x-mcp-header": "Data"}}), "not a string"),
        (tool_schema({"v": {"type": "array", "items": {}, "x-mcp-header": "Items"}}), "not a string"),
        (tool_schema({"v": {"type": "null", "x-mcp-header": "Nil"}}), "not a string"),
        (tool_schema({"v": {"type": "number", "x-mcp-header": "Num"}}), "not a string"),
        (
            tool_schema(
                {"a": {"type": "string", "x-mcp-header": "MyField"}, "b": {"type": "string", "x-mcp-header": "myfield"}}
            ),
            "repeats",
        ),
        (tool_schema({"v": {"type": "array", "items": {"type": "string", "x-mcp-header": "In"}}}), "reachable"),
        ({"type": "object", "$defs": {"d": {"type": "string", "x-mcp-header": "D"}}}, "reachable"),
        ({"type": "object", "anyOf": [{"properties": {"v": {"type": "string", "x-mcp-header": "V"}}}]}, "reachable"),
    ],
)
def test_invalid_annotations_make_the_tool_invalid(schema: Dict[str, Any], reason: str) -> None:
    plan, problem = header_plan(schema)
    assert plan == NO_HEADERS
    assert problem is not None and reason in problem


def test_message_headers_mirror_method_name_and_designated_arguments() -> None:
    plan, _ = header_plan(
        tool_schema(
            {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "verbose": {"type": "boolean", "x-mcp-header": "Verbose"},
                "greeting": {"type": "string", "x-mcp-header": "Greeting"},
                "query": {"type": "string"},
            }
        )
    )
    params = {
        "name": "execute_sql",
        "arguments": {"region": "us-west1", "verbose": None, "greeting": "héllo", "query": "q"},
    }
    assert message_headers("2026-07-28", "tools/call", params, plan) == {
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call",
        "Mcp-Name": "execute_sql",
        "Mcp-Param-Region": "us-west1",
        "Mcp-Param-Greeting": encode_value("héllo"),
    }
    assert message_headers("2026-07-28", "resources/read", {"uri": "file:///a b"})["Mcp-Name"] == "file:///a b"
    assert message_headers("2026-07-28", "prompts/get", {"name": "p"})["Mcp-Name"] == "p"
    assert message_headers("2026-07-28", "tasks/get", {"taskId": "t-1"})["Mcp-Name"] == "t-1"
    assert "Mcp-Name" not in message_headers("2026-07-28", "tools/list", {})


# -- caching hints ------------------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_result_is_reused_while_fresh_and_never_shared() -> None:
    clock = Clock()
    cache = ResultCache(clock)
    cache.put("tools/list", None, {"tools": [{"name": "a"}], "ttlMs": 1000, "cacheScope": "private"})
    first = cache.get("tools/list", {"_meta": {"anything": 1}})  # _meta is no part of the key
    assert first == {"tools": [{"name": "a"}], "ttlMs": 1000, "cacheScope": "private"}
    first["tools"].append({"name": "mine"})
    assert cache.get("tools/list", None)["tools"] == [{"name": "a"}]  # a copy each time
    assert cache.get("tools/list", {"cursor": "2"}) is None  # another page, another key
    clock.now += 1.0
    assert cache.get("tools/list", None) is None  # stale


def test_what_is_never_cached() -> None:
    cache = ResultCache(Clock())
    cache.put("tools/list", None, {"tools": [], "ttlMs": 0})  # immediately stale
    cache.put("prompts/list", None, {"prompts": []})  # no hint
    cache.put("resources/list", None, {"resources": [], "ttlMs": -5})
    cache.put("tools/call", None, {"content": [], "ttlMs": 1000})  # not a cacheable method
    cache.put("resources/read", {"uri": "u", "requestState": "s"}, {"contents": [], "ttlMs": 1000})
    cache.put("resources/read", {"uri": "v"}, {"resultType": "input_required", "ttlMs": 1000})
    assert len(cache) == 0


def test_notifications_make_entries_stale() -> None:
    cache = ResultCache(Clock())
    for uri in ("a", "b"):
        cache.put("resources/read", {"uri": uri}, {"contents": [uri], "ttlMs": 10_000})
    cache.put("tools/list", None, {"tools": [], "ttlMs": 10_000})
    cache.invalidate(("resources/read",), "a")
    assert cache.get("resources/read", {"uri": "a"}) is None
    assert cache.get("resources/read", {"uri": "b"}) == {"contents": ["b"], "ttlMs": 10_000}
    cache.invalidate(("tools/list",))
    assert cache.get("tools/list", None) is None


# -- input rounds ----------------------------------------------------------------------------------


def test_input_requests_are_answered_by_the_handlers_of_the_session_era() -> None:
    calls: List[str] = []

    def sampling(params: Dict[str, Any]) -> Dict[str, Any]:
        calls.append("sampling")
        return {"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "m"}

    def elicitation(params: Dict[str, Any]) -> Dict[str, Any]:
        calls.append("elicitation")
        return {"action": "accept", "content": {}}

    features = ClientFeatures(roots=["file:///r"], on_sampling=sampling, on_elicitation=elicitation)
    schema = {"type": "object", "properties": {"n": {"type": "integer", "default": 3}}}
    responses = answer_input_requests(
        features,
        {
            "capital": {"method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 5}},
            "form": {"method": "elicitation/create", "params": {"message": "?", "requestedSchema": schema}},
            "where": {"method": "roots/list"},
        },
    )
    assert responses["capital"]["content"]["text"] == "Paris"
    assert responses["form"] == {"action": "accept", "content": {"n": 3}}  # the schema's default filled in
    assert responses["where"] == {"roots": [{"uri": "file:///r"}]}
    assert calls == ["sampling", "elicitation"]


def test_an_input_request_without_its_handler_or_unknown_is_a_protocol_error() -> None:
    with pytest.raises(ProtocolError, match="elicitation"):
        answer_input_requests(ClientFeatures(), {"k": {"method": "elicitation/create", "params": {}}})
    with pytest.raises(ProtocolError, match="tools/list"):
        answer_input_requests(ClientFeatures(), {"k": {"method": "tools/list"}})
    with pytest.raises(ProtocolError):
        answer_input_requests(ClientFeatures(), ["not", "a", "map"])


def test_the_retry_echoes_request_state_exactly_or_not_at_all() -> None:
    original = {"name": "t", "arguments": {}, "inputResponses": {"old": 1}, "requestState": "old"}
    state = '{"nonce": "é", "spaces": [ 1, 2 ]}'
    retried = retry_params(original, {"k": {"action": "accept"}}, state)
    assert retried == {
        "name": "t",
        "arguments": {},
        "inputResponses": {"k": {"action": "accept"}},
        "requestState": state,
    }
    assert retry_params({"name": "t"}, {"k": 1}, None) == {"name": "t", "inputResponses": {"k": 1}}
    assert retry_params({"name": "t"}, {}, None) == {"name": "t"}
    with pytest.raises(ProtocolError):
        retry_params({"name": "t"}, {}, {"not": "a string"})
