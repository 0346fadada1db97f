"""When a server that stopped may start again: exponential backoff, and a bound on restarts in a window.

Pure: no clock of its own (every method takes ``now``, on the
``time.monotonic`` clock), no threads, no I/O.  A
``RestartPolicy`` is the registry's settings; a ``StopHistory``
is one server's record of its recent stops (it is guarded by the lock of the
supervisor that owns it).

The rule: the ``n``-th stop within the last ``window`` seconds is followed by
a restart after ``backoff * 2 ** (n - 1)`` seconds (at most ``max_backoff``),
as long as ``n <= max_restarts``; the stop after that leaves the server
failed until the registry's ``retry_failed_after``.  A stop older than the
window no longer counts, so a server that has run well for a while starts
again from the shortest delay.
"""

from __future__ import annotations

import collections
from typing import Deque, Optional

#: Default most restarts within ``DEFAULT_RESTART_WINDOW_S`` (the next stop leaves the server failed).
DEFAULT_MAX_RESTARTS = 5
#: Default seconds over which stops are counted.
DEFAULT_RESTART_WINDOW_S = 180.0
#: Default delay before the first restart (it doubles with each stop in the window).
DEFAULT_RESTART_BACKOFF_S = 0.5
#: Default longest delay before a restart.
DEFAULT_MAX_RESTART_BACKOFF_S = 30.0


def _check_seconds(value: float, name: str, *, allow_zero: bool = True) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number of seconds, not {type(value).__name__}")
    if value != value or value < 0 or (not allow_zero and value == 0):  # noqa: PLR0124 - NaN
        raise ValueError(f"{name} must be {'>= 0' if allow_zero else '> 0'}, not {value!r}")
    return float(value)


class RestartPolicy:
    """How a registry restarts its servers.  Immutable; shared by every server of a registry.

    Args:
        max_restarts: the most restarts within ``window`` (``0``: a server
            that stops is failed at once).
        window: seconds over which stops are counted.
        backoff: seconds before the first restart.
        max_backoff: the longest delay before a restart.

    Raises:
        ValueError, TypeError: for a negative, NaN or non-numeric value.
    """

    __slots__ = ("backoff", "max_backoff", "max_restarts", "window")

    def __init__(
        self,
        max_restarts: int = DEFAULT_MAX_RESTARTS,
        window: float = DEFAULT_RESTART_WINDOW_S,
        backoff: float = DEFAULT_RESTART_BACKOFF_S,
        max_backoff: float = DEFAULT_MAX_RESTART_BACKOFF_S,
    ) -> None:
        if isinstance(max_restarts, bool) or not isinstance(max_restarts, int) or max_restarts < 0:
            raise ValueError(f"max_restarts must be an int >= 0, not {max_restarts!r}")
        self.max_restarts = max_restarts
        self.window = _check_seconds(window, "restart_window", allow_zero=False)
        self.backoff = _check_seconds(backoff, "restart_backoff")
        self.max_backoff = max(self.backoff, _check_seconds(max_backoff, "max_restart_backoff"))

    def delay(self, stops: int) -> Optional[float]:
        """Seconds before restarting after the ``stops``-th stop in the window, or ``None``: give up."""
        if stops > self.max_restarts:
            return None
        if stops < 1:
            return 0.0
        return min(self.max_backoff, self.backoff * 2.0 ** min(stops - 1, 64))

    def __repr__(self) -> str:
        return (
            f"RestartPolicy(max_restarts={self.max_restarts}, window={self.window:g}, "
            f"backoff={self.backoff:g}, max_backoff={self.max_backoff:g})"
        )


class StopHistory:
    """The times one server stopped, within the policy's window.  Not thread-safe (its owner's lock guards it)."""

    __slots__ = ("_stops",)

    def __init__(self) -> None:
        self._stops: Deque[float] = collections.deque()

    def record(self, now: float, window: float) -> int:
        """Note a stop at ``now``; returns how many stops the last ``window`` seconds hold, this one included."""
        self._stops.append(now)
        return self.count(now, window)

    def count(self, now: float, window: float) -> int:
        """How many stops the last ``window`` seconds hold."""
        stops = self._stops
        while stops and stops[0] <= now - window:
            stops.popleft()
        return len(stops)

    def clear(self) -> None:
        """Forget every stop (a failed server tried again starts with a clean slate)."""
        self._stops.clear()


__all__ = [
    "DEFAULT_MAX_RESTARTS",
    "DEFAULT_MAX_RESTART_BACKOFF_S",
    "DEFAULT_RESTART_BACKOFF_S",
    "DEFAULT_RESTART_WINDOW_S",
    "RestartPolicy",
    "StopHistory",
]
