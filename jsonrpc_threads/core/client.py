"""JsonRpcClient: the public face of a JSON-RPC 2.0 client over any transport.

Theory of operation.  A request's life is decided by the protocol core
(``protocol``: ids, the pending table, ordering, expiry, no I/O) and acted
on by the threaded shell (``shell``: one lock around the core, the timer,
the workers, the settling of futures; beside it, the peer's own messages,
``peer_messages``, and the close, ``teardown``; a streamed answer,
``streams``).  This module is the face of all of them: it checks what the
caller passes where it enters (a timeout once, into a deadline that every
later step spends), registers the request before its bytes go out, and hands
the rest over.

- ``request()`` returns a ``RequestFuture`` (a
  ``concurrent.futures.Future``), whose deadline the core keeps;
- ``call()`` waits on a private waiter and keeps its own deadline: its thread
  waits no longer, then ends the request itself; where the transport can
  carry the call on the caller's thread (``DrivesCalls``), it does;
- ``notify()`` sends and returns once the transport took the message;
- the client is the transport's sink (``jsonrpc_threads.transports.base``):
  what the transport reports goes to the shell.

This module does no I/O of its own and knows nothing of MCP.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Callable, Deque, Dict, List, Mapping, Optional, Sequence, Tuple, Type, Union

from .. import messages
from ..cancellation import CancellationBuilder, lsp_cancellation, mcp_cancellation, resolve_style
from ..deadlines.timeouts import DEFAULT_TIMEOUT, NO_DEADLINE_AT_S, Timeout, UseDefault, check_timeout
from ..errors import JsonRpcError, RequestId, TransportClosed
from ..runtime import fork as _fork
from ..runtime.closing import Closing
from ..runtime.scheduler import Scheduler, default_scheduler
from ..runtime.settling import CallWaiter, waiter_pipes
from ..transports.base import Transport, describe
from .peer_messages import NotificationHandler, RequestHandler
from .protocol import Connection
from .shell import Shell
from .streams import IsFinal, ResponseStream, start_stream
from .teardown import HANDLER_SHUTDOWN_GRACE_S, SECOND_CLOSE_WAIT_S, Teardown

if TYPE_CHECKING:
    from .futures import RequestFuture

#: Default number of worker threads for incoming requests.
DEFAULT_HANDLER_WORKERS = 4
#: The futures ``request()`` returns (``JsonRpcClient(futures=)``): lean while nobody waits on
#: them (``RequestFuture``), or ``concurrent.futures.Future`` as it is (``PlainRequestFuture``).
FUTURES = ("lean", "plain")


class JsonRpcClient(Closing):
    """A JSON-RPC 2.0 client over one transport.

    Thread-safe: every method may be called from any number of threads at once.
    Use it as a context manager, or call ``close`` when done.

    Args:
        transport: a ``Transport``
            (``StdioTransport``, ``HttpTransport``); the client owns it and closes it.
        default_timeout: seconds a request may wait for its response when the call
            names no timeout; ``None`` (or ``inf``) waits forever.
        cancellation: the notification sent to the peer when a request times out
            or its future is cancelled: ``"mcp"`` (``notifications/cancelled``),
            ``"lsp"`` (``$/cancelRequest``), a callable ``(id, reason) -> (method,
            params) | None`` (run on a handler worker), or ``None`` to send nothing.
        handler_workers: threads for the peer's requests running at once (not
            counting those waiting for an answer of a client).
        scheduler: the timer scheduler; the process-wide one by default.
        waiter: what a waiting ``call()`` sleeps on: ``"wake_pipe"`` (the default:
            a pipe from the process's small pool, a lock where none can be had)
            or ``"plain"`` (a lock).  ``futures``: what ``request()`` returns:
            ``"lean"`` (the default: a ``RequestFuture`` that makes its Condition
            only once something waits on it) or ``"plain"``
            (``concurrent.futures.Future`` as it is, same behaviour).  Both are
            performance strategies whose plain choice is the reference the same
            tests run ("Strategies" in ``docs/internals.md``).

    Raises:
        TransportClosed: when the transport cannot be started.
        ValueError: for a bad ``default_timeout``, ``cancellation``, ``handler_workers``,
            ``waiter`` or ``futures``.
        TypeError: for a ``default_timeout`` that is not a number.
    """

    def __init__(
        self,
        transport: Transport,
        *,
        default_timeout: Optional[float] = 30.0,
        cancellation: Union[str, CancellationBuilder, None] = None,
        handler_workers: int = DEFAULT_HANDLER_WORKERS,
        scheduler: Optional[Scheduler] = None,
        waiter: str = "wake_pipe",
        futures: str = "lean",
    ) -> None:
        self._wake_pipes = waiter_pipes(waiter)
        if futures not in FUTURES:
            raise ValueError(f"futures must be one of {FUTURES}, not {futures!r}")
        self._plain_futures = futures == "plain"
        builder = resolve_style(cancellation)
        self.default_timeout = check_timeout(default_timeout, "default_timeout")
        self._transport = transport
        self._label = describe(transport)
        self._shell = Shell(transport, self._label, builder, handler_workers, scheduler or default_scheduler())
        self._made_in = _fork.generation  # a fork of this process may not use this client
        pipes = self._wake_pipes
        self._teardown = Teardown(self._shell, transport, self._label, self._made_in, pipes)
        if pipes is not None:
            pipes.attach()  # what a call() waiting for its answer sleeps on; detached at close()
        try:
            transport.start(self)
        except BaseException:
            self._teardown.stop_workers(0.0)
            if pipes is not None:
                pipes.detach()
            raise

    @property
    def transport(self) -> Transport:
        """The transport this client owns."""
        return self._transport

    @property
    def closed(self) -> bool:
        """True once the client was closed or its transport went away (or in a forked process)."""
        return self._shell.core.closed or _fork.forked_since(self._made_in)

    def request(
        self,
        method: str,
        params: messages.Params = None,
        *,
        timeout: Timeout = DEFAULT_TIMEOUT,
        headers: Optional[Mapping[str, str]] = None,
    ) -> RequestFuture:
        """Send a request and return a future for its result.

        The future's ``result()`` is the response's ``result``; it raises the
        peer's error as a ``JsonRpcError`` (or its subclass for the standard
        codes), ``RequestTimeout`` when ``timeout`` passes first, or
        ``TransportClosed``.  ``future.cancel()`` withdraws the request (and
        sends the configured cancellation notification).  Never blocks on the
        transport: a peer that does not read gets the request when it does,
        and the future times out meanwhile.

        ``future.result(timeout=t)`` bounds only that wait: the request stays
        pending until its own ``timeout`` (or ``cancel()``).  Done-callbacks run
        on one of the client's callback workers when the library settles the
        future, on the calling thread when you cancel it.

        Args:
            method: the method name.
            params: a mapping or a sequence, or ``None`` to omit ``params``.
            timeout: seconds to wait for the response; ``None`` (or ``inf``)
                waits forever; by default the client's ``default_timeout``.
            headers: metadata for the transport to send with this message
                (HTTP: request headers; ignored by stdio); see
                ``jsonrpc_threads.transports.base``.

        Raises:
            TransportClosed: at once, when the client is closed.
            TypeError: when params cannot be encoded as JSON, or for a bad timeout.
            ValueError: for a NaN in params or a negative or NaN timeout.
        """
        if _fork.generation != self._made_in:
            self._teardown.check_process()
        resolved = self.resolve_timeout(timeout)
        shell = self._shell
        request_id, data = shell.core.request(method, params)
        future = _future_class(self._plain_futures)(request_id, shell.on_cancel)
        deadline = None if resolved is None else time.monotonic() + resolved
        shell.register(request_id, method, resolved, deadline, future)
        try:
            shell.send(data, (request_id,), deadline, headers)
        except BaseException as exc:  # interrupted (KeyboardInterrupt): the caller never gets the future
            shell.interrupted(request_id, future, exc)
            raise
        return future

    def call(
        self,
        method: str,
        params: messages.Params = None,
        *,
        timeout: Timeout = DEFAULT_TIMEOUT,
        headers: Optional[Mapping[str, str]] = None,
    ) -> Any:
        """Send a request and block until its result arrives, or its timeout.

        Args: as ``request``.

        Returns:
            The response's ``result``.

        Raises:
            JsonRpcError: the peer's error (a subclass for the standard codes).
            RequestTimeout: no response within ``timeout``; the caller's thread is
                free again, the peer may still be working (and was sent the
                cancellation notification, where configured).
            TransportClosed: the transport went away (or the client is closed).
            TypeError, ValueError: as ``request``, before anything is sent.
        """
        if _fork.generation != self._made_in:
            self._teardown.check_process()
        resolved = self.resolve_timeout(timeout)
        deadline = None if resolved is None else time.monotonic() + resolved
        shell = self._shell
        request_id, data = shell.core.request(method, params)
        waiter = CallWaiter(self._wake_pipes)
        shell.register(request_id, method, resolved, None, waiter)  # its deadline is this thread's
        try:
            shell.drive(data, request_id, waiter, deadline, headers)
            if not waiter.wait(deadline):
                shell.time_out(request_id)
        except BaseException as exc:  # interrupted (KeyboardInterrupt): never leave it behind
            shell.interrupted(request_id, waiter, exc)
            raise
        finally:
            waiter.finish()  # its wake pipe back to the pool, the settler's byte read
        return waiter.result()

    def request_stream(
        self,
        method: str,
        params: messages.Params = None,
        *,
        timeout: Timeout = DEFAULT_TIMEOUT,
        is_final: Optional[IsFinal] = None,
        headers: Optional[Mapping[str, str]] = None,
    ) -> ResponseStream:
        """Send a request the peer answers with many responses to its id: a ``ResponseStream`` of their results.

        ``is_final(result)`` (on the iterating thread; ``None``: never) tells the last one; ``timeout`` bounds the
        whole stream.  Args and Raises as ``request``; what iterating raises: ``ResponseStream``.
        """
        self._teardown.check_process()
        return start_stream(self._shell, method, params, self.resolve_timeout(timeout), is_final, headers)

    def notify(
        self,
        method: str,
        params: messages.Params = None,
        *,
        timeout: Timeout = DEFAULT_TIMEOUT,
        headers: Optional[Mapping[str, str]] = None,
    ) -> None:
        """Send a notification (no answer is expected).

        Returns once the transport took it: over stdio once it is queued for
        the child's stdin, in order; over HTTP once the server accepted it.

        Args:
            method: the notification's method.
            params: a mapping, a sequence or ``None``.
            timeout: the longest this may block; by default the client's ``default_timeout``.
            headers: as in ``request``.

        Raises:
            TransportClosed: when the client is closed or the write failed.
            RequestTimeout: (HTTP) the server did not accept it within ``timeout``.
            TypeError, ValueError: when params cannot be encoded, or for a bad timeout.
        """
        if _fork.generation != self._made_in:
            self._teardown.check_process()
        resolved = self.resolve_timeout(timeout)
        deadline = None if resolved is None else time.monotonic() + resolved
        data = Connection.notification(method, params)
        closed = self._shell.core.closed_error()
        if closed is not None:
            raise closed
        observer = self._shell.observer
        if observer is not None:
            observer.sent(data)
        if headers is None:
            self._transport.send(data, (), deadline=deadline)
        else:
            self._transport.send(data, (), deadline=deadline, headers=headers)

    def cancel(self, future: Any, reason: str = "Cancelled by the client") -> bool:
        """Withdraw the request behind ``future`` (from ``request``, or a ``request_stream``) and tell the peer why.

        Same as ``future.cancel()``, with ``reason`` in the cancellation notification (where one is sent).

        Returns:
            True when the future is cancelled (now or before), False when it had settled.
        """
        cancel_with_reason = getattr(future, "cancel_with_reason", None)  # a RequestFuture (of any client)
        if cancel_with_reason is not None:
            return bool(cancel_with_reason(reason))
        return bool(future.cancel())

    def batch(self) -> Batch:
        """Collect requests and notifications and send them as one JSON array.

        Usage::

            with client.batch() as b:
                total = b.request("add", [1, 2])
                b.notify("log", {"text": "hi"})
            total.result()

        The array is sent when the ``with`` block exits without an exception;
        on an exception nothing is sent and the block's futures are cancelled.
        """
        return Batch(self)

    def on_request(self, method: str, handler: RequestHandler) -> None:
        """Answer the peer's requests for ``method`` with ``handler(params)``.

        The handler runs on a handler worker and may call back into this client.  Its return value is
        the result; raising a ``JsonRpcError`` answers with that error; anything else it raises
        (``SystemExit`` included) answers -32603 with the exception's class name (the traceback is
        logged, not sent).  Methods without a handler are answered -32601.  Registering again replaces it.
        """
        self._shell.peer.request_handlers[method] = handler

    def on_notification(self, method: str, handler: NotificationHandler) -> None:
        """Call ``handler(params)`` for the peer's notifications of ``method``.

        Notification handlers run one at a time, in arrival order, on the client's notification
        thread; what they raise is logged.  A response that arrives after a notification is delivered
        after that notification's handler returned (or at its request's deadline, whichever comes
        first), so keep handlers short.  A handler may call this client: its own requests' responses
        never wait behind it.
        """
        shell = self._shell
        shell.peer.notification_handlers[method] = handler
        with shell.lock:
            shell.core.handle_notifications(method)

    def stats(self) -> Dict[str, int]:
        """Counters since the client was made: ``{"calls", "errors", "timeouts", "cancels", "pending"}``.

        ``calls``: requests sent; ``errors``: requests answered with an error,
        failed in transit, or lost with the transport; ``timeouts``: requests
        whose deadline passed; ``cancels``: requests the caller withdrew;
        ``pending``: requests waiting for their answer now.  Cheap, lock-free.
        """
        core = self._shell.core
        return {
            "calls": core.requests_made,
            "errors": core.errors,
            "timeouts": core.timeouts,
            "cancels": core.cancels,
            "pending": len(core),
        }

    def has_pending(self) -> bool:
        """True while some request waits for its answer (also the transport's sink call)."""
        return bool(len(self._shell.core))

    def resolve_timeout(self, timeout: Timeout) -> Optional[float]:
        """A ``timeout=`` as it enters: the client's default for ``DEFAULT_TIMEOUT``, checked otherwise.

        Returns:
            Seconds, or ``None`` for no deadline.

        Raises:
            TypeError, ValueError: for a bad timeout (see ``check_timeout``).
        """
        if type(timeout) is float and 0.0 <= timeout < NO_DEADLINE_AT_S:
            return timeout  # the usual case, on every request: check_timeout's first line, one call less
        if timeout is DEFAULT_TIMEOUT or isinstance(timeout, UseDefault) or timeout is Ellipsis:  # type: ignore[comparison-overlap]
            return self.default_timeout
        return check_timeout(timeout)

    def attach_observer(self, make: Callable[[str], Any]) -> Any:
        """The client's observer, made with ``make(label)`` the first time (for ``jsonrpc_threads.observe``).

        An observer has ``sent(data)``, ``received(data)`` and ``closed(error)``;
        the client calls them from its own hook points, and they return at once.
        """
        shell = self._shell
        with shell.lock:
            if shell.observer is None:
                shell.observer = make(self._label)
            return shell.observer

    def close(self) -> None:
        """Fail every pending request with ``TransportClosed``, then close the transport.

        Bounded in time (the transport's escalation, then ``HANDLER_SHUTDOWN_GRACE_S`` for running
        handlers and ``CALLBACK_SHUTDOWN_GRACE_S`` for queued done-callbacks).  Idempotent and
        thread-safe; a second caller waits (bounded) for the first, unless it is one of this client's
        own threads.  In a process forked after the client was made, only this process's copies of the
        transport's descriptors are let go: nothing is signalled, sent or waited for, and the parent's
        server and session live on.
        """
        self._teardown.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"{len(self._shell.core)} pending"
        return f"<JsonRpcClient {self._label} {state}>"

    # -- MessageSink: called by the transport ------------------------------------------------------

    def message_received(self, data: bytes) -> Sequence[RequestId]:
        """Transport callback: one JSON text arrived.  Never raises, never runs user code.

        Returns:
            The ids of the responses it carried (see ``MessageSink``).
        """
        return self._shell.received(data)

    def messages_received(self, chunk: Deque[bytes]) -> None:
        """Transport callback: the texts one read brought, from the left of ``chunk`` (one lock round trip)."""
        self._shell.received_chunk(chunk)

    def requests_failed(self, request_ids: Sequence[RequestId], error: JsonRpcError) -> None:
        """Transport callback: these requests failed in transit."""
        self._shell.failed(request_ids, error)

    def transport_closed(self, error: TransportClosed) -> None:
        """Transport callback: the transport is gone; fail everything pending.

        A request whose failure must wait for the handlers of notifications
        received before the loss fails as soon as they return (or at its deadline).
        """
        self._teardown.transport_closed(error)


_future_types: List[Type[RequestFuture]] = []  # (lean, plain) once imported


def _future_class(plain: bool) -> Type[RequestFuture]:
    """``RequestFuture`` (or ``PlainRequestFuture``), imported with the first ``request()``: a program
    that only makes blocking calls never loads ``concurrent.futures`` (nor ``logging``, ``traceback``...)."""
    if not _future_types:
        from .futures import PlainRequestFuture, RequestFuture  # noqa: PLC0415 - on first use: see the docstring

        _future_types[:] = [RequestFuture, PlainRequestFuture]
    return _future_types[plain]


#: A message of a batch, encoded (so checked) when added: bytes, future (None: a notification), method, timeout.
_BatchItem = Tuple[bytes, Optional["RequestFuture"], str, Optional[float]]


class Batch:
    """Requests and notifications collected to be sent as one JSON array.

    Made by ``JsonRpcClient.batch``; not thread-safe (fill it from one
    thread).  Each message is encoded when it is added, so bad params raise
    there and nothing of them is sent; the array is sent when the ``with``
    block exits without an exception, and each request's future settles like
    any other.
    """

    def __init__(self, client: JsonRpcClient) -> None:
        self._client = client
        self._items: List[_BatchItem] = []
        self._sent = False

    def request(
        self, method: str, params: messages.Params = None, *, timeout: Timeout = DEFAULT_TIMEOUT
    ) -> RequestFuture:
        """Add a request; its future settles once the batch is sent and answered.

        The timeout counts from the moment the batch is sent.  Cancelling the
        future before the block ends leaves the request out of the batch.

        Raises:
            RuntimeError: when the batch was already sent.
            TypeError, ValueError: for params that cannot be encoded, or a bad timeout.
        """
        self._check_open()
        client = self._client
        resolved = client.resolve_timeout(timeout)
        request_id, data = client._shell.core.request(method, params)
        future = _future_class(client._plain_futures)(request_id, client._shell.on_cancel)
        self._items.append((data, future, method, resolved))
        return future

    def notify(self, method: str, params: messages.Params = None) -> None:
        """Add a notification.

        Raises:
            RuntimeError: when the batch was already sent.
            TypeError, ValueError: for params that cannot be encoded.
        """
        self._check_open()
        self._items.append((Connection.notification(method, params), None, method, None))

    def _check_open(self) -> None:
        if self._sent:
            raise RuntimeError("this batch was already sent")

    def __enter__(self) -> Batch:
        return self

    def __exit__(self, exc_type: Optional[type], exc: Optional[BaseException], tb: Any) -> None:
        self._sent = True
        if exc_type is not None:
            for _, future, _, _ in self._items:
                if future is not None:
                    future.cancel()
            return
        client = self._client
        client._teardown.check_process()
        kept = [item for item in self._items if item[1] is None or not item[1].cancelled()]
        if kept:  # cancelled inside the block: left out
            client._shell.send_batch(kept, client.default_timeout)


__all__ = [
    "DEFAULT_HANDLER_WORKERS",
    "DEFAULT_TIMEOUT",
    "FUTURES",
    "HANDLER_SHUTDOWN_GRACE_S",
    "SECOND_CLOSE_WAIT_S",
    "Batch",
    "JsonRpcClient",
    "Timeout",
    "lsp_cancellation",
    "mcp_cancellation",
]
