"""JsonRpcClient: ids, the pending map, deadlines and handlers over any transport.

Theory of operation.  Each request gets a fresh integer id and a
:class:`concurrent.futures.Future`, which is put in the pending map (under the
client's one lock) *before* its bytes are written.  From then on, whichever
thread pops the id from the map settles the future, exactly once:

- the transport's reader thread, when the response arrives (or the thread
  blocked in ``call()``, which reads the answer itself: over stdio when no other
  thread is reading, over HTTP by carrying the whole exchange on its own thread,
  bounded by the deadline; no hand-off between threads on the fast path);
- the timer thread, when the deadline passes (:class:`RequestTimeout`);
- the thread that calls ``Future.cancel()`` (the request is withdrawn);
- the sending thread, when the write fails;
- whoever learns that the transport is gone (:class:`TransportClosed`).

Everybody else finds the id missing and does nothing, so a late response is
dropped (logged at debug level) and nothing is settled twice.

Deadlines live on the process-wide timer thread (:mod:`._scheduler`): a pending
request costs a heap entry, not a thread.  Incoming requests and notifications
from the peer run on a small pool of daemon workers, never on the reader
thread: a slow or re-entrant handler cannot stall reading or deadlock the
client.  Notifications are handled one at a time in arrival order, and a
response that arrives while earlier notifications are still being handled is
settled after them, so a progress callback has always run before the
``call()`` it reports on returns.

This module does no I/O of its own and knows nothing of MCP: the transport
moves bytes, and the cancellation notification a peer understands is a
parameter (:func:`mcp_cancellation`, :func:`lsp_cancellation`).
"""

from __future__ import annotations

import enum
import itertools
import logging
import threading
from concurrent.futures import Future, InvalidStateError
from types import TracebackType
from typing import (
    Any,
    Callable,
    Dict,
    List,
    Optional,
    Protocol,
    Sequence,
    Tuple,
    Type,
    Union,
    cast,
)

from . import messages
from ._scheduler import Scheduler, TimerHandle, default_scheduler
from ._workers import PoolClosed, WorkerPool
from .errors import (
    InternalError,
    InvalidRequest,
    JsonRpcError,
    MethodNotFound,
    RequestId,
    RequestTimeout,
    TransportClosed,
    error_from_response,
)
from .transports.base import Transport, describe

logger = logging.getLogger(__name__)

RequestHandler = Callable[[Any], Any]
NotificationHandler = Callable[[Any], None]
CancellationBuilder = Callable[[RequestId, str], Optional[Tuple[str, Dict[str, Any]]]]

#: How long ``close()`` waits for running handlers before leaving them to
#: finish on their daemon threads.
HANDLER_SHUTDOWN_GRACE_S = 2.0
#: Default number of worker threads for incoming requests and notifications.
DEFAULT_HANDLER_WORKERS = 4


class _Default(enum.Enum):
    TIMEOUT = "default timeout"


#: Sentinel: "use the client's default timeout".
DEFAULT_TIMEOUT = _Default.TIMEOUT

Timeout = Union[float, None, _Default]


def mcp_cancellation(request_id: RequestId, reason: str) -> Tuple[str, Dict[str, Any]]:
    """The cancellation notification of MCP peers: ``notifications/cancelled``."""
    return "notifications/cancelled", {"requestId": request_id, "reason": reason}


def lsp_cancellation(request_id: RequestId, reason: str) -> Tuple[str, Dict[str, Any]]:
    """The cancellation notification of LSP-style peers: ``$/cancelRequest``."""
    return "$/cancelRequest", {"id": request_id}


_CANCELLATION_STYLES: Dict[str, CancellationBuilder] = {"mcp": mcp_cancellation, "lsp": lsp_cancellation}


class _Pending:
    """One request in flight (kept small: 100,000 of these may be pending)."""

    __slots__ = ("future", "jumps_queue", "method", "timeout", "timer")

    def __init__(self, future: _Settleable, method: str, timeout: Optional[float]) -> None:
        self.future = future
        self.method = method
        self.timeout = timeout
        self.timer: Optional[TimerHandle] = None
        # Sent from a notification handler: its response must not wait behind
        # the notifications queued after that handler, or the handler would wait for itself.
        self.jumps_queue = False


