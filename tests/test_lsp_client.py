"""LspClient against a small language server that shows the protocol's corners on demand.

The peer is tests/peers/lsp_fake_server.py, a real child process framed with
Content-Length: it reports every message it received (``test/received``),
sends the client requests and notifications when asked (``test/ask``,
``test/notify``), holds a request until it is cancelled (``test/hang``), and
can ignore ``shutdown``, ``exit``, end of input and SIGTERM.  The real servers
(pylsp, pyright) are in test_lsp_servers.py.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional

import psutil
import pytest

from jsonrpc_threads import RequestCancelled, RequestTimeout, StdioTransport, TransportClosed
from jsonrpc_threads.lsp import CLOSE_BOUND_S, EXIT_GRACE_S, SHUTDOWN_TIMEOUT_S, LspClient
from jsonrpc_threads.transports.stdio import STDIN_CLOSE_GRACE_S

from .conftest import peer_command

#: The longest any single exchange with the fake may take.
WAIT_S = 10.0


def fake(*flags: str) -> List[str]:
    return peer_command("lsp_fake_server", *flags)


@pytest.fixture
def lsp(tmp_path: Path) -> Iterator[LspClient]:
    with LspClient(fake(), root_uri=tmp_path, default_timeout=WAIT_S) as client:
        yield client


def received(lsp: LspClient, method: Optional[str] = None) -> List[Dict[str, Any]]:
    messages: List[Dict[str, Any]] = lsp.call("test/received")
    return [m for m in messages if method is None or m.get("method") == method]


def ask(lsp: LspClient, method: str, params: Any = None) -> Any:
    """Have the server send the client a request; returns the client's response."""
    return lsp.call("test/ask", {"method": method, "params": params})


# -- the handshake ------------------------------------------------------------------------------


def test_the_handshake_declares_only_what_the_client_does(tmp_path: Path) -> None:
    with LspClient(fake(), root_uri=tmp_path) as plain:
        initialize, initialized = received(plain)[:2]
    params = initialize["params"]
    assert initialized["method"] == "initialized"
    assert params["rootUri"] == tmp_path.as_uri() and params["rootPath"] == str(tmp_path)
    assert params["workspaceFolders"] == [{"uri": tmp_path.as_uri(), "name": tmp_path.name}]
    assert params["clientInfo"]["name"] == "jsonrpc_threads"
    assert params["capabilities"]["general"]["positionEncodings"] == ["utf-16"]
    assert "applyEdit" not in params["capabilities"]["workspace"]
    assert "initializationOptions" not in params
    with LspClient(
        fake(), root_uri=tmp_path, on_apply_edit=lambda p: {"applied": True}, initialization_options={"x": 1}
    ) as editing:
        params = received(editing, "initialize")[0]["params"]
    assert params["capabilities"]["workspace"]["applyEdit"] is True
    assert params["initializationOptions"] == {"x": 1}


def test_settings_are_sent_after_initialized_and_served_by_section(tmp_path: Path) -> None:
    settings = {"python": {"analysis": {"mode": "strict"}}}
    with LspClient(fake(), root_uri=tmp_path, settings=settings) as lsp:
        methods = [m.get("method") for m in received(lsp)]
        assert methods[:3] == ["initialize", "initialized", "workspace/didChangeConfiguration"]
        assert received(lsp, "workspace/didChangeConfiguration")[0]["params"] == {"settings": settings}
        answer = ask(lsp, "workspace/configuration", {"items": [{"section": "python.analysis"}, {"section": "x"}]})
        assert answer == {"result": [{"mode": "strict"}, None]}
        lsp.set_settings({"python": {"analysis": {"mode": "basic"}}})
        assert received(lsp, "workspace/didChangeConfiguration")[-1]["params"]["settings"]["python"] == {
            "analysis": {"mode": "basic"}
        }
        assert ask(lsp, "workspace/configuration", {"items": [{"section": "python.analysis.mode"}]}) == {
            "result": ["basic"]
        }


