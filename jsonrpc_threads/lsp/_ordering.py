"""Sends that go on the wire in the order their tickets were taken, with no lock held while sending.

Document notifications must reach the server in version order: if two threads
change the same document, version 3 must not overtake version 4.  The version
is assigned under the document store's lock; taking a ticket there too fixes
the order.  Each sender then waits for its turn (bounded), sends with no lock
held, and passes the turn on.  A sender whose deadline passes before its turn
gives the turn up: the tickets after it do not wait for a message that will
never be sent (a skipped full-text change is harmless: the next one carries the
whole text again).

Thread-safe.
"""

from __future__ import annotations

import threading
from typing import Optional, Set

from ..deadlines.timeouts import passed, wait_slice


class InOrder:
    """Tickets 0, 1, 2... served one at a time, in order."""

    def __init__(self) -> None:
        # _cond's lock guards _issued, _serving and _given_up.
        self._cond = threading.Condition(threading.Lock())
        self._issued = 0
        self._serving = 0
        self._given_up: Set[int] = set()

    def take(self) -> int:
        """The next ticket (call it where the order is decided, under the caller's own lock)."""
        with self._cond:
            ticket = self._issued
            self._issued += 1
            return ticket

    def wait_turn(self, ticket: int, deadline: Optional[float]) -> bool:
        """Wait until ``ticket`` is served; False (the turn given up) when ``deadline`` passed first."""
        with self._cond:
            while self._serving != ticket:
                if passed(deadline):
                    self._given_up.add(ticket)
                    return False
                self._cond.wait(wait_slice(deadline))
            return True

    def done(self, ticket: int) -> None:
        """The holder of ``ticket`` has sent (or failed to): serve the next ticket."""
        with self._cond:
            if self._serving != ticket:
                return
            self._serving += 1
            while self._serving in self._given_up:
                self._given_up.discard(self._serving)
                self._serving += 1
            self._cond.notify_all()


__all__ = ["InOrder"]
