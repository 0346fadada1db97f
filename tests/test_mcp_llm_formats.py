"""Tool lists, tool calls and tool messages in the LLM APIs' formats (jsonrpc_threads/mcp/llm_formats.py).

Pure: no server.  tests/test_registry.py runs the same formats end to end.
"""

from __future__ import annotations

from typing import Any, Dict

import pytest

from jsonrpc_threads.errors import (
    ConfigError,
    HttpConnectionError,
    RemoteError,
    RequestTimeout,
    TransportClosed,
)
from jsonrpc_threads.mcp import ServerUnavailable, UnknownTool
from jsonrpc_threads.mcp.llm_formats import (
    ANTHROPIC,
    OPENAI,
    RESPONSES,
    ToolCall,
    anthropic_tool,
    error_message,
    explain_failure,
    explain_lookup,
    openai_tool,
    parse_tool_call,
    registry_tool,
    result_text,
    tool_message,
)

IMAGE = {"type": "image", "data": "AAAA", "mimeType": "image/png"}


# -- tool lists -----------------------------------------------------------------------


def test_a_tool_in_each_list_format() -> None:
    tool = registry_tool("mcp__s__add", "s", {"name": "add", "description": "Add.", "inputSchema": {"type": "object"}})
    assert tool["inputSchema"] == {"type": "object", "properties": {}}  # what the APIs require
    assert openai_tool(tool) == {
        "type": "function",
        "function": {"name": "mcp__s__add", "description": "Add.", "parameters": {"type": "object", "properties": {}}},
    }
    assert anthropic_tool(tool) == {
        "name": "mcp__s__add",
        "description": "Add.",
        "input_schema": {"type": "object", "properties": {}},
    }


def test_a_tool_without_description_or_schema_gets_its_title_and_an_empty_object_schema() -> None:
    definition: Any = {"name": "t", "title": "The T", "inputSchema": "nonsense"}
    tool = registry_tool("mcp__s__t", "s", definition)
    assert (tool["description"], tool["inputSchema"], tool["tool"]) == (
        "The T",
        {"type": "object", "properties": {}},
        "t",
    )
    assert tool["definition"] is definition


# -- tool calls -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        (
            {"id": "c1", "type": "function", "function": {"name": "n", "arguments": '{"a": 1}'}},
            ToolCall(OPENAI, "c1", "n", {"a": 1}),
        ),
        ({"id": "c2", "function": {"name": "n", "arguments": ""}}, ToolCall(OPENAI, "c2", "n", {})),
        ({"type": "tool_use", "id": "t1", "name": "n", "input": {"a": 1}}, ToolCall(ANTHROPIC, "t1", "n", {"a": 1})),
        ({"id": "t2", "name": "n", "input": None}, ToolCall(ANTHROPIC, "t2", "n", {})),
        (
            {"type": "function_call", "call_id": "f1", "name": "n", "arguments": "{}"},
            ToolCall(RESPONSES, "f1", "n", {}),
        ),
    ],
)
def test_each_call_format_is_read(call: Dict[str, Any], expected: ToolCall) -> None:
    assert parse_tool_call(call) == expected


def test_an_sdk_object_is_read_through_model_dump() -> None:
    class Call:
        def model_dump(self) -> Dict[str, Any]:
            return {"type": "tool_use", "id": "t", "name": "n", "input": {}}

    class Broken:
        def model_dump(self) -> Dict[str, Any]:
            raise RuntimeError("no")

    assert parse_tool_call(Call()) == ToolCall(ANTHROPIC, "t", "n", {})
    assert "must be an object, not Broken" in (parse_tool_call(Broken()).problem or "")


@pytest.mark.parametrize(
    ("call", "problem"),
    [
        ({"id": "c", "function": {"name": "n", "arguments": "{no"}}, "not valid JSON"),
        ({"id": "c", "function": {"name": "n", "arguments": "[1]"}}, "must be a JSON object, not list"),
        ({"type": "function", "id": "c"}, "no 'function' object"),
        ({"type": "tool_use", "id": "t", "input": {}}, "names no tool"),
        (["not", "a", "call"], "must be an object, not list"),
    ],
)
def test_a_call_that_cannot_be_made_says_why(call: Any, problem: str) -> None:
    parsed = parse_tool_call(call)
    assert parsed.arguments is None and problem in (parsed.problem or "")


