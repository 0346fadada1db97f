"""The two eras of MCP, as data: versions, per-request ``_meta``, result types, and what a server's answer says.

Theory of operation.  MCP has two eras.  The *session* era (revisions
2024-11-05 .. 2025-11-25) opens with ``initialize``, negotiates one version
for the whole session, and lets the server send the client requests.  The
*stateless* era (2026-07-28) has no handshake: every request carries its
protocol version and the client's capabilities in ``_meta``
(``request_meta``), ``server/discover`` tells what the server supports,
every result says what it is in ``resultType`` (``result_type``), and the
server asks the client for input by answering ``input_required`` instead of
sending a request (``mrtr``).

This module does no I/O and holds no state: it turns what was sent and
received into decisions (which era a probe's answer means, which version to
retry with), for ``session`` to act on.

Thread-safety: pure functions and constants.
"""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, Sequence, Tuple

from ..errors import RemoteError
from .errors import (
    HEADER_MISMATCH,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    UNSUPPORTED_PROTOCOL_VERSION,
    ProtocolError,
    UnsupportedProtocolVersion,
)

#: The stateless revisions this client speaks, newest first.
STATELESS_PROTOCOL_VERSIONS: Tuple[str, ...] = ("2026-07-28",)
#: The session (``initialize``) revisions this client speaks, newest first (the first is offered).
SESSION_PROTOCOL_VERSIONS: Tuple[str, ...] = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")

MODE_AUTO = "auto"
MODE_STATELESS = "stateless"
MODE_SESSION = "session"
MODES = (MODE_AUTO, MODE_STATELESS, MODE_SESSION)

#: The reserved ``_meta`` keys of the stateless era.
META_PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
META_LOG_LEVEL = "io.modelcontextprotocol/logLevel"
META_SERVER_INFO = "io.modelcontextprotocol/serverInfo"
META_SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"

RESULT_COMPLETE = "complete"
RESULT_INPUT_REQUIRED = "input_required"
#: The tasks extension's result type: the server made a task of the request.
RESULT_TASK = "task"

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
SKILLS_EXTENSION = "io.modelcontextprotocol/skills"
APPS_EXTENSION = "io.modelcontextprotocol/ui"

#: Requests a server may answer with ``input_required`` (multi round-trip requests).
INPUT_REQUIRED_METHODS = frozenset({"tools/call", "prompts/get", "resources/read"})
#: What a server may ask for in ``inputRequests``.
INPUT_REQUEST_METHODS = frozenset({"elicitation/create", "sampling/createMessage", "roots/list"})
#: Results that carry caching hints (``ttlMs``, ``cacheScope``) in the stateless era.
CACHEABLE_METHODS = frozenset(
    {"server/discover", "tools/list", "prompts/list", "resources/list", "resources/templates/list", "resources/read"}
)
#: The codes only a stateless-era server sends (the range MCP reserves for itself).
MODERN_ERROR_CODES = frozenset({HEADER_MISMATCH, MISSING_REQUIRED_CLIENT_CAPABILITY, UNSUPPORTED_PROTOCOL_VERSION})
#: Methods the stateless era removed (a client in that era never sends them).
REMOVED_IN_STATELESS = frozenset(
    {"initialize", "notifications/initialized", "ping", "logging/setLevel", "notifications/roots/list_changed"}
)


def request_meta(
    version: str,
    capabilities: Mapping[str, Any],
    client_info: Optional[Mapping[str, Any]],
    log_level: Optional[str] = None,
) -> Dict[str, Any]:
    """The protocol's part of a stateless-era request's ``_meta``."""
    meta: Dict[str, Any] = {META_PROTOCOL_VERSION: version, META_CLIENT_CAPABILITIES: dict(capabilities)}
    if client_info is not None:
        meta[META_CLIENT_INFO] = dict(client_info)
    if log_level is not None:
        meta[META_LOG_LEVEL] = log_level
    return meta


def with_meta(params: Optional[Mapping[str, Any]], meta: Mapping[str, Any]) -> Dict[str, Any]:
    """``params`` with ``meta`` merged into its ``_meta`` (the caller's own ``_meta`` keys are kept)."""
    merged = dict(params or {})
    own = merged.get("_meta")
    merged["_meta"] = {**meta, **own} if isinstance(own, Mapping) else dict(meta)
    return merged


