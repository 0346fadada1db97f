"""Language servers: a synchronous, thread-safe LSP client.

``LspClient`` starts a language server (``pylsp``, ``pyright-langserver
--stdio``, ``gopls``, ``rust-analyzer``...) as a child process speaking JSON-RPC
framed with ``Content-Length`` headers, runs the handshake, keeps the open
documents and their versions, answers what the server asks of its client, and
offers the requests agents use (definition, references, hover, completion,
symbols, rename, diagnostics) as blocking calls with a deadline each; closing
it shuts the server down and reclaims its process tree, bounded in time.

The position helpers (``position_from_offset``, ``offset_from_position``)
and the URI helpers (``path_to_uri``, ``uri_to_path``) are pure
functions, usable without a server.
"""

from __future__ import annotations

from ..errors import RequestCancelled
from .client import LspClient
from .documents import LANGUAGE_IDS, language_id_for
from .positions import DEFAULT_ENCODING, ENCODINGS, UTF8, UTF16, UTF32, offset_from_position, position_from_offset
from .shutdown import CLOSE_BOUND_S, EXIT_GRACE_S, EXIT_SEND_TIMEOUT_S, SHUTDOWN_TIMEOUT_S
from .uris import path_to_uri, uri_to_path

__all__ = [
    "CLOSE_BOUND_S",
    "DEFAULT_ENCODING",
    "ENCODINGS",
    "EXIT_GRACE_S",
    "EXIT_SEND_TIMEOUT_S",
    "LANGUAGE_IDS",
    "SHUTDOWN_TIMEOUT_S",
    "UTF8",
    "UTF16",
    "UTF32",
    "LspClient",
    "RequestCancelled",
    "language_id_for",
    "offset_from_position",
    "path_to_uri",
    "position_from_offset",
    "uri_to_path",
]
