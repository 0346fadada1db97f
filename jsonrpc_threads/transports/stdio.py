"""Run a JSON-RPC peer as a child process and talk to it over stdin and stdout.

Theory of operation.  The child is spawned when the transport is built, so a
command that cannot run fails at once.  Its three standard streams are pipes:

- stdin carries our messages, one encoded JSON text per line; writes are
  serialized by a write lock and go out in one call each;
- stdout is read by one reader thread (started by :meth:`StdioTransport.start`)
  that splits it on ``b"\\n"`` only (U+2028 inside a JSON string is not a line
  break here) and hands each non-blank line, as bytes, to the sink.  A caller
  blocked on its own answer may read instead (:meth:`StdioTransport.read_directly`:
  no hand-off between threads); one thread reads at a time (the read baton),
  and the reader thread steps aside only while no request is pending.  A line
  longer than the limit is read and thrown away piece by piece, never held
  whole, and the stream goes on (if it was a response, the request it answers
  fails with ``MessageTooLarge`` through ``sink.requests_failed``); a last line
  without newline at end of stream is delivered too;
- stderr is drained from the start by its own thread into the module logger
  and a bounded tail (:meth:`StdioTransport.stderr_tail`), so a child that
  floods stderr never blocks on a full pipe.

At end of stream the reader waits briefly for the child to exit and for the
stderr drain to finish, so the :class:`TransportClosed` it reports carries the
exit code and the child's last words.  Where pipes can be polled, the child's
exit is watched as well as stdout (a pidfd on Linux, else a thread blocked in
``wait()`` that writes to a self-pipe): a child that exits while a process it
started still holds stdout ends the stream too, once what stdout already holds
was read (bounded by :data:`EXIT_AFTER_EOF_WAIT_S`).  :meth:`StdioTransport.close` reclaims
the whole process tree: close stdin, wait, terminate every process of the tree
(collected before anything is signalled), wait, kill what is left, reap.  The
tree is the child's descendants, what is left in its process group, and (on
Linux) every process that holds one of its pipes, found in ``/proc/*/fd``: a
grandchild in its own session is found even after the child died.  Every wait
is bounded by a named constant below.

The threads and the finalizer work on a private :class:`_Child` object that
never refers to the transport, so a transport that is dropped without
``close()`` can be garbage-collected: its finalizer reaps the child and emits a
:class:`ResourceWarning`.  The sink is held weakly by the threads and strongly
by the transport, so it lives exactly as long as the transport does.  At
interpreter exit, transports still open are closed quickly by an ``atexit``
hook.

On POSIX the child starts in a new session (its own process group): a Ctrl-C
in the terminal reaches only the parent, which closes its children in order,
and processes the child left in its group are still found and reclaimed at
``close()`` after the child itself has exited.
"""

from __future__ import annotations

import atexit
import json
import logging
import math
import os
import re
import select
import shlex
import shutil
import subprocess
import threading
import time
import warnings
import weakref
from collections import deque
from typing import IO, Callable, Deque, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

import psutil

from ..errors import MessageTooLarge, RequestId, TransportClosed
from .base import MessageSink

__all__ = [
    "DEFAULT_ENV_ALLOWLIST",
    "DEFAULT_MAX_LINE_BYTES",
    "DEFAULT_STDERR_TAIL_BYTES",
    "STDIN_CLOSE_GRACE_S",
    "TERMINATE_GRACE_S",
    "KILL_GRACE_S",
    "EXIT_AFTER_EOF_WAIT_S",
    "STDERR_DRAIN_WAIT_S",
    "THREAD_JOIN_S",
    "ATEXIT_STDIN_GRACE_S",
    "ATEXIT_TERMINATE_GRACE_S",
    "ATEXIT_JOIN_S",
    "CLOSE_WAIT_S",
    "StdioTransport",
]

_log = logging.getLogger(__name__)

#: Variables of the parent's environment passed on to the child by default
#: (when ``inherit_env`` is false).  Enough to find programs, a home, the
#: locale, a temporary directory and the time zone, on POSIX and on Windows;
#: secrets such as API keys stay behind unless passed through ``env``.
DEFAULT_ENV_ALLOWLIST = (
    # POSIX
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "TERM",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TMPDIR",
    "TZ",
    # Windows
    "APPDATA",
    "COMSPEC",
    "HOMEDRIVE",
    "HOMEPATH",
    "LOCALAPPDATA",
    "PATHEXT",
    "PROCESSOR_ARCHITECTURE",
    "PROGRAMDATA",
    "PROGRAMFILES",
    "SYSTEMDRIVE",
    "SYSTEMROOT",
    "TEMP",
    "TMP",
    "USERNAME",
    "USERPROFILE",
    "WINDIR",
)

#: Default limit on one line of the child's stdout (one message).
DEFAULT_MAX_LINE_BYTES = 16 * 1024 * 1024
#: Default size of the stderr tail kept for :meth:`StdioTransport.stderr_tail`.
DEFAULT_STDERR_TAIL_BYTES = 64 * 1024

#: ``close()``: how long the child gets to exit after its stdin was closed.
STDIN_CLOSE_GRACE_S = 2.0
#: ``close()``: how long the process tree gets to exit after SIGTERM.
TERMINATE_GRACE_S = 2.0
#: ``close()``: how long to wait for the tree to be gone after SIGKILL.
KILL_GRACE_S = 2.0
#: End of stdout: how long the reader waits for the child to exit before
#: reporting the transport closed (with ``returncode`` None if it did not).
EXIT_AFTER_EOF_WAIT_S = 1.0
#: End of stdout, child exited: how long to wait for the stderr drain to finish.
STDERR_DRAIN_WAIT_S = 1.0
#: ``close()``: how long to wait for each of the transport's threads to end.
THREAD_JOIN_S = 2.0
#: Interpreter exit: shorter graces, so the interpreter exits promptly.
ATEXIT_STDIN_GRACE_S = 0.5
ATEXIT_TERMINATE_GRACE_S = 0.5
#: Interpreter exit: how long to wait for all transports' threads together.
ATEXIT_JOIN_S = 0.5
#: A second ``close()`` waits this long for the first one to finish.
CLOSE_WAIT_S = STDIN_CLOSE_GRACE_S + TERMINATE_GRACE_S + KILL_GRACE_S + 2 * THREAD_JOIN_S + 1.0

