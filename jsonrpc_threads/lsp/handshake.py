"""The handshake of a language server connection: one flight, each caller waiting with its own deadline.

Theory of operation.  The Language Server Protocol allows one ``initialize``
per connection, so the handshake (``initialize``, then ``initialized``, then
the settings in ``workspace/didChangeConfiguration``) runs once, whichever
call needs it first: ``LspClient.initialize()``, ``__enter__``, or any
request, notification or document call on a fresh client.  The first caller
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

import copy
import threading
from concurrent.futures import Future
from concurrent.futures import wait as futures_wait
from typing import Any, Callable, Dict, Optional

from .._deadlines import Deadline, Timeout, wait_slice
from ..client import JsonRpcClient
from ..errors import RequestTimeout, TransportClosed
from ..transports.base import ExplainsTimeouts, describe

#: How long sending ``initialized`` and the settings may take after ``initialize`` was answered.
INITIALIZED_SEND_TIMEOUT_S = 5.0
#: How long ``Handshake.close`` waits for a handshake thread still running (the connection is closed by then).
HANDSHAKE_JOIN_S = 2.0


class Handshake:
    """The one handshake of a connection.  Thread-safe.

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
        # _lock guards _future, _thread and _closed.
        self._lock = threading.Lock()
        self._future: Optional[Future[Dict[str, Any]]] = None
        self._thread: Optional[threading.Thread] = None
        self._closed = False
        self.doing = "initialize"  # what the handshake waits for now, for the message of a caller that gives up

    def join(self, deadline: Deadline) -> Dict[str, Any]:
        """The server's ``initialize`` result, once the handshake is done; the first call starts it.

        Raises:
            RequestTimeout: ``deadline`` passed first (the handshake goes on).
            TransportClosed: the client was closed before the handshake started, or the server went away.
            JsonRpcError: the server refused ``initialize`` (a copy, for each caller).
        """
        future = self._start()
        if not future.done():
            done, _ = futures_wait((future,), timeout=wait_slice(deadline.at))
            while not done and not deadline.expired:
                done, _ = futures_wait((future,), timeout=wait_slice(deadline.at))
            if not done:
                raise RequestTimeout(self.doing, None, deadline.timeout, self._hint())
        error = future.exception()
        if error is not None:  # one error for many callers: each raises a copy (a fresh traceback)
            raise copy.copy(error) from None
        return future.result()

    def ready(self, deadline: Deadline) -> bool:
        """Make sure the handshake is done before a call goes on; True when the call had to wait for it.

        Raises:
            As ``join``.
        """
        if self.succeeded():
            return False
        self.join(deadline)
        return True

    def succeeded(self) -> bool:
        """True once the handshake is done and went well."""
        future = self._future
        return future is not None and future.done() and future.exception() is None

    def result(self) -> Dict[str, Any]:
        """The server's ``initialize`` result (``{}`` unless the handshake succeeded)."""
        future = self._future
        return future.result() if future is not None and self.succeeded() else {}

    def close(self) -> None:
        """No handshake starts from now on; wait (bounded) for one still running.  Call after closing the connection."""
        with self._lock:
            self._closed = True
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(HANDSHAKE_JOIN_S)

    # -- internals ---------------------------------------------------------------------------

    def _start(self) -> Future[Dict[str, Any]]:
        with self._lock:
            if self._future is not None:
                return self._future
            future: Future[Dict[str, Any]] = Future()
            self._future = future
            if self._closed:
                future.set_exception(TransportClosed("LspClient closed"))
                return future
            label = describe(self._rpc.transport)
            thread = threading.Thread(target=self._run, args=(future,), name=f"jsonrpc-lsp-handshake[{label}]")
            thread.daemon = True
            self._thread = thread
            thread.start()
        return future

    def _run(self, future: Future[Dict[str, Any]]) -> None:
        try:
            answer = self._rpc.call("initialize", self._params(), timeout=None)  # see the module docstring
            result: Dict[str, Any] = answer if isinstance(answer, dict) else {}
            self._on_answer(result)
            self.doing = "initialized"
            self._rpc.notify("initialized", {}, timeout=INITIALIZED_SEND_TIMEOUT_S)
            settings = self._settings()
            if settings is not None:
                self.doing = "workspace/didChangeConfiguration"
                self._rpc.notify(
                    "workspace/didChangeConfiguration", {"settings": settings}, timeout=INITIALIZED_SEND_TIMEOUT_S
                )
        except BaseException as exc:  # handed to every caller; nothing is left to raise it here
            future.set_exception(exc)
            return
        future.set_result(result)

    def _hint(self) -> str:
        hint = f"the handshake was still waiting for {self.doing}"
        transport = self._rpc.transport
        clue = transport.timeout_hint() if isinstance(transport, ExplainsTimeouts) else ""
        return f"{hint}; {clue}" if clue else hint


def call_deadline(rpc: JsonRpcClient, timeout: Timeout) -> Deadline:
    """The deadline of a public call entering now with ``timeout`` (``DEFAULT_TIMEOUT``: the client's default).

    Raises:
        TypeError, ValueError: a bad ``timeout`` (as ``check_timeout``).
    """
    return Deadline.after(timeout, rpc.default_timeout)


def whole(exc: RequestTimeout, deadline: Deadline) -> RequestTimeout:
    """``exc`` naming the whole call's timeout (its step had only what was left of it)."""
    if exc.timeout == deadline.timeout:
        return exc
    return RequestTimeout(exc.method, exc.request_id, deadline.timeout, exc.hint)


def call_within(rpc: JsonRpcClient, method: str, params: Any, deadline: Deadline) -> Any:
    """``rpc.call`` with what is left of ``deadline``; a timeout names the whole call's.

    Raises:
        As ``JsonRpcClient.call``.
    """
    try:
        return rpc.call(method, params, timeout=deadline.remaining())
    except RequestTimeout as exc:
        raise whole(exc, deadline) from None


__all__ = ["HANDSHAKE_JOIN_S", "INITIALIZED_SEND_TIMEOUT_S", "Handshake", "call_deadline", "call_within", "whole"]
