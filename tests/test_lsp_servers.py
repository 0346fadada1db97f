"""LspClient against real language servers: python-lsp-server (PyPI) and pyright (npm).

Each test writes a small project into ``tmp_path`` (tests/peers/lsp_servers.py:
``lib.py`` defines ``greet`` and ``Greeter``, ``main.py`` uses them,
``broken.py`` names an undefined variable), starts the server, and asks what
an agent asks: where a name is defined (across files), who uses it, what it
is, what the server reports about a file with an error (and about the fixed
text), which edits rename it, what completes, which symbols there are.  A
server killed mid-request fails what is pending with its exit code and the
end of its stderr.  Every wait is bounded by the calls' own timeouts.
"""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Set, Tuple

import pytest

from jsonrpc_threads import JsonRpcClient, RemoteError, RequestTimeout, StdioTransport, TransportClosed
from jsonrpc_threads.lsp import LspClient, uri_to_path

from .peers.lsp_servers import PROJECT, pylsp_command, pyright_command, write_project

#: Seconds any one request (or the wait for diagnostics) may take: pyright analyses on start.
TIMEOUT_S = 30.0

SERVERS: Dict[str, Callable[[], List[str]]] = {"pylsp": pylsp_command, "pyright": pyright_command}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return write_project(tmp_path)


@pytest.fixture(params=sorted(SERVERS))
def lsp(request: pytest.FixtureRequest, project: Path) -> Iterator[LspClient]:
    command = SERVERS[request.param]()
    with LspClient(command, root_uri=project, default_timeout=TIMEOUT_S) as client:
        yield client


def open_analysed(lsp: LspClient, path: Path, text: Optional[str] = None) -> str:
    """Open a document and wait for its diagnostics.

    A server answers from what it has analysed so far (pyright, asked at once,
    finds no uses in files it has not looked at yet): the diagnostics of the
    open document mean it is done with it, and with the workspace it needed.
    """
    uri = lsp.open(path, text)
    lsp.diagnostics(uri)
    return uri


def at(lsp: LspClient, uri: str, needle: str, nth: int = 0) -> Tuple[int, int]:
    """The position of the ``nth`` occurrence of ``needle`` in the document."""
    text = lsp.document_text(uri) or uri_to_path(uri).read_text(encoding="utf-8")
    offset = -1
    for _ in range(nth + 1):
        offset = text.index(needle, offset + 1)
    return lsp.position_at(uri, offset)


def places(result: Any) -> Set[Tuple[str, int, int]]:
    """(file name, line, character) of each Location or LocationLink in a result."""
    items = result if isinstance(result, list) else [result] if result else []
    found = set()
    for item in items:
        uri = item.get("uri") or item["targetUri"]
        start = (item.get("range") or item["targetSelectionRange"])["start"]
        found.add((uri_to_path(uri).name, start["line"], start["character"]))
    return found


def texts_of(edit: Dict[str, Any]) -> Dict[str, List[str]]:
    """File name -> the new texts of a WorkspaceEdit's edits (``changes`` or ``documentChanges``)."""
    found: Dict[str, List[str]] = {}
    for uri, edits in (edit.get("changes") or {}).items():
        found.setdefault(uri_to_path(uri).name, []).extend(e["newText"] for e in edits)
    for change in edit.get("documentChanges") or []:
        name = uri_to_path(change["textDocument"]["uri"]).name
        found.setdefault(name, []).extend(e["newText"] for e in change["edits"])
    return found


# -- the requests ------------------------------------------------------------------------


def test_definition_across_files(lsp: LspClient, project: Path) -> None:
    main = open_analysed(lsp, project / "main.py")
    line, character = at(lsp, main, "greet", nth=1)  # the call, not the import
    assert (line, character) == (2, 10)
    assert places(lsp.definition(main, line, character)) == {("lib.py", 0, 4)}