#: A caller that read its own response (read_directly) keeps the reader thread
#: out of the way this long after, when no request is pending: the next call()
#: then reads its answer itself, without a thread hand-off.  It is also the
#: longest a message that nobody waits for (a notification while the client is
#: idle) may sit in the pipe before the reader thread reads it.
READER_PARK_S = 0.005

_READ_CHUNK_BYTES = 256 * 1024
#: Requests queued for the thread that holds the write lock, at most; more wait for the lock.
_WRITE_QUEUE_MAX = 1024
_STDERR_CHUNK_BYTES = 64 * 1024
#: Bytes kept of a line over the limit, to find the id of the response it was.
_OVERSIZED_HEAD_BYTES = 64 * 1024
#: A caller reading directly looks up from poll() this often (for close()).
_POLL_SLICE_MS = 50
#: Callers can read directly where pipes can be polled (not on Windows).
_DIRECT_READS = hasattr(select, "poll")
_READER = "reader"
_DIRECT = "direct"
#: A stderr "line" longer than this is logged in pieces.
_LOG_LINE_MAX_BYTES = 8 * 1024
#: Polling interval bounds while waiting for processes that are not our children.
_POLL_MIN_S = 0.002
_POLL_MAX_S = 0.05
_LABEL_MAX_CHARS = 60

_POSIX = os.name == "posix"
#: ``os.pidfd_open`` where the platform has it (Linux); tests set it to None to use the fallback.
_PIDFD_OPEN: Optional[Callable[[int], int]] = getattr(os, "pidfd_open", None)
#: Where processes' open files can be listed (Linux): close() finds who holds the child's pipes.
_PROC_FD_DIR = "/proc/self/fd"
#: End of stdout when the child exited but another process still holds the pipe open.
_HELD_REASON = "exited; a process it started still holds its stdout"
_CLOSED_STDOUT = "closed its stdout"

#: The head of a response: ``{"jsonrpc": "2.0", "id": ID, "result"|"error"``
#: (``jsonrpc`` before or after ``id``).  Used only for a line over the size
#: limit, to fail the request it answers instead of leaving it to time out.
_RESPONSE_HEAD = re.compile(
    rb'\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*(-?\d{1,30}|"(?:[^"\\]|\\.){0,1000}")\s*,'
    rb'\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"(?:result|error)"\s*:'
)

#: Children of transports not yet closed, for the ``atexit`` hook.
_LIVE: weakref.WeakSet[_Child] = weakref.WeakSet()

SinkRef = Callable[[], Optional[MessageSink]]


def _no_sink() -> Optional[MessageSink]:
    return None


def _strong_ref(sink: MessageSink) -> SinkRef:
    return lambda: sink


