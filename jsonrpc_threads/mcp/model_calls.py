"""The registry's face for a model: the tools it sees, and its tool calls turned into its next tool messages.

Theory of operation.  ``ModelToolCalls`` is the part of
``ToolRegistry`` (which holds it and delegates to it) that lists every server's tools in
the formats of the LLM APIs (starting the servers not started yet), and
takes a model's tool call
(the OpenAI chat, OpenAI Responses and Anthropic formats,
``llm_formats``), finds the server and tool behind its name (the routing
table, ``tool_index``, starting the servers the name may belong to when
it is not known yet), calls it, and returns the tool message.  Every failure
becomes a message that says what went wrong: an agent loop never gets an
exception from a bad call.

Deadlines.  A call's deadline is made as it enters (``ToolRegistry.execute``;
for ``ToolRegistry.execute_all``, once for all its calls) from its
``timeout``, else the ``timeout`` of the server behind the name (of the
longest of the servers it may belong to, before the name is known), else the
registry's ``default_timeout``; the lookup, a wait for the server's start and
the call all spend what is left of it.

Thread-safety: every method may be called from any thread.
"""

from __future__ import annotations

import copy
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Dict, List, Mapping, Sequence, Tuple

from ..deadlines.timeouts import Deadline, Timeout, UseDefault, check_timeout
from ..errors import JsonRpcError
from .errors import UnknownTool
from .llm_formats import (
    RegistryTool,
    anthropic_tool,
    error_message,
    explain_failure,
    explain_lookup,
    openai_tool,
    parse_tool_call,
    result_text,
    tool_message,
)
from .registry_servers import RegistryServers
from .registry_settings import Settings
from .supervisor import ServerSupervisor
from .tool_index import ToolIndex

logger = logging.getLogger(__name__)


class ModelToolCalls:
    """The tools a model sees, and its calls routed and run: the part of ``ToolRegistry`` behind its model face.

    Args:
        servers: the registry's servers.
        index: its routing table.
        settings: its settings (``startup_timeout``, ``default_timeout``).
        max_concurrency: the most calls ``execute_all`` runs at once.
        is_closed: True once the registry closed (a failed call's message says so).
    """

    def __init__(
        self,
        servers: RegistryServers,
        index: ToolIndex,
        settings: Settings,
        max_concurrency: int,
        is_closed: Callable[[], bool],
    ) -> None:
        self._servers = servers
        self._index = index
        self._settings = settings
        self._max_concurrency = max_concurrency
        self._is_closed = is_closed

    def tools(self) -> List[RegistryTool]:
        """Every tool of every available server, the servers started and stale lists fetched first."""
        deadline = Deadline.after(self._settings.startup_timeout)
        self._servers.refresh(self._servers.all(), deadline)
        return self._index.entries()

    def openai_tools(self) -> List[Dict[str, Any]]:
        """The tools for OpenAI function calling."""
        return [openai_tool(tool) for tool in self.tools()]

    def anthropic_tools(self) -> List[Dict[str, Any]]:
        """The tools for the Anthropic Messages API."""
        return [anthropic_tool(tool) for tool in self.tools()]

    def resolve(self, name: str, timeout: Timeout) -> Tuple[str, str]:
        """The ``(server, tool)`` behind a namespaced name (raises as ``ToolRegistry.resolve``)."""
        server, tool = self._resolve(name, self._deadline(timeout, name, time.monotonic()))
        return server.name, tool

    def execute(self, tool_call: Any, timeout: Timeout) -> Dict[str, Any]:
        """Run one tool call from a model; its message for the next turn (never raises for a bad call)."""
        return self._execute(tool_call, timeout, time.monotonic())

    def execute_all(self, tool_calls: Sequence[Any], timeout: Timeout) -> List[Dict[str, Any]]:
        """Run tool calls concurrently (``max_concurrency`` at once); their messages in the order of the calls."""
        entered = time.monotonic()
        if not _is_default(timeout):
            check_timeout(timeout)  # a bad timeout is the caller's bug: raised here, not once per call
        calls = list(tool_calls)
        if len(calls) <= 1:
            return [self._execute(call, timeout, entered) for call in calls]
        workers = min(len(calls), self._max_concurrency)
        with ThreadPoolExecutor(workers, thread_name_prefix="jsonrpc-registry-call") as pool:
            futures = [pool.submit(self._execute, call, timeout, entered) for call in calls]
            return [future.result() for future in futures]

    def _execute(self, tool_call: Any, timeout: Timeout, entered: float) -> Dict[str, Any]:
        call = parse_tool_call(tool_call)
        if call.problem is not None:
            return error_message(call, f"{call.problem}.")
        assert call.arguments is not None
        deadline = self._deadline(timeout, call.name, entered)
        try:
            server, tool = self._resolve(call.name, deadline)
        except JsonRpcError as exc:
            return error_message(call, explain_lookup(call.name, exc))
        except Exception as exc:
            logger.exception("looking up tool %r failed", call.name)
            return error_message(call, f"looking up {call.name!r} failed ({type(exc).__name__}).")
        try:
            result = server.call_tool(tool, call.arguments, deadline)
        except JsonRpcError as exc:
            return error_message(call, explain_failure(server.name, tool, exc, registry_closed=self._is_closed()))
        except Exception as exc:
            logger.exception("tool %r on server %r failed", tool, server.name)
            text = f"the call to tool {tool!r} on server {server.name!r} failed ({type(exc).__name__}: {exc})."
            return error_message(call, text)
        if not isinstance(result, Mapping):
            text = f"server {server.name!r} answered tool {tool!r} with something that is not a result."
            return error_message(call, text)
        is_error = result.get("isError") is True
        return tool_message(call, text=result_text(result), is_error=is_error, result=result)

    def _deadline(self, timeout: Timeout, name: str, entered: float) -> Deadline:
        """The deadline of a call to the tool ``name`` that entered at ``entered`` with ``timeout``.

        Its default is the ``timeout`` of the server behind the name (of the
        longest of the servers it may belong to, when it is not known yet).
        """
        if _is_default(timeout):
            hit = self._index.lookup(name)
            servers = [hit[0]] if hit is not None else self._index.candidates(name)
            seconds = [server.call_timeout() for server in servers] or [self._settings.default_timeout]
            timeout = None if None in seconds else max(s for s in seconds if s is not None)
        seconds_left = check_timeout(timeout)
        return Deadline(seconds_left, None if seconds_left is None else entered + seconds_left)

    def _resolve(self, name: str, deadline: Deadline) -> Tuple[ServerSupervisor, str]:
        hit = self._index.lookup(name)
        if hit is not None:
            # A stale list (list_changed, or its ttlMs passed) is fetched again first: the name may have gone.
            self._servers.refresh([hit[0]], deadline)
            hit = self._index.lookup(name)
            if hit is not None:
                return hit
        candidates = self._index.candidates(name)
        # Start the servers it could belong to; fetch again the lists already known
        # (a tool may have appeared without a list_changed notification).
        usable = [server for server in candidates if server.config is not None]
        errors = self._servers.refresh(usable, deadline, refresh=True)
        hit = self._index.lookup(name)
        if hit is not None:
            return hit
        # Not "unknown" when a server it may belong to could not say: its start failed
        # (now or before), or the deadline passed before it was up or had listed its tools.
        failures = [error for error in (server.failure() for server in candidates) if error is not None]
        if failures:
            raise copy.copy(failures[0])
        if errors:
            raise errors[0]
        raise UnknownTool(name)


def _is_default(timeout: object) -> bool:
    return isinstance(timeout, UseDefault) or timeout is Ellipsis


__all__ = ["ModelToolCalls"]
