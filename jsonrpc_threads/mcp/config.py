"""The ``mcpServers`` configuration format that MCP hosts use, with ``${VAR}`` expansion.

Theory of operation.  A configuration is a JSON object whose ``mcpServers``
member maps a server's name to how to reach it::

    {"mcpServers": {
        "files":  {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "${HOME}/docs"],
                   "env": {"LOG_LEVEL": "${LOG_LEVEL:-info}"}, "cwd": "/srv", "timeout": 20},
        "search": {"type": "http", "url": "https://example.com/mcp",
                   "headers": {"Authorization": "Bearer ${SEARCH_TOKEN}"}}
    }}

(``servers`` is accepted in place of ``mcpServers``, as in VS Code's
``mcp.json``.)  An entry with ``command`` runs a child process over stdio; an
entry with ``url`` speaks Streamable HTTP.  ``type`` is optional: ``stdio``, or
``http`` / ``streamable-http``; the legacy ``sse`` transport is refused.
``timeout`` is the server's per-call timeout in seconds; ``disabled: true``
leaves the entry out; other keys are ignored.

``${VAR}`` is replaced by the environment variable ``VAR`` and
``${VAR:-default}`` by ``default`` when ``VAR`` is unset or empty, in
``command``, ``args``, ``env`` values, ``cwd``, ``url`` and ``headers`` values.
A variable that is unset and has no default makes that one entry unusable.

This module parses and checks; it starts nothing.  :func:`load_config` never
lets one bad entry spoil the others: a problem with the file as a whole raises
:class:`ConfigError`, a problem with one entry is reported for that entry in
:attr:`McpConfig.errors` and the other entries are usable.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple, Union

from ..errors import JsonRpcError

#: The error code of :class:`ConfigError` (a local code: it never crosses the wire).
CONFIG_ERROR = -32010

STDIO = "stdio"
HTTP = "http"
_TYPES = {
    "stdio": STDIO,
    "http": HTTP,
    "streamable-http": HTTP,
    "streamable_http": HTTP,
    "streamableHttp": HTTP,
}
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")

PathOrMapping = Union[str, "os.PathLike[str]", Mapping[str, Any]]


class ConfigError(JsonRpcError, ValueError):
    """A configuration (or one entry of it) cannot be used.

    The message says where: the file, and the server's name and key when the
    problem is in one entry.  Not retryable: fix the configuration (or set the
    missing environment variable).

    Attributes:
        server: the server whose entry is at fault, or ``None`` for the whole file.
    """

    def __init__(self, message: str, *, server: Optional[str] = None) -> None:
        super().__init__(CONFIG_ERROR, message, None if server is None else {"server": server})
        self.server = server

    def __str__(self) -> str:
        return self.message

    def __reduce__(self) -> Any:
        return (_rebuild_config_error, (self.message, self.server))


def _rebuild_config_error(message: str, server: Optional[str]) -> ConfigError:
    return ConfigError(message, server=server)


@dataclass(frozen=True)
class ServerConfig:
    """One usable server entry, with every ``${VAR}`` already expanded.

    Attributes:
        name: the server's name (the key in ``mcpServers``).
        transport: ``"stdio"`` or ``"http"``.
        command: the program to run (stdio).
        args: its arguments (stdio).
        env: variables set in the child's environment (stdio).
        cwd: the child's working directory (stdio); a relative path in a file
            is taken relative to the file's directory.
        url: the server's endpoint (HTTP).
        headers: headers sent with every request (HTTP).
        timeout: this server's per-call timeout in seconds, or ``None`` for the
            default of whoever uses the entry.
    """

    name: str
    transport: str
    command: Optional[str] = None
    args: Tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: Optional[str] = None
    url: Optional[str] = None
    headers: Mapping[str, str] = field(default_factory=dict)
    timeout: Optional[float] = None

    def entry(self) -> Dict[str, Any]:
        """This server as an ``mcpServers`` entry (expanded), for ``transport_from_config``."""
        if self.transport == HTTP:
            return {"type": "http", "url": self.url, "headers": dict(self.headers)}
        entry: Dict[str, Any] = {"type": "stdio", "command": self.command, "args": list(self.args)}
        if self.env:
            entry["env"] = dict(self.env)
        if self.cwd is not None:
            entry["cwd"] = self.cwd
        return entry


@dataclass(frozen=True)
class McpConfig:
    """A parsed configuration.

    Attributes:
        servers: the usable entries, in the file's order.
        errors: for each unusable entry, the :class:`ConfigError` that says why.
        source: the file it was read from, if any.
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


