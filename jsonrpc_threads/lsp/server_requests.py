"""What a language server asks of its client, and what it tells it.

Theory of operation.  A server sends requests of its own while it works
(pyright asks for its settings with ``workspace/configuration`` right after
``initialized``); an answer that never comes stalls the server, and an answer
computed on the reader thread would stall the client.  ``ServerRequests``
holds the answers and registers them with the
``JsonRpcClient``, which runs request handlers on
its handler workers and notification handlers on its notification thread,
never on the reader thread or under a lock: the caller's handlers
(``on_apply_edit``, ``on_show_message_request``) may block or call back into
the client.

- ``workspace/configuration``: each item's ``section`` looked up in
  ``settings`` (a dotted section walks nested mappings, ``"python.analysis"``;
  a key spelled with the dots is found too), ``null`` where there is nothing;
- ``workspace/workspaceFolders``: the root, when there is one;
- ``window/workDoneProgress/create``: accepted (its reports are routed by
  ``progress``);
- ``client/registerCapability`` / ``client/unregisterCapability``: accepted
  and recorded (``ServerRequests.registrations``); the client declares no
  dynamic registration, so it acts on none;
- ``workspace/applyEdit``: refused (``applied: false``) unless ``on_apply_edit``
  is given, which then decides;
- ``window/showMessageRequest``: ``on_show_message_request(params)``, or the
  first action offered (``null`` when there is none); the message is logged;
- ``window/showDocument``: refused (``success: false``);
- notifications ``window/logMessage`` and ``window/showMessage``: to the
  ``jsonrpc_threads.lsp.server_log`` logger, at the level the message type
  maps to (``MESSAGE_LEVELS``), or to ``on_log(params)``.

Thread-safe.
"""

from __future__ import annotations

import copy
import threading
from typing import Any, Callable, Dict, List, Mapping, Optional

from ..client import JsonRpcClient
from ..runtime import logs as _logs
from ..runtime.logs import get_logger

#: Log and show messages sent by servers go here (unless ``on_log`` is given).
server_logger = get_logger("jsonrpc_threads.lsp.server_log")

#: ``MessageType`` (1 Error, 2 Warning, 3 Info, 4 Log, 5 Debug) -> logging level.
MESSAGE_LEVELS: Dict[int, int] = {
    1: _logs.ERROR,
    2: _logs.WARNING,
    3: _logs.INFO,
    4: _logs.DEBUG,
    5: _logs.DEBUG,
}

Handler = Callable[[Dict[str, Any]], Any]


def lookup_section(settings: Mapping[str, Any], section: Optional[str]) -> Any:
    """The value of a configuration ``section`` in ``settings`` (``None`` when absent).

    ``None`` (no section) is the whole of ``settings``; ``"a.b"`` is
    ``settings["a.b"]`` if that key exists, else ``settings["a"]["b"]``.
    """
    if section is None or section == "":
        return copy.deepcopy(dict(settings))
    if section in settings:
        return copy.deepcopy(settings[section])
    value: Any = settings
    for part in section.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    return copy.deepcopy(value)


