"""Open documents, one part of LspClient: open, change and close them, their diagnostics, positions in them.

Theory of operation.  ``Editing`` is the part of ``LspClient`` that tells
the server about the documents the caller edits (``textDocument/didOpen``,
``didChange``, ``didClose``), waits for the diagnostics it publishes about
them, and turns Python string offsets into protocol positions and back.  It
owns the store of open documents (``documents``), which decides each
version and each notification's place in the outgoing order, and what the
handshake told about documents: the position encoding and the document
sync the server asked for (``learn``).  The client gives it, once, the
connection, the handshake and the board of published diagnostics
(``diagnostics``); it reaches nothing else.

Deadlines.  ``LspClient`` makes each call's deadline as the call enters;
every step here spends what is left of it: the handshake if it has not run
(``handshake``), the wait for the notification's turn, the send, the wait
for diagnostics.  A ``RequestTimeout`` names the whole call's timeout.

Thread-safety: every method may be called from any thread; ``learn`` runs
once, on the handshake's thread, before any call passes the handshake.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ..client import JsonRpcClient
from ..deadlines.flight import as_call_timeout
from ..deadlines.timeouts import Deadline
from ..errors import RequestTimeout
from ..runtime.logs import get_logger
from .capabilities import SYNC_NONE, SyncOptions, negotiated_encoding, sync_options
from .diagnostics import DiagnosticsBoard
from .documents import DocumentStore, language_id_for
from .handshake import Handshake
from .positions import DEFAULT_ENCODING, offset_from_position, position_from_offset
from .uris import PathOrUri, as_uri, uri_to_path

logger = get_logger(__name__)


class Editing:
    """The open documents of one ``LspClient``, their diagnostics and positions.  Thread-safe.

    Attributes:
        encoding: the negotiated position encoding (``"utf-16"`` until the handshake says otherwise).
    """

    def __init__(self, rpc: JsonRpcClient, handshake: Handshake, board: DiagnosticsBoard) -> None:
        self._rpc = rpc
        self._handshake = handshake
        self._board = board
        self._documents = DocumentStore()
        # Both are set once by learn(), on the handshake's thread, before any caller passes the handshake.
        self.encoding = DEFAULT_ENCODING
        self._sync = SyncOptions(True, SYNC_NONE)

    def learn(self, server_capabilities: Mapping[str, Any], offered: Sequence[str]) -> None:
        """Read what the server chose in its ``initialize`` answer: the position encoding, the document sync."""
        self.encoding = negotiated_encoding(server_capabilities, offered)
        self._sync = sync_options(server_capabilities)

    def open(self, path_or_uri: PathOrUri, text: Optional[str], language_id: Optional[str], deadline: Deadline) -> str:
        """``textDocument/didOpen`` within ``deadline`` (as ``LspClient.open``); the document's URI."""
        uri = as_uri(path_or_uri)
        if text is None:
            text = uri_to_path(uri).read_text(encoding="utf-8")
        language = language_id or language_id_for(uri)
        self._handshake.ready(deadline)
        document, ticket = self._documents.open(uri, text, language)
        version = document.version
        params = {"textDocument": {"uri": uri, "languageId": language, "version": version, "text": text}}
        try:
            self._send(ticket, deadline, "textDocument/didOpen", params, self._sync.open_close, version)
        except BaseException:
            self._documents.discard(uri)
            raise
        return uri

    def change(self, uri: PathOrUri, text: str, deadline: Deadline) -> int:
        """``textDocument/didChange`` with the whole text within ``deadline`` (as ``LspClient.change``)."""
        self._handshake.ready(deadline)
        document, ticket = self._documents.change(as_uri(uri), text)
        params = {
            "textDocument": {"uri": document.uri, "version": document.version},
            "contentChanges": [{"text": text}],
        }
        send = self._sync.change != SYNC_NONE
        self._send(ticket, deadline, "textDocument/didChange", params, send, document.version)
        return document.version

    def close(self, uri: PathOrUri, deadline: Deadline) -> None:
        """``textDocument/didClose`` within ``deadline`` (as ``LspClient.close_document``)."""
        self._handshake.ready(deadline)
        document, ticket = self._documents.close(as_uri(uri))
        params = {"textDocument": {"uri": document.uri}}
        self._send(ticket, deadline, "textDocument/didClose", params, self._sync.open_close, None)

    def text(self, uri: PathOrUri) -> Optional[str]:
        """The text of an open document as the server was told it, or ``None``."""
        document = self._documents.get(as_uri(uri))
        return document.text if document is not None else None

    def version(self, uri: PathOrUri) -> Optional[int]:
        """The version of an open document, or ``None``."""
        document = self._documents.get(as_uri(uri))
        return document.version if document is not None else None

    def diagnostics(self, uri: PathOrUri, deadline: Deadline) -> List[Dict[str, Any]]:
        """The diagnostics of the document's current version, waited for within ``deadline``."""
        self._handshake.ready(deadline)
        return self._board.wait(as_uri(uri), deadline.timeout, deadline.at)

    def position_at(self, uri: PathOrUri, offset: int) -> Tuple[int, int]:
        """``(line, character)`` in the negotiated encoding of a Python string offset into a document."""
        return position_from_offset(self._text_of(as_uri(uri)), offset, self.encoding)

    def offset_at(self, uri: PathOrUri, line: int, character: int) -> int:
        """The Python string offset of a position (in the negotiated encoding) in a document."""
        return offset_from_position(self._text_of(as_uri(uri)), line, character, self.encoding)

    def _send(
        self,
        ticket: int,
        deadline: Deadline,
        method: str,
        params: Dict[str, Any],
        send: bool,
        version: Optional[int],
    ) -> None:
        """Send a document notification in its turn (see ``_ordering``), within the call's ``deadline``."""
        order = self._documents.order
        if not order.wait_turn(ticket, deadline.at):
            raise RequestTimeout(method, None, deadline.timeout, "earlier document notifications were still being sent")
        try:
            uri = params["textDocument"]["uri"]
            if version is None:
                self._board.forget(uri)
            else:
                self._board.expect(uri, version)
            if send:
                try:
                    self._rpc.notify(method, params, timeout=deadline.remaining())
                except RequestTimeout as exc:
                    raise as_call_timeout(exc, deadline) from None
            else:
                logger.debug("%s not sent: the server's textDocumentSync asks for none", method)
        finally:
            order.done(ticket)

    def _text_of(self, uri: str) -> str:
        document = self._documents.get(uri)
        if document is not None:
            return document.text
        return uri_to_path(uri).read_text(encoding="utf-8")


__all__ = ["Editing"]
