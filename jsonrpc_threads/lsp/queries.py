"""Questions about code, as calls of LspClient: definition, references, hover, completion, symbols, rename.

Theory of operation.  ``PositionQueries`` is the part of
``LspClient`` that asks the server about the code:
each query is one request, its result the wire JSON as the server sent it.
A query given ``on_progress`` carries a work-done token (and, where the
protocol allows, a partial-result token): reports go to the callback, and
partial results are joined into the result (``progress``).

Deadlines.  Each query makes its deadline as it enters (its ``timeout``,
else the client's ``default_timeout``); the handshake, if it has not run
(``handshake``), and then the request spend what is left of it, and a
``RequestTimeout`` names the whole timeout.

Thread-safety: every method may be called from any thread.
"""

from __future__ import annotations

from typing import Any, Dict, Optional

from .._deadlines import DEFAULT_TIMEOUT, Deadline, Timeout
from ..client import JsonRpcClient
from .handshake import Handshake, call_deadline, call_within
from .progress import ProgressCallback, ProgressRouter, join_results
from .uris import PathOrUri, as_uri


class PositionQueries:
    """Definition, references, hover, completion, symbols, rename: calls of ``LspClient``."""

    _rpc: JsonRpcClient
    _handshake: Handshake
    _progress: ProgressRouter

    def _deadline(self, timeout: Timeout) -> Deadline:
        """The deadline of a call that enters now with ``timeout`` (the client's ``default_timeout`` by default)."""
        return call_deadline(self._rpc, timeout)

    def definition(
        self,
        uri: PathOrUri,
        line: int,
        character: int,
        *,
        timeout: Timeout = DEFAULT_TIMEOUT,
        on_progress: Optional[ProgressCallback] = None,
    ) -> Any:
        """``textDocument/definition``: where the symbol at the position is defined.

        Returns:
            A ``Location``, a list of ``Location`` or ``LocationLink``, or ``None``.

        Raises: as ``call``; ``ValueError``/``TypeError`` for a bad position.
        """
        return self._at(uri, line, character, "textDocument/definition", {}, timeout, on_progress, partial=True)

    def references(
        self,
        uri: PathOrUri,
        line: int,
        character: int,
        *,
        include_declaration: bool = True,
        timeout: Timeout = DEFAULT_TIMEOUT,
        on_progress: Optional[ProgressCallback] = None,
    ) -> Any:
        """``textDocument/references``: every use of the symbol at the position.

        Returns:
            A list of ``Location`` (partial results the server streamed
            included), or ``None``.

        Raises: as ``call``.
        """
        context = {"context": {"includeDeclaration": include_declaration}}
        return self._at(uri, line, character, "textDocument/references", context, timeout, on_progress, partial=True)

    def hover(
        self,
        uri: PathOrUri,
        line: int,
        character: int,
        *,
        timeout: Timeout = DEFAULT_TIMEOUT,
        on_progress: Optional[ProgressCallback] = None,
    ) -> Any:
        """``textDocument/hover``: what the symbol at the position is.

        Returns:
            A ``Hover`` (``contents``, maybe ``range``), or ``None``.

        Raises: as ``call``.
        """
        return self._at(uri, line, character, "textDocument/hover", {}, timeout, on_progress, partial=False)

    def completion(
        self,
        uri: PathOrUri,
        line: int,
        character: int,
        *,
        trigger_character: Optional[str] = None,
        timeout: Timeout = DEFAULT_TIMEOUT,
        on_progress: Optional[ProgressCallback] = None,
    ) -> Any:
        """``textDocument/completion`` at the position (invoked, or after ``trigger_character``).

        Returns:
            A ``CompletionList`` (``items``, ``isIncomplete``), a list of
            ``CompletionItem``, or ``None``.

        Raises: as ``call``.
        """
        if trigger_character is None:
            context: Dict[str, Any] = {"triggerKind": 1}
        else:
            context = {"triggerKind": 2, "triggerCharacter": trigger_character}
        extra = {"context": context}
        return self._at(uri, line, character, "textDocument/completion", extra, timeout, on_progress, partial=False)

    def document_symbols(
        self,
        uri: PathOrUri,
        *,
        timeout: Timeout = DEFAULT_TIMEOUT,
        on_progress: Optional[ProgressCallback] = None,
    ) -> Any:
        """``textDocument/documentSymbol``: the symbols of a document.

        Returns:
            A list of ``DocumentSymbol`` (a tree: ``children``) or of
            ``SymbolInformation``, or ``None``.

        Raises: as ``call``.
        """
        params = {"textDocument": {"uri": as_uri(uri)}}
        return self._request("textDocument/documentSymbol", params, timeout, on_progress, partial=True)

    def workspace_symbols(
        self,
        query: str,
        *,
        timeout: Timeout = DEFAULT_TIMEOUT,
        on_progress: Optional[ProgressCallback] = None,
    ) -> Any:
        """``workspace/symbol``: the workspace's symbols matching ``query`` (``""``: all).

        Returns:
            A list of ``SymbolInformation`` or ``WorkspaceSymbol``, or ``None``.

        Raises: as ``call`` (``RemoteMethodNotFound`` from a server without it).
        """
        return self._request("workspace/symbol", {"query": query}, timeout, on_progress, partial=True)

    def rename(
        self,
        uri: PathOrUri,
        line: int,
        character: int,
        new_name: str,
        *,
        timeout: Timeout = DEFAULT_TIMEOUT,
        on_progress: Optional[ProgressCallback] = None,
    ) -> Any:
        """``textDocument/rename``: the edits that rename the symbol at the position.

        The edits are returned, not applied: nothing on disk or in the open
        documents changes.

        Returns:
            A ``WorkspaceEdit`` (``changes`` by URI, or ``documentChanges``), or ``None``.

        Raises: as ``call``.
        """
        extra = {"newName": new_name}
        return self._at(uri, line, character, "textDocument/rename", extra, timeout, on_progress, partial=False)

    def _at(
        self,
        uri: PathOrUri,
        line: int,
        character: int,
        method: str,
        extra: Dict[str, Any],
        timeout: Timeout,
        on_progress: Optional[ProgressCallback],
        *,
        partial: bool,
    ) -> Any:
        params = {"textDocument": {"uri": as_uri(uri)}, "position": _position(line, character), **extra}
        return self._request(method, params, timeout, on_progress, partial=partial)

    def _request(
        self,
        method: str,
        params: Dict[str, Any],
        timeout: Timeout,
        on_progress: Optional[ProgressCallback],
        *,
        partial: bool,
    ) -> Any:
        deadline = self._deadline(timeout)
        self._handshake.ready(deadline)
        if on_progress is None:
            return call_within(self._rpc, method, params, deadline)
        tokens = self._progress.open(on_progress, partial=partial)
        try:
            result = call_within(self._rpc, method, {**params, **tokens.params()}, deadline)
            return join_results(result, tokens.partial_results())
        finally:
            self._progress.close(tokens)


def _position(line: int, character: int) -> Dict[str, int]:
    for name, value in (("line", line), ("character", character)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{name} must be an int, not {type(value).__name__}")
        if value < 0:
            raise ValueError(f"{name} must be >= 0, not {value}")
    return {"line": line, "character": character}


__all__ = ["PositionQueries"]
