"""Open and close many clients: threads, child processes and file descriptors come back to where they were.

The 200-client loop over stdio is ``test_lifecycle.py``; here the same over HTTP
(JSON and SSE answers, sessions ended with DELETE, listen streams, a request
pending at close), and shorter loops over the error paths of both transports,
where resources are most often forgotten: a child that dies at start or
mid-call, a timed-out call, a refused connection, a reset, a stalled answer.

The HTTP server runs as a child process (``HttpPeerProcess``), so the threads and
sockets counted here are the client's only.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any, Callable, Dict, List, Set, Tuple

import psutil
import pytest

from jsonrpc_threads import (
    HttpConnectionError,
    HttpTransport,
    JsonRpcClient,
    RequestTimeout,
    StdioTransport,
    TransportClosed,
)

from .conftest import PROCESS_WIDE_THREADS, SUBREAPER, peer_command
from .peers.http_peer import HttpPeerProcess

CLIENTS = 200
#: Iterations of each error-path loop.
ERROR_CLIENTS = 30
WAIT_S = 10.0
#: Seconds the inner pytest run of the fixture's own test may take.
INNER_RUN_S = 120.0
INIT_PARAMS = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "leaks", "version": "0"}}

Snapshot = Tuple[List[str], int, List[int]]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def snapshot(before_threads: Set[threading.Thread]) -> Snapshot:
    """New threads (names), open fds, live child processes."""
    me = psutil.Process()
    threads = sorted(
        t.name
        for t in threading.enumerate()
        if t not in before_threads and t.is_alive() and t.name not in PROCESS_WIDE_THREADS
    )
    children = sorted(p.pid for p in me.children(recursive=True) if p.status() != psutil.STATUS_ZOMBIE)
    return threads, me.num_fds(), children


def loop_leaks_nothing(one: Callable[[int], None], count: int) -> None:
    one(-1)  # warm-up: process-wide threads (the timer) and lazy imports exist from here on
    threads = set(threading.enumerate())
    before = snapshot(threads)
    for i in range(count):
        one(i)
    assert snapshot(threads) == before


def test_200_http_clients_leak_nothing() -> None:
    with HttpPeerProcess() as server:

        def one(i: int) -> None:
            modes = ("session", "sse", "priming") if i % 2 else ("session",)
            transport = HttpTransport(server.url_with(*modes))
            with JsonRpcClient(transport, default_timeout=WAIT_S) as client:
                client.call("initialize", INIT_PARAMS)
                if i % 10 == 0:
                    transport.open_listen_stream(wait=WAIT_S)
                    assert transport.listening
                assert client.call("echo", [i]) == [i]
                client.request("sleep", {"seconds": 0.3}, timeout=None)  # pending at close

        loop_leaks_nothing(one, CLIENTS)


def _stdio_dies_at_start(i: int) -> None:
    command = peer_command("stdio_peer", "--exit-at-start", "1")
    with JsonRpcClient(StdioTransport(command)) as client, pytest.raises(TransportClosed):
        client.call("echo", [i], timeout=WAIT_S)


def _stdio_dies_mid_call(i: int) -> None:
    with JsonRpcClient(StdioTransport(peer_command("stdio_peer"))) as client:
        pending = client.request("never", timeout=None)
        with pytest.raises(TransportClosed):
            client.call("exit", {"code": 2, "stderr": "bye"}, timeout=WAIT_S)
        assert isinstance(pending.exception(WAIT_S), TransportClosed)


def _stdio_timeout_then_close(i: int) -> None:
    with JsonRpcClient(StdioTransport(peer_command("stdio_peer"))) as client, pytest.raises(RequestTimeout):
        client.call("never", timeout=0.02)


STDIO_ERROR_PATHS: Dict[str, Callable[[int], None]] = {
    "stdio-dies-at-start": _stdio_dies_at_start,
    "stdio-dies-mid-call": _stdio_dies_mid_call,
    "stdio-timeout-then-close": _stdio_timeout_then_close,
}


@pytest.mark.parametrize("path", sorted(STDIO_ERROR_PATHS))
def test_stdio_error_paths_leak_nothing(path: str) -> None:
    loop_leaks_nothing(STDIO_ERROR_PATHS[path], ERROR_CLIENTS)


def _http_error_path(path: str, server: HttpPeerProcess) -> Callable[[int], None]:
    def refused(i: int) -> None:
        url = f"http://127.0.0.1:{free_port()}/mcp"
        with JsonRpcClient(HttpTransport(url)) as client, pytest.raises(HttpConnectionError):
            client.call("echo", [i], timeout=WAIT_S)

    def reset(i: int) -> None:
        with JsonRpcClient(HttpTransport(server.url_with("sse"))) as client:
            with pytest.raises(HttpConnectionError):
                client.call("fault", {"kind": "reset"}, timeout=WAIT_S)
            assert client.call("echo", [i], timeout=WAIT_S) == [i]

    def stalled(i: int) -> None:
        stall = {"chunks": ['{"jsonrpc": "2.0", "id": {id}, "result": '], "then": "stall"}
        with JsonRpcClient(HttpTransport(server.url)) as client, pytest.raises(RequestTimeout):
            client.call("raw_answer", stall, timeout=0.05)
            # close() must interrupt the pool thread still blocked reading the answer

    def read_timeout(i: int) -> None:
        stall = {"chunks": ['{"jsonrpc": "2.0", "id": {id}, "result": '], "then": "stall"}
        with JsonRpcClient(HttpTransport(server.url, read_timeout=0.05)) as client, pytest.raises(HttpConnectionError):
            client.call("raw_answer", stall, timeout=WAIT_S)

    return {"refused": refused, "reset": reset, "stalled": stalled, "read-timeout": read_timeout}[path]


@pytest.mark.parametrize("path", ["refused", "reset", "stalled", "read-timeout"])
def test_http_error_paths_leak_nothing(path: str) -> None:
    with HttpPeerProcess() as server:
        loop_leaks_nothing(_http_error_path(path, server), ERROR_CLIENTS)


def test_many_clients_at_once_then_all_closed() -> None:
    """50 clients open together (stdio and HTTP), each busy, closed from many threads at once."""
    with HttpPeerProcess() as server:
        threads = set(threading.enumerate())
        before = snapshot(threads)
        clients: List[JsonRpcClient] = []
        try:
            for i in range(50):
                transport: Any = (
                    StdioTransport(peer_command("stdio_peer")) if i % 2 else HttpTransport(server.url_with("sse"))
                )
                clients.append(JsonRpcClient(transport, default_timeout=WAIT_S))
            futures = [client.request("sleep", {"seconds": 0.2, "result": n}) for n, client in enumerate(clients)]
            assert [future.result(WAIT_S) for future in futures] == list(range(50))
            pending = [client.request("never", timeout=None) for client in clients]
        finally:
            closers = [threading.Thread(target=client.close, name="test-closer") for client in clients]
            for closer in closers:
                closer.start()
            for closer in closers:
                closer.join(WAIT_S)
        assert all(isinstance(future.exception(WAIT_S), TransportClosed) for future in pending)
        assert snapshot(threads) == before


def test_http_close_releases_its_sockets_even_while_errors_are_kept() -> None:
    """An exception kept by the caller (its traceback reaches the connection pool) must not keep sockets open."""
    with HttpPeerProcess() as server:
        kept: List[BaseException] = []

        def one(i: int) -> None:
            with JsonRpcClient(HttpTransport(server.url), default_timeout=WAIT_S) as client:
                future = client.request("fault", {"kind": "500"})
                kept.append(future.exception(WAIT_S))  # type: ignore[arg-type]
                assert client.call("echo", [i]) == [i]  # over the kept-alive connection

        loop_leaks_nothing(one, ERROR_CLIENTS)
        assert len(kept) == ERROR_CLIENTS + 1


#: The inner run: this interpreter, no cache, no workers, no configuration of this repository.
INNER_PYTEST = (sys.executable, "-m", "pytest", "-qs", "-p", "no:cacheprovider", "-p", "no:xdist", "-c", os.devnull)
#: A test that orphans a grandchild: its child starts it, prints its pid and ends at once.
ORPHANING_TEST = """
import subprocess, sys
from tests.conftest import no_leaks  # the suite's autouse leak fixture

