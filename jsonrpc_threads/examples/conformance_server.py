"""The MCP conformance suite's server fixture, written with McpServer's public API only.

Every tool, resource and prompt the suite's server scenarios call, under the
exact names they use (``test_simple_text``, ``test_tool_with_progress``,
``test://static-text``, ``test_simple_prompt``, the
``test_input_required_result_*`` tools, ...), each doing what its scenario
asks, and the example skills of ``examples/skills`` (the skills extension).
Both protocol eras are served on one endpoint.

Run it::

    python -m jsonrpc_threads.examples.conformance_server --port 0

It prints its URL (``http://127.0.0.1:N/mcp``) on stdout once it listens,
then serves until interrupted; ``--stdio`` serves one client on stdio instead.
``make conformance-server`` runs the official suite against it.
"""

from __future__ import annotations

import argparse
import base64
import json
import sys
import threading
import time
from pathlib import Path
from typing import Annotated, Any, Dict, List, Optional, Sequence

from jsonrpc_threads.mcp import Audio, Context, EmbeddedResource, Image, McpServer

from .conformance_rounds import add_rounds
from .conformance_tasks import add_tasks

#: A 1x1 red pixel, PNG.
RED_PIXEL_PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)
#: A WAV file of one silent sample (8 kHz, 8 bit, mono).
SILENT_WAV = (
    b"RIFF%s" % (37).to_bytes(4, "little")
    + b"WAVEfmt "
    + (16).to_bytes(4, "little")
    + (1).to_bytes(2, "little")
    + (1).to_bytes(2, "little")
    + (8000).to_bytes(4, "little")
    + (8000).to_bytes(4, "little")
    + (1).to_bytes(2, "little")
    + (8).to_bytes(2, "little")
    + b"data"
    + (1).to_bytes(4, "little")
    + b"\x80"
)
#: Between two progress reports, or two log messages (the scenarios ask for about 50 ms).
STEP_S = 0.05


server = McpServer(
    "jsonrpc-threads-conformance",
    version="1.0.0",
    title="jsonrpc_threads conformance fixture",
    instructions="The official MCP conformance suite's server fixture.",
)
_pause = threading.Event()  # never set: waits between steps are waits on it, with a timeout


def _step() -> None:
    _pause.wait(STEP_S)


# -- tools: content --------------------------------------------------------------------------


@server.tool()
def test_simple_text() -> str:
    """Returns a simple text response."""
    return "This is a simple text response for testing."


@server.tool()
def test_image_content() -> Image:
    """Returns an image (a 1x1 red pixel)."""
    return Image(RED_PIXEL_PNG, mime_type="image/png")


@server.tool()
def test_audio_content() -> Audio:
    """Returns a short audio clip (WAV)."""
    return Audio(SILENT_WAV, mime_type="audio/wav")


@server.tool()
def test_embedded_resource() -> EmbeddedResource:
    """Returns an embedded text resource."""
    return EmbeddedResource("test://embedded-resource", "This is an embedded resource content.", mime_type="text/plain")


@server.tool()
def test_multiple_content_types() -> List[Any]:
    """Returns text, an image and an embedded resource."""
    return [
        "Multiple content types test:",
        Image(RED_PIXEL_PNG, mime_type="image/png"),
        EmbeddedResource(
            "test://mixed-content-resource", json.dumps({"test": "data", "value": 123}), mime_type="application/json"
        ),
    ]


@server.tool()
def test_error_handling() -> str:
    """Always fails."""
    raise RuntimeError("This tool intentionally returns an error for testing")


@server.tool(
    input_schema={
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "$anchor": "addressDef",
                "type": "object",
                "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
            }
        },
        "properties": {
            "name": {"type": "string"},
            "address": {"$ref": "#/$defs/address"},
            "contactMethod": {"type": "string", "enum": ["phone", "email"]},
            "phone": {"type": "string"},
            "email": {"type": "string"},
        },
        "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
        "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
        "then": {"required": ["phone"]},
        "else": {"required": ["email"]},
        "additionalProperties": False,
    }
)
def json_schema_2020_12_tool(
    name: Optional[str] = None,
    address: Optional[Dict[str, Any]] = None,
    contactMethod: Optional[str] = None,
    phone: Optional[str] = None,
    email: Optional[str] = None,
) -> str:
    """Tool with JSON Schema 2020-12 features."""
    return f"received {name!r}"


@server.tool()
def test_custom_headers(
    region: Annotated[str, {"x-mcp-header": "Region"}],
    query: str = "",
) -> str:
    """Echoes a region that travels in the Mcp-Param-Region header too."""
    return f"region={region} query={query}"


