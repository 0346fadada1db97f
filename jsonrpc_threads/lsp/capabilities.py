"""What the client declares in ``initialize``, and what it reads from the server's answer.

Declared honestly: a capability appears only when the client does what it
promises.

- ``general.positionEncodings``: the encodings the caller accepts (UTF-16
  alone by default); the server picks one (``positionEncoding``), UTF-16 when
  it names none, and every position the client hands over is in it.
- ``workspace.applyEdit``: only when an ``on_apply_edit`` handler was given
  (without one the client refuses every edit, so it does not offer to apply any).
- ``workspace.configuration`` (answered from ``settings``),
  ``workspace.workspaceFolders`` (the root), ``workspace.didChangeConfiguration``
  (the client sends the settings after ``initialized``).
- ``window.workDoneProgress``: the client accepts server-created tokens and
  routes their reports; ``window.showMessage``: it answers
  ``window/showMessageRequest`` (first action, or the caller's handler).
- ``textDocument``: open/change/close with full text (no ``willSave``, no
  ``didSave``); publishDiagnostics with versions; and the requests the client
  has helpers for, whose results it hands over untouched (so every result shape
  declared here, location links and symbol trees included, reaches the caller
  as the server sent it).  No dynamic registration anywhere: the client does
  not act on ``client/registerCapability`` beyond accepting and recording it.

Pure: builds and reads dicts.
"""

from __future__ import annotations

import copy
from typing import Any, Dict, Mapping, NamedTuple, Optional, Sequence

from ..runtime.logs import get_logger
from .positions import DEFAULT_ENCODING, check_encoding

logger = get_logger(__name__)

#: ``TextDocumentSyncKind``: no change notifications, full text, incremental.
SYNC_NONE = 0
SYNC_FULL = 1
SYNC_INCREMENTAL = 2


def client_capabilities(
    *,
    position_encodings: Sequence[str],
    apply_edit: bool,
    extra: Optional[Mapping[str, Any]] = None,
) -> Dict[str, Any]:
    """The ``capabilities`` member of ``initialize`` (see the module docstring).

    Args:
        position_encodings: the encodings offered, most wanted first.
        apply_edit: whether ``workspace/applyEdit`` is handled.
        extra: capabilities merged on top (nested mappings merged key by key),
            for what the caller handles itself through ``on_request``.

    Raises:
        ValueError: for an unknown or missing encoding.
    """
    encodings = [check_encoding(encoding) for encoding in position_encodings]
    if not encodings:
        raise ValueError("offer at least one position encoding")
    workspace: Dict[str, Any] = {
        "configuration": True,
        "workspaceFolders": True,
        "didChangeConfiguration": {"dynamicRegistration": False},
        "symbol": {"dynamicRegistration": False},
        "workspaceEdit": {"documentChanges": True},
    }
    if apply_edit:
        workspace["applyEdit"] = True
    capabilities: Dict[str, Any] = {
        "general": {"positionEncodings": encodings},
        "workspace": workspace,
        "textDocument": {
            "synchronization": {
                "dynamicRegistration": False,
                "willSave": False,
                "willSaveWaitUntil": False,
                "didSave": False,
            },
            "publishDiagnostics": {
                "relatedInformation": True,
                "versionSupport": True,
                "codeDescriptionSupport": True,
                "dataSupport": True,
            },
            "hover": {"dynamicRegistration": False, "contentFormat": ["markdown", "plaintext"]},
            "definition": {"dynamicRegistration": False, "linkSupport": True},
            "references": {"dynamicRegistration": False},
            "documentSymbol": {"dynamicRegistration": False, "hierarchicalDocumentSymbolSupport": True},
            "completion": {
                "dynamicRegistration": False,
                "contextSupport": True,
                "completionItem": {"snippetSupport": False, "documentationFormat": ["markdown", "plaintext"]},
            },
            "rename": {"dynamicRegistration": False, "prepareSupport": False},
        },
        "window": {
            "workDoneProgress": True,
            "showMessage": {"messageActionItem": {"additionalPropertiesSupport": False}},
        },
    }
    if extra:
        _merge(capabilities, extra)
    return capabilities


def _merge(target: Dict[str, Any], extra: Mapping[str, Any]) -> None:
    for key, value in extra.items():
        current = target.get(key)
        if isinstance(current, dict) and isinstance(value, Mapping):
            _merge(current, value)
        else:
            target[key] = copy.deepcopy(value)


def negotiated_encoding(server_capabilities: Mapping[str, Any], offered: Sequence[str]) -> str:
    """The position encoding the server chose: its ``positionEncoding``, UTF-16 when it names none.

    A server that names an encoding the client did not offer breaks the
    protocol; its choice is used all the same when the client can convert it
    (a warning is logged), and UTF-16 otherwise.
    """
    chosen = server_capabilities.get("positionEncoding")
    if chosen is None:
        return DEFAULT_ENCODING
    if chosen in offered:
        return str(chosen)
    try:
        check_encoding(chosen)
    except ValueError:
        logger.warning("the server chose the position encoding %r, which is unknown: using utf-16", chosen)
        return DEFAULT_ENCODING
    logger.warning("the server chose the position encoding %r, which was not offered (%s)", chosen, offered)
    return str(chosen)


class SyncOptions(NamedTuple):
    """How the server wants documents synchronized (its ``textDocumentSync``)."""

    open_close: bool
    change: int


def sync_options(server_capabilities: Mapping[str, Any]) -> SyncOptions:
    """Read ``textDocumentSync`` (a kind number, or options; absent means none at all).

    A bare kind number implies open and close notifications, as servers and
    editors read it; in the options form ``openClose`` is false unless given.
    """
    sync = server_capabilities.get("textDocumentSync")
    if isinstance(sync, int) and not isinstance(sync, bool):
        return SyncOptions(True, sync)
    if isinstance(sync, Mapping):
        change = sync.get("change")
        kind = change if isinstance(change, int) and not isinstance(change, bool) else SYNC_NONE
        return SyncOptions(bool(sync.get("openClose")), kind)
    return SyncOptions(False, SYNC_NONE)


__all__ = [
    "SYNC_FULL",
    "SYNC_INCREMENTAL",
    "SYNC_NONE",
    "SyncOptions",
    "client_capabilities",
    "negotiated_encoding",
    "sync_options",
]
