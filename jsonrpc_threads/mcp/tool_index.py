"""The registry's routing table: every name a model sees, and the server and tool behind it.

Theory of operation.  A ``ToolIndex`` is built from the tool lists of a
registry's supervisors (``tool_cache``), in configuration order, with
the names of ``naming`` (``mcp__<server>__<tool>``, rewritten stably
when they clash or do not fit a model's rules), leaving out the tools an MCP
App keeps for itself (``llm_formats.model_visible``).  It remembers the
version of each list it was built from, so a reader can tell a table that
lags behind a list that just changed (``ToolIndex.current``) and rebuild
it at once rather than wait for the supervisor's own rebuild.

Thread-safety: every method may be called from any thread (one lock; the
supervisors' lists are read through their own).
"""

from __future__ import annotations

import threading
from typing import Dict, List, Optional, Sequence, Tuple

from .llm_formats import RegistryTool, model_visible, registry_tool
from .naming import ToolKey, assign_names, server_prefix
from .supervisor import ServerSupervisor
from .types import Tool


class ToolIndex:
    """Names -> (supervisor, tool).  Thread-safe.

    Args:
        servers: the registry's supervisors, in configuration order.
    """

    def __init__(self, servers: Sequence[ServerSupervisor]) -> None:
        self._servers = list(servers)
        # _lock guards _names, _entries and _built.
        self._lock = threading.Lock()
        self._names: Dict[str, Tuple[ServerSupervisor, str]] = {}
        self._entries: List[RegistryTool] = []
        self._built: List[int] = []  # each supervisor's list version when the table was built

    def rebuild(self) -> None:
        """Build the table again from the lists as they are now (rebuilds run one at a time)."""
        pairs: List[ToolKey] = []
        tools: Dict[ToolKey, Tuple[ServerSupervisor, Tool]] = {}
        built: List[int] = []
        with self._lock:  # the lists' own locks are taken inside it, never the other way round
            for server in self._servers:
                listed, version = server.cache.listing()
                built.append(version)
                for tool in listed:
                    name = tool.get("name") if isinstance(tool, dict) else None
                    if not isinstance(name, str) or not model_visible(tool):
                        continue  # unnamed, or for an MCP App's eyes only
                    pair = (server.name, name)
                    if pair not in tools:
                        pairs.append(pair)
                        tools[pair] = (server, tool)
            names = assign_names(pairs)
            self._names = {names[pair]: (tools[pair][0], pair[1]) for pair in pairs}
            self._entries = [registry_tool(names[pair], pair[0], tools[pair][1]) for pair in pairs]
            self._built = built

    def current(self) -> bool:
        """True when no list changed since the table was built."""
        with self._lock:
            built = list(self._built)
        return built == [server.cache.version for server in self._servers]

    def entries(self) -> List[RegistryTool]:
        """Every tool's descriptor, in configuration order (the table rebuilt first if a list moved on)."""
        if not self.current():
            self.rebuild()
        with self._lock:
            return list(self._entries)

    def lookup(self, name: str) -> Optional[Tuple[ServerSupervisor, str]]:
        """The supervisor and the tool (as its server spells it) behind ``name``, or ``None``."""
        with self._lock:
            return self._names.get(name)

    def candidates(self, name: str) -> List[ServerSupervisor]:
        """The servers ``name`` could belong to, by its prefix (those whose tools may not be listed yet)."""
        return [server for server in self._servers if name.startswith(server_prefix(server.name))]


__all__ = ["ToolIndex"]
