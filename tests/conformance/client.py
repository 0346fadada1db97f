"""The MCP conformance client: McpClient over HttpTransport, driven by the official suite.

The suite (npm ``@modelcontextprotocol/conformance``) plays the server and runs
this file as ``<command> <server-url>``, with ``MCP_CONFORMANCE_SCENARIO``
naming the scenario.  ``make conformance`` runs::

    conformance client --command ".venv/bin/python tests/conformance/client.py" --scenario NAME

What each scenario expects of a client:

- ``initialize``: the handshake (offering 2025-11-25, with clientInfo), then a
  normal session (a ``tools/list``), then a clean close;
- ``tools_call``: find the ``add_numbers`` tool and call it with two numbers;
- ``elicitation-sep1034-client-defaults``: declare elicitation, call
  ``test_client_elicitation_defaults`` and accept the server's form without
  filling anything in: the client must apply the schema's defaults (SEP-1034);
- ``sse-retry``: call ``test_reconnection``, whose SSE stream the server closes
  before the answer; the transport must resume it with GET + ``Last-Event-ID``
  after exactly the ``retry`` delay the server asked for (SEP-1699).

The scenario servers advertise ``http://localhost:PORT``; the URL is used with
``127.0.0.1`` instead, where ``make conformance`` makes them listen (no IPv6
attempt first, no name lookup).  Exit status 0 when the scenario ran to the
end; on failure the traceback goes to stderr, which the suite keeps in its
results.  ``MCP_CONFORMANCE_DEBUG=1`` logs the HTTP exchanges on stderr.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import Any, Callable, Dict, List
from urllib.parse import urlsplit, urlunsplit

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT) not in sys.path:  # run from a checkout without installing
    sys.path.insert(0, str(REPO_ROOT))

from jsonrpc_threads.mcp import McpClient  # noqa: E402
from jsonrpc_threads.transports.http import HttpTransport  # noqa: E402

#: Seconds any one request may take (the suite itself gives the client 30 s).
TIMEOUT_S = 20.0
CLIENT_INFO = {"name": "jsonrpc-threads-conformance-client", "version": "1.0.0"}


def loopback(url: str) -> str:
    """``url`` with host ``localhost`` replaced by ``127.0.0.1``."""
    parts = urlsplit(url)
    if parts.hostname != "localhost":
        return url
    netloc = "127.0.0.1" + (f":{parts.port}" if parts.port is not None else "")
    return urlunsplit(parts._replace(netloc=netloc))


def connect(url: str, **options: Any) -> McpClient:
    return McpClient(HttpTransport(url), client_info=CLIENT_INFO, default_timeout=TIMEOUT_S, **options)


def tool_names(client: McpClient) -> List[str]:
    return [tool["name"] for tool in client.list_tools()]


def require_success(result: Dict[str, Any], what: str) -> None:
    if result.get("isError"):
        raise SystemExit(f"{what} returned an error result: {result}")


def initialize(url: str) -> None:
    with connect(url) as client:
        print(f"connected to {client.server_info} with protocol {client.protocol_version}")
        print(f"tools: {tool_names(client)}")


def tools_call(url: str) -> None:
    with connect(url) as client:
        if "add_numbers" not in tool_names(client):
            raise SystemExit("the server offers no add_numbers tool")
        result = client.call_tool("add_numbers", {"a": 5, "b": 3})
        require_success(result, "add_numbers")
        print(f"add_numbers: {result['content']}")


def elicitation_defaults(url: str) -> None:
    def accept_as_is(params: Dict[str, Any]) -> Dict[str, Any]:
        # A user who accepts the form untouched: McpClient fills in the schema's defaults.
        return {"action": "accept", "content": {}}

    with connect(url, on_elicitation=accept_as_is) as client:
        if "test_client_elicitation_defaults" not in tool_names(client):
            raise SystemExit("the server offers no test_client_elicitation_defaults tool")
        result = client.call_tool("test_client_elicitation_defaults")
        require_success(result, "test_client_elicitation_defaults")
        print(f"test_client_elicitation_defaults: {result['content']}")


def sse_retry(url: str) -> None:
    with connect(url) as client:
        if "test_reconnection" not in tool_names(client):
            raise SystemExit("the server offers no test_reconnection tool")
        result = client.call_tool("test_reconnection")
        require_success(result, "test_reconnection")
        print(f"test_reconnection: {result['content']}")


SCENARIOS: Dict[str, Callable[[str], None]] = {
    "initialize": initialize,
    "tools_call": tools_call,
    "elicitation-sep1034-client-defaults": elicitation_defaults,
    "sse-retry": sse_retry,
}


def main(argv: List[str]) -> int:
    debug = os.environ.get("MCP_CONFORMANCE_DEBUG") == "1"
    logging.basicConfig(
        level=logging.DEBUG if debug else logging.WARNING,
        stream=sys.stderr,
        format="%(relativeCreated)6.0f %(threadName)s %(name)s: %(message)s",
    )
    if len(argv) < 2:
        print(f"usage: MCP_CONFORMANCE_SCENARIO=NAME {argv[0]} SERVER_URL", file=sys.stderr)
        return 2
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    run = SCENARIOS.get(scenario)
    if run is None:
        print(f"unknown scenario {scenario!r} (known: {', '.join(SCENARIOS)})", file=sys.stderr)
        return 2
    run(loopback(argv[-1]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
