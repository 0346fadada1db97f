"""The pending map, and the one path by which a request is settled.

Theory of operation.  A request in flight is a :class:`Pending` entry in a
:class:`PendingTable`, keyed by its id, added (under the table's one lock)
before its bytes are written.  Every way a request can end goes through the
same step: the entry is removed from the map under the lock, and whoever
removed it settles its future, once, after letting go of the lock.  Whoever
finds the id missing does nothing.  The ways are:

- :meth:`PendingTable.deliver`: its response arrived (:meth:`PendingTable.deliver_many`
  for the responses one read brought, under one lock round trip);
- :meth:`PendingTable.expire`: its deadline passed (the thread blocked in
  ``call()``; :meth:`PendingTable.expire_many` for a batch the timer thread
  found due together);
- :meth:`PendingTable.withdraw`: the caller cancelled its future;
- :meth:`PendingTable.fail`: the transport could not carry it (a write
  failure, an HTTP error for that request, a message too large);
- :meth:`PendingTable.close`: the transport is gone or the client closed.

Ordered delivery.  Notifications are handled one at a time, in arrival order,
on the client's serial lane, and a response that arrives while notifications
received before it are still queued or running waits for them: it stays in
the map with its answer attached (``entry.answer``), and a marker queued on
the lane behind those notifications delivers it.  Until then it is still
pending for everyone else: its deadline, ``close()`` and transport loss all
settle it, with the answer it already has (a deadline never passes with an
answer in hand unused), so nothing is stranded.  A response to a request that
was sent from the lane itself (a notification handler calling the client) is
delivered at once: it must never wait behind the handler that waits for it.

Errors are never shared: every future gets its own exception object, and a
closed table raises a fresh :class:`TransportClosed` each time.

Nothing here runs user code: settling a future may only queue its
done-callbacks (see :mod:`._futures`).  Thread-safety: every method may be
called from any thread.
"""

from __future__ import annotations

import copy
import threading

from ._logs import get_logger
from ._settling import deferred_callbacks, settle_exception, settle_result
from ._workers import PoolClosed, SerialLane
from .errors import InvalidRequest, JsonRpcError, RequestTimeout, TransportClosed, error_from_response

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

    from ._settling import Settleable
    from .errors import RequestId

logger = get_logger(__name__)

#: What an answer that arrived does (PendingTable._answer_outcome): its request is
#: settled now, or the answer waits behind the lane's notifications, or it is dropped.
_SETTLE_NOW = 0
_WAIT_FOR_LANE = 1
_DROP = 2


class Pending:
    """One request in flight (kept small: 100,000 of these may be pending)."""

    __slots__ = ("answer", "future", "immediate", "method", "timeout")

    def __init__(self, future: Settleable, method: str, timeout: Optional[float], immediate: bool) -> None:
        self.future = future
        self.method = method
        self.timeout = timeout
        # The response, once it arrived but waits for notifications queued before it.
        self.answer: Optional[Dict[str, Any]] = None
        # Sent from the notification lane: its answer must not wait behind the lane.
        self.immediate = immediate


def fresh_error(error: JsonRpcError) -> JsonRpcError:
    """A copy of ``error`` without traceback, context or cause: one raise, one object."""
    try:
        duplicate = copy.copy(error)
    except Exception:  # an exotic subclass that cannot be copied: build a plain one
        duplicate = (
            TransportClosed(error.message)
            if isinstance(error, TransportClosed)
            else JsonRpcError(error.code, error.message, error.data)
        )
    duplicate.__traceback__ = None
    duplicate.__cause__ = None
    duplicate.__context__ = None
    return duplicate


def _finish(entry: Pending, answer: Optional[Dict[str, Any]], error: Optional[BaseException]) -> None:
    """Settle a removed entry: with its answer (a response message), or with ``error``."""
    future = entry.future
    if answer is None:
        settle_exception(future, error if error is not None else TransportClosed("Transport closed"))
    elif "result" in answer:
        if "error" in answer:
            settle_exception(future, InvalidRequest("Response has both result and error", data=answer))
        else:
            settle_result(future, answer["result"])
    elif "error" in answer:
        settle_exception(future, error_from_response(answer["error"]))
    else:
        settle_exception(future, InvalidRequest("Response has neither result nor error", data=answer))