class _Child:
    """The child process, its pipes and the transport's state.

    The reader and stderr threads, the finalizer and the ``atexit`` hook use
    this object only; it never refers to the :class:`StdioTransport`.
    """

    def __init__(
        self,
        popen: subprocess.Popen[bytes],
        label: str,
        *,
        max_line_bytes: int,
        stderr_tail_bytes: int,
        stderr_log_level: int,
        new_session: bool,
    ) -> None:
        assert popen.stdin is not None and popen.stdout is not None and popen.stderr is not None
        self.popen = popen
        self.pid = popen.pid
        self.label = label
        self.max_line_bytes = max_line_bytes
        self.stderr_tail_bytes = stderr_tail_bytes
        self.stderr_log_level = stderr_log_level
        self.new_session = new_session
        self.stdin: IO[bytes] = popen.stdin  # raw (unbuffered): one write call per message
        self.stdout: IO[bytes] = popen.stdout  # raw: read in chunks, split into lines here
        self.stdout_fd = self.stdout.fileno()
        self.read_view = memoryview(bytearray(_READ_CHUNK_BYTES))
        # Line splitting state; used only by the thread that holds the read baton.
        self.partial = bytearray()  # the start of a line whose newline has not arrived yet
        self.discarding = False  # inside a line over the limit: drop bytes until its newline
        self.discard_head = b""
        self.discard_total = 0
        self.full_read = False  # the last read filled the buffer: read again before polling
        # The pipes' inodes, to find at close() every process that holds one of them.
        self.pipe_inodes = frozenset(os.fstat(f.fileno()).st_ino for f in (popen.stdin, popen.stdout, popen.stderr))
        self.stderr: IO[bytes] = popen.stderr
        # exit_fd is readable once the child exited: a pidfd, or the read end of a
        # self-pipe that exit_waiter writes to once wait() returned.  Never read.
        self.exit_fd: Optional[int] = None
        self.exit_signal_fd: Optional[int] = None  # the self-pipe's write end, closed by exit_waiter
        self.exit_waiter: Optional[threading.Thread] = None
        self.poller = select.poll() if _DIRECT_READS else None
        if self.poller is not None:
            self.exit_fd = exit_fd = self._watch_exit()
            os.set_blocking(self.stdout_fd, False)
            os.set_blocking(self.stderr.fileno(), False)
            # Registration order is the order of poll()'s answer: stdout first, the exit last.
            self.poller.register(self.stdout_fd, select.POLLIN | select.POLLHUP | select.POLLERR)
            self.poller.register(exit_fd, select.POLLIN)
        try:
            self.create_time: Optional[float] = psutil.Process(self.pid).create_time()
        except psutil.Error:
            self.create_time = None
        # lock guards: closing, ended, notified, closer, sink_ref, reader.  It is
        # re-entrant because a finalizer (run by the garbage collector on any
        # thread) may close this child while that thread holds it.
        self.lock = threading.RLock()
        self.closing = False  # close() (or the finalizer, or atexit) has begun
        self.ended = False  # end of stream seen or closing: send() refuses
        self.notified = False  # sink.transport_closed was called (or must not be)
        self.closer: Optional[threading.Thread] = None
        self.sink_ref: SinkRef = _no_sink
        self.reader: Optional[threading.Thread] = None
        self.closed_event = threading.Event()
        # read_cond guards read_owner, park_until, parked and read_end: the read baton;
        # and reader_done, exit_fd_unused and the closing of exit_fd.
        # Whoever holds the baton (the reader thread, or a caller in read_directly)
        # is the only one reading stdout and splitting it into lines.
        # Re-entrant for the same reason as lock (a finalizer may close from any thread).
        self.read_cond = threading.Condition(threading.RLock())
        self.read_owner: Optional[str] = None
        self.park_until = 0.0  # the reader thread steps aside until then when nothing is pending
        self.parked = False  # the reader thread waits in read_cond (resume_reader must wake it)
        self.read_end: Optional[str] = None  # a caller saw the end of the stream: why
        self.reader_done = False  # the reader thread no longer polls exit_fd
        self.exit_fd_unused = False  # finish() is done with exit_fd: the reader thread closes it
        # write_lock guards stdin and stdin_closed; held for the whole of one write.
        self.write_lock = threading.Lock()
        # Requests whose senders found write_lock taken: whoever holds it writes
        # them (in one write) before letting go, and looks again after letting go.
        self.write_queue: Deque[Tuple[bytes, Sequence[RequestId]]] = deque()
        self.stdin_closed = False
        # tail_lock guards tail and tail_trimmed.
        self.tail_lock = threading.Lock()
        self.tail = bytearray()
        self.tail_trimmed = False
        # Set once the stderr drain has read what the pipe held when the child exited (or ended).
        self.stderr_caught_up = threading.Event()
        self.stderr_pending = b""  # the start of a stderr line not logged yet (stderr thread only)
        self.reclaimed = False  # close() has reclaimed what it could: threads stop waiting for EOF
        self.stderr_thread = threading.Thread(
            target=self._drain_stderr, name=f"jsonrpc-stdio-stderr[{self.pid}]", daemon=True
        )

    def _watch_exit(self) -> int:
        """A file descriptor that becomes readable when the child exits."""
        if _PIDFD_OPEN is not None:
            try:
                # Safe from pid reuse: the child is ours and not reaped yet.
                return _PIDFD_OPEN(self.pid)
            except OSError as exc:  # an old kernel, or a sandbox that forbids it
                _log.debug("[%s pid %d] pidfd_open failed (%r): a thread waits for the exit", self.label, self.pid, exc)
        exit_fd, self.exit_signal_fd = os.pipe()
        self.exit_waiter = threading.Thread(
            target=self._wait_for_exit, name=f"jsonrpc-stdio-exit[{self.pid}]", daemon=True
        )
        return exit_fd

    def _wait_for_exit(self) -> None:
        """The fallback exit watch: reap the child, then make exit_fd readable (for good)."""
        signal_fd = self.exit_signal_fd
        assert signal_fd is not None
        try:
            self.popen.wait()
        except Exception:
            _log.debug("[%s pid %d] waiting for the exit failed", self.label, self.pid, exc_info=True)
        finally:
            try:
                os.write(signal_fd, b"x")
            finally:
                os.close(signal_fd)

    def start_threads(self) -> None:
        self.stderr_thread.start()
        if self.exit_waiter is not None:
            self.exit_waiter.start()

    # -- writing -----------------------------------------------------------

    def write_line(self, data: bytes, request_ids: Sequence[RequestId] = ()) -> None:
        """Write ``data`` and a newline; see StdioTransport.send.

        A request (``request_ids`` given) whose sender finds another thread
        writing is queued instead of waiting for the write lock: the thread that
        holds the lock writes it, with whatever else was queued, in one write
        (many callers: no wait for the lock, no wake-up, fewer writes).  A
        failure to write it is reported through ``sink.requests_failed``.
        """
        payload = data + b"\n"
        lock = self.write_lock
        if not lock.acquire(False):
            queue = self.write_queue
            if request_ids and len(queue) < _WRITE_QUEUE_MAX:
                queue.append((payload, request_ids))
                if lock.acquire(False):
                    self._write_and_release(None)
                # else the holder writes it before it lets go, or looks again after
                return
            lock.acquire()
        self._write_and_release(payload)

    def _write_and_release(self, own: Optional[bytes]) -> None:
        """With write_lock held: write what is queued, then ``own``; let go; again while something was queued."""
        lock = self.write_lock
        queue = self.write_queue
        own_error: Optional[TransportClosed] = None
        failed: List[Tuple[List[RequestId], TransportClosed]] = []
        while True:
            try:
                parts: List[bytes] = []
                ids: List[RequestId] = []
                while queue:
                    part, part_ids = queue.popleft()
                    parts.append(part)
                    ids.extend(part_ids)
                if own is not None:
                    parts.append(own)
                if parts:
                    error = self._write_locked(parts[0] if len(parts) == 1 else b"".join(parts))
                    if error is not None:
                        if ids:
                            failed.append((ids, error))
                        if own is not None:
                            own_error = error
                own = None
            finally:
                lock.release()
            # A sender that queued after the queue was emptied, and found the lock
            # taken, left its request to this thread.
            if not queue or not lock.acquire(False):
                break
        if failed:
            sink = self.sink_ref()
            for ids, error in failed:
                if sink is not None:
                    try:
                        sink.requests_failed(ids, error)
                    except Exception:
                        _log.exception("[%s pid %d] sink.requests_failed failed", self.label, self.pid)
        if own_error is not None:
            raise own_error

    def _write_locked(self, payload: bytes) -> Optional[TransportClosed]:
        """With write_lock held: write ``payload`` whole; the error if it could not be."""
        if self.stdin_closed or self.ended:
            return self.closed_error("Transport closed")
        try:
            view = memoryview(payload)
            while view:
                written = self.stdin.write(view)
                view = view[written:]
        except (OSError, ValueError) as exc:
            error = self.closed_error(f"Write to {self.label} (pid {self.pid}) failed: {exc}")
            error.__cause__ = exc
            return error
        return None

    def close_stdin(self, timeout: float) -> bool:
        """Close stdin unless a write is stuck on it for ``timeout`` seconds."""
        if not self.write_lock.acquire(timeout=max(0.0, timeout)):
            return False
        try:
            if not self.stdin_closed:
                self.stdin_closed = True
                try:
                    self.stdin.close()
                except OSError:
                    pass
            return True
        finally:
            self.write_lock.release()
            if self.write_queue and self.write_lock.acquire(False):
                self._write_and_release(None)  # fails what was queued meanwhile

    # -- reading -----------------------------------------------------------

    def read_loop(self) -> None:
        reason = _CLOSED_STDOUT
        try:
            ended = self._pump()
            if ended is not None:
                reason = ended
        except Exception as exc:  # a read error ends the stream like EOF does
            reason = f"could not be read: {exc!r}"
            if not self.closing:
                _log.warning("[%s pid %d] stdout %s", self.label, self.pid, reason)
        finally:
            try:
                self.stdout.close()
            except OSError:
                pass
            with self.read_cond:
                self.reader_done = True
                release = self.exit_fd_unused
            if release:
                self.release_exit_fd()
        with self.lock:
            self.ended = True
            if self.closing:
                return  # close() reports, after reaping
        self._report_end(reason)

    def _pump(self) -> Optional[str]:
        """The reader thread's loop; returns the reason a direct reader saw the stream end, if one did."""
        cond = self.read_cond
        while True:
            with cond:
                while True:
                    if self.read_end is not None:
                        return self.read_end
                    self.parked = True  # from here on, resume_reader() wakes this thread
                    if self.read_owner is None:
                        if self.closing or self._reader_needed():
                            break
                        wait = self.park_until - time.monotonic()
                        if wait <= 0:
                            break
                    else:
                        wait = READER_PARK_S  # a caller is reading; look again now and then
                    cond.wait(wait)
                self.parked = False
                self.read_owner = _READER
            try:
                ended = self._read_next()
            finally:
                with cond:
                    self.read_owner = None
            if ended is not None:
                return ended

    def _read_next(self) -> Optional[str]:
        """The reader thread: wait for data or the child's exit, deliver one chunk; the end's reason, if it ended."""
        poller = self.poller
        if poller is None:  # pipes cannot be polled: a blocking read, EOF is the only end seen
            return None if self._read_chunk() else _CLOSED_STDOUT
        if not self.full_read:  # the pipe is most likely empty: wait first
            events = poller.poll()
            if events[-1][0] != self.stdout_fd:
                return self._drain_after_exit()
        return None if self._read_chunk() else _CLOSED_STDOUT

    def _reader_needed(self) -> bool:
        """True unless every request is answered (then callers may read themselves)."""
        if not _DIRECT_READS:
            return True
        sink = self.sink_ref()
        has_pending = getattr(sink, "has_pending", None)
        return has_pending is None or bool(has_pending())

    def read_directly(self, done: Callable[[], bool], deadline: Optional[float]) -> bool:
        """Read and deliver on the calling thread until ``done()``; see StdioTransport.read_directly."""
        poller = self.poller
        if poller is None:
            return False
        cond = self.read_cond
        with cond:
            # Reading here, or trying to, asks the reader thread to step aside once nothing is pending.
            self.park_until = time.monotonic() + READER_PARK_S
            if self.read_owner is not None or self.read_end is not None or self.closing:
                return False
            self.read_owner = _DIRECT
        ended: Optional[str] = None
        try:
            poll = poller.poll
            stdout_fd = self.stdout_fd
            while not done():
                if self.closing:
                    break  # the reader thread drains the stream to its end
                if deadline is None:
                    slice_ms = _POLL_SLICE_MS
                else:
                    slice_ms = min(_POLL_SLICE_MS, max(1, math.ceil((deadline - time.monotonic()) * 1000.0)))
                events = poll(slice_ms)
                if not events:
                    continue
                if events[-1][0] != stdout_fd:  # the child exited
                    ended = self._drain_after_exit()
                    break
                if not self._read_chunk():
                    ended = _CLOSED_STDOUT
                    break
        except Exception as exc:  # a read error ends the stream, as in the reader thread
            ended = f"could not be read: {exc!r}"
            if not self.closing:
                _log.warning("[%s pid %d] stdout %s", self.label, self.pid, ended)
        finally:
            with cond:
                self.read_owner = None
                self.park_until = time.monotonic() + READER_PARK_S
                if ended is not None:
                    self.read_end = ended
                if self.closing:
                    cond.notify_all()  # the reader thread, and finish() waiting to close exit_fd
                elif self.parked and ended is not None:
                    cond.notify()
        return True

    def resume_reader(self) -> None:
        """Wake the reader thread if it stepped aside: a request waits for it now."""
        if self.parked:
            with self.read_cond:
                self.park_until = 0.0
                self.read_cond.notify()

    def _read_chunk(self) -> bool:
        """Read what the pipe holds and deliver it; False at EOF.

        Blocks until there is something where pipes cannot be polled; elsewhere
        stdout is non-blocking and an empty pipe reads nothing.
        """
        # Into a buffer kept for the purpose: a fresh 256 KiB bytes object per
        # read would be mapped and unmapped by malloc every time (page faults).
        count = self.stdout.readinto(self.read_view)  # type: ignore[attr-defined]
        if count is None:  # nothing yet (non-blocking)
            self.full_read = False
            return True
        if not count:
            self._at_eof()
            return False
        self.full_read = count == len(self.read_view)
        self._feed(self.read_view[:count].tobytes())
        return True

    def _drain_after_exit(self) -> str:
        """The child exited: deliver what stdout already holds (bounded), then end the stream.

        Everything the child wrote is in the pipe by now (a process's files are
        closed before its exit can be seen).  At EOF the stream ends as usual;
        otherwise another process still holds the pipe, and what it writes later
        is not waited for.
        """
        deadline = time.monotonic() + EXIT_AFTER_EOF_WAIT_S
        while time.monotonic() < deadline:
            count = self.stdout.readinto(self.read_view)  # type: ignore[attr-defined]
            if count is None:
                break
            if not count:
                self._at_eof()
                return _CLOSED_STDOUT
            self._feed(self.read_view[:count].tobytes())
        self._at_eof()
        return _HELD_REASON

    def _feed(self, data: bytes) -> None:
        """Deliver every complete line in ``data`` (after what was left of the previous chunk)."""
        if self.discarding:
            newline = data.find(b"\n")
            if newline < 0:
                self.discard_total += len(data)
                return
            self.discard_total += newline + 1
            self._end_discard()
            data = data[newline + 1 :]
        partial = self.partial
        if partial:
            newline = data.find(b"\n")
            if newline < 0:
                partial += data
                if len(partial) > self.max_line_bytes:
                    self._begin_discard(bytes(partial))
                    partial.clear()
                return
            line = bytes(partial) + data[:newline]
            partial.clear()
            self._deliver(line)
            data = data[newline + 1 :]
        lines = data.split(b"\n")
        rest = lines.pop()
        for line in lines:
            self._deliver(line)
        if rest:
            if len(rest) > self.max_line_bytes:
                self._begin_discard(rest)
            else:
                partial += rest

    def _deliver(self, line: bytes) -> None:
        if len(line) > self.max_line_bytes:
            self.discard_total = len(line)
            self._begin_discard(line)
            self._end_discard()
            return
        if line and not line.isspace():
            sink = self.sink_ref()
            if sink is not None:
                try:
                    sink.message_received(line)
                except Exception:
                    _log.exception("[%s pid %d] sink.message_received failed", self.label, self.pid)

    def _at_eof(self) -> None:
        if self.discarding:
            self._end_discard()
        elif self.partial:
            line = bytes(self.partial)  # the last line, without newline, at end of stream
            self.partial.clear()
            self._deliver(line)

    def _begin_discard(self, head: bytes) -> None:
        """A line over the limit: keep its head (to find a response id), drop the rest as it comes."""
        self.discarding = True
        self.discard_head = head[:_OVERSIZED_HEAD_BYTES]
        self.discard_total = max(self.discard_total, len(head))

    def _end_discard(self) -> None:
        head, total = self.discard_head, self.discard_total
        self.discarding = False
        self.discard_head = b""
        self.discard_total = 0
        _log.error(
            "[%s pid %d] skipped a line of %d bytes: over the limit of %d bytes (max_line_bytes)",
            self.label,
            self.pid,
            total,
            self.max_line_bytes,
        )
        match = _RESPONSE_HEAD.match(head)
        if match is None:
            return
        request_id: RequestId
        raw_id = match.group(1)
        try:
            request_id = int(raw_id) if raw_id[:1] != b'"' else json.loads(raw_id)
        except ValueError:
            return
        sink = self.sink_ref()
        if sink is not None:
            try:
                sink.requests_failed([request_id], MessageTooLarge(self.max_line_bytes, "response"))
            except Exception:
                _log.exception("[%s pid %d] sink.requests_failed failed", self.label, self.pid)

    def _report_end(self, reason: str) -> None:
        try:
            self.popen.wait(EXIT_AFTER_EOF_WAIT_S)
        except subprocess.TimeoutExpired:
            pass
        returncode = self.popen.returncode
        if returncode is not None and self.stderr_thread.ident is not None:
            # The drain has read what stderr held at the exit (or ended): the last words are in the tail.
            self.stderr_caught_up.wait(STDERR_DRAIN_WAIT_S)
        if returncode is None or reason == _HELD_REASON:
            message = f"{self.label} (pid {self.pid}) {reason}"
        else:
            message = f"{self.label} (pid {self.pid}) exited"
        self.notify_closed(self.closed_error(message))

    # -- stderr ------------------------------------------------------------

    def _drain_stderr(self) -> None:
        try:
            if self.poller is None:
                self._drain_stderr_blocking()
            else:
                self._drain_stderr_polling()
        except (OSError, ValueError) as exc:
            if not self.closing:
                _log.warning("[%s pid %d] stderr could not be read: %r", self.label, self.pid, exc)
        finally:
            if self.stderr_pending:
                self._log_line(self.stderr_pending)
            self.stderr_caught_up.set()
            try:
                self.stderr.close()
            except OSError:
                pass

    def _drain_stderr_blocking(self) -> None:
        read = self.stderr.read
        while True:
            chunk = read(_STDERR_CHUNK_BYTES)
            if not chunk:
                return
            self._stderr_chunk(chunk)

    def _drain_stderr_polling(self) -> None:
        """Read stderr (non-blocking) until EOF; once the child exited, until close() reclaimed the rest.

        A process the child started may hold stderr open after the child's
        exit: what stderr held at the exit is read at once (bounded) for the
        report, what that process writes later is still logged, and once
        ``close()`` has reclaimed what it could, a quiet pipe ends the drain.
        """
        read = self.stderr.read
        stderr_fd = self.stderr.fileno()
        exit_fd = self.exit_fd
        poller = select.poll()
        poller.register(stderr_fd, select.POLLIN | select.POLLHUP | select.POLLERR)
        if exit_fd is not None:
            poller.register(exit_fd, select.POLLIN)
        exited = False
        while True:
            events = poller.poll(_POLL_SLICE_MS if exited else None)
            if not events:
                if self.reclaimed:
                    return
                continue
            if not exited and events[-1][0] == exit_fd:
                exited = True
                poller.unregister(exit_fd)
                deadline = time.monotonic() + STDERR_DRAIN_WAIT_S
                while time.monotonic() < deadline:
                    chunk = read(_STDERR_CHUNK_BYTES)
                    if chunk is None:
                        break
                    if not chunk:
                        return
                    self._stderr_chunk(chunk)
                self.stderr_caught_up.set()
                continue
            chunk = read(_STDERR_CHUNK_BYTES)
            if chunk is None:
                continue
            if not chunk:
                return
            self._stderr_chunk(chunk)

    def _stderr_chunk(self, chunk: bytes) -> None:
        limit = self.stderr_tail_bytes
        if limit > 0:
            with self.tail_lock:
                self.tail += chunk
                if len(self.tail) > 2 * limit:
                    del self.tail[: len(self.tail) - limit]
                    self.tail_trimmed = True
        if _log.isEnabledFor(self.stderr_log_level):
            self.stderr_pending = self._log_lines(self.stderr_pending + chunk)

    def _log_lines(self, data: bytes) -> bytes:
        *lines, rest = data.split(b"\n")
        for line in lines:
            self._log_line(line)
        while len(rest) > _LOG_LINE_MAX_BYTES:
            self._log_line(rest[:_LOG_LINE_MAX_BYTES])
            rest = rest[_LOG_LINE_MAX_BYTES:]
        return rest

    def _log_line(self, line: bytes) -> None:
        text = line.decode("utf-8", "replace").rstrip("\r")
        _log.log(self.stderr_log_level, "[%s pid %d] stderr: %s", self.label, self.pid, text)

    def stderr_tail(self) -> str:
        with self.tail_lock:
            data = bytes(self.tail[-self.stderr_tail_bytes :]) if self.stderr_tail_bytes > 0 else b""
            trimmed = self.tail_trimmed or len(self.tail) > len(data)
        if trimmed:
            # Start at a line boundary when the window cut a line.
            newline = data.find(b"\n")
            if 0 <= newline < len(data) - 1:
                data = data[newline + 1 :]
        return data.decode("utf-8", "replace")

    # -- ending ------------------------------------------------------------

    def closed_error(self, message: str) -> TransportClosed:
        return TransportClosed(message, returncode=self.popen.poll(), stderr_tail=self.stderr_tail())

    def notify_closed(self, error: TransportClosed) -> None:
        with self.lock:
            if self.notified:
                return
            self.notified = True
            sink = self.sink_ref()
        if sink is not None:
            try:
                sink.transport_closed(error)
            except Exception:
                _log.exception("[%s pid %d] sink.transport_closed failed", self.label, self.pid)

    def begin_close(self, *, notify: bool) -> bool:
        """Mark closing; True for the one caller that must do the work."""
        me = threading.current_thread()
        with self.lock:
            if self.closing:
                closer = self.closer
                first = False
            else:
                self.closing = True
                self.ended = True
                self.closer = me
                if not notify:
                    self.notified = True
                first = True
        if first:
            with self.read_cond:  # a parked reader thread goes back to reading, to the end
                self.read_cond.notify()
        if not first and me is not closer and me is not self.reader and me is not self.stderr_thread:
            # Another thread is closing: return when it is done, so that after
            # close() the process is gone whichever thread did the work.
            self.closed_event.wait(CLOSE_WAIT_S)
        return first

    def close(self, *, notify: bool = True) -> None:
        if not self.begin_close(notify=notify):
            return
        try:
            _reclaim([self], stdin_grace=STDIN_CLOSE_GRACE_S, terminate_grace=TERMINATE_GRACE_S)
            self.finish(time.monotonic() + THREAD_JOIN_S)
        finally:
            self.closed_event.set()
            _LIVE.discard(self)
        self.notify_closed(self.closed_error("Transport closed"))

    def finish(self, join_deadline: float) -> None:
        """Join the threads (bounded, never the current one) and close the pipes."""
        me = threading.current_thread()
        with self.lock:
            reader = self.reader
        for thread in (reader, self.stderr_thread, self.exit_waiter):
            if thread is not None and thread is not me and thread.ident is not None:
                thread.join(max(0.0, join_deadline - time.monotonic()))
                if thread.is_alive():
                    _log.warning("[%s pid %d] thread %s did not end", self.label, self.pid, thread.name)
        if not self.close_stdin(max(0.0, join_deadline - time.monotonic())):
            _log.warning("[%s pid %d] a write is still blocked on stdin; left open", self.label, self.pid)
        # A thread that never started cannot close its pipe; the others do it themselves.
        if reader is None:
            self.stdout.close()
        if self.stderr_thread.ident is None:
            self.stderr.close()
        if self.exit_waiter is not None and self.exit_waiter.ident is None and self.exit_signal_fd is not None:
            os.close(self.exit_signal_fd)
        self._close_exit_fd(join_deadline, stderr_ended=not self.stderr_thread.is_alive())

    def _close_exit_fd(self, deadline: float, *, stderr_ended: bool) -> None:
        """Close exit_fd once nobody polls it: a caller in read_directly sees ``closing`` within a poll slice."""
        with self.read_cond:
            while self.read_owner == _DIRECT and self.read_cond.wait(max(0.0, deadline - time.monotonic())):
                pass
            if self.read_owner == _DIRECT or not stderr_ended:
                return  # left open rather than closed under a poll (warned about above)
            if self.reader is not None and not self.reader_done:
                self.exit_fd_unused = True  # the reader thread (closing from a sink callback) closes it
                return
        self.release_exit_fd()

    def release_exit_fd(self) -> None:
        with self.read_cond:
            exit_fd, self.exit_fd = self.exit_fd, None
        if exit_fd is not None:
            os.close(exit_fd)

    def collect_tree(self) -> Dict[int, psutil.Process]:
        """Every descendant of the child, plus what is left in its process group."""
        found: Dict[int, psutil.Process] = {}
        if self.popen.poll() is None:  # not reaped: its pid is still its own
            try:
                for proc in psutil.Process(self.pid).children(recursive=True):
                    found[proc.pid] = proc
            except psutil.Error:
                pass
        if self.new_session:
            for proc in _group_members(self.pid, self.create_time):
                found.setdefault(proc.pid, proc)
        # Whoever still holds a pipe: a grandchild in its own session is neither
        # a descendant (once its parent died) nor in the group.
        for proc in _pipe_holders(self.pipe_inodes, self.create_time):
            if proc.pid != self.pid:
                found.setdefault(proc.pid, proc)
        return found


