"""Daemon worker threads for user code: a small pool, and a serial lane.

The client runs user code here, and only here: handlers for the peer's
requests, notification handlers, progress callbacks and the done-callbacks of
futures the library settles.  Never on a transport's reader thread, the timer
thread, or under a library lock.

:class:`WorkerPool` starts threads on demand up to ``max_workers``.  A worker
that waits for an answer of the library's own clients (a handler calling back
into the client) does not count against that limit while it waits
(:func:`waiting_for_answer`): the pool starts another thread for the next task,
so a peer that needs one more handler before it answers the ones waiting never
deadlocks them.  Threads beyond ``max_workers`` end once idle.

:class:`SerialLane` runs tasks one at a time, in submission order, on one
thread of its own (not a pool thread, so a busy pool never holds it up): the
client's notifications go through it, which keeps them in arrival order.

Threads are daemons, so a task stuck forever cannot keep the interpreter from
exiting; ``shutdown()`` ends them with a bounded join.  Whatever a task raises
(``SystemExit`` included) is logged, and the thread goes on.

Thread-safety: every method may be called from any thread.
"""

from __future__ import annotations

import collections
import itertools
import threading
import time

from ._deadlines import wait_slice
from ._logs import get_logger

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, Deque, List, Optional, Set, Tuple

logger = get_logger(__name__)


class _ThreadRole(threading.local):
    """Per thread: the pool (or lane) running it, if it is one of ours."""

    # A class attribute: reading it on another thread finds None at once (a getattr
    # with a default would raise and catch an AttributeError there, ~0.5 us a call).
    owner: Optional[object] = None


_local = _ThreadRole()


class PoolClosed(RuntimeError):
    """The pool no longer accepts work."""


def current_worker() -> Optional[object]:
    """The :class:`WorkerPool` or :class:`SerialLane` running the calling thread, else None."""
    return _local.owner


class _WaitingForAnswer:
    """See :func:`waiting_for_answer` (a class: cheaper than a generator on hot paths)."""

    __slots__ = ("_pool",)

    def __enter__(self) -> None:
        owner = _local.owner
        if isinstance(owner, WorkerPool):
            owner._set_blocked(+1)
            self._pool: Optional[WorkerPool] = owner
        else:
            self._pool = None

    def __exit__(self, *exc_info: object) -> None:
        pool = self._pool
        if pool is not None:
            self._pool = None
            pool._set_blocked(-1)


def waiting_for_answer() -> _WaitingForAnswer:
    """Mark the calling thread, if it is a pool worker, as waiting for a library answer.

    Use as ``with waiting_for_answer(): ...``.  While inside, the thread does
    not count against its pool's ``max_workers``.
    """
    return _WaitingForAnswer()


def _run_task(fn: Callable[..., Any], args: Tuple[Any, ...], name: str) -> None:
    try:
        fn(*args)
    except BaseException:  # even SystemExit must not cost a thread
        logger.exception("task %r failed in %s", fn, name)


class WorkerPool:
    """Daemon threads running submitted callables; exceptions are logged."""

    def __init__(self, max_workers: int, name: str) -> None:
        if max_workers < 1:
            raise ValueError("max_workers must be at least 1")
        self._max_workers = max_workers
        self._name = name
        # _lock guards _tasks, _threads, _busy, _blocked, _closed, _drain and _serial.
        # _work (on _lock) is notified when a task is queued or the pool shuts down;
        # _idle (on _lock) when nothing is queued or running any more.
        self._lock = threading.Lock()
        self._work = threading.Condition(self._lock)
        self._idle = threading.Condition(self._lock)
        self._tasks: Deque[Tuple[Callable[..., Any], Tuple[Any, ...]]] = collections.deque()
        self._threads: List[threading.Thread] = []
        self._busy: Set[threading.Thread] = set()
        self._blocked = 0
        self._sleeping = 0  # workers waiting on _work for a task
        self._closed = False
        self._drain = False
        self._serial = itertools.count(1)  # thread numbers, for names

    def submit(self, fn: Callable[..., Any], *args: Any) -> None:
        """Run ``fn(*args)`` on a worker.

        Raises:
            PoolClosed: after :meth:`shutdown`.
        """
        with self._lock:
            if self._closed:
                raise PoolClosed("worker pool is shut down")
            self._tasks.append((fn, args))
            if self._sleeping:
                self._work.notify()  # a sleeping worker takes it
            if len(self._tasks) > self._sleeping:
                self._spawn_if_needed()  # more tasks than sleepers: another thread, within the limit

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
            if self._closed:
                threads: List[threading.Thread] = []
            else:
                self._closed = True
                self._drain = drain
                if not drain:
                    self._tasks.clear()
                    if not self._busy:
                        self._idle.notify_all()
                threads = list(self._threads)
                self._work.notify_all()
            busy = set(self._busy)
        if not wait_for_busy:
            threads = [thread for thread in threads if thread not in busy]
        deadline = None if timeout is None else time.monotonic() + timeout
        current = threading.current_thread()
        for thread in threads:
            if thread is current:
                continue
            while thread.is_alive():
                thread.join(wait_slice(deadline))
                if deadline is not None and time.monotonic() >= deadline:
                    break

    def _set_blocked(self, delta: int) -> None:
        with self._lock:
            self._blocked += delta
            if delta > 0 and self._tasks and not self._closed:
                self._spawn_if_needed()

    def _spawn_if_needed(self) -> None:
        # Called with _lock held, after a task was queued.
        count = len(self._threads)
        idle = count - len(self._busy)
        if len(self._tasks) <= idle or count >= self._max_workers + self._blocked:
            return
        thread = threading.Thread(target=self._run, name=f"{self._name}-{next(self._serial)}", daemon=True)
        self._threads.append(thread)
        thread.start()

    def _run(self) -> None:
        _local.owner = self
        me = threading.current_thread()
        lock = self._lock
        tasks = self._tasks
        busy = self._busy
        with lock:
            while True:
                # With the lock held: wait for a task, take it, run it without the lock.
                while not tasks:
                    if self._closed:
                        self._threads.remove(me)
                        return
                    self._sleeping += 1
                    try:
                        self._work.wait(wait_slice(None))
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
                    # A thread started while others waited for answers ends once idle.
                    if not self._closed and len(self._threads) > self._max_workers + self._blocked:
                        self._threads.remove(me)
                        return


