"""The MCP layer's exceptions: MCP's own error codes, the protocol's violations, and the tool registry's.

Theory of operation.  Every class here is a
``JsonRpcError``, so one ``except JsonRpcError``
still catches everything the library raises; the classes below the MCP layer
(the JSON-RPC codes, ``RequestTimeout``,
``TransportClosed``, the HTTP errors,
``ConfigError``, which the transports' own
configuration raises too) stay in ``jsonrpc_threads.errors``, which knows
nothing of MCP.  Users import these names from ``jsonrpc_threads.mcp``
(``from jsonrpc_threads.mcp import ServerUnavailable``), or from here; the
layers below ``mcp/`` never reach them.

MCP's codes.  MCP revision 2026-07-28 reserves -32020..-32099 for the codes
it defines (``MCP_ERRORS``).  ``error_from_response``
serves every JSON-RPC peer and leaves them plain
``RemoteError``; the MCP layer turns them into
their classes with ``error_from_mcp``, so only an MCP server's -32022
becomes an ``UnsupportedProtocolVersion``.  The table of every class,
these included, is in ``jsonrpc_threads.errors``.

Pure: no I/O, no threads.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Optional, Sequence, Tuple

from ..errors import INVALID_PARAMS, INVALID_REQUEST, TRANSPORT_CLOSED, JsonRpcError, ProtocolError, RemoteError

#: MCP (2026-07-28): the HTTP headers do not match the body, or a required one is missing or malformed.
HEADER_MISMATCH = -32020
#: MCP (2026-07-28): the request needs a client capability it did not declare.
MISSING_REQUIRED_CLIENT_CAPABILITY = -32021
#: MCP (2026-07-28): the request's protocol version is not one the server supports.
UNSUPPORTED_PROTOCOL_VERSION = -32022


class UnknownTool(JsonRpcError, LookupError):
    """No configured server offers a tool of this name.

    Attributes:
        name: the name asked for (namespaced, or as the server spells it).
        server: the server it was looked up on, when one was named.
    """

    def __init__(self, name: str, server: Optional[str] = None) -> None:
        where = f" on server {server!r}" if server is not None else ""
        super().__init__(INVALID_PARAMS, f"Unknown tool {name!r}{where}", {"name": name, "server": server})
        self.name = name
        self.server = server

    def __str__(self) -> str:
        return self.message


class UnknownServer(JsonRpcError, LookupError):
    """The configuration names no server of this name.

    Attributes:
        server: the name asked for.
        known: the configured names.
    """

    def __init__(self, server: str, known: Sequence[str] = ()) -> None:
        hint = f" (configured: {', '.join(known)})" if known else " (none is configured)"
        super().__init__(INVALID_PARAMS, f"Unknown server {server!r}{hint}", {"server": server})
        self.server = server
        self.known = tuple(known)

    def __str__(self) -> str:
        return self.message


class ServerUnavailable(JsonRpcError, ConnectionError):
    """A server of the tool registry cannot take a call now.

    It could not be started (spawned or reached, then ``initialize`` and
    ``tools/list``), it is restarting and was not back within the call's
    deadline, or it stopped too often and is reported failed.  Nothing was
    sent for the call that raised it: a retry after ``retry_after`` seconds
    is safe.

    Args:
        server: the server's name.
        reason: one line saying why.
        timed_out: True when the server did not answer in time.
        what: what happened, as the message says it (``"failed to start"``,
            ``"is restarting"``, ``"is failed"``).
        retry_after: seconds from now until it is tried again (``None``:
            unknown, or never).
        returncode: the exit code of its last process, when it stopped.
        stderr_tail: the end of that process's stderr.

    Attributes:
        server, reason, timed_out, retry_after, returncode, stderr_tail: as given.
    """

    def __init__(
        self,
        server: str,
        reason: str,
        *,
        timed_out: bool = False,
        what: str = "failed to start",
        retry_after: Optional[float] = None,
        returncode: Optional[int] = None,
        stderr_tail: str = "",
    ) -> None:
        super().__init__(TRANSPORT_CLOSED, f"server {server!r} {what}: {reason}", {"server": server})
        self.server = server
        self.reason = reason
        self.timed_out = timed_out
        self.retry_after = retry_after
        self.returncode = returncode
        self.stderr_tail = stderr_tail

    def __str__(self) -> str:
        return self.message


class ProtocolVersionError(JsonRpcError):
    """The server answered ``initialize`` with a protocol revision this client does not speak.

    Attributes:
        version: the revision the server proposed.
        supported: the revisions this client speaks.
    """

    def __init__(self, version: Any, supported: Sequence[str] = ()) -> None:
        known = f" (supported: {', '.join(supported)})" if supported else ""
        super().__init__(INVALID_REQUEST, f"Unsupported MCP protocol version {version!r}{known}")
        self.version = version
        self.supported = tuple(supported)


class HeaderMismatch(RemoteError):
    """MCP -32020: the server found the request's HTTP headers missing, malformed, or not matching its body."""

    def __init__(self, message: str = "Header mismatch", data: Any = None) -> None:
        super().__init__(HEADER_MISMATCH, message, data)


