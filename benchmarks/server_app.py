"""Case 12's server of ours: an ``McpServer`` with one ``echo`` tool, as a WSGI app or over stdio.

``gunicorn -k gthread ... benchmarks.server_app:app`` and ``waitress-serve
benchmarks.server_app:app`` serve ``server.wsgi_app()`` (the defaults: JSON
answers unless a run sends something first, both eras on ``/mcp``);
``python benchmarks/server_app.py`` serves the same server over stdio
(``run_stdio``).  The official SDK's and FastMCP's servers of the case
(``benchmarks/server_peers.py``) offer the same tool.
"""

from __future__ import annotations

import os

from jsonrpc_threads.mcp import McpServer

server = McpServer("bench-echo")


@server.tool()
def echo(text: str) -> str:
    """Echo the text back."""
    return text


if __name__ == "__main__":
    server.run_stdio()
else:  # imported by the WSGI server: no app (and no pool) for the stdio runs
    app = server.wsgi_app(json_response=True if os.environ.get("BENCH_JSON_RESPONSE") == "1" else None)
