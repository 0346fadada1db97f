"""Prompt turns: which ``session/update`` belongs to which call, delivered in order.

Theory of operation.  A ``Turn`` is one call that collects a session's
updates while it runs: ``session/prompt`` (its result carries them) or
``session/load`` (it returns the replayed history).  The ``TurnBoard``
holds at most one turn per session.  ``session/update`` notifications arrive on
the JSON-RPC client's notification worker, one at a time, in the order the
agent sent them; ``TurnBoard.route`` appends each to its session's turn and
queues it for the turn's ``on_update`` (or, outside a turn, for the
client-wide callback).  ``route`` runs no user code, so it returns at once;
and because the JSON-RPC client delivers a response only after the handlers
of the notifications that came before it returned, every update the agent
sent before answering ``session/prompt`` has been collected, and queued, when
the answer comes.

The queue is drained by one thread of the board's own (``jsonrpc-acp-updates``,
started when there is something to deliver, gone when there is nothing left),
one callback at a time, in arrival order.  A turn counts what was queued for
it and what was delivered; ``TurnBoard.delivered`` waits, within the turn's
deadline, until the two meet.  So a prompt returns only once every update of
its turn has been delivered; when its deadline passes first, it says so (the
caller raises ``RequestTimeout``), and the updates still queued stay the
turn's: they go to its ``on_update``, in order, never to another callback.
A turn started from inside a callback (on the delivery thread itself) has its
own updates delivered by its waiting caller, ahead of the rest of the queue,
so it never waits for the thread it runs on.

Callbacks run on that delivery thread, never under the board's lock; what
they raise is logged, and the next update is delivered all the same.  A slow
callback holds up the updates of every session behind it: keep it short, or
hand the work to a thread of your own.  ``TurnBoard.close`` drops what is
still queued and wakes every waiter.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from concurrent.futures import Future
from typing import Any, Callable, Deque, Dict, List, Optional, Tuple

from ..deadlines import Deadline
from ..errors import TransportClosed

logger = logging.getLogger(__name__)

#: ``on_update(update)``: one update of a turn (the ``update`` object of the notification).
UpdateCallback = Callable[[Dict[str, Any]], None]
#: ``on_update(session_id, update)``: an update that came outside any turn.
SessionUpdateCallback = Callable[[str, Dict[str, Any]], None]

#: The longest one wait for a turn's deliveries sleeps before it looks again
#: (a turn with no deadline waits in slices of this).
DELIVERY_WAIT_SLICE_S = 1.0
#: How long a turn given up on before its answer keeps the session's updates (``TurnBoard.linger``):
#: the agent answers a cancelled prompt at once; one that does not frees the session after this.
LINGER_S = 10.0
#: How long ``TurnBoard.close`` waits for the delivery thread to finish the
#: callback it is running (what was queued behind it is dropped).
DELIVERY_CLOSE_WAIT_S = 2.0

# One delivery: the callback, its arguments, and the turn it counts for (None outside a turn).
_Delivery = Tuple[Callable[..., None], Tuple[Any, ...], Optional["Turn"]]


class Turn:
    """One call that collects its session's updates (a prompt turn, or a load's replay)."""

    __slots__ = ("_delivered", "_queued", "_updates", "cancelled", "deadline", "method", "on_update", "session_id")

    def __init__(self, session_id: str, method: str, deadline: Deadline, on_update: Optional[UpdateCallback]) -> None:
        self.session_id = session_id
        self.method = method
        self.deadline = deadline
        self.on_update = on_update
        self.cancelled = False
        self._updates: List[Dict[str, Any]] = []
        self._queued = 0  # updates queued for on_update
        self._delivered = 0  # of those, how many on_update has had

    def __repr__(self) -> str:
        return f"<Turn {self.method} {self.session_id!r} {len(self._updates)} updates>"


class TurnBoard:
    """The running turn of each session, and the routing and delivery of updates.  Thread-safe.

    Args:
        on_update: ``callback(session_id, update)`` for updates outside a turn;
            without it they are logged at debug level.
    """

    def __init__(self, on_update: Optional[SessionUpdateCallback] = None) -> None:
        self._on_update = on_update
        # _lock guards _turns, _lingering, every turn's fields but its constants, _queue, _worker and _closed;
        # _progress (on _lock) is notified whenever a turn's update was delivered, and at close.
        self._lock = threading.Lock()
        self._progress = threading.Condition(self._lock)
        self._turns: Dict[str, Turn] = {}
        self._lingering: Dict[str, Turn] = {}  # turns given up on, until the agent answers them
        self._queue: Deque[_Delivery] = deque()
        self._worker: Optional[threading.Thread] = None
        self._closed = False

    def begin(
        self, session_id: str, method: str, deadline: Deadline, on_update: Optional[UpdateCallback] = None
    ) -> Turn:
        """Start collecting the updates of ``session_id``.

        Raises:
            RuntimeError: the session already has a turn running (one prompt at a time).
        """
        turn = Turn(session_id, method, deadline, on_update)
        with self._lock:
            running = self._turns.get(session_id)
            if running is not None:
                raise RuntimeError(f"session {session_id!r} already has a {running.method} running")
            self._turns[session_id] = turn
        return turn

    def end(self, turn: Turn) -> List[Dict[str, Any]]:
        """Stop collecting; returns the turn's updates in arrival order.

        Updates already queued for the turn's ``on_update`` are still delivered to it.
        """
        with self._lock:
            if self._turns.get(turn.session_id) is turn:
                del self._turns[turn.session_id]
            return list(turn._updates)

    def linger(self, turn: Turn, answer: Future[Any]) -> None:
        """``turn`` was given up on before the agent answered: it keeps its session's updates until ``answer`` settles.

        The agent goes on with the turn until it sees ``session/cancel``; what it
        sends meanwhile is still that turn's (to its ``on_update``), never the next
        turn's: the agent answers the cancelled prompt before it starts another,
        and the client routes every update that came before an answer before it
        settles the answer.  ``answer`` settles with the agent's answer, or with its
        own timeout (``LINGER_S`` past the turn's deadline), or when the client closes.
        """
        with self._lock:
            if self._turns.get(turn.session_id) is turn:
                del self._turns[turn.session_id]
            if self._closed:
                return
            self._lingering[turn.session_id] = turn
        answer.add_done_callback(lambda _: self._stop_lingering(turn))

    def _stop_lingering(self, turn: Turn) -> None:
        # On the thread that settled the answer (library code only: no user code runs here).
        with self._lock:
            if self._lingering.get(turn.session_id) is turn:
                del self._lingering[turn.session_id]

    def delivered(self, turn: Turn, deadline: Deadline) -> bool:
        """Wait until every update queued for ``turn`` has been delivered to its ``on_update``.

        Returns:
            True once they all were; False when ``deadline`` passed first (the
            rest stay queued for the turn's ``on_update``).

        Raises:
            TransportClosed: the board was closed with updates of the turn undelivered.
        """
        if threading.current_thread() is self._worker:
            return self._deliver_inline(turn, deadline)
        with self._lock:
            while turn._delivered < turn._queued:
                if self._closed:
                    raise TransportClosed("AcpClient closed before the turn's updates were delivered")
                left = deadline.remaining()
                if left == 0.0:
                    return False
                self._progress.wait(DELIVERY_WAIT_SLICE_S if left is None else min(left, DELIVERY_WAIT_SLICE_S))
            return True

    def cancel(self, session_id: str) -> bool:
        """Mark the session's running turn cancelled; False when none runs."""
        with self._lock:
            turn = self._turns.get(session_id)
            if turn is None:
                return False
            turn.cancelled = True
            return True

    def is_cancelled(self, session_id: str) -> bool:
        """True while the session's running turn was cancelled, or one given up on still lingers."""
        with self._lock:
            turn = self._turns.get(session_id)
            return session_id in self._lingering or (turn is not None and turn.cancelled)

    def deadline_for(self, session_id: str) -> Optional[Deadline]:
        """The deadline of the session's running turn, or ``None`` when none runs."""
        with self._lock:
            turn = self._turns.get(session_id)
            return turn.deadline if turn is not None else None

    def route(self, params: Any) -> None:
        """The ``session/update`` handler: collect the update and queue its delivery (runs no user code)."""
        if not isinstance(params, dict):
            logger.warning("skipping a session/update without params: %.200r", params)
            return
        session_id = params.get("sessionId")
        update = params.get("update")
        if not isinstance(session_id, str) or not isinstance(update, dict):
            logger.warning("skipping a session/update without a sessionId or an update: %.200r", params)
            return
        start: Optional[threading.Thread] = None
        with self._lock:
            turn = self._lingering.get(session_id) or self._turns.get(session_id)
            if turn is not None:
                turn._updates.append(update)
            if self._closed:
                return
            if turn is not None and turn.on_update is not None:
                turn._queued += 1
                self._queue.append((turn.on_update, (update,), turn))
            elif turn is None and self._on_update is not None:
                self._queue.append((self._on_update, (session_id, update), None))
            elif turn is None:
                logger.debug("session %r: an update outside a turn: %.200r", session_id, update)
                return
            else:
                return
            if self._worker is None:
                start = self._worker = threading.Thread(target=self._drain, name="jsonrpc-acp-updates", daemon=True)
        if start is not None:
            start.start()

    def close(self) -> None:
        """Drop the deliveries still queued and wake every waiter; idempotent.

        Waits up to ``DELIVERY_CLOSE_WAIT_S`` for the callback running now to return.
        """
        with self._lock:
            self._closed = True
            self._lingering.clear()
            self._queue.clear()
            self._progress.notify_all()
            worker = self._worker
        if worker is not None and worker is not threading.current_thread():
            worker.join(DELIVERY_CLOSE_WAIT_S)

    # -- the delivery thread --------------------------------------------------------------------

    def _drain(self) -> None:
        """The delivery thread: run the queued callbacks one at a time, in order; end when none is left."""
        while True:
            with self._lock:
                if not self._queue:
                    self._worker = None
                    return
                callback, args, turn = self._queue.popleft()
            _deliver(callback, *args)
            if turn is not None:
                with self._lock:
                    turn._delivered += 1
                    self._progress.notify_all()

    def _deliver_inline(self, turn: Turn, deadline: Deadline) -> bool:
        """``delivered`` on the delivery thread itself (a turn started from a callback): deliver its updates here."""
        while True:
            with self._lock:
                if turn._delivered >= turn._queued:
                    return True
                if self._closed:
                    raise TransportClosed("AcpClient closed before the turn's updates were delivered")
                if deadline.expired:
                    return False
                item = next((queued for queued in self._queue if queued[2] is turn), None)
                if item is None:  # cannot happen: what was queued and not delivered is in the queue
                    return True
                self._queue.remove(item)
            _deliver(item[0], *item[1])
            with self._lock:
                turn._delivered += 1


def _deliver(callback: Callable[..., None], *args: Any) -> None:
    try:
        callback(*args)
    except Exception:
        logger.exception("on_update raised; the next update is delivered all the same")


__all__ = [
    "DELIVERY_CLOSE_WAIT_S",
    "DELIVERY_WAIT_SLICE_S",
    "LINGER_S",
    "SessionUpdateCallback",
    "Turn",
    "TurnBoard",
    "UpdateCallback",
]
