"""The names a model sees for the tools of many servers: ``mcp__<server>__<tool>``.

Pure functions, no state: the registry calls ``assign_names`` each time a
tool list changes.

The name is used exactly as the server and the configuration spell it when it
matches ``[A-Za-z0-9_-]{1,64}`` (the limit of the OpenAI and Anthropic APIs).
Otherwise it is rewritten, always the same way:

1. every character outside ``A-Z a-z 0-9 _ -`` becomes ``_``;
2. a name still longer than 64 characters keeps its first 55 characters,
   followed by ``_`` and 8 hex digits of the SHA-256 of ``"<server>\\0<tool>"``
   (the original spellings);
3. when two tools end up with the same name, a name that needed no rewriting
   keeps it (between two such names, the one from the server listed first in
   the configuration keeps it); each of the others gets the form of step 2
   (its first 55 characters, ``_``, 8 hex digits), whatever its length.

So ``files`` / ``read.file`` is ``mcp__files__read_file`` (or
``mcp__files__read_file_<hash>`` when the server also has ``read_file``),
and a name is stable for as long as the tools it could clash with are.
"""

from __future__ import annotations

import hashlib
import re
from typing import Dict, List, Sequence, Tuple

#: The names the OpenAI and Anthropic APIs accept for a tool.
TOOL_NAME_PATTERN = re.compile(r"[A-Za-z0-9_-]{1,64}")
MAX_TOOL_NAME_CHARS = 64
#: Hex digits of the hash in a rewritten name.
NAME_HASH_CHARS = 8
#: Characters kept before ``_<hash>`` in a rewritten name (64 - 1 - 8).
NAME_HASH_PREFIX_CHARS = MAX_TOOL_NAME_CHARS - 1 - NAME_HASH_CHARS

_INVALID_CHARS = re.compile(r"[^A-Za-z0-9_-]")

ToolKey = Tuple[str, str]  # (server, tool as the server spells it)


def _name_hash(server: str, tool: str) -> str:
    data = f"{server}\0{tool}".encode("utf-8", "surrogatepass")
    return hashlib.sha256(data).hexdigest()[:NAME_HASH_CHARS]


def _sanitized(server: str, tool: str) -> str:
    return f"mcp__{_INVALID_CHARS.sub('_', server)}__{_INVALID_CHARS.sub('_', tool)}"


def _hashed_name(server: str, tool: str) -> str:
    return f"{_sanitized(server, tool)[:NAME_HASH_PREFIX_CHARS]}_{_name_hash(server, tool)}"


def server_prefix(server: str) -> str:
    """What every name of ``server``'s tools starts with (to guess a name's server)."""
    return f"mcp__{_INVALID_CHARS.sub('_', server)}__"[:NAME_HASH_PREFIX_CHARS]


def namespaced_name(server: str, tool: str) -> str:
    """The name of ``tool`` of ``server`` for a model, before any clash is resolved.

    Args:
        server: the server's name in the configuration.
        tool: the tool's name as the server spells it.

    Returns:
        ``mcp__<server>__<tool>`` when that matches ``[A-Za-z0-9_-]{1,64}``;
        else rewritten by the rules in this module's docstring (invalid
        characters to ``_``, then, when too long, 55 characters + ``_`` + 8 hex
        digits of a hash).
    """
    name = f"mcp__{server}__{tool}"
    if TOOL_NAME_PATTERN.fullmatch(name):
        return name
    name = _sanitized(server, tool)
    if len(name) <= MAX_TOOL_NAME_CHARS:
        return name
    return _hashed_name(server, tool)


def assign_names(pairs: Sequence[ToolKey]) -> Dict[ToolKey, str]:
    """Give every ``(server, tool)`` pair a distinct name for a model.

    Args:
        pairs: the tools, in configuration order (servers) and server order (tools).

    Returns:
        ``{(server, tool): name}``; see the module docstring for the rules.
    """
    preferred: Dict[ToolKey, str] = {}
    for pair in pairs:
        preferred.setdefault(pair, namespaced_name(*pair))
    groups: Dict[str, List[ToolKey]] = {}
    for pair, name in preferred.items():
        groups.setdefault(name, []).append(pair)
    names: Dict[ToolKey, str] = {}
    for name, group in groups.items():
        if len(group) == 1:
            names[group[0]] = name
            continue
        exact = [pair for pair in group if f"mcp__{pair[0]}__{pair[1]}" == name]
        keeper = exact[0] if exact else None
        for pair in group:
            names[pair] = name if pair == keeper else _hashed_name(*pair)
    taken: Dict[str, ToolKey] = {}
    for pair, name in names.items():
        unique, salt = name, 0
        while unique in taken:  # a hash collision: practically never
            salt += 1
            unique = f"{_sanitized(*pair)[:NAME_HASH_PREFIX_CHARS]}_{_name_hash(pair[0], f'{pair[1]}#{salt}')}"
        taken[unique] = pair
        names[pair] = unique
    return names


__all__ = [
    "MAX_TOOL_NAME_CHARS",
    "NAME_HASH_CHARS",
    "NAME_HASH_PREFIX_CHARS",
    "TOOL_NAME_PATTERN",
    "ToolKey",
    "assign_names",
    "namespaced_name",
    "server_prefix",
]
