"""The protocol core of a JSON-RPC client: requests in, bytes out; bytes in, events out.  No I/O, no threads.

Theory of operation.  A ``Connection`` owns everything about a request's
life that is a decision rather than an action: its id, its entry in the
pending table, its deadline, and which way it ends.  It never writes, reads,
waits or starts a thread, and it takes no lock: whoever drives it (the threaded
shell, ``jsonrpc_threads.core.client.JsonRpcClient``, or a test) calls it
from one thread at a time, and acts on what it returns.

- ``Connection.request`` takes an id and encodes a request (it touches no
  state but the id counter, so it may run anywhere); ``Connection.register``
  then puts the request in the pending table, *before* its bytes are sent.
- ``Connection.receive`` takes the bytes of one message (or batch) and
  returns events (``jsonrpc_threads.core.events``): a request answered or
  failed, the peer's requests and notifications, and what was skipped and why.
- ``Connection.expire`` returns the requests whose deadlines passed by a
  given time, all of them at once; ``Connection.next_deadline`` says when
  to call it next.  A deadline later than every one before it (the usual case:
  the same timeout, again and again) is appended to a queue; any other goes on
  a heap; the earliest is at the head of one of them.  The entry of a request
  that ended is left where it is until it surfaces (both are rebuilt when such
  entries are more than half of them), so ending a request costs nothing here.
- ``Connection.withdraw``, ``Connection.fail`` and
  ``Connection.close`` end requests for the other reasons: the caller
  cancelled, the transport could not carry them, the transport is gone.
- A streamed request (``register(..., streamed=True)``) gets many responses:
  each result is a ``Streamed`` event (never held) and it stays pending until
  an error, its deadline, ``withdraw`` or ``end_stream`` (the final one was taken).

Every way a request ends removes it from the table, and only the step that
removed it reports it: a request is settled exactly once, and an answer that
comes late (or twice, or for an id never sent) is an ``Ignored``.

Ordering.  The shell runs the handlers of the peer's notifications one at a
time, in arrival order, and tells the core when each is done
(``Connection.notification_done``).  A response that arrives while a
notification received before it is still being handled is held (``Held``,
which settles nothing) and reported answered once those notifications are
done, so a progress callback has always run before the call it reports on
returns.  A held request is still pending: its deadline, ``close()`` and a
failure end it with the answer it already has.  So when the transport is lost
by itself (``close(error, behind_notifications=True)``): a request that was
waiting fails once the notifications received before the loss are handled.
Only notifications of methods the shell handles
(``Connection.handle_notifications``) hold answers back; a request marked
``immediate`` (sent from inside a notification handler) is never held.

Errors say whose fault they are: a malformed answer fails its request with
``InvalidRequest``, the peer's error object becomes the matching
``RemoteError``, and a closed connection raises a fresh ``TransportClosed``
each time: no two futures ever share an exception object.
"""

from __future__ import annotations

import heapq
import itertools
from collections import deque
from typing import Any, Deque, Dict, Iterable, List, Optional, Sequence, Set, Tuple, Union

from .. import messages
from ..errors import InvalidRequest, JsonRpcError, RequestId, TransportClosed, error_from_response
from .events import (
    Answered,
    Event,
    Failed,
    Held,
    Ignored,
    PeerNotification,
    PeerRequest,
    Rejected,
    Streamed,
    TimedOut,
    fresh_error,
)

#: The deadlines are rebuilt once they hold more than this many entries and
#: more than twice as many as there are requests pending.
COMPACT_MIN_ENTRIES = 1024


class _Pending:
    """One request in flight (kept small: 100,000 of these may be pending)."""

    __slots__ = ("answer", "failure", "immediate", "method", "streamed", "timeout", "token", "waits_for")

    def __init__(self, token: Any, method: str, timeout: Optional[float], immediate: bool, streamed: bool) -> None:
        self.token = token
        self.method = method
        self.timeout = timeout
        self.immediate = immediate or streamed  # a stream's answers are never held
        self.streamed = streamed
        self.answer: Optional[Dict[str, Any]] = None  # a held answer
        self.failure: Optional[JsonRpcError] = None  # a held end: the connection was lost
        self.waits_for = 0  # the notification it is held behind


