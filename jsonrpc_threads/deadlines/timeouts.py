"""Timeouts as they enter the library, and the deadlines made from them.

Every timeout a caller passes goes through ``check_timeout`` once, where it
enters: a negative number or NaN is a ``ValueError``, a bool or a string
a ``TypeError``, and ``inf`` (or anything longer than a thread can wait,
``threading.TIMEOUT_MAX``) means no deadline, exactly like ``None``.  From
then on the library works with deadlines on the ``time.monotonic`` clock
(``None`` for none), and every wait goes through ``wait_slice``, which
never hands a value a lock or ``poll()`` cannot take.  So no timeout, however
odd, can break a waiting thread.

Pure: no threads, no I/O.
"""

from __future__ import annotations

import threading
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Optional, Union

#: The longest single wait the library asks of a lock, a condition or poll(): a
#: longer (or endless) wait is made of slices of this length.  Far below
#: threading.TIMEOUT_MAX and poll()'s int milliseconds on every platform.
MAX_WAIT_SLICE_S = 3600.0

#: Timeouts at or above this mean "no deadline" (a thread cannot wait longer).
NO_DEADLINE_AT_S = min(threading.TIMEOUT_MAX, 1e9)


class UseDefault:
    """The type of ``DEFAULT_TIMEOUT``."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "DEFAULT_TIMEOUT"


#: Sentinel: "use the client's default timeout" (``...`` means the same).
DEFAULT_TIMEOUT: Any = UseDefault()

if TYPE_CHECKING:
    #: What a ``timeout=`` parameter takes.
    Timeout = Union[float, None, UseDefault]


def is_nan(value: float) -> bool:
    """True for NaN (the one value unequal to itself; no ``math`` import for it)."""
    return value != value  # noqa: PLR0124


def __getattr__(name: str) -> Any:
    """``Timeout`` (a ``typing.Union``), made on first use: typing loads only when asked for."""
    if name == "Timeout":
        from typing import Union  # noqa: PLC0415

        return Union[float, None, UseDefault]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def check_timeout(timeout: object, what: str = "timeout") -> Optional[float]:
    """Validate a timeout in seconds; ``None`` for no deadline.

    Returns:
        The timeout as a float, or ``None`` for ``None``, ``inf`` and anything
        longer than a thread can wait.

    Any real number is taken (an ``int`` of any size, a ``Fraction``, a
    ``Decimal``); one longer than a thread can wait means no deadline.

    Raises:
        TypeError: for a bool, a string or anything that is not a real number.
        ValueError: for a negative number or NaN.
    """
    if type(timeout) is float and 0.0 <= timeout < NO_DEADLINE_AT_S:
        return timeout  # the usual case, on every call (NaN fails the comparison and goes below)
    if timeout is None:
        return None
    if isinstance(timeout, (bool, str, bytes, bytearray, complex)) or not hasattr(timeout, "__float__"):
        raise TypeError(f"{what} must be a number of seconds or None, not {type(timeout).__name__}")
    try:
        value = float(timeout)  # any real number: int, float, Fraction, Decimal, numpy's
    except OverflowError:  # an int beyond a float's range (10**400): longer than any wait, or far below 0
        value = float("inf") if timeout > 0 else float("-inf")  # type: ignore[operator]
    except (TypeError, ValueError):
        raise TypeError(f"{what} must be a number of seconds or None, not {type(timeout).__name__}") from None
    if is_nan(value) or value < 0:
        raise ValueError(f"{what} must be >= 0 seconds, not {timeout!r}")
    if value >= NO_DEADLINE_AT_S:
        return None
    return value


def deadline_after(timeout: Optional[float]) -> Optional[float]:
    """The ``time.monotonic`` deadline ``timeout`` seconds from now (``None`` stays ``None``)."""
    return None if timeout is None else time.monotonic() + timeout


def time_left(deadline: Optional[float]) -> Optional[float]:
    """Seconds until ``deadline`` (0.0 once passed); ``None`` for no deadline."""
    if deadline is None:
        return None
    return max(0.0, deadline - time.monotonic())


def wait_slice(deadline: Optional[float]) -> float:
    """How long the next wait towards ``deadline`` may be: at most ``MAX_WAIT_SLICE_S``."""
    if deadline is None:
        return MAX_WAIT_SLICE_S
    return min(MAX_WAIT_SLICE_S, max(0.0, deadline - time.monotonic()))


def wait_slice_ms(deadline: Optional[float], slice_ms: int) -> int:
    """``wait_slice`` in whole milliseconds for ``poll()`` and socket timeouts: at most ``slice_ms``, rounded up."""
    if deadline is None:
        return slice_ms
    left_ms = (deadline - time.monotonic()) * 1000.0
    if left_ms >= slice_ms:
        return slice_ms  # the usual case, in one comparison (this runs before every wait of a call)
    if left_ms <= 0.0:
        return 0
    whole = int(left_ms)
    return whole if whole == left_ms else whole + 1  # rounded up: never before the deadline


def passed(deadline: Optional[float]) -> bool:
    """True once ``deadline`` has passed (never for ``None``)."""
    return deadline is not None and time.monotonic() >= deadline


_set = object.__setattr__


class Deadline:
    """One call's deadline, made once where the call enters and handed down to every step it triggers.

    A step spends what is left (``remaining``) and never starts a timeout
    of its own; ``timeout`` keeps the seconds the caller gave, for messages
    ("timed out after 4.0s" names the whole call, not what was left for its
    last step).  ``None`` means no deadline, exactly as for a timeout.
    Immutable (setting an attribute raises ``AttributeError``: a step handed
    the caller's deadline cannot extend it for the steps after it); thread-safe.

    Attributes:
        at: the ``time.monotonic`` moment it passes, or ``None``.
        timeout: the seconds the caller gave (after ``check_timeout``), or ``None``.
    """

    __slots__ = ("at", "timeout")
    at: Optional[float]
    timeout: Optional[float]

    def __init__(self, timeout: Optional[float], at: Optional[float]) -> None:
        _set(self, "timeout", timeout)
        _set(self, "at", at)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"a Deadline cannot be changed (its {name!r} is fixed where the call entered)")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"a Deadline cannot be changed (its {name!r} is fixed where the call entered)")

    @classmethod
    def after(cls, timeout: object, default: Optional[float] = None, what: str = "timeout") -> Deadline:
        """The deadline ``timeout`` seconds from now; ``DEFAULT_TIMEOUT`` (or ``...``) takes ``default``.

        ``default`` is taken as it is (validate it where it was set).

        Raises:
            TypeError, ValueError: as ``check_timeout``.
        """
        if type(timeout) is float and 0.0 <= timeout < NO_DEADLINE_AT_S:  # the usual case, as in check_timeout
            return cls(timeout, time.monotonic() + timeout)
        use_default = timeout is DEFAULT_TIMEOUT or isinstance(timeout, UseDefault) or timeout is Ellipsis
        seconds = default if use_default else check_timeout(timeout, what)
        return cls(seconds, None if seconds is None else time.monotonic() + seconds)

    @classmethod
    def never(cls) -> Deadline:
        """No deadline."""
        return cls(None, None)

    def remaining(self) -> Optional[float]:
        """Seconds left (0.0 once passed); ``None`` for no deadline."""
        at = self.at
        if at is None:
            return None
        left = at - time.monotonic()
        return left if left > 0.0 else 0.0

    @property
    def expired(self) -> bool:
        """True once the deadline has passed (never for no deadline)."""
        return passed(self.at)

    def capped(self, seconds: float) -> Deadline:
        """This deadline, or ``seconds`` from now when that comes first (for a step with a bound of its own)."""
        cap = time.monotonic() + seconds
        if self.at is not None and self.at <= cap:
            return self
        return Deadline(seconds, cap)

    def __repr__(self) -> str:
        if self.at is None:
            return "Deadline(None)"
        return f"Deadline(timeout={self.timeout!r}, remaining={self.remaining():.3f})"


__all__ = [
    "DEFAULT_TIMEOUT",
    "Deadline",
    "MAX_WAIT_SLICE_S",
    "Timeout",
    "UseDefault",
    "check_timeout",
    "deadline_after",
    "is_nan",
    "passed",
    "time_left",
    "wait_slice",
    "wait_slice_ms",
]
