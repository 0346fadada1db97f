"""JsonRpcClient: the public face of a JSON-RPC 2.0 client over any transport.

Theory of operation.  Each request gets a fresh integer id and a future,
registered in the pending map (:mod:`._pending`) *before* its bytes are
written; from then on exactly one party settles it, whoever removes the id
from the map first: its response, its deadline, the caller's ``cancel()``, a
failed write, the transport's end, or ``close()``.  Everybody else finds the
id missing and does nothing, so a late response is dropped (logged at debug
level) and nothing is settled twice.

Deadlines.  A timeout is checked where it enters (:mod:`._deadlines`: ``inf``
means none, NaN or a negative value is refused).  A ``request()`` future's
deadline waits in its timeout value's lane (:mod:`._expiry`), whose one timer
runs on the process-wide timer thread (:mod:`._scheduler`): not a thread, not
even a timer, per request.  A blocking ``call()`` keeps its own deadline: its
thread waits for the answer no longer than that, then settles the request itself.

Threads.  Three kinds run user code, each per client, started on demand, and
none of them is the transport's reader thread or the timer thread:

- the handler pool (``handler_workers`` threads): the peer's requests
  (``on_request``), and the cancellation notifications sent for timeouts;
- the notification lane (one thread): the peer's notifications
  (``on_notification``, MCP progress), one at a time, in arrival order;
- the callback pool: done-callbacks of futures the library settles.

A worker that waits for an answer of a client does not count against its
pool's size while it waits, so handlers that call back into the client can
never starve the handler that the peer needs before it answers them.

Order.  A response that arrives after notifications is settled after their
handlers returned, so a progress callback has always run before the ``call()``
it reports on returns; but never later than the request's deadline, and a
response to a request sent from a notification handler is delivered at once
(it must not wait behind the handler that waits for it).

This module does no I/O of its own and knows nothing of MCP: the transport
moves bytes (:mod:`.transports.base` is the whole contract), and the
cancellation notification a peer understands is a parameter
(:mod:`.cancellation`).
"""

from __future__ import annotations

import itertools
import sys
import threading

from . import _fork, messages
from ._closing import Closing
from ._deadlines import DEFAULT_TIMEOUT, UseDefault, check_timeout, deadline_after
from ._dispatch import answer_request, run_notification
from ._expiry import DeadlineLanes
from ._logs import get_logger
from ._pending import Pending, PendingTable, fresh_error
from ._scheduler import Scheduler, default_scheduler
from ._settling import CallWaiter, settle_exception
from ._wakeups import PROCESS_WAKE_PIPES
from ._workers import DrainQueue, PoolClosed, SerialLane, WorkerPool, current_worker
from .batch import Batch, BatchItem
from .cancellation import CancellationBuilder, lsp_cancellation, mcp_cancellation, resolve_style
from .errors import (
    InvalidRequest,
    JsonRpcError,
    MethodNotFound,
    TransportClosed,
)
from .observe import Counts
from .transports.base import Transport, capabilities, describe

TYPE_CHECKING = False  # typing and concurrent.futures load only when used (start-up cost)
if TYPE_CHECKING:
    from concurrent.futures import Future
    from typing import Any, Callable, Deque, Dict, List, Mapping, Optional, Sequence, Tuple, Type, Union

    from ._deadlines import Timeout
    from ._futures import RequestFuture
    from .errors import RequestId
    from .observe import Observer

logger = get_logger(__name__)

#: messages_received(): the most responses in a row settled with one round trip of the
#: pending map's lock (the lock is held for no longer, and the first of them waits no longer).
_RESPONSES_PER_SETTLING = 32

if TYPE_CHECKING:
    RequestHandler = Callable[[Any], Any]
    NotificationHandler = Callable[[Any], None]

#: How long ``close()`` waits for running handlers before leaving them to
#: finish on their daemon threads.
HANDLER_SHUTDOWN_GRACE_S = 2.0
#: How long ``close()`` lets queued done-callbacks run before it returns.
CALLBACK_SHUTDOWN_GRACE_S = 2.0
#: Default number of worker threads for incoming requests.
DEFAULT_HANDLER_WORKERS = 4
#: Deadline of a cancellation notification's send (it runs on a handler worker).
CANCELLATION_SEND_TIMEOUT_S = 5.0
#: Deadline of the send of an answer to the peer's request.
ANSWER_SEND_TIMEOUT_S = 30.0
#: A second ``close()`` waits this long for the first one to finish.
SECOND_CLOSE_WAIT_S = 15.0