def test_the_position_encoding_is_negotiated(tmp_path: Path) -> None:
    text = "s = 'é\U0001d518'; t = s\n"
    offset = text.index("t =")
    with LspClient(fake("--encoding", "utf-8"), root_uri=tmp_path, position_encodings=("utf-8", "utf-16")) as lsp:
        assert lsp.position_encoding == "utf-8"
        uri = lsp.open(tmp_path / "a.py", text)
        assert lsp.position_at(uri, offset) == (0, 14)  # é is 2 bytes, the Fraktur U 4
        assert lsp.offset_at(uri, 0, 14) == offset
        assert lsp.hover(uri, *lsp.position_at(uri, offset)) == {"contents": "hover at 0:14"}
    with LspClient(fake(), root_uri=tmp_path) as lsp:
        assert lsp.position_encoding == "utf-16"
        uri = lsp.open(tmp_path / "a.py", text)
        assert lsp.position_at(uri, offset) == (0, 11)  # the Fraktur U is 2 UTF-16 units


def test_the_handshake_runs_once_whichever_thread_comes_first(tmp_path: Path) -> None:
    lsp = LspClient(fake(), root_uri=tmp_path, default_timeout=WAIT_S)
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
        assert lsp.server_capabilities["hoverProvider"] is True
    finally:
        lsp.close()


def test_bad_arguments_fail_before_a_process_starts(tmp_path: Path) -> None:
    before = len(psutil.Process().children())
    with pytest.raises(ValueError, match="position encoding"):
        LspClient(fake(), root_uri=tmp_path, position_encodings=("utf-7",))
    with StdioTransport(fake(), framing="lines") as transport, pytest.raises(ValueError, match="Content-Length"):
        LspClient(transport, root_uri=tmp_path)
    with StdioTransport(fake(), framing="content-length") as transport, pytest.raises(ValueError, match="cwd"):
        LspClient(transport, root_uri=tmp_path, cwd=tmp_path)
    assert len(psutil.Process().children()) == before


# -- the server's requests and notifications ---------------------------------------------------------


def test_edits_are_refused_without_a_handler_and_decided_by_one(lsp: LspClient, tmp_path: Path) -> None:
    edit = {"edit": {"changes": {}}}
    assert ask(lsp, "workspace/applyEdit", edit)["result"]["applied"] is False
    threads: List[str] = []

    def apply(params: Dict[str, Any]) -> Dict[str, Any]:
        threads.append(threading.current_thread().name)
        nested = editing.call("test/received")  # a handler may call back into the client
        return {"applied": bool(nested)}

    with LspClient(fake(), root_uri=tmp_path, on_apply_edit=apply, default_timeout=WAIT_S) as editing:
        assert ask(editing, "workspace/applyEdit", edit) == {"result": {"applied": True}}
    assert threads and threads[0].startswith("jsonrpc-handler")


def test_show_message_requests_get_the_first_action_or_the_handlers_choice(lsp: LspClient, tmp_path: Path) -> None:
    params = {"type": 2, "message": "Reload?", "actions": [{"title": "Yes"}, {"title": "No"}]}
    assert ask(lsp, "window/showMessageRequest", params) == {"result": {"title": "Yes"}}
    assert ask(lsp, "window/showMessageRequest", {"type": 3, "message": "FYI"}) == {"result": None}
    with LspClient(fake(), root_uri=tmp_path, on_show_message_request=lambda p: p["actions"][-1]) as choosing:
        assert ask(choosing, "window/showMessageRequest", params) == {"result": {"title": "No"}}