class PendingTable:
    """Requests in flight, by id; see the module docstring.

    Args:
        label: the transport's label, for log lines.
        lane: the client's notification lane (for ordered delivery).
    """

    def __init__(self, label: str, lane: SerialLane, timeout_hint: Optional[Callable[[], str]] = None) -> None:
        self._label = label
        self._lane = lane
        self._timeout_hint = timeout_hint
        # _lock guards _entries and _closed (and entries' answer).
        self._lock = threading.Lock()
        self._entries: Dict[RequestId, Pending] = {}
        self._closed: Optional[TransportClosed] = None  # the template of what a closed table raises

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, request_id: object) -> bool:
        return request_id in self._entries

    @property
    def closed(self) -> bool:
        """True once :meth:`close` was called."""
        return self._closed is not None

    def closed_error(self) -> Optional[TransportClosed]:
        """A fresh copy of the error a closed table fails requests with, or None while open."""
        closed = self._closed
        return None if closed is None else fresh_error(closed)  # type: ignore[return-value]

    def add(self, request_id: RequestId, entry: Pending) -> None:
        """Register one request.

        Raises:
            TransportClosed: (a fresh one) when the table is closed.
        """
        with self._lock:
            closed = self._closed
            if closed is None:
                self._entries[request_id] = entry
                return
        raise fresh_error(closed)

    def add_many(self, entries: Sequence[Tuple[RequestId, Pending]]) -> None:
        """Register several requests at once (a batch); all or none.

        Raises:
            TransportClosed: (a fresh one) when the table is closed.
        """
        with self._lock:
            closed = self._closed
            if closed is None:
                self._entries.update(entries)
                return
        raise fresh_error(closed)

    # -- the ways a request ends ---------------------------------------------------

    def deliver(self, message: Dict[str, Any]) -> None:
        """A response arrived: settle its request, after the notifications received before it."""
        request_id = message.get("id")
        kind = type(request_id)
        if kind is not int and kind is not str:
            self._log_invalid_id(message)
            return
        with self._lock:
            entry = self._entries.get(request_id)  # type: ignore[arg-type]
            outcome = self._answer_outcome(entry, self._lane.busy())
            if outcome == _SETTLE_NOW:
                del self._entries[request_id]  # type: ignore[arg-type]
            elif outcome == _WAIT_FOR_LANE:
                entry.answer = message  # type: ignore[union-attr]
        if outcome == _SETTLE_NOW:
            _finish(entry, message, None)  # type: ignore[arg-type]
        elif outcome == _WAIT_FOR_LANE:
            self._deliver_behind_lane(request_id)  # type: ignore[arg-type]
        else:
            logger.debug("%s: dropping a late or unknown response (id %r)", self._label, request_id)

    def deliver_many(self, messages: Sequence[Dict[str, Any]]) -> None:
        """Several responses arrived together (one read): :meth:`deliver` for each, in order.

        One lock round trip for all of them; each is then settled as
        :meth:`deliver` would have settled it.  Should the settling thread be
        interrupted part way (``KeyboardInterrupt`` in a caller that reads), the
        requests not settled yet are settled, and the answers that wait for
        earlier notifications are queued behind them, before the interrupt goes
        on: none is left removed from the map and unsettled, nor waiting for a
        marker that never comes.  A settling that fails is logged; the rest
        are settled all the same, and the first failure is raised after them.
        """
        entries = self._entries
        # Parallel lists, no tuple a response: a burst's garbage is what the collector counts.
        answered: List[Pending] = []
        answers: List[Dict[str, Any]] = []
        queued: List[RequestId] = []
        dropped: List[Any] = []  # ids with no request waiting (late, unknown, a second answer)
        invalid: List[Dict[str, Any]] = []
        with self._lock:
            # One look at the lane for the whole chunk: a notification submitted meanwhile arrived
            # after these answers and does not hold them back; and should the lane catch up part
            # way, the answers after one that waits still wait behind it (arrival order).
            held_back = self._lane.busy()
            for message in messages:
                request_id = message.get("id")
                kind = type(request_id)
                if kind is not int and kind is not str:
                    invalid.append(message)
                    continue
                entry = entries.get(request_id)  # type: ignore[arg-type]
                outcome = self._answer_outcome(entry, held_back)
                if outcome == _SETTLE_NOW:
                    del entries[request_id]  # type: ignore[arg-type]
                    answered.append(entry)  # type: ignore[arg-type]
                    answers.append(message)
                elif outcome == _WAIT_FOR_LANE:
                    entry.answer = message  # type: ignore[union-attr]
                    queued.append(request_id)  # type: ignore[arg-type]
                else:
                    dropped.append(request_id)
        settled = 0
        try:
            with deferred_callbacks():  # the done-callbacks of request() futures go over as one batch
                try:
                    for entry in answered:
                        _finish(entry, answers[settled], None)
                        settled += 1
                finally:
                    # Only after an interrupt (or a failure) is anything left here, from the
                    # one that was being settled on; settling again is a no-op.
                    for index in range(settled, len(answered)):
                        try:
                            _finish(answered[index], answers[index], None)
                        except Exception:  # one failure must not leave the rest unsettled
                            logger.exception("%s: settling a response failed", self._label)
        finally:
            for request_id in queued:  # even after an interrupt: no answer waits without its marker
                self._deliver_behind_lane(request_id)
        for message in invalid:
            self._log_invalid_id(message)
        for request_id in dropped:
            logger.debug("%s: dropping a late or unknown response (id %r)", self._label, request_id)

    @staticmethod
    def _answer_outcome(entry: Optional[Pending], held_back: bool) -> int:
        """Under the lock: what an answer to ``entry``'s request does (the one rule of ordered delivery).

        ``held_back``: a notification received before the answer is still
        queued or running in the lane (for a chunk of answers: as the lane was
        when the chunk was looked at).  :data:`_DROP` when nobody waits for the answer
        (late or unknown: ``entry`` is None) or its request already has an
        answer waiting (a second answer); :data:`_SETTLE_NOW` when the request
        was sent from the lane, or nothing holds the answer back;
        :data:`_WAIT_FOR_LANE` otherwise.
        """
        if entry is None or entry.answer is not None:
            return _DROP
        if entry.immediate or not held_back:
            return _SETTLE_NOW
        return _WAIT_FOR_LANE

    def _log_invalid_id(self, message: Dict[str, Any]) -> None:
        if "error" in message:
            logger.warning("%s: error response without a usable id: %.300r", self._label, message)
        else:
            logger.warning("%s: skipping a response with an invalid id: %.300r", self._label, message)

    def _deliver_behind_lane(self, request_id: RequestId) -> None:
        """Queue the marker that delivers an answer once the notifications before it ran."""
        try:
            self._lane.submit(self._deliver_queued, request_id)
        except PoolClosed:  # closing: settle it now, with its answer
            self._deliver_queued(request_id)

    def _deliver_queued(self, request_id: RequestId) -> None:
        """On the lane, behind the notifications that came before the answer: settle with it."""
        with self._lock:
            entry = self._entries.pop(request_id, None)
        if entry is not None:
            _finish(entry, entry.answer, None)

    def expire(self, request_id: RequestId) -> Optional[Pending]:
        """The request's deadline passed.

        Settles it with :class:`RequestTimeout`, or with its answer when one
        arrived and waits for earlier notifications.

        Returns:
            The entry when it timed out (the caller tells the peer), else None.
        """
        with self._lock:
            entry = self._entries.pop(request_id, None)
        if entry is None:
            return None
        if entry.answer is not None:
            _finish(entry, entry.answer, None)
            return None
        _finish(entry, None, RequestTimeout(entry.method, request_id, entry.timeout, self._hint()))
        return entry

    def expire_many(self, request_ids: Sequence[RequestId]) -> Tuple[List[RequestId], List[Pending]]:
        """The deadlines of several requests passed together: :meth:`expire` for each, one lock round trip.

        Returns:
            The ids that timed out and their entries, in the order given (two
            lists, no object per request: a burst's garbage is what the cycle
            collector counts).
        """
        with self._lock:
            pop = self._entries.pop
            removed = [pop(request_id, None) for request_id in request_ids]
        hint: Optional[str] = None
        timed_out_ids: List[RequestId] = []
        timed_out: List[Pending] = []
        for request_id, entry in zip(request_ids, removed):
            if entry is None:
                continue
            try:
                if entry.answer is not None:
                    _finish(entry, entry.answer, None)
                    continue
                if hint is None:
                    hint = self._hint()  # what the transport noticed: the same for the whole batch
                _finish(entry, None, RequestTimeout(entry.method, request_id, entry.timeout, hint))
            except Exception:  # one failure must not leave the rest of the batch unsettled
                logger.exception("%s: settling timed-out request %r failed", self._label, request_id)
                continue
            timed_out_ids.append(request_id)
            timed_out.append(entry)
        return timed_out_ids, timed_out

    def _hint(self) -> str:
        hint = self._timeout_hint
        if hint is None:
            return ""
        try:
            return hint()
        except Exception:  # a clue is not worth a failure
            logger.debug("%s: the transport's timeout hint failed", self._label, exc_info=True)
            return ""

    def withdraw(self, request_id: RequestId) -> Optional[Pending]:
        """The caller cancelled the request's future (already settled): forget it.

        Returns:
            The entry when it was still pending (the caller tells the peer), else None.
        """
        with self._lock:
            return self._entries.pop(request_id, None)

    def interrupt(self, request_id: RequestId, error: BaseException) -> Optional[Pending]:
        """The thread waiting in ``call()`` was interrupted: settle with ``error``, if still pending."""
        with self._lock:
            entry = self._entries.pop(request_id, None)
        if entry is not None:
            _finish(entry, None, error)
        return entry

    def fail(self, request_ids: Sequence[RequestId], error: JsonRpcError) -> None:
        """These requests failed in transit: each gets its own copy of ``error``."""
        failed: List[Pending] = []
        with self._lock:
            for request_id in request_ids:
                entry = self._entries.pop(request_id, None)
                if entry is not None:
                    failed.append(entry)
        first = True
        with deferred_callbacks():
            for entry in failed:
                if entry.answer is not None:  # it was answered after all
                    _finish(entry, entry.answer, None)
                else:
                    _finish(entry, None, error if first else fresh_error(error))
                    first = False

    def close(self, error: TransportClosed) -> None:
        """Refuse new requests from now on, and fail every pending one with a copy of ``error``.

        A request whose answer already arrived is settled with that answer.
        The first close's error is the one later requests fail with (the
        transport's own, with the exit code and stderr, when it ended first).
        """
        with self._lock:
            if self._closed is None:
                self._closed = error
            entries = list(self._entries.values())
            self._entries.clear()
        with deferred_callbacks():
            for entry in entries:
                if entry.answer is not None:
                    _finish(entry, entry.answer, None)
                else:
                    _finish(entry, None, fresh_error(error))


__all__ = ["Pending", "PendingTable", "fresh_error"]
