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

import sys

import pytest

from jsonrpc_threads import RequestTimeout, TransportClosed
from jsonrpc_threads.acp import AcpClient

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