GRANDCHILD = "import threading; threading.Event().wait(60)"
PARENT = (
    "import subprocess, sys; "
    f"print(subprocess.Popen([sys.executable, '-c', {GRANDCHILD!r}], stdin=subprocess.DEVNULL, "
    "stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).pid, flush=True)"
)


def test_orphans_a_grandchild():
    done = subprocess.run([sys.executable, "-c", PARENT], capture_output=True, text=True, timeout=30, check=True)
    print("grandchild", done.stdout.strip())
"""


@pytest.mark.skipif(not SUBREAPER, reason="needs prctl(PR_SET_CHILD_SUBREAPER): Linux")
def test_the_leak_fixture_finds_an_orphaned_grandchild_kills_and_reaps_it(tmp_path: Path) -> None:
    """Issue 46: the fixture saw direct descendants only; a grandchild whose parent ended ran on unseen."""
    (tmp_path / "test_orphan.py").write_text(textwrap.dedent(ORPHANING_TEST), encoding="utf-8")
    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = subprocess.run(
        [*INNER_PYTEST, "--rootdir", str(tmp_path), str(tmp_path / "test_orphan.py")],
        capture_output=True,
        text=True,
        timeout=INNER_RUN_S,
        env=env,
        check=False,
    )
    pids = [int(line.split()[1]) for line in done.stdout.splitlines() if line.startswith("grandchild ")]
    try:
        assert done.returncode == 1, done.stdout + done.stderr
        assert "child processes left running" in done.stdout and len(pids) == 1, done.stdout
        assert not psutil.pid_exists(pids[0]) or psutil.Process(pids[0]).status() == psutil.STATUS_ZOMBIE
    finally:
        for pid in pids:  # with the fixture broken, the grandchild is init's: end it here
            try:
                psutil.Process(pid).kill()
            except psutil.Error:
                pass