class JsonRpcClient(Closing):
    """A JSON-RPC 2.0 client over one transport.

    Thread-safe: every method may be called from any number of threads at once.
    Use it as a context manager, or call :meth:`close` when done.

    Args:
        transport: a :class:`~jsonrpc_threads.transports.base.Transport`
            (``StdioTransport``, ``HttpTransport``); the client owns it and closes it.
        default_timeout: seconds a request may wait for its response when the call
            names no timeout; ``None`` (or ``inf``) waits forever.
        cancellation: the notification sent to the peer when a request times out
            or its future is cancelled: ``"mcp"`` (``notifications/cancelled``),
            ``"lsp"`` (``$/cancelRequest``), a callable ``(id, reason) -> (method,
            params) | None``, or ``None`` to send nothing (plain JSON-RPC).
        handler_workers: threads for the peer's requests running at once (not
            counting those waiting for an answer of a client).
        scheduler: the timer scheduler; the process-wide one by default.

    Raises:
        TransportClosed: when the transport cannot be started.
        ValueError: for a bad ``default_timeout``, ``cancellation`` or ``handler_workers``.
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
    ) -> None:
        self._cancellation = resolve_style(cancellation)
        self.default_timeout = check_timeout(default_timeout, "default_timeout")
        self._transport = transport
        self._scheduler = scheduler or default_scheduler()
        self._label = describe(transport)
        self._ids = itertools.count(1)
        self._capabilities = capabilities(transport)
        self._lane = SerialLane(f"jsonrpc-notify[{self._label}]")
        self._table = PendingTable(self._label, self._lane, self._capabilities.timeout_hint)
        self._workers = WorkerPool(handler_workers, f"jsonrpc-handler[{self._label}]")
        self._callbacks = WorkerPool(handler_workers, f"jsonrpc-callback[{self._label}]")
        self._settled = DrainQueue(self._callbacks, _run_done_callbacks)  # futures whose callbacks are due
        self._request_handlers: Dict[str, RequestHandler] = {}
        self._notification_handlers: Dict[str, NotificationHandler] = {}
        # _close_lock guards _close_started; _close_done is set once close() finished.
        self._close_lock = threading.Lock()
        self._close_started = False
        self._close_done = threading.Event()
        self._made_in = _fork.generation  # a fork of this process may not use this client
        # request() deadlines: one timer per timeout value (see _expiry), expired in batches.
        self._deadlines = DeadlineLanes(self._scheduler, self._expire_many, self._table.__contains__)
        self._counts = Counts()  # observe.py: timeouts, cancels, errors (stats())
        self._observer: Optional[Observer] = None  # observe.py: wire trace, close listeners
        self._wake_pipes = PROCESS_WAKE_PIPES  # what a call() that waits for its answer sleeps on
        self._wake_pipes.attach()
        try:
            transport.start(self)
        except BaseException:
            self._wake_pipes.detach()
            self._shutdown_workers(0.0)
            raise

    # -- public API -------------------------------------------------------------

    @property
    def transport(self) -> Transport:
        """The transport this client owns."""
        return self._transport

    @property
    def closed(self) -> bool:
        """True once the client was closed or its transport went away (or in a forked process)."""
        return self._table.closed or _fork.forked_since(self._made_in)

    def request(
        self,
        method: str,
        params: messages.Params = None,
        *,
        timeout: Timeout = DEFAULT_TIMEOUT,
        headers: Optional[Mapping[str, str]] = None,
    ) -> Future[Any]:
        """Send a request and return a future for its result.

        The future's ``result()`` is the response's ``result``; it raises the
        peer's error as a :class:`JsonRpcError` (or its subclass for the standard
        codes), :class:`RequestTimeout` when ``timeout`` passes first, or
        :class:`TransportClosed`.  ``future.cancel()`` withdraws the request (and
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
                :mod:`jsonrpc_threads.transports.base`.

        Raises:
            TransportClosed: at once, when the client is closed.
            TypeError: when params cannot be encoded as JSON, or for a bad timeout.
            ValueError: for a NaN in params or a negative or NaN timeout.
        """
        if _fork.generation != self._made_in:
            raise self._forked_error()
        resolved = self._resolve_timeout(timeout)
        request_id = next(self._ids)
        data = messages.encode_request(request_id, method, params)
        future = _request_future(self, request_id)
        entry = Pending(future, method, resolved, self._lane.in_lane())
        self._table.add(request_id, entry)
        try:
            if resolved is not None:
                self._deadlines.add(resolved, request_id)
            if self._observer is not None:
                self._observer.sent(data)
            self._send_requests(data, (request_id,), deadline_after(resolved), headers)
        except BaseException as exc:  # interrupted (KeyboardInterrupt): the caller never gets the future
            if self._table.interrupt(request_id, exc) is not None:
                self._tell_peer(request_id, f"Interrupted: {type(exc).__name__}")
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

        Args: as :meth:`request`.

        Returns:
            The response's ``result``.

        Raises:
            JsonRpcError: the peer's error (a subclass for the standard codes).
            RequestTimeout: no response within ``timeout``; the caller's thread is
                free again, the peer may still be working (and was sent the
                cancellation notification, where configured).
            TransportClosed: the transport went away (or the client is closed).
            TypeError, ValueError: as :meth:`request`, before anything is sent.
        """
        if _fork.generation != self._made_in:
            raise self._forked_error()
        resolved = self._resolve_timeout(timeout)
        deadline = deadline_after(resolved)
        request_id = next(self._ids)
        data = messages.encode_request(request_id, method, params)
        waiter = CallWaiter(self._wake_pipes)
        self._table.add(request_id, Pending(waiter, method, resolved, self._lane.in_lane()))
        if self._observer is not None:
            self._observer.sent(data)
        try:
            drive = self._capabilities.drive_call
            if drive is None or not self._drive(drive, data, request_id, waiter, deadline, headers):
                self._send_requests(data, (request_id,), deadline, headers)
            if not waiter.wait(deadline):
                self._expire(request_id)
        except BaseException as exc:  # interrupted (KeyboardInterrupt): never leave it behind
            if self._table.interrupt(request_id, exc) is not None:
                self._counts.cancel()
                self._tell_peer(request_id, f"Interrupted: {type(exc).__name__}")
            raise
        finally:
            waiter.finish()
        return waiter.result()

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
            headers: as in :meth:`request`.

        Raises:
            TransportClosed: when the client is closed or the write failed.
            RequestTimeout: (HTTP) the server did not accept it within ``timeout``.
            TypeError, ValueError: when params cannot be encoded, or for a bad timeout.
        """
        if _fork.generation != self._made_in:
            raise self._forked_error()
        deadline = deadline_after(self._resolve_timeout(timeout))
        data = messages.encode(messages.notification_message(method, params))
        closed = self._table.closed_error()
        if closed is not None:
            raise closed
        if self._observer is not None:
            self._observer.sent(data)
        if headers is None:
            self._transport.send(data, (), deadline=deadline)
        else:
            self._transport.send(data, (), deadline=deadline, headers=headers)

    def cancel(self, future: Future[Any], reason: str = "Cancelled by the client") -> bool:
        """Withdraw the request behind ``future`` (from :meth:`request`) and tell the peer why.

        Same as ``future.cancel()``, with the ``reason`` sent in the cancellation
        notification (where the client is configured to send one).

        Returns:
            True when the future is cancelled (now or before), False when it had settled.
        """
        futures = sys.modules.get("jsonrpc_threads._futures")  # none made yet: not one of ours
        if futures is not None and isinstance(future, futures.RequestFuture):
            return bool(future.cancel_with_reason(reason))
        return future.cancel()

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

        The handler runs on a handler worker and may call back into this client.
        Its return value is the result; raising a :class:`JsonRpcError` answers
        with that error; anything else it raises (``SystemExit`` included)
        answers -32603 with the exception's class name (the traceback is
        logged, not sent).  Requests for methods without a handler are answered
        -32601.  Registering again replaces the handler.
        """
        self._request_handlers[method] = handler

    def on_notification(self, method: str, handler: NotificationHandler) -> None:
        """Call ``handler(params)`` for the peer's notifications of ``method``.

        Notification handlers run one at a time, in arrival order, on the
        client's notification thread; what they raise is logged.  A response
        that arrives after a notification is delivered after that
        notification's handler returned (or at its request's deadline,
        whichever comes first), so keep handlers short.  A handler may call
        this client: its own requests' responses never wait behind it.
        """
        self._notification_handlers[method] = handler

    def stats(self) -> Dict[str, int]:
        """Counters since the client was made: ``{"calls", "errors", "timeouts", "cancels", "pending"}``.

        ``calls``: requests sent; ``errors``: requests answered with an error,
        failed in transit, or lost with the transport; ``timeouts``: requests
        whose deadline passed; ``cancels``: requests the caller withdrew;
        ``pending``: requests waiting for their answer now.  Cheap, lock-free.
        """
        return self._counts.snapshot(self._ids, len(self._table))

    def has_pending(self) -> bool:
        """True while some request waits for its answer (also the transport's sink call)."""
        return bool(len(self._table))

    def close(self) -> None:
        """Fail every pending request with ``TransportClosed``, then close the transport.

        Bounded in time (the transport's escalation, then
        ``HANDLER_SHUTDOWN_GRACE_S`` for running handlers and
        ``CALLBACK_SHUTDOWN_GRACE_S`` for queued done-callbacks).  Idempotent
        and thread-safe; a second caller waits (bounded) for the first to
        finish, unless it is one of this client's own threads.

        In a process forked after the client was made, only this process's
        copies of the transport's descriptors are let go: nothing is signalled,
        sent or waited for, and the parent's server and session live on.
        """
        if _fork.forked_since(self._made_in):
            self._release_in_fork()
            return
        with self._close_lock:
            first = not self._close_started
            self._close_started = True
        if not first:
            if current_worker() not in (self._workers, self._lane, self._callbacks):
                self._close_done.wait(SECOND_CLOSE_WAIT_S)
            return
        try:
            self._table.close(TransportClosed("Client closed"))
            self._deadlines.close()
            self._wake_pipes.detach()
            try:
                self._transport.close()
            finally:
                self._shutdown_workers(HANDLER_SHUTDOWN_GRACE_S)
        finally:
            self._close_done.set()

    def _forked_error(self) -> TransportClosed:
        return TransportClosed(
            f"{self._label}: this client was made before a fork; a forked process cannot use its parent's "
            "pipes and sessions: make a new client in this process (a ToolRegistry restarts its servers itself)"
        )

    def _release_in_fork(self) -> None:
        """close() in a forked process: no lock taken (a thread of the parent may have held one).

        The wake pipes were let go by their own fork hook (the pool is the process's).
        """
        release = self._capabilities.release_in_fork
        if release is not None:
            release()

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"{len(self._table)} pending"
        return f"<JsonRpcClient {self._label} {state}>"

    # -- MessageSink: called by the transport -----------------------------------

    def message_received(self, data: bytes) -> Sequence[RequestId]:
        """Transport callback: one JSON text arrived.  Never raises, never runs user code.

        Returns:
            The ids of the responses it carried (see :class:`~.transports.base.MessageSink`).
        """
        if self._observer is not None:
            self._observer.received(data)
        try:
            value = messages.decode(data)
        except JsonRpcError:
            logger.warning("%s: skipping a message that is not JSON: %.200r", self._label, data)
            return ()
        if type(value) is dict:  # the usual message, without one more call
            self._dispatch(value)
            if "method" not in value:
                request_id: RequestId = value.get("id")  # type: ignore[assignment]
                return (request_id,) if messages.is_valid_id(request_id) else ()
            return ()
        self._dispatch_value(value, data)
        if type(value) is list:
            return [
                item["id"]
                for item in value
                if type(item) is dict and "method" not in item and messages.is_valid_id(item.get("id"))
            ]
        return ()

    def messages_received(self, chunk: Deque[bytes]) -> None:
        """Transport callback: JSON texts that one read brought, taken in order from the left of ``chunk``.

        Each is handled as :meth:`message_received` handles it, except that the
        responses among them are settled together (up to
        :data:`_RESPONSES_PER_SETTLING` in a row) with one round trip of the
        pending map's lock; a notification or request among them is handled
        after the responses before it, so the order of delivery is the order
        of arrival.  Should this thread be interrupted (``KeyboardInterrupt``
        in a caller that reads), the responses already taken are settled
        first, and what is still in ``chunk`` was not looked at.  Never runs
        user code.
        """
        observer = self._observer
        decode = messages.decode
        settle = self._table.deliver_many
        responses: List[Dict[str, Any]] = []
        try:
            while chunk:
                data = chunk.popleft()
                if observer is not None:
                    observer.received(data)
                try:
                    value = decode(data)
                except JsonRpcError:
                    logger.warning("%s: skipping a message that is not JSON: %.200r", self._label, data)
                    continue
                if type(value) is dict and "method" not in value:
                    if "error" in value:
                        self._counts.error()
                    responses.append(value)
                    if len(responses) == _RESPONSES_PER_SETTLING:
                        earlier, responses = responses, []
                        settle(earlier)
                    continue
                if responses:  # a notification, a request or a batch: after the responses before it
                    earlier, responses = responses, []
                    settle(earlier)
                self._dispatch_value(value, data)
        finally:
            if responses:
                settle(responses)

    def _dispatch_value(self, value: Any, data: bytes) -> None:
        """Handle one decoded message (or batch); ``data`` is what it was decoded from, for log lines."""
        if type(value) is dict:
            self._dispatch(value)
        elif type(value) is list and value:
            for item in value:
                if type(item) is dict:
                    self._dispatch(item)
                else:
                    logger.warning("%s: skipping a batch item that is not an object: %.200r", self._label, item)
        else:
            logger.warning("%s: skipping a message that is not JSON-RPC: %.200r", self._label, data)

    def requests_failed(self, request_ids: Sequence[RequestId], error: JsonRpcError) -> None:
        """Transport callback: these requests failed in transit."""
        self._counts.errors(len(request_ids))
        self._table.fail(request_ids, error)

    def transport_closed(self, error: TransportClosed) -> None:
        """Transport callback: the transport is gone; fail everything pending."""
        self._counts.errors(len(self._table))
        self._table.close(error)
        if self._observer is not None:
            self._observer.closed(error)

    # -- internals ----------------------------------------------------------------

    def _resolve_timeout(self, timeout: Timeout) -> Optional[float]:
        if isinstance(timeout, UseDefault) or timeout is Ellipsis:  # type: ignore[comparison-overlap]
            return self.default_timeout
        return check_timeout(timeout)

    def _drive(
        self,
        drive: Callable[..., bool],
        data: bytes,
        request_id: RequestId,
        waiter: CallWaiter,
        deadline: Optional[float],
        headers: Optional[Mapping[str, str]],
    ) -> bool:
        """Let the transport carry the call on this thread; False when it declined (nothing sent)."""
        try:
            if headers is None:
                return drive(data, request_id, waiter.settled, deadline)
            return drive(data, request_id, waiter.settled, deadline, headers)
        except JsonRpcError as exc:
            self._table.fail((request_id,), exc)
            return True

    def _send_requests(
        self,
        data: bytes,
        request_ids: Sequence[RequestId],
        deadline: Optional[float],
        headers: Optional[Mapping[str, str]] = None,
    ) -> None:
        """Hand requests to the transport; a failure to send settles them (never raises)."""
        try:
            if headers is None:
                self._transport.send(data, request_ids, deadline=deadline)
            else:
                self._transport.send(data, request_ids, deadline=deadline, headers=headers)
        except JsonRpcError as exc:
            self._table.fail(request_ids, exc)
        except (OSError, ValueError) as exc:
            self._table.fail(request_ids, TransportClosed(f"write failed: {exc}"))

    def _dispatch(self, message: Dict[str, Any]) -> None:
        if "method" not in message:
            if "error" in message:
                self._counts.error()
            self._table.deliver(message)
        elif "id" in message:
            self._handle_request(message)
        else:
            self._handle_notification(message)

    def _handle_notification(self, message: Dict[str, Any]) -> None:
        method = message.get("method")
        handler = self._notification_handlers.get(method) if isinstance(method, str) else None
        if handler is None:
            logger.debug("%s: no handler for notification %.100r", self._label, method)
            return
        params = message.get("params")
        try:
            self._lane.submit(run_notification, method, lambda: handler(params), self._label, logger)
        except PoolClosed:
            logger.debug("%s: notification %r after close dropped", self._label, method)

    def _handle_request(self, message: Dict[str, Any]) -> None:
        try:
            request = messages.parse_message(message)
        except InvalidRequest as exc:
            logger.warning("%s: invalid request from peer: %s", self._label, exc)
            answer = messages.encode(messages.error_message(messages.id_of(message), exc))
            self._submit(self._send_answer, answer)
            return
        assert isinstance(request, messages.Request)
        self._submit(self._run_request, request)

    def _submit(self, fn: Callable[..., Any], *args: Any) -> None:
        try:
            self._workers.submit(fn, *args)
        except PoolClosed:
            logger.debug("%s: work after close dropped", self._label)

    def _run_request(self, request: messages.Request) -> None:
        handler = self._request_handlers.get(request.method)
        if handler is None:
            error = MethodNotFound(f"Method not found: {request.method}")
            answer = messages.encode(messages.error_message(request.id, error))
        else:
            params = request.params
            answer = answer_request(request.id, request.method, lambda: handler(params), self._label, logger)
        self._send_answer(answer)

    def _send_answer(self, data: bytes) -> None:
        if self._observer is not None:
            self._observer.sent(data)
        try:
            self._transport.send(data, (), deadline=deadline_after(ANSWER_SEND_TIMEOUT_S))
        except (JsonRpcError, OSError, ValueError) as exc:
            logger.debug("%s: could not send an answer: %s", self._label, exc)

    def _expire(self, request_id: RequestId) -> None:
        """The deadline passed (timer thread, or the caller of ``call()``).  Never blocks."""
        entry = self._table.expire(request_id)
        if entry is not None:
            self._counts.timeout()
            self._tell_peer(request_id, f"Request timed out after {entry.timeout}s")

    def _expire_many(self, request_ids: List[RequestId]) -> None:
        """Deadlines that passed together (the timer thread): :meth:`_expire` for each, the transport told once."""
        timed_out_ids, entries = self._table.expire_many(request_ids)
        if not timed_out_ids:
            return
        count = self._counts.timeout
        for _ in timed_out_ids:
            count()
        try:
            self._abandon(timed_out_ids)
            if self._cancellation is not None:
                for request_id, entry in zip(timed_out_ids, entries):
                    self._send_cancellation(request_id, f"Request timed out after {entry.timeout}s")
        except Exception:  # the requests are settled: a failure to tell the peer is only logged
            logger.exception("%s: could not withdraw %d timed-out requests", self._label, len(timed_out_ids))

    def _withdraw(self, request_id: RequestId, reason: str) -> None:
        """The caller cancelled the future: forget the request and tell the peer."""
        if self._table.withdraw(request_id) is not None:
            self._counts.cancel()
            self._tell_peer(request_id, reason)

    def _tell_peer(self, request_id: RequestId, reason: str) -> None:
        """Stop the transport's work for the request and send the cancellation (on a worker)."""
        self._abandon([request_id])
        self._send_cancellation(request_id, reason)

    def _abandon(self, request_ids: List[RequestId]) -> None:
        """Let the transport drop what it still holds of these requests (queued frames, open streams)."""
        abandon = self._capabilities.abandon
        if abandon is not None:
            try:
                abandon(request_ids)
            except Exception:
                logger.exception("%s: the transport failed to abandon %d request(s)", self._label, len(request_ids))

    def _send_cancellation(self, request_id: RequestId, reason: str) -> None:
        """Queue the cancellation notification for the peer, where the client is configured to send one.

        Built and sent on a handler worker: a ``cancellation`` callable is the
        caller's code, and this runs on the timer thread for a timeout.
        """
        if self._cancellation is None or self._table.closed:
            return
        self._submit(self._notify_cancelled, request_id, reason)

    def _notify_cancelled(self, request_id: RequestId, reason: str) -> None:
        """A handler worker: build the cancellation notification and send it (failures are logged)."""
        builder = self._cancellation
        notification = builder(request_id, reason) if builder is not None else None
        if notification is None:
            return
        method, params = notification
        try:
            self.notify(method, params, timeout=CANCELLATION_SEND_TIMEOUT_S)
        except JsonRpcError as exc:
            logger.debug("%s: could not send %s: %s", self._label, method, exc)

    def run_done_callbacks(self, futures: List[RequestFuture]) -> None:
        """Run the done-callbacks of futures the library settled, on the callback workers.

        The futures go to one shared queue that the callback workers drain in
        order (:class:`~._workers.DrainQueue`), each future's callbacks in the
        order they were added: a callback that blocks holds up its own worker
        only, and the others go on with the rest.
        """
        try:
            self._settled.put(futures)
        except PoolClosed:  # settled after close (rare): a thread of its own
            thread = threading.Thread(target=self._settled.drain, name=f"jsonrpc-callback[{self._label}]", daemon=True)
            thread.start()

    def _shutdown_workers(self, grace: float) -> None:
        self._lane.shutdown(grace)
        self._workers.shutdown(grace)
        self._callbacks.shutdown(CALLBACK_SHUTDOWN_GRACE_S if grace else 0.0, drain=True)

    def _send_batch(self, items: List[BatchItem]) -> None:
        """Send the messages of a batch as one array (see :class:`Batch`)."""
        if _fork.generation != self._made_in:
            raise self._forked_error()
        parts: List[bytes] = []
        tracked: List[Tuple[RequestId, Pending]] = []
        for item in items:
            entry = item.entry
            if entry is not None:
                future: RequestFuture = entry.future  # type: ignore[assignment]
                if future.cancelled():
                    continue  # cancelled inside the block: never sent
                tracked.append((future.request_id, entry))
            parts.append(item.data)
        if not parts:
            return
        data = b"[" + b",".join(parts) + b"]"
        if self._observer is not None:
            self._observer.sent(data)
        if not tracked:
            closed = self._table.closed_error()
            if closed is not None:
                raise closed
            self._transport.send(data, (), deadline=deadline_after(self.default_timeout))
            return
        in_lane = self._lane.in_lane()
        for _, entry in tracked:
            entry.immediate = in_lane
        try:
            self._table.add_many(tracked)
        except TransportClosed as exc:
            for _, entry in tracked:
                settle_exception(entry.future, fresh_error(exc))
            raise
        for request_id, entry in tracked:
            if entry.timeout is not None:
                self._deadlines.add(entry.timeout, request_id)
        timeouts = [entry.timeout for _, entry in tracked]
        latest = None if None in timeouts else max(t for t in timeouts if t is not None)
        self._send_requests(data, [request_id for request_id, _ in tracked], deadline_after(latest))


def __getattr__(name: str) -> Any:
    """``Timeout`` (a ``typing.Union``), made on first use: typing loads only when asked for."""
    if name == "Timeout":
        from ._deadlines import Timeout  # noqa: PLC0415

        return Timeout
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _request_future(client: JsonRpcClient, request_id: RequestId) -> RequestFuture:
    """A new RequestFuture (``concurrent.futures`` is imported with the first one)."""
    global _future_class
    future_class = _future_class
    if future_class is None:  # an import statement here would cost every request() a trip through importlib
        from ._futures import RequestFuture  # noqa: PLC0415 - on first use: see the module docstring of _futures

        future_class = _future_class = RequestFuture
    return future_class(client, request_id, client)


#: RequestFuture, once the first request() imported it.
_future_class: Optional[Type[RequestFuture]] = None


def _run_done_callbacks(future: RequestFuture) -> None:
    """A callback worker: run the done-callbacks of one settled future (each one's failure is logged)."""
    future.run_done_callbacks(logger)


__all__ = [
    "DEFAULT_TIMEOUT",
    "Batch",
    "JsonRpcClient",
    "Timeout",
    "lsp_cancellation",
    "mcp_cancellation",
]
