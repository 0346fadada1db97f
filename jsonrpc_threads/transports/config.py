"""Server entries, the format MCP hosts use in ``mcpServers``: the one parser, and their transports.

An entry with ``url`` speaks Streamable HTTP (or, with ``"type": "sse"``, the
legacy HTTP+SSE transport of MCP 2024-11-05); an entry with ``command`` runs a
child process over stdio::

    {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}
    {"type": "sse", "url": "http://127.0.0.1:3001/sse"}
    {"command": "npx", "args": ["-y", "some-server"], "env": {"KEY": "${KEY:-none}"}, "cwd": "/srv"}

``type`` is optional: ``"http"`` or ``"streamable-http"`` (also
``"streamable_http"``, ``"streamableHttp"``) for the first kind, ``"sse"``
for the legacy one, ``"stdio"`` for the last.  ``timeout`` is the
server's per-call timeout in seconds, for whoever uses the entry (the tool
registry).  Other keys (``description``, ``disabled``, ...) are left for the
caller to interpret and ignored here.

``${VAR}`` is replaced by the environment variable ``VAR`` and
``${VAR:-default}`` by ``default`` when ``VAR`` is unset or empty, in
``command``, ``args``, ``env`` values, ``cwd``, ``url`` and ``headers`` values.
A variable that is unset and has no default makes the entry unusable.

Theory of operation.  ``parse_entry`` is the only place an entry is
checked and expanded; it returns a ``ServerConfig`` and builds nothing.
``build_transport`` makes the transport a ``ServerConfig`` describes,
and ``transport_from_config`` is the two in one.  Every way into the
library goes through them: ``transport_from_config``,
``McpClient(entry)``, and ``ToolRegistry`` (whose configuration file
``jsonrpc_threads.mcp.config.load_config`` reads entry by entry with
``parse_entry``), so an entry means the same everywhere.

The transports are imported when one is built, not when this module is:
importing it pulls in neither ``requests`` nor ``psutil``.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Dict, Mapping, Optional, Tuple, Union
from urllib.parse import urlsplit

from ..errors import ConfigError
from .redact import REDACTED, redact_headers, url_label

if TYPE_CHECKING:
    from .http import HttpTransport
    from .sse import SseTransport
    from .stdio import StdioTransport

STDIO = "stdio"
HTTP = "http"
#: The legacy HTTP+SSE transport (2024-11-05).
SSE = "sse"
HTTP_TYPES = frozenset({"http", "streamable-http", "streamable_http", "streamableHttp"})
SSE_TYPES = frozenset({SSE})
STDIO_TYPES = frozenset({"stdio"})
URL_TYPES = HTTP_TYPES | SSE_TYPES

_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


@dataclass(frozen=True)
class ServerConfig:
    """One usable server entry, with every ``${VAR}`` already expanded.

    Immutable (and so safe to share between threads).

    Attributes:
        name: the server's name (its key in ``mcpServers``), or ``None``.
        transport: ``"stdio"``, ``"http"`` or ``"sse"``.
        command: the program to run (stdio).
        args: its arguments (stdio).
        env: variables set in the child's environment (stdio).
        cwd: the child's working directory (stdio); a relative path in a file
            is taken relative to the file's directory.
        url: the server's endpoint (HTTP, SSE).
        headers: headers sent with every request (HTTP, SSE).
        timeout: this server's per-call timeout in seconds, or ``None`` for the
            default of whoever uses the entry.
    """

    name: Optional[str]
    transport: str
    command: Optional[str] = None
    args: Tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: Optional[str] = None
    url: Optional[str] = None
    headers: Mapping[str, str] = field(default_factory=dict)
    timeout: Optional[float] = None

    def __repr__(self) -> str:
        """The entry without its secrets: the URL without user info or query, secret headers and every
        ``env`` value redacted (the names stay)."""
        url = None if self.url is None else url_label(self.url)
        env = {name: REDACTED for name in self.env}
        return (
            f"ServerConfig(name={self.name!r}, transport={self.transport!r}, command={self.command!r}, "
            f"args={self.args!r}, env={env!r}, cwd={self.cwd!r}, url={url!r}, "
            f"headers={redact_headers(self.headers)!r}, timeout={self.timeout!r})"
        )

    def entry(self) -> Dict[str, Any]:
        """This server as an ``mcpServers`` entry again (expanded), e.g. to write a configuration."""
        entry: Dict[str, Any]
        if self.transport in (HTTP, SSE):
            entry = {"type": self.transport, "url": self.url, "headers": dict(self.headers)}
        else:
            entry = {"type": "stdio", "command": self.command, "args": list(self.args)}
            if self.env:
                entry["env"] = dict(self.env)
            if self.cwd is not None:
                entry["cwd"] = self.cwd
        if self.timeout is not None:
            entry["timeout"] = self.timeout
        return entry


def expand_variables(value: str, environ: Mapping[str, str], *, where: str = "value") -> str:
    """Replace ``${VAR}`` and ``${VAR:-default}`` in ``value`` from ``environ``.

    ``${VAR:-default}`` uses ``default`` when ``VAR`` is unset or empty; the
    default is taken literally (it may not contain ``}``).  Text that is not a
    ``${NAME}`` reference, such as ``$VAR`` or ``${1}``, is left as it is.

    Args:
        value: the text to expand.
        environ: where the variables come from.
        where: names the place in an error message.

    Returns:
        The expanded text.

    Raises:
        ConfigError: when a variable is unset and has no default.
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


