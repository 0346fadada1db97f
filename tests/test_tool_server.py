"""The bundled example tool server, run as a real child process over raw pipes."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

from jsonrpc_threads.server import EOF_DRAIN_TIMEOUT_S

REPO = Path(__file__).resolve().parent.parent
#: Bound on every wait for something that should happen at once.
WAIT_S = 10.0


def req(request_id: Any, method: str, params: Any = None) -> Dict[str, Any]:
    message: Dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


class ToolServer:
    """``python -m jsonrpc_threads.examples.tool_server`` with line reads that time out."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "jsonrpc_threads.examples.tool_server"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=str(REPO),
            env=dict(os.environ, PYTHONPATH=str(REPO)),
        )
        self.lines: queue.Queue[Optional[bytes]] = queue.Queue()
        self.stderr_data = b""
        self._threads = [
            threading.Thread(target=self._pump_stdout, name="test-tool-stdout", daemon=True),
            threading.Thread(target=self._pump_stderr, name="test-tool-stderr", daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    def _pump_stdout(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def _pump_stderr(self) -> None:
        assert self.proc.stderr is not None
        self.stderr_data = self.proc.stderr.read()

    def send(self, message: Any) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message, ensure_ascii=False).encode("utf-8") + b"\n")
        self.proc.stdin.flush()

    def read(self) -> Any:
        line = self.lines.get(timeout=WAIT_S)
        assert line is not None, "the tool server closed its stdout"
        return json.loads(line)

    def call(self, request_id: Any, method: str, params: Any = None) -> Any:
        self.send(req(request_id, method, params))
        answer = self.read()
        assert answer["id"] == request_id
        return answer

    def wait(self, timeout: float = WAIT_S) -> int:
        """Wait for the exit (stdin stays as it is) and collect stderr."""
        returncode = self.proc.wait(timeout)
        for thread in self._threads:
            thread.join(WAIT_S)
        return returncode

    def finish(self, timeout: float = WAIT_S) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        return self.wait(timeout)

    @property
    def stderr(self) -> str:
        return self.stderr_data.decode("utf-8", "replace")

    def cleanup(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(WAIT_S)
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None:
                try:
                    stream.close()
                except OSError:
                    pass
        for thread in self._threads:
            thread.join(WAIT_S)


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
        last_line = server.stderr.strip().splitlines()[-1]
        assert last_line.startswith("tool_server: crashing on purpose")
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