class _Settleable(Protocol):
    """What settling a pending request needs: a Future, or the _CallWaiter of a call()."""

    def set_result(self, result: Any) -> None: ...

    def set_exception(self, exception: Optional[BaseException]) -> None: ...


class _CallWaiter:
    """The private future of one ``call()``: settled once, awaited only by its caller.

    A :class:`Future` carries a Condition, a waiter list and callbacks for
    anyone who might look; a ``call()`` is looked at by exactly one thread, so
    a lock held from birth and released when the answer is in does: waiting is
    one ``acquire()``.  Settled at most once, by whoever pops the id from the
    pending map, like every future of the client.
    """

    __slots__ = ("_error", "_lock", "_result", "_settled")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._lock.acquire()
        self._settled = False
        self._result: Any = None
        self._error: Optional[BaseException] = None

    def set_result(self, result: Any) -> None:
        if not self._settled:
            self._result = result
            self._settled = True
            self._lock.release()

    def set_exception(self, exception: Optional[BaseException]) -> None:
        if not self._settled:
            self._error = exception
            self._settled = True
            self._lock.release()

    def result(self) -> Any:
        """The result once settled (blocking until then); raises the error it was settled with."""
        if not self._settled:
            self._lock.acquire()
        error = self._error
        if error is not None:
            self._error = None  # no reference cycle through the traceback
            raise error
        return self._result


class _LazyCondition:
    """``Future._condition``, made on first use.

    A Condition (with its RLock and deque) is over half of what a pending
    request costs, and most futures need it only once they settle.  The first
    access stores one in the instance dict (``dict.setdefault`` is atomic, so
    two threads racing get the same one), which then shadows this descriptor.
    """

    def __get__(self, instance: Optional[Future[Any]], owner: type) -> Any:
        if instance is None:
            return self
        return instance.__dict__.setdefault("_condition", threading.Condition())


def _future_fields_are_known() -> bool:
    """True when ``Future.__init__`` sets exactly the fields _RequestFuture sets itself."""
    sample: Future[Any] = Future()
    return set(sample.__dict__) == {"_condition", "_state", "_result", "_exception", "_waiters", "_done_callbacks"}


_LAZY_CONDITION = _future_fields_are_known()
_PENDING_STATE = Future()._state


class _RequestFuture(Future):  # type: ignore[type-arg]
    """A Future whose ``cancel()`` withdraws its request from the client."""

    _condition = _LazyCondition()

    def __init__(self, client: JsonRpcClient, request_id: RequestId) -> None:
        if _LAZY_CONDITION:
            # Future.__init__ minus the Condition (see _LazyCondition).
            self._state = _PENDING_STATE
            self._result = None
            self._exception = None
            self._waiters: List[Any] = []
            self._done_callbacks: List[Any] = []
        else:
            super().__init__()
        self._client = client
        self.request_id = request_id

    def cancel(self) -> bool:
        return self.cancel_with_reason("Cancelled by the client")

    def cancel_with_reason(self, reason: str) -> bool:
        """Cancel, telling the peer ``reason`` in the cancellation notification."""
        if not super().cancel():
            return False
        try:
            # CANCELLED -> CANCELLED_AND_NOTIFIED, as an executor does: this is what
            # wakes concurrent.futures.wait() and as_completed() on this future.
            self.set_running_or_notify_cancel()
        except RuntimeError:
            return True  # a repeated cancel(): the first one did the rest
        self._client._withdraw(self.request_id, reason)
        return True


def _set_result(future: _Settleable, value: Any) -> None:
    try:
        future.set_result(value)
    except InvalidStateError:  # cancelled by the caller in the meantime
        pass


def _set_exception(future: _Settleable, error: BaseException) -> None:
    try:
        future.set_exception(error)
    except InvalidStateError:
        pass


