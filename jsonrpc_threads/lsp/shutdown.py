"""The end of a language server connection: ``shutdown``, ``exit``, and a reclaim bounded in time.

Theory of operation.  ``LspClient.close`` says goodbye (``say_goodbye``)
only to a server that was initialized and is still there: ``shutdown``,
whose answer is waited for no longer than ``SHUTDOWN_TIMEOUT_S``, then
``exit``, whose send is bounded by ``EXIT_SEND_TIMEOUT_S``.  A child that
answered the one and was sent the other has nothing left to do: it gets
``EXIT_GRACE_S`` to exit by itself before its process tree is terminated
(``reclaim_after_exit``), not the full grace a transport gives a child whose
stdin it closes.  However the server behaves, the close ends within
``CLOSE_BOUND_S``.

Thread-safety: the functions may be called from any thread (``close`` calls
them once).
"""

from __future__ import annotations

from ..client import JsonRpcClient
from ..errors import JsonRpcError
from ..runtime.logs import get_logger
from ..transports.stdio import CLOSE_WAIT_S, StdioTransport

logger = get_logger(__name__)

#: How long ``LspClient.close`` waits for the answer to ``shutdown``.
SHUTDOWN_TIMEOUT_S = 2.0
#: How long ``LspClient.close`` may take to send ``exit``.
EXIT_SEND_TIMEOUT_S = 1.0
#: How long a server that answered ``shutdown`` and was sent ``exit`` gets to exit
#: (its stdin closed too) before its process tree is terminated: after ``shutdown``
#: there is nothing left for it to do, and some servers (jedi-language-server)
#: take seconds to exit by themselves.
EXIT_GRACE_S = 0.5
#: The longest ``LspClient.close`` takes: ``shutdown``, ``exit``, then the
#: transport's reclaim of a child that ignores everything (stdin closed,
#: terminate, kill, each with its grace).
CLOSE_BOUND_S = SHUTDOWN_TIMEOUT_S + EXIT_SEND_TIMEOUT_S + CLOSE_WAIT_S


def say_goodbye(rpc: JsonRpcClient) -> bool:
    """``shutdown``, then ``exit``; True when the server answered the one and was sent the other.  Never raises
    a ``JsonRpcError`` (what fails is logged at debug level)."""
    answered = False
    try:
        rpc.call("shutdown", None, timeout=SHUTDOWN_TIMEOUT_S)
        answered = True
    except JsonRpcError as exc:
        logger.debug("shutdown was not answered: %s", exc)
    try:
        rpc.notify("exit", None, timeout=EXIT_SEND_TIMEOUT_S)
    except JsonRpcError as exc:
        logger.debug("exit could not be sent: %s", exc)
        return False
    return answered


def reclaim_after_exit(rpc: JsonRpcClient) -> None:
    """A child told ``exit`` gets ``EXIT_GRACE_S`` to go, not a stdin close's full grace."""
    transport = rpc.transport
    if isinstance(transport, StdioTransport):
        transport.close(stdin_grace=EXIT_GRACE_S)


__all__ = [
    "CLOSE_BOUND_S",
    "EXIT_GRACE_S",
    "EXIT_SEND_TIMEOUT_S",
    "SHUTDOWN_TIMEOUT_S",
    "reclaim_after_exit",
    "say_goodbye",
]
