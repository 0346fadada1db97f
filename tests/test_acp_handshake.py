"""ACP's handshake when it fails: what later calls raise (issue 47, item 13).

The agent is a real child process that reads its input and never answers, so
``initialize`` times out.  A later call on the same client, or after
``close()``, must say what is true: the handshake's own timeout while the
client is open, and ``TransportClosed`` once it is closed, never "another
thread's handshake is still running" (on Python 3.11+ a stored
``RequestTimeout`` is a builtin ``TimeoutError``, which the wait for another
thread's handshake caught as its own).
"""

from __future__ import annotations

import os
import select
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from jsonrpc_threads import RequestTimeout, TransportClosed
from jsonrpc_threads.acp import AcpClient

#: The bound of every wait for the agent or a caller's thread.
WAIT_S = 10.0
#: The first caller's timeout: it passes while the agent holds its answer back.
FIRST_TIMEOUT_S = 0.5

SILENT_AGENT = [sys.executable, "-c", "import sys\nfor _ in sys.stdin.buffer: pass"]


def test_a_call_after_a_timed_out_handshake_says_the_handshake_timed_out() -> None:
    client = AcpClient(SILENT_AGENT, default_timeout=0.3)
    try:
        with pytest.raises(RequestTimeout) as first:
            client.new_session()
        with pytest.raises(RequestTimeout) as second:
            client.new_session()
        assert "still running" not in str(second.value)
        assert second.value is first.value or second.value.method == first.value.method
    finally:
        client.close()


def test_a_call_after_close_is_transport_closed() -> None:
    client = AcpClient(SILENT_AGENT, default_timeout=0.3)
    with pytest.raises(RequestTimeout):
        client.new_session()
    client.close()
    with pytest.raises(TransportClosed):
        client.new_session()
    with pytest.raises(TransportClosed):
        client.prompt("session-1", "hello", timeout=1.0)


#: An agent that reports each ``initialize`` it reads (a line on the FIFO ``argv[1]``) and
#: answers it (protocol version 1) only once a line arrives on the FIFO ``argv[2]``.
HELD_AGENT = """
import json, sys
request = json.loads(sys.stdin.buffer.readline())
with open(sys.argv[1], "w") as got:
    got.write("initialize\\n")
with open(sys.argv[2]) as go:
    go.readline()
answer = {"jsonrpc": "2.0", "id": request["id"], "result": {"protocolVersion": 1, "agentCapabilities": {}}}
sys.stdout.write(json.dumps(answer) + "\\n")
sys.stdout.flush()
for _ in sys.stdin.buffer:
    pass
"""


def _read_line(path: str, timeout: float) -> str:
    """One line from the FIFO at ``path``, waited for no longer than ``timeout``."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        data = b""
        deadline = time.monotonic() + timeout
        while not data.endswith(b"\n"):
            left = deadline - time.monotonic()
            ready, _, _ = select.select([fd], [], [], max(0.0, left))
            if not ready:
                raise AssertionError(f"nothing on {path} within {timeout}s")
            chunk = os.read(fd, 64)
            if not chunk and time.monotonic() >= deadline:
                raise AssertionError(f"nothing on {path} within {timeout}s")
            data += chunk
        return data.decode()
    finally:
        os.close(fd)


@pytest.mark.skipif(sys.platform == "win32", reason="FIFOs")
def test_a_first_caller_that_gives_up_leaves_the_handshake_to_a_later_caller(tmp_path: Path) -> None:
    got, go = str(tmp_path / "got"), str(tmp_path / "go")
    os.mkfifo(got)
    os.mkfifo(go)
    client = AcpClient([sys.executable, "-c", HELD_AGENT, got, go])
    try:
        with ThreadPoolExecutor(2, thread_name_prefix="test-acp-caller") as pool:
            first = pool.submit(client.initialize, timeout=FIRST_TIMEOUT_S)
            assert _read_line(got, WAIT_S) == "initialize\n"  # the handshake is under way
            later = pool.submit(client.initialize, timeout=WAIT_S)
            with pytest.raises(RequestTimeout) as gave_up:
                first.result(WAIT_S)
            assert gave_up.value.timeout == FIRST_TIMEOUT_S
            with open(go, "w") as release:  # the agent answers only now, after the first caller left
                release.write("go\n")
            assert later.result(WAIT_S)["protocolVersion"] == 1
        assert client.protocol_version == 1
    finally:
        client.close()
