"""LspClient's documents, diagnostics, handshake and server requests, in memory: the pure tier's LSP tests.

The server is tests/peers/lsp_fake_server.py's, run in this process over a
``MemoryTransport`` pair (tests/memory_peers.py): it reports what it received
(``test/received``), sends the client requests and notifications when asked
(``test/ask``, ``test/notify``), publishes one diagnostic per line holding
``error`` after each open and change, and holds ``test/hang`` until it is
cancelled.  tests/test_lsp_client.py keeps the same behaviours over the real
child process (and its ways of ending: shutdown, exit, signals).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional

import pytest

from jsonrpc_threads import RequestCancelled, RequestTimeout, TransportClosed
from jsonrpc_threads.lsp import LspClient

from .memory_peers import PeerEnds, lsp_fake_server

WAIT_S = 10.0


@pytest.fixture
def ends() -> Iterator[PeerEnds]:
    made = PeerEnds()
    yield made
    made.close_all()


def client(ends: PeerEnds, root: Path, *flags: str, **options: Any) -> LspClient:
    options.setdefault("default_timeout", WAIT_S)
    return LspClient(ends.add(lsp_fake_server(*flags)).transport, root_uri=root, **options)


@pytest.fixture
def lsp(ends: PeerEnds, tmp_path: Path) -> Iterator[LspClient]:
    with client(ends, tmp_path) as made:
        yield made


def received(lsp: LspClient, method: Optional[str] = None) -> List[Dict[str, Any]]:
    messages: List[Dict[str, Any]] = lsp.call("test/received")
    return [m for m in messages if method is None or m.get("method") == method]


def ask(lsp: LspClient, method: str, params: Any = None) -> Any:
    return lsp.call("test/ask", {"method": method, "params": params})


# -- the handshake ------------------------------------------------------------------------------------


def test_the_handshake_declares_only_what_the_client_does(ends: PeerEnds, tmp_path: Path) -> None:
    with client(ends, tmp_path) as plain:
        initialize, initialized = received(plain)[:2]
    params = initialize["params"]
    assert initialized["method"] == "initialized"
    assert params["rootUri"] == tmp_path.as_uri() and params["rootPath"] == str(tmp_path)
    assert params["capabilities"]["general"]["positionEncodings"] == ["utf-16"]
    assert "applyEdit" not in params["capabilities"]["workspace"]
    with client(ends, tmp_path, on_apply_edit=lambda p: {"applied": True}, initialization_options={"x": 1}) as editing:
        params = received(editing, "initialize")[0]["params"]
    assert params["capabilities"]["workspace"]["applyEdit"] is True
    assert params["initializationOptions"] == {"x": 1}


def test_the_position_encoding_is_negotiated(ends: PeerEnds, tmp_path: Path) -> None:
    text = "s = 'é\U0001d518'; t = s\n"
    offset = text.index("t =")
    with client(ends, tmp_path, "--encoding", "utf-8", position_encodings=("utf-8", "utf-16")) as lsp:
        assert lsp.position_encoding == "utf-8"
        uri = lsp.open(tmp_path / "a.py", text)
        assert lsp.position_at(uri, offset) == (0, 14)
        assert lsp.hover(uri, *lsp.position_at(uri, offset)) == {"contents": "hover at 0:14"}
    with client(ends, tmp_path) as lsp:
        assert lsp.position_encoding == "utf-16"
        uri = lsp.open(tmp_path / "a.py", text)
        assert lsp.position_at(uri, offset) == (0, 11)


def test_the_handshake_runs_once_whichever_thread_comes_first(ends: PeerEnds, tmp_path: Path) -> None:
    lsp = client(ends, tmp_path)
    try:
        start = threading.Barrier(4)
        answers: List[Any] = []

        def use() -> None:
            start.wait(WAIT_S)
            answers.append(lsp.hover("file:///x.py", 0, 0))

        threads = [threading.Thread(target=use) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(WAIT_S)
        assert answers == [{"contents": "hover at 0:0"}] * 4
        assert len(received(lsp, "initialize")) == 1
        assert lsp.server_info == {"name": "fake", "version": "1"}
    finally:
        lsp.close()


# -- the server's requests --------------------------------------------------------------------------


def test_edits_are_refused_without_a_handler_and_decided_by_one(lsp: LspClient, ends: PeerEnds, tmp_path: Path) -> None:
    edit = {"edit": {"changes": {}}}
    assert ask(lsp, "workspace/applyEdit", edit)["result"]["applied"] is False

    def apply(params: Dict[str, Any]) -> Dict[str, Any]:
        return {"applied": bool(editing.call("test/received"))}  # a handler may call back into the client

    with client(ends, tmp_path, on_apply_edit=apply) as editing:
        assert ask(editing, "workspace/applyEdit", edit) == {"result": {"applied": True}}


def test_registrations_are_accepted_and_recorded(lsp: LspClient) -> None:
    registration = {"id": "w1", "method": "workspace/didChangeWatchedFiles", "registerOptions": {"watchers": []}}
    assert ask(lsp, "client/registerCapability", {"registrations": [registration]}) == {"result": None}
    assert lsp.registrations == {"w1": registration}
    ask(lsp, "client/unregisterCapability", {"unregisterations": [{"id": "w1", "method": registration["method"]}]})
    assert lsp.registrations == {}
    assert "error" in ask(lsp, "workspace/noSuchThing")


# -- cancellation and partial results -------------------------------------------------------------------


def test_a_timeout_sends_cancel_request(lsp: LspClient) -> None:
    cancelled: List[Any] = []
    told = threading.Event()
    lsp.rpc.on_notification("test/cancelled", lambda p: (cancelled.append(p["id"]), told.set()))
    with pytest.raises(RequestTimeout) as caught:
        lsp.call("test/hang", timeout=0.2)
    assert told.wait(WAIT_S)
    assert cancelled == [caught.value.request_id]


def test_a_request_the_server_cancels_raises_request_cancelled(lsp: LspClient) -> None:
    future = lsp.request("test/hang")
    lsp.notify("$/cancelRequest", {"id": future.request_id})  # type: ignore[attr-defined]
    error = future.exception(timeout=WAIT_S)
    assert isinstance(error, RequestCancelled) and error.code == -32800


def test_partial_results_are_joined_into_the_result(lsp: LspClient, tmp_path: Path) -> None:
    uri = lsp.open(tmp_path / "a.py", "x = 1\n")
    reports: List[Dict[str, Any]] = []
    assert len(lsp.references(uri, 0, 0)) == 2
    joined = lsp.references(uri, 0, 0, on_progress=reports.append)
    assert len(joined) == 2 and joined[0]["uri"] == uri
    kinds = ["partial" if isinstance(r["value"], list) else r["value"]["kind"] for r in reports]
    assert kinds == ["partial", "partial", "end"]


# -- documents and diagnostics ---------------------------------------------------------------------------


def test_diagnostics_wait_for_the_version_last_sent(lsp: LspClient, tmp_path: Path) -> None:
    uri = lsp.open(tmp_path / "a.py", "ok\n")
    assert lsp.diagnostics(uri) == []
    assert lsp.diagnostics(uri) == []
    assert lsp.change(uri, "error\nok\nerror\n") == 2
    messages = [d["message"] for d in lsp.diagnostics(uri)]
    assert messages == ["error on line 1 (version 2)", "error on line 3 (version 2)"]
    assert lsp.document_version(uri) == 2 and lsp.document_text(uri) == "error\nok\nerror\n"
    lsp.close_document(uri)
    assert lsp.document_version(uri) is None
    with pytest.raises(ValueError, match="not open"):
        lsp.change(uri, "x")
    sent = [
        (m["method"], m["params"]["textDocument"].get("version"))
        for m in received(lsp)
        if m.get("method", "").startswith("textDocument/did")
    ]
    assert sent == [("textDocument/didOpen", 1), ("textDocument/didChange", 2), ("textDocument/didClose", None)]


def test_diagnostics_without_versions_are_those_published_after_the_change(ends: PeerEnds, tmp_path: Path) -> None:
    with client(ends, tmp_path, "--no-versions") as lsp:
        uri = lsp.open(tmp_path / "a.py", "error\n")
        assert len(lsp.diagnostics(uri)) == 1
        lsp.change(uri, "fine\n")
        assert lsp.diagnostics(uri) == []


def test_a_diagnostics_wait_is_bounded_and_ends_with_the_server(ends: PeerEnds, tmp_path: Path) -> None:
    end = ends.add(lsp_fake_server("--no-sync"))
    with LspClient(end.transport, root_uri=tmp_path, default_timeout=WAIT_S) as lsp:
        uri = lsp.open(tmp_path / "a.py", "error\n")  # the server asked for no didOpen: none is sent
        assert received(lsp, "textDocument/didOpen") == []
        with pytest.raises(RequestTimeout) as caught:
            lsp.diagnostics(uri, timeout=0.1)
        assert "version 1" in caught.value.hint
        failed: List[BaseException] = []
        waiting = threading.Thread(target=lambda: _record(failed, lambda: lsp.diagnostics(uri, timeout=None)))
        waiting.start()
        end.crash()  # the server goes away while the caller waits
        waiting.join(WAIT_S)
        assert not waiting.is_alive()
    assert len(failed) == 1 and isinstance(failed[0], TransportClosed)


def test_concurrent_changes_reach_the_server_in_version_order(lsp: LspClient, tmp_path: Path) -> None:
    uri = lsp.open(tmp_path / "a.py", "start\n")
    start = threading.Barrier(8)

    def edit(worker: int) -> None:
        start.wait(WAIT_S)
        for n in range(10):
            lsp.change(uri, f"worker {worker} edit {n}\n")

    threads = [threading.Thread(target=edit, args=(worker,)) for worker in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT_S)
    changes = received(lsp, "textDocument/didChange")
    assert [c["params"]["textDocument"]["version"] for c in changes] == list(range(2, 82))
    assert changes[-1]["params"]["contentChanges"][0]["text"] == lsp.document_text(uri)


def test_close_sends_shutdown_then_exit(ends: PeerEnds, tmp_path: Path) -> None:
    lsp = client(ends, tmp_path)
    lsp.hover("file:///x.py", 0, 0)
    end = ends.made[-1]
    lsp.close()
    assert [m.get("method") for m in end.peer.received[-2:]] == ["shutdown", "exit"]


def _record(failed: List[BaseException], step: Any) -> None:
    try:
        step()
    except BaseException as exc:
        failed.append(exc)
