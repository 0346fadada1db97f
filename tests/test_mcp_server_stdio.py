"""McpServer.run_stdio() in a real child process: bad lines get their error and the loop goes on.

The conformance fixture (``python -m jsonrpc_threads.examples.conformance_server
--stdio``) is the server; the test writes raw lines to its stdin and reads
its stdout line by line, every read bounded.
"""

from __future__ import annotations

import json
import select
import subprocess
import sys
from typing import Any, Dict, Iterator

import pytest

WAIT_S = 15.0


class RawChild:
    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "jsonrpc_threads.examples.conformance_server", "--stdio"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )

    def send(self, line: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + b"\n")
        self.process.stdin.flush()

    def read(self) -> Dict[str, Any]:
        assert self.process.stdout is not None
        ready, _, _ = select.select([self.process.stdout], [], [], WAIT_S)
        assert ready, "no answer in time"
        line = self.process.stdout.readline()
        assert line, "the server closed its output"
        value: Dict[str, Any] = json.loads(line)
        return value

    def close(self) -> int:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.close()
        try:
            code = self.process.wait(WAIT_S)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()
            self.process.stdout.close()
        return code


@pytest.fixture
def child() -> Iterator[RawChild]:
    server = RawChild()
    try:
        yield server
    finally:
        server.close()


def test_bad_lines_get_their_errors_and_the_loop_goes_on(child: RawChild) -> None:
    child.send(b"this is not json")
    assert child.read()["error"]["code"] == -32700
    child.send(b"[]")
    assert child.read()["error"]["code"] == -32600
    child.send(b'{"jsonrpc": "2.0", "id": 7, "method": 12}')
    answer = child.read()
    assert answer["error"]["code"] == -32600
    child.send(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')  # a notification: no answer
    init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}
    child.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}).encode())
    initialized = child.read()
    assert initialized["id"] == 1 and initialized["result"]["protocolVersion"] == "2025-11-25"
    assert initialized["result"]["serverInfo"]["name"] == "jsonrpc-threads-conformance"
    declared = initialized["result"]["capabilities"]
    assert {key: declared[key] for key in child_capabilities()} == child_capabilities()
    child.send(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')
    child.send(b'{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "nope"}}')
    assert child.read()["error"]["code"] == -32602
    child.send(b'{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "test_simple_text"}}')
    text = child.read()
    assert text["id"] == 3 and text["result"]["content"][0]["text"] == "This is a simple text response for testing."
    assert child.close() == 0


def child_capabilities() -> Dict[str, Any]:
    return {
        "tools": {"listChanged": True},
        "resources": {"subscribe": True, "listChanged": True},
        "prompts": {"listChanged": True},
        "completions": {},
        "logging": {},
    }
