"""The child's stderr: drained from the start, logged by line, its end kept.

A child that floods stderr must never block on a full pipe, so one thread
reads it from the moment the child starts.  Each line goes to the module
logger (at the transport's ``stderr_log_level``) and the last part of the
stream is kept (``StderrDrain.tail``) for error messages: a
``TransportClosed`` carries the child's last words.

Once the child exited, what stderr held at that moment is read at once
(bounded by ``STDERR_DRAIN_WAIT_S``) and ``StderrDrain.caught_up`` is
set, so the end-of-stream report can wait for it; a process the child
started may hold stderr open longer, and what it writes is still logged,
until ``close()`` has reclaimed what it could (``StderrDrain.stop_when_quiet``).
"""

from __future__ import annotations

import os
import select
import threading
import time
from typing import IO, Optional

from ...runtime.logs import get_logger
from .._poll import POLL_SLICE_MS, close_quietly

_log = get_logger("jsonrpc_threads.transports.stdio")

#: End of stdout, child exited: how long to wait for the stderr drain to finish.
STDERR_DRAIN_WAIT_S = 1.0
#: Default size of the stderr tail kept for error messages.
DEFAULT_STDERR_TAIL_BYTES = 64 * 1024

_CHUNK_BYTES = 64 * 1024
#: A stderr "line" longer than this is logged in pieces.
_LOG_LINE_MAX_BYTES = 8 * 1024
_CAN_POLL = hasattr(select, "poll")


class StderrDrain:
    """One thread reading the child's stderr to its end.  Thread-safe."""

    def __init__(
        self,
        stream: IO[bytes],
        exit_fd: Optional[int],
        label: str,
        pid: int,
        *,
        tail_bytes: int,
        log_level: int,
    ) -> None:
        self._stream = stream
        self._exit_fd = exit_fd  # ours to close
        self._label = label
        self._pid = pid
        self._tail_limit = max(0, tail_bytes)
        self._log_level = log_level
        # _tail_lock guards _tail and _trimmed.
        self._tail_lock = threading.Lock()
        self._tail = bytearray()
        self._trimmed = False
        self._pending = b""  # the start of a line not logged yet (drain thread only)
        self._quiet_stop = False  # close() reclaimed what it could: stop at the first quiet slice
        self.eof = False  # the drain read to the end of the pipe (nobody holds its write end any more)
        #: Set once what stderr held when the child exited (or at EOF) was read.
        self.caught_up = threading.Event()
        self.closing = False  # set by the transport: read errors are expected now
        self.thread = threading.Thread(target=self._run, name=f"jsonrpc-stdio-stderr[{pid}]", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop_when_quiet(self) -> None:
        """Let the drain end once the pipe has been quiet for a poll slice (after reclaim)."""
        self._quiet_stop = True

    def close_unstarted(self) -> None:
        """Close what a thread that never started would have closed."""
        if self.thread.ident is None:
            self._close_fds()

    def release_in_fork(self) -> None:
        """Close this process's copy of the exit watch's descriptor (the pipe is closed with the others)."""
        exit_fd, self._exit_fd = self._exit_fd, None
        close_quietly(exit_fd)

    def tail(self) -> str:
        """The end of what the child wrote (at most ``tail_bytes``), decoded as UTF-8 (replaced).

        Starts at a line boundary when older output was dropped.
        """
        limit = self._tail_limit
        with self._tail_lock:
            data = bytes(self._tail[-limit:]) if limit > 0 else b""
            trimmed = self._trimmed or len(self._tail) > len(data)
        if trimmed:
            newline = data.find(b"\n")
            if 0 <= newline < len(data) - 1:
                data = data[newline + 1 :]
        return data.decode("utf-8", "replace")

    def _run(self) -> None:
        try:
            if _CAN_POLL:
                self._drain_polling()
            else:
                self._drain_blocking()
        except (OSError, ValueError) as exc:
            if not self.closing:
                _log.warning("[%s pid %d] stderr could not be read: %r", self._label, self._pid, exc)
        finally:
            if self._pending:
                self._log_line(self._pending)
            self.caught_up.set()
            self._close_fds()

    def _close_fds(self) -> None:
        try:
            self._stream.close()
        except OSError:
            pass
        exit_fd, self._exit_fd = self._exit_fd, None
        if exit_fd is not None:
            os.close(exit_fd)

    def _drain_blocking(self) -> None:
        read = self._stream.read
        while True:
            chunk = read(_CHUNK_BYTES)
            if not chunk:
                self.eof = True
                return
            self._chunk(chunk)

    def _drain_polling(self) -> None:
        read = self._stream.read
        stderr_fd = self._stream.fileno()
        os.set_blocking(stderr_fd, False)
        exit_fd = self._exit_fd
        poller = select.poll()
        poller.register(stderr_fd, select.POLLIN | select.POLLHUP | select.POLLERR)
        if exit_fd is not None:
            poller.register(exit_fd, select.POLLIN)
        exited = False
        while True:
            events = poller.poll(POLL_SLICE_MS if exited else None)
            if not events:
                if self._quiet_stop:
                    return
                continue
            if not exited and exit_fd is not None and any(fd == exit_fd for fd, _ in events):
                exited = True
                poller.unregister(exit_fd)
                deadline = time.monotonic() + STDERR_DRAIN_WAIT_S
                while time.monotonic() < deadline:
                    chunk = read(_CHUNK_BYTES)
                    if chunk is None:
                        break
                    if not chunk:
                        self.eof = True
                        return
                    self._chunk(chunk)
                self.caught_up.set()
                continue
            chunk = read(_CHUNK_BYTES)
            if chunk is None:
                continue
            if not chunk:
                self.eof = True
                return
            self._chunk(chunk)

    def _chunk(self, chunk: bytes) -> None:
        limit = self._tail_limit
        if limit > 0:
            with self._tail_lock:
                self._tail += chunk
                if len(self._tail) > 2 * limit:
                    del self._tail[: len(self._tail) - limit]
                    self._trimmed = True
        if _log.isEnabledFor(self._log_level):
            *lines, rest = (self._pending + chunk).split(b"\n")
            for line in lines:
                self._log_line(line)
            while len(rest) > _LOG_LINE_MAX_BYTES:
                self._log_line(rest[:_LOG_LINE_MAX_BYTES])
                rest = rest[_LOG_LINE_MAX_BYTES:]
            self._pending = rest

    def _log_line(self, line: bytes) -> None:
        text = line.decode("utf-8", "replace").rstrip("\r")
        _log.log(self._log_level, "[%s pid %d] stderr: %s", self._label, self._pid, text)


__all__ = ["DEFAULT_STDERR_TAIL_BYTES", "STDERR_DRAIN_WAIT_S", "StderrDrain"]