class MissingClientCapability(RemoteError):
    """MCP -32021: the request needs client capabilities that it did not declare.

    Attributes:
        required_capabilities: what the server named (``data.requiredCapabilities``), or ``{}``.
    """

    def __init__(self, message: str = "Missing required client capability", data: Any = None) -> None:
        super().__init__(MISSING_REQUIRED_CLIENT_CAPABILITY, message, data)
        required = data.get("requiredCapabilities") if isinstance(data, dict) else None
        self.required_capabilities: Any = required if required is not None else {}


class UnsupportedProtocolVersion(RemoteError):
    """MCP -32022: the server does not support the protocol version the request declared.

    Attributes:
        supported: the versions the server named (``data.supported``).
        requested: the version it was asked for (``data.requested``).
    """

    def __init__(self, message: str = "Unsupported protocol version", data: Any = None) -> None:
        super().__init__(UNSUPPORTED_PROTOCOL_VERSION, message, data)
        supported = data.get("supported") if isinstance(data, dict) else None
        self.supported: Tuple[str, ...] = (
            tuple(version for version in supported or () if isinstance(version, str))
            if isinstance(supported, list)
            else ()
        )
        requested = data.get("requested") if isinstance(data, dict) else None
        self.requested: Optional[str] = requested if isinstance(requested, str) else None


class SkillVerificationError(JsonRpcError):
    """A skill's file does not match the skill's entry (size, digest, frontmatter), or is not listed in it.

    The content was not used.  The server may have changed the skill since it
    was listed: get its entry again (``get_skill``) before trying again.

    Attributes:
        uri: the file that failed.
        reason: one line saying how.
    """

    def __init__(self, uri: str, reason: str) -> None:
        super().__init__(INVALID_PARAMS, f"skill file {uri!r} failed verification: {reason}", {"uri": uri})
        self.uri = uri
        self.reason = reason

    def __str__(self) -> str:
        return self.message


#: The codes MCP defines in the range it reserves -> their class (see ``error_from_mcp``).
MCP_ERRORS: Dict[int, Callable[[str, Any], RemoteError]] = {
    HEADER_MISMATCH: HeaderMismatch,
    MISSING_REQUIRED_CLIENT_CAPABILITY: MissingClientCapability,
    UNSUPPORTED_PROTOCOL_VERSION: UnsupportedProtocolVersion,
}


def error_from_mcp(error: JsonRpcError) -> JsonRpcError:
    """An MCP server's error with its MCP class: a ``RemoteError`` with an MCP code becomes that class.

    Anything else is returned as it is (the same object).
    """
    cls = MCP_ERRORS.get(error.code) if type(error) is RemoteError else None
    if cls is None:
        return error
    specific = cls(error.message, error.data)
    specific.__traceback__ = error.__traceback__
    return specific


__all__ = [
    "HEADER_MISMATCH",
    "MCP_ERRORS",
    "MISSING_REQUIRED_CLIENT_CAPABILITY",
    "UNSUPPORTED_PROTOCOL_VERSION",
    "HeaderMismatch",
    "MissingClientCapability",
    "ProtocolError",
    "ProtocolVersionError",
    "ServerUnavailable",
    "SkillVerificationError",
    "UnknownServer",
    "UnknownTool",
    "UnsupportedProtocolVersion",
    "error_from_mcp",
]
