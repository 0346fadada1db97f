"""What ACP messages look like: the parameters this client sends and the answers it gives (pure).

Theory of operation.  Everything here turns Python values into the JSON of the
Agent Client Protocol (version 1) or reads that JSON back, and nothing else: no
I/O, no threads, no state.  The rest of the package sends what these functions
build and answers with what they return:

- ``client_capabilities``: what ``initialize`` declares, from what the
  client was configured to serve (a capability is declared only when served);
- ``prompt_blocks``: a prompt given as a ``str`` or as content blocks;
- ``mcp_server_list``: MCP servers for ``session/new`` / ``session/load``,
  from wire dicts or from an ``mcpServers`` mapping (the format MCP hosts use);
- ``selected`` / ``CANCELLED`` / ``reject_option``: the outcomes of
  ``session/request_permission``;
- ``exit_status``: a child's return code as ``terminal/*`` reports it.
"""

from __future__ import annotations

import signal
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

#: The one protocol version this client speaks (ACP's major version).
PROTOCOL_VERSION = 1

#: The agent's methods (client -> agent).
INITIALIZE = "initialize"
AUTHENTICATE = "authenticate"
SESSION_NEW = "session/new"
SESSION_LOAD = "session/load"
SESSION_PROMPT = "session/prompt"
SESSION_CANCEL = "session/cancel"
SESSION_SET_MODE = "session/set_mode"
#: The client's methods (agent -> client).
SESSION_UPDATE = "session/update"
REQUEST_PERMISSION = "session/request_permission"
FS_READ = "fs/read_text_file"
FS_WRITE = "fs/write_text_file"
TERMINAL_CREATE = "terminal/create"
TERMINAL_OUTPUT = "terminal/output"
TERMINAL_WAIT = "terminal/wait_for_exit"
TERMINAL_KILL = "terminal/kill"
TERMINAL_RELEASE = "terminal/release"

#: ACP's error codes beyond JSON-RPC's own.
AUTH_REQUIRED = -32000
RESOURCE_NOT_FOUND = -32002
REQUEST_CANCELLED = -32800

#: The answer to a permission request whose turn was cancelled (or that nobody decided).
CANCELLED: Dict[str, Any] = {"outcome": {"outcome": "cancelled"}}

#: Kinds of permission options that refuse, the least lasting first.
REJECT_KINDS = ("reject_once", "reject_always")

McpServers = Union[Sequence[Mapping[str, Any]], Mapping[str, Mapping[str, Any]]]


def client_capabilities(*, read_files: bool, write_files: bool, terminal: bool) -> Dict[str, Any]:
    """``clientCapabilities`` for ``initialize``: only what the client serves is ``true``."""
    return {"fs": {"readTextFile": read_files, "writeTextFile": write_files}, "terminal": terminal}


def prompt_blocks(prompt: Union[str, Sequence[Mapping[str, Any]]]) -> List[Dict[str, Any]]:
    """The ``prompt`` of ``session/prompt``: a ``str`` is one text block; content blocks pass as given.

    Raises:
        TypeError: for anything else, or a block that is not a mapping with a ``type``.
    """
    if isinstance(prompt, str):
        return [{"type": "text", "text": prompt}]
    if isinstance(prompt, Mapping) or not isinstance(prompt, Sequence):
        raise TypeError(f"prompt must be a str or a list of content blocks, not {type(prompt).__name__}")
    blocks = []
    for block in prompt:
        if not isinstance(block, Mapping) or not isinstance(block.get("type"), str):
            raise TypeError(f"a content block is a mapping with a 'type', not {block!r:.100}")
        blocks.append(dict(block))
    return blocks


