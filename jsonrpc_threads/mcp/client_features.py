"""What an MCP client offers its server, and what it hears from it.

Theory of operation.  A server may send its client requests (``ping``,
``roots/list``, ``sampling/createMessage``, ``elicitation/create``) and
notifications (log messages, list-changed, resource updates, cancellations).
``ClientFeatures`` holds the caller's handlers for them, says which
capabilities they amount to in ``initialize`` (a capability is declared only
when its handler is given), and registers them with the session's
``JsonRpcClient``, which runs them on its handler
workers, never on a reader thread or under a lock: a handler may block or call
back into the client.  Progress notifications belong to the session's own
requests and are routed there (``jsonrpc_threads.mcp.session``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Callable, Dict, Mapping, Optional, Sequence, Union

from ..client import JsonRpcClient

logger = logging.getLogger(__name__)
#: Log messages sent by servers (``notifications/message``) go here by default.
server_logger = logging.getLogger("jsonrpc_threads.mcp.server_log")

#: MCP log levels (RFC 5424 names) -> logging levels.
LOG_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL,
    "emergency": logging.CRITICAL,
}

#: The level a client with ``on_log`` asks for in the stateless era until
#: ``set_logging_level()`` says otherwise: every line the server logs, as a
#: server of the session era sends them before any ``logging/setLevel``.
DEFAULT_LOG_LEVEL = "debug"

#: The ``_meta`` key that tags the notifications of one ``subscriptions/listen`` (stateless era).
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"

Handler = Callable[[Dict[str, Any]], Dict[str, Any]]
Roots = Union[Sequence[Union[str, Mapping[str, Any]]], Callable[[], Sequence[Union[str, Mapping[str, Any]]]]]


@dataclass(frozen=True)
class ClientFeatures:
    """The caller's handlers for what a server may send (see ``McpClient``).

    Immutable; its handlers run on the client's handler workers, possibly
    several at once.
    """

    roots: Optional[Roots] = None
    on_sampling: Optional[Handler] = None
    on_elicitation: Optional[Handler] = None
    on_log: Optional[Callable[[Dict[str, Any]], None]] = None
    on_tools_changed: Optional[Callable[[], None]] = None
    on_resources_changed: Optional[Callable[[], None]] = None
    on_prompts_changed: Optional[Callable[[], None]] = None
    on_resource_updated: Optional[Callable[[str], None]] = None
    #: Stateless era: ``is_current(subscription_id)``; a change notification
    #: tagged with a subscription that is not current (one the client has
    #: replaced or cancelled) is dropped.
    is_current_subscription: Optional[Callable[[Any], bool]] = None

    def capabilities(self) -> Dict[str, Any]:
        """The ``capabilities`` to declare in ``initialize``: one per handler given."""
        capabilities: Dict[str, Any] = {}
        if self.roots is not None:
            capabilities["roots"] = {"listChanged": True}
        if self.on_sampling is not None:
            capabilities["sampling"] = {}
        if self.on_elicitation is not None:
            capabilities["elicitation"] = {"form": {}}
        return capabilities

    def register(self, rpc: JsonRpcClient) -> None:
        """Register a handler with ``rpc`` for every request and notification these features answer."""
        rpc.on_request("ping", lambda params: {})
        if self.roots is not None:
            rpc.on_request("roots/list", self.answer_roots)
        if self.on_sampling is not None:
            rpc.on_request("sampling/createMessage", self.on_sampling)
        if self.on_elicitation is not None:
            rpc.on_request("elicitation/create", self.answer_elicitation)
        rpc.on_notification("notifications/message", self.log_message)
        rpc.on_notification("notifications/cancelled", _server_cancelled)
        for method, callback in (
            ("notifications/tools/list_changed", self.on_tools_changed),
            ("notifications/resources/list_changed", self.on_resources_changed),
            ("notifications/prompts/list_changed", self.on_prompts_changed),
        ):
            if callback is not None:
                rpc.on_notification(method, self._current_only(_ignore_params(callback)))
        if self.on_resource_updated is not None:
            updated = self.on_resource_updated
            rpc.on_notification(
                "notifications/resources/updated",
                self._current_only(lambda params: updated(str((params or {}).get("uri")))),
            )

    def _current_only(self, handler: Callable[[Any], None]) -> Callable[[Any], None]:
        """``handler``, skipping notifications of a subscription that is no longer current."""
        is_current = self.is_current_subscription
        if is_current is None:
            return handler

        def gated(params: Any) -> None:
            meta = params.get("_meta") if isinstance(params, dict) else None
            if isinstance(meta, dict) and SUBSCRIPTION_ID in meta and not is_current(meta[SUBSCRIPTION_ID]):
                logger.debug("a notification of an ended subscription dropped: %r", meta[SUBSCRIPTION_ID])
                return
            handler(params)

        return gated

    def answer_roots(self, params: Any) -> Dict[str, Any]:
        """``roots/list``: the roots (called again on each request when ``roots`` is a callable)."""
        roots = self.roots() if callable(self.roots) else self.roots
        return {"roots": [{"uri": root} if isinstance(root, str) else dict(root) for root in roots or ()]}

    def answer_elicitation(self, params: Any) -> Dict[str, Any]:
        """``elicitation/create``: the handler's answer, with the schema's defaults for fields it left out."""
        assert self.on_elicitation is not None
        result = dict(self.on_elicitation(params))
        if result.get("action") == "accept" and isinstance(params, dict):
            schema = params.get("requestedSchema") or {}
            properties = schema.get("properties") if isinstance(schema, dict) else None
            if isinstance(properties, dict):
                content = dict(result.get("content") or {})
                for field, spec in properties.items():
                    if field not in content and isinstance(spec, dict) and "default" in spec:
                        content[field] = spec["default"]
                result["content"] = content
        return result

    def log_message(self, params: Any) -> None:
        """``notifications/message``: to ``on_log``, else to the ``jsonrpc_threads.mcp.server_log`` logger."""
        if self.on_log is not None:
            self.on_log(params)
            return
        if not isinstance(params, dict):
            return
        level = LOG_LEVELS.get(str(params.get("level")), logging.INFO)
        source = params.get("logger")
        server_logger.log(level, "%s%s", f"[{source}] " if source else "", params.get("data"))


def _server_cancelled(params: Any) -> None:
    logger.debug("the server cancelled its request: %r", params)


def _ignore_params(callback: Callable[[], None]) -> Callable[[Any], None]:
    return lambda params: callback()


__all__ = ["DEFAULT_LOG_LEVEL", "LOG_LEVELS", "ClientFeatures", "Handler", "Roots", "server_logger"]
