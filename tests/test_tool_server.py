"""The bundled example tool server, run as a real child process over raw pipes."""

from __future__ import annotations

import json
import sys
import time
from typing import Any, Dict, List

from jsonrpc_threads.server import EOF_DRAIN_TIMEOUT_S

from .pipe_child import WAIT_S, PipeChild


def req(request_id: Any, method: str, params: Any = None) -> Dict[str, Any]:
    message: Dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


class ToolServer(PipeChild):
    """``python -m jsonrpc_threads.examples.tool_server`` with line reads that time out."""

    def __init__(self) -> None:
        super().__init__([sys.executable, "-m", "jsonrpc_threads.examples.tool_server"])

    def send(self, message: Any) -> None:
        self.write(json.dumps(message, ensure_ascii=False).encode("utf-8") + b"\n")

    def call(self, request_id: Any, method: str, params: Any = None) -> Any:
        self.send(req(request_id, method, params))
        answer: Any = self.read()
        assert answer["id"] == request_id
        return answer


def test_add_echo_and_ready_line() -> None:
    server = ToolServer()
    try:
        assert server.call(1, "add", {"a": 2, "b": 3.5}) == {"jsonrpc": "2.0", "id": 1, "result": 5.5}
        text = "line\u2028sep \U0001f600"
        assert server.call("e", "echo", {"text": text})["result"] == text
        assert server.finish() == 0
        assert f"tool_server ready (pid {server.proc.pid})" in server.stderr.splitlines()[0]
        assert "Traceback" not in server.stderr
    finally:
        server.cleanup()


def test_slow_count_sends_progress_in_order_then_the_result() -> None:
    server = ToolServer()
    try:
        server.send(req("count-1", "slow_count", {"to": 5, "delay": 0.01}))
        messages = [server.read() for _ in range(6)]
        assert messages[:5] == [
            {
                "jsonrpc": "2.0",
                "method": "progress",
                "params": {"progress": i, "total": 5, "request_id": "count-1"},
            }
            for i in range(1, 6)
        ]
        assert messages[5] == {"jsonrpc": "2.0", "id": "count-1", "result": 5}
        assert server.finish() == 0
    finally:
        server.cleanup()


def test_unknown_method_and_bad_params() -> None:
    server = ToolServer()
    try:
        assert server.call(1, "nope")["error"]["code"] == -32601
        assert server.call(2, "add", {"a": "x", "b": 1})["error"]["code"] == -32602
        assert server.call(3, "add", {"a": True, "b": 1})["error"]["code"] == -32602
        assert server.call(4, "add", [1, 2])["error"]["code"] == -32602
        assert server.call(5, "echo", {})["error"]["code"] == -32602
        assert server.call(6, "slow_count", {"to": -1})["error"]["code"] == -32602
        tools: List[Dict[str, str]] = server.call(7, "list_tools")["result"]
        assert [t["name"] for t in tools] == ["add", "echo", "slow_count", "hang", "crash", "list_tools"]
        assert all(t["description"] for t in tools)
        assert server.finish() == 0
    finally:
        server.cleanup()


def test_hang_blocks_only_itself_and_crash_exits_with_its_code() -> None:
    server = ToolServer()
    try:
        server.send(req(1, "hang"))
        assert server.call(2, "add", {"a": 1, "b": 1})["result"] == 2
        server.send(req(3, "crash", {"code": 3}))
        assert server.wait() == 3
        assert server.lines.get(timeout=WAIT_S) is None  # no answer to hang or crash
        lines = server.stderr.strip().splitlines()
        assert lines[-1].startswith("tool_server: crashing on purpose")
        # The demo's timeout line ends with the server's last words: they name the request (issue 47).
        assert "tool_server: request 1 will never be answered (hang)" in lines
    finally:
        server.cleanup()


def test_end_of_input_with_a_hung_tool_exits_within_the_drain_bound() -> None:
    server = ToolServer()
    try:
        server.send(req(1, "hang"))
        assert server.call(2, "echo", {"text": "still answering"})["result"] == "still answering"
        t0 = time.monotonic()
        assert server.finish(timeout=EOF_DRAIN_TIMEOUT_S + WAIT_S) == 0
        assert time.monotonic() - t0 < EOF_DRAIN_TIMEOUT_S + WAIT_S
        assert "still running" in server.stderr
    finally:
        server.cleanup()


# -- the example MCP server (jsonrpc_threads.examples.mcp_tool_server) -----------------------------


def test_the_mcp_example_answers_bad_arguments_with_is_error_results() -> None:
    """Issue 37, item 11: out-of-range numbers are the model's mistake (``isError``), never -32603."""
    from jsonrpc_threads.mcp import McpClient  # noqa: PLC0415

    server = {"command": sys.executable, "args": ["-m", "jsonrpc_threads.examples.mcp_tool_server"]}
    with McpClient(server, default_timeout=WAIT_S) as client:

        def refusal(tool: str, arguments: Dict[str, Any]) -> str:
            result = client.call_tool(tool, arguments)
            assert result.get("isError") is True, (tool, arguments, result)
            return str(result["content"][0]["text"])

        assert refusal("slow", {"seconds": "x"}) == "argument 'seconds' must be a number"
        assert refusal("slow", {"steps": 1.5}) == "argument 'steps' must be an integer"
        assert refusal("echo", {"text": 3}) == "argument 'text' must be a string"
        assert "'seconds' must be from 0 to" in refusal("slow", {"seconds": 1e300})
        assert "'seconds' must be from 0 to" in refusal("slow", {"seconds": -1})
        assert "'steps' must be from 1 to" in refusal("slow", {"seconds": 0, "steps": 10**30})
        assert "'timeout' must be from 0 to" in refusal("rendezvous", {"key": "k", "timeout": 1e300})
        assert "'code' must be from 0 to 255" in refusal("crash", {"code": 2**40})
        assert "too large" in refusal("add", {"a": 1e308, "b": 1e308})
        assert "too large" in refusal("add", {"a": 10**400, "b": 0.5})
        assert client.call_tool("slow", {"seconds": 0, "steps": 2})["content"][0]["text"] == "waited 0s in 2 steps"
        assert client.call_tool("add", {"a": 2, "b": 3})["structuredContent"] == {"sum": 5}
