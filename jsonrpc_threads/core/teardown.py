"""The end of a client: its close, once and bounded in time, the transport's end, and a fork.

Theory of operation.  Off the request path: this runs when the client
closes, never while a request is made or answered.  The first ``close()``
runs the sequence: the shell ends (every pending request fails with
``TransportClosed``, the timer is dropped, new requests are refused), the
transport closes (its own bounded escalation), then the client's workers
stop: running handlers get ``HANDLER_SHUTDOWN_GRACE_S``, queued
done-callbacks ``CALLBACK_SHUTDOWN_GRACE_S``.  A second caller waits
(``SECOND_CLOSE_WAIT_S``) for the first to finish, unless it is one of the
client's own worker threads, which the first may be waiting for.

In a process forked after the client was made, the client is unusable
(``check_process``), and closing it only lets go of this process's copies of
the transport's descriptors: nothing is signalled, sent or waited for, and the
parent's server and session live on.

Thread-safety: every method may be called from any thread.
"""

from __future__ import annotations

import threading
from typing import Optional

from ..errors import TransportClosed
from ..runtime import fork as _fork
from ..runtime.wake_pipes import WakePipes
from ..runtime.workers import current_worker
from ..transports.base import Transport
from .shell import Shell

#: How long ``close()`` waits for running handlers before leaving them to their daemon threads.
HANDLER_SHUTDOWN_GRACE_S = 2.0
#: How long ``close()`` lets queued done-callbacks run before it returns.
CALLBACK_SHUTDOWN_GRACE_S = 2.0
#: A second ``close()`` waits this long for the first one to finish.
SECOND_CLOSE_WAIT_S = 15.0


class Teardown:
    """The close sequence of one client.  Thread-safe.

    Args:
        shell: the client's shell (its end, and its workers).
        transport: the client's transport, closed once.
        label: the transport's label, for messages.
        made_in: the fork generation (``jsonrpc_threads.runtime.fork``) the client was made in.
        wake_pipes: the wake pipes the client attached to (its waiter's), detached at close; or None.
    """

    def __init__(
        self, shell: Shell, transport: Transport, label: str, made_in: int, wake_pipes: Optional[WakePipes] = None
    ) -> None:
        self._shell = shell
        self._wake_pipes = wake_pipes
        self._transport = transport
        self._label = label
        self._made_in = made_in
        # _lock guards _started; _done is set once the first close() finished.
        self._lock = threading.Lock()
        self._started = False
        self._done = threading.Event()

    def close(self) -> None:
        """Fail what is pending, close the transport, stop the workers; bounded.  Idempotent.

        In a forked process, only the release (see the module docstring).
        """
        if _fork.forked_since(self._made_in):
            self._release_in_fork()
            return
        with self._lock:
            first = not self._started
            self._started = True
        if not first:
            if not self.own_thread():
                self._done.wait(SECOND_CLOSE_WAIT_S)
            return
        try:
            self._shell.end(TransportClosed("Client closed"))
            try:
                self._transport.close()
            finally:
                self.stop_workers(HANDLER_SHUTDOWN_GRACE_S)
        finally:
            if self._wake_pipes is not None:
                self._wake_pipes.detach()  # attached when the client was made
            self._done.set()

    def transport_closed(self, error: TransportClosed) -> None:
        """The transport is gone: fail everything pending (after the notifications before it), tell the observer."""
        shell = self._shell
        shell.end(error, lost=True)
        observer = shell.observer
        if observer is not None:
            observer.closed(error)

    def check_process(self) -> None:
        """Raise when called in a process forked after the client was made.

        Raises:
            TransportClosed: the client was made before a fork of this process.
        """
        if _fork.generation != self._made_in:
            raise TransportClosed(
                f"{self._label}: this client was made before a fork; a forked process cannot use its parent's "
                "pipes and sessions: make a new client in this process (a ToolRegistry restarts its servers itself)"
            )

    def _release_in_fork(self) -> None:
        """Let go of this process's copies of the transport's descriptors.  Takes no lock (a thread of the parent
        may have held one)."""
        release = self._shell.capabilities.release_in_fork
        if release is not None:
            release()

    def stop_workers(self, grace: float) -> None:
        """Stop the workers (bounded: ``grace`` for handlers, ``CALLBACK_SHUTDOWN_GRACE_S`` for callbacks)."""
        shell = self._shell
        shell.lane.shutdown(grace)
        shell.workers.shutdown(grace)
        shell.callbacks.shutdown(CALLBACK_SHUTDOWN_GRACE_S if grace else 0.0, drain=True)

    def own_thread(self) -> bool:
        """True on one of this client's own worker threads."""
        shell = self._shell
        return current_worker() in (shell.workers, shell.lane, shell.callbacks)


__all__ = ["CALLBACK_SHUTDOWN_GRACE_S", "HANDLER_SHUTDOWN_GRACE_S", "SECOND_CLOSE_WAIT_S", "Teardown"]
