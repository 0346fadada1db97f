"""Build a transport from one ``mcpServers`` entry, the format MCP hosts use.

An entry with ``url`` speaks Streamable HTTP; an entry with ``command`` runs a
child process over stdio::

    {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ..."}}
    {"command": "npx", "args": ["-y", "some-server"], "env": {"KEY": "..."}, "cwd": "/srv"}

``type`` is optional: ``"http"`` or ``"streamable-http"`` for the first kind,
``"stdio"`` for the second.  Keys this module does not know (``description``,
``disabled``, ...) are left for the caller to interpret and ignored here.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Union

from .http import HttpTransport
from .stdio import StdioTransport

HTTP_TYPES = frozenset({"http", "streamable-http", "streamable_http", "streamableHttp"})
STDIO_TYPES = frozenset({"stdio"})


def transport_from_config(entry: Mapping[str, Any]) -> Union[StdioTransport, HttpTransport]:
    """Build the transport an ``mcpServers`` entry describes (not started yet).

    Args:
        entry: ``{"url": str, "headers": {str: str}}`` for HTTP, or
            ``{"command": str, "args": [str], "env": {str: str}, "cwd": str}``
            for stdio; ``type`` optional (``"http"``, ``"streamable-http"``,
            ``"stdio"``).

    Returns:
        An :class:`HttpTransport` or a :class:`~jsonrpc_threads.transports.stdio.StdioTransport`.
        Pass it to ``JsonRpcClient`` (or ``McpClient``), which starts and owns it.

    Raises:
        ValueError: when the entry has both or neither of ``command`` and
            ``url``, a member of the wrong type, or an unknown ``type``.
        TransportClosed: when the stdio command cannot be started.
    """
    if not isinstance(entry, Mapping):
        raise ValueError(f"a server entry must be a mapping, not {type(entry).__name__}")
    kind = entry.get("type")
    if kind is not None and (not isinstance(kind, str) or kind not in HTTP_TYPES | STDIO_TYPES):
        known = ", ".join(sorted(HTTP_TYPES | STDIO_TYPES))
        raise ValueError(f"unknown server type {kind!r} (known: {known})")
    has_url = "url" in entry
    has_command = "command" in entry
    if has_url and has_command:
        raise ValueError("a server entry has either 'command' (stdio) or 'url' (HTTP), not both")
    if not has_url and not has_command:
        raise ValueError("a server entry needs 'command' (stdio) or 'url' (HTTP)")
    if has_url:
        if kind is not None and kind not in HTTP_TYPES:
            raise ValueError(f"server type {kind!r} does not take a 'url'")
        return _http_transport(entry)
    if kind is not None and kind not in STDIO_TYPES:
        raise ValueError(f"server type {kind!r} does not take a 'command'")
    return _stdio_transport(entry)


def _http_transport(entry: Mapping[str, Any]) -> HttpTransport:
    url = entry["url"]
    if not isinstance(url, str) or not url:
        raise ValueError("'url' must be a non-empty string")
    headers = _string_map(entry.get("headers"), "headers")
    return HttpTransport(url, headers=headers)


def _stdio_transport(entry: Mapping[str, Any]) -> StdioTransport:
    command = entry["command"]
    if not isinstance(command, str) or not command:
        raise ValueError("'command' must be a non-empty string")
    args = entry.get("args")
    if args is None:
        args = []
    if not isinstance(args, (list, tuple)) or not all(isinstance(arg, str) for arg in args):
        raise ValueError("'args' must be a list of strings")
    env = _string_map(entry.get("env"), "env")
    cwd = entry.get("cwd")
    if cwd is not None and (not isinstance(cwd, str) or not cwd):
        raise ValueError("'cwd' must be a non-empty string")
    argv: List[str] = [command, *args]
    return StdioTransport(argv, env=env, cwd=cwd)


def _string_map(value: Any, name: str) -> Optional[Dict[str, str]]:
    if value is None:
        return None
    if not isinstance(value, Mapping) or not all(
        isinstance(key, str) and isinstance(item, str) for key, item in value.items()
    ):
        raise ValueError(f"{name!r} must be a mapping of strings to strings")
    return dict(value)


__all__ = ["transport_from_config"]
