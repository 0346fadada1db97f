"""Waking one blocked ``call()`` with the GIL let go: the process's pool of wake pipes.

Theory of operation.  A thread blocked in ``lock.acquire()`` is woken by
``release()``, which runs with the GIL held.  Where the waker and the woken
share a CPU, the woken thread runs at once, finds the GIL taken and sleeps
again until the waker lets go of it: two context switches for nothing, for
every answer.  A write to a pipe lets go of the GIL for its system call, so a
thread blocked on the pipe's other end takes the GIL and runs on: one
switch there, one back when it blocks again.  With sixteen callers on
one CPU that is the difference between three context switches a call and one.

So a ``call()`` that has to wait for its answer takes a :class:`WakePipe` (an
``os.pipe()``) from :data:`PROCESS_WAKE_PIPES` and sleeps in ``poll()`` on its
read end (the poll's timeout bounds the wait); whoever settles it writes one
byte, and the waiter reads that byte before the pipe goes back to the pool (no
byte is ever left behind for the next waiter).  A pipe rather than a pair of
sockets: a byte written and read through a pipe costs a third of what it costs
through sockets (0.9 against 2.5-2.9 us on the machine of
``benchmarks/README.md``), and with the poll still less (1.8 us).  A call
whose answer is in before it waits (the caller read it itself) takes no pipe.

The pool is the process's, shared by every client: the descriptors it keeps
do not grow with the number of clients (a registry of many servers).  It has
at most :data:`MAX_WAKE_PIPES` pipes at once (two descriptors each,
close-on-exec) and keeps at most :data:`MAX_IDLE_WAKE_PIPES` of them while
they are not in use; beyond that, off Linux, or when no descriptor is left, a
call waits on a lock as before.  Each client attaches itself when it is
made (:meth:`~WakePipes.attach`) and detaches itself at ``close()``: once no
client is left, the idle pipes are closed, and each pipe still in use is
closed when its call gives it back, so a process whose clients are all
closed holds none.  A forked child starts with an empty pool.

Waking many at once.  After its byte, :meth:`WakePipe.post` yields the CPU, so
that a woken caller that shares it takes the GIL and runs now.  A thread that
delivers a chunk of answers on a process confined to one CPU (what
``taskset -c 0`` does) wakes its callers without yielding between them
(:func:`defer_yields`) and yields once at the end (:func:`yield_deferred`):
each caller then runs up to its next wait in turn, one context switch each,
instead of two (there and back to the deliverer) per answer.  On more CPUs
the woken callers would run beside the deliverer and wait for its GIL, so
there each wake-up still yields.

Thread-safety: :class:`WakePipes` may be used from any thread; a
:class:`WakePipe` has one waiter and one waker at a time.
"""

from __future__ import annotations

import os
import select
import sys
import threading
import time
from typing import List, Optional, Set, Tuple

from ._logs import get_logger

logger = get_logger(__name__)

#: The most wake pipes the process has at once (each is two file descriptors).
MAX_WAKE_PIPES = 64
#: The most it keeps while they are not in use: a burst of waiting calls (a hung tool)
#: leaves no more descriptors open than this once it is over, however many clients.
MAX_IDLE_WAKE_PIPES = 4

#: Pipes whose byte never came, kept open for good (see WakePipes.drop).
_SET_ASIDE: List[WakePipe] = []
#: Where the pool is used (and tested): Linux; elsewhere a waiting call sleeps on a lock.
_USABLE = sys.platform.startswith("linux") and hasattr(select, "poll")
#: The longest one wait on a wake pipe lasts before the waiter looks at its call again
#: (a byte lost would be a late wake-up, never a hang).
WAIT_SLICE_MS = 1000
_yield_cpu = getattr(os, "sched_yield", None)
#: How long a look at the process's CPU affinity is trusted (it may change while running).
AFFINITY_RECHECK_S = 1.0


class _Deferring(threading.local):
    """Per thread: ``active`` while its wake-ups do not yield (see :func:`defer_yields`)."""

    # A class attribute: a thread that never set it reads False at once (a getattr with
    # a default would raise and catch an AttributeError there, on every wake-up).
    active = False


_deferring = _Deferring()
_one_cpu = [False, 0.0]  # confined to one CPU; when to look again (a race only repeats the look)


def _confined_to_one_cpu() -> bool:
    """True when this process may run on one CPU only (looked at again every AFFINITY_RECHECK_S)."""
    now = time.monotonic()
    if now >= _one_cpu[1]:
        get_affinity = getattr(os, "sched_getaffinity", None)
        _one_cpu[0] = get_affinity is not None and len(get_affinity(0)) == 1
        _one_cpu[1] = now + AFFINITY_RECHECK_S
    return bool(_one_cpu[0])


def defer_yields() -> bool:
    """Before waking many callers at once: on one CPU, this thread's wake-ups stop yielding.

    Returns True when they were deferred; pair it with :func:`yield_deferred`
    (in a ``finally``), which yields once for all of them.  Never raises.
    """
    if _yield_cpu is None or _deferring.active:
        return False
    try:
        confined = _confined_to_one_cpu()
    except OSError:  # affinity unknown: yield per wake-up, as usual
        return False
    if confined:
        _deferring.active = True
    return confined