# -- tools: progress, logs, questions -----------------------------------------------------------


@server.tool()
def test_tool_with_progress(ctx: Context) -> str:
    """Reports progress 0, 50 and 100 of 100."""
    for done in (0, 50, 100):
        ctx.progress(done, 100)
        if done < 100:
            _step()
    return "Progress test completed"


@server.tool()
def test_tool_with_logging(ctx: Context) -> str:
    """Sends three log messages while it runs."""
    ctx.log("info", "Tool execution started")
    _step()
    ctx.log("info", "Tool processing data")
    _step()
    ctx.log("info", "Tool execution completed")
    return "Logging test completed"


@server.tool()
def test_logging_tool(ctx: Context) -> str:
    """Logs at every level (nothing reaches a client that asked for no logs)."""
    for level in ("debug", "info", "warning", "error"):
        ctx.log(level, f"a {level} message")
    return "logged"


@server.tool()
def test_sampling(prompt: str, ctx: Context) -> str:
    """Asks the client's LLM to answer ``prompt``."""
    answer = ctx.sample([{"role": "user", "content": prompt}], max_tokens=100)
    content = answer.get("content") or {}
    text = content.get("text") if isinstance(content, dict) else content
    return f"LLM response: {text}"


@server.tool()
def test_elicitation(message: str, ctx: Context) -> str:
    """Asks the user for a username and an email address."""
    answer = ctx.elicit(
        message,
        {
            "type": "object",
            "properties": {
                "username": {"type": "string", "description": "User's response"},
                "email": {"type": "string", "description": "User's email address"},
            },
            "required": ["username", "email"],
        },
    )
    return f"User response: action={answer.get('action')}, content={json.dumps(answer.get('content'))}"


@server.tool()
def test_elicitation_sep1034_defaults(ctx: Context) -> str:
    """Asks for a form whose every field has a default."""
    answer = ctx.elicit(
        "Please review the defaults",
        {
            "type": "object",
            "properties": {
                "name": {"type": "string", "default": "John Doe"},
                "age": {"type": "integer", "default": 30},
                "score": {"type": "number", "default": 95.5},
                "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
                "verified": {"type": "boolean", "default": True},
            },
        },
    )
    return f"Elicitation completed: action={answer.get('action')}, content={json.dumps(answer.get('content'))}"


@server.tool()
def test_elicitation_sep1330_enums(ctx: Context) -> str:
    """Asks for a form with every kind of enum."""
    answer = ctx.elicit(
        "Please choose",
        {
            "type": "object",
            "properties": {
                "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
                "titledSingle": {
                    "type": "string",
                    "oneOf": [
                        {"const": "value1", "title": "First Option"},
                        {"const": "value2", "title": "Second Option"},
                        {"const": "value3", "title": "Third Option"},
                    ],
                },
                "legacyEnum": {
                    "type": "string",
                    "enum": ["opt1", "opt2", "opt3"],
                    "enumNames": ["Option One", "Option Two", "Option Three"],
                },
                "untitledMulti": {
                    "type": "array",
                    "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
                },
                "titledMulti": {
                    "type": "array",
                    "items": {
                        "anyOf": [
                            {"const": "value1", "title": "First Choice"},
                            {"const": "value2", "title": "Second Choice"},
                            {"const": "value3", "title": "Third Choice"},
                        ]
                    },
                },
            },
        },
    )
    return f"Elicitation completed: action={answer.get('action')}, content={json.dumps(answer.get('content'))}"


@server.tool()
def test_missing_capability(ctx: Context) -> str:
    """Needs the client's sampling capability (refused with -32021 without it)."""
    answer = ctx.sample([{"role": "user", "content": "Say hello"}], max_tokens=10)
    return f"sampled: {answer.get('content')}"


@server.tool()
def test_streaming_elicitation(ctx: Context) -> str:
    """Reports progress, then asks the user something."""
    ctx.progress(1, 2, "about to ask")
    answer = ctx.elicit("Continue?", {"type": "object", "properties": {"ok": {"type": "boolean"}}}, key="continue")
    return f"answered: {answer.get('action')}"


@server.tool()
def test_reconnection(ctx: Context) -> str:
    """Ends its SSE stream mid-call; the client reconnects (``Last-Event-ID``) and gets the result."""
    ctx.end_stream()
    _pause.wait(0.2)
    return "Reconnection test completed"


_changes = {"tools": 0, "prompts": 0}
_changes_lock = threading.Lock()


