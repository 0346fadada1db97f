"""Daemon worker threads for user code: a pool, a queue drained by it, and a serial lane.

Theory of operation.  User code (handlers for the peer's requests,
notification handlers, done-callbacks) runs on these threads: never on a
transport's reader thread, the timer thread, or under a library lock.

- ``WorkerPool`` starts threads on demand up to ``max_workers``.  A
  worker that waits for an answer of the library's own clients (a handler
  calling back into its client) does not count against that limit while it
  waits (``waiting_for_answer``): the pool starts another thread for the
  next task, so a peer that needs one more handler before it answers the ones
  waiting never deadlocks them.  Threads beyond ``max_workers`` end once idle.
- ``DrainQueue`` runs a burst of items (the done-callbacks of 100,000
  timeouts) on a pool's workers without a task each: an item that blocks
  holds up its own worker only.
- ``SerialLane`` runs tasks one at a time, in submission order, on one
  thread of its own: a client's notifications go through it, in arrival order.

What waits for these workers' answers, and what hands them done-callbacks,
is ``jsonrpc_threads.runtime.settling``.

Whatever a task or an item raises (``SystemExit`` included) is logged and the
thread goes on: no user code can end a thread, nor leave a pool short of
workers.  Threads are daemons, so a task stuck forever cannot keep the
interpreter from exiting; ``shutdown()`` ends them with a bounded join.

Thread-safety: every method may be called from any thread.
"""

from __future__ import annotations

import collections
import itertools
import threading
import time

from ..deadlines.timeouts import MAX_WAIT_SLICE_S, wait_slice
from .logs import get_logger

TYPE_CHECKING = False  # typing is not imported at run time: a tool server's pool lives here
if TYPE_CHECKING:
    from typing import Any, Callable, Deque, List, Optional, Set, Tuple

logger = get_logger(__name__)


class _ThreadRole(threading.local):
    """Per thread: the pool (or lane) running it, if it is one of ours."""

    owner: Optional[object] = None  # a class attribute: other threads read None at once


_local = _ThreadRole()


class PoolClosed(RuntimeError):
    """The pool no longer accepts work."""


def current_worker() -> Optional[object]:
    """The ``WorkerPool`` or ``SerialLane`` running the calling thread, else None."""
    return _local.owner


class _WaitingForAnswer:
    """See ``waiting_for_answer``."""

    __slots__ = ("_pool",)

    def __enter__(self) -> None:
        owner = _local.owner
        self._pool: Optional[WorkerPool] = owner if isinstance(owner, WorkerPool) else None
        if self._pool is not None:
            self._pool._set_blocked(+1)

    def __exit__(self, *exc_info: object) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            pool._set_blocked(-1)


def waiting_for_answer() -> _WaitingForAnswer:
    """``with waiting_for_answer(): ...``: the calling thread, if a pool worker, does not count while inside."""
    return _WaitingForAnswer()


def _run_task(fn: Callable[..., Any], args: Tuple[Any, ...], name: str) -> None:
    try:
        fn(*args)
    except BaseException:  # even SystemExit must not cost a thread
        logger.exception("task %r failed in %s", fn, name)


