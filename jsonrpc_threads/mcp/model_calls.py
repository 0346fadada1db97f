"""The registry's face for a model: the tools it sees, and its tool calls turned into its next tool messages.

Theory of operation.  ``ModelToolCalls`` is the part of
``ToolRegistry`` that lists every server's tools in
the formats of the LLM APIs (starting the servers not started yet), and
takes a model's tool call
(the OpenAI chat, OpenAI Responses and Anthropic formats,
``llm_formats``), finds the server and tool behind its name (the routing
table, ``tool_index``, starting the servers the name may belong to when
it is not known yet), calls it, and returns the tool message.  Every failure
becomes a message that says what went wrong: an agent loop never gets an
exception from a bad call.

Deadlines.  A call's deadline is made as it enters (``ModelToolCalls.execute``;
for ``ModelToolCalls.execute_all``, once for all its calls) from its
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
from typing import Any, Dict, List, Mapping, Sequence, Tuple

from .._deadlines import DEFAULT_TIMEOUT, Deadline, Timeout, UseDefault, check_timeout
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
from .supervision import Settings, refresh_all
from .supervisor import ServerSupervisor
from .tool_index import ToolIndex

logger = logging.getLogger(__name__)


class ModelToolCalls:
    """The tools a model sees, and its calls routed and run: these calls of ``ToolRegistry``.

    Attributes:
        max_concurrency: the most calls ``execute_all`` runs at once.
    """

    max_concurrency: int
    _servers: Dict[str, ServerSupervisor]
    _index: ToolIndex
    _settings: Settings
    _closed: bool

    def _check_fork(self) -> None:
        """In a process forked since the registry was made, reset it first (the registry's own)."""

    def tools(self) -> List[RegistryTool]:
        """Every tool of every available server, in configuration order.

        Starts the servers not started yet (concurrently) and fetches again
        the lists that are stale (the server said they changed, or the
        ``ttlMs`` it gave them passed), within ``startup_timeout`` in all.  A server
        that cannot start contributes no tools (see ``errors``); one that
        restarts or idles keeps offering the tools it had.
        """
        self._check_fork()
        deadline = Deadline.after(self._settings.startup_timeout)
        refresh_all(list(self._servers.values()), deadline, max_concurrency=self.max_concurrency)
        return self._index.entries()

    def openai_tools(self) -> List[Dict[str, Any]]:
        """The tools for OpenAI function calling.

        Returns:
            ``[{"type": "function", "function": {"name", "description", "parameters"}}]``.
        """
        return [openai_tool(tool) for tool in self.tools()]

    def anthropic_tools(self) -> List[Dict[str, Any]]:
        """The tools for the Anthropic Messages API: ``[{"name", "description", "input_schema"}]``."""
        return [anthropic_tool(tool) for tool in self.tools()]

    def resolve(self, name: str, *, timeout: Timeout = DEFAULT_TIMEOUT) -> Tuple[str, str]:
        """The ``(server, tool)`` behind a namespaced name.

        Starts only the servers the name could belong to (by its prefix),
        and fetches their tool lists again when stale, within ``timeout``
        (by default the servers' call timeout).

        Raises:
            UnknownTool: no server offers it.
            ServerUnavailable, ConfigError: the server it belongs to cannot start,
                or (``timed_out``) was not up by the deadline.
            RequestTimeout: the deadline passed before the server had listed its tools.
        """
        self._check_fork()
        server, tool = self._resolve(name, self._deadline(timeout, name, time.monotonic()))
        return server.name, tool

    def execute(self, tool_call: Any, *, timeout: Timeout = DEFAULT_TIMEOUT) -> Dict[str, Any]:
        """Run one tool call from a model and return the message for the next turn.

        Accepted calls (dicts, or SDK objects with ``model_dump()``):

        - OpenAI chat: ``{"id", "type": "function", "function": {"name", "arguments": "<JSON>"}}``
          -> ``{"role": "tool", "tool_call_id", "content": "<text>"}``;
        - Anthropic: ``{"type": "tool_use", "id", "name", "input": {...}}``
          -> ``{"type": "tool_result", "tool_use_id", "content": [blocks], "is_error"?: True}``;
        - OpenAI Responses: ``{"type": "function_call", "call_id", "name", "arguments"}``
          -> ``{"type": "function_call_output", "call_id", "output": "<text>"}``.

        Never raises for a bad call: malformed arguments, an unknown tool, an
        unavailable server, a timeout, a crash, a protocol error or an
        ``isError`` result each give a message whose text starts with
        ``Error:`` and says what went wrong (Anthropic: also ``is_error``).

        Args:
            tool_call: the call.
            timeout: as for ``call_tool``; it bounds the lookup of the
                tool's name too (which may start its server).

        Raises:
            TypeError, ValueError: for a bad ``timeout`` (a bug of the caller, not of the call).
        """
        self._check_fork()
        return self._execute(tool_call, timeout, time.monotonic())

    def execute_all(self, tool_calls: Sequence[Any], *, timeout: Timeout = DEFAULT_TIMEOUT) -> List[Dict[str, Any]]:
        """Run tool calls concurrently; return their messages in the order of the calls.

        Up to ``max_concurrency`` calls run at once, on threads that end when
        this returns.  Calls to the same server are pipelined on its session.
        Every call's deadline counts from this call (a call that waited for a
        free thread has less left).  Never raises for a bad call (see ``execute``).
        """
        self._check_fork()
        entered = time.monotonic()
        if not _is_default(timeout):
            check_timeout(timeout)  # a bad timeout is the caller's bug: raised here, not once per call
        calls = list(tool_calls)
        if len(calls) <= 1:
            return [self._execute(call, timeout, entered) for call in calls]
        workers = min(len(calls), self.max_concurrency)
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
            return error_message(call, explain_failure(server.name, tool, exc, registry_closed=self._closed))
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
            refresh_all([hit[0]], deadline, max_concurrency=self.max_concurrency)
            hit = self._index.lookup(name)
            if hit is not None:
                return hit
        candidates = self._index.candidates(name)
        # Start the servers it could belong to; fetch again the lists already known
        # (a tool may have appeared without a list_changed notification).
        usable = [server for server in candidates if server.config is not None]
        errors = refresh_all(usable, deadline, refresh=True, max_concurrency=self.max_concurrency)
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
