"""The connection to one agent: its process, the JSON-RPC client over it, and the handshake.

Theory of operation.  An ``AgentConnection`` starts the agent (a
``StdioTransport``, one JSON text per line) or takes a
transport it is given, and puts a ``JsonRpcClient`` on it.
Everything above talks to the agent through ``AgentConnection.call`` and
``AgentConnection.notify``, which take the caller's
``Deadline`` and run the handshake first if it has not run.

The handshake (``initialize`` with protocol version 1) is a single flight
(``SingleFlight`` with ``once=True``, from ``jsonrpc_threads.deadlines``): it
runs on a thread of its own, and every caller, the first included, waits for
that one answer with its own deadline.  The handshake may take as long as the
latest deadline of the callers that joined it (its ``Budget``): a first caller
with a short timeout gives up alone, and the handshake goes on for a later one.
ACP allows one ``initialize`` per connection, so its outcome sticks: a
handshake that failed (an agent that answered another protocol version, an
error, no answer within the budget) fails every later call the same way;
close the client and start a new one.

Only the public faces of the package are used here: ``JsonRpcClient``
(``request``, ``notify``, ``on_request``, ``on_notification``, ``cancel``,
``close``), ``StdioTransport`` and the exception tree.  A request is sent with
``request()`` and its future waited for (not ``call()``): the answer to a
prompt comes behind a stream of notifications, and the future is settled once
their handlers ran, as ``call()`` would return; the future's own deadline
settles it, and the wait is bounded ``RESULT_GRACE_S`` beyond it.  A request that times out is simply
given up (ACP's ``$/cancel_request`` is optional and not sent); a prompt turn
is cancelled by the layer above, with ``session/cancel``.
"""

from __future__ import annotations

import logging
import os
import threading
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Union

from .. import JsonRpcClient, StdioTransport, Transport
from ..deadlines import Budget, Deadline, SingleFlight
from ..errors import JsonRpcError, ProtocolError, RequestTimeout, TransportClosed
from ..transports.base import describe
from .wire import INITIALIZE, PROTOCOL_VERSION

logger = logging.getLogger(__name__)

Command = Union[str, Sequence[Union[str, "os.PathLike[str]"]]]

#: How much longer than its deadline a wait for a request's future may take: the client
#: settles the future at the deadline itself; this bounds the wait should it not.
RESULT_GRACE_S = 1.0
#: Threads that serve the agent's requests at once.  Some of them wait (a
#: permission callback that asks a person, ``terminal/wait_for_exit``), so the
#: pool is larger than the plain client's.
HANDLER_WORKERS = 16


