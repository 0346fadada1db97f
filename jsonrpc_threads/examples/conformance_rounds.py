"""The conformance fixture's multi-round tools (MCP 2026-07-28): each asks the client something first.

Part of ``jsonrpc_threads.examples.conformance_server``: ``add_rounds(server)``
defines, on that server, the ``test_input_required_result_*`` tools the
suite's ``input-required-result-*`` scenarios call.  Over a 2025-era session
their questions are requests to the client; in the stateless era each one
ends a round with ``input_required`` and the client's retry runs the tool
again with the answers.
"""

from __future__ import annotations

from typing import Any, Dict

from jsonrpc_threads.mcp import Context, McpServer

NAME_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


def add_rounds(server: McpServer) -> None:
    """Define the multi-round tools on ``server``."""

    @server.tool()
    def test_input_required_result_elicitation(ctx: Context) -> str:
        """Asks the user's name, then greets them."""
        answer = ctx.elicit("What is your name?", NAME_SCHEMA, key="user_name")
        return f"Hello, {(answer.get('content') or {}).get('name')}!"

    @server.tool()
    def test_input_required_result_sampling(ctx: Context) -> str:
        """Asks the client's LLM a question."""
        answer = ctx.sample(
            [{"role": "user", "content": "What is the capital of France?"}], max_tokens=100, key="capital_question"
        )
        content = answer.get("content") or {}
        return f"The model said: {content.get('text') if isinstance(content, dict) else content}"

    @server.tool()
    def test_input_required_result_list_roots(ctx: Context) -> str:
        """Lists the client's roots."""
        roots = ctx.list_roots(key="client_roots")
        return "Roots: " + ", ".join(str(root.get("uri")) for root in roots)

    @server.tool()
    def test_input_required_result_request_state(ctx: Context) -> str:
        """Asks for a confirmation; the answer comes back with its signed state."""
        answer = ctx.elicit(
            "Please confirm",
            {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]},
            key="confirm",
        )
        return f"state-ok: confirmed={(answer.get('content') or {}).get('ok')}"

    @server.tool()
    def test_input_required_result_multiple_inputs(ctx: Context) -> str:
        """Asks three things at once: a name, a greeting from the LLM, the roots."""
        answers = ctx.ask(
            {
                "user_name": {
                    "method": "elicitation/create",
                    "params": {"message": "What is your name?", "requestedSchema": NAME_SCHEMA},
                },
                "greeting": {
                    "method": "sampling/createMessage",
                    "params": {
                        "messages": [{"role": "user", "content": {"type": "text", "text": "Generate a greeting"}}],
                        "maxTokens": 50,
                    },
                },
                "client_roots": {"method": "roots/list", "params": {}},
            }
        )
        name = (answers["user_name"].get("content") or {}).get("name")
        return f"name={name}, roots={len(answers['client_roots'].get('roots') or [])}, all inputs received"

    @server.tool()
    def test_input_required_result_multi_round(ctx: Context) -> str:
        """Asks a name, then a favourite colour, in two rounds."""
        first = ctx.elicit("Step 1: What is your name?", NAME_SCHEMA, key="step1")
        second = ctx.elicit(
            "Step 2: What is your favorite color?",
            {"type": "object", "properties": {"color": {"type": "string"}}, "required": ["color"]},
            key="step2",
        )
        name = (first.get("content") or {}).get("name")
        color = (second.get("content") or {}).get("color")
        return f"{name} likes {color}"

    @server.tool()
    def test_input_required_result_tampered_state(ctx: Context) -> str:
        """Asks something; a retry whose requestState was changed is refused."""
        answer = ctx.elicit("What is your name?", NAME_SCHEMA, key="user_name")
        return f"Hello, {(answer.get('content') or {}).get('name')}!"

    @server.tool()
    def test_input_required_result_capabilities(ctx: Context) -> str:
        """Asks only what the client declared it can answer."""
        declared = ctx.client_capabilities
        questions: Dict[str, Any] = {}
        if "elicitation" in declared:
            questions["user_name"] = {
                "method": "elicitation/create",
                "params": {"message": "What is your name?", "requestedSchema": NAME_SCHEMA},
            }
        if "sampling" in declared:
            questions["greeting"] = {
                "method": "sampling/createMessage",
                "params": {"messages": [{"role": "user", "content": {"type": "text", "text": "Hi"}}], "maxTokens": 20},
            }
        if "roots" in declared:
            questions["client_roots"] = {"method": "roots/list", "params": {}}
        answers = ctx.ask(questions) if questions else {}
        return f"answered: {sorted(answers)}"