def expand_variables(value: str, environ: Mapping[str, str], *, where: str = "value") -> str:
    """Replace ``${VAR}`` and ``${VAR:-default}`` in ``value`` from ``environ``.

    ``${VAR:-default}`` uses ``default`` when ``VAR`` is unset or empty; the
    default is taken literally (it may not contain ``}``).  Text that is not a
    ``${NAME}`` reference, such as ``$VAR`` or ``${1}``, is left as it is.

    Raises:
        ConfigError: when a variable is unset and has no default; ``where``
            names the place in the message.
    """

    def replace(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        found = environ.get(name)
        if found:
            return found
        if default is not None:
            return default
        if found is not None:  # set but empty, no default: empty it is
            return found
        raise ConfigError(f"{where}: environment variable {name} is not set (use ${{{name}:-default}} for a default)")

    return _VARIABLE.sub(replace, value)


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


def parse_entry(name: str, entry: Any, environ: Mapping[str, str], *, base_dir: Optional[Path] = None) -> ServerConfig:
    """Check one ``mcpServers`` entry and expand its variables.

    Args:
        name: the server's name, for messages.
        entry: the entry (a mapping).
        environ: where ``${VAR}`` comes from.
        base_dir: the directory a relative ``cwd`` is relative to.

    Raises:
        ConfigError: naming the server and the member at fault.
    """
    prefix = f"server {name!r}"
    if not isinstance(entry, Mapping):
        raise ConfigError(f"{prefix}: the entry must be an object", server=name)

    def fail(message: str) -> ConfigError:
        return ConfigError(f"{prefix}: {message}", server=name)

    def expand(value: str, member: str) -> str:
        try:
            return expand_variables(value, environ, where=f"{prefix}, {member}")
        except ConfigError as exc:
            raise ConfigError(exc.message, server=name) from None

    kind = entry.get("type")
    if kind is not None:
        if kind == "sse":
            raise fail("the legacy HTTP+SSE transport ('type': 'sse') is not supported; use Streamable HTTP")
        if not isinstance(kind, str) or kind not in _TYPES:
            raise fail(f"unknown 'type' {kind!r} (use 'stdio', 'http' or 'streamable-http')")
    has_url = "url" in entry
    has_command = "command" in entry
    if has_url and has_command:
        raise fail("has both 'command' (stdio) and 'url' (HTTP); keep one")
    if not has_url and not has_command:
        raise fail("needs 'command' (stdio) or 'url' (HTTP)")
    transport = HTTP if has_url else STDIO
    if kind is not None and _TYPES[kind] != transport:
        raise fail(f"'type' {kind!r} does not go with {'url' if has_url else 'command'!r}")
    timeout = entry.get("timeout")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0):
        raise fail("'timeout' must be a positive number of seconds")
    resolved_timeout = None if timeout is None else float(timeout)

    if transport == HTTP:
        url = entry["url"]
        if not isinstance(url, str) or not url:
            raise fail("'url' must be a non-empty string")
        url = expand(url, "url")
        if not url.startswith(("http://", "https://")):
            raise fail(f"'url' must start with http:// or https:// (got {url[:40]!r})")
        headers = _string_map(entry.get("headers"), "headers", fail)
        return ServerConfig(
            name,
            HTTP,
            url=url,
            headers={key: expand(value, f"headers.{key}") for key, value in headers.items()},
            timeout=resolved_timeout,
        )

    command = entry["command"]
    if not isinstance(command, str) or not command.strip():
        raise fail("'command' must be a non-empty string")
    args = entry.get("args")
    if args is None:
        args = []
    if not isinstance(args, (list, tuple)) or not all(isinstance(arg, str) for arg in args):
        raise fail("'args' must be a list of strings")
    env = _string_map(entry.get("env"), "env", fail)
    cwd = entry.get("cwd")
    if cwd is not None:
        if not isinstance(cwd, str) or not cwd:
            raise fail("'cwd' must be a non-empty string")
        cwd = expand(cwd, "cwd")
        if base_dir is not None and not os.path.isabs(cwd):
            cwd = str(base_dir / cwd)
    return ServerConfig(
        name,
        STDIO,
        command=expand(command, "command"),
        args=tuple(expand(arg, f"args[{index}]") for index, arg in enumerate(args)),
        env={key: expand(value, f"env.{key}") for key, value in env.items()},
        cwd=cwd,
        timeout=resolved_timeout,
    )


def _string_map(value: Any, member: str, fail: Callable[[str], ConfigError]) -> Dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(
        isinstance(key, str) and isinstance(item, str) for key, item in value.items()
    ):
        raise fail(f"{member!r} must be an object mapping strings to strings")
    return dict(value)


__all__ = [
    "CONFIG_ERROR",
    "ConfigError",
    "McpConfig",
    "ServerConfig",
    "expand_variables",
    "load_config",
    "parse_entry",
]