def mcp_server_list(servers: McpServers) -> List[Dict[str, Any]]:
    """``mcpServers`` for ``session/new`` and ``session/load``.

    ``servers`` is either a sequence of ACP server dicts, sent as given, or a
    mapping ``{name: entry}`` in the ``mcpServers`` format of MCP hosts: an
    entry with ``command`` (``args``, ``env`` as a mapping) becomes a stdio
    server, one with ``url`` (``headers`` as a mapping) an ``http`` server, or
    ``sse`` when its ``type`` says so.

    Raises:
        TypeError: for servers that are neither, or an entry that is not a mapping.
        ValueError: for an entry with neither ``command`` nor ``url``.
    """
    if isinstance(servers, Mapping):
        return [_from_host_entry(name, entry) for name, entry in servers.items()]
    if isinstance(servers, (str, bytes)) or not isinstance(servers, Sequence):
        raise TypeError(f"mcp_servers must be a list of server dicts or a mapping, not {type(servers).__name__}")
    listed = []
    for server in servers:
        if not isinstance(server, Mapping):
            raise TypeError(f"an MCP server is a mapping, not {type(server).__name__}")
        listed.append(dict(server))
    return listed


def _from_host_entry(name: str, entry: Mapping[str, Any]) -> Dict[str, Any]:
    if not isinstance(entry, Mapping):
        raise TypeError(f"MCP server {name!r}: an entry is a mapping, not {type(entry).__name__}")
    if "command" in entry:
        return {
            "name": name,
            "command": entry["command"],
            "args": list(entry.get("args") or ()),
            "env": _pairs(entry.get("env")),
        }
    if "url" in entry:
        kind = entry.get("type")
        return {
            "type": "sse" if kind == "sse" else "http",
            "name": name,
            "url": entry["url"],
            "headers": _pairs(entry.get("headers")),
        }
    raise ValueError(f"MCP server {name!r}: an entry needs a 'command' or a 'url'")


def _pairs(values: Optional[Mapping[str, Any]]) -> List[Dict[str, str]]:
    return [{"name": str(key), "value": str(value)} for key, value in (values or {}).items()]


def option_ids(params: Mapping[str, Any]) -> List[str]:
    """The ``optionId`` of every option a permission request offers, in order."""
    options = params.get("options")
    if not isinstance(options, list):
        return []
    return [
        option["optionId"] for option in options if isinstance(option, dict) and isinstance(option.get("optionId"), str)
    ]


def selected(option_id: str) -> Dict[str, Any]:
    """The answer to a permission request that chose ``option_id``."""
    return {"outcome": {"outcome": "selected", "optionId": option_id}}


def reject_option(params: Mapping[str, Any]) -> Optional[str]:
    """The option that refuses (``reject_once`` before ``reject_always``), or ``None`` when none is offered."""
    options = params.get("options")
    if not isinstance(options, list):
        return None
    for kind in REJECT_KINDS:
        for option in options:
            if isinstance(option, dict) and option.get("kind") == kind and isinstance(option.get("optionId"), str):
                return str(option["optionId"])
    return None


def exit_status(returncode: int) -> Dict[str, Any]:
    """``{"exitCode", "signal"}`` as ``terminal/*`` report a child that ended with ``returncode``."""
    if returncode >= 0:
        return {"exitCode": returncode, "signal": None}
    try:
        name = signal.Signals(-returncode).name
    except ValueError:
        name = str(-returncode)
    return {"exitCode": None, "signal": name}


__all__ = [
    "AUTHENTICATE",
    "AUTH_REQUIRED",
    "CANCELLED",
    "FS_READ",
    "FS_WRITE",
    "INITIALIZE",
    "PROTOCOL_VERSION",
    "REJECT_KINDS",
    "REQUEST_CANCELLED",
    "REQUEST_PERMISSION",
    "RESOURCE_NOT_FOUND",
    "SESSION_CANCEL",
    "SESSION_LOAD",
    "SESSION_NEW",
    "SESSION_PROMPT",
    "SESSION_SET_MODE",
    "SESSION_UPDATE",
    "TERMINAL_CREATE",
    "TERMINAL_KILL",
    "TERMINAL_OUTPUT",
    "TERMINAL_RELEASE",
    "TERMINAL_WAIT",
    "McpServers",
    "client_capabilities",
    "exit_status",
    "mcp_server_list",
    "option_ids",
    "prompt_blocks",
    "reject_option",
    "selected",
]