def _group_members(pgid: int, not_before: Optional[float]) -> List[psutil.Process]:
    """Processes in process group ``pgid`` (POSIX), except its leader.

    A group id is not reused while the group has members, so what is found here
    belongs to the child's group, even after the child itself was reaped.
    """
    members: List[psutil.Process] = []
    getpgid = getattr(os, "getpgid", None)
    if getpgid is None:
        return members
    for proc in psutil.process_iter():
        if proc.pid == pgid:
            continue
        try:
            if getpgid(proc.pid) != pgid:
                continue
            if not_before is not None and proc.create_time() < not_before:
                continue
        except (OSError, psutil.Error):
            continue
        members.append(proc)
    return members


def _pipe_holders(inodes: Iterable[int], not_before: Optional[float]) -> List[psutil.Process]:
    """Other processes (started since ``not_before``) holding an end of one of these pipes (Linux).

    Reads ``/proc/<pid>/fd`` of every process we may look at: a few
    milliseconds, done only at ``close()``.  A pipe's inode number is not
    reused while any end of it is open, and a holder must have been started
    after the child, which rules out an unrelated process.
    """
    holders: List[psutil.Process] = []
    if not os.path.isdir(_PROC_FD_DIR):
        return holders
    targets = {f"pipe:[{inode}]" for inode in inodes}
    me = str(os.getpid())
    try:
        names = os.listdir("/proc")
    except OSError:
        return holders
    readlink = os.readlink
    for name in names:
        if not name.isdigit() or name == me:
            continue
        fd_dir = f"/proc/{name}/fd/"
        try:
            fds = os.listdir(fd_dir)
        except OSError:  # gone, or not ours to look at
            continue
        for fd in fds:
            try:
                if readlink(fd_dir + fd) not in targets:
                    continue
            except OSError:
                continue
            try:
                proc = psutil.Process(int(name))
                if not_before is None or proc.create_time() >= not_before:
                    holders.append(proc)
            except psutil.Error:
                pass
            break
    return holders


