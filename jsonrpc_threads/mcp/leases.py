"""Whether a session is in use: leases taken by the calls that run on it, not the time since the last one.

Theory of operation.  Every public call of an
``McpClient`` holds a lease while it runs (a call
submitted with ``submit_tool`` until its future is done), and so does a
registry call from the moment it gets the session.  A session is idle only
while no lease is held; ``Leases.idle_for`` says for how long, counted
from the moment the last lease was released.  The registry's ``idle_timeout``
closes a session only when that reaches it (``Leases.retire_if_idle``,
which marks the session retired before it looks for a lease, while
``Leases.take`` adds its lease before it looks for the mark: one of the two
always sees the other, and a taker that sees the mark waits for the decision
under the lock): a call that runs
longer than ``idle_timeout``, through the registry or through the session it
handed out, is never cut off, and one that comes after the decision fails at
once with ``TransportClosed``, nothing sent.

Thread-safety: every method may be called from any thread.  Taking and
releasing a lease, which happens around every request, takes no lock: a
lease is an entry in a deque (its ``append`` and ``pop`` are atomic).  The
lock is for the decision to retire, and for a caller that finds that
decision under way, who waits for it.
"""

from __future__ import annotations

import collections
import threading
import time
from typing import Any, Callable, Deque, Optional

from ..errors import TransportClosed

#: Why a lease is refused once the session was closed for being idle.
RETIRED = "the session was closed after idle_timeout unused; get it again"


class Leases:
    """The leases on one session.  Thread-safe.

    Args:
        clock: the clock idle time is measured on.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()  # guards the retirement decision; _retired is written only under it
        self._held: Deque[None] = collections.deque()  # one entry per lease held
        self._since = clock()  # when a lease was last released (or the session made)
        self._retired = False

    def take(self) -> None:
        """A call starts using the session.

        Raises:
            TransportClosed: the session was closed for being idle (``retire_if_idle``).
        """
        self._held.append(None)
        if self._retired:  # retired, or being decided: wait for the decision
            self._refuse_if_retired()

    def release(self, *_: Any) -> None:
        """A call is done with the session (extra arguments ignored: usable as a done-callback)."""
        self._since = self._clock()  # before the lease goes: whoever sees none held sees the time
        try:
            self._held.pop()
        except IndexError:  # released more often than taken: nothing to release
            pass

    def __enter__(self) -> Leases:
        self._held.append(None)  # take(), written out: this runs around every request of a session
        if self._retired:
            self._refuse_if_retired()
        return self

    def __exit__(self, exc_type: object, exc: object, traceback: object) -> None:  # no *args: no tuple per call
        self._since = self._clock()  # release(), written out
        try:
            self._held.pop()
        except IndexError:
            pass

    @property
    def held(self) -> int:
        """How many leases are held now."""
        return len(self._held)

    def retire_if_idle(self, at_least: float) -> bool:
        """True when no lease was held for ``at_least`` seconds; from then on ``take`` refuses."""
        with self._lock:
            self._retired = True  # first: a lease taken from now on waits for this decision
            if self._held or self._clock() - self._since < at_least:
                self._retired = False
                return False
            return True

    def idle_for(self) -> Optional[float]:
        """Seconds since the session was last in use; ``None`` while a lease is held."""
        if self._held:
            return None
        return max(0.0, self._clock() - self._since)

    def _refuse_if_retired(self) -> None:
        """``take`` found the session retired, or its retirement being decided: the decision, under the lock."""
        with self._lock:
            if self._retired:
                self.release()
                raise TransportClosed(RETIRED)


__all__ = ["RETIRED", "Leases"]