def test_references_include_both_files(lsp: LspClient, project: Path) -> None:
    lib = open_analysed(lsp, project / "lib.py")
    found = places(lsp.references(lib, *at(lsp, lib, "greet")))
    assert {("lib.py", 0, 4), ("lib.py", 7, 15), ("main.py", 2, 10)} <= found
    without = places(lsp.references(lib, *at(lsp, lib, "greet"), include_declaration=False))
    assert ("main.py", 2, 10) in without and ("lib.py", 0, 4) not in without


def test_hover_shows_the_signature_and_the_docstring(lsp: LspClient, project: Path) -> None:
    main = lsp.open(project / "main.py")
    hover = lsp.hover(main, *at(lsp, main, "greet", nth=1))
    contents = hover["contents"]
    text = contents["value"] if isinstance(contents, dict) else str(contents)
    assert "greet(name: str) -> str" in text
    assert "Say hello to someone." in text


def test_diagnostics_of_a_file_with_an_error_then_of_the_fixed_text(lsp: LspClient, project: Path) -> None:
    broken = lsp.open(project / "broken.py")
    diagnostics = lsp.diagnostics(broken, timeout=TIMEOUT_S)
    undefined = [d for d in diagnostics if "undefined_name" in d["message"]]
    assert undefined, diagnostics
    assert undefined[0]["range"]["start"]["line"] == 2
    assert lsp.change(broken, 'import os\n\nprint(os.sep, "fixed")\n') == 2
    assert not [d for d in lsp.diagnostics(broken, timeout=TIMEOUT_S) if "undefined_name" in d["message"]]


def test_diagnostics_after_a_reopen_are_those_of_the_new_text(lsp: LspClient, project: Path) -> None:
    """Issue 37, item 1: a reopened document gets a version never sent before for its URI.

    Had the versions restarted at 1, the old text's publication (of version 1)
    would answer for the new text at once; pylsp's ``[]`` for the ``didClose``
    carries no version, and must not answer for the reopened text either.
    """
    broken = lsp.open(project / "broken.py")
    assert [d for d in lsp.diagnostics(broken) if "undefined_name" in d["message"]]
    lsp.close_document(broken)
    other = "import os\n\n\n\nprint(os.sep, another_undefined)\n"
    assert lsp.open(broken, other) == broken
    diagnostics = lsp.diagnostics(broken)
    assert not [d for d in diagnostics if "undefined_name" in d["message"]], diagnostics
    found = [d for d in diagnostics if "another_undefined" in d["message"]]
    assert [d["range"]["start"]["line"] for d in found] == [4], diagnostics
    assert lsp.document_version(broken) == 2  # one more than the last version sent for that URI


def test_rename_returns_the_edits_and_applies_none(lsp: LspClient, project: Path) -> None:
    lib = open_analysed(lsp, project / "lib.py")
    edit = lsp.rename(lib, *at(lsp, lib, "greet"), "salute")
    texts = texts_of(edit)
    assert {"lib.py", "main.py"} <= set(texts), edit
    assert all("salute" in text for name in ("lib.py", "main.py") for text in texts[name])
    for name, text in PROJECT.items():
        assert (project / name).read_text(encoding="utf-8") == text  # nothing was applied


def test_completion_sees_the_open_text_not_the_disk(lsp: LspClient, project: Path) -> None:
    text = PROJECT["main.py"] + "Greeter().sh"
    main = open_analysed(lsp, project / "main.py", text)
    line, character = lsp.position_at(main, len(text))
    completion = lsp.completion(main, line, character)
    items = completion["items"] if isinstance(completion, dict) else completion
    assert any(item["label"].startswith("shout") for item in items), items  # pylsp: "shout(name)"


def test_document_symbols(lsp: LspClient, project: Path) -> None:
    lib = lsp.open(project / "lib.py")
    symbols = lsp.document_symbols(lib)
    names = {symbol["name"] for symbol in symbols}
    names |= {child["name"] for symbol in symbols for child in symbol.get("children", [])}
    assert {"greet", "Greeter", "shout"} <= names


