"""The waiter strategy: a blocked ``call()`` sleeps on a pipe, not a lock, and its settler lets it run.

Theory of operation.  A thread blocked in ``lock.acquire()`` is woken by
``release()``, which runs with the GIL held: the woken thread runs at once,
finds the GIL taken and sleeps again until the waker lets go of it.  A write
to a pipe lets go of the GIL for its system call, and a yield of the CPU
after it lets the woken caller take the GIL and run up to its next wait
before the waker goes on (on one CPU the caller runs when the waker next
waits anyway, and there is no yield).  With many callers on two CPUs that is what pays:
four threads calling at once, 50.8 us a call against 56.0 on a lock, sixteen
35.7 against 39.7 (``benchmarks/README.md``, "The guard's second look").
This module is that strategy (``JsonRpcClient(waiter="wake_pipe")``, the
default), and the only place that knows it; ``CallWaiter`` (``settling``) uses
it when it can and waits on a lock when it cannot, or when the client was made
with ``waiter="plain"``.

So a ``call()`` that has to wait for its answer takes a ``WakePipe`` (an
``os.pipe()``) from ``PROCESS_WAKE_PIPES`` and sleeps in ``poll()`` on its
read end (the poll's timeout bounds the wait); whoever settles it writes one
byte and yields, and the waiter reads that byte before the pipe goes back to
the pool (no byte is ever left behind for the next waiter).  A call whose
answer is in before it waits (the caller read it itself) takes no pipe.

The pool is the process's, shared by every client: the descriptors it keeps
do not grow with the number of clients (a registry of many servers).  It has
at most ``MAX_WAKE_PIPES`` pipes at once (two descriptors each,
close-on-exec) and keeps at most ``MAX_IDLE_WAKE_PIPES`` of them while they
are not in use; beyond that, off Linux, or when no descriptor is left, a call
waits on a lock.  Each client attaches itself when it is made
(``WakePipes.attach``) and detaches itself at ``close()``: once no client is
left, the idle pipes are closed, and each pipe still in use is closed when its
call gives it back, so a process whose clients are all closed holds none.  A
forked child starts with an empty pool (``jsonrpc_threads.runtime.fork``).

Thread-safety: ``WakePipes`` may be used from any thread; a ``WakePipe`` has
one waiter and one waker at a time.
"""

from __future__ import annotations

import os
import select
import sys
import threading
import time

from . import fork as _fork
from .logs import get_logger

TYPE_CHECKING = False  # typing is not imported at run time (as settling, which uses this)
if TYPE_CHECKING:
    from typing import List, Optional, Set, Tuple

logger = get_logger(__name__)

#: The most wake pipes the process has at once (each is two file descriptors).
MAX_WAKE_PIPES = 64
#: The most it keeps while they are not in use: a burst of waiting calls (a hung tool)
#: leaves no more descriptors open than this once it is over, however many clients.
MAX_IDLE_WAKE_PIPES = 4
#: The longest one wait on a wake pipe lasts before the waiter looks at its call again
#: (a byte lost would be a late wake-up, never a hang).
WAIT_SLICE_MS = 1000

#: Pipes whose byte never came, kept open for good (see ``WakePipes.drop``).
_SET_ASIDE: List[WakePipe] = []
#: Where the pool is used (and tested): Linux; elsewhere a waiting call sleeps on a lock.
_USABLE = sys.platform.startswith("linux") and hasattr(select, "poll")
_yield_cpu = getattr(os, "sched_yield", None)
#: How long a look at the process's CPU affinity is trusted (it may change while running).
AFFINITY_RECHECK_S = 1.0
_one_cpu = [False, 0.0]  # confined to one CPU; when to look again (a race only repeats the look)


def _on_one_cpu() -> bool:
    """True when this process may run on one CPU only (looked at again every ``AFFINITY_RECHECK_S``).

    There the woken caller runs when the waker next waits anyway: a yield per
    wake-up would only add a switch there and back.
    """
    now = time.monotonic()
    if now >= _one_cpu[1]:
        get_affinity = getattr(os, "sched_getaffinity", None)
        try:
            _one_cpu[0] = get_affinity is not None and len(get_affinity(0)) == 1
        except OSError:  # unknown: yield, as on several CPUs
            _one_cpu[0] = False
        _one_cpu[1] = now + AFFINITY_RECHECK_S
    return bool(_one_cpu[0])


class WakePipe:
    """A pipe: ``post`` writes the byte that ``wait`` waits for."""

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
        """Wake the waiter (the GIL is let go for the write); on several CPUs, let it run before the waker goes on."""
        os.write(self._send_fd, b"\x01")
        if _yield_cpu is not None and not _on_one_cpu():
            _yield_cpu()

    def wait(self, timeout_ms: int) -> bool:
        """Wait up to ``timeout_ms`` (at most ``WAIT_SLICE_MS``) for the byte; True once it is read."""
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
    """A pool of wake pipes: ``take`` one to wait on, ``give`` it back once its byte was read."""

    def __init__(self) -> None:
        # _lock guards _idle, _all and _users.
        self._lock = threading.Lock()
        self._idle: List[WakePipe] = []
        self._all: Set[WakePipe] = set()  # idle and in use, for release_in_fork
        self._users = 0  # clients attached: with none, no pipe is kept idle

    def attach(self) -> None:
        """A client that will take pipes from this pool (pair with ``detach``)."""
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
_fork.at_fork_in_child(PROCESS_WAKE_PIPES.release_in_fork)


__all__ = [
    "AFFINITY_RECHECK_S",
    "MAX_IDLE_WAKE_PIPES",
    "MAX_WAKE_PIPES",
    "PROCESS_WAKE_PIPES",
    "WAIT_SLICE_MS",
    "WakePipe",
    "WakePipes",
]
