"""The Agent Client Protocol: a synchronous, thread-safe ACP client for coding agents.

An editor (the client) drives a coding agent (a child process) over stdio with
ACP, version 1 (agentclientprotocol.com): sessions, prompt turns that stream
``session/update`` notifications, and the agent's requests back to the client
(permission, files, terminals).  ``AcpClient`` is that client, built on
the package's public faces only: ``JsonRpcClient`` over a
``StdioTransport``, and the exception tree.

    from jsonrpc_threads.acp import AcpClient

    with AcpClient("my-agent --acp") as agent:
        session = agent.new_session()
        result = agent.prompt(session, "Explain this repository", on_update=print)
        print(result["stopReason"])
"""

from __future__ import annotations

from .client import CANCEL_SEND_TIMEOUT_S, AcpClient
from .connection import HANDLER_WORKERS
from .files import MAX_READ_CHARS
from .terminals import DEFAULT_OUTPUT_BYTE_LIMIT, KILL_WAIT_S, MAX_OUTPUT_BYTE_LIMIT, MAX_TERMINALS
from .wire import PROTOCOL_VERSION

__all__ = [
    "CANCEL_SEND_TIMEOUT_S",
    "DEFAULT_OUTPUT_BYTE_LIMIT",
    "HANDLER_WORKERS",
    "KILL_WAIT_S",
    "MAX_OUTPUT_BYTE_LIMIT",
    "MAX_READ_CHARS",
    "MAX_TERMINALS",
    "PROTOCOL_VERSION",
    "AcpClient",
]
