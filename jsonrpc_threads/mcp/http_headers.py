"""The request-metadata headers of Streamable HTTP in MCP 2026-07-28, computed from a message (pure).

Theory of operation.  The 2026-07-28 transport mirrors parts of each POST's
body into headers, so that gateways can route without parsing JSON:
``MCP-Protocol-Version`` (the ``_meta`` version), ``Mcp-Method`` (the
method), ``Mcp-Name`` (``params.name`` of ``tools/call`` and ``prompts/get``,
``params.uri`` of ``resources/read``, ``params.taskId`` of the tasks
extension's methods) and, for ``tools/call``, one ``Mcp-Param-{Name}`` per
argument that the tool's ``inputSchema`` marks with ``x-mcp-header``.

The MCP layer computes them here (``message_headers``) and hands them to
the transport with the message (``send(..., headers=...)``): the transport
never reads a method name.  A value that HTTP cannot carry as it is (non-ASCII,
control characters, surrounding spaces, or text that looks like the encoding
itself) is sent as ``=?base64?...?=`` (``encode_value``).

A tool whose ``x-mcp-header`` annotations break the rules (empty, not an HTTP
token, repeated regardless of case, on a non-primitive property, or anywhere
but a chain of ``properties`` from the schema's root) is invalid:
``header_plan`` says why, and the session leaves such a tool out of
``tools/list`` over HTTP (a warning is logged), as the specification requires.

Thread-safety: pure functions; ``HeaderPlan`` is immutable.
"""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Tuple, Union

from ..errors import InvalidParams

PROTOCOL_VERSION_HEADER = "MCP-Protocol-Version"
METHOD_HEADER = "Mcp-Method"
NAME_HEADER = "Mcp-Name"
PARAM_HEADER_PREFIX = "Mcp-Param-"
#: The schema keyword that names a tool parameter's header.
HEADER_KEYWORD = "x-mcp-header"
#: The largest integer JavaScript holds exactly: the bound on mirrored integer values.
MAX_SAFE_INTEGER = 2**53 - 1

#: Where ``Mcp-Name`` comes from, by method.
NAME_SOURCES: Mapping[str, str] = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
    "tasks/get": "taskId",
    "tasks/update": "taskId",
    "tasks/cancel": "taskId",
}
#: The property types an ``x-mcp-header`` may annotate.
_PRIMITIVE_TYPES = frozenset({"string", "integer", "boolean"})
#: Keywords whose values are instances, not schemas (an ``x-mcp-header`` key there is data).
_INSTANCE_KEYWORDS = frozenset({"const", "enum", "default", "examples", "example"})
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_SENTINEL = re.compile(r"=\?base64\?.*\?=", re.DOTALL)

Path = Tuple[str, ...]


@dataclass(frozen=True)
class HeaderPlan:
    """Which arguments of one tool go into which ``Mcp-Param-*`` headers.

    Attributes:
        params: ``(property path, header name part)`` pairs, the path being the
            chain of ``properties`` keys from the schema's root.
    """

    params: Tuple[Tuple[Path, str], ...] = ()


NO_HEADERS = HeaderPlan()


def header_plan(input_schema: Any) -> Tuple[HeaderPlan, Optional[str]]:
    """The ``Mcp-Param-*`` plan of a tool's ``inputSchema``, or why its annotations are invalid.

    Returns:
        ``(plan, None)`` for a valid schema (the plan is empty without
        annotations), ``(NO_HEADERS, reason)`` for an invalid one.
    """
    if not isinstance(input_schema, Mapping):
        return NO_HEADERS, None
    found: List[Tuple[Optional[Path], Any, Any]] = []
    _collect(input_schema, (), True, found)
    if not found:
        return NO_HEADERS, None
    params: List[Tuple[Path, str]] = []
    seen: Dict[str, str] = {}
    for path, name, schema in found:
        where = "/".join(path) if path else "(root)"
        if path is None:
            return NO_HEADERS, f"{HEADER_KEYWORD} {name!r} is not on a property reachable through 'properties' alone"
        if not isinstance(name, str) or not name:
            return NO_HEADERS, f"{HEADER_KEYWORD} of {where!r} is empty or not a string"
        if not _TOKEN.fullmatch(name):
            return NO_HEADERS, f"{HEADER_KEYWORD} {name!r} of {where!r} is not an HTTP header token"
        if not path:
            return NO_HEADERS, f"{HEADER_KEYWORD} {name!r} is on the schema's root, not on a property"
        if not _is_primitive(schema):
            return NO_HEADERS, f"{HEADER_KEYWORD} {name!r} is on {where!r}, which is not a string, integer or boolean"
        folded = name.lower()
        if folded in seen:
            return NO_HEADERS, f"{HEADER_KEYWORD} {name!r} repeats {seen[folded]!r} (names are case-insensitive)"
        seen[folded] = name
        params.append((path, name))
    return HeaderPlan(tuple(params)), None


