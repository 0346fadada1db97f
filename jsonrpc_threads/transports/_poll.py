"""Small helpers for threads that wait in ``poll()`` with a deadline, and for the descriptors they poll."""

from __future__ import annotations

import os
import threading
from typing import Optional

from ..deadlines.timeouts import wait_slice_ms

#: The longest a polling thread waits before it looks at its state again
#: (for ``close()``, or a deadline that moved), in milliseconds.
POLL_SLICE_MS = 50


def poll_timeout_ms(deadline: Optional[float], slice_ms: int = POLL_SLICE_MS) -> int:
    """Milliseconds for the next ``poll()`` towards ``deadline``: at most ``slice_ms``, at least 0, rounded up."""
    return wait_slice_ms(deadline, slice_ms)


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
