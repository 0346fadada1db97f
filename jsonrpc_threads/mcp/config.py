"""The ``mcpServers`` configuration file that MCP hosts use: many server entries by name.

Theory of operation.  A configuration is a JSON object whose ``mcpServers``
member maps a server's name to how to reach it::

    {"mcpServers": {
        "files":  {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "${HOME}/docs"],
                   "env": {"LOG_LEVEL": "${LOG_LEVEL:-info}"}, "cwd": "/srv", "timeout": 20},
        "search": {"type": "http", "url": "https://example.com/mcp",
                   "headers": {"Authorization": "Bearer ${SEARCH_TOKEN}"}}
    }}

(``servers`` is accepted in place of ``mcpServers``, as in VS Code's
``mcp.json``.)  What one entry may hold, and how ``${VAR}`` is expanded, is
the business of ``jsonrpc_threads.transports.config``, whose
``parse_entry`` checks every entry here,
exactly as it checks the entry given to ``transport_from_config`` or
``McpClient``.  This module adds what belongs to a file: ``disabled: true``
leaves an entry out, a relative ``cwd`` is relative to the file's directory,
and one bad entry never spoils the others.

This module parses and checks; it starts nothing.  ``load_config`` raises
``ConfigError`` for a problem with the file as a whole; a problem with
one entry is reported for that entry in ``McpConfig.errors``, and the other
entries are usable.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Tuple, Union

from ..errors import CONFIG_ERROR, ConfigError
from ..transports.config import HTTP, STDIO, ServerConfig, expand_variables, parse_entry

PathOrMapping = Union[str, "os.PathLike[str]", Mapping[str, Any]]


@dataclass(frozen=True)
class McpConfig:
    """A parsed configuration.  Immutable once built.

    Attributes:
        servers: the usable entries, in the file's order.
        errors: for each unusable entry, the ``ConfigError`` that says why.
        source: the file it was read from, if any.
        order: every name not disabled, usable or not, in the file's order.
    """

    servers: Dict[str, ServerConfig]
    errors: Dict[str, ConfigError]
    source: Optional[str] = None
    order: Tuple[str, ...] = ()

    @property
    def names(self) -> List[str]:
        """Every server's name, usable or not, in the file's order."""
        names = [name for name in self.order if name in self.servers or name in self.errors]
        names += [name for name in (*self.servers, *self.errors) if name not in names]
        return names


def load_config(path_or_mapping: PathOrMapping, *, environ: Optional[Mapping[str, str]] = None) -> McpConfig:
    """Read and check an ``mcpServers`` configuration.

    Args:
        path_or_mapping: the path of a JSON file, or the already-parsed object.
        environ: where ``${VAR}`` comes from; ``os.environ`` by default.

    Returns:
        The usable entries and, separately, the reason each unusable one is
        unusable (a bad member, a missing variable).  Entries with
        ``"disabled": true`` are in neither.

    Raises:
        ConfigError: the file cannot be read, is not JSON, or has no
            ``mcpServers`` object.
    """
    env = os.environ if environ is None else environ
    source: Optional[str] = None
    base_dir: Optional[Path] = None
    if isinstance(path_or_mapping, Mapping):
        data: Any = path_or_mapping
        where = "configuration"
    else:
        path = Path(os.fspath(path_or_mapping))
        source = str(path)
        base_dir = path.resolve().parent
        where = source
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise ConfigError(f"cannot read {source}: {reason}") from exc
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{source}: not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})") from exc
    if not isinstance(data, Mapping):
        raise ConfigError(f"{where}: expected a JSON object with 'mcpServers'")
    servers = data.get("mcpServers", data.get("servers"))
    if servers is None:
        raise ConfigError(f"{where}: no 'mcpServers' object")
    if not isinstance(servers, Mapping):
        raise ConfigError(f"{where}: 'mcpServers' must be an object mapping names to servers")
    usable: Dict[str, ServerConfig] = {}
    errors: Dict[str, ConfigError] = {}
    order: List[str] = []
    for name, entry in servers.items():
        if not isinstance(name, str) or not name:
            raise ConfigError(f"{where}: server names must be non-empty strings")
        if isinstance(entry, Mapping) and entry.get("disabled") is True:
            continue
        order.append(name)
        try:
            usable[name] = parse_entry(name, entry, env, base_dir=base_dir)
        except ConfigError as exc:
            errors[name] = exc
    return McpConfig(usable, errors, source, tuple(order))


__all__ = [
    "CONFIG_ERROR",
    "HTTP",
    "STDIO",
    "ConfigError",
    "McpConfig",
    "PathOrMapping",
    "ServerConfig",
    "expand_variables",
    "load_config",
    "parse_entry",
]
