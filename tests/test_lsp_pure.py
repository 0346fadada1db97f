"""The pure parts of jsonrpc_threads.lsp: positions, URIs, capabilities, documents, ordering, progress joins."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jsonrpc_threads.deadlines.timeouts import deadline_after
from jsonrpc_threads.errors import RequestTimeout
from jsonrpc_threads.lsp import LANGUAGE_IDS, language_id_for, offset_from_position, path_to_uri, position_from_offset
from jsonrpc_threads.lsp._ordering import InOrder
from jsonrpc_threads.lsp.capabilities import (
    SYNC_FULL,
    SYNC_INCREMENTAL,
    SYNC_NONE,
    client_capabilities,
    negotiated_encoding,
    sync_options,
)
from jsonrpc_threads.lsp.diagnostics import DiagnosticsBoard
from jsonrpc_threads.lsp.documents import DocumentStore
from jsonrpc_threads.lsp.positions import ENCODINGS, units
from jsonrpc_threads.lsp.progress import ProgressRouter, join_results
from jsonrpc_threads.lsp.server_requests import ServerRequests, lookup_section
from jsonrpc_threads.lsp.uris import as_uri, is_uri, normalize_uri, uri_to_path

#: How long a test thread may take to do its bit.
THREAD_WAIT_S = 10.0

# -- positions -------------------------------------------------------------------------------

TEXT = "a = 'é'\r\nb = '\U0001d518' + c\rlast\n"


def test_each_encoding_counts_its_own_units() -> None:
    offset = TEXT.index("+")
    assert position_from_offset(TEXT, offset, "utf-32") == (1, 8)
    assert position_from_offset(TEXT, offset, "utf-16") == (1, 9)  # the Fraktur U is a surrogate pair
    assert position_from_offset(TEXT, offset, "utf-8") == (1, 11)  # and 4 bytes in UTF-8
    assert position_from_offset(TEXT, TEXT.index("'", 5), "utf-8") == (0, 7)  # é is 2 bytes
    assert units("\U0001d518é", "utf-16") == 3 and units("\U0001d518é", "utf-8") == 6


def test_every_line_break_counts_and_an_offset_inside_crlf_is_the_end_of_its_line() -> None:
    assert position_from_offset(TEXT, TEXT.index("last")) == (2, 0)  # after a bare \r
    assert position_from_offset(TEXT, TEXT.index("\n")) == (0, 7)  # between \r and \n
    assert position_from_offset(TEXT, len(TEXT)) == (3, 0)
    assert position_from_offset("", 0) == (0, 0)


def test_positions_past_the_end_are_clamped_as_the_protocol_says() -> None:
    assert offset_from_position(TEXT, 0, 99) == TEXT.index("\r")
    assert offset_from_position(TEXT, 99, 0) == len(TEXT)
    # the second half of a surrogate pair stands for the start of the character
    assert offset_from_position(TEXT, 1, 6, "utf-16") == TEXT.index("\U0001d518")


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="outside"):
        position_from_offset("abc", 4)
    with pytest.raises(ValueError, match="unknown position encoding"):
        position_from_offset("abc", 1, "utf-7")
    with pytest.raises(ValueError, match="negative"):
        offset_from_position("abc", 0, -1)
    with pytest.raises(TypeError):
        position_from_offset("abc", True)


@given(st.lists(st.sampled_from(["a", "é", "\U0001d518", "\n", "\r", "\r\n", " "])).map("".join), st.data())
def test_position_and_offset_are_inverse(text: str, data: st.DataObject) -> None:
    offset = data.draw(st.integers(0, len(text)))
    if text[offset - 1 : offset + 1] == "\r\n":
        offset -= 1  # inside a CRLF there is no position of its own: it is the end of the line
    for encoding in ENCODINGS:
        line, character = position_from_offset(text, offset, encoding)
        assert offset_from_position(text, line, character, encoding) == offset


# -- URIs and language ids ----------------------------------------------------------------------


def test_paths_and_uris(tmp_path: Path) -> None:
    path = tmp_path / "a dir" / "ü.py"
    uri = path_to_uri(path)
    assert uri.startswith("file:///") and "a%20dir" in uri
    assert uri_to_path(uri) == path
    assert as_uri(path) == as_uri(str(path)) == as_uri(uri) == uri
    assert as_uri("untitled:Untitled-1") == "untitled:Untitled-1"
    assert is_uri("file:///x") and not is_uri("C:\\x") and not is_uri("relative/x.py")
    assert normalize_uri(uri.replace("%20", "%20").replace("%C3%BC", "%c3%bc")) == uri
    assert normalize_uri("untitled:x") == "untitled:x"
    with pytest.raises(ValueError):
        uri_to_path("https://example.invalid/x.py")
    assert language_id_for(uri) == "python" and language_id_for("file:///x.unknown") == "plaintext"
    assert LANGUAGE_IDS[".ts"] == "typescript"


# -- capabilities ---------------------------------------------------------------------------------


def test_capabilities_declare_only_what_the_client_does() -> None:
    plain = client_capabilities(position_encodings=["utf-16"], apply_edit=False)
    assert "applyEdit" not in plain["workspace"]
    assert plain["general"]["positionEncodings"] == ["utf-16"]
    assert plain["window"]["workDoneProgress"] is True
    assert plain["textDocument"]["synchronization"]["didSave"] is False
    editing = client_capabilities(
        position_encodings=["utf-8", "utf-16"],
        apply_edit=True,
        extra={"textDocument": {"codeAction": {"dynamicRegistration": False}}, "experimental": {"x": 1}},
    )
    assert editing["workspace"]["applyEdit"] is True
    assert editing["textDocument"]["codeAction"] == {"dynamicRegistration": False}
    assert "hover" in editing["textDocument"] and editing["experimental"] == {"x": 1}
    with pytest.raises(ValueError):
        client_capabilities(position_encodings=["latin-1"], apply_edit=False)
    with pytest.raises(ValueError):
        client_capabilities(position_encodings=[], apply_edit=False)


def test_the_negotiated_encoding_and_the_sync_options() -> None:
    assert negotiated_encoding({}, ["utf-8", "utf-16"]) == "utf-16"
    assert negotiated_encoding({"positionEncoding": "utf-8"}, ["utf-8", "utf-16"]) == "utf-8"
    assert negotiated_encoding({"positionEncoding": "utf-32"}, ["utf-16"]) == "utf-32"  # not offered, but convertible
    assert negotiated_encoding({"positionEncoding": "ebcdic"}, ["utf-16"]) == "utf-16"
    assert sync_options({"textDocumentSync": 2}) == (True, SYNC_INCREMENTAL)
    assert sync_options({"textDocumentSync": {"openClose": True, "change": 1}}) == (True, SYNC_FULL)
    assert sync_options({"textDocumentSync": {"change": 1}}) == (False, SYNC_FULL)
    assert sync_options({}) == (False, SYNC_NONE)


def test_configuration_sections() -> None:
    settings = {"python": {"analysis": {"mode": "strict"}}, "pylsp.plugins": {"a": 1}}
    assert lookup_section(settings, "python.analysis") == {"mode": "strict"}
    assert lookup_section(settings, "python.analysis.mode") == "strict"
    assert lookup_section(settings, "pylsp.plugins") == {"a": 1}
    assert lookup_section(settings, "python.missing") is None
    assert lookup_section(settings, None) == settings
    server = ServerRequests(settings=settings)
    answers = server.configuration({"items": [{"section": "python"}, {"scopeUri": "file:///x"}, {"section": "no"}]})
    assert answers == [settings["python"], settings, None]
    answers[0]["analysis"]["mode"] = "changed"  # the caller's copy: the settings are not touched
    assert server.settings["python"]["analysis"]["mode"] == "strict"


def test_server_requests_without_handlers() -> None:
    server = ServerRequests()
    assert server.apply_edit({"edit": {}})["applied"] is False
    assert server.show_message_request({"type": 3, "message": "m", "actions": [{"title": "A"}, {"title": "B"}]}) == {
        "title": "A"
    }
    assert server.show_message_request({"type": 3, "message": "m"}) is None
    server.register_capability({"registrations": [{"id": "r1", "method": "workspace/didChangeWatchedFiles"}]})
    assert set(server.registrations) == {"r1"}
    server.unregister_capability({"unregisterations": [{"id": "r1", "method": "workspace/didChangeWatchedFiles"}]})
    assert server.registrations == {}
    assert server.workspace_folders(None) is None
    assert server.show_document({"uri": "file:///x"}) == {"success": False}


# -- documents and their order ------------------------------------------------------------------------


def test_documents_and_versions() -> None:
    store = DocumentStore()
    document, first = store.open("file:///tmp/a%20b.py", "x", "python")
    assert document.version == 1
    with pytest.raises(ValueError, match="open already"):
        store.open("file:///tmp/a b.py", "y", "python")  # the same document, spelled otherwise
    changed, second = store.change("file:///tmp/a%20b.py", "y")
    assert (changed.version, changed.text, second) == (2, "y", first + 1)
    assert store.get("file:///tmp/a%20b.py") == changed
    store.close("file:///tmp/a%20b.py")
    with pytest.raises(ValueError, match="not open"):
        store.change("file:///tmp/a%20b.py", "z")
    assert len(store) == 0


def test_a_reopened_document_never_repeats_a_version() -> None:
    store = DocumentStore()
    store.open("file:///tmp/a.py", "x", "python")
    store.change("file:///tmp/a.py", "y")
    store.close("file:///tmp/a.py")
    reopened, _ = store.open("file:///tmp/a.py", "z", "python")
    assert reopened.version == 3  # one above the last version sent for the URI
    other, _ = store.open("file:///tmp/b.py", "x", "python")
    assert other.version == 1


def test_a_versionless_publication_does_not_answer_for_a_server_that_names_versions() -> None:
    board = DiagnosticsBoard()
    uri = "file:///tmp/a.py"
    board.expect(uri, 1)
    board.publish({"uri": uri, "version": 1, "diagnostics": [{"message": "old"}]})
    board.forget(uri)  # closed
    board.expect(uri, 2)  # reopened
    board.publish({"uri": uri, "diagnostics": []})  # the server clearing the closed document
    with pytest.raises(RequestTimeout):
        board.wait(uri, 0, deadline_after(0))
    board.publish({"uri": uri, "version": 2, "diagnostics": [{"message": "new"}]})
    assert board.wait(uri, 0, deadline_after(0)) == [{"message": "new"}]
    plain = DiagnosticsBoard()  # a server that never names a version: the next publication answers
    plain.expect(uri, 1)
    plain.publish({"uri": uri, "diagnostics": [{"message": "any"}]})
    assert plain.wait(uri, 0, deadline_after(0)) == [{"message": "any"}]


def test_in_order_serves_tickets_in_order_and_skips_those_given_up() -> None:
    order = InOrder()
    tickets = [order.take() for _ in range(3)]
    assert order.wait_turn(tickets[2], deadline=0.0) is False  # gives up: not its turn
    served = []
    waiter = threading.Thread(target=lambda: served.append(order.wait_turn(tickets[1], None)))
    waiter.start()
    assert order.wait_turn(tickets[0], None) is True
    order.done(tickets[0])
    waiter.join(THREAD_WAIT_S)
    assert served == [True]
    order.done(tickets[1])  # ticket 2 was given up: the next ticket is served at once
    assert order.wait_turn(order.take(), deadline=0.0) is True


# -- progress -----------------------------------------------------------------------------------------


def test_progress_routes_by_token_and_keeps_partial_results() -> None:
    seen = []
    server_seen = []
    router = ProgressRouter("t", on_server_progress=server_seen.append)
    tokens = router.open(seen.append, partial=True)
    assert set(tokens.params()) == {"workDoneToken", "partialResultToken"}
    router.route({"token": tokens.partial, "value": [1, 2]})
    router.route({"token": tokens.work_done, "value": {"kind": "end"}})
    router.route({"token": "nobody's", "value": {}})
    router.create({"token": 7})
    router.route({"token": 7, "value": {"kind": "begin", "title": "indexing"}})
    router.route({"token": 7, "value": {"kind": "end"}})
    router.route({"token": 7, "value": {"kind": "report"}})  # ended: no longer routed
    assert [report["token"] for report in seen] == [tokens.partial, tokens.work_done]
    assert tokens.partial_results() == [[1, 2]]
    assert [report["value"]["kind"] for report in server_seen] == ["begin", "end"]
    router.close(tokens)
    router.route({"token": tokens.partial, "value": [3]})
    assert tokens.partial_results() == [[1, 2]]


def test_join_results() -> None:
    assert join_results([1], []) == [1]
    assert join_results([], [[1, 2], [3]]) == [1, 2, 3]
    assert join_results(None, [[1]]) == [1]
    assert join_results([4], [[1]]) == [1, 4]
    assert join_results({"items": []}, [[1]]) == {"items": []}