def test_pyright_streams_partial_results_that_the_helpers_join(project: Path) -> None:
    reports: List[Dict[str, Any]] = []
    with LspClient(pyright_command(), root_uri=project, default_timeout=TIMEOUT_S) as lsp:
        lib = open_analysed(lsp, project / "lib.py")
        position = at(lsp, lib, "greet")
        plain = places(lsp.references(lib, *position))
        streamed = places(lsp.references(lib, *position, on_progress=reports.append))
        symbols = lsp.workspace_symbols("greet", on_progress=reports.append)
    assert streamed == plain and ("main.py", 2, 10) in plain
    partial = [report for report in reports if isinstance(report["value"], list)]
    assert partial, reports  # pyright sent pieces under the partialResultToken (and answered [])
    assert {(uri_to_path(s["location"]["uri"]).name, s["name"]) for s in symbols} >= {("lib.py", "greet")}


def test_pylsp_has_no_workspace_symbols_and_says_so(project: Path) -> None:
    command = pylsp_command()
    with LspClient(command, root_uri=project, default_timeout=TIMEOUT_S) as lsp, pytest.raises(RemoteError) as caught:
        lsp.workspace_symbols("greet")
    assert caught.value.code == -32601


# -- failures ----------------------------------------------------------------------------


def test_a_server_killed_mid_request_fails_the_pending_calls_with_its_exit_code_and_stderr(project: Path) -> None:
    lsp = LspClient([*pylsp_command(), "-v"], root_uri=project, default_timeout=TIMEOUT_S)
    with lsp:
        main = lsp.open(project / "main.py")
        pid = lsp.transport.pid  # type: ignore[attr-defined]
        os.kill(pid, signal.SIGSTOP)  # it reads nothing more: the requests below stay pending
        futures = [
            lsp.request("textDocument/hover", {"textDocument": {"uri": main}, "position": p})
            for p in (
                {"line": 2, "character": 10},
                {"line": 3, "character": 6},
            )
        ]
        blocked: List[BaseException] = []
        caller = threading.Thread(target=lambda: _record(blocked, lambda: lsp.definition(main, 2, 10)))
        caller.start()
        os.kill(pid, signal.SIGKILL)
        errors = [future.exception(timeout=TIMEOUT_S) for future in futures]
        caller.join(TIMEOUT_S)
        assert not caller.is_alive()
    for error in [*errors, *blocked]:
        assert isinstance(error, TransportClosed), error
        assert error.returncode == -signal.SIGKILL
        assert "pylsp" in error.stderr_tail  # its -v log lines, up to the kill
    assert len(blocked) == 1


# -- the mistake of issue 13: a language server on a line-framed transport --------------------------

#: How long the mistaken ``initialize`` below waits: the server will never answer it.
MISFRAMED_TIMEOUT_S = 1.0
_INITIALIZE = {"processId": None, "rootUri": None, "capabilities": {}}


def test_a_line_framed_transport_on_pyright_says_to_use_content_length() -> None:
    with JsonRpcClient(StdioTransport(pyright_command())) as client, pytest.raises(RequestTimeout) as caught:
        client.call("initialize", _INITIALIZE, timeout=MISFRAMED_TIMEOUT_S)
    assert 'framing="content-length"' in caught.value.hint  # pyright answers the bad frame in its own framing


def test_a_line_framed_transport_on_pylsp_hints_at_the_framing_too() -> None:
    with JsonRpcClient(StdioTransport(pylsp_command())) as client, pytest.raises(RequestTimeout) as caught:
        client.call("initialize", _INITIALIZE, timeout=MISFRAMED_TIMEOUT_S)
    assert "content-length" in caught.value.hint.lower()


def _record(into: List[BaseException], call: Callable[[], Any]) -> None:
    try:
        call()
    except BaseException as exc:
        into.append(exc)
