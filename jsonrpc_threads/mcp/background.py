"""Where a registry's supervisors do their slow work: a small pool of daemon threads, and timers that feed it.

Starting a server, closing one that stopped, pinging one for its health: each
may block for seconds, so none of it runs on the thread that noticed it was
needed (a reader thread that saw the end of a child, the timer thread, a
caller holding a lock).  A ``Background`` takes such work and runs it on
one of its worker threads (``WorkerPool``,
started on demand).  Its timers (``Background.call_later``) live on the
process-wide timer thread (``jsonrpc_threads.runtime.scheduler``), and when one
is due it only hands its work to the pool: nothing else ever runs on the
timer thread.

A registry owns one, shuts it down when it closes, and makes a new one in a
process forked after it was made (the old one's threads did not survive the
fork, and a lock of it may have been held).

Thread-safety: every method may be called from any thread.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Optional, Tuple

from ..runtime.scheduler import TimerHandle, default_scheduler
from ..runtime.workers import PoolClosed, WorkerPool

logger = logging.getLogger(__name__)

#: How long ``Background.shutdown`` waits by default for work already running.
SHUTDOWN_GRACE_S = 5.0


class Background:
    """A pool of daemon threads for slow supervisor work, and timers that hand work to it.

    Args:
        max_workers: the most tasks running at once.
        name: the threads' name prefix.
    """

    def __init__(self, max_workers: int, name: str = "jsonrpc-registry") -> None:
        self._pool = WorkerPool(max_workers, name)

    def submit(self, fn: Callable[..., Any], *args: Any) -> bool:
        """Run ``fn(*args)`` on a worker; what it raises is logged.

        Returns:
            False (and nothing runs) once ``shutdown`` was called.
        """
        try:
            self._pool.submit(fn, *args)
        except PoolClosed:
            logger.debug("background work after shutdown dropped: %r", fn)
            return False
        return True

    def call_later(self, delay: float, fn: Callable[..., Any], *args: Any) -> TimerHandle:
        """Run ``fn(*args)`` on a worker after ``delay`` seconds (the timer thread only hands it over).

        Returns:
            The timer; ``cancel()`` it to withdraw the work before it is due.
        """
        return default_scheduler().call_later(max(0.0, delay), self._due, (fn, args))

    def _due(self, work: Tuple[Callable[..., Any], Tuple[Any, ...]]) -> None:
        # On the timer thread: hand over, nothing more.
        fn, args = work
        self.submit(fn, *args)

    def shutdown(self, timeout: Optional[float] = SHUTDOWN_GRACE_S) -> None:
        """Refuse new work; let queued and running work finish within ``timeout``.  Idempotent."""
        self._pool.shutdown(timeout, drain=True)


__all__ = ["SHUTDOWN_GRACE_S", "Background"]
