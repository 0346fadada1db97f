"""``session/request_permission``: the agent asks, the caller's ``on_permission`` decides.

Theory of operation.  Each request is answered by ``PermissionDesk.answer``
on one of the JSON-RPC client's handler workers.  Without ``on_permission``
every request is refused at once: with its ``reject_once`` (else
``reject_always``) option, or ``cancelled`` when none is offered.  With it, the
callback runs on a thread of its own (``acp-permission``), because the answer
may have to go before the callback returns: ACP requires a client that cancels
a turn to answer that session's pending permission requests ``cancelled``.  So
the worker waits for whichever comes first:

- the callback's decision: an ``optionId`` the request offered (``selected``);
  ``None``, an option it did not offer, or an exception: ``cancelled`` (the
  last two logged);
- ``PermissionDesk.cancel`` for the session (``AcpClient.cancel``, a prompt
  that timed out, a turn that ended), or ``PermissionDesk.close``:
  ``cancelled``;
- the deadline of the session's running turn (else ``fallback_wait``):
  ``cancelled``, logged.

A request that arrives while its session's turn is cancelled is answered
``cancelled`` at once.  A decision that comes after the answer went is dropped
(logged at debug level).  No callback runs under the desk's lock.
"""

from __future__ import annotations

import itertools
import logging
import threading
from typing import Any, Callable, Dict, Optional, Set

from ..deadlines import Deadline
from ..errors import InvalidParams
from .turns import TurnBoard
from .wire import CANCELLED, option_ids, reject_option, selected

logger = logging.getLogger(__name__)

#: ``on_permission(params) -> optionId``, or ``None`` for ``cancelled``.
PermissionCallback = Callable[[Dict[str, Any]], Optional[str]]

_numbers = itertools.count(1)


class _Pending:
    """One permission request waiting for its answer: the first outcome wins."""

    __slots__ = ("_done", "_outcome", "session_id")

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self._done = threading.Event()
        self._outcome: Optional[Dict[str, Any]] = None

    def settle(self, outcome: Dict[str, Any]) -> bool:
        """Give the answer; False when one was given already.  Called under the desk's lock."""
        if self._outcome is not None:
            return False
        self._outcome = outcome
        self._done.set()
        return True

    def wait(self, timeout: Optional[float]) -> bool:
        return self._done.wait(timeout)

    @property
    def outcome(self) -> Dict[str, Any]:
        return self._outcome if self._outcome is not None else CANCELLED


class PermissionDesk:
    """Answers the agent's permission requests.  Thread-safe.

    Args:
        on_permission: the caller's decision, or ``None`` to refuse every request.
        turns: the running turns (for their deadlines and whether they were cancelled).
        fallback_wait: seconds a decision may take outside a turn (``None``: no bound).
    """

    def __init__(
        self, on_permission: Optional[PermissionCallback], turns: TurnBoard, fallback_wait: Optional[float]
    ) -> None:
        if on_permission is not None and not callable(on_permission):
            raise TypeError(f"on_permission must be callable, not {type(on_permission).__name__}")
        self._on_permission = on_permission
        self._turns = turns
        self._fallback_wait = fallback_wait
        # _lock guards _pending and _closed (and settles every _Pending).
        self._lock = threading.Lock()
        self._pending: Dict[str, Set[_Pending]] = {}
        self._closed = False

    def answer(self, params: Any) -> Dict[str, Any]:
        """The ``session/request_permission`` handler (a handler worker): the outcome to send.

        Raises:
            InvalidParams: a request without a ``sessionId`` or an ``options`` list.
        """
        if not isinstance(params, dict) or not isinstance(params.get("sessionId"), str):
            raise InvalidParams("session/request_permission needs a sessionId")
        if not isinstance(params.get("options"), list):
            raise InvalidParams("session/request_permission needs a list of options")
        session_id: str = params["sessionId"]
        callback = self._on_permission
        pending = _Pending(session_id)
        with self._lock:
            if self._closed or self._turns.is_cancelled(session_id):
                return CANCELLED
            if callback is not None:
                self._pending.setdefault(session_id, set()).add(pending)
        if callback is None:
            option = reject_option(params)
            return selected(option) if option is not None else CANCELLED
        try:
            self._start_callback(callback, params, pending)
            deadline = self._turns.deadline_for(session_id) or Deadline.after(self._fallback_wait)
            if not pending.wait(deadline.remaining()):
                logger.warning("session %r: no permission decision before the deadline: answered cancelled", session_id)
                self._settle(pending, CANCELLED)
            return pending.outcome
        finally:
            with self._lock:
                waiting = self._pending.get(session_id)
                if waiting is not None:
                    waiting.discard(pending)
                    if not waiting:
                        del self._pending[session_id]

    def _start_callback(self, callback: PermissionCallback, params: Dict[str, Any], pending: _Pending) -> None:
        thread = threading.Thread(
            target=self._decide,
            args=(callback, params, pending),
            name=f"acp-permission-{next(_numbers)}[{pending.session_id}]",
            daemon=True,
        )
        thread.start()

    def _decide(self, callback: PermissionCallback, params: Dict[str, Any], pending: _Pending) -> None:
        try:
            choice = callback(params)
        except BaseException:  # SystemExit and KeyboardInterrupt too: the agent must get its answer
            logger.exception("on_permission raised: answered cancelled")
            choice = None
        if choice is None:
            outcome = CANCELLED
        elif isinstance(choice, str) and choice in option_ids(params):
            outcome = selected(choice)
        else:
            logger.warning("on_permission chose %.100r, which the request did not offer: answered cancelled", choice)
            outcome = CANCELLED
        if not self._settle(pending, outcome):
            logger.debug("session %r: a permission decision after the answer went: dropped", pending.session_id)

    def _settle(self, pending: _Pending, outcome: Dict[str, Any]) -> bool:
        with self._lock:
            return pending.settle(outcome)

    def cancel(self, session_id: str) -> int:
        """Answer every pending request of ``session_id`` ``cancelled``; returns how many."""
        with self._lock:
            waiting = list(self._pending.get(session_id, ()))
            return sum(pending.settle(CANCELLED) for pending in waiting)

    def close(self) -> None:
        """Answer every pending request ``cancelled``, and every later one at once."""
        with self._lock:
            self._closed = True
            for waiting in self._pending.values():
                for pending in waiting:
                    pending.settle(CANCELLED)


__all__ = ["PermissionCallback", "PermissionDesk"]
