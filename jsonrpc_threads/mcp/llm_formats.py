"""What a model sees and sends: tool lists, tool calls and tool messages in the LLM APIs' formats.

Pure functions, no I/O and no state.  The registry turns servers' tools into
``RegistryTool`` (the plain format), and this module turns those into
the formats of the APIs and back:

- tool lists: ``openai_tool`` (chat completions function calling) and
  ``anthropic_tool`` (the Messages API); a tool that MCP Apps marks for
  the app alone (``model_visible``) is never among them;
- tool calls, in any of three formats (``parse_tool_call``): OpenAI chat
  ``{"id", "type": "function", "function": {"name", "arguments": "<JSON>"}}``,
  Anthropic ``{"type": "tool_use", "id", "name", "input": {...}}`` and OpenAI
  Responses ``{"type": "function_call", "call_id", "name", "arguments"}``; a
  call that cannot be made says why in ``ToolCall.problem``;
- tool messages, in the format of the call they answer
  (``tool_message``): a ``tools/call`` result's content as text
  (``result_text``) or as Anthropic blocks, and every failure as a
  message whose text starts with ``Error:`` (``explain_failure``).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Tuple, TypedDict

from ..errors import ConfigError, HttpError, JsonRpcError, RequestTimeout, TransportClosed
from .errors import ServerUnavailable, UnknownTool
from .types import Tool

logger = logging.getLogger(__name__)

OPENAI = "openai"
ANTHROPIC = "anthropic"
RESPONSES = "responses"


class RegistryTool(TypedDict):
    """A tool as the registry offers it.

    Keys:
        name: the namespaced name a model sees and calls.
        server: the server's name in the configuration.
        tool: the tool's name as the server spells it.
        description: the tool's description (its title when it has none; may be empty).
        inputSchema: the JSON Schema of its arguments (an object schema).
        definition: the server's descriptor, untouched.
    """

    name: str
    server: str
    tool: str
    description: str
    inputSchema: Dict[str, Any]
    definition: Tool


# -- tool lists -----------------------------------------------------------------------

#: MCP Apps (``io.modelcontextprotocol/ui``): who may call a tool, in ``_meta.ui.visibility``.
MODEL_AUDIENCE = "model"


def model_visible(tool: Mapping[str, Any]) -> bool:
    """False for a tool that MCP Apps marks for the app alone: ``_meta.ui.visibility`` without ``"model"``.

    No ``visibility`` (or an empty one) means both audiences, as the
    extension says; a malformed one is taken as no declaration.
    """
    meta = tool.get("_meta")
    ui = meta.get("ui") if isinstance(meta, Mapping) else None
    visibility = ui.get("visibility") if isinstance(ui, Mapping) else None
    if not isinstance(visibility, list) or not visibility:
        return True
    return MODEL_AUDIENCE in visibility


def _object_schema(schema: Any) -> Dict[str, Any]:
    """A tool's ``inputSchema`` as the LLM APIs take it: the schema as the server wrote it.

    JSON Schema 2020-12 passes through untouched, at every depth: ``$schema``,
    ``$id``, ``$defs``, ``$ref`` (never dereferenced: a network ``$ref`` is
    never fetched), ``$anchor``, ``additionalProperties``, ``allOf`` /
    ``anyOf`` / ``oneOf`` / ``not``, ``if`` / ``then`` / ``else``, and
    annotations such as ``x-mcp-header``.  The one rewrite is the rule both
    vendors state: the root is an object schema (OpenAI's ``parameters``,
    Anthropic's ``input_schema``), so a root without ``type`` gets
    ``"type": "object"``, an object root without ``properties`` gets
    ``"properties": {}``, and a missing schema becomes the empty object schema.
    """
    if not isinstance(schema, dict):
        return {"type": "object", "properties": {}}
    result: Dict[str, Any] = dict(schema)
    result.setdefault("type", "object")
    if result.get("type") == "object":
        result.setdefault("properties", {})
    return result


def registry_tool(name: str, server: str, tool: Tool) -> RegistryTool:
    """The plain descriptor of ``tool`` of ``server``, offered as ``name``."""
    description = tool.get("description") or tool.get("title") or ""
    return {
        "name": name,
        "server": server,
        "tool": tool["name"],
        "description": description if isinstance(description, str) else "",
        "inputSchema": _object_schema(tool.get("inputSchema")),
        "definition": tool,
    }


def openai_tool(tool: RegistryTool) -> Dict[str, Any]:
    """``{"type": "function", "function": {"name", "description", "parameters"}}``."""
    return {
        "type": "function",
        "function": {"name": tool["name"], "description": tool["description"], "parameters": tool["inputSchema"]},
    }


def anthropic_tool(tool: RegistryTool) -> Dict[str, Any]:
    """``{"name", "description", "input_schema"}``."""
    return {"name": tool["name"], "description": tool["description"], "input_schema": tool["inputSchema"]}


# -- tool calls -----------------------------------------------------------------------


@dataclass(frozen=True)
class ToolCall:
    """One tool call of a model, whatever its format.

    Attributes:
        style: ``"openai"``, ``"anthropic"`` or ``"responses"``: the format of
            the call, and of the message that answers it.
        call_id: the id to quote in the answer.
        name: the tool's name as the model sent it ("" when it sent none).
        arguments: the arguments as an object (``None`` when unusable).
        problem: why the call cannot be made at all, or ``None``.
    """

    style: str
    call_id: Any
    name: str
    arguments: Optional[Dict[str, Any]]
    problem: Optional[str] = None


def _parse_arguments(value: Any, name: str) -> Tuple[Optional[Dict[str, Any]], Optional[str]]:
    if value is None or value == "":
        return {}, None
    if isinstance(value, (str, bytes)):
        try:
            value = json.loads(value)
        except ValueError as exc:
            return None, f"the arguments for {name!r} are not valid JSON ({exc}); send one JSON object"
    if not isinstance(value, Mapping):
        return None, f"the arguments for {name!r} must be a JSON object, not {type(value).__name__}"
    return dict(value), None


def parse_tool_call(tool_call: Any) -> ToolCall:
    """Read a tool call in any of the three formats (a dict, or an SDK object with ``model_dump()``).

    Never raises: what cannot be read is described in ``ToolCall.problem``.
    """
    dump = getattr(tool_call, "model_dump", None)
    if callable(dump) and not isinstance(tool_call, Mapping):  # an SDK object (pydantic)
        try:
            tool_call = dump()
        except Exception as exc:  # then it is just not a tool call
            logger.debug("model_dump() of a tool call failed: %r", exc)
    if not isinstance(tool_call, Mapping):
        return ToolCall(OPENAI, None, "", None, f"a tool call must be an object, not {type(tool_call).__name__}")
    kind = tool_call.get("type")
    if kind == "tool_use" or (kind is None and "input" in tool_call and "function" not in tool_call):
        call_id, name, raw = tool_call.get("id"), tool_call.get("name"), tool_call.get("input")
        style = ANTHROPIC
    elif kind == "function_call":
        call_id, name, raw = tool_call.get("call_id"), tool_call.get("name"), tool_call.get("arguments")
        style = RESPONSES
    else:
        function = tool_call.get("function")
        call_id = tool_call.get("id")
        if not isinstance(function, Mapping):
            return ToolCall(OPENAI, call_id, "", None, "the tool call has no 'function' object with a 'name'")
        name, raw = function.get("name"), function.get("arguments")
        style = OPENAI
    if not isinstance(name, str) or not name:
        return ToolCall(style, call_id, "", None, "the tool call names no tool")
    arguments, problem = _parse_arguments(raw, name)
    return ToolCall(style, call_id, name, arguments, problem)


# -- tool messages --------------------------------------------------------------------


def _block_text(block: Any) -> Optional[str]:
    """A content block as text (None for an empty text block)."""
    if not isinstance(block, Mapping):
        return json.dumps(block)
    kind = block.get("type")
    if kind == "text":
        text = block.get("text")
        return text if isinstance(text, str) and text else None
    if kind in ("image", "audio"):
        size = len(block.get("data") or "") * 3 // 4
        return f"[{kind}: {block.get('mimeType', 'unknown type')}, about {size} bytes]"
    if kind == "resource_link":
        label = block.get("title") or block.get("name") or ""
        return f"[resource link: {block.get('uri')}{' ' + str(label) if label else ''}]"
    if kind == "resource":
        resource = block.get("resource")
        if isinstance(resource, Mapping):
            text = resource.get("text")
            if isinstance(text, str):
                return text
            return f"[resource: {resource.get('uri')} ({resource.get('mimeType', 'binary')})]"
    return json.dumps(dict(block))


def result_text(result: Mapping[str, Any]) -> str:
    """A ``tools/call`` result as one text: its text blocks joined by newlines.

    Images, audio and resources are described in brackets; when there is no
    content at all, ``structuredContent`` as JSON (else the empty string).
    """
    content = result.get("content")
    parts = [text for text in (_block_text(block) for block in content or ()) if text is not None]
    if not parts and result.get("structuredContent") is not None:
        return json.dumps(result["structuredContent"])
    return "\n".join(parts)


def _anthropic_blocks(result: Mapping[str, Any]) -> List[Dict[str, Any]]:
    blocks: List[Dict[str, Any]] = []
    for block in result.get("content") or ():
        if isinstance(block, Mapping) and block.get("type") == "image" and isinstance(block.get("data"), str):
            source = {"type": "base64", "media_type": block.get("mimeType", "image/png"), "data": block["data"]}
            blocks.append({"type": "image", "source": source})
            continue
        text = _block_text(block)
        if text is not None:
            blocks.append({"type": "text", "text": text})
    if not blocks and result.get("structuredContent") is not None:
        blocks.append({"type": "text", "text": json.dumps(result["structuredContent"])})
    return blocks


def tool_message(
    call: ToolCall, *, text: str, is_error: bool, result: Optional[Mapping[str, Any]] = None
) -> Dict[str, Any]:
    """The message that answers ``call``, in its format.

    Args:
        call: the call answered.
        text: the answer as text (for a result: ``result_text``).
        is_error: the answer reports a failure (``Error:`` is prefixed to a
            result's text; Anthropic: ``is_error``).
        result: the ``tools/call`` result, when there is one (Anthropic: its
            images are kept as image blocks).
    """
    if call.style == ANTHROPIC:
        blocks = _anthropic_blocks(result) if result is not None else [{"type": "text", "text": text}]
        if not blocks and is_error:
            blocks = [{"type": "text", "text": "Error: the tool failed without saying why"}]
        message: Dict[str, Any] = {"type": "tool_result", "tool_use_id": call.call_id, "content": blocks}
        if is_error:
            message["is_error"] = True
        return message
    if is_error and result is not None:
        text = f"Error: {text}" if text else "Error: the tool failed without saying why"
    if call.style == RESPONSES:
        return {"type": "function_call_output", "call_id": call.call_id, "output": text}
    return {"role": "tool", "tool_call_id": call.call_id, "content": text}


def error_message(call: ToolCall, explanation: str) -> Dict[str, Any]:
    """The message that answers ``call`` with ``Error: <explanation>``."""
    return tool_message(call, text=f"Error: {explanation}", is_error=True)


def explain_lookup(name: str, exc: JsonRpcError) -> str:
    """Why a model's tool name cannot be called, for the model."""
    if isinstance(exc, UnknownTool):
        return f"unknown tool {name!r}; use one of the tools offered."
    if isinstance(exc, RequestTimeout):
        return f"tool {name!r} could not be looked up within {exc.timeout}s ({exc.message}); nothing was called."
    return f"tool {name!r} is unavailable: {exc.message}."


def explain_failure(server: str, tool: str, exc: JsonRpcError, *, registry_closed: bool = False) -> str:
    """Why a call of ``tool`` on ``server`` failed, for the model."""
    what = f"tool {tool!r} on server {server!r}"
    if isinstance(exc, RequestTimeout):
        return f"{what} did not finish within {exc.timeout}s; the call was cancelled."
    if isinstance(exc, (ServerUnavailable, ConfigError)):
        return f"{what} is unavailable: {exc.message}."
    if isinstance(exc, TransportClosed):
        code = f" (exit code {exc.returncode})" if exc.returncode is not None else ""
        if registry_closed:
            return f"{what} was not run: the tool registry is closed."
        return f"server {server!r} stopped while running tool {tool!r}{code}; it is started again on the next call."
    if isinstance(exc, HttpError):
        return f"server {server!r} could not be reached for {what}: {exc.message}."
    return f"server {server!r} refused the call to {what}: {exc.message} (code {exc.code})."


__all__ = [
    "ANTHROPIC",
    "MODEL_AUDIENCE",
    "OPENAI",
    "RESPONSES",
    "RegistryTool",
    "ToolCall",
    "anthropic_tool",
    "error_message",
    "explain_failure",
    "explain_lookup",
    "model_visible",
    "openai_tool",
    "parse_tool_call",
    "registry_tool",
    "result_text",
    "tool_message",
]
