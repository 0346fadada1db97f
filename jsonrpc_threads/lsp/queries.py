"""Questions about code, one part of LspClient: a request after the handshake, with its progress and partial results.

Theory of operation.  ``Queries`` is the part of ``LspClient`` that asks
the server about the code (definition, references, hover, completion,
symbols, rename): each query is one request, its result the wire JSON as the
server sent it.  A query given ``on_progress`` carries a work-done token
(and, where the protocol allows, a partial-result token): reports go to the
callback, and partial results are joined into the result (``progress``).
The client gives it, once, the connection, the handshake and the router of
``$/progress``; it reaches nothing else.  ``position_params`` builds the
``textDocument`` and ``position`` of a query at a position.

Deadlines.  ``LspClient`` makes each query's deadline as the query enters;
the handshake, if it has not run (``handshake``), and then the request
spend what is left of it, and a ``RequestTimeout`` names the whole timeout.

Thread-safety: every method may be called from any thread.
"""

from __future__ import annotations

from typing import Any, Dict, Optional

from ..client import JsonRpcClient
from ..deadlines.timeouts import Deadline
from .handshake import Handshake, call_within
from .progress import ProgressCallback, ProgressRouter, join_results
from .uris import PathOrUri, as_uri


class Queries:
    """The requests ``LspClient`` sends about code, after the handshake.  Thread-safe."""

    def __init__(self, rpc: JsonRpcClient, handshake: Handshake, progress: ProgressRouter) -> None:
        self._rpc = rpc
        self._handshake = handshake
        self._progress = progress

    def ask(
        self,
        method: str,
        params: Dict[str, Any],
        deadline: Deadline,
        on_progress: Optional[ProgressCallback],
        *,
        partial: bool,
    ) -> Any:
        """Send ``method`` after the handshake, within ``deadline``; its result (partial results joined in).

        Raises: as ``LspClient.call``.
        """
        self._handshake.ready(deadline)
        if on_progress is None:
            return call_within(self._rpc, method, params, deadline)
        tokens = self._progress.open(on_progress, partial=partial)
        try:
            result = call_within(self._rpc, method, {**params, **tokens.params()}, deadline)
            return join_results(result, tokens.partial_results())
        finally:
            self._progress.close(tokens)


def position_params(uri: PathOrUri, line: int, character: int, **extra: Any) -> Dict[str, Any]:
    """The params of a query at a position: ``textDocument``, ``position`` and ``extra``.

    Raises:
        TypeError: a line or character that is not an ``int``.
        ValueError: a negative one.
    """
    return {"textDocument": {"uri": as_uri(uri)}, "position": _position(line, character), **extra}


def _position(line: int, character: int) -> Dict[str, int]:
    for name, value in (("line", line), ("character", character)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{name} must be an int, not {type(value).__name__}")
        if value < 0:
            raise ValueError(f"{name} must be >= 0, not {value}")
    return {"line": line, "character": character}


__all__ = ["Queries", "position_params"]
