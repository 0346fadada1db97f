"""Prompt turns: which ``session/update`` belongs to which call, delivered in order.

Theory of operation.  A ``Turn`` is one call that collects a session's
updates while it runs: ``session/prompt`` (its result carries them) or
``session/load`` (it returns the replayed history).  The ``TurnBoard``
holds at most one turn per session.  ``session/update`` notifications arrive on
the JSON-RPC client's notification worker, one at a time, in the order the
agent sent them; ``TurnBoard.route`` appends each to its session's turn and
hands it to the turn's ``on_update``, or, outside a turn, to the client-wide
callback.  Because the JSON-RPC client delivers a response only after the
handlers of the notifications that came before it returned, every update the
agent sent before answering ``session/prompt`` has been collected and
delivered when the call returns.

Callbacks run on that notification worker, never under the board's lock; what
they raise is logged, and the next update is delivered all the same.  A slow
callback holds up the updates of every session behind it: keep it short, or
hand the work to a thread of your own.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Callable, Dict, List, Optional

from ..deadlines import Deadline

logger = logging.getLogger(__name__)

#: ``on_update(update)``: one update of a turn (the ``update`` object of the notification).
UpdateCallback = Callable[[Dict[str, Any]], None]
#: ``on_update(session_id, update)``: an update that came outside any turn.
SessionUpdateCallback = Callable[[str, Dict[str, Any]], None]


class Turn:
    """One call that collects its session's updates (a prompt turn, or a load's replay)."""

    __slots__ = ("_updates", "cancelled", "deadline", "method", "on_update", "session_id")

    def __init__(self, session_id: str, method: str, deadline: Deadline, on_update: Optional[UpdateCallback]) -> None:
        self.session_id = session_id
        self.method = method
        self.deadline = deadline
        self.on_update = on_update
        self.cancelled = False
        self._updates: List[Dict[str, Any]] = []

    def __repr__(self) -> str:
        return f"<Turn {self.method} {self.session_id!r} {len(self._updates)} updates>"


class TurnBoard:
    """The running turn of each session, and the routing of updates.  Thread-safe.

    Args:
        on_update: ``callback(session_id, update)`` for updates outside a turn;
            without it they are logged at debug level.
    """

    def __init__(self, on_update: Optional[SessionUpdateCallback] = None) -> None:
        self._on_update = on_update
        # _lock guards _turns and every turn's _updates and cancelled.
        self._lock = threading.Lock()
        self._turns: Dict[str, Turn] = {}

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
        """Stop collecting; returns the turn's updates in arrival order."""
        with self._lock:
            if self._turns.get(turn.session_id) is turn:
                del self._turns[turn.session_id]
            return list(turn._updates)

    def cancel(self, session_id: str) -> bool:
        """Mark the session's running turn cancelled; False when none runs."""
        with self._lock:
            turn = self._turns.get(session_id)
            if turn is None:
                return False
            turn.cancelled = True
            return True

    def is_cancelled(self, session_id: str) -> bool:
        """True while the session's running turn was cancelled."""
        with self._lock:
            turn = self._turns.get(session_id)
            return turn is not None and turn.cancelled

    def deadline_for(self, session_id: str) -> Optional[Deadline]:
        """The deadline of the session's running turn, or ``None`` when none runs."""
        with self._lock:
            turn = self._turns.get(session_id)
            return turn.deadline if turn is not None else None

    def route(self, params: Any) -> None:
        """The ``session/update`` handler: collect the update and deliver it (notification worker)."""
        if not isinstance(params, dict):
            logger.warning("skipping a session/update without params: %.200r", params)
            return
        session_id = params.get("sessionId")
        update = params.get("update")
        if not isinstance(session_id, str) or not isinstance(update, dict):
            logger.warning("skipping a session/update without a sessionId or an update: %.200r", params)
            return
        with self._lock:
            turn = self._turns.get(session_id)
            if turn is not None:
                turn._updates.append(update)
        if turn is not None:
            if turn.on_update is not None:
                _deliver(turn.on_update, update)
        elif self._on_update is not None:
            _deliver(self._on_update, session_id, update)
        else:
            logger.debug("session %r: an update outside a turn: %.200r", session_id, update)


def _deliver(callback: Callable[..., None], *args: Any) -> None:
    try:
        callback(*args)
    except Exception:
        logger.exception("on_update raised; the next update is delivered all the same")


__all__ = ["SessionUpdateCallback", "Turn", "TurnBoard", "UpdateCallback"]