class JsonRpcClient:
    """A JSON-RPC 2.0 client over one transport.

    Thread-safe: every method may be called from any number of threads at once.
    Use it as a context manager, or call :meth:`close` when done.

    Args:
        transport: a started-on-demand :class:`~jsonrpc_threads.transports.base.Transport`
            (``StdioTransport``, ``HttpTransport``); the client owns it and closes it.
        default_timeout: seconds a request may wait for its response when the call
            names no timeout; ``None`` waits forever.
        cancellation: the notification sent to the peer when a request times out
            or its future is cancelled: ``"mcp"`` (``notifications/cancelled``),
            ``"lsp"`` (``$/cancelRequest``), a callable ``(id, reason) -> (method,
            params) | None``, or ``None`` to send nothing (plain JSON-RPC).
        handler_workers: threads for incoming requests and notifications.
        scheduler: the timer scheduler; the process-wide one by default.

    Raises:
        TransportClosed: when the transport cannot be started.
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
        if isinstance(cancellation, str):
            try:
                cancellation = _CANCELLATION_STYLES[cancellation]
            except KeyError:
                raise ValueError(
                    f"unknown cancellation style {cancellation!r} (use 'mcp', 'lsp' or a callable)"
                ) from None
        _check_timeout(default_timeout)
        self._transport = transport
        self.default_timeout = default_timeout
        self._cancellation: Optional[CancellationBuilder] = cancellation
        self._scheduler = scheduler or default_scheduler()
        self._label = describe(transport)
        self._ids = itertools.count(1)
        # _lock guards _pending and _closed_error.
        self._lock = threading.Lock()
        self._pending: Dict[RequestId, _Pending] = {}
        self._closed_error: Optional[TransportClosed] = None
        self._close_started = False
        self._close_done = threading.Event()
        self._request_handlers: Dict[str, RequestHandler] = {}
        self._notification_handlers: Dict[str, NotificationHandler] = {}
        self._workers = WorkerPool(handler_workers, f"jsonrpc-handler[{self._label}]")
        # The optional fast path of transports whose callers can read their own answers.
        self._read_directly: Optional[Callable[[Callable[[], bool], Optional[float]], bool]] = getattr(
            transport, "read_directly", None
        )
        self._resume_reader: Optional[Callable[[], None]] = getattr(transport, "resume_reader", None)
        # The optional fast path of transports that can run a whole exchange on the caller's thread.
        self._exchange_directly: Optional[Callable[[bytes, Sequence[RequestId], Optional[float]], bool]] = getattr(
            transport, "exchange_directly", None
        )
        try:
            transport.start(self)
        except BaseException:
            self._workers.shutdown(0)
            raise

    # -- public API -------------------------------------------------------------

    @property
    def transport(self) -> Transport:
        """The transport this client owns."""
        return self._transport

    @property
    def closed(self) -> bool:
        """True once the client was closed or its transport went away."""
        return self._closed_error is not None

    def request(
        self, method: str, params: messages.Params = None, *, timeout: Timeout = DEFAULT_TIMEOUT
    ) -> Future[Any]:
        """Send a request and return a future for its result.

        The future's ``result()`` is the response's ``result``; it raises the
        peer's error as a :class:`JsonRpcError` (or its subclass for the standard
        codes), :class:`RequestTimeout` when ``timeout`` passes first, or
        :class:`TransportClosed`.  ``future.cancel()`` withdraws the request (and
        sends the configured cancellation notification).  Done-callbacks run on
        the thread that settles the future (often the reader thread): keep them short.

        Args:
            method: the method name.
            params: a mapping or a sequence, or ``None`` to omit ``params``.
            timeout: seconds to wait for the response; ``None`` waits forever;
                by default the client's ``default_timeout``.

        Raises:
            TransportClosed: at once, when the client is closed.
            TypeError: when params cannot be encoded as JSON.
        """
        _, entry = self._start_request(method, params, timeout)
        resume = self._resume_reader
        if resume is not None:
            resume()  # whoever reads must read for this one too
        return cast("Future[Any]", entry.future)

    def call(self, method: str, params: messages.Params = None, *, timeout: Timeout = DEFAULT_TIMEOUT) -> Any:
        """Send a request and block until its result arrives.

        Args: as :meth:`request`.

        Returns:
            The response's ``result``.

        Raises:
            JsonRpcError: the peer's error (a subclass for the standard codes).
            RequestTimeout: no response within ``timeout``; the caller's thread is
                free again, the peer may still be working.
            TransportClosed: the transport went away (or the client is closed).
        """
        exchange = self._exchange_directly
        if exchange is not None:
            # Fast path: the transport carries the request and reads its answer on
            # this thread, bounded by the deadline (no hand-off to a transport thread).
            request_id, entry = self._start_request(method, params, timeout, waiter=True, exchange=exchange)
            return cast(_CallWaiter, entry.future).result()
        read = self._read_directly
        if read is None:
            return self.request(method, params, timeout=timeout).result()
        # Fast path: read the answer on this thread when no other thread is reading
        # (no hand-off from the reader thread); else wait for it as request() does.
        request_id, entry = self._start_request(method, params, timeout, waiter=True)
        pending = self._pending
        if len(pending) > 1:
            # Others wait too: the reader thread reads for all of them (no baton traffic).
            self._resume_reader()  # type: ignore[misc]
            return cast(_CallWaiter, entry.future).result()
        timer = entry.timer
        if read(lambda: request_id not in pending, None if timer is None else timer.deadline) and pending:
            self._resume_reader()  # type: ignore[misc]  # others wait: the reader thread reads for them
        return cast(_CallWaiter, entry.future).result()

    def notify(self, method: str, params: messages.Params = None) -> None:
        """Send a notification (no answer is expected).

        Raises:
            TransportClosed: when the client is closed or the write failed.
            TypeError: when params cannot be encoded as JSON.
        """
        data = messages.encode(messages.notification_message(method, params))
        closed = self._closed_error
        if closed is not None:
            raise closed
        self._transport.send(data)

    def cancel(self, future: Future[Any], reason: str = "Cancelled by the client") -> bool:
        """Withdraw the request behind ``future`` (from :meth:`request`) and tell the peer why.

        Same as ``future.cancel()``, with the ``reason`` sent in the cancellation
        notification (where the client is configured to send one).

        Returns:
            True when the request was still pending and is now cancelled.
        """
        if isinstance(future, _RequestFuture):
            return future.cancel_with_reason(reason)
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

        The handler runs on a worker thread and may call back into this client.
        Its return value is the result; raising a :class:`JsonRpcError` answers
        with that error; any other exception answers -32603 with the exception's
        class name (the traceback is logged, not sent).  Requests for methods
        without a handler are answered -32601.  Registering again replaces the
        handler.
        """
        self._request_handlers[method] = handler

    def on_notification(self, method: str, handler: NotificationHandler) -> None:
        """Call ``handler(params)`` for the peer's notifications of ``method``.

        Notification handlers run one at a time, in arrival order, on a worker
        thread; their exceptions are logged.  A response that arrives after a
        notification is delivered after that notification's handler returned, so
        keep handlers short.  A handler may call this client (its own requests'
        responses do not wait behind the queue).
        """
        self._notification_handlers[method] = handler

    def close(self) -> None:
        """Close the transport and fail every pending request with ``TransportClosed``.

        Bounded in time (the transport's escalation, then
        ``HANDLER_SHUTDOWN_GRACE_S`` for running handlers).  Idempotent and
        thread-safe; a second caller waits for the first to finish.
        """
        with self._lock:
            first = not self._close_started
            self._close_started = True
            if self._closed_error is None:
                self._closed_error = TransportClosed("Client closed")
        if not first:
            if not self._workers.in_worker():
                self._close_done.wait()
            return
        try:
            try:
                self._transport.close()
            finally:
                self._fail_all(self._closed_error)
                self._workers.shutdown(HANDLER_SHUTDOWN_GRACE_S)
        finally:
            self._close_done.set()

    def __enter__(self) -> JsonRpcClient:
        return self

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"{len(self._pending)} pending"
        return f"<JsonRpcClient {self._label} {state}>"

    # -- MessageSink: called by the transport -----------------------------------

    def message_received(self, data: bytes) -> None:
        """Transport callback: one JSON text arrived.  Never raises."""
        try:
            value = messages.decode(data)
        except JsonRpcError:
            logger.warning("%s: skipping a message that is not JSON: %.200r", self._label, data)
            return
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
        for request_id in request_ids:
            with self._lock:
                entry = self._pending.pop(request_id, None)
            if entry is not None:
                self._settle_error(entry, error)

    def has_pending(self) -> bool:
        """Transport callback (optional in the sink protocol): True while some request waits.

        A transport whose callers may read their own answers (``read_directly``)
        lets its reader thread step aside only while this is False.
        """
        return bool(self._pending)

    def transport_closed(self, error: TransportClosed) -> None:
        """Transport callback: the transport is gone; fail everything pending."""
        with self._lock:
            if self._closed_error is None or not self._close_started:
                # The transport's error carries the exit code and stderr.
                self._closed_error = error
        self._fail_all(error)

    # -- internals ----------------------------------------------------------------

    def _resolve_timeout(self, timeout: Timeout) -> Optional[float]:
        if isinstance(timeout, _Default) or timeout is Ellipsis:  # type: ignore[comparison-overlap]
            return self.default_timeout
        _check_timeout(timeout)
        return timeout

    def _start_request(
        self,
        method: str,
        params: messages.Params,
        timeout: Timeout,
        *,
        waiter: bool = False,
        exchange: Optional[Callable[[bytes, Sequence[RequestId], Optional[float]], bool]] = None,
    ) -> Tuple[RequestId, _Pending]:
        """Register, arm the deadline and send one request; its future settles later.

        ``waiter``: the request belongs to a ``call()``, whose future nobody else sees.
        ``exchange``: the transport's ``exchange_directly``, tried before ``send``.
        """
        resolved = self._resolve_timeout(timeout)
        request_id: RequestId
        if waiter:
            request_id = next(self._ids)
            entry = _Pending(_CallWaiter(), method, resolved)
        else:
            request_id, entry = self._register(method, resolved)
        data = messages.encode(messages.request_message(request_id, method, params))
        if self._workers.in_ordered_task():
            entry.jumps_queue = True
        with self._lock:
            if self._closed_error is not None:
                raise self._closed_error
            self._pending[request_id] = entry
        timer = None
        if resolved is not None:
            timer = entry.timer = self._scheduler.call_later(resolved, self._expire, request_id)
        self._send_tracked(data, (request_id,), exchange, None if timer is None else timer.deadline)
        return request_id, entry

    def _send_tracked(
        self,
        data: bytes,
        request_ids: Sequence[RequestId],
        exchange: Optional[Callable[[bytes, Sequence[RequestId], Optional[float]], bool]] = None,
        deadline: Optional[float] = None,
    ) -> None:
        """Send (through ``exchange_directly`` when given and accepted); a failure settles the requests."""
        try:
            if exchange is not None and exchange(data, request_ids, deadline):
                return
            self._transport.send(data, request_ids)
        except JsonRpcError as exc:
            self.requests_failed(request_ids, exc)
        except (OSError, ValueError) as exc:
            self.requests_failed(request_ids, TransportClosed(f"write failed: {exc}"))

    def _register(self, method: str, timeout: Optional[float]) -> Tuple[RequestId, _Pending]:
        request_id = next(self._ids)
        entry = _Pending(_RequestFuture(self, request_id), method, timeout)
        return request_id, entry

    def _dispatch(self, message: Dict[str, Any]) -> None:
        if "method" not in message:
            self._handle_response(message)
        elif "id" in message:
            self._handle_request(message)
        else:
            self._handle_notification(message)

    def _handle_response(self, message: Dict[str, Any]) -> None:
        request_id: RequestId = message.get("id")  # type: ignore[assignment]
        kind = type(request_id)
        if kind is not int and kind is not str:
            if "error" in message:
                logger.warning("%s: error response without a usable id: %.300r", self._label, message)
            else:
                logger.warning("%s: skipping a response with an invalid id: %.300r", self._label, message)
            return
        with self._lock:
            entry = self._pending.pop(request_id, None)
        if entry is None:
            logger.debug("%s: dropping a late or unknown response (id %r)", self._label, request_id)
            return
        timer = entry.timer
        if timer is not None:
            timer.cancel()
        if self._workers.ordered_backlog and not entry.jumps_queue:
            # Notifications received before this response are still being handled.
            try:
                self._workers.submit_ordered(self._settle_response, entry, message)
                return
            except PoolClosed:
                pass
        self._settle_response(entry, message)

    def _settle_response(self, entry: _Pending, message: Dict[str, Any]) -> None:
        if "result" in message:
            if "error" in message:
                _set_exception(entry.future, InvalidRequest("Response has both result and error", data=message))
            else:
                _set_result(entry.future, message["result"])
        elif "error" in message:
            _set_exception(entry.future, error_from_response(message["error"]))
        else:
            _set_exception(entry.future, InvalidRequest("Response has neither result nor error", data=message))

    def _handle_notification(self, message: Dict[str, Any]) -> None:
        method = message.get("method")
        handler = self._notification_handlers.get(method) if isinstance(method, str) else None
        if handler is None:
            logger.debug("%s: no handler for notification %.100r", self._label, method)
            return
        try:
            self._workers.submit_ordered(self._run_notification, handler, method, message.get("params"))
        except PoolClosed:
            logger.debug("%s: notification %r after close dropped", self._label, method)

    def _run_notification(self, handler: NotificationHandler, method: str, params: Any) -> None:
        try:
            handler(params)
        except Exception:
            logger.exception("%s: notification handler for %r failed", self._label, method)

    def _handle_request(self, message: Dict[str, Any]) -> None:
        try:
            request = messages.parse_message(message)
        except InvalidRequest as exc:
            request_id = messages.id_of(message)
            logger.warning("%s: invalid request from peer: %s", self._label, exc)
            self._submit_answer(messages.error_message(request_id, exc))
            return
        assert isinstance(request, messages.Request)
        try:
            self._workers.submit(self._run_request, request)
        except PoolClosed:
            logger.debug("%s: request %r after close dropped", self._label, request.method)

    def _run_request(self, request: messages.Request) -> None:
        handler = self._request_handlers.get(request.method)
        answer: Dict[str, Any]
        if handler is None:
            answer = messages.error_message(request.id, MethodNotFound(f"Method not found: {request.method}"))
        else:
            try:
                answer = messages.response_message(request.id, handler(request.params))
            except JsonRpcError as exc:
                answer = messages.error_message(request.id, exc)
            except Exception as exc:
                logger.exception("%s: handler for %r failed", self._label, request.method)
                error = InternalError(data={"exception": type(exc).__name__})
                answer = messages.error_message(request.id, error)
        self._send_answer(answer)

    def _submit_answer(self, answer: Dict[str, Any]) -> None:
        try:
            self._workers.submit(self._send_answer, answer)
        except PoolClosed:
            pass

    def _send_answer(self, answer: Dict[str, Any]) -> None:
        try:
            data = messages.encode(answer)
        except (TypeError, ValueError) as exc:
            logger.error("%s: handler result for id %r is not JSON: %s", self._label, answer.get("id"), exc)
            error = InternalError("Result is not JSON-serializable", data={"exception": type(exc).__name__})
            data = messages.encode(messages.error_message(answer.get("id"), error))
        try:
            self._transport.send(data)
        except JsonRpcError as exc:
            logger.debug("%s: could not send the answer to id %r: %s", self._label, answer.get("id"), exc)

    def _expire(self, request_id: RequestId) -> None:
        # Runs on the timer thread: keep it short.
        with self._lock:
            entry = self._pending.pop(request_id, None)
        if entry is None:
            return
        _set_exception(entry.future, RequestTimeout(entry.method, request_id, entry.timeout))
        self._send_cancellation(request_id, f"Request timed out after {entry.timeout}s")

    def _withdraw(self, request_id: RequestId, reason: str) -> None:
        """The caller cancelled the future: forget the request and tell the peer."""
        with self._lock:
            entry = self._pending.pop(request_id, None)
        if entry is None:
            return
        if entry.timer is not None:
            entry.timer.cancel()
        self._send_cancellation(request_id, reason)

    def _send_cancellation(self, request_id: RequestId, reason: str) -> None:
        builder = self._cancellation
        if builder is None or self._closed_error is not None:
            return
        notification = builder(request_id, reason)
        if notification is None:
            return
        method, params = notification
        try:
            # Off the caller's (or timer's) thread: a full pipe must not block it.
            self._workers.submit(self._notify_quietly, method, params)
        except PoolClosed:
            pass

    def _notify_quietly(self, method: str, params: Dict[str, Any]) -> None:
        try:
            self.notify(method, params)
        except JsonRpcError as exc:
            logger.debug("%s: could not send %s: %s", self._label, method, exc)

    def _settle_error(self, entry: _Pending, error: BaseException) -> None:
        if entry.timer is not None:
            entry.timer.cancel()
        _set_exception(entry.future, error)

    def _fail_all(self, error: TransportClosed) -> None:
        with self._lock:
            entries = list(self._pending.values())
            self._pending.clear()
        for entry in entries:
            self._settle_error(entry, error)

    def _send_batch(self, items: List[_BatchItem]) -> None:
        payload: List[Dict[str, Any]] = []
        tracked: List[Tuple[RequestId, _Pending]] = []
        for item in items:
            payload.append(item.message)
            if item.entry is not None:
                tracked.append((item.message["id"], item.entry))
        if not payload:
            return
        data = messages.encode(payload)
        with self._lock:
            if self._closed_error is not None:
                error = self._closed_error
            else:
                error = None
                for request_id, entry in tracked:
                    self._pending[request_id] = entry
        if error is not None:
            for _, entry in tracked:
                _set_exception(entry.future, error)
            raise error
        for request_id, entry in tracked:
            if entry.timeout is not None:
                entry.timer = self._scheduler.call_later(entry.timeout, self._expire, request_id)
        self._send_tracked(data, [request_id for request_id, _ in tracked])
        if tracked and self._resume_reader is not None:
            self._resume_reader()


