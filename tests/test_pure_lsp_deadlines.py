"""Every public call of LspClient keeps its one deadline, the handshake included, in memory (the pure tier).

The server is tests/peers/lsp_fake_server.py's, run in this process over a
``MemoryTransport`` pair (tests/memory_peers.py), with a slow ``initialize``
(``--initialize-delay``) and queries answered only when cancelled
(``--queries-hang``).  tests/test_lsp_deadlines.py keeps the same cases over
the real child process, and the command line's.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Iterator

import pytest

from jsonrpc_threads import RequestTimeout
from jsonrpc_threads.lsp import LspClient

from .memory_peers import PeerEnds, lsp_fake_server
from .test_lsp_deadlines import CALL_TIMEOUT_S, LATE_S, PROMPT_MARGIN_S, QUERIES, SENDS, SLOW_HANDSHAKE_S, WAIT_S


@pytest.fixture
def ends() -> Iterator[PeerEnds]:
    made = PeerEnds()
    yield made
    made.close_all()


def client(ends: PeerEnds, root: Path, *flags: str) -> LspClient:
    return LspClient(ends.add(lsp_fake_server(*flags)).transport, root_uri=root, default_timeout=WAIT_S)


def initializes(lsp: LspClient) -> int:
    received: Any = lsp.call("test/received", timeout=WAIT_S)
    return sum(1 for message in received if message.get("method") == "initialize")


def test_a_first_query_ends_at_its_own_deadline_and_the_handshake_goes_on(ends: PeerEnds, tmp_path: Path) -> None:
    lsp = client(ends, tmp_path, "--initialize-delay", "1.5")
    try:
        started = time.monotonic()
        with pytest.raises(RequestTimeout) as caught:
            lsp.hover("file:///x.py", 0, 0, timeout=0.5)
        assert 0.5 <= time.monotonic() - started < 0.5 + LATE_S
        assert caught.value.timeout == 0.5
        assert "the handshake was still waiting for initialize" in str(caught.value)
        assert lsp.hover("file:///x.py", 0, 0, timeout=WAIT_S) == {"contents": "hover at 0:0"}
        assert initializes(lsp) == 1
    finally:
        lsp.close()


@pytest.mark.parametrize("entry", sorted(QUERIES))
def test_every_query_ends_at_its_one_deadline_after_a_slow_handshake(
    ends: PeerEnds, tmp_path: Path, entry: str
) -> None:
    # The handshake takes SLOW_HANDSHAKE_S of the call's timeout; the query, which hangs, gets the rest.
    lsp = client(ends, tmp_path, "--initialize-delay", str(SLOW_HANDSHAKE_S), "--queries-hang")
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
def test_every_send_ends_at_its_deadline_while_the_handshake_runs(ends: PeerEnds, tmp_path: Path, entry: str) -> None:
    lsp = client(ends, tmp_path, "--initialize-delay", "30")
    try:
        started = time.monotonic()
        with pytest.raises(RequestTimeout) as caught:
            SENDS[entry](lsp, 0.3)
        assert time.monotonic() - started < 0.3 + PROMPT_MARGIN_S
        assert caught.value.timeout == 0.3
    finally:
        lsp.close()
