"""The servers of one tool registry: a supervisor each, what they report, and the work on many of them at once.

Theory of operation.  ``RegistryServers`` is the part of ``ToolRegistry``
that owns its ``ServerSupervisor`` objects, by name, in configuration order.
It answers for all of them: their names, states, failures and counters (for
a health endpoint, a log line or the command line: each supervisor is asked
under its own lock, briefly; nothing blocks on a server, nothing starts
one), and it runs the registry's operations on many servers at once:
``RegistryServers.refresh`` starts the servers that need it (or fetches
their tools) concurrently within one deadline, ``RegistryServers.stop``
stops them all and closes their sessions concurrently.

Thread-safety: every method may be called from any thread.
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Dict, Iterable, List, Optional, Sequence

from ..deadlines.timeouts import Deadline
from ..errors import JsonRpcError
from ..observe import add_stats
from .errors import UnknownServer
from .supervisor import SERVER_STAT_KEYS, ServerSupervisor

logger = logging.getLogger(__name__)

#: The most sessions closed at once by ``RegistryServers.stop``.
MAX_PARALLEL_CLOSES = 8


class RegistryServers:
    """The supervisors of one registry, by name.  Thread-safe.

    Args:
        supervisors: one per configured server, in configuration order.
        max_concurrency: the most servers started (or listed) at once.
    """

    def __init__(self, supervisors: Iterable[ServerSupervisor], max_concurrency: int) -> None:
        self._servers: Dict[str, ServerSupervisor] = {server.name: server for server in supervisors}
        self._max_concurrency = max_concurrency

    # -- which ones ---------------------------------------------------------------------------

    def names(self) -> List[str]:
        """Every configured server's name (usable or not), in configuration order."""
        return list(self._servers)

    def all(self) -> List[ServerSupervisor]:
        """Every supervisor, in configuration order."""
        return list(self._servers.values())

    def get(self, name: str) -> ServerSupervisor:
        """The supervisor of ``name``.

        Raises:
            UnknownServer: the name is not in the configuration.
        """
        server = self._servers.get(name)
        if server is None:
            raise UnknownServer(name, list(self._servers))
        return server

    # -- what they report ---------------------------------------------------------------------

    def failures(self) -> Dict[str, JsonRpcError]:
        """``{server: why it is unavailable}`` for bad entries and failed starts, in configuration order."""
        failures: Dict[str, JsonRpcError] = {}
        for name, server in self._servers.items():
            error = server.failure()
            if error is not None:
                failures[name] = error
        return failures

    def status(self) -> Dict[str, Dict[str, Any]]:
        """``{server: {"state", "pid", "restarts", "last_error"}}`` in configuration order."""
        return {name: server.status() for name, server in self._servers.items()}

    def stats(self) -> Dict[str, Dict[str, int]]:
        """``{server: its counters (``ServerSupervisor.stats``), ..., "*": their sums}``."""
        result: Dict[str, Dict[str, int]] = {}
        total: Dict[str, int] = dict.fromkeys(SERVER_STAT_KEYS, 0)
        for name, server in self._servers.items():
            result[name] = server.stats()
            add_stats(total, result[name])
        result["*"] = total
        return result

    # -- many at once -------------------------------------------------------------------------

    def refresh(
        self, servers: Sequence[ServerSupervisor], deadline: Deadline, *, refresh: bool = False
    ) -> List[JsonRpcError]:
        """Start (or fetch the tools of) those of ``servers`` that need it, concurrently, within ``deadline``.

        Args:
            servers: which (in the order their errors are returned).
            deadline: the calling call's.
            refresh: fetch every list again, fresh or not (a name not found).

        Returns:
            What the starts and fetches failed with, in the order of
            ``servers`` (each also logged): a failed start (which the
            supervisor remembers too), or a deadline that passed before a
            server was up or its list was in (which it does not: the start goes on).
        """
        todo = [server for server in servers if refresh or server.needs_work()]
        if len(todo) == 1:
            outcomes = [_refresh_quietly(todo[0], refresh, deadline)]
        elif todo:
            workers = min(len(todo), self._max_concurrency)
            with ThreadPoolExecutor(workers, thread_name_prefix="jsonrpc-registry-start") as pool:
                outcomes = list(pool.map(lambda server: _refresh_quietly(server, refresh, deadline), todo))
        else:
            outcomes = []
        return [error for error in outcomes if error is not None]

    def stop(self) -> None:
        """Stop every supervisor, then close their sessions (concurrently, each bounded by ``McpClient.close``).

        Plain threads, not an executor: this runs from ``atexit`` too (a web
        app's registry is closed as its worker exits), when
        ``concurrent.futures`` refuses new work.  Where no thread can be
        started, the sessions are closed one after the other.
        """
        clients = [client for server in self._servers.values() for client in server.stop()]
        for start in range(0, len(clients), MAX_PARALLEL_CLOSES):
            group = clients[start : start + MAX_PARALLEL_CLOSES]
            if len(group) == 1:
                group[0].close()
                continue
            threads: List[threading.Thread] = []
            for client in group:
                thread = threading.Thread(target=client.close, name="jsonrpc-registry-close", daemon=True)
                try:
                    thread.start()
                except RuntimeError:  # the interpreter is finalizing: no new threads
                    client.close()
                    continue
                threads.append(thread)
            for thread in threads:
                thread.join()  # each close() is bounded (the transport's escalation)

    def after_fork(self) -> None:
        """In a forked process: every supervisor lets go of the parent's session."""
        for server in self._servers.values():
            server.after_fork()


def _refresh_quietly(server: ServerSupervisor, refresh: bool, deadline: Deadline) -> Optional[JsonRpcError]:
    try:
        server.refresh_tools(deadline, refresh=refresh)
    except JsonRpcError as exc:
        logger.debug("server %r: %s", server.name, exc)
        return exc
    return None


__all__ = ["MAX_PARALLEL_CLOSES", "RegistryServers"]