# -- tool messages --------------------------------------------------------------------


def test_each_message_format_answers_its_call() -> None:
    result = {"content": [{"type": "text", "text": "42"}, IMAGE]}
    text = result_text(result)
    assert tool_message(ToolCall(OPENAI, "c", "n", {}), text=text, is_error=False, result=result) == {
        "role": "tool",
        "tool_call_id": "c",
        "content": "42\n[image: image/png, about 3 bytes]",
    }
    assert tool_message(ToolCall(RESPONSES, "f", "n", {}), text=text, is_error=False, result=result) == {
        "type": "function_call_output",
        "call_id": "f",
        "output": "42\n[image: image/png, about 3 bytes]",
    }
    anthropic = tool_message(ToolCall(ANTHROPIC, "t", "n", {}), text=text, is_error=False, result=result)
    assert anthropic == {
        "type": "tool_result",
        "tool_use_id": "t",
        "content": [
            {"type": "text", "text": "42"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}},
        ],
    }


def test_an_error_result_says_error_in_every_format() -> None:
    failed = {"content": [{"type": "text", "text": "it broke"}], "isError": True}
    silent = {"content": [], "isError": True}
    openai = ToolCall(OPENAI, "c", "n", {})
    anthropic = ToolCall(ANTHROPIC, "t", "n", {})
    assert tool_message(openai, text="it broke", is_error=True, result=failed)["content"] == "Error: it broke"
    assert tool_message(openai, text="", is_error=True, result=silent)["content"].startswith("Error: the tool failed")
    message = tool_message(anthropic, text="", is_error=True, result=silent)
    assert message["is_error"] is True and message["content"][0]["text"].startswith("Error: the tool failed")
    assert error_message(anthropic, "no such tool.")["content"] == [{"type": "text", "text": "Error: no such tool."}]


def test_result_text_describes_every_kind_of_block() -> None:
    result = {
        "content": [
            {"type": "text", "text": "first"},
            {"type": "image", "data": "AAAA", "mimeType": "image/png"},
            {"type": "resource", "resource": {"uri": "file:///a", "text": "inline"}},
            {"type": "resource_link", "uri": "file:///b", "name": "b"},
        ]
    }
    assert result_text(result) == "first\n[image: image/png, about 3 bytes]\ninline\n[resource link: file:///b b]"
    assert result_text({"content": [], "structuredContent": {"x": 1}}) == '{"x": 1}'


# -- explanations ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "closed", "expected"),
    [
        (RequestTimeout("tools/call", 1, 0.5), False, "did not finish within 0.5s"),
        (ServerUnavailable("s", "exit code 3"), False, "is unavailable: server 's' failed to start: exit code 3."),
        (ConfigError("server 's': bad"), False, "is unavailable: server 's': bad."),
        (TransportClosed("gone", returncode=3), False, "stopped while running tool 't' (exit code 3)"),
        (TransportClosed("ToolRegistry closed"), True, "was not run: the tool registry is closed."),
        (HttpConnectionError("refused"), False, "could not be reached for tool 't' on server 's': refused."),
        (RemoteError(-32050, "no way"), False, "refused the call to tool 't' on server 's': no way (code -32050)."),
    ],
)
def test_every_failure_is_explained_for_the_model(error: Any, closed: bool, expected: str) -> None:
    assert expected in explain_failure("s", "t", error, registry_closed=closed)


def test_lookup_failures_are_explained_for_the_model() -> None:
    assert explain_lookup("x", UnknownTool("x")) == "unknown tool 'x'; use one of the tools offered."
    assert explain_lookup("x", ServerUnavailable("s", "why")).startswith("tool 'x' is unavailable: server 's' failed")