def test_registrations_are_accepted_and_recorded(lsp: LspClient) -> None:
    registration = {"id": "w1", "method": "workspace/didChangeWatchedFiles", "registerOptions": {"watchers": []}}
    assert ask(lsp, "client/registerCapability", {"registrations": [registration]}) == {"result": None}
    assert lsp.registrations == {"w1": registration}
    ask(lsp, "client/unregisterCapability", {"unregisterations": [{"id": "w1", "method": registration["method"]}]})
    assert lsp.registrations == {}
    assert ask(lsp, "workspace/workspaceFolders")["result"][0]["uri"] == lsp.root_uri
    assert "error" in ask(lsp, "workspace/noSuchThing")  # answered -32601, never left hanging


def test_server_created_progress_reaches_on_progress_and_log_messages_reach_logging(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    reports: List[Dict[str, Any]] = []
    threads: List[str] = []
    done = threading.Event()

    def on_progress(params: Dict[str, Any]) -> None:
        threads.append(threading.current_thread().name)
        reports.append(params)
        if params["value"].get("kind") == "end":
            done.set()

    caplog.set_level(logging.DEBUG, logger="jsonrpc_threads.lsp.server_log")
    with LspClient(fake(), root_uri=tmp_path, on_progress=on_progress, default_timeout=WAIT_S) as lsp:
        assert ask(lsp, "window/workDoneProgress/create", {"token": "index"}) == {"result": None}
        for value in ({"kind": "begin", "title": "Indexing"}, {"kind": "end"}):
            lsp.call("test/notify", {"method": "$/progress", "params": {"token": "index", "value": value}})
        for kind, text in ((1, "it broke"), (2, "careful"), (3, "fyi"), (4, "trace")):
            lsp.call("test/notify", {"method": "window/logMessage", "params": {"type": kind, "message": text}})
        assert done.wait(WAIT_S)
    assert [r["value"]["kind"] for r in reports] == ["begin", "end"]
    assert all(name.startswith("jsonrpc-notify") for name in threads)
    logged = [(r.levelno, r.getMessage()) for r in caplog.records if r.name == "jsonrpc_threads.lsp.server_log"]
    assert logged == [
        (logging.ERROR, "it broke"),
        (logging.WARNING, "careful"),
        (logging.INFO, "fyi"),
        (logging.DEBUG, "trace"),
    ]


# -- cancellation and partial results --------------------------------------------------------------------


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
    assert isinstance(error, RequestCancelled)
    assert error.code == -32800 and error.message == "cancelled"


def test_partial_results_are_joined_into_the_result(lsp: LspClient, tmp_path: Path) -> None:
    uri = lsp.open(tmp_path / "a.py", "x = 1\n")
    reports: List[Dict[str, Any]] = []
    assert len(lsp.references(uri, 0, 0)) == 2  # no token: the whole answer at once
    joined = lsp.references(uri, 0, 0, on_progress=reports.append)
    assert len(joined) == 2 and joined[0]["uri"] == uri
    kinds = ["partial" if isinstance(r["value"], list) else r["value"]["kind"] for r in reports]
    assert kinds == ["partial", "partial", "end"]  # all delivered before references() returned
    sent = received(lsp, "textDocument/references")[-1]["params"]
    assert {"workDoneToken", "partialResultToken"} <= set(sent)


# -- documents and diagnostics --------------------------------------------------------------------------


def test_diagnostics_wait_for_the_version_last_sent(lsp: LspClient, tmp_path: Path) -> None:
    uri = lsp.open(tmp_path / "a.py", "ok\n")
    assert lsp.diagnostics(uri) == []
    assert lsp.diagnostics(uri) == []  # already published for version 1: at once
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


def test_diagnostics_without_versions_are_those_published_after_the_change(tmp_path: Path) -> None:
    with LspClient(fake("--no-versions"), root_uri=tmp_path, default_timeout=WAIT_S) as lsp:
        uri = lsp.open(tmp_path / "a.py", "error\n")
        assert len(lsp.diagnostics(uri)) == 1
        lsp.change(uri, "fine\n")
        assert lsp.diagnostics(uri) == []


def test_a_diagnostics_wait_is_bounded_and_ends_with_the_server(tmp_path: Path) -> None:
    with LspClient(fake("--no-sync"), root_uri=tmp_path, default_timeout=WAIT_S) as lsp:
        uri = lsp.open(tmp_path / "a.py", "error\n")  # the server asked for no didOpen: none is sent
        assert received(lsp, "textDocument/didOpen") == []
        with pytest.raises(RequestTimeout) as caught:
            lsp.diagnostics(uri, timeout=0.1)
        assert "version 1" in caught.value.hint
        failed: List[BaseException] = []
        waiting = threading.Thread(target=lambda: _record(failed, lambda: lsp.diagnostics(uri, timeout=None)))
        waiting.start()
        lsp.transport.close()  # the server goes away while the caller waits
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
    assert lsp.document_version(uri) == 81


# -- closing ------------------------------------------------------------------------------------------------


def test_close_sends_shutdown_then_exit_and_the_server_exits_by_itself(tmp_path: Path) -> None:
    lsp = LspClient(fake(), root_uri=tmp_path)
    with lsp:
        transport = lsp.transport
    assert transport.returncode == 0  # type: ignore[attr-defined]  # it exited on "exit", nothing was signalled
    assert lsp.closed
    with pytest.raises(TransportClosed):
        lsp.hover("file:///x.py", 0, 0)


def test_a_server_that_ignores_shutdown_exit_eof_and_sigterm_is_reclaimed_within_the_close_bound(
    tmp_path: Path,
) -> None:
    lsp = LspClient(fake("--ignore-shutdown", "--stubborn"), root_uri=tmp_path, default_timeout=WAIT_S)
    lsp.initialize()
    process = psutil.Process(lsp.transport.pid)  # type: ignore[attr-defined]
    started = time.monotonic()
    lsp.close()
    elapsed = time.monotonic() - started
    assert elapsed < CLOSE_BOUND_S, elapsed
    assert elapsed >= SHUTDOWN_TIMEOUT_S  # it waited for the answer to shutdown, no longer
    assert not process.is_running() or process.status() == psutil.STATUS_ZOMBIE
    assert lsp.transport.returncode == -9  # type: ignore[attr-defined]


def test_a_server_slow_to_exit_after_exit_costs_a_short_grace_and_its_tree_is_reclaimed(tmp_path: Path) -> None:
    """Issue 37, item 12: a server told ``shutdown`` (answered) and ``exit`` gets EXIT_GRACE_S, not the stdin grace.

    The peer behaves as jedi-language-server does: it answers ``shutdown``, then
    ignores ``exit`` and the end of its input; SIGTERM ends it.  Its own child
    must be gone too.
    """
    lsp = LspClient(fake("--slow-exit", "--grandchild"), root_uri=tmp_path, default_timeout=WAIT_S)
    lsp.initialize()
    server = psutil.Process(lsp.transport.pid)  # type: ignore[attr-defined]
    tree = [server, *server.children(recursive=True)]
    assert len(tree) == 2, tree
    started = time.monotonic()
    lsp.close()
    elapsed = time.monotonic() - started
    assert elapsed < STDIN_CLOSE_GRACE_S, elapsed  # it took the whole stdin grace, and more, before
    assert elapsed >= EXIT_GRACE_S, elapsed  # the server had its grace to exit by itself
    assert lsp.transport.returncode == -signal.SIGTERM  # type: ignore[attr-defined]
    _, alive = psutil.wait_procs(tree, timeout=WAIT_S)
    assert [p for p in alive if p.status() != psutil.STATUS_ZOMBIE] == []


def test_closing_before_the_handshake_only_reclaims(tmp_path: Path) -> None:
    lsp = LspClient(fake(), root_uri=tmp_path)
    lsp.close()
    lsp.close()  # idempotent
    with pytest.raises(TransportClosed):
        lsp.initialize()


def _record(into: List[BaseException], call: Any) -> None:
    try:
        call()
    except BaseException as exc:
        into.append(exc)