def parse_entry(
    name: Optional[str],
    entry: Any,
    environ: Optional[Mapping[str, str]] = None,
    *,
    base_dir: Optional[Path] = None,
) -> ServerConfig:
    """Check one server entry and expand its variables: the only validator of entries.

    Args:
        name: the server's name, for messages and the result (``None`` when
            the entry stands alone).
        entry: the entry (a mapping).
        environ: where ``${VAR}`` comes from; ``os.environ`` by default.
        base_dir: the directory a relative ``cwd`` is relative to (the
            configuration file's); ``None`` leaves it as it is.

    Returns:
        The entry, checked and expanded.

    Raises:
        ConfigError: (a ``ValueError``) naming the server, when it has one,
            and the member at fault.
    """
    env_source = os.environ if environ is None else environ
    prefix = f"server {name!r}: " if name is not None else ""

    def fail(message: str) -> ConfigError:
        return ConfigError(prefix + message, server=name)

    def expand(value: str, member: str) -> str:
        where = f"server {name!r}, {member}" if name is not None else member
        try:
            return expand_variables(value, env_source, where=where)
        except ConfigError as exc:
            raise ConfigError(exc.message, server=name) from None

    if not isinstance(entry, Mapping):
        raise fail(f"a server entry must be an object (a mapping), not {type(entry).__name__}")
    kind = entry.get("type")
    if kind is not None and (not isinstance(kind, str) or kind not in URL_TYPES | STDIO_TYPES):
        known = ", ".join(sorted(URL_TYPES | STDIO_TYPES))
        raise fail(f"unknown server type {kind!r} (known: {known})")
    has_url = "url" in entry
    has_command = "command" in entry
    if has_url and has_command:
        raise fail("has 'command' (stdio) and 'url' (HTTP): keep one, not both")
    if not has_url and not has_command:
        raise fail("needs 'command' (stdio) or 'url' (HTTP)")
    if has_url and kind is not None and kind not in URL_TYPES:
        raise fail(f"server type {kind!r} does not take a 'url'")
    if has_command and kind is not None and kind not in STDIO_TYPES:
        raise fail(f"server type {kind!r} does not take a 'command'")
    timeout = entry.get("timeout")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0):
        raise fail("'timeout' must be a positive number of seconds")
    seconds = None if timeout is None else float(timeout)

    if has_url:
        url = entry["url"]
        if not isinstance(url, str) or not url:
            raise fail("'url' must be a non-empty string")
        url = expand(url, "url")
        scheme = urlsplit(url).scheme
        if scheme not in ("http", "https"):
            raise fail(f"'url' must start with http:// or https:// (its scheme is {scheme or 'missing'!r})")
        headers = _string_map(entry.get("headers"), "headers", fail)
        return ServerConfig(
            name,
            SSE if kind in SSE_TYPES else HTTP,
            url=url,
            headers={key: expand(value, f"headers.{key}") for key, value in headers.items()},
            timeout=seconds,
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
        timeout=seconds,
    )