def yield_deferred(deferred: bool) -> None:
    """After the wake-ups of :func:`defer_yields` (given what it returned): yield the CPU once."""
    if deferred:
        _deferring.active = False
        if _yield_cpu is not None:
            _yield_cpu()


class WakePipe:
    """A pipe: :meth:`post` writes the byte that :meth:`wait` waits for."""

    __slots__ = ("_poll", "_receive_fd", "_send_fd")

    def __init__(self) -> None:
        self._receive_fd, self._send_fd = os.pipe()  # close-on-exec: no child inherits them
        try:
            self._poll = select.poll()  # holds no descriptor of its own
            self._poll.register(self._receive_fd, select.POLLIN)
        except BaseException:
            self.close()
            raise

    def post(self) -> None:
        """Wake the waiter (the GIL is let go for the write), then let it run before the waker goes on."""
        os.write(self._send_fd, b"\x01")
        if _yield_cpu is not None and not _deferring.active:
            # Where both share a CPU: the woken caller takes the GIL and runs now (up to its
            # next wait) instead of waking later only to find the GIL taken.
            _yield_cpu()

    def wait(self, timeout_ms: int) -> bool:
        """Wait up to ``timeout_ms`` (at most :data:`WAIT_SLICE_MS`) for the byte; True once it is read."""
        if timeout_ms <= 0 or not self._poll.poll(min(timeout_ms, WAIT_SLICE_MS)):
            return False
        return bool(os.read(self._receive_fd, 1))

    def close(self) -> None:
        """Close both ends (once: a second call does nothing, it never closes a reused descriptor)."""
        fds = (self._send_fd, self._receive_fd)
        self._send_fd = self._receive_fd = -1
        for fd in fds:
            if fd >= 0:
                os.close(fd)


class WakePipes:
    """A pool of wake pipes: :meth:`take` one to wait on, :meth:`give` it back once its byte was read."""

    def __init__(self) -> None:
        # _lock guards _idle, _all and _users.
        self._lock = threading.Lock()
        self._idle: List[WakePipe] = []
        self._all: Set[WakePipe] = set()  # idle and in use, for release_in_fork
        self._users = 0  # clients attached: with none, no pipe is kept idle

    def attach(self) -> None:
        """A client that will take pipes from this pool (pair with :meth:`detach`)."""
        with self._lock:
            self._users += 1

    def detach(self) -> None:
        """A client closed: once none is attached, the idle pipes are closed (those in use when given back)."""
        with self._lock:
            self._users = max(0, self._users - 1)
            if self._users:
                return
            idle, self._idle = self._idle, []
            for pipe in idle:
                self._all.discard(pipe)
        for pipe in idle:
            pipe.close()

    def take(self) -> Optional[WakePipe]:
        """An idle pipe, a new one, or None (off Linux, at the limit, or out of descriptors: wait on a lock)."""
        if not _USABLE:
            return None
        with self._lock:
            if self._idle:
                return self._idle.pop()
            if len(self._all) >= MAX_WAKE_PIPES:
                return None
            try:
                pipe = WakePipe()
            except OSError as exc:  # out of file descriptors: not worth failing a call for
                logger.debug("no wake pipe (%s): the call waits on a lock", exc)
                return None
            self._all.add(pipe)
            return pipe

    def give(self, pipe: WakePipe) -> None:
        """Back to the pool, its byte read (closed when the pool keeps enough idle, or has no client left)."""
        with self._lock:
            if self._users and len(self._idle) < MAX_IDLE_WAKE_PIPES:
                self._idle.append(pipe)
                return
            self._all.discard(pipe)
        pipe.close()

    def drop(self, pipe: WakePipe) -> None:
        """Set aside a pipe whose byte never came: not used, not closed (a late write must not hit a reused fd)."""
        with self._lock:
            self._all.discard(pipe)
        _SET_ASIDE.append(pipe)  # kept, and with it its descriptors: a late byte lands in this pipe

    def counts(self) -> Tuple[int, int]:
        """(pipes open, of which idle): a snapshot, for tests and diagnostics."""
        with self._lock:
            return len(self._all), len(self._idle)

    def release_in_fork(self) -> None:
        """In a forked child: close this process's copies of every pipe and start empty, taking no lock."""
        pipes = list(self._all)
        self._lock = threading.Lock()  # a thread of the parent may have held the old one
        self._all, self._idle, self._users = set(), [], 0
        for pipe in pipes:
            pipe.close()


#: The process's wake pipes, shared by every client.
PROCESS_WAKE_PIPES = WakePipes()

if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=PROCESS_WAKE_PIPES.release_in_fork)


__all__ = [
    "AFFINITY_RECHECK_S",
    "MAX_IDLE_WAKE_PIPES",
    "MAX_WAKE_PIPES",
    "PROCESS_WAKE_PIPES",
    "WAIT_SLICE_MS",
    "WakePipe",
    "WakePipes",
    "defer_yields",
    "yield_deferred",
]
