"""The LSP layer keeps the caller's deadline (issue 35): one deadline per call, the handshake a single flight.

The peer is tests/peers/lsp_fake_server.py, a real child process, with a
slow ``initialize`` (``--initialize-delay``) and, where a request must hang
until its deadline, a hover that is answered only when cancelled
(``--hover-hangs``).  The command line runs as a real ``python -m
jsonrpc_threads`` process.  Waits are on futures and threads, never a sleep.
"""

from __future__ import annotations

import shlex
import threading
import time
from pathlib import Path
from typing import Any, Dict, List

import pytest

from jsonrpc_threads import RequestTimeout
from jsonrpc_threads.lsp import LspClient

from .conftest import peer_command
from .test_cli import run

#: How late past its deadline a call may return on a loaded machine (the wait itself is bounded).
LATE_S = 1.0
#: The longest any single exchange with the fake may take.
WAIT_S = 10.0


def fake(*flags: str) -> List[str]:
    return peer_command("lsp_fake_server", *flags)


def initializes(lsp: LspClient) -> int:
    received: List[Dict[str, Any]] = lsp.call("test/received", timeout=WAIT_S)
    return sum(1 for message in received if message.get("method") == "initialize")


def test_a_first_query_ends_at_its_own_deadline_and_the_handshake_goes_on(tmp_path: Path) -> None:
    lsp = LspClient(fake("--initialize-delay", "3"), root_uri=tmp_path, default_timeout=WAIT_S)
    try:
        started = time.monotonic()
        with pytest.raises(RequestTimeout) as caught:
            lsp.hover("file:///x.py", 0, 0, timeout=1)
        elapsed = time.monotonic() - started
        assert 1 <= elapsed < 1 + LATE_S
        assert caught.value.timeout == 1
        assert "the handshake was still waiting for initialize" in str(caught.value)
        # The caller gave up, not the handshake: a later call finds it done (or waits for the rest of it).
        assert lsp.hover("file:///x.py", 0, 0, timeout=WAIT_S) == {"contents": "hover at 0:0"}
        assert initializes(lsp) == 1
    finally:
        lsp.close()


@pytest.mark.parametrize("query", ["hover", "call"])
def test_the_handshake_and_the_request_spend_one_deadline(tmp_path: Path, query: str) -> None:
    # initialize takes 1.5 s of the 2.5 s; the request, which hangs, gets what is left (1 s), not 2.5 s again.
    lsp = LspClient(fake("--initialize-delay", "1.5", "--hover-hangs"), root_uri=tmp_path, default_timeout=WAIT_S)
    try:
        started = time.monotonic()
        with pytest.raises(RequestTimeout) as caught:
            if query == "hover":
                lsp.hover("file:///x.py", 0, 0, timeout=2.5)
            else:
                lsp.call("test/hang", timeout=2.5)
        elapsed = time.monotonic() - started
        assert 2.5 <= elapsed < 2.5 + LATE_S
        assert caught.value.timeout == 2.5  # the whole call's timeout, not what was left for its request
    finally:
        lsp.close()


def test_document_calls_spend_one_deadline_with_the_handshake(tmp_path: Path) -> None:
    source = tmp_path / "a.py"
    source.write_text("x = 1\n", encoding="utf-8")
    lsp = LspClient(fake("--initialize-delay", "1.5"), root_uri=tmp_path, default_timeout=WAIT_S)
    try:
        with pytest.raises(RequestTimeout) as caught:
            lsp.open(source, timeout=0.5)  # its handshake still runs
        assert caught.value.timeout == 0.5
        uri = lsp.open(source, timeout=WAIT_S)
        assert lsp.diagnostics(uri, timeout=WAIT_S) == []
    finally:
        lsp.close()


def test_a_second_caller_waits_for_the_handshake_no_longer_than_its_own_deadline(tmp_path: Path) -> None:
    lsp = LspClient(fake("--initialize-delay", "3"), root_uri=tmp_path, default_timeout=WAIT_S)
    first: List[Any] = []
    thread = threading.Thread(target=lambda: first.append(lsp.initialize(timeout=None)))
    try:
        thread.start()
        started = time.monotonic()
        with pytest.raises(RequestTimeout):
            lsp.notify("test/nothing", None, timeout=0.5)
        assert time.monotonic() - started < 0.5 + LATE_S
        thread.join(WAIT_S)
        assert first and first[0]["serverInfo"] == {"name": "fake", "version": "1"}
        assert initializes(lsp) == 1
    finally:
        lsp.close()
        thread.join(WAIT_S)


def test_closing_during_the_handshake_ends_it(tmp_path: Path) -> None:
    lsp = LspClient(fake("--initialize-delay", "30"), root_uri=tmp_path, default_timeout=WAIT_S)
    with pytest.raises(RequestTimeout):
        lsp.initialize(timeout=0.2)
    started = time.monotonic()
    lsp.close()  # the pending initialize fails, the handshake's thread ends (the leak check sees to it)
    assert time.monotonic() - started < WAIT_S
    with pytest.raises(Exception, match="closed"):
        lsp.hover("file:///x.py", 0, 0, timeout=1)


def test_the_lsp_command_spends_one_deadline_on_all_its_steps(tmp_path: Path) -> None:
    source = tmp_path / "a.py"
    source.write_text("x = 1\n", encoding="utf-8")
    server = shlex.join(fake("--initialize-delay", "2.5", "--hover-hangs"))
    started = time.monotonic()
    result = run("lsp", "--stdio", server, "--root", str(tmp_path), "--timeout", "3", "hover", f"{source}:1:1")
    elapsed = time.monotonic() - started
    assert result.code == 4, result
    assert f"no hover of {source}:1:1 within 3.0s" in result.err
    # 3 s for the handshake (2.5 s), didOpen, diagnostics and the hover together, then the close;
    # each step with its own 3 s took 2.5 + 3 and more.
    assert elapsed < 3 + 2 * LATE_S, result