def build_transport(
    config: ServerConfig, *, inherit_env: bool = False
) -> Union[StdioTransport, HttpTransport, SseTransport]:
    """Build the transport a parsed entry describes (a stdio child is spawned now).

    Args:
        config: the entry, from ``parse_entry``.
        inherit_env: a stdio child gets the whole environment of this process
            (plus ``env``), not only the allowlist of ``StdioTransport``.

    Returns:
        An ``HttpTransport``, an ``SseTransport`` or a ``StdioTransport``
        (a stdio one labelled with the server's name, when it has one).  Pass it to ``JsonRpcClient`` (or
        ``McpClient``), which starts and owns it.

    Raises:
        TransportClosed: the stdio command cannot be started.
        ValueError: the transport refuses a value.
    """
    if config.transport == HTTP:
        from .http import HttpTransport  # noqa: PLC0415 - imported when needed (requests)

        assert config.url is not None
        return HttpTransport(config.url, headers=dict(config.headers) or None)
    if config.transport == SSE:
        from .sse import SseTransport  # noqa: PLC0415 - imported when needed (requests)

        assert config.url is not None
        return SseTransport(config.url, headers=dict(config.headers) or None)
    from .stdio import StdioTransport  # noqa: PLC0415 - imported when needed (psutil)

    assert config.command is not None
    return StdioTransport(
        [config.command, *config.args],
        env=dict(config.env) or None,
        cwd=config.cwd,
        inherit_env=inherit_env,
        label=config.name,
    )


def transport_from_config(entry: Mapping[str, Any]) -> Union[StdioTransport, HttpTransport, SseTransport]:
    """Build the transport an ``mcpServers`` entry describes (a stdio child is spawned now).

    Args:
        entry: ``{"url": str, "headers": {str: str}}`` for HTTP (with
            ``"type": "sse"`` the legacy HTTP+SSE transport), or
            ``{"command": str, "args": [str], "env": {str: str}, "cwd": str}``
            for stdio; ``type`` optional (``"http"``, ``"streamable-http"``,
            ``"sse"``, ``"stdio"``).  ``${VAR}`` is expanded from ``os.environ``.

    Returns:
        An ``HttpTransport``, an
        ``SseTransport`` or a
        ``StdioTransport``.  Pass it to
        ``JsonRpcClient`` (or ``McpClient``), which starts and owns it.

    Raises:
        ValueError: (a ``ConfigError``) when the
            entry has both or neither of ``command`` and ``url``, a member of
            the wrong type, an unknown ``type``, or an unset variable.
        TransportClosed: when the stdio command cannot be started.
    """
    return build_transport(parse_entry(None, entry))


def _string_map(value: Any, member: str, fail: Callable[[str], ConfigError]) -> Dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(
        isinstance(key, str) and isinstance(item, str) for key, item in value.items()
    ):
        raise fail(f"{member!r} must be an object mapping strings to strings")
    return dict(value)


__all__ = [
    "HTTP",
    "HTTP_TYPES",
    "SSE",
    "SSE_TYPES",
    "STDIO",
    "STDIO_TYPES",
    "URL_TYPES",
    "ServerConfig",
    "build_transport",
    "expand_variables",
    "parse_entry",
    "transport_from_config",
]
