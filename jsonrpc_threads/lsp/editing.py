"""Open documents, as calls of LspClient: open, change and close them, their diagnostics, positions in them.

Theory of operation.  ``DocumentCalls`` is the part of
``LspClient`` that tells the server about the
documents the caller edits (``textDocument/didOpen``, ``didChange``,
``didClose``), waits for the diagnostics it publishes about them, and turns
Python string offsets into protocol positions and back.  The store of open
documents (``documents``) decides each version and each notification's
place in the outgoing order; the board (``diagnostics``) keeps what the
server published.

Deadlines.  Each call makes its deadline as it enters (its ``timeout``, else
the client's ``default_timeout``), and every step it triggers spends what is
left of it: the handshake if it has not run (``handshake``), the wait for
the notification's turn, the send, the wait for diagnostics.  A
``RequestTimeout`` names the whole call's timeout.

Thread-safety: every method may be called from any thread.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from .._deadlines import DEFAULT_TIMEOUT, Deadline, Timeout
from .._flight import as_call_timeout
from .._logs import get_logger
from ..client import JsonRpcClient
from ..errors import RequestTimeout
from .capabilities import SYNC_NONE, SyncOptions
from .diagnostics import DiagnosticsBoard
from .documents import DocumentStore, language_id_for
from .handshake import Handshake, call_deadline
from .positions import offset_from_position, position_from_offset
from .uris import PathOrUri, as_uri, uri_to_path

logger = get_logger(__name__)


class DocumentCalls:
    """Documents, their diagnostics and positions: these calls of ``LspClient``."""

    _rpc: JsonRpcClient
    _handshake: Handshake
    _documents: DocumentStore
    _board: DiagnosticsBoard
    _sync: SyncOptions
    _encoding: str

    def _deadline(self, timeout: Timeout) -> Deadline:
        """The deadline of a call that enters now with ``timeout`` (the client's ``default_timeout`` by default)."""
        return call_deadline(self._rpc, timeout)

    def open(
        self,
        path_or_uri: PathOrUri,
        text: Optional[str] = None,
        language_id: Optional[str] = None,
        *,
        timeout: Timeout = DEFAULT_TIMEOUT,
    ) -> str:
        """Open a document on the server (``textDocument/didOpen``).

        Its version is 1, or for a document this client closed before, one more
        than the last version it sent for that URI: a version never repeats, so
        a late publication about the old text never passes for the new one.

        Args:
            path_or_uri: a local path or a URI.
            text: the content; by default the file's, read as UTF-8.
            language_id: by default from the suffix (``.py``: ``python``; see
                ``LANGUAGE_IDS``).
            timeout: for the whole call: the handshake if it has not run, the
                wait for its turn among the document notifications, the send.

        Returns:
            The document's URI (what the other methods take).

        Raises:
            ValueError: the document is open already, or ``text`` is missing
                for a URI that is not a ``file:`` URI.
            OSError: the file cannot be read.
            TransportClosed, RequestTimeout: as any call.
        """
        deadline = self._deadline(timeout)
        uri = as_uri(path_or_uri)
        if text is None:
            text = uri_to_path(uri).read_text(encoding="utf-8")
        language = language_id or language_id_for(uri)
        self._handshake.ready(deadline)
        document, ticket = self._documents.open(uri, text, language)
        version = document.version
        params = {"textDocument": {"uri": uri, "languageId": language, "version": version, "text": text}}
        try:
            self._send_document(ticket, deadline, "textDocument/didOpen", params, self._sync.open_close, version)
        except BaseException:
            self._documents.discard(uri)
            raise
        return uri

    def change(self, uri: PathOrUri, text: str, *, timeout: Timeout = DEFAULT_TIMEOUT) -> int:
        """Replace an open document's text (``textDocument/didChange``, the whole text).

        Thread-safe: concurrent changes get consecutive versions and reach the
        server in version order.

        Returns:
            The document's new version.

        Raises:
            ValueError: the document is not open.
            TransportClosed, RequestTimeout: as any call.
        """
        deadline = self._deadline(timeout)
        self._handshake.ready(deadline)
        document, ticket = self._documents.change(as_uri(uri), text)
        params = {
            "textDocument": {"uri": document.uri, "version": document.version},
            "contentChanges": [{"text": text}],
        }
        send = self._sync.change != SYNC_NONE
        self._send_document(ticket, deadline, "textDocument/didChange", params, send, document.version)
        return document.version

    def close_document(self, uri: PathOrUri, *, timeout: Timeout = DEFAULT_TIMEOUT) -> None:
        """Close an open document (``textDocument/didClose``); the server reads it from disk again.

        Raises:
            ValueError: the document is not open.
            TransportClosed, RequestTimeout: as any call.
        """
        deadline = self._deadline(timeout)
        self._handshake.ready(deadline)
        document, ticket = self._documents.close(as_uri(uri))
        params = {"textDocument": {"uri": document.uri}}
        self._send_document(ticket, deadline, "textDocument/didClose", params, self._sync.open_close, None)

    def document_text(self, uri: PathOrUri) -> Optional[str]:
        """The text of an open document as the server was told it, or ``None`` when it is not open."""
        document = self._documents.get(as_uri(uri))
        return document.text if document is not None else None

    def document_version(self, uri: PathOrUri) -> Optional[int]:
        """The version of an open document, or ``None`` when it is not open."""
        document = self._documents.get(as_uri(uri))
        return document.version if document is not None else None

    def _send_document(
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

    def diagnostics(self, uri: PathOrUri, *, timeout: Timeout = DEFAULT_TIMEOUT) -> List[Dict[str, Any]]:
        """The server's diagnostics for the document's current version, once it published them.

        For a document opened here: waits for the ``publishDiagnostics`` of
        the version last sent (returns at once when it already arrived).  For
        any other document: the latest published, or the next.

        Args:
            uri: the document (a URI or a local path).
            timeout: seconds for the whole call (the handshake if it has not
                run, and the wait); by default the client's ``default_timeout``.

        Returns:
            The diagnostics, as the server sent them (possibly empty).

        Raises:
            RequestTimeout: nothing was published in time (its ``hint`` says for which version).
            TransportClosed: the server went away first.
        """
        deadline = self._deadline(timeout)
        self._handshake.ready(deadline)
        return self._board.wait(as_uri(uri), deadline.timeout, deadline.at)

    def position_at(self, uri: PathOrUri, offset: int) -> Tuple[int, int]:
        """The position, in the negotiated encoding, of a Python string offset into a document.

        The text is the open document's (as the server was told it), else the
        file's on disk.  Example: ``lsp.position_at(uri, text.index("greet"))``.

        Returns:
            ``(line, character)``, what ``definition`` and the others take.

        Raises:
            ValueError: an offset outside the text.
            OSError: the document is not open and its file cannot be read.
        """
        return position_from_offset(self._text_of(as_uri(uri)), offset, self._encoding)

    def offset_at(self, uri: PathOrUri, line: int, character: int) -> int:
        """The Python string offset of a position (in the negotiated encoding) in a document.

        Raises:
            ValueError: a negative line or character.
            OSError: the document is not open and its file cannot be read.
        """
        return offset_from_position(self._text_of(as_uri(uri)), line, character, self._encoding)

    def _text_of(self, uri: str) -> str:
        document = self._documents.get(uri)
        if document is not None:
            return document.text
        return uri_to_path(uri).read_text(encoding="utf-8")


__all__ = ["DocumentCalls"]