def arguments_object(arguments: Any, what: str = "arguments") -> Dict[str, Any]:
    """A caller's tool (or prompt) arguments as the object the request carries (``{}`` for ``None``).

    Raises:
        TypeError: for anything but a mapping, saying what to pass instead; a
            JSON string (a model's tool call carries its arguments as one) is
            told to go through ``json.loads`` first.
    """
    if arguments is None:
        return {}
    if type(arguments) is dict or isinstance(arguments, Mapping):  # a dict: no ABC check on every tool call
        return dict(arguments)
    if isinstance(arguments, (str, bytes, bytearray)):
        raise TypeError(
            f"{what} must be a dict of the arguments, not a JSON string: pass json.loads(...) of it "
            f"(a model's tool call carries its arguments as a JSON string; ToolRegistry.execute() takes the call as is)"
        )
    raise TypeError(f"{what} must be a dict of the arguments (or None), not {type(arguments).__name__}")


def result_type(result: Any) -> str:
    """A result's ``resultType``; ``"complete"`` when it has none (servers of the session era).

    Raises:
        ProtocolError: the result is not an object, or its ``resultType`` is not a string.
    """
    if not isinstance(result, dict):
        raise ProtocolError("the server answered with a result that is not an object", result)
    kind = result.get("resultType", RESULT_COMPLETE)
    if not isinstance(kind, str):
        raise ProtocolError(f"the server sent a resultType that is not a string: {kind!r}")
    return kind


def is_modern_error(error: BaseException) -> bool:
    """True when ``error`` is an answer only a stateless-era server gives (codes -32020..-32022)."""
    return isinstance(error, RemoteError) and error.code in MODERN_ERROR_CODES


def choose_version(supported: Sequence[str], ours: Sequence[str] = STATELESS_PROTOCOL_VERSIONS) -> Optional[str]:
    """The newest of ``ours`` that the server lists in ``supported``, or ``None``."""
    offered = set(supported)
    return next((version for version in ours if version in offered), None)


def retry_version(error: UnsupportedProtocolVersion) -> Optional[str]:
    """The stateless version to retry with after ``error`` (the newest both sides name), or ``None``.

    It may be the version that was refused: a server that names it again is
    asked once more (the caller retries once per request, never in a loop).
    """
    return choose_version(error.supported)


def discover_versions(result: Any) -> Tuple[str, ...]:
    """The ``supportedVersions`` of a ``server/discover`` result (``()`` when it is not one)."""
    if not isinstance(result, dict):
        return ()
    versions = result.get("supportedVersions")
    if not isinstance(versions, list):
        return ()
    return tuple(version for version in versions if isinstance(version, str))


def server_info_of(result: Mapping[str, Any]) -> Dict[str, Any]:
    """The server's identity in a result: ``_meta[serverInfo]`` (2026-07-28), else ``serverInfo``."""
    meta = result.get("_meta")
    info = meta.get(META_SERVER_INFO) if isinstance(meta, Mapping) else None
    if not isinstance(info, Mapping):
        info = result.get("serverInfo")
    return dict(info) if isinstance(info, Mapping) else {}


def stateless_capabilities(capabilities: Mapping[str, Any], extensions: Mapping[str, Any]) -> Dict[str, Any]:
    """Session-era client capabilities as the stateless era declares them.

    ``roots`` loses ``listChanged`` (the notification is gone); ``extensions``
    are added.
    """
    declared = dict(capabilities)
    if "roots" in declared:
        declared["roots"] = {}
    if extensions:
        declared["extensions"] = {**dict(declared.get("extensions") or {}), **dict(extensions)}
    return declared


__all__ = [
    "APPS_EXTENSION",
    "CACHEABLE_METHODS",
    "INPUT_REQUEST_METHODS",
    "INPUT_REQUIRED_METHODS",
    "META_CLIENT_CAPABILITIES",
    "META_CLIENT_INFO",
    "META_LOG_LEVEL",
    "META_PROTOCOL_VERSION",
    "META_SERVER_INFO",
    "META_SUBSCRIPTION_ID",
    "MODERN_ERROR_CODES",
    "MODES",
    "MODE_AUTO",
    "MODE_SESSION",
    "MODE_STATELESS",
    "REMOVED_IN_STATELESS",
    "RESULT_COMPLETE",
    "RESULT_INPUT_REQUIRED",
    "RESULT_TASK",
    "SESSION_PROTOCOL_VERSIONS",
    "SKILLS_EXTENSION",
    "STATELESS_PROTOCOL_VERSIONS",
    "TASKS_EXTENSION",
    "arguments_object",
    "choose_version",
    "discover_versions",
    "is_modern_error",
    "request_meta",
    "result_type",
    "retry_version",
    "server_info_of",
    "stateless_capabilities",
    "with_meta",
]