class DrainQueue:
    """Items run in order by the workers of a pool, as many at once as the pool has room for.

    :meth:`put` adds items to one shared queue and starts drainers (pool tasks
    that run items until the queue is empty) for them, but never more than the
    pool can run at once counting those already draining: an item that blocks
    holds up its own worker only, and a burst of small puts does not flood the
    pool with drainers that find nothing left to do.  ``run`` is called as
    ``run(item)``; whatever it raises is its own business (it should log).

    Thread-safe: ``_lock`` guards ``_drainers`` and the queue's emptiness seen by a
    drainer that is about to stop.
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
            PoolClosed: when the pool is shut down (the items stay queued for
                the caller's own drainer: see :meth:`drain`).
        """
        pool = self._pool
        with self._lock:
            self._queue.extend(items)
            start = min(len(items), pool.capacity - self._drainers)
            if start <= 0:
                return
            self._drainers += start
        for started in range(start):
            try:
                pool.submit(self.drain)
            except PoolClosed:
                with self._lock:
                    self._drainers -= start - started - 1  # one is left to the caller
                raise

    def drain(self) -> None:
        """Run queued items until there are none (a drainer started by :meth:`put`)."""
        queue = self._queue
        run = self._run
        while True:
            try:
                item = queue.popleft()  # atomic: each item runs once
            except IndexError:
                with self._lock:
                    if queue:
                        continue  # put() added some and counted on this drainer
                    self._drainers -= 1
                    return
            run(item)
            del item


class SerialLane:
    """One daemon thread running tasks one at a time, in submission order.

    The thread starts with the first task and waits for more until
    :meth:`shutdown`.  Each task gets a ticket (:meth:`submit`); :meth:`busy`
    tells the pending map whether notifications that arrived before a response
    are still queued or running, and :meth:`finished` whether a given one ran.
    """

    def __init__(self, name: str) -> None:
        self._name = name
        # _lock guards _tasks, _thread, _closed, _submitted and _finished; _cond is
        # notified when a task is queued or the lane is shut down.
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._tasks: Deque[Tuple[Callable[..., Any], Tuple[Any, ...]]] = collections.deque()
        self._thread: Optional[threading.Thread] = None
        self._closed = False
        self._submitted = 0  # tasks ever submitted
        self._finished = 0  # tasks run to their end (or dropped at shutdown)

    def submit(self, fn: Callable[..., Any], *args: Any) -> int:
        """Queue ``fn(*args)``; returns its ticket (1, 2, 3... in submission order).

        Raises:
            PoolClosed: after :meth:`shutdown`.
        """
        with self._lock:
            if self._closed:
                raise PoolClosed("lane is shut down")
            self._tasks.append((fn, args))
            self._submitted += 1
            ticket = self._submitted
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                self._thread.start()
            else:
                self._cond.notify()
        return ticket

    @property
    def submitted(self) -> int:
        """The ticket of the last task submitted (0 before any)."""
        return self._submitted

    def finished(self, ticket: int) -> bool:
        """True once the task with ``ticket`` (and every one before it) has run."""
        return self._finished >= ticket

    def busy(self) -> bool:
        """True while a task submitted so far is queued or running (a look without the lock)."""
        return self._finished < self._submitted

    def in_lane(self) -> bool:
        """True when called from this lane's thread."""
        return _local.owner is self

    def shutdown(self, timeout: Optional[float] = None) -> None:
        """Drop queued tasks and end the thread (bounded join; never the current thread).  Idempotent."""
        with self._lock:
            self._closed = True
            dropped = len(self._tasks)
            self._tasks.clear()
            self._finished += dropped
            thread = self._thread
            self._cond.notify()
        if thread is not None and thread is not threading.current_thread():
            deadline = None if timeout is None else time.monotonic() + timeout
            while thread.is_alive():
                thread.join(wait_slice(deadline))
                if deadline is not None and time.monotonic() >= deadline:
                    break

    def _run(self) -> None:
        _local.owner = self
        while True:
            with self._lock:
                while not self._tasks:
                    if self._closed:
                        return
                    self._cond.wait(wait_slice(None))
                fn, args = self._tasks.popleft()
            try:
                _run_task(fn, args, self._name)
            finally:
                with self._lock:
                    self._finished += 1
            del fn, args


__all__ = ["DrainQueue", "PoolClosed", "SerialLane", "WorkerPool", "current_worker", "waiting_for_answer"]
