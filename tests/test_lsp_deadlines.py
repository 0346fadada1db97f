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
from typing import Any, Callable, Dict, List

import pytest

from jsonrpc_threads import RequestTimeout
from jsonrpc_threads.lsp import LspClient

from .conftest import peer_command
from .test_cli import run

#: How late past its deadline a call may return on a loaded machine (the wait itself is bounded).
LATE_S = 1.0
#: The longest any single exchange with the fake may take.
WAIT_S = 10.0
#: How late past its one deadline a public call may end when the handshake ate part of it: tight
#: enough that a call restarting its timeout after a 0.6 s handshake fails (issue 46).
PROMPT_MARGIN_S = 0.35
#: The handshake's delay and the timeout of the call that waits for it, then for a query that hangs.
SLOW_HANDSHAKE_S = 0.6
CALL_TIMEOUT_S = 1.2

#: Each public call of LspClient that waits for an answer (one that hangs, on ``--queries-hang``).
QUERIES: Dict[str, Callable[[LspClient, float], Any]] = {
    "request": lambda lsp, t: lsp.request("test/hang", timeout=t).result(WAIT_S),
    "call": lambda lsp, t: lsp.call("test/hang", timeout=t),
    "definition": lambda lsp, t: lsp.definition("file:///x.py", 0, 0, timeout=t),
    "references": lambda lsp, t: lsp.references("file:///x.py", 0, 0, timeout=t),
    "hover": lambda lsp, t: lsp.hover("file:///x.py", 0, 0, timeout=t),
    "completion": lambda lsp, t: lsp.completion("file:///x.py", 0, 0, timeout=t),
    "document_symbols": lambda lsp, t: lsp.document_symbols("file:///x.py", timeout=t),
    "workspace_symbols": lambda lsp, t: lsp.workspace_symbols("x", timeout=t),
    "rename": lambda lsp, t: lsp.rename("file:///x.py", 0, 0, "y", timeout=t),
    "diagnostics": lambda lsp, t: lsp.diagnostics("file:///never-published.py", timeout=t),
}
#: Each public call of LspClient that only sends: it ends at its deadline when the handshake outlasts it.
SENDS: Dict[str, Callable[[LspClient, float], Any]] = {
    "notify": lambda lsp, t: lsp.notify("test/nothing", None, timeout=t),
    "open": lambda lsp, t: lsp.open("file:///x.py", "x = 1\n", timeout=t),
    "change": lambda lsp, t: lsp.change("file:///x.py", "x = 2\n", timeout=t),
    "close_document": lambda lsp, t: lsp.close_document("file:///x.py", timeout=t),
    "set_settings": lambda lsp, t: lsp.set_settings({"a": 1}, timeout=t),
    "initialize": lambda lsp, t: lsp.initialize(timeout=t),
}


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


# -- every public entry point ends at its one deadline (issue 46) ------------------------------------


@pytest.mark.parametrize("entry", sorted(QUERIES))
def test_every_query_ends_at_its_one_deadline_after_a_slow_handshake(tmp_path: Path, entry: str) -> None:
    # The handshake takes SLOW_HANDSHAKE_S of the call's timeout; the query, which hangs, gets the rest.
    # A call that started a fresh timeout after the handshake ends SLOW_HANDSHAKE_S (and the start) late.
    lsp = LspClient(
        fake("--initialize-delay", str(SLOW_HANDSHAKE_S), "--queries-hang"), root_uri=tmp_path, default_timeout=WAIT_S
    )
    try:
        started = time.monotonic()
        with pytest.raises(RequestTimeout) as caught:
            QUERIES[entry](lsp, CALL_TIMEOUT_S)
        elapsed = time.monotonic() - started
        assert CALL_TIMEOUT_S <= elapsed < CALL_TIMEOUT_S + PROMPT_MARGIN_S, elapsed
        if entry != "request":  # request()'s future is the client's, made with what was left of the timeout
            assert caught.value.timeout == CALL_TIMEOUT_S
    finally:
        lsp.close()


@pytest.mark.parametrize("entry", sorted(SENDS))
def test_every_send_ends_at_its_deadline_while_the_handshake_runs(tmp_path: Path, entry: str) -> None:
    lsp = LspClient(fake("--initialize-delay", "30"), root_uri=tmp_path, default_timeout=WAIT_S)
    try:
        started = time.monotonic()
        with pytest.raises(RequestTimeout) as caught:
            SENDS[entry](lsp, 0.3)
        assert time.monotonic() - started < 0.3 + PROMPT_MARGIN_S
        assert caught.value.timeout == 0.3
    finally:
        lsp.close()