class ServerRequests:
    """The client's answers to a language server's requests, and its log sink.  Thread-safe.

    Args:
        settings: the configuration served by ``workspace/configuration``.
        workspace_folders: the folders served by ``workspace/workspaceFolders``.
        on_apply_edit: ``handler(params) -> ApplyWorkspaceEditResult`` (a dict
            with ``applied``); without it every edit is refused.
        on_show_message_request: ``handler(params) -> MessageActionItem | None``.
        on_log: ``callback(params)`` for ``window/logMessage`` and
            ``window/showMessage``, instead of the logger.
    """

    def __init__(
        self,
        *,
        settings: Optional[Mapping[str, Any]] = None,
        workspace_folders: Optional[List[Dict[str, str]]] = None,
        on_apply_edit: Optional[Handler] = None,
        on_show_message_request: Optional[Handler] = None,
        on_log: Optional[Callable[[Dict[str, Any]], None]] = None,
    ) -> None:
        # _lock guards _settings and _registrations.
        self._lock = threading.Lock()
        self._settings: Dict[str, Any] = copy.deepcopy(dict(settings or {}))
        self._registrations: Dict[str, Dict[str, Any]] = {}
        self._folders = workspace_folders
        self._on_apply_edit = on_apply_edit
        self._on_show_message_request = on_show_message_request
        self._on_log = on_log

    @property
    def handles_apply_edit(self) -> bool:
        """True when an ``on_apply_edit`` handler was given."""
        return self._on_apply_edit is not None

    @property
    def settings(self) -> Dict[str, Any]:
        """A copy of the settings served now."""
        with self._lock:
            return copy.deepcopy(self._settings)

    def set_settings(self, settings: Mapping[str, Any]) -> None:
        """Serve ``settings`` from now on."""
        fresh = copy.deepcopy(dict(settings))
        with self._lock:
            self._settings = fresh

    @property
    def registrations(self) -> Dict[str, Dict[str, Any]]:
        """The server's current registrations (``client/registerCapability``), by id."""
        with self._lock:
            return copy.deepcopy(self._registrations)

    def register(self, client: JsonRpcClient, progress_create: Callable[[Any], None]) -> None:
        """Install the handlers on a ``JsonRpcClient``."""
        client.on_request("workspace/configuration", self.configuration)
        client.on_request("workspace/workspaceFolders", self.workspace_folders)
        client.on_request("window/workDoneProgress/create", progress_create)
        client.on_request("client/registerCapability", self.register_capability)
        client.on_request("client/unregisterCapability", self.unregister_capability)
        client.on_request("workspace/applyEdit", self.apply_edit)
        client.on_request("window/showMessageRequest", self.show_message_request)
        client.on_request("window/showDocument", self.show_document)
        client.on_notification("window/logMessage", self.log_message)
        client.on_notification("window/showMessage", self.log_message)

    # -- the handlers (on the client's handler workers) ---------------------------------------

    def configuration(self, params: Any) -> List[Any]:
        """``workspace/configuration``: one value per item, from the settings."""
        items = params.get("items") if isinstance(params, dict) else None
        if not isinstance(items, list):
            return []
        with self._lock:
            settings = self._settings
        answers = []
        for item in items:
            section = item.get("section") if isinstance(item, dict) else None
            answers.append(lookup_section(settings, section if isinstance(section, str) else None))
        return answers

    def workspace_folders(self, params: Any) -> Optional[List[Dict[str, str]]]:
        """``workspace/workspaceFolders``: the root folder (``null`` without a root)."""
        return copy.deepcopy(self._folders) if self._folders else None

    def register_capability(self, params: Any) -> None:
        """``client/registerCapability``: accepted and recorded."""
        for registration in _list_of(params, "registrations"):
            if isinstance(registration.get("id"), str):
                with self._lock:
                    self._registrations[registration["id"]] = copy.deepcopy(registration)

    def unregister_capability(self, params: Any) -> None:
        """``client/unregisterCapability`` (the protocol misspells the key ``unregisterations``)."""
        for registration in _list_of(params, "unregisterations") + _list_of(params, "unregistrations"):
            with self._lock:
                self._registrations.pop(str(registration.get("id")), None)

    def apply_edit(self, params: Any) -> Any:
        """``workspace/applyEdit``: the handler's answer, or a refusal."""
        if self._on_apply_edit is None:
            return {"applied": False, "failureReason": "this client applies no edits (no on_apply_edit handler)"}
        return self._on_apply_edit(params)

    def show_message_request(self, params: Any) -> Any:
        """``window/showMessageRequest``: the handler's choice, or the first action."""
        self.log_message(params)
        if self._on_show_message_request is not None:
            return self._on_show_message_request(params)
        actions = params.get("actions") if isinstance(params, dict) else None
        if isinstance(actions, list) and actions and isinstance(actions[0], dict):
            return actions[0]
        return None

    def show_document(self, params: Any) -> Dict[str, Any]:
        """``window/showDocument``: this client shows nothing."""
        return {"success": False}

    def log_message(self, params: Any) -> None:
        """``window/logMessage`` / ``window/showMessage``: to ``on_log``, else the server logger."""
        if not isinstance(params, dict):
            return
        if self._on_log is not None:
            self._on_log(params)
            return
        kind = params.get("type")
        level = MESSAGE_LEVELS.get(kind, _logs.INFO) if isinstance(kind, int) else _logs.INFO
        server_logger.log(level, "%s", params.get("message", ""))


def _list_of(params: Any, key: str) -> List[Dict[str, Any]]:
    value = params.get(key) if isinstance(params, dict) else None
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


__all__ = ["MESSAGE_LEVELS", "ServerRequests", "lookup_section", "server_logger"]