class Connection:
    """The state of one JSON-RPC client connection; see the module docstring.

    Not thread-safe: the caller serializes every method but ``request``,
    ``notification`` and the read-only properties.
    """

    def __init__(self) -> None:
        self._ids = itertools.count(1)
        self._pending: Dict[RequestId, _Pending] = {}
        # Deadlines, (when, id): those later than all before them in a queue, the others on a heap.
        # The entries of requests that ended linger until they surface, or a compaction.
        self._in_order: Deque[Tuple[float, RequestId]] = deque()
        self._deadlines: List[Tuple[float, RequestId]] = []
        self._closed: Optional[TransportClosed] = None  # the template of what a closed connection raises
        self._handled: Set[str] = set()  # notification methods whose handlers hold answers back
        self._received = 0  # the ticket of the last handled notification received
        self._done = 0  # every handled notification up to this ticket is done
        self._held: Deque[RequestId] = deque()  # answers held back, in arrival order
        self._failed_streams: Set[RequestId] = set()  # streamed requests failed in transit (see end_stream)
        self.errors = 0  # requests answered with an error, failed in transit, or lost at close
        self.timeouts = 0  # requests whose deadline passed
        self.cancels = 0  # requests the caller withdrew

    # -- state ----------------------------------------------------------------------------------

    def __len__(self) -> int:
        """How many requests are pending."""
        return len(self._pending)

    def __contains__(self, request_id: object) -> bool:
        return request_id in self._pending

    @property
    def closed(self) -> bool:
        """True once ``close`` was called."""
        return self._closed is not None

    @property
    def requests_made(self) -> int:
        """How many ids ``request`` has handed out."""
        return int(repr(self._ids)[6:-1]) - 1  # "count(N)": read without taking one

    @property
    def deadline_entries(self) -> int:
        """How many deadline entries are kept (those of requests that ended, until they surface or are compacted)."""
        return len(self._in_order) + len(self._deadlines)

    def closed_error(self) -> Optional[TransportClosed]:
        """A fresh copy of the error a closed connection fails requests with; None while open."""
        closed = self._closed
        return None if closed is None else fresh_error(closed)  # type: ignore[return-value]

    def token(self, request_id: RequestId) -> Any:
        """The token a pending request was registered with, or None."""
        entry = self._pending.get(request_id)
        return None if entry is None else entry.token

    # -- outgoing -----------------------------------------------------------------------------------

    def request(self, method: str, params: messages.Params = None) -> Tuple[int, bytes]:
        """A new id and the encoded request.  Touches no state but the id counter (thread-safe).

        Raises:
            TypeError, ValueError: when the method or the params cannot be encoded.
        """
        request_id = next(self._ids)
        return request_id, messages.encode_request(request_id, method, params)

    @staticmethod
    def notification(method: str, params: messages.Params = None) -> bytes:
        """An encoded notification (no state: thread-safe).

        Raises:
            TypeError, ValueError: when the method or the params cannot be encoded.
        """
        return messages.encode(messages.notification_message(method, params))

    def register(
        self,
        request_id: RequestId,
        method: str,
        timeout: Optional[float] = None,
        deadline: Optional[float] = None,
        token: Any = None,
        immediate: bool = False,
        streamed: bool = False,
    ) -> None:
        """Put a request in the pending table (before its bytes are sent).

        Args:
            request_id: its id (from ``request``).
            method: its method, for the timeout's error.
            timeout: the timeout it was given, for the timeout's error.
            deadline: when ``expire`` ends it (a ``time.monotonic``
                time), or None when the caller keeps the deadline itself
                (``time_out``) or there is none.
            token: what the caller settles (its future), handed back in events.
            immediate: its answer is never held behind notifications.
            streamed: answered by many responses (see the module docstring).

        Raises:
            TransportClosed: (a fresh one) after ``close``.
        """
        if self._closed is not None:
            raise fresh_error(self._closed)
        self._pending[request_id] = _Pending(token, method, timeout, immediate, streamed)
        if deadline is not None:
            in_order = self._in_order
            if not in_order or deadline >= in_order[-1][0]:
                in_order.append((deadline, request_id))
            else:
                heapq.heappush(self._deadlines, (deadline, request_id))
            kept = len(in_order) + len(self._deadlines)
            if kept > COMPACT_MIN_ENTRIES and kept > 2 * len(self._pending):
                self._compact()

    def handle_notifications(self, method: str) -> None:
        """From now on, answers wait for the handling of the notifications of ``method`` received before them."""
        self._handled.add(method)

    # -- incoming -----------------------------------------------------------------------------------

    def receive(self, data: Union[bytes, str]) -> List[Event]:
        """One JSON text (a message or a batch) arrived: what it means.

        Returns:
            The events, in the order of the messages: ``Answered``
            and ``Failed`` for requests it settles (none for one
            held back), ``PeerRequest``,
            ``PeerNotification``, ``Rejected``
            (an invalid request, and the answer it gets) and
            ``Ignored``.
        """
        try:
            value = messages.decode(data)
        except JsonRpcError:
            return [Ignored("a message that is not JSON", data, warning=True)]
        return self.receive_value(value, data)

    def receive_value(
        self, value: Any, data: Union[bytes, str] = b"", events: Optional[List[Event]] = None
    ) -> List[Event]:
        """``receive`` for a text decoded already; ``data`` is the text, for what is skipped.

        ``events``: a list to append the events to (the events of several texts
        in one list), returned; a new one by default.
        """
        if events is None:
            events = []
        if type(value) is dict:
            if "method" in value:
                self._message(value, events)
            else:
                self._answer(value, events)  # the usual message, one call less
        elif type(value) is list and value:
            for item in value:
                if type(item) is dict:
                    self._message(item, events)
                else:
                    events.append(Ignored("a batch item that is not an object", item, warning=True))
        else:
            events.append(Ignored("a message that is not JSON-RPC", data, warning=True))
        return events

    def _message(self, message: Dict[str, Any], events: List[Event]) -> None:
        if "method" not in message:
            self._answer(message, events)
            return
        if "id" in message:
            try:
                request = messages.parse_message(message)
            except InvalidRequest as exc:
                answer = messages.encode(messages.error_message(messages.id_of(message), exc))
                events.append(Rejected(exc, answer))
                return
            assert isinstance(request, messages.Request)
            events.append(PeerRequest(request.id, request.method, request.params))
            return
        method = message["method"]
        if not isinstance(method, str) or method not in self._handled:
            events.append(Ignored("a notification nobody handles", method, warning=False))
            return
        self._received += 1
        events.append(PeerNotification(method, message.get("params"), self._received))

    def _answer(self, message: Dict[str, Any], events: List[Event]) -> None:
        request_id = message.get("id")
        kind = type(request_id)
        if kind is not int and kind is not str:
            reason = "an error response without a usable id" if "error" in message else "a response with an invalid id"
            events.append(Ignored(reason, message, warning=True))
            return
        entry = self._pending.get(request_id)  # type: ignore[arg-type]
        if entry is None or _is_held(entry):
            events.append(Ignored("a late or unknown response", request_id, warning=False))
            return
        if entry.streamed and "result" in message and "error" not in message:  # one more answer; still pending
            events.append(Streamed(request_id, entry.token, message["result"]))  # type: ignore[arg-type]
            return
        if entry.immediate or self._done >= self._received:
            del self._pending[request_id]  # type: ignore[arg-type]
            entry.answer = message
            events.append(self._settled(request_id, entry))  # type: ignore[arg-type]
            return
        entry.answer = message
        entry.waits_for = self._received
        self._held.append(request_id)  # type: ignore[arg-type]
        events.append(Held(request_id, entry.token))  # type: ignore[arg-type]

    def response_ids(self, value: Any) -> Sequence[RequestId]:
        """The valid ids (``int``, ``str``) of the responses in a decoded message or batch (pure: pending or not)."""
        if type(value) is dict:
            if "method" in value:
                return ()
            request_id: RequestId = value.get("id")  # type: ignore[assignment]
            kind = type(request_id)
            return (request_id,) if kind is int or kind is str else ()
        if type(value) is list:
            return [
                item["id"]
                for item in value
                if type(item) is dict and "method" not in item and messages.is_valid_id(item.get("id"))
            ]
        return ()

    def notification_done(self, ticket: int) -> List[Event]:
        """The handler of the notification ``ticket`` returned (tickets end in order): the answers it held, settled."""
        self._done = max(self._done, ticket)
        events: List[Event] = []
        held = self._held
        while held:
            entry = self._pending.get(held[0])
            if entry is not None and _is_held(entry) and entry.waits_for > self._done:
                break
            request_id = held.popleft()
            if entry is not None and _is_held(entry):
                del self._pending[request_id]
                events.append(self._settled(request_id, entry))
        return events

    # -- the other ways a request ends -------------------------------------------------------------

    def next_deadline(self) -> Optional[float]:
        """When the earliest deadline of a pending request passes (None for none)."""
        heap, in_order, pending = self._deadlines, self._in_order, self._pending
        while heap and heap[0][1] not in pending:
            heapq.heappop(heap)  # the request ended before its deadline
        while in_order and in_order[0][1] not in pending:
            in_order.popleft()
        if heap and (not in_order or heap[0][0] < in_order[0][0]):
            return heap[0][0]
        return in_order[0][0] if in_order else None

    def expire(self, now: float) -> List[Event]:
        """Every request whose deadline is at or before ``now``, ended at once.

        Returns:
            One ``TimedOut`` for all of them, in deadline order
            (none when none timed out); before it, an
            ``Answered`` (or ``Failed``) for each
            whose answer was in and held (a deadline never passes with an
            answer in hand unused).
        """
        heap, in_order = self._deadlines, self._in_order
        due: List[RequestId] = []
        while True:
            if heap and heap[0][0] <= now and (not in_order or heap[0][0] < in_order[0][0]):
                due.append(heapq.heappop(heap)[1])
            elif in_order and in_order[0][0] <= now:
                due.append(in_order.popleft()[1])
            else:
                return self._time_out(due)

    def time_out(self, request_id: RequestId) -> List[Event]:
        """The deadline of one request passed (the caller kept it): as ``expire`` for it alone."""
        return self._time_out([request_id])

    def _time_out(self, request_ids: List[RequestId]) -> List[Event]:
        """End these requests at their deadline (those still pending); parallel lists, no object a request."""
        pending = self._pending
        events: List[Event] = []
        ids: List[RequestId] = []
        tokens: List[Any] = []
        methods: List[str] = []
        timeouts: List[Optional[float]] = []
        for request_id in request_ids:
            entry = pending.pop(request_id, None)
            if entry is None:
                continue
            if _is_held(entry):
                events.append(self._settled(request_id, entry))
                continue
            ids.append(request_id)
            tokens.append(entry.token)
            methods.append(entry.method)
            timeouts.append(entry.timeout)
        if ids:
            self.timeouts += len(ids)
            events.append(TimedOut(ids, tokens, methods, timeouts))
        return events

    def withdraw(self, request_id: RequestId) -> bool:
        """The caller gave the request up (cancelled its future, or was interrupted): forget it.

        Returns:
            True when it was pending (the caller settles its token and tells the peer).
        """
        if self._pending.pop(request_id, None) is None:
            return False
        self.cancels += 1
        return True

    def end_stream(self, request_id: RequestId, final: bool = True) -> bool:
        """A streamed request's consumer is done (``final``: it took the last result): forget it.  True if pending.

        A stream that failed in transit after its final result (the peer ended
        its answer before the consumer took that result) is no error.
        """
        if self._pending.pop(request_id, None) is not None:
            return True
        if request_id in self._failed_streams:
            self._failed_streams.discard(request_id)
            self.errors -= 1 if final else 0
        return False

    def fail(self, request_ids: Iterable[RequestId], error: JsonRpcError) -> List[Event]:
        """These requests could not be carried: a ``Failed`` each (its own copy of ``error``).

        One whose answer was in and held is settled with that answer instead.
        """
        events: List[Event] = []
        first = True
        for request_id in request_ids:
            entry = self._pending.pop(request_id, None)
            if entry is None:
                continue
            if _is_held(entry):
                events.append(self._settled(request_id, entry))
                continue
            self.errors += 1
            if entry.streamed:  # unless its consumer finds its final result among those before (end_stream)
                self._failed_streams.add(request_id)
            events.append(Failed(request_id, entry.token, error if first else fresh_error(error)))
            first = False
        return events

    def close(self, error: TransportClosed, behind_notifications: bool = False) -> List[Event]:
        """Refuse new requests from now on (with the first close's ``error``), and end every pending one.

        ``behind_notifications``: the transport was lost (not closed); a request
        waiting for notifications received before the loss fails once they are
        handled (a ``Held`` now), unless its deadline, ``close`` or ``fail`` comes
        first.  Returns a ``Failed`` for each (a copy of ``error``, or its held answer), or a ``Held``.
        """
        if self._closed is None:
            self._closed = error
        if behind_notifications and self._done < self._received:
            return self._lose_behind_notifications(error)
        entries = list(self._pending.items())
        self._pending.clear()
        self._deadlines.clear()
        self._in_order.clear()
        self._held.clear()
        events: List[Event] = []
        for request_id, entry in entries:
            if _is_held(entry):
                events.append(self._settled(request_id, entry))
            else:
                self.errors += 1
                events.append(Failed(request_id, entry.token, fresh_error(error)))
        return events

    def _lose_behind_notifications(self, error: TransportClosed) -> List[Event]:
        """Hold the failure of every request not held yet behind the notifications received so far."""
        events: List[Event] = []
        for request_id, entry in list(self._pending.items()):
            if _is_held(entry):
                continue
            if entry.immediate:  # its notification handler waits for it: fail it now
                del self._pending[request_id]
                self.errors += 1
                events.append(Failed(request_id, entry.token, fresh_error(error)))
                continue
            entry.failure = fresh_error(error)
            entry.waits_for = self._received
            self._held.append(request_id)
            events.append(Held(request_id, entry.token))
        return events

    # -- internals -----------------------------------------------------------------------------------

    def _settled(self, request_id: RequestId, entry: _Pending) -> Event:
        """The event of a request that ends with what it holds: its answer (a response message), or its failure."""
        if entry.failure is not None:
            self.errors += 1
            return Failed(request_id, entry.token, entry.failure)
        answer: Dict[str, Any] = entry.answer  # type: ignore[assignment]
        if "result" in answer:
            if "error" not in answer:
                return Answered(request_id, entry.token, answer["result"])
            error: JsonRpcError = InvalidRequest("Response has both result and error", data=answer)
        elif "error" in answer:
            error = error_from_response(answer["error"])
        else:
            error = InvalidRequest("Response has neither result nor error", data=answer)
        self.errors += 1
        return Failed(request_id, entry.token, error)

    def _compact(self) -> None:
        pending = self._pending
        self._deadlines = [entry for entry in self._deadlines if entry[1] in pending]
        heapq.heapify(self._deadlines)
        self._in_order = deque(entry for entry in self._in_order if entry[1] in pending)


def _is_held(entry: _Pending) -> bool:
    """True when the request's end is in hand (an answer, or the loss of the connection) and only waits."""
    return entry.answer is not None or entry.failure is not None


__all__ = ["COMPACT_MIN_ENTRIES", "Connection", "fresh_error"]
