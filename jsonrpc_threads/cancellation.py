"""What a client tells its peer when it gives up on a request: the names, where they always were.

The styles live in :mod:`jsonrpc_threads.core.protocol` (pure: they build
parameters and send nothing).
"""

from __future__ import annotations

from .core.protocol import STYLES, CancellationBuilder, lsp_cancellation, mcp_cancellation, resolve_style

__all__ = ["STYLES", "CancellationBuilder", "lsp_cancellation", "mcp_cancellation", "resolve_style"]
