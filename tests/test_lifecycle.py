"""Open and close many clients; leave the interpreter with a client still open."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading

import psutil
import pytest

from jsonrpc_threads import JsonRpcClient, StdioTransport
from jsonrpc_threads.transports.stdio import STDIN_CLOSE_GRACE_S

from .conftest import peer_command

CLIENTS = 200


def test_opening_and_closing_many_clients_leaks_nothing() -> None:
    me = psutil.Process()
    # One warm-up client, so lazily created process-wide things (the timer thread) exist.
    with JsonRpcClient(StdioTransport(peer_command("stdio_peer"))) as c:
        c.call("echo", [0], timeout=5)
    threads, fds = threading.active_count(), me.num_fds()
    for i in range(CLIENTS):
        with JsonRpcClient(StdioTransport(peer_command("stdio_peer"))) as c:
            assert c.call("echo", [i], timeout=10) == [i]
            c.request("never", timeout=None)  # pending at close
    assert threading.active_count() == threads
    assert me.num_fds() == fds
    assert [p for p in me.children(recursive=True) if p.status() != psutil.STATUS_ZOMBIE] == []


def test_interpreter_exit_with_a_client_still_open_is_prompt_and_quiet() -> None:
    script = textwrap.dedent(
        f"""
        import sys
        from jsonrpc_threads import JsonRpcClient, StdioTransport
        client = JsonRpcClient(StdioTransport({peer_command("stdio_peer", "--ignore-sigterm")!r}))
        client.on_notification("progress", lambda params: None)
        assert client.call("echo", [1], timeout=10) == [1]
        client.request("never", timeout=None)
        print(client.transport.pid, flush=True)
        """
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=30, check=False)
    assert result.returncode == 0, result.stderr.decode()
    assert b"Traceback" not in result.stderr and b"Exception ignored" not in result.stderr
    pid = int(result.stdout.split()[0])
    try:
        gone = psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        gone = True
    assert gone


def test_close_takes_only_a_shorter_stdin_grace() -> None:
    """``close(stdin_grace=...)`` may shorten the wait after stdin is closed, never lengthen it."""
    transport = StdioTransport(peer_command("stdio_peer"))
    with JsonRpcClient(transport) as client:
        for bad in (-0.1, STDIN_CLOSE_GRACE_S + 0.1, float("nan"), float("inf")):
            with pytest.raises(ValueError, match="stdin_grace"):
                transport.close(stdin_grace=bad)
        for wrong in ("1", True):
            with pytest.raises(TypeError, match="stdin_grace"):
                transport.close(stdin_grace=wrong)  # type: ignore[arg-type]
        assert client.call("echo", [1], timeout=10) == [1]  # a refused close closed nothing
        transport.close(stdin_grace=STDIN_CLOSE_GRACE_S / 2)
    assert transport.returncode == 0  # it exited at the end of its input, within the grace