@server.tool()
def test_trigger_tool_change() -> str:
    """Adds a tool, so clients hear that the tool list changed."""
    with _changes_lock:
        _changes["tools"] += 1
        number = _changes["tools"]

    def dynamic_tool() -> str:
        return f"dynamic tool {number}"

    server.tool(name=f"dynamic_tool_{number}", description="Added by test_trigger_tool_change.")(dynamic_tool)
    return f"added dynamic_tool_{number}"


@server.tool()
def test_trigger_prompt_change() -> str:
    """Adds a prompt, so clients hear that the prompt list changed."""
    with _changes_lock:
        _changes["prompts"] += 1
        number = _changes["prompts"]

    def dynamic_prompt() -> str:
        return f"dynamic prompt {number}"

    server.prompt(name=f"dynamic_prompt_{number}", description="Added by test_trigger_prompt_change.")(dynamic_prompt)
    return f"added dynamic_prompt_{number}"


add_rounds(server)
add_tasks(server)


# -- resources ------------------------------------------------------------------------------------


@server.resource(
    "test://static-text", name="static-text", description="A static text resource.", mime_type="text/plain"
)
def static_text() -> str:
    return "This is the content of the static text resource."


@server.resource("test://static-binary", name="static-binary", description="A static PNG.", mime_type="image/png")
def static_binary() -> bytes:
    return RED_PIXEL_PNG


@server.resource(
    "test://watched-resource",
    name="watched-resource",
    description="A resource to subscribe to.",
    mime_type="text/plain",
)
def watched_resource() -> str:
    return f"watched at {time.time():.3f}"


@server.resource(
    "test://template/{id}/data", name="template-data", description="Data for an id.", mime_type="application/json"
)
def template_data(id: str) -> str:
    return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"}, separators=(",", ":"))


# -- prompts --------------------------------------------------------------------------------------


@server.prompt()
def test_simple_prompt() -> str:
    """A simple prompt without arguments."""
    return "This is a simple prompt for testing."


@server.prompt()
def test_prompt_with_arguments(arg1: str, arg2: str) -> str:
    """A prompt with two arguments.

    Args:
        arg1: First test argument.
        arg2: Second test argument.
    """
    return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"


@server.prompt()
def test_prompt_with_embedded_resource(resourceUri: str) -> List[Any]:
    """A prompt that embeds a resource.

    Args:
        resourceUri: URI of the resource to embed.
    """
    return [
        EmbeddedResource(resourceUri, "Embedded resource content for testing.", mime_type="text/plain"),
        "Please process the embedded resource above.",
    ]


@server.prompt()
def test_prompt_with_image() -> List[Any]:
    """A prompt with an image."""
    return [Image(RED_PIXEL_PNG, mime_type="image/png"), "Please analyze the image above."]


@server.prompt()
def test_input_required_result_prompt(ctx: Context) -> str:
    """A prompt that first asks what context to use."""
    answer = ctx.elicit(
        "What context should the prompt use?",
        {"type": "object", "properties": {"context": {"type": "string"}}, "required": ["context"]},
        key="user_context",
    )
    return f"Use this context: {(answer.get('content') or {}).get('context')}"


# -- skills (the skills extension, SEP-2640) -------------------------------------------------------

#: The example skills shipped with the package: release-notes (a SKILL.md, templates/, references/).
SKILLS_DIR = Path(__file__).resolve().parent / "skills"
server.add_skills(SKILLS_DIR)


@server.completion("test_prompt_with_arguments")
def complete_prompt_arguments(argument: str, value: str, context: Dict[str, Any]) -> List[str]:
    words = ["paris", "park", "party", "pasta", "peace"]
    return [word for word in words if word.startswith(value.lower())]


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``python -m jsonrpc_threads.examples.conformance_server [--port N | --stdio]``."""
    parser = argparse.ArgumentParser(prog="python -m jsonrpc_threads.examples.conformance_server")
    parser.add_argument("--port", type=int, default=0, help="the port to listen on, on 127.0.0.1 (0: a free one)")
    parser.add_argument("--stdio", action="store_true", help="serve one client on stdio instead of HTTP")
    options = parser.parse_args(argv)
    if options.stdio:
        server.run_stdio()
        return 0
    from jsonrpc_threads.mcp.server.http_runner import HttpRunner  # noqa: PLC0415

    app = server.wsgi_app()
    runner = HttpRunner(app, "127.0.0.1", options.port)
    print(f"{runner.url}/mcp", flush=True)
    try:
        runner.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        app.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