def _alive(proc: psutil.Process) -> bool:
    """Running and not a zombie (an orphaned zombie may never be reaped in a container)."""
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
    except psutil.Error:
        return True


def _signal_all(children: Iterable[_Child], trees: Mapping[_Child, Dict[int, psutil.Process]], kill: bool) -> None:
    for child in children:
        if child.popen.poll() is None:
            try:
                if kill:
                    child.popen.kill()
                else:
                    child.popen.terminate()
            except OSError:
                pass
        for proc in trees[child].values():
            try:
                if kill:
                    proc.kill()
                else:
                    proc.terminate()
            except psutil.Error:
                pass


def _wait_gone(children: Sequence[_Child], trees: Mapping[_Child, Dict[int, psutil.Process]], deadline: float) -> bool:
    """Wait until every child is reaped and every descendant gone; True if so."""
    delay = _POLL_MIN_S
    while True:
        busy = False
        for child in children:
            if child.popen.poll() is None:
                busy = True
            alive = {pid: proc for pid, proc in trees[child].items() if _alive(proc)}
            trees[child].clear()
            trees[child].update(alive)
            busy = busy or bool(alive)
        remaining = deadline - time.monotonic()
        if not busy:
            return True
        if remaining <= 0:
            return False
        # Our own children: block in wait(), which reaps; others: poll.
        waiting = [c for c in children if c.popen.returncode is None]
        if waiting and not any(trees[c] for c in children):
            try:
                waiting[0].popen.wait(remaining)
            except subprocess.TimeoutExpired:
                pass
            continue
        time.sleep(min(delay, remaining))
        delay = min(delay * 2, _POLL_MAX_S)


