"""Timeouts as they enter the A2A client, and the one deadline each public call makes of its own.

A public method of ``A2aClient`` turns its ``timeout``
into a ``Deadline`` once, where it enters; every step that call triggers
(the card's fetch on a first call, the request, the whole of a stream, the
polls of a wait) asks it what is left and never starts a timeout of its own.
Timeouts follow the rules of the rest of the library: ``None`` (or ``inf``)
means none, a negative number or NaN is a ``ValueError``, a bool or a
string a ``TypeError``, ``0`` expires at once.  (The ACP client keeps a
twin of this module: neither layer reaches into the other, nor below the
package's public faces.)

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


class Deadline:
    """A point on the ``time.monotonic`` clock, or none; made once, spent by every step.

    Attributes:
        timeout: the seconds it was made from (``None``: no deadline).
        at: the point itself (``None``: no deadline).
    """

    __slots__ = ("at", "timeout")

    def __init__(self, timeout: Optional[float]) -> None:
        self.timeout = timeout
        self.at = None if timeout is None else time.monotonic() + timeout

    @classmethod
    def of(cls, timeout: Timeout, default: Optional[float]) -> Deadline:
        """The deadline of a call's ``timeout`` (``default`` for ``DEFAULT_TIMEOUT`` and ``...``).

        Raises:
            TypeError, ValueError: as ``check_timeout``.
        """
        if timeout is DEFAULT_TIMEOUT or timeout is Ellipsis:
            return cls(default)
        return cls(check_timeout(timeout))

    def left(self) -> Optional[float]:
        """Seconds left (``0.0`` once passed), or ``None`` for no deadline."""
        if self.at is None:
            return None
        return max(0.0, self.at - time.monotonic())

    def expired(self) -> bool:
        """True once the deadline has passed."""
        return self.at is not None and time.monotonic() >= self.at

    def __repr__(self) -> str:
        left = self.left()
        return "<Deadline none>" if left is None else f"<Deadline {left:.3f}s left>"


__all__ = ["DEFAULT_TIMEOUT", "Deadline", "Timeout", "check_timeout"]
