"""Whether a session is in use: leases taken by the calls that run on it, not the time since the last one.

Theory of operation.  Every public call of an
``McpClient`` holds a lease while it runs (a call
submitted with ``submit_tool`` until its future is done), and so does a
registry call from the moment it gets the session.  A session is idle only
while no lease is held; ``Leases.idle_for`` says for how long, counted
from the moment the last lease was released.  The registry's ``idle_timeout``
closes a session only when that reaches it (``Leases.retire_if_idle``,
which decides under the same lock as ``Leases.take``): a call that runs
longer than ``idle_timeout``, through the registry or through the session it
handed out, is never cut off, and one that comes after the decision fails at
once with ``TransportClosed``, nothing sent.

Thread-safety: every method may be called from any thread (one lock, held
for a few assignments).
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable, Optional

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
        # _lock guards _held, _since and _retired.
        self._lock = threading.Lock()
        self._held = 0
        self._since = clock()  # when the last lease was released (or the session made)
        self._retired = False

    def take(self) -> None:
        """A call starts using the session.

        Raises:
            TransportClosed: the session was closed for being idle (``retire_if_idle``).
        """
        with self._lock:
            if self._retired:
                raise TransportClosed(RETIRED)
            self._held += 1

    def release(self, *_: Any) -> None:
        """A call is done with the session (extra arguments ignored: usable as a done-callback)."""
        with self._lock:
            self._held = max(0, self._held - 1)
            if not self._held:
                self._since = self._clock()

    def __enter__(self) -> Leases:
        with self._lock:  # take(), written out: this runs around every request of a session
            if self._retired:
                raise TransportClosed(RETIRED)
            self._held += 1
        return self

    def __exit__(self, *exc_info: object) -> None:
        with self._lock:  # release(), written out
            self._held = max(0, self._held - 1)
            if not self._held:
                self._since = self._clock()

    @property
    def held(self) -> int:
        """How many leases are held now."""
        return self._held

    def retire_if_idle(self, at_least: float) -> bool:
        """True when no lease was held for ``at_least`` seconds; from then on ``take`` refuses."""
        with self._lock:
            if self._held or self._clock() - self._since < at_least:
                return False
            self._retired = True
            return True

    def idle_for(self) -> Optional[float]:
        """Seconds since the session was last in use; ``None`` while a lease is held."""
        with self._lock:
            if self._held:
                return None
            return max(0.0, self._clock() - self._since)


__all__ = ["RETIRED", "Leases"]