def _reclaim(children: Sequence[_Child], *, stdin_grace: float, terminate_grace: float) -> None:
    """End the children and their trees: stdin EOF, then SIGTERM, then SIGKILL, then reap."""
    try:
        _reclaim_trees(children, stdin_grace=stdin_grace, terminate_grace=terminate_grace)
    finally:
        for child in children:
            child.reclaimed = True  # a stderr drain that waits on a survivor's pipe stops


def _reclaim_trees(children: Sequence[_Child], *, stdin_grace: float, terminate_grace: float) -> None:
    # Collect the trees before signalling anything: a child that exits orphans
    # its descendants, which are then no longer found as its children.
    trees = {child: child.collect_tree() for child in children}
    deadline = time.monotonic() + stdin_grace
    for child in children:
        # A write blocked on a full pipe holds the write lock; then the child is
        # not reading and closing stdin would not help: go on to terminate.
        child.close_stdin(deadline - time.monotonic())
    for child in children:
        if child.popen.poll() is None:
            try:
                child.popen.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
    for child in children:
        trees[child].update(child.collect_tree())
    _signal_all(children, trees, kill=False)
    if _wait_gone(children, trees, time.monotonic() + terminate_grace):
        return
    _signal_all(children, trees, kill=True)
    if not _wait_gone(children, trees, time.monotonic() + KILL_GRACE_S):
        for child in children:
            _log.warning(
                "[%s pid %d] still running after SIGKILL: %s",
                child.label,
                child.pid,
                [child.pid] * (child.popen.returncode is None) + sorted(trees[child]),
            )


