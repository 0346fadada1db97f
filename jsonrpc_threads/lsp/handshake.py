"""The handshake of a language server connection: one flight, each caller waiting with its own deadline.

Theory of operation.  The Language Server Protocol allows one ``initialize``
per connection, so the handshake (``initialize``, then ``initialized``, then
the settings in ``workspace/didChangeConfiguration``) runs once, whichever
call needs it first: ``LspClient.initialize()``, ``__enter__``, or any
request, notification or document call on a fresh client.  It is the deadlines
layer's ``SingleFlight`` with ``once=True``: the first caller
starts it on a thread of its own (``jsonrpc-lsp-handshake[<label>]``), never
on its own thread: the caller's deadline may pass while others still want
the handshake, and the handshake must not die with it.  Every caller, the
first included, then waits for the handshake no longer than its own
deadline (the ``Deadline`` its public call
made as it entered) and, if that passes first, gets
``RequestTimeout`` naming its whole timeout;
the handshake goes on, and a later call finds it done.

So ``initialize`` is sent without a deadline of its own and is never
withdrawn (it cannot be sent again): it ends with the server's answer, or
when the connection ends (``close()`` fails it with
``TransportClosed``).  ``initialized`` and the
settings are bounded by ``INITIALIZED_SEND_TIMEOUT_S``, the handshake's
own bound, not a caller's.  A handshake that failed (the server refused
``initialize``, or went away) stays failed: every later call raises a copy
of its error.

Thread-safety: every method may be called from any thread; no lock is held
while the handshake runs or while a caller waits.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Optional

from ..client import JsonRpcClient
from ..deadlines.flight import Budget, SingleFlight, as_call_timeout
from ..deadlines.timeouts import Deadline, Timeout
from ..errors import RequestTimeout
from ..transports.base import ExplainsTimeouts, describe

#: How long sending ``initialized`` and the settings may take after ``initialize`` was answered.
INITIALIZED_SEND_TIMEOUT_S = 5.0
#: How long ``Handshake.close`` waits for a handshake thread still running (the connection is closed by then).
HANDSHAKE_JOIN_S = 2.0


class Handshake:
    """The one handshake of a connection (a ``SingleFlight`` with ``once=True``).  Thread-safe.

    Args:
        rpc: the connection.
        params: makes the ``initialize`` params (called once, on the handshake's thread).
        on_answer: ``on_answer(result)`` with the server's ``initialize`` result
            (a dict), before ``initialized`` is sent: what the client reads from it.
        settings: the settings to send after ``initialized`` (``None``: none).
    """

    def __init__(
        self,
        rpc: JsonRpcClient,
        params: Callable[[], Dict[str, Any]],
        on_answer: Callable[[Dict[str, Any]], None],
        settings: Callable[[], Optional[Dict[str, Any]]],
    ) -> None:
        self._rpc = rpc
        self._params = params
        self._on_answer = on_answer
        self._settings = settings
        self._flight: SingleFlight[Dict[str, Any]] = SingleFlight(
            f"jsonrpc-lsp-handshake[{describe(rpc.transport)}]",
            once=True,
            what="the handshake",
            doing="initialize",
            closed_message="LspClient closed",
        )

    def join(self, deadline: Deadline) -> Dict[str, Any]:
        """The server's ``initialize`` result, once the handshake is done; the first call starts it.

        Raises:
            RequestTimeout: ``deadline`` passed first (the handshake goes on).
            TransportClosed: the client was closed before the handshake started, or the server went away.
            JsonRpcError: the server refused ``initialize`` (a copy, for each caller).
        """
        return self._flight.join(deadline, self._run, clue=self._clue)

    def ready(self, deadline: Deadline) -> bool:
        """Make sure the handshake is done before a call goes on; True when the call had to wait for it.

        Raises:
            As ``join``.
        """
        if self._flight.succeeded():
            return False
        self.join(deadline)
        return True

    def succeeded(self) -> bool:
        """True once the handshake is done and went well."""
        return self._flight.succeeded()

    def result(self) -> Dict[str, Any]:
        """The server's ``initialize`` result (``{}`` unless the handshake succeeded)."""
        return self._flight.result() or {}

    def close(self) -> None:
        """No handshake starts from now on; wait (bounded) for one still running.  Call after closing the connection."""
        self._flight.close(HANDSHAKE_JOIN_S)

    # -- internals ---------------------------------------------------------------------------

    def _run(self, budget: Budget) -> Dict[str, Any]:
        # The budget is not spent: initialize cannot be sent twice (see the module docstring).
        answer = self._rpc.call("initialize", self._params(), timeout=None)
        result: Dict[str, Any] = answer if isinstance(answer, dict) else {}
        self._on_answer(result)
        budget.doing = "initialized"
        self._rpc.notify("initialized", {}, timeout=INITIALIZED_SEND_TIMEOUT_S)
        settings = self._settings()
        if settings is not None:
            budget.doing = "workspace/didChangeConfiguration"
            self._rpc.notify(
                "workspace/didChangeConfiguration", {"settings": settings}, timeout=INITIALIZED_SEND_TIMEOUT_S
            )
        return result

    def _clue(self) -> str:
        transport = self._rpc.transport
        return transport.timeout_hint() if isinstance(transport, ExplainsTimeouts) else ""


def call_deadline(rpc: JsonRpcClient, timeout: Timeout) -> Deadline:
    """The deadline of a public call entering now with ``timeout`` (``DEFAULT_TIMEOUT``: the client's default).

    Raises:
        TypeError, ValueError: a bad ``timeout`` (as ``check_timeout``).
    """
    return Deadline.after(timeout, rpc.default_timeout)


def call_within(rpc: JsonRpcClient, method: str, params: Any, deadline: Deadline) -> Any:
    """``rpc.call`` with what is left of ``deadline``; a timeout names the whole call's.

    Raises:
        As ``JsonRpcClient.call``.
    """
    try:
        return rpc.call(method, params, timeout=deadline.remaining())
    except RequestTimeout as exc:
        raise as_call_timeout(exc, deadline) from None


__all__ = ["HANDSHAKE_JOIN_S", "INITIALIZED_SEND_TIMEOUT_S", "Handshake", "call_deadline", "call_within"]
