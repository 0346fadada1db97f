"""What an MCP client offers its server (jsonrpc_threads/mcp/client_features.py), pure parts.

End to end, against real servers: tests/test_mcp_sdk.py and tests/test_mcp_everything.py.
"""

from __future__ import annotations

import logging
from typing import Any, Dict, List

import pytest

from jsonrpc_threads.mcp.client_features import ClientFeatures


def test_a_capability_is_declared_only_when_its_handler_is_given() -> None:
    assert ClientFeatures().capabilities() == {}
    assert ClientFeatures(on_log=print, on_tools_changed=lambda: None).capabilities() == {}
    both = ClientFeatures(roots=[], on_sampling=lambda params: {}, on_elicitation=lambda params: {})
    assert both.capabilities() == {"roots": {"listChanged": True}, "sampling": {}, "elicitation": {"form": {}}}


def test_roots_are_uris_or_dicts_and_a_callable_is_asked_each_time() -> None:
    assert ClientFeatures(roots=["file:///a", {"uri": "file:///b", "name": "B"}]).answer_roots({}) == {
        "roots": [{"uri": "file:///a"}, {"uri": "file:///b", "name": "B"}]
    }
    current: List[str] = []
    features = ClientFeatures(roots=lambda: current)
    assert features.answer_roots(None) == {"roots": []}
    current.append("file:///later")
    assert features.answer_roots(None) == {"roots": [{"uri": "file:///later"}]}


def test_an_accepted_elicitation_gets_the_schemas_defaults_for_what_it_left_out() -> None:
    schema = {"properties": {"name": {"type": "string", "default": "ada"}, "age": {"type": "number", "default": 36}}}
    params = {"message": "who?", "requestedSchema": schema}

    def accept(params: Dict[str, Any]) -> Dict[str, Any]:
        return {"action": "accept", "content": {"age": 7}}

    def decline(params: Dict[str, Any]) -> Dict[str, Any]:
        return {"action": "decline"}

    assert ClientFeatures(on_elicitation=accept).answer_elicitation(params) == {
        "action": "accept",
        "content": {"age": 7, "name": "ada"},
    }
    assert ClientFeatures(on_elicitation=decline).answer_elicitation(params) == {"action": "decline"}


def test_server_log_messages_go_to_on_log_or_to_the_server_log_logger(caplog: pytest.LogCaptureFixture) -> None:
    seen: List[Any] = []
    ClientFeatures(on_log=seen.append).log_message({"level": "error", "data": "x"})
    assert seen == [{"level": "error", "data": "x"}]
    with caplog.at_level(logging.DEBUG, logger="jsonrpc_threads.mcp.server_log"):
        ClientFeatures().log_message({"level": "alert", "logger": "db", "data": "disk full"})
        ClientFeatures().log_message("not a dict")
    records = [r for r in caplog.records if r.name == "jsonrpc_threads.mcp.server_log"]
    assert [(r.levelno, r.getMessage()) for r in records] == [(logging.CRITICAL, "[db] disk full")]
