"""The app `make loadtest` serves: the example web app, its registry started in gunicorn's master.

With ``--preload`` gunicorn imports this module once, in the master, before
it forks its workers: the registry (and its MCP servers) then exist before
the fork, as in a real ``--preload`` deployment, and each worker lets go of
the inherited sessions and starts servers of its own on first use.  The
servers are named in the ``mcpServers`` file of ``JSONRPC_THREADS_MCP_CONFIG``.
"""

from __future__ import annotations

from jsonrpc_threads.examples.webapp import app, registry

registry().start()  # in the master, before the fork: the workers inherit a running registry

__all__ = ["app"]
