"""The documents a client has open on its server: their text, language and version.

Between ``textDocument/didOpen`` and ``textDocument/didClose`` a document's
content is what the client says it is, not what is on disk, and each
``didChange`` carries a version one higher than the one before.  A version
never repeats for a URI within one client: a document opened again after
``didClose`` starts one above the last version sent for it, so a server's late
publication about the old text can never pass for one about the new.  The
``DocumentStore`` keeps that record and decides, under its lock, the
version of each change and its place in the outgoing order (a ticket of
``InOrder``), so that two threads editing one document never
send version 4 before version 3.  Sending is the client's job
(``jsonrpc_threads.lsp.client``); the store does no I/O.

Documents are keyed by their normalized URI (``normalize_uri``), so
``open("main.py")`` and a server's ``file:///.../main.py`` name the same one.

Thread-safe.
"""

from __future__ import annotations

import posixpath
import threading
from typing import Dict, NamedTuple, Optional, Tuple
from urllib.parse import urlsplit

from ._ordering import InOrder
from .uris import normalize_uri

#: The version of a document when it is first opened (each change adds one; a reopen
#: continues from the last version sent for its URI).
FIRST_VERSION = 1

#: File suffix -> the language identifier the protocol's specification lists for it.
LANGUAGE_IDS: Dict[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascriptreact",
    ".ts": "typescript",
    ".tsx": "typescriptreact",
    ".json": "json",
    ".rs": "rust",
    ".go": "go",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".hpp": "cpp",
    ".java": "java",
    ".kt": "kotlin",
    ".cs": "csharp",
    ".rb": "ruby",
    ".php": "php",
    ".lua": "lua",
    ".swift": "swift",
    ".dart": "dart",
    ".ex": "elixir",
    ".exs": "elixir",
    ".sh": "shellscript",
    ".bash": "shellscript",
    ".html": "html",
    ".css": "css",
    ".md": "markdown",
    ".toml": "toml",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".xml": "xml",
    ".sql": "sql",
}
#: The language identifier of a document whose suffix is not in ``LANGUAGE_IDS``.
DEFAULT_LANGUAGE_ID = "plaintext"


def language_id_for(uri: str) -> str:
    """The language identifier for a document, from its suffix (``"plaintext"`` when unknown)."""
    suffix = posixpath.splitext(urlsplit(uri).path)[1].lower()
    return LANGUAGE_IDS.get(suffix, DEFAULT_LANGUAGE_ID)


class Document(NamedTuple):
    """One open document, as the server was last told (immutable: a snapshot)."""

    uri: str
    language_id: str
    version: int
    text: str


class DocumentStore:
    """The open documents of one client.  Thread-safe; does no I/O."""

    def __init__(self) -> None:
        # _lock guards _documents and _last_versions; the order of tickets taken under it is the
        # order on the wire.
        self._lock = threading.Lock()
        self._documents: Dict[str, Document] = {}
        self._last_versions: Dict[str, int] = {}  # every URI ever opened -> the last version given
        self.order = InOrder()

    def open(self, uri: str, text: str, language_id: str) -> Tuple[Document, int]:
        """Record a document as open; returns it and the ticket of its ``didOpen``.

        Its version is ``FIRST_VERSION`` the first time, else one more than
        the last version given for the URI (a reopen never repeats one).

        Raises:
            ValueError: when it is open already.
        """
        key = normalize_uri(uri)
        with self._lock:
            if key in self._documents:
                raise ValueError(f"{uri} is open already: change() it, or close_document() it first")
            version = self._last_versions.get(key, FIRST_VERSION - 1) + 1
            document = Document(uri, language_id, version, text)
            self._documents[key] = document
            self._last_versions[key] = version
            return document, self.order.take()

    def change(self, uri: str, text: str) -> Tuple[Document, int]:
        """Record the new text of an open document; returns it (its version one higher) and a ticket.

        Raises:
            ValueError: when it is not open.
        """
        key = normalize_uri(uri)
        with self._lock:
            current = self._documents.get(key)
            if current is None:
                raise ValueError(f"{uri} is not open: open() it first")
            document = current._replace(version=current.version + 1, text=text)
            self._documents[key] = document
            self._last_versions[key] = document.version
            return document, self.order.take()

    def close(self, uri: str) -> Tuple[Document, int]:
        """Forget an open document; returns its last state and the ticket of its ``didClose``.

        Raises:
            ValueError: when it is not open.
        """
        key = normalize_uri(uri)
        with self._lock:
            document = self._documents.pop(key, None)
            if document is None:
                raise ValueError(f"{uri} is not open")
            return document, self.order.take()

    def discard(self, uri: str) -> None:
        """Forget a document whose ``didOpen`` could not be sent (no ticket: nothing goes out)."""
        with self._lock:
            self._documents.pop(normalize_uri(uri), None)

    def get(self, uri: str) -> Optional[Document]:
        """The open document at ``uri`` (any spelling of it), or None."""
        with self._lock:
            return self._documents.get(normalize_uri(uri))

    def __len__(self) -> int:
        with self._lock:
            return len(self._documents)


__all__ = ["DEFAULT_LANGUAGE_ID", "FIRST_VERSION", "LANGUAGE_IDS", "Document", "DocumentStore", "language_id_for"]
