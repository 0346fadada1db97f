"""Timeouts as they enter the ACP client, and the one deadline each public call makes of its own.

A public method of ``AcpClient`` turns its ``timeout``
into a ``Deadline`` once, where it enters; every step that call triggers
(the handshake when it has not run, the request itself, the ``session/cancel``
of a prompt that timed out) asks the deadline what is left of it and never
starts a timeout of its own.  Timeouts follow the rules of the rest of the
library: ``None`` (or ``inf``) means none, a negative number or NaN is a
``ValueError``, a bool or a string a ``TypeError``, ``0`` expires at once.

Pure: no threads, no I/O.
"""

from __future__ import annotations

import math
import threading
import time
from typing import Any, Optional, Union

from .. import DEFAULT_TIMEOUT

#: What a ``timeout=`` parameter takes: seconds, ``None`` for no deadline, or
#: ``DEFAULT_TIMEOUT`` (also ``...``) for the client's default.
Timeout = Union[float, None, Any]

#: Timeouts at or above this mean "no deadline" (a thread cannot wait longer).
_NO_DEADLINE_AT_S = min(threading.TIMEOUT_MAX, 1e9)


def check_timeout(timeout: object, what: str = "timeout") -> Optional[float]:
    """Validate a timeout in seconds; ``None`` for no deadline.

    Raises:
        TypeError: for a bool, a string or anything that is not a real number.
        ValueError: for a negative number or NaN.
    """
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise TypeError(f"{what} must be a number of seconds or None, not {type(timeout).__name__}")
    value = float(timeout)
    if math.isnan(value) or value < 0:
        raise ValueError(f"{what} must be >= 0, not {timeout!r}")
    return None if value >= _NO_DEADLINE_AT_S else value


def resolve_timeout(timeout: Timeout, default: Optional[float]) -> Optional[float]:
    """``timeout`` checked, or ``default`` for ``DEFAULT_TIMEOUT`` (and ``...``)."""
    if timeout is DEFAULT_TIMEOUT or timeout is Ellipsis:
        return default
    return check_timeout(timeout)


class Deadline:
    """A point on the ``time.monotonic`` clock, or none; made once, spent by every step.

    Attributes:
        timeout: the seconds it was made from (``None``: no deadline).
    """

    __slots__ = ("_at", "timeout")

    def __init__(self, timeout: Optional[float]) -> None:
        self.timeout = timeout
        self._at = None if timeout is None else time.monotonic() + timeout

    def left(self) -> Optional[float]:
        """Seconds left (``0.0`` once passed), or ``None`` for no deadline."""
        if self._at is None:
            return None
        return max(0.0, self._at - time.monotonic())

    def expired(self) -> bool:
        """True once the deadline has passed."""
        return self._at is not None and time.monotonic() >= self._at

    def at_most(self, seconds: float) -> Optional[float]:
        """What is left, but no more than ``seconds``: a bounded step inside a longer call."""
        left = self.left()
        return seconds if left is None else min(left, seconds)

    def __repr__(self) -> str:
        left = self.left()
        return "<Deadline none>" if left is None else f"<Deadline {left:.3f}s left>"


__all__ = ["DEFAULT_TIMEOUT", "Deadline", "Timeout", "check_timeout", "resolve_timeout"]