class _BatchItem:
    """One message of a batch, built (and so checked) when it was added."""

    __slots__ = ("entry", "message")

    def __init__(self, message: Dict[str, Any], entry: Optional[_Pending]) -> None:
        self.message = message
        self.entry = entry  # None for a notification


class Batch:
    """Requests and notifications collected to be sent as one JSON array.

    Made by :meth:`JsonRpcClient.batch`; not thread-safe (fill it from one thread).
    """

    def __init__(self, client: JsonRpcClient) -> None:
        self._client = client
        self._items: List[_BatchItem] = []
        self._sent = False

    def request(
        self, method: str, params: messages.Params = None, *, timeout: Timeout = DEFAULT_TIMEOUT
    ) -> Future[Any]:
        """Add a request; its future settles once the batch is sent and answered.

        The timeout counts from the moment the batch is sent.

        Raises:
            RuntimeError: when the batch was already sent.
            TypeError: for ill-typed params.
        """
        self._check_open()
        resolved = self._client._resolve_timeout(timeout)
        request_id, entry = self._client._register(method, resolved)
        self._items.append(_BatchItem(messages.request_message(request_id, method, params), entry))
        return cast("Future[Any]", entry.future)

    def notify(self, method: str, params: messages.Params = None) -> None:
        """Add a notification.

        Raises:
            RuntimeError: when the batch was already sent.
        """
        self._check_open()
        self._items.append(_BatchItem(messages.notification_message(method, params), None))

    def _check_open(self) -> None:
        if self._sent:
            raise RuntimeError("this batch was already sent")

    def __enter__(self) -> Batch:
        return self

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        self._sent = True
        if exc_type is not None:
            for item in self._items:
                if item.entry is not None:
                    cast("Future[Any]", item.entry.future).cancel()
            return
        self._client._send_batch(self._items)


def _check_timeout(timeout: Optional[float]) -> None:
    if timeout is None:
        return
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise TypeError(f"timeout must be a number of seconds or None, not {type(timeout).__name__}")
    if not timeout >= 0:  # also refuses NaN
        raise ValueError(f"timeout must be >= 0, not {timeout!r}")


__all__ = [
    "DEFAULT_TIMEOUT",
    "Batch",
    "JsonRpcClient",
    "lsp_cancellation",
    "mcp_cancellation",
]
