"""TypedDicts for the MCP results this package returns.

Results are the wire JSON as plain dicts: these types only describe the keys a
reader can count on (the ``total=False`` part holds what the specification
makes optional).  Unknown members the server sends are kept, never dropped.
"""

from __future__ import annotations

from typing import Any, Dict, List, TypedDict

from .protocol import SESSION_PROTOCOL_VERSIONS, STATELESS_PROTOCOL_VERSIONS

#: The newest protocol revision this client speaks (the stateless era).
LATEST_PROTOCOL_VERSION = STATELESS_PROTOCOL_VERSIONS[0]
#: The newest revision of the session era (the one ``initialize`` offers).
LATEST_SESSION_PROTOCOL_VERSION = SESSION_PROTOCOL_VERSIONS[0]
#: Every protocol revision this client speaks, newest first: the stateless era, then the session era.
SUPPORTED_PROTOCOL_VERSIONS = STATELESS_PROTOCOL_VERSIONS + SESSION_PROTOCOL_VERSIONS


class _ImplementationRequired(TypedDict):
    name: str
    version: str


class Implementation(_ImplementationRequired, total=False):
    title: str


class _ToolRequired(TypedDict):
    name: str
    inputSchema: Dict[str, Any]


class Tool(_ToolRequired, total=False):
    description: str
    title: str
    outputSchema: Dict[str, Any]
    annotations: Dict[str, Any]


class _CallToolResultRequired(TypedDict):
    content: List[Dict[str, Any]]


class CallToolResult(_CallToolResultRequired, total=False):
    isError: bool
    structuredContent: Dict[str, Any]


class _ResourceRequired(TypedDict):
    uri: str
    name: str


class Resource(_ResourceRequired, total=False):
    mimeType: str
    description: str


class _ResourceTemplateRequired(TypedDict):
    uriTemplate: str
    name: str


class ResourceTemplate(_ResourceTemplateRequired, total=False):
    mimeType: str
    description: str


class ReadResourceResult(TypedDict):
    contents: List[Dict[str, Any]]


class _PromptRequired(TypedDict):
    name: str


class Prompt(_PromptRequired, total=False):
    description: str
    arguments: List[Dict[str, Any]]


class _GetPromptResultRequired(TypedDict):
    messages: List[Dict[str, Any]]


class GetPromptResult(_GetPromptResultRequired, total=False):
    description: str


class CompleteResult(TypedDict):
    completion: Dict[str, Any]


class _ProgressRequired(TypedDict):
    progressToken: Any
    progress: float


class Progress(_ProgressRequired, total=False):
    total: float
    message: str
