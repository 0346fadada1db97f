"""The conformance fixture's tools of the tasks extension (``io.modelcontextprotocol/tasks``, SEP-2663).

Part of ``jsonrpc_threads.examples.conformance_server``: ``add_tasks(server)``
defines, on that server, the tools the suite's ``tasks-*`` scenarios call: a
plain tool (``greet``), tools that run as tasks when the client declared the
extension (``slow_compute``, ``confirm_delete``, ``multi_input``), tools that
must (``failing_job``, ``protocol_error_job``, ``test_tool_with_task``), and one
whose task begins only after a multi-round question (``test_tool_with_task``).
Written with the public API only.
"""

from __future__ import annotations

from jsonrpc_threads.errors import JsonRpcError
from jsonrpc_threads.mcp import Context, McpServer

#: How long ``failing_job`` works before it reports its error.
FAILING_JOB_S = 0.5

_CONFIRM_SCHEMA = {"type": "object", "properties": {"confirm": {"type": "boolean"}}, "required": ["confirm"]}
_NAME_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


def add_tasks(server: McpServer) -> None:
    """Define the tasks extension's tools on ``server``."""

    @server.tool()
    def greet(name: str) -> str:
        """Greets someone, at once (never a task)."""
        return f"Hello, {name}!"

    @server.tool(task_support="optional")
    def slow_compute(seconds: float, ctx: Context, label: str = "") -> str:
        """Works for ``seconds`` seconds (a task when the client allows), then says so; stops when cancelled.

        Args:
            seconds: how long to work.
            label: a name for this run, echoed back.
        """
        if ctx.cancelled.wait(max(0.0, seconds)):
            return f"{label}: cancelled"
        return f"{label}: computed for {seconds:g}s"

    @server.tool(task_support="required")
    def failing_job(ctx: Context) -> str:
        """Works a little, then fails (a tool error: the task completes with isError)."""
        ctx.cancelled.wait(FAILING_JOB_S)
        raise RuntimeError("the job failed, as it always does")

    @server.tool(task_support="required")
    def protocol_error_job() -> str:
        """Ends with a protocol error (the task fails with it)."""
        raise JsonRpcError(-32603, "the job broke down (a protocol-level error)")

    @server.tool(task_support="optional")
    def confirm_delete(filename: str, ctx: Context) -> str:
        """Asks the user to confirm, then 'deletes' the file.

        Args:
            filename: the file to delete.
        """
        answer = ctx.elicit(f"Delete {filename}?", _CONFIRM_SCHEMA, key="confirm")
        confirmed = answer.get("action") == "accept" and (answer.get("content") or {}).get("confirm")
        return f"deleted {filename}" if confirmed else f"kept {filename}"

    @server.tool(task_support="optional")
    def multi_input(ctx: Context) -> str:
        """Asks two things at once, and reports both answers."""
        answers = ctx.ask(
            {
                "first": {
                    "method": "elicitation/create",
                    "params": {"message": "First name?", "requestedSchema": _NAME_SCHEMA},
                },
                "second": {
                    "method": "elicitation/create",
                    "params": {"message": "Second name?", "requestedSchema": _NAME_SCHEMA},
                },
            }
        )
        names = [(answers[key].get("content") or {}).get("name") for key in ("first", "second")]
        return f"first={names[0]}, second={names[1]}"

    @server.tool(task_support="required", task_start="explicit")
    def test_tool_with_task(ctx: Context) -> str:
        """Asks the user's name (a multi-round request), then goes on as a task that greets them."""
        answer = ctx.elicit("What is your name?", _NAME_SCHEMA, key="user_name")
        name = (answer.get("content") or {}).get("name")
        ctx.start_task()
        return f"Hello, {name}! (from a task)"