class AgentConnection:
    """One agent over one transport, and the one handshake with it.  Thread-safe.

    Args:
        command_or_transport: the agent's command line (a ``str``, split with
            ``shlex.split``, or an argv list), started as a child process;
            or a transport (the connection owns it and closes it).
        cwd, env, inherit_env: for a command, as ``StdioTransport`` takes them.
        initialize_params: the parameters of ``initialize``.
        default_timeout: the JSON-RPC client's default timeout.
        handler_workers: threads serving the agent's requests at once.

    Raises:
        TransportClosed: the command cannot be started.
        ValueError: ``cwd``, ``env`` or ``inherit_env`` given with a transport.
        TypeError: neither a command nor a transport.
    """

    def __init__(
        self,
        command_or_transport: Union[Command, Transport],
        *,
        initialize_params: Dict[str, Any],
        cwd: Optional[str] = None,
        env: Optional[Mapping[str, Optional[str]]] = None,
        inherit_env: bool = False,
        default_timeout: Optional[float] = 30.0,
        handler_workers: int = HANDLER_WORKERS,
    ) -> None:
        transport = _transport_for(command_or_transport, cwd, env, inherit_env)
        try:
            self.rpc = JsonRpcClient(transport, default_timeout=default_timeout, handler_workers=handler_workers)
        except BaseException:
            if transport is not command_or_transport:
                transport.close()
            raise
        self._initialize_params = initialize_params
        # _lock guards _closing.
        self._lock = threading.Lock()
        self._handshake: SingleFlight[Dict[str, Any]] = SingleFlight(
            f"jsonrpc-acp-handshake[{describe(transport)}]",
            once=True,
            what="the handshake",
            doing=INITIALIZE,
            closed_message="AcpClient closed",
        )
        self._closing = False

    # -- the handshake ------------------------------------------------------------------------

    def initialize(self, deadline: Deadline) -> Dict[str, Any]:
        """Run ``initialize`` once and return the agent's answer.

        Raises:
            RequestTimeout: no answer before ``deadline`` (or, on another thread,
                the handshake in progress did not end before it).
            ProtocolError: the agent answered a protocol version other than 1.
            TransportClosed: the agent is gone, or the client closed.
            JsonRpcError: the agent refused ``initialize``.
        """
        if self._closing:
            raise TransportClosed("AcpClient closed")
        return self._handshake.join(deadline, self._run_handshake)

    def _run_handshake(self, budget: Budget) -> Dict[str, Any]:
        # On the handshake's thread: the request has no deadline of its own; it is waited for within the budget.
        rpc = self.rpc
        future = rpc.request(INITIALIZE, self._initialize_params, timeout=None)
        answer = budget.wait_for(future, INITIALIZE, lambda pending: rpc.cancel(pending, "The deadline passed"))
        result: Dict[str, Any] = answer if isinstance(answer, dict) else {}
        version = result.get("protocolVersion")
        if version != PROTOCOL_VERSION or isinstance(version, bool):
            raise ProtocolError(
                f"the agent answered initialize with protocol version {version!r}; "
                f"this client speaks ACP version {PROTOCOL_VERSION}"
            )
        return result

    def ready(self, deadline: Deadline) -> None:
        """Run the handshake unless it succeeded already (raises as ``initialize``)."""
        if not self._handshake.succeeded():
            self.initialize(deadline)

    @property
    def initialized(self) -> bool:
        """True once the handshake succeeded."""
        return self._handshake.succeeded()

    @property
    def initialize_result(self) -> Dict[str, Any]:
        """The agent's ``initialize`` answer (``{}`` before the handshake succeeded)."""
        return self._handshake.result() or {}

    # -- requests -----------------------------------------------------------------------------

    def call(self, method: str, params: Dict[str, Any], deadline: Deadline) -> Any:
        """Send ``method`` after the handshake (run now if it has not run) and wait for its result.

        Raises:
            RequestTimeout: no answer before ``deadline``.
            TransportClosed: the agent is gone, or the client closed.
            JsonRpcError: the agent's error.
        """
        self.ready(deadline)
        return self._request(method, params, deadline)

    def _request(self, method: str, params: Dict[str, Any], deadline: Deadline) -> Any:
        timeout = deadline.remaining()
        future = self.rpc.request(method, params, timeout=timeout)
        try:
            return future.result(timeout=None if timeout is None else timeout + RESULT_GRACE_S)
        except BaseException as exc:
            if future.done():
                if isinstance(exc, FutureTimeout) and not isinstance(exc, JsonRpcError):
                    return future.result(timeout=0)  # settled just as the wait gave up
                raise  # the answer's error, or the client's own (RequestTimeout, TransportClosed)
            self.rpc.cancel(future, f"Interrupted: {type(exc).__name__}")  # interrupted, or the backstop
            if isinstance(exc, FutureTimeout):
                raise RequestTimeout(method, None, deadline.timeout, "the client did not settle it") from None
            raise

    def send(self, method: str, params: Dict[str, Any], deadline: Deadline, *, linger: float) -> Future[Any]:
        """Send ``method`` after the handshake; its answer's future, which waits ``linger`` seconds past ``deadline``.

        For a request whose answer matters after its caller gave up (a prompt
        turn's, which ends the turn's updates): ``wait`` leaves at ``deadline``
        and the request stays pending until the agent answers it or ``linger``
        seconds more have passed.

        Raises:
            RequestTimeout: ``deadline`` passed during the handshake.
            TransportClosed: the agent is gone, or the client closed.
        """
        self.ready(deadline)
        timeout = deadline.remaining()
        return self.rpc.request(method, params, timeout=None if timeout is None else timeout + linger)

    def wait(self, future: Future[Any], method: str, deadline: Deadline) -> Any:
        """The result of ``future`` (from ``send``) by ``deadline``; at the deadline the request stays pending.

        Raises:
            RequestTimeout: no answer before ``deadline``.
            TransportClosed: the agent is gone, or the client closed.
            JsonRpcError: the agent's error.
        """
        try:
            return future.result(timeout=deadline.remaining())
        except BaseException as exc:
            if future.done():
                if isinstance(exc, FutureTimeout) and not isinstance(exc, JsonRpcError):
                    return future.result(timeout=0)  # settled just as the wait gave up
                raise  # the answer's error, or the client's own (RequestTimeout, TransportClosed)
            if isinstance(exc, FutureTimeout):
                raise RequestTimeout(method, None, deadline.timeout) from None
            self.rpc.cancel(future, f"Interrupted: {type(exc).__name__}")
            raise

    def notify(self, method: str, params: Dict[str, Any], timeout: Optional[float]) -> None:
        """Send a notification; bounded by ``timeout``.

        Raises:
            TransportClosed: the agent is gone, or the client closed.
        """
        self.rpc.notify(method, params, timeout=timeout)

    def on_request(self, method: str, handler: Callable[[Any], Any]) -> None:
        """Serve the agent's requests for ``method`` (on a handler worker)."""
        self.rpc.on_request(method, handler)

    def on_notification(self, method: str, handler: Callable[[Any], None]) -> None:
        """Handle the agent's notifications of ``method`` (on the notification worker, in order)."""
        self.rpc.on_notification(method, handler)

    # -- the end ------------------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        """True once ``close`` started or the agent went away."""
        return self._closing or self.rpc.closed

    def close(self) -> None:
        """Fail what is pending, close the transport (reclaiming the agent's process tree).

        Bounded, idempotent, thread-safe: see ``jsonrpc_threads.JsonRpcClient.close``.
        """
        with self._lock:
            self._closing = True
        self.rpc.close()
        self._handshake.close()


def _transport_for(
    target: Union[Command, Transport],
    cwd: Optional[str],
    env: Optional[Mapping[str, Optional[str]]],
    inherit_env: bool,
) -> Transport:
    if isinstance(target, (str, list, tuple)):
        argv: Union[str, List[Union[str, os.PathLike[str]]]] = target if isinstance(target, str) else list(target)
        return StdioTransport(argv, env=env, cwd=cwd, inherit_env=inherit_env)
    if env is not None or inherit_env:
        raise ValueError("env and inherit_env go with a command, not with a transport")
    if not isinstance(target, Transport):
        raise TypeError(f"expected a command or a transport, not {type(target).__name__}")
    return target


__all__ = ["HANDLER_WORKERS", "RESULT_GRACE_S", "AgentConnection", "Command"]