def _collect(node: Any, path: Path, reachable: bool, found: List[Tuple[Optional[Path], Any, Any]]) -> None:
    """Every ``x-mcp-header`` under ``node`` (a schema): its path, or ``None`` where it is not reachable."""
    if isinstance(node, list):
        for item in node:
            _collect(item, path, False, found)
        return
    if not isinstance(node, Mapping):
        return
    if HEADER_KEYWORD in node:
        found.append((path if reachable else None, node[HEADER_KEYWORD], node))
    for key, value in node.items():
        if key == HEADER_KEYWORD or key in _INSTANCE_KEYWORDS:
            continue
        if key == "properties" and isinstance(value, Mapping):
            for name, sub in value.items():
                _collect(sub, (*path, str(name)), reachable, found)
        else:
            _collect(value, path, False, found)


def _is_primitive(schema: Mapping[str, Any]) -> bool:
    kind = schema.get("type")
    if isinstance(kind, str):
        return kind in _PRIMITIVE_TYPES
    if isinstance(kind, list):
        named = [item for item in kind if item != "null"]
        return bool(named) and all(isinstance(item, str) and item in _PRIMITIVE_TYPES for item in named)
    return False


def encode_value(value: str) -> str:
    """``value`` as a header value: as it is when HTTP carries it safely, else ``=?base64?...?=``."""
    safe = all(" " <= ch <= "~" for ch in value) and value == value.strip(" ") and not _SENTINEL.fullmatch(value)
    if safe:
        return value
    return "=?base64?" + base64.b64encode(value.encode("utf-8")).decode("ascii") + "?="


def param_text(value: Any) -> Optional[str]:
    """An argument's text for its header: strings as they are, integers in decimal, ``true``/``false``.

    ``None`` (and a missing value) means no header.

    Raises:
        InvalidParams: an integer outside JavaScript's safe range, or a value
            that is no string, integer or boolean.
    """
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        if abs(value) > MAX_SAFE_INTEGER:
            raise InvalidParams(f"{value} is outside the integer range a header may carry (|n| <= 2**53 - 1)")
        return str(value)
    if isinstance(value, float) and value.is_integer() and abs(value) <= MAX_SAFE_INTEGER:
        return str(int(value))
    if isinstance(value, str):
        return value
    raise InvalidParams(f"a {type(value).__name__} cannot be mirrored into a header (string, integer or boolean)")


def message_headers(
    version: str, method: str, params: Optional[Mapping[str, Any]], plan: HeaderPlan = NO_HEADERS
) -> Dict[str, str]:
    """The request-metadata headers of one POST of the 2026-07-28 transport.

    Raises:
        InvalidParams: an ``x-mcp-header`` argument that cannot be carried (see ``param_text``).
    """
    headers = {PROTOCOL_VERSION_HEADER: version, METHOD_HEADER: method}
    source = NAME_SOURCES.get(method)
    if source is not None and params is not None:
        name = params.get(source)
        if isinstance(name, str):
            headers[NAME_HEADER] = encode_value(name)
    if plan.params and params is not None:
        arguments = params.get("arguments")
        if isinstance(arguments, Mapping):
            for path, header in plan.params:
                text = param_text(_value_at(arguments, path))
                if text is not None:
                    headers[PARAM_HEADER_PREFIX + header] = encode_value(text)
    return headers


def _value_at(arguments: Mapping[str, Any], path: Path) -> Any:
    node: Union[Mapping[str, Any], Any] = arguments
    for key in path:
        if not isinstance(node, Mapping):
            return None
        node = node.get(key)
    return node


__all__ = [
    "HEADER_KEYWORD",
    "MAX_SAFE_INTEGER",
    "METHOD_HEADER",
    "NAME_HEADER",
    "NAME_SOURCES",
    "NO_HEADERS",
    "PARAM_HEADER_PREFIX",
    "PROTOCOL_VERSION_HEADER",
    "HeaderPlan",
    "encode_value",
    "header_plan",
    "message_headers",
    "param_text",
]
