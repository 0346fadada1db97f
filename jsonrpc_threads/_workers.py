"""A small pool of daemon worker threads, with an ordered lane.

The client runs user handlers here, never on a transport's reader thread.
Threads start on demand up to ``max_workers`` and are daemons, so a handler
stuck forever cannot keep the interpreter from exiting; :meth:`WorkerPool.shutdown`
ends them with a bounded join.

:meth:`WorkerPool.submit_ordered` runs tasks one at a time in submission order
(on whichever worker is free), for work whose order matters, such as
notifications; :attr:`WorkerPool.ordered_backlog` says whether ordered work is
still queued or running.

Thread-safety: every method may be called from any thread.
"""

from __future__ import annotations

import collections
import logging
import queue
import threading
import time
from typing import Any, Callable, Deque, List, Optional, Set, Tuple

logger = logging.getLogger(__name__)

_Task = Optional[Tuple[Callable[..., Any], Tuple[Any, ...]]]


class PoolClosed(RuntimeError):
    """The pool no longer accepts work."""


class WorkerPool:
    """Daemon threads running submitted callables; exceptions are logged."""

    def __init__(self, max_workers: int, name: str) -> None:
        if max_workers < 1:
            raise ValueError("max_workers must be at least 1")
        self._max_workers = max_workers
        self._name = name
        self._tasks: queue.SimpleQueue[_Task] = queue.SimpleQueue()
        # _lock guards _threads, _queued, _busy, _closed, _ordered and _ordered_running;
        # _idle is notified when nothing is queued or running any more.
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._threads: List[threading.Thread] = []
        self._queued = 0
        self._busy: Set[threading.Thread] = set()
        self._closed = False
        self._ordered: Deque[Tuple[Callable[..., Any], Tuple[Any, ...]]] = collections.deque()
        self._ordered_running = False
        self._local = threading.local()

    def submit(self, fn: Callable[..., Any], *args: Any) -> None:
        """Run ``fn(*args)`` on a worker.

        Raises:
            PoolClosed: after :meth:`shutdown`.
        """
        with self._lock:
            if self._closed:
                raise PoolClosed("worker pool is shut down")
            self._spawn_if_needed()
        self._tasks.put((fn, args))

    def submit_ordered(self, fn: Callable[..., Any], *args: Any) -> None:
        """Run ``fn(*args)`` after every ordered task submitted before it has finished.

        Raises:
            PoolClosed: after :meth:`shutdown`.
        """
        with self._lock:
            if self._closed:
                raise PoolClosed("worker pool is shut down")
            self._ordered.append((fn, args))
            if self._ordered_running:
                return
            self._ordered_running = True
            self._spawn_if_needed()
        self._tasks.put((self._drain_ordered, ()))

    @property
    def ordered_backlog(self) -> bool:
        """True while ordered tasks are queued or running."""
        return self._ordered_running

    def in_ordered_task(self) -> bool:
        """True when called from inside an ordered task."""
        return getattr(self._local, "ordered", False) is True

    def in_worker(self) -> bool:
        """True when called from one of this pool's threads."""
        return getattr(self._local, "pool", None) is self

    @property
    def unfinished(self) -> int:
        """How many tasks are queued or running."""
        with self._lock:
            return self._queued + len(self._busy)

    def wait_idle(self, timeout: Optional[float]) -> bool:
        """Wait until no task is queued or running; False when ``timeout`` passed first."""
        with self._idle:
            return self._idle.wait_for(lambda: not self._queued and not self._busy, timeout)

    def shutdown(self, timeout: Optional[float] = None, *, wait_for_busy: bool = True) -> None:
        """Stop accepting work, drop what is queued, and join the threads (bounded).

        A task still running after ``timeout`` is left to finish on its daemon
        thread; with ``wait_for_busy=False`` only idle threads are joined.
        Idempotent; safe to call from a worker.
        """
        with self._lock:
            if self._closed:
                threads: List[threading.Thread] = []
            else:
                self._closed = True
                self._ordered.clear()
                threads = list(self._threads)
            busy = set(self._busy)
        for _ in threads:
            self._tasks.put(None)
        if not wait_for_busy:
            threads = [thread for thread in threads if thread not in busy]
        deadline = None if timeout is None else time.monotonic() + timeout
        current = threading.current_thread()
        for thread in threads:
            if thread is current:
                continue
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            thread.join(remaining)

    def _spawn_if_needed(self) -> None:
        # Called with _lock held, for one task about to be queued.
        self._queued += 1
        count = len(self._threads)
        if self._queued + len(self._busy) <= count or count >= self._max_workers:
            return
        thread = threading.Thread(target=self._work, name=f"{self._name}-{count + 1}", daemon=True)
        self._threads.append(thread)
        thread.start()

    def _work(self) -> None:
        self._local.pool = self
        me = threading.current_thread()
        tasks = self._tasks
        while True:
            task = tasks.get()
            if task is None:
                return
            with self._lock:
                self._queued -= 1
                self._busy.add(me)
                closed = self._closed
            if not closed:
                fn, args = task
                try:
                    fn(*args)
                except BaseException:  # even SystemExit must not cost the pool a thread
                    logger.exception("task %r failed in %s", fn, self._name)
            with self._lock:
                self._busy.discard(me)
                if not self._queued and not self._busy:
                    self._idle.notify_all()
            del task

    def _drain_ordered(self) -> None:
        self._local.ordered = True
        try:
            self._drain_ordered_tasks()
        finally:
            self._local.ordered = False

    def _drain_ordered_tasks(self) -> None:
        while True:
            with self._lock:
                if not self._ordered or self._closed:
                    self._ordered_running = False
                    return
                fn, args = self._ordered.popleft()
            try:
                fn(*args)
            except BaseException:
                logger.exception("task %r failed in %s", fn, self._name)
