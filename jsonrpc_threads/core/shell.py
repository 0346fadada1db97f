"""The threaded shell around the protocol core: one lock, and the threads that act on what the core decides.

Theory of operation.  The decisions are the core's
(``Connection``): ids, the pending table,
which answer settles which request, when a deadline passed, which answers
wait for notification handlers.  A ``Shell`` calls the core under its
one lock (``lock``) and acts on the events that come back after letting go of
it: it settles futures and waiters, hands user code to workers, writes
through the transport, and logs.

- Deadlines: the core keeps them; the shell keeps one timer on the process's
  timer thread (``jsonrpc_threads.runtime.scheduler``), at the earliest of them,
  and when it fires ends everything that is due in one call
  (``Connection.expire``), then sets it again.
- User code runs on workers only (``jsonrpc_threads.runtime.workers``), never on a
  reader thread, the timer thread or under the lock: the peer's requests on the
  handler pool, its notifications one at a time on the notification lane (each
  reported done to the core, which then releases the answers that waited for
  it), and the done-callbacks of futures the library settles on the callback
  pool.  The peer's messages, and the cancellation notification sent when a
  request is given up, are ``peer_messages``'s (off the request path); the
  close sequence is ``teardown``'s.
- A streamed request's results are pushed to its token, a stream's
  ``Answers`` (``streams``), as they come; ``end_stream`` forgets the request
  once its consumer took the last.
- A blocking ``call()`` waits on a ``CallWaiter``;
  the futures of ``request()`` are settled inside
  ``library_settling``, which collects their
  done-callbacks for the callback workers instead of running them here.

The shell never calls up into the client: the client calls it, and the
transport reaches it through the client's sink methods.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Deque, List, Mapping, Optional, Sequence, Tuple

from .. import messages
from ..cancellation import CancellationBuilder
from ..errors import JsonRpcError, RequestId, RequestTimeout, TransportClosed
from ..runtime.logs import get_logger
from ..runtime.scheduler import Scheduler, TimerHandle
from ..runtime.settling import CallbackRunner, CallWaiter, library_settling
from ..runtime.workers import SerialLane, WorkerPool
from ..transports.base import Transport, capabilities
from .events import Answered, Event, Failed, Held, Ignored, PeerNotification, PeerRequest, Rejected, Streamed, TimedOut
from .peer_messages import PeerMessages
from .protocol import Connection, fresh_error

logger = get_logger("jsonrpc_threads.client")

_NO_TIMER = float("inf")


class Shell:
    """The threads of one client around its protocol core.  Thread-safe; see the module docstring.

    Args:
        transport: the client's transport (sends go through it).
        label: the transport's label, for log lines and thread names.
        cancellation: the builder of the cancellation notification, or None.
        handler_workers: the handler pool's (and the callback pool's) size.
        scheduler: the timer scheduler.
    """

    def __init__(
        self,
        transport: Transport,
        label: str,
        cancellation: Optional[CancellationBuilder],
        handler_workers: int,
        scheduler: Scheduler,
    ) -> None:
        self.label = label
        self._transport = transport
        self.capabilities = capabilities(transport)
        self._scheduler = scheduler
        # lock guards core (every call but request() and notification()), _timer and _timer_at.
        self.lock = threading.Lock()
        self.core = Connection()
        self._timer: Optional[TimerHandle] = None  # set for the core's earliest deadline
        self._timer_at = _NO_TIMER
        self.lane = SerialLane(f"jsonrpc-notify[{label}]")
        self.workers = WorkerPool(handler_workers, f"jsonrpc-handler[{label}]")
        self.callbacks = WorkerPool(handler_workers, f"jsonrpc-callback[{label}]")
        self._run_callbacks = CallbackRunner(self.callbacks, label)  # done-callbacks of settled futures
        self.observer: Optional[Any] = None  # sent(data), received(data), closed(error): see observe.py
        self.peer = PeerMessages(
            label, self.core, self.lane, self.workers, cancellation, self.send_message, self.notification_done
        )
        self.on_cancel = self.withdraw  # one bound method for every future (not one each)

    # -- requests ---------------------------------------------------------------------------------------

    def register(
        self,
        request_id: RequestId,
        method: str,
        timeout: Optional[float],
        deadline: Optional[float],
        token: Any,
        streamed: bool = False,
    ) -> None:
        """Put a request in the core (before its bytes are sent); ``deadline`` None: the caller keeps it.

        ``streamed``: answered by many responses (``Connection.register``),
        each pushed to ``token`` (``token.push(result)``).

        Raises:
            TransportClosed: (a fresh one) when the client is closed.
        """
        immediate = self.lane.in_lane()  # sent from a notification handler: its answer never waits behind it
        with self.lock:
            self.core.register(request_id, method, timeout, deadline, token, immediate, streamed)
            if deadline is not None and deadline < self._timer_at:
                self._arm_locked(deadline)

    def register_batch(self, entries: Sequence[Tuple[RequestId, str, Optional[float], Optional[float], Any]]) -> None:
        """``register`` for each of ``(id, method, timeout, deadline, token)``, all or none.

        Raises:
            TransportClosed: (a fresh one) when the client is closed; none was registered.
        """
        immediate = self.lane.in_lane()
        with self.lock:
            for request_id, method, timeout, deadline, token in entries:
                self.core.register(
                    request_id, method, timeout=timeout, deadline=deadline, token=token, immediate=immediate
                )
                if deadline is not None and deadline < self._timer_at:
                    self._arm_locked(deadline)

    def send_batch(self, items: Sequence[Tuple[bytes, Any, str, Optional[float]]], default: Optional[float]) -> None:
        """Register the requests of a batch, all or none, and send it as one array.

        ``items``: ``(data, future or None for a notification, method, timeout)``;
        ``default``: the deadline of a batch of notifications only.

        Raises:
            TransportClosed: when the client is closed (its requests' futures fail with it).
        """
        data = b"[" + b",".join(item[0] for item in items) + b"]"
        now = time.monotonic()
        entries = [
            (future.request_id, method, timeout, None if timeout is None else now + timeout, future)
            for _, future, method, timeout in items
            if future is not None
        ]
        if not entries:
            closed = self.core.closed_error()
            if closed is not None:
                raise closed
            if self.observer is not None:
                self.observer.sent(data)
            self._transport.send(data, (), deadline=None if default is None else now + default)
            return
        try:
            self.register_batch(entries)
        except TransportClosed as exc:  # closed: none of them was registered
            for index, entry in enumerate(entries):
                entry[4].settle_exception(exc if index == 0 else fresh_error(exc))
            raise
        deadlines = [entry[3] for entry in entries]
        latest = None if None in deadlines else max(d for d in deadlines if d is not None)
        self.send(data, [entry[0] for entry in entries], latest)

    def send(
        self,
        data: bytes,
        request_ids: Sequence[RequestId],
        deadline: Optional[float],
        headers: Optional[Mapping[str, str]] = None,
    ) -> None:
        """Hand requests to the transport; a failure to send ends them (never raises)."""
        if self.observer is not None:
            self.observer.sent(data)
        self._transmit(data, request_ids, deadline, headers)

    def _transmit(
        self,
        data: bytes,
        request_ids: Sequence[RequestId],
        deadline: Optional[float],
        headers: Optional[Mapping[str, str]],
    ) -> None:
        try:
            if headers is None:
                self._transport.send(data, request_ids, deadline=deadline)
            else:
                self._transport.send(data, request_ids, deadline=deadline, headers=headers)
        except JsonRpcError as exc:
            self.failed(request_ids, exc)
        except (OSError, ValueError) as exc:
            self.failed(request_ids, TransportClosed(f"write failed: {exc}"))

    def drive(
        self,
        data: bytes,
        request_id: RequestId,
        waiter: CallWaiter,
        deadline: Optional[float],
        headers: Optional[Mapping[str, str]],
    ) -> None:
        """Send a blocking call's request, carried on the caller's thread where the transport can."""
        if self.observer is not None:
            self.observer.sent(data)  # before: the answer may come in while the transport drives
        drive = self.capabilities.drive_call
        if drive is not None:
            try:
                if headers is None:
                    driven = drive(data, request_id, waiter.answered, deadline)
                else:
                    driven = drive(data, request_id, waiter.answered, deadline, headers)
            except JsonRpcError as exc:
                self.failed((request_id,), exc)
                return
            if driven:
                return
        self._transmit(data, (request_id,), deadline, headers)  # declined: nothing went out yet

    def time_out(self, request_id: RequestId) -> None:
        """A blocking call's deadline passed (on its caller's thread): end it, unless it ended meanwhile."""
        with self.lock:
            events = self.core.time_out(request_id)
        self.dispatch(events)

    def withdraw(self, request_id: RequestId, reason: str) -> None:
        """A future's ``cancel()``: forget the request and tell the peer."""
        with self.lock:
            withdrawn = self.core.withdraw(request_id)
        if withdrawn:
            self._abandon([request_id])
            self.peer.cancelled(request_id, reason)

    def end_stream(self, request_id: RequestId, final: bool = True) -> None:
        """A streamed request's consumer is done (``final``: it took the last result): forget it, stop its reading."""
        with self.lock:
            ended = self.core.end_stream(request_id, final)
        if ended:
            self._abandon([request_id])

    def interrupted(self, request_id: RequestId, target: Any, error: BaseException) -> None:
        """The caller's thread was interrupted mid-request: settle it with ``error`` if still pending."""
        with self.lock:
            withdrawn = self.core.withdraw(request_id)
        if withdrawn:
            target.settle_exception(error)
            self._abandon([request_id])
            self.peer.cancelled(request_id, f"Interrupted: {type(error).__name__}")

    # -- what the transport reports (through the client's sink methods) -------------------------------

    def received(self, data: bytes) -> Sequence[RequestId]:
        """One JSON text arrived: the ids of the responses it carried (a stream's answer but its last: none).

        Never raises, never runs user code.
        """
        if self.observer is not None:
            self.observer.received(data)
        try:
            value = messages.decode(data)
        except JsonRpcError:
            logger.warning("%s: skipping a message that is not JSON: %.200r", self.label, data)
            return ()
        with self.lock:
            events = self.core.receive_value(value, data)
        self.dispatch(events)
        if type(value) is dict:  # the usual message, without one more call
            request_id: RequestId = value.get("id")  # type: ignore[assignment]
            kind = type(request_id)
            if "method" in value or (kind is not int and kind is not str):
                return ()
            return () if events and type(events[0]) is Streamed else (request_id,)
        streaming = {event.request_id for event in events if isinstance(event, Streamed)}
        return [request_id for request_id in self.core.response_ids(value) if request_id not in streaming]

    def received_chunk(self, chunk: Deque[bytes]) -> None:
        """The texts one read brought, taken from the left of ``chunk``: one round trip of the lock for all.

        Should this thread be interrupted (``KeyboardInterrupt`` in a caller
        that reads), the texts already taken are handled first, and what is
        still in ``chunk`` was not looked at.
        """
        values: List[Tuple[Any, bytes]] = []
        try:
            while chunk:
                data = chunk.popleft()
                if self.observer is not None:
                    self.observer.received(data)
                try:
                    values.append((messages.decode(data), data))
                except JsonRpcError:
                    logger.warning("%s: skipping a message that is not JSON: %.200r", self.label, data)
        finally:
            events: List[Event] = []
            with self.lock:
                for value, data in values:
                    self.core.receive_value(value, data, events)
            self.dispatch(events)

    def failed(self, request_ids: Sequence[RequestId], error: JsonRpcError) -> None:
        """These requests failed in transit."""
        with self.lock:
            events = self.core.fail(request_ids, error)
        self.dispatch(events)

    def end(self, error: TransportClosed, lost: bool = False) -> None:
        """The end (close, or the transport's): refuse new requests, fail the pending ones, drop the timer.

        ``lost``: the transport went away by itself; a request that waits for
        notifications received before it fails once their handlers return
        (its deadline still holds, so the timer stays while any is left).
        """
        with self.lock:
            events = self.core.close(error, behind_notifications=lost)
            if self._timer is not None and not len(self.core):
                self._timer.cancel()
                self._timer, self._timer_at = None, _NO_TIMER
        self.dispatch(events)

    def send_message(self, data: bytes, timeout: float) -> None:
        """Send a message that expects no answer (ours to the peer's request, a cancellation) within ``timeout``.

        Raises:
            JsonRpcError, OSError, ValueError: as the transport's ``send``.
        """
        if self.observer is not None:
            self.observer.sent(data)
        self._transport.send(data, (), deadline=time.monotonic() + timeout)

    def notification_done(self, ticket: int) -> None:
        """The handler of the peer's notification ``ticket`` returned: release the answers that waited for it."""
        with self.lock:
            events = self.core.notification_done(ticket)
        self.dispatch(events)

    # -- acting on the core's events --------------------------------------------------------------------

    def dispatch(self, events: List[Event]) -> None:
        """Act on what the core decided: settle, hand work to workers, log.  Never runs user code.

        Should this thread be interrupted part way (or a settling fail), the
        requests not settled yet are settled before the exception goes on:
        none is left ended in the core and unsettled.
        """
        if not events:
            return
        if len(events) == 1:
            event = events[0]
            if type(event) is Answered and type(event.token) is CallWaiter:  # a call()'s answer: nothing more
                event.token.settle_result(event.result)
                return
        timed_out: List[TimedOut] = []
        done = 0
        try:
            with library_settling(self._run_callbacks):
                for event in events:
                    self._act(event, timed_out)
                    done += 1
        except BaseException as exc:
            if isinstance(exc, Exception):
                logger.exception("%s: settling a response failed", self.label)
            with library_settling(self._run_callbacks):
                for event in events[done:]:
                    if isinstance(event, (Answered, Failed, TimedOut)):
                        try:
                            self._act(event, timed_out)  # settling twice is a no-op
                        except Exception:  # one failure must not leave the rest unsettled
                            logger.exception("%s: settling a response failed", self.label)
            raise
        finally:
            if timed_out:
                self._tell_peer_timed_out(timed_out)

    def _act(self, event: Event, timed_out: List[TimedOut]) -> None:
        kind = type(event)
        if kind is Answered:
            event.token.settle_result(event.result)  # type: ignore[attr-defined]
        elif kind is Failed:
            event.token.settle_exception(event.error)  # type: ignore[attr-defined]
        elif kind is TimedOut:
            assert isinstance(event, TimedOut)
            timed_out.append(event)
            hint = self._timeout_hint()  # what the transport noticed: the same for the whole batch
            for request_id, token, method, timeout in zip(
                event.request_ids, event.tokens, event.methods, event.timeouts
            ):
                if type(token) is CallWaiter:
                    token.settle_exception(RequestTimeout(method, request_id, timeout, hint))
                else:  # a future: its error is made when first asked for (no object a timeout in a burst)
                    token.settle_timeout(method, request_id, timeout, hint)
        elif kind is Streamed:
            event.token.push(event.result)  # type: ignore[attr-defined]
        elif kind is PeerNotification:
            assert isinstance(event, PeerNotification)
            self.peer.notification(event)
        elif kind is PeerRequest:
            assert isinstance(event, PeerRequest)
            self.peer.request(event)
        elif kind is Rejected:
            assert isinstance(event, Rejected)
            self.peer.rejected(event)
        elif kind is Held:
            if type(event.token) is CallWaiter:  # type: ignore[attr-defined]
                event.token.answer_held()  # type: ignore[attr-defined]
        elif kind is Ignored:
            assert isinstance(event, Ignored)
            if event.warning:
                logger.warning("%s: skipping %s: %.300r", self.label, event.reason, event.detail)
            else:
                logger.debug("%s: dropping %s (%.100r)", self.label, event.reason, event.detail)

    def _arm_locked(self, deadline: float) -> None:
        """With lock held: the one timer of this client, at ``deadline``."""
        if self._timer is not None:
            self._timer.cancel()
        self._timer = self._scheduler.call_at(deadline, self._on_timer)
        self._timer_at = deadline

    def _on_timer(self) -> None:
        """The timer thread: end every request that is due, at once; set the timer again.  Never blocks."""
        now = time.monotonic()
        with self.lock:
            if self._timer is not None:
                self._timer.cancel()  # this one, or an earlier one set meanwhile: set again below
            self._timer, self._timer_at = None, _NO_TIMER
            events = self.core.expire(now)
            following = self.core.next_deadline()
            if following is not None:
                self._arm_locked(following)
        self.dispatch(events)

    def _timeout_hint(self) -> str:
        hint = self.capabilities.timeout_hint
        if hint is None:
            return ""
        try:
            return hint()
        except Exception:  # a clue is not worth a failure
            logger.debug("%s: the transport's timeout hint failed", self.label, exc_info=True)
            return ""

    def _tell_peer_timed_out(self, timed_out: List[TimedOut]) -> None:
        """Requests that timed out together: the transport told once, the peer each (on a worker)."""
        for event in timed_out:
            self._abandon(event.request_ids)
            if self.peer.sends_cancellations:
                for request_id, timeout in zip(event.request_ids, event.timeouts):
                    self.peer.cancelled(request_id, f"Request timed out after {timeout}s")

    def _abandon(self, request_ids: List[RequestId]) -> None:
        """Let the transport drop what it still holds of these requests (queued frames, open streams)."""
        abandon = self.capabilities.abandon
        if abandon is not None:
            try:
                abandon(request_ids)
            except Exception:
                logger.exception("%s: the transport failed to abandon %d request(s)", self.label, len(request_ids))


__all__ = ["Shell"]
