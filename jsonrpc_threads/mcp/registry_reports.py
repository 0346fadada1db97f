"""What a tool registry reports of its servers: their names, states, failures and counters (it starts nothing).

Theory of operation.  ``ServerReports`` is the part of
``ToolRegistry`` that reads its supervisors for a
health endpoint, a log line or the command line: each call asks every
``ServerSupervisor`` for what it knows
(under that supervisor's own lock, briefly), never blocks on a server and
never starts one.

Thread-safety: every method may be called from any thread.
"""

from __future__ import annotations

from typing import Any, Dict, List

from ..errors import JsonRpcError
from ..observe import STAT_KEYS, add_stats
from .errors import UnknownServer
from .supervisor import ServerSupervisor


class ServerReports:
    """Names, states, failures and counters of servers: these calls of ``ToolRegistry``."""

    _servers: Dict[str, ServerSupervisor]

    def _check_fork(self) -> None:
        """In a process forked since the registry was made, reset it first (the registry's own)."""

    @property
    def servers(self) -> List[str]:
        """Every configured server's name (usable or not), in configuration order."""
        return list(self._servers)

    @property
    def errors(self) -> Dict[str, str]:
        """``{server: why it is unavailable}`` (one line) for bad entries and failed starts."""
        return {name: str(error) for name, error in self.failures.items()}

    @property
    def failures(self) -> Dict[str, JsonRpcError]:
        """``{server: exception}`` for bad entries (``ConfigError``) and failed starts
        (``ServerUnavailable``), in configuration order."""
        failures: Dict[str, JsonRpcError] = {}
        for name, server in self._servers.items():
            error = server.failure()
            if error is not None:
                failures[name] = error
        return failures

    def started(self, server: str) -> bool:
        """True when ``server`` has a running session (it was used, or started eagerly).

        Raises:
            UnknownServer: the name is not in the configuration.
        """
        self._check_fork()
        return self._server(server).started()

    def status(self) -> Dict[str, Dict[str, Any]]:
        """Each server's state, for a health endpoint (starts nothing, never blocks on a server).

        Returns:
            ``{server: {"state", "pid", "restarts", "last_error"}}`` in
            configuration order.  ``state`` is ``"idle"`` (not started, or
            closed after ``idle_timeout``), ``"starting"``, ``"running"``,
            ``"restarting"`` (it stopped; back after a backoff) or ``"failed"``
            (a bad entry, a failed start, or too many restarts: see
            ``retry_failed_after``); ``pid`` is the server process's (stdio,
            while it runs or starts), else ``None``; ``restarts`` counts the
            restarts since the registry was made (or forked); ``last_error``
            is one line on the last failure or stop (exit code and the last
            line of stderr included), else ``None``.
        """
        self._check_fork()
        return {name: server.status() for name, server in self._servers.items()}

    def stats(self) -> Dict[str, Dict[str, int]]:
        """Each server's counters, and their sum under ``"*"`` (cheap; starts nothing).

        Returns:
            ``{server: {"calls", "errors", "timeouts", "cancels", "pending",
            "restarts"}, ..., "*": {...}}``: the requests sent to the server
            over all its sessions (``initialize``, ``tools/list`` and health
            pings included) as ``McpClient.stats()`` counts them (the
            ``server/discover`` probe that only told the era is no error), and
            its restarts.
        """
        self._check_fork()
        result: Dict[str, Dict[str, int]] = {}
        total: Dict[str, int] = dict.fromkeys((*STAT_KEYS, "restarts"), 0)
        for name, server in self._servers.items():
            result[name] = server.stats()
            add_stats(total, result[name])
        result["*"] = total
        return result

    def _server(self, name: str) -> ServerSupervisor:
        server = self._servers.get(name)
        if server is None:
            raise UnknownServer(name, list(self._servers))
        return server


__all__ = ["ServerReports"]