def _finalize(child: _Child, description: str) -> None:
    """Run by the garbage collector for a transport that was never closed."""
    if child.closing:
        return
    try:
        warnings.warn(f"{description} was never closed", ResourceWarning, stacklevel=2)
    finally:
        child.close()


@atexit.register
def _close_all_at_exit() -> None:
    """Close the transports still open, with short graces, without calling sinks."""
    try:
        children = [child for child in list(_LIVE) if child.begin_close(notify=False)]
        if not children:
            return
        _reclaim(children, stdin_grace=ATEXIT_STDIN_GRACE_S, terminate_grace=ATEXIT_TERMINATE_GRACE_S)
        deadline = time.monotonic() + ATEXIT_JOIN_S
        for child in children:
            child.finish(deadline)
            child.closed_event.set()
    except Exception:  # never a traceback at interpreter exit
        _log.debug("closing stdio transports at exit failed", exc_info=True)


def _child_env(env: Optional[Mapping[str, Optional[str]]], inherit_env: bool) -> Dict[str, str]:
    if inherit_env:
        result = dict(os.environ)
    else:
        result = {}
        for name in DEFAULT_ENV_ALLOWLIST:
            value = os.environ.get(name)
            # "()" starts an exported shell function: never passed on implicitly.
            if value is not None and not value.startswith("()"):
                result[name] = value
    for name, value in (env or {}).items():
        if value is None:
            result.pop(name, None)
        else:
            result[name] = value
    return result


def _default_label(argv: Sequence[str]) -> str:
    label = shlex.join([os.path.basename(argv[0]), *argv[1:]])
    return label if len(label) <= _LABEL_MAX_CHARS else label[: _LABEL_MAX_CHARS - 3] + "..."


