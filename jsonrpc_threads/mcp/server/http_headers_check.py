"""The stateless era's request-metadata headers of a POST, checked against its body (pure).

Theory of operation.  In MCP 2026-07-28 a POST names what its body holds in
headers a proxy can route on: ``MCP-Protocol-Version`` (the ``_meta``'s
version), ``Mcp-Method``, ``Mcp-Name`` (a tool's or prompt's name, a
resource's URI) and one ``Mcp-Param-*`` per argument a tool's schema marks
with ``x-mcp-header``.  ``header_mismatch`` says why they disagree with the
body (the server answers ``-32020`` with HTTP 400), or ``None``.  Values are
compared after trimming surrounding whitespace, and a ``=?base64?...?=``
value is decoded first; header names are matched without regard to case.

Thread-safety: pure functions.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any, Dict, Optional

from ...errors import JsonRpcError
from ..http_headers import NAME_SOURCES, param_text
from ..protocol import META_PROTOCOL_VERSION
from .engine import Engine

__all__ = ["header_mismatch", "header_value"]


def header_value(raw: str) -> Optional[str]:
    """A request-metadata header's value: trimmed, and decoded from ``=?base64?...?=`` (``None``: bad base64)."""
    value = raw.strip(" \t")
    if value.startswith("=?base64?") and value.endswith("?=") and len(value) >= 11:
        try:
            return base64.b64decode(value[9:-2], validate=True).decode("utf-8")
        except (binascii.Error, ValueError):
            return None
    return value


def header_mismatch(engine: Engine, method: str, params: Dict[str, Any], headers: Dict[str, str]) -> Optional[str]:
    """Why a stateless-era POST's headers disagree with its body, or ``None`` when they agree."""
    meta = params.get("_meta") or {}
    version = headers.get("mcp-protocol-version")
    if version is None or version.strip() != meta.get(META_PROTOCOL_VERSION):
        return "the MCP-Protocol-Version header does not match _meta's protocol version"
    if headers.get("mcp-method", "").strip() != method:
        return "the Mcp-Method header does not match the body's method"
    source = NAME_SOURCES.get(method)
    if source is not None and isinstance(params.get(source), str):
        sent = headers.get("mcp-name")
        if sent is None or header_value(sent) != params[source]:
            return f"the Mcp-Name header does not match the body's {source}"
    if method == "tools/call" and isinstance(params.get("name"), str):
        tool = engine.catalog.tool(params["name"])
        if tool is not None:
            plan = tool.headers
            arguments = params.get("arguments") if isinstance(params.get("arguments"), dict) else {}
            for path, header in plan.params:
                node: Any = arguments
                for key in path:
                    node = node.get(key) if isinstance(node, dict) else None
                try:
                    expected = param_text(node)
                except JsonRpcError:
                    expected = json.dumps(node)
                sent = headers.get(("mcp-param-" + header).lower())
                if expected is None:
                    if sent is not None:
                        return f"the Mcp-Param-{header} header names a value the body does not have"
                    continue
                if sent is None or header_value(sent) != expected:
                    return f"the Mcp-Param-{header} header does not match the body's argument"
    return None
