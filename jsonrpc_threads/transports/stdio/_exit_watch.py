"""A file descriptor that becomes readable when the child exits.

The reader and the stderr drain poll it beside their pipe, so a child that
exits while a process it started still holds stdout (or stderr) open ends
the stream anyway.  On Linux it is a pidfd (safe from pid reuse: the child is
ours and not reaped yet); elsewhere, or where a sandbox forbids pidfds, a
thread blocked in ``wait()`` writes to a self-pipe once the child is reaped.

Each user polls a duplicate of its own (``ExitWatch.open_fd``) and closes
it when done, so no thread ever closes a descriptor another one polls.
"""

from __future__ import annotations

import os
import subprocess
import threading
from typing import Callable, Optional

from ...runtime.logs import get_logger
from .._poll import close_quietly

_log = get_logger("jsonrpc_threads.transports.stdio")

#: ``os.pidfd_open`` where the platform has it (Linux); tests set it to None to use the fallback.
PIDFD_OPEN: Optional[Callable[[int], int]] = getattr(os, "pidfd_open", None)


class ExitWatch:
    """The child's exit, as something to poll.  Thread-safe."""

    def __init__(self, popen: subprocess.Popen[bytes], label: str) -> None:
        self._popen = popen
        self._label = label
        self._signal_fd: Optional[int] = None  # the self-pipe's write end, closed by the waiter
        self.waiter: Optional[threading.Thread] = None
        self._fd: Optional[int] = self._open()
        # _lock guards _fd (closed by close()).
        self._lock = threading.Lock()

    def _open(self) -> int:
        pidfd_open = PIDFD_OPEN
        if pidfd_open is not None:
            try:
                return pidfd_open(self._popen.pid)
            except OSError as exc:  # an old kernel, or a sandbox that forbids it
                _log.debug(
                    "[%s pid %d] pidfd_open failed (%r): a thread waits for the exit", self._label, self._popen.pid, exc
                )
        read_fd, self._signal_fd = os.pipe()
        self.waiter = threading.Thread(
            target=self._wait_for_exit, name=f"jsonrpc-stdio-exit[{self._popen.pid}]", daemon=True
        )
        return read_fd

    def start(self) -> None:
        """Start the fallback's waiter thread (nothing to do for a pidfd)."""
        if self.waiter is not None:
            self.waiter.start()

    def open_fd(self) -> Optional[int]:
        """A new descriptor to poll (readable once the child exited), or None once closed.

        The caller closes it.
        """
        with self._lock:
            return None if self._fd is None else os.dup(self._fd)

    def close(self) -> None:
        """Close the watch's own descriptor (the duplicates stay valid).  Idempotent."""
        with self._lock:
            fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)
        waiter = self.waiter
        if waiter is not None and waiter.ident is None and self._signal_fd is not None:
            os.close(self._signal_fd)  # the waiter never started: nobody else closes it
            self._signal_fd = None

    def release_in_fork(self) -> None:
        """Close this process's copies of the watch's descriptors, taking no lock."""
        fds = (self._fd, self._signal_fd)
        self._fd = self._signal_fd = None
        close_quietly(*fds)

    def _wait_for_exit(self) -> None:
        """The fallback: reap the child, then make the pipe readable (for good)."""
        signal_fd = self._signal_fd
        assert signal_fd is not None
        try:
            self._popen.wait()
        except Exception:
            _log.debug("[%s pid %d] waiting for the exit failed", self._label, self._popen.pid, exc_info=True)
        finally:
            try:
                os.write(signal_fd, b"x")
            finally:
                os.close(signal_fd)
                self._signal_fd = None


__all__ = ["PIDFD_OPEN", "ExitWatch"]
