"""The deadlines of one client's ``request()`` futures: one timer per timeout value, not one per request.

Theory of operation.  Requests made with the same timeout come due in the
order they were made.  So :class:`DeadlineLanes` keeps, for each timeout
value, a lane: a FIFO of ``(deadline, request_id)`` in deadline order (each
deadline is read from the clock under the lock that appends it), and one
timer on the scheduler at the lane's head.  When that timer fires, every
entry that is due is taken off the head and handed, as one list, to
``expire_many`` (which settles those still pending with ``RequestTimeout``
and skips those answered meanwhile); then the timer is set again for the new
head, or the lane, empty, is dropped.

A request that is answered or cancelled is not looked for in its lane (that
would cost a search): its entry stays until it comes due, or until the timer,
setting itself for the next head, passes over it (it is not set for a request
that already ended, so a client gone idle wakes the timer thread once, not once
per request it made).  And the lane of a busy client with a long timeout is
compacted: when it holds more than twice as many entries as it did after the
last compaction (and at least :data:`COMPACT_MIN_ENTRIES`), it is rebuilt with
only the requests still pending, and memory stays proportional to what is pending.

Against one heap entry and one timer handle per request this saves, per
request, a handle, a heap push and a cancellation (a fifth of what a pipelined
``request()`` costs the client), and a burst of timeouts is expired a batch at
a time, under one lock round trip of the pending map.

Nothing here runs user code: ``expire_many`` is the client's own.  Thread-safe:
``_lock`` guards the lanes and their timers; it is taken before the
scheduler's lock, never after.
"""

from __future__ import annotations

import collections
import threading
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable, Deque, Dict, List, Optional, Tuple

    from ._scheduler import Scheduler, TimerHandle
    from .errors import RequestId

#: A lane is not compacted below this many entries (compacting is a pass over all of them).
COMPACT_MIN_ENTRIES = 1024


class _Lane:
    """The requests of one timeout value, oldest first, and the timer set for the oldest."""

    __slots__ = ("compact_at", "entries", "timeout", "timer")

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self.entries: Deque[Tuple[float, RequestId]] = collections.deque()
        self.timer: Optional[TimerHandle] = None
        self.compact_at = COMPACT_MIN_ENTRIES


class DeadlineLanes:
    """Request deadlines by timeout value, one timer each (see the module docstring).

    Args:
        scheduler: where the lanes' timers run (the client's).
        expire_many: called on the timer thread with the ids that came due,
            oldest first; must not block.
        is_pending: whether a request id is still pending (for compaction).
    """

    def __init__(
        self,
        scheduler: Scheduler,
        expire_many: Callable[[List[RequestId]], None],
        is_pending: Callable[[RequestId], bool],
    ) -> None:
        self._scheduler = scheduler
        self._expire_many = expire_many
        self._is_pending = is_pending
        self._lock = threading.Lock()
        self._lanes: Dict[float, _Lane] = {}
        self._closed = False

    def add(self, timeout: float, request_id: RequestId) -> None:
        """Let ``request_id`` expire ``timeout`` seconds from now (a finite, non-negative timeout).

        Raises:
            RuntimeError: when the scheduler was stopped.
        """
        with self._lock:
            if self._closed:
                return  # the client is closing: its pending requests are being failed
            lane = self._lanes.get(timeout)
            if lane is None:
                lane = self._lanes[timeout] = _Lane(timeout)
            deadline = time.monotonic() + timeout
            entries = lane.entries
            entries.append((deadline, request_id))
            if lane.timer is None:
                lane.timer = self._scheduler.call_at(deadline, self._on_due, lane)
            elif len(entries) > lane.compact_at:
                self._compact_locked(lane)

    def close(self) -> None:
        """Withdraw every lane's timer (the client closed: nothing is left to expire).  Idempotent."""
        with self._lock:
            self._closed = True
            lanes = list(self._lanes.values())
            self._lanes.clear()
            for lane in lanes:
                timer, lane.timer = lane.timer, None
                lane.entries.clear()
                if timer is not None:
                    timer.cancel()

    def __len__(self) -> int:
        """How many entries the lanes hold (answered ones stay until due, passed over or compacted)."""
        with self._lock:
            return sum(len(lane.entries) for lane in self._lanes.values())

    def _on_due(self, lane: _Lane) -> None:
        """The timer thread: the lane's head came due."""
        due: List[RequestId] = []
        with self._lock:
            if lane.timer is None:
                return  # closed meanwhile
            lane.timer = None
            entries = lane.entries
            now = time.monotonic()
            while entries and entries[0][0] <= now:
                due.append(entries.popleft()[1])
            is_pending = self._is_pending
            while entries and not is_pending(entries[0][1]):
                entries.popleft()  # answered: no reason to wake up for it later
            if entries:
                lane.timer = self._scheduler.call_at(entries[0][0], self._on_due, lane)
            elif self._lanes.get(lane.timeout) is lane:
                del self._lanes[lane.timeout]
        if due:
            self._expire_many(due)

    def _compact_locked(self, lane: _Lane) -> None:
        """Drop the entries of requests that ended (their order is kept)."""
        is_pending = self._is_pending
        kept = collections.deque(entry for entry in lane.entries if is_pending(entry[1]))
        lane.entries = kept
        lane.compact_at = max(COMPACT_MIN_ENTRIES, 2 * len(kept))


__all__ = ["COMPACT_MIN_ENTRIES", "DeadlineLanes"]
