"""Small helpers for threads that wait in ``poll()`` with a deadline, and for the descriptors they poll."""

from __future__ import annotations

import math
import os
import threading
import time
from typing import Optional

#: The longest a polling thread waits before it looks at its state again
#: (for ``close()``, or a deadline that moved), in milliseconds.
POLL_SLICE_MS = 50


def poll_timeout_ms(deadline: Optional[float], slice_ms: int = POLL_SLICE_MS) -> int:
    """Milliseconds for the next ``poll()`` towards ``deadline``: at most ``slice_ms``, at least 0."""
    if deadline is None:
        return slice_ms
    left_ms = (deadline - time.monotonic()) * 1000.0
    if left_ms >= slice_ms:
        return slice_ms  # the usual case, in one comparison (this runs before every poll of a call)
    if left_ms <= 0.0:
        return 0
    return math.ceil(left_ms)


def notify_all_waiting(condition: threading.Condition) -> None:
    """``condition.notify_all()``, skipped when no thread waits on it (the lock must be held).

    ``notify_all()`` is Python code that costs about half a microsecond even
    with nobody to wake; on a call's fast path it runs twice per call.  Where
    the waiter list cannot be seen, it simply notifies.
    """
    if getattr(condition, "_waiters", True):
        condition.notify_all()


def close_quietly(*fds: Optional[int]) -> None:
    """Close each descriptor that is not ``None``; one already closed (``OSError``) is no error."""
    for fd in fds:
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass


__all__ = ["POLL_SLICE_MS", "close_quietly", "notify_all_waiting", "poll_timeout_ms"]