class StdioTransport:
    """A child process speaking line-delimited JSON-RPC on its stdin and stdout.

    The child is started here, so :attr:`pid` is known at once and a command
    that cannot run fails here.  Messages flow once :meth:`start` was called
    (by the client).  Close it with :meth:`close` or a ``with`` block; one
    that is garbage-collected unclosed is reclaimed with a
    :class:`ResourceWarning`, and those still open at interpreter exit are
    closed by an ``atexit`` hook (graces of :data:`ATEXIT_STDIN_GRACE_S` and
    :data:`ATEXIT_TERMINATE_GRACE_S`, and no sink call).

    Thread-safe: :meth:`send` may be called from any number of threads (writes
    are serialized, each message goes out whole); :meth:`close`,
    :meth:`stderr_tail`, :attr:`returncode` from any thread at any time,
    including from inside a sink callback.

    The environment of the child is, by default, only the parent's variables
    named in :data:`DEFAULT_ENV_ALLOWLIST`, updated with ``env``; with
    ``inherit_env=True`` it starts from the whole parent environment instead.

    Args:
        command: the argv list; a ``str`` is split with :func:`shlex.split`
            (POSIX rules) and is never run through a shell.
        env: variables to set in the child (a value of ``None`` removes that
            variable).
        cwd: the child's working directory; the parent's by default.
        inherit_env: start from the parent's whole environment rather than the
            allowlist.
        max_line_bytes: the largest line (message) accepted from the child, not
            counting the newline.  A longer line is discarded with an error
            logged; when it is a response, its request fails with
            :class:`~jsonrpc_threads.errors.MessageTooLarge`.
        stderr_tail_bytes: how much of the end of the child's stderr to keep
            for :meth:`stderr_tail` and for :class:`TransportClosed` errors.
        label: a short name for logs; derived from ``command`` by default.
        stderr_log_level: the level at which each stderr line is logged on
            this module's logger.

    Raises:
        TransportClosed: when the command cannot be started (not found, not
            executable, bad ``cwd``); the message names the command and the
            OS error.
        ValueError: for an empty command or a non-positive ``max_line_bytes``.
    """

    def __init__(
        self,
        command: Union[str, Sequence[str]],
        *,
        env: Optional[Mapping[str, Optional[str]]] = None,
        cwd: Optional[Union[str, os.PathLike[str]]] = None,
        inherit_env: bool = False,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        stderr_tail_bytes: int = DEFAULT_STDERR_TAIL_BYTES,
        label: Optional[str] = None,
        stderr_log_level: int = logging.DEBUG,
    ) -> None:
        argv = shlex.split(command) if isinstance(command, str) else [os.fspath(arg) for arg in command]
        if not argv:
            raise ValueError("command is empty")
        if max_line_bytes <= 0:
            raise ValueError("max_line_bytes must be positive")
        child_env = _child_env(env, inherit_env)
        executable = argv[0]
        if os.name == "nt":  # find "npx.cmd" for "npx", as a shell would
            executable = shutil.which(argv[0], path=child_env.get("PATH")) or argv[0]
        self.label = label or _default_label(argv)
        try:
            popen = subprocess.Popen(
                [executable, *argv[1:]],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                bufsize=0,
                env=child_env,
                cwd=cwd,
                close_fds=True,
                start_new_session=_POSIX,
                creationflags=getattr(subprocess, "CREATE_NO_WINDOW", 0),
            )
        except (OSError, ValueError) as exc:
            raise TransportClosed(f"Cannot start {shlex.join(argv)!r}: {exc}") from exc
        try:
            child = _Child(
                popen,
                self.label,
                max_line_bytes=max_line_bytes,
                stderr_tail_bytes=max(0, stderr_tail_bytes),
                stderr_log_level=stderr_log_level,
                new_session=_POSIX,
            )
        except BaseException:  # e.g. out of file descriptors for the exit watch
            popen.kill()
            popen.wait()
            for pipe in (popen.stdin, popen.stdout, popen.stderr):
                if pipe is not None:
                    pipe.close()
            raise
        self._child = child
        self._sink: Optional[MessageSink] = None
        try:
            child.start_threads()
        except BaseException:
            child.close(notify=False)
            raise
        _LIVE.add(child)
        self._finalizer = weakref.finalize(self, _finalize, child, f"StdioTransport({self.label!r}, pid={child.pid})")
        # Interpreter exit is handled by _close_all_at_exit, without a warning.
        self._finalizer.atexit = False

    @property
    def pid(self) -> int:
        """The child's process id."""
        return self._child.pid

    @property
    def returncode(self) -> Optional[int]:
        """The child's exit status once it exited and was reaped, else ``None``.

        Negative: killed by that signal (POSIX).
        """
        return self._child.popen.poll()

    def stderr_tail(self) -> str:
        """The end of what the child wrote to stderr (at most ``stderr_tail_bytes``).

        Decoded as UTF-8 (invalid bytes replaced); starts at a line boundary when
        older output was dropped.
        """
        return self._child.stderr_tail()

    def start(self, sink: MessageSink) -> None:
        """Start the reader thread, which delivers each line of stdout to ``sink``.

        The transport keeps ``sink`` alive; its threads refer to it weakly.

        Raises:
            TransportClosed: when the transport was closed.
            RuntimeError: when called a second time.
        """
        child = self._child
        sink_ref: SinkRef
        try:
            sink_ref = weakref.ref(sink)
        except TypeError:  # an object without weak reference support: held strongly
            sink_ref = _strong_ref(sink)
        with child.lock:
            if child.closing:
                raise child.closed_error("Transport closed")
            if child.reader is not None:
                raise RuntimeError("StdioTransport.start() called twice")
            self._sink = sink
            child.sink_ref = sink_ref
            reader = threading.Thread(target=child.read_loop, name=f"jsonrpc-stdio-reader[{child.pid}]", daemon=True)
            reader.start()
            child.reader = reader

    def send(self, data: bytes, request_ids: Sequence[RequestId] = (), *, deadline: Optional[float] = None) -> None:
        """Write one encoded message (or batch) and a newline to the child's stdin.

        Blocks while the pipe is full (the child is not reading).  A request
        (``request_ids`` given) that finds another thread writing is left to that
        thread, which writes it next, and this returns at once; if that write
        fails, the requests fail through ``sink.requests_failed``.  Anything
        else is written before this returns, and a failure is raised here.

        Raises:
            TransportClosed: when the transport is closed or ended, or the write
                failed (broken pipe); nothing more is sent.
            ValueError: when ``data`` holds a newline, which would break framing.
        """
        if b"\n" in data:
            raise ValueError("a message sent over stdio must not contain a newline")
        self._child.write_line(data, request_ids)

    def read_directly(self, done: Callable[[], bool], deadline: Optional[float] = None) -> bool:
        """Read stdout on the calling thread, delivering to the sink, until ``done()`` is true.

        The fast path of a blocking call: the thread that waits for an answer
        reads it itself, which saves the hand-off from the reader thread (a
        wake-up through the kernel).  Only one thread reads at a time: when the
        reader thread (or another caller) is reading, this returns ``False`` at
        once and the caller waits for its answer as usual; the reader thread
        steps aside when no request is pending (the sink's ``has_pending()``),
        so a caller that calls again finds the pipe free.  Everything read here
        is delivered as the reader thread would deliver it, in order.

        Returns early (``True``) when the transport is closing or the stream
        ended; the reader thread then reports the end as usual.  ``deadline``
        (on the :func:`time.monotonic` clock) bounds each wait for data, so
        ``done()`` is looked at again by then.  Unavailable where pipes cannot be
        polled (Windows): returns ``False``.

        After it returns, a caller that knows requests are still pending calls
        :meth:`resume_reader`.
        """
        return self._child.read_directly(done, deadline)

    def resume_reader(self) -> None:
        """Make sure the reader thread reads: called when a request waits for it.  Cheap."""
        self._child.resume_reader()

    def close(self) -> None:
        """Reclaim the child and its whole process tree; bounded in time.

        Closes stdin and waits up to :data:`STDIN_CLOSE_GRACE_S` for the child to
        exit; then terminates every process of its tree (collected before any
        signal) and waits up to :data:`TERMINATE_GRACE_S`; then kills what is
        left and waits up to :data:`KILL_GRACE_S`.  Then joins the threads and
        closes the pipes, and calls ``sink.transport_closed`` if that was not
        done yet.

        Idempotent and thread-safe; a second concurrent call returns when the
        first is done.  Safe to call from a sink callback (it does not wait for
        its own thread).
        """
        self._finalizer.detach()
        self._child.close()

    def __enter__(self) -> StdioTransport:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        child = self._child
        state = "closed" if child.closing else "ended" if child.ended else "running"
        return f"<StdioTransport {self.label!r} pid={child.pid} {state}>"
