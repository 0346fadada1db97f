"""Beside a client's own requests: the peer's requests and notifications, and the cancellations the client sends.

Theory of operation.  Off the request path: nothing here runs between a
``call()`` and its answer.  The shell (``shell``) hands over what the core
decided about the peer's messages, and this runs it, on workers only
(``jsonrpc_threads.runtime.workers``), never on a reader thread, the timer
thread or under the shell's lock:

- the peer's requests run their handler on the handler pool, and the answer
  is sent back (``answer_request``: one error policy for client and server);
  a request for a method without a handler is answered -32601;
- the peer's notifications run one at a time, in arrival order, on the
  notification lane; when a handler returns, the shell is told
  (``notification_done``), and the core releases the answers that waited for
  it;
- a request the client gave up on (its deadline, ``Future.cancel()``) is
  announced to the peer with the configured cancellation notification, built
  and sent on the handler pool (its builder may be the caller's code).

Every message sent here expects no answer; a failure to send it is logged (the
peer is gone), never raised.

Thread-safety: every method may be called from any thread.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Optional

from .. import messages
from ..cancellation import CancellationBuilder
from ..errors import JsonRpcError, MethodNotFound, RequestId
from ..runtime.dispatch import answer_request, run_notification
from ..runtime.logs import get_logger
from ..runtime.workers import PoolClosed, SerialLane, WorkerPool
from .events import PeerNotification, PeerRequest, Rejected
from .protocol import Connection

logger = get_logger("jsonrpc_threads.client")

RequestHandler = Callable[[Any], Any]
NotificationHandler = Callable[[Any], None]

#: Deadline of a cancellation notification's send (it runs on a handler worker).
CANCELLATION_SEND_TIMEOUT_S = 5.0
#: Deadline of the send of an answer to the peer's request.
ANSWER_SEND_TIMEOUT_S = 30.0


class PeerMessages:
    """The peer's requests and notifications of one client, and its cancellation notices.  Thread-safe.

    Args:
        label: the transport's label, for log lines.
        core: the client's protocol core (only whether it is closed is read here).
        lane: the notification lane.
        workers: the handler pool.
        cancellation: the builder of the cancellation notification, or None.
        send: sends a message that expects no answer within a number of
            seconds (``Shell.send_message``); raises as a transport's ``send``.
        notification_done: ``notification_done(ticket)``: a notification's
            handler returned (``Shell.notification_done``).

    Attributes:
        request_handlers: method -> handler of the peer's requests.
        notification_handlers: method -> handler of the peer's notifications.
    """

    def __init__(
        self,
        label: str,
        core: Connection,
        lane: SerialLane,
        workers: WorkerPool,
        cancellation: Optional[CancellationBuilder],
        send: Callable[[bytes, float], None],
        notification_done: Callable[[int], None],
    ) -> None:
        self._label = label
        self._core = core
        self._lane = lane
        self._workers = workers
        self._cancellation = cancellation
        self._send = send
        self._notification_done = notification_done
        self.request_handlers: Dict[str, RequestHandler] = {}
        self.notification_handlers: Dict[str, NotificationHandler] = {}

    @property
    def sends_cancellations(self) -> bool:
        """True when the client tells its peer about the requests it gives up."""
        return self._cancellation is not None

    def notification(self, event: PeerNotification) -> None:
        """Run the handler of the peer's notification on the lane, after those before it."""
        try:
            self._lane.submit(self._run_notification, self.notification_handlers[event.method], event)
        except PoolClosed:
            logger.debug("%s: notification %r after close dropped", self._label, event.method)

    def request(self, event: PeerRequest) -> None:
        """Run the handler of the peer's request on a handler worker, and send its answer."""
        self.submit(self._run_request, event)

    def rejected(self, event: Rejected) -> None:
        """The peer sent an invalid request: log it, and send the error answer the core made."""
        logger.warning("%s: invalid request from peer: %s", self._label, event.error)
        self.submit(self.send_answer, event.answer)

    def cancelled(self, request_id: RequestId, reason: str) -> None:
        """The client gave up on a request: tell the peer, on a handler worker (the builder may be the caller's)."""
        if self._cancellation is not None and not self._core.closed:
            self.submit(self._notify_cancelled, request_id, reason)

    def submit(self, fn: Callable[..., Any], *args: Any) -> None:
        """Run ``fn(*args)`` on a handler worker; dropped (logged) after close."""
        try:
            self._workers.submit(fn, *args)
        except PoolClosed:
            logger.debug("%s: work after close dropped", self._label)

    def send_answer(self, data: bytes) -> None:
        """Send an answer to the peer (failures are logged: the peer is gone)."""
        try:
            self._send(data, ANSWER_SEND_TIMEOUT_S)
        except (JsonRpcError, OSError, ValueError) as exc:
            logger.debug("%s: could not send an answer: %s", self._label, exc)

    def _run_notification(self, handler: NotificationHandler, event: PeerNotification) -> None:
        """On the lane: run the handler, then release the answers that waited for it."""
        try:
            run_notification(event.method, lambda: handler(event.params), self._label, logger)
        finally:
            self._notification_done(event.ticket)

    def _run_request(self, event: PeerRequest) -> None:
        handler = self.request_handlers.get(event.method)
        if handler is None:
            error = MethodNotFound(f"Method not found: {event.method}")
            answer = messages.encode(messages.error_message(event.request_id, error))
        else:
            params = event.params
            answer = answer_request(event.request_id, event.method, lambda: handler(params), self._label, logger)
        self.send_answer(answer)

    def _notify_cancelled(self, request_id: RequestId, reason: str) -> None:
        builder = self._cancellation
        notification = builder(request_id, reason) if builder is not None else None
        if notification is None:
            return
        method, params = notification
        data = Connection.notification(method, params)
        if self._core.closed:
            return
        try:
            self._send(data, CANCELLATION_SEND_TIMEOUT_S)
        except (JsonRpcError, OSError, ValueError) as exc:
            logger.debug("%s: could not send %s: %s", self._label, method, exc)


__all__ = [
    "ANSWER_SEND_TIMEOUT_S",
    "CANCELLATION_SEND_TIMEOUT_S",
    "NotificationHandler",
    "PeerMessages",
    "RequestHandler",
]
