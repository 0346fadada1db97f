"""What a client tells its peer when it gives up on a request (timeout or ``cancel()``).

A cancellation style is a function ``(request_id, reason) -> (method, params)``
(or ``None`` to send nothing); the client sends the notification it returns.
Two peers' conventions are built in, by name:

- ``"mcp"``: ``notifications/cancelled`` with ``requestId`` and ``reason``;
- ``"lsp"``: ``$/cancelRequest`` with ``id``.

Pure: builds parameters, sends nothing (the client sends it, from a worker).
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Optional, Tuple, Union

from .errors import RequestId

CancellationBuilder = Callable[[RequestId, str], Optional[Tuple[str, Dict[str, Any]]]]


def mcp_cancellation(request_id: RequestId, reason: str) -> Tuple[str, Dict[str, Any]]:
    """The cancellation notification of MCP peers: ``notifications/cancelled``."""
    return "notifications/cancelled", {"requestId": request_id, "reason": reason}


def lsp_cancellation(request_id: RequestId, reason: str) -> Tuple[str, Dict[str, Any]]:
    """The cancellation notification of LSP-style peers: ``$/cancelRequest``."""
    return "$/cancelRequest", {"id": request_id}


STYLES: Dict[str, CancellationBuilder] = {"mcp": mcp_cancellation, "lsp": lsp_cancellation}


def resolve_style(style: Union[str, CancellationBuilder, None]) -> Optional[CancellationBuilder]:
    """The builder for ``style``: a name in ``STYLES``, a callable, or ``None``.

    Raises:
        ValueError: for an unknown name.
        TypeError: for anything else that is not callable.
    """
    if style is None:
        return None
    if isinstance(style, str):
        try:
            return STYLES[style]
        except KeyError:
            raise ValueError(f"unknown cancellation style {style!r} (use 'mcp', 'lsp' or a callable)") from None
    if not callable(style):
        raise TypeError(f"cancellation must be 'mcp', 'lsp', a callable or None, not {type(style).__name__}")
    return style


__all__ = ["STYLES", "CancellationBuilder", "lsp_cancellation", "mcp_cancellation", "resolve_style"]