class WorkerPool:
    """Daemon threads running submitted callables; what they raise is logged.  See the module docstring."""

    def __init__(self, max_workers: int, name: str) -> None:
        if max_workers < 1:
            raise ValueError("max_workers must be at least 1")
        self._max_workers = max_workers
        self._name = name
        # _lock guards everything below; _work (on it) wakes a worker for a task or
        # the shutdown, _idle when nothing is queued or running any more.
        self._lock = threading.Lock()
        self._work = threading.Condition(self._lock)
        self._idle = threading.Condition(self._lock)
        self._tasks: Deque[Tuple[Callable[..., Any], Tuple[Any, ...]]] = collections.deque()
        self._threads: List[threading.Thread] = []
        self._busy: Set[threading.Thread] = set()
        self._blocked = 0  # workers inside waiting_for_answer()
        self._sleeping = 0  # workers waiting on _work
        self._closed = False
        self._serial = itertools.count(1)  # thread numbers, for names

    def submit(self, fn: Callable[..., Any], *args: Any) -> None:
        """Run ``fn(*args)`` on a worker.

        Raises:
            PoolClosed: after ``shutdown``.
        """
        with self._lock:
            if self._closed:
                raise PoolClosed("worker pool is shut down")
            self._tasks.append((fn, args))
            if self._sleeping:
                self._work.notify()
            if len(self._tasks) > self._sleeping:
                self._spawn_if_needed()

    @property
    def max_workers(self) -> int:
        """The threads the pool runs at most (more only while some wait for answers)."""
        return self._max_workers

    @property
    def capacity(self) -> int:
        """The tasks the pool may run at once now: ``max_workers``, plus the workers waiting for answers."""
        return self._max_workers + self._blocked

    def in_worker(self) -> bool:
        """True when called from one of this pool's threads."""
        return _local.owner is self

    @property
    def unfinished(self) -> int:
        """How many tasks are queued or running."""
        with self._lock:
            return len(self._tasks) + len(self._busy)

    def wait_idle(self, timeout: Optional[float]) -> bool:
        """Wait until no task is queued or running; False when ``timeout`` passed first."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._idle:
            while self._tasks or self._busy:
                if deadline is not None and time.monotonic() >= deadline:
                    return False
                self._idle.wait(wait_slice(deadline))
            return True

    def shutdown(self, timeout: Optional[float] = None, *, wait_for_busy: bool = True, drain: bool = False) -> None:
        """Stop accepting work and join the threads (bounded by ``timeout``).

        What is queued is dropped, or, with ``drain=True``, still run first
        (within ``timeout``; the rest goes on running on the daemon threads).
        A task still running after ``timeout`` is left to finish on its daemon
        thread; with ``wait_for_busy=False`` only idle threads are joined.
        Idempotent; safe to call from a worker (which is not joined).
        """
        with self._lock:
            threads: List[threading.Thread] = []
            if not self._closed:
                self._closed = True
                if not drain:
                    self._tasks.clear()
                    if not self._busy:
                        self._idle.notify_all()
                threads = list(self._threads)
                self._work.notify_all()
            busy = set(self._busy)
        if not wait_for_busy:
            threads = [thread for thread in threads if thread not in busy]
        _join_all(threads, timeout)

    def _set_blocked(self, delta: int) -> None:
        with self._lock:
            self._blocked += delta
            if delta > 0 and self._tasks and not self._closed:
                self._spawn_if_needed()

    def _spawn_if_needed(self) -> None:
        """With _lock held, after a task was queued: another thread, within the limit."""
        count = len(self._threads)
        if len(self._tasks) <= count - len(self._busy) or count >= self._max_workers + self._blocked:
            return
        thread = threading.Thread(target=self._run, name=f"{self._name}-{next(self._serial)}", daemon=True)
        self._threads.append(thread)
        thread.start()

    def _run(self) -> None:
        _local.owner = self
        me = threading.current_thread()
        lock, tasks, busy = self._lock, self._tasks, self._busy
        with lock:
            while True:
                while not tasks:
                    if self._closed:
                        self._threads.remove(me)
                        return
                    self._sleeping += 1
                    try:
                        self._work.wait(MAX_WAIT_SLICE_S)
                    finally:
                        self._sleeping -= 1
                fn, args = tasks.popleft()
                busy.add(me)
                lock.release()
                try:
                    _run_task(fn, args, self._name)
                    del fn, args
                finally:
                    lock.acquire()
                busy.discard(me)
                if not tasks:
                    if not busy:
                        self._idle.notify_all()
                    if not self._closed and len(self._threads) > self._max_workers + self._blocked:
                        self._threads.remove(me)  # started while others waited for answers: ends once idle
                        return


class DrainQueue:
    """Items run in order by a pool's workers, as many at once as the pool has room for.

    ``put`` adds items to one shared queue and starts drainers (pool tasks
    that run items until the queue is empty), never more than the pool can run
    at once counting those already draining.  ``run(item)`` runs each; what it
    raises (``SystemExit`` included) is logged and the drainer goes on.

    Thread-safe: ``_lock`` guards ``_drainers`` (the queue itself is a deque,
    whose ``popleft`` hands each item to one drainer).
    """

    def __init__(self, pool: WorkerPool, run: Callable[[Any], None]) -> None:
        self._pool = pool
        self._run = run
        self._lock = threading.Lock()
        self._queue: Deque[Any] = collections.deque()
        self._drainers = 0

    def put(self, items: List[Any]) -> None:
        """Queue ``items`` (in order) and start the drainers they need.

        Raises:
            PoolClosed: when the pool is shut down (the items stay queued for ``drain``).
        """
        with self._lock:
            self._queue.extend(items)
            start = min(len(items), self._pool.capacity - self._drainers)
            if start <= 0:
                return
            self._drainers += start
        for started in range(start):
            try:
                self._pool.submit(self.drain)
            except PoolClosed:
                with self._lock:
                    self._drainers -= start - started
                raise

    def drain(self, *, counted: bool = True) -> None:
        """Run queued items until there are none (``counted``: a drainer started by ``put``)."""
        queue, run = self._queue, self._run
        while True:
            try:
                item = queue.popleft()
            except IndexError:
                with self._lock:
                    if queue:
                        continue  # put() added some and counted on this drainer
                    if counted:
                        self._drainers -= 1
                    return
            try:
                run(item)
            except BaseException:  # a callback's SystemExit must not end the drainer
                logger.exception("a queued item failed: %r", item)
            del item


class SerialLane:
    """One daemon thread running tasks one at a time, in submission order.

    The thread starts with the first task.  Each task gets a ticket
    (``submit``); ``finished`` tells whether a given one ran, and
    ``busy`` whether any submitted task is still queued or running.
    """

    def __init__(self, name: str) -> None:
        self._name = name
        # _lock guards _tasks, _thread, _closed, _submitted and _finished; _cond wakes the thread.
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._tasks: Deque[Tuple[Callable[..., Any], Tuple[Any, ...]]] = collections.deque()
        self._thread: Optional[threading.Thread] = None
        self._closed = False
        self._submitted = 0
        self._finished = 0  # tasks run to their end (or dropped at shutdown)

    def submit(self, fn: Callable[..., Any], *args: Any) -> int:
        """Queue ``fn(*args)``; returns its ticket (1, 2, 3... in submission order).

        Raises:
            PoolClosed: after ``shutdown``.
        """
        with self._lock:
            if self._closed:
                raise PoolClosed("lane is shut down")
            self._tasks.append((fn, args))
            self._submitted += 1
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                self._thread.start()
            else:
                self._cond.notify()
            return self._submitted

    @property
    def submitted(self) -> int:
        """The ticket of the last task submitted (0 before any)."""
        return self._submitted

    def finished(self, ticket: int) -> bool:
        """True once the task with ``ticket`` (and every one before it) has run."""
        return self._finished >= ticket

    def busy(self) -> bool:
        """True while a task submitted so far is queued or running."""
        return self._finished < self._submitted

    def in_lane(self) -> bool:
        """True when called from this lane's thread."""
        return _local.owner is self

    def shutdown(self, timeout: Optional[float] = None) -> None:
        """Drop queued tasks and end the thread (bounded join; never the current thread).  Idempotent."""
        with self._lock:
            self._closed = True
            self._finished += len(self._tasks)
            self._tasks.clear()
            thread = self._thread
            self._cond.notify()
        _join_all([thread] if thread is not None else [], timeout)

    def _run(self) -> None:
        _local.owner = self
        while True:
            with self._lock:
                while not self._tasks:
                    if self._closed:
                        return
                    self._cond.wait(MAX_WAIT_SLICE_S)
                fn, args = self._tasks.popleft()
            try:
                _run_task(fn, args, self._name)
            finally:
                with self._lock:
                    self._finished += 1
            del fn, args


def _join_all(threads: List[threading.Thread], timeout: Optional[float]) -> None:
    """Join each thread but the current one, all within ``timeout`` together."""
    deadline = None if timeout is None else time.monotonic() + timeout
    current = threading.current_thread()
    for thread in threads:
        while thread is not current and thread.is_alive():
            thread.join(wait_slice(deadline))
            if deadline is not None and time.monotonic() >= deadline:
                return


__all__ = [
    "DrainQueue",
    "PoolClosed",
    "SerialLane",
    "WorkerPool",
    "current_worker",
    "waiting_for_answer",
]
