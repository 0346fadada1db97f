"""One child process and the pieces that serve it, from start to reclaim.

A ``Child`` holds the ``Popen``, the stdin writer, the stdout reader, the
stderr drain and the exit watch, and knows how to end them all in order.  It
never refers to the ``StdioTransport``
that owns it, so a transport dropped without ``close()`` can be garbage
collected: its finalizer reaps the child (with a ``ResourceWarning``).
The sink is held weakly here and strongly by the transport, so it lives
exactly as long as the transport does.  At interpreter exit, children still
open are closed quickly by an ``atexit`` hook, without calling sinks.
"""

from __future__ import annotations

import atexit
import os
import subprocess
import threading
import time
import warnings
import weakref
from typing import Callable, FrozenSet, Optional, Sequence

from ...errors import JsonRpcError, RequestId, TransportClosed
from ...framing import ContentLengthDecoder, LineDecoder
from ...runtime.logs import get_logger
from ..base import MessageSink
from ._exit_watch import ExitWatch
from ._fast_path import CallerReads, PipelinedWrites
from ._reader import EXIT_AFTER_EOF_WAIT_S, HELD_STDOUT, StdoutReader
from ._reclaim import STDIN_CLOSE_GRACE_S, TERMINATE_GRACE_S, owned, reclaim
from ._spawn import POSIX
from ._stderr import STDERR_DRAIN_WAIT_S, StderrDrain
from ._writer import StdinWriter

_log = get_logger("jsonrpc_threads.transports.stdio")

#: A write failed (broken pipe): how long to wait for the child's exit, for its exit code.
WRITE_FAILURE_EXIT_WAIT_S = 1.0
#: ``close()``: how long to wait for each of the transport's threads to end.
THREAD_JOIN_S = 2.0
#: Interpreter exit: shorter graces, so the interpreter exits promptly.
ATEXIT_STDIN_GRACE_S = 0.5
ATEXIT_TERMINATE_GRACE_S = 0.5
#: Interpreter exit: how long to wait for all transports' threads together.
ATEXIT_JOIN_S = 0.5
#: A second ``close()`` waits this long for the first one to finish.
CLOSE_WAIT_S = STDIN_CLOSE_GRACE_S + TERMINATE_GRACE_S + 2.0 + 2 * THREAD_JOIN_S + 1.0

FRAMINGS = ("lines", "content-length")
#: Who reads the child's stdout (``StdioTransport(reads=)``): a blocking call() its own answer
#: where it can, the reader thread the rest (the fast path, ``_fast_path``); or the reader thread
#: alone (the plain design, ``_reader``).
READS = ("caller", "reader_thread")

#: Children of transports not yet closed, for the ``atexit`` hook.
_LIVE: weakref.WeakSet[Child] = weakref.WeakSet()

SinkRef = Callable[[], Optional[MessageSink]]


def _no_sink() -> Optional[MessageSink]:
    return None


class Child:
    """The child process, its pipes and the threads serving them.  Thread-safe."""

    def __init__(
        self,
        popen: subprocess.Popen[bytes],
        label: str,
        *,
        framing: str,
        reads: str = "caller",
        max_message_bytes: int,
        stderr_tail_bytes: int,
        stderr_log_level: int,
        started_at: float,
    ) -> None:
        assert popen.stdin is not None and popen.stdout is not None and popen.stderr is not None
        self.popen = popen
        self.pid = popen.pid
        self.label = label
        self.owner_pid = os.getpid()
        self.started_at = started_at
        self.new_session = POSIX
        # The pipes' inodes, to find at close() every process that holds one of them.
        self.pipe_inodes: FrozenSet[int] = frozenset(
            os.fstat(f.fileno()).st_ino for f in (popen.stdin, popen.stdout, popen.stderr)
        )
        # lock guards closing, notified, closer and sink_ref.  Re-entrant: a finalizer
        # (run by the garbage collector on any thread) may close this child while
        # that thread holds it.
        self.lock = threading.RLock()
        self.closing = False  # close() (or the finalizer, or atexit) has begun
        self.notified = False  # sink.transport_closed was called (or must not be)
        self.closer: Optional[threading.Thread] = None
        self.sink_ref: SinkRef = _no_sink
        self.closed_event = threading.Event()
        self.exit_watch: Optional[ExitWatch] = None
        self.stderr: Optional[StderrDrain] = None
        self.writer: Optional[StdinWriter] = None
        try:
            self.exit_watch = ExitWatch(popen, label) if POSIX else None
            self.stderr = StderrDrain(
                popen.stderr,
                self.exit_watch.open_fd() if self.exit_watch is not None else None,
                label,
                self.pid,
                tail_bytes=stderr_tail_bytes,
                log_level=stderr_log_level,
            )
            self.writer = StdinWriter(
                popen.stdin, label, self.pid, self._fail_requests, self.closed_error, self._write_failed, self._stalled
            )
            decoder = LineDecoder(max_message_bytes) if framing == "lines" else ContentLengthDecoder(max_message_bytes)
            self.reader = StdoutReader(
                popen.stdout,
                self.exit_watch.open_fd() if self.exit_watch is not None else None,
                decoder,
                label,
                self.pid,
                self._report_end,
            )
            if reads == "caller":  # the fast path; "reader_thread" keeps the reader's own plain gate
                # A call() reads its own answer; the writing held for chunks, paced for pipelining.
                self.reader.gate = CallerReads(self.reader, self.writer.hold, self.writer.release_hold)
                self.writer.pace = PipelinedWrites(popen.stdin.fileno())
        except BaseException:  # e.g. out of file descriptors
            if self.exit_watch is not None:
                self.exit_watch.close()
            raise

    # -- start ------------------------------------------------------------------

    def start_threads(self) -> None:
        """Start what runs from the spawn on: the exit watch and the stderr drain."""
        if self.exit_watch is not None:
            self.exit_watch.start()
        assert self.stderr is not None
        self.stderr.start()
        _LIVE.add(self)

    def start_reader(self, sink_ref: SinkRef) -> None:
        """Start delivering stdout to the sink.

        Raises:
            TransportClosed: when closing.
            RuntimeError: when called a second time.
        """
        with self.lock:
            if self.closing:
                raise self.closed_error("Transport closed")
            if self.reader.thread.ident is not None:
                raise RuntimeError("StdioTransport.start() called twice")
            self.sink_ref = sink_ref
            self.reader.sink_ref = sink_ref
            self.reader.thread.start()

    # -- state --------------------------------------------------------------------

    @property
    def ended(self) -> bool:
        """True once the stream ended or closing began: nothing more is sent."""
        return self.closing or self.reader.ended

    def stderr_tail(self) -> str:
        assert self.stderr is not None
        return self.stderr.tail()

    def closed_error(self, message: str) -> TransportClosed:
        """A TransportClosed for ``message``, with the exit code and stderr tail as known now."""
        returncode = self.popen.poll() if owned(self) else None
        return TransportClosed(message, returncode=returncode, stderr_tail=self.stderr_tail())

    def _write_failed(self, message: str) -> TransportClosed:
        """The error of a failed write (a broken pipe), once the child's exit code is known.

        The child is exiting: its exit code and last words are worth a short
        wait (``WRITE_FAILURE_EXIT_WAIT_S``, then the stderr drain).
        """
        if owned(self) and not self.closing:
            try:
                self.popen.wait(WRITE_FAILURE_EXIT_WAIT_S)
            except subprocess.TimeoutExpired:
                pass
            assert self.stderr is not None
            if self.popen.returncode is not None and self.stderr.thread.ident is not None:
                self.stderr.caught_up.wait(STDERR_DRAIN_WAIT_S)
        return self.closed_error(message)

    def _fail_requests(self, request_ids: Sequence[RequestId], error: JsonRpcError) -> None:
        sink = self.sink_ref()
        if sink is not None:
            try:
                sink.requests_failed(request_ids, error)
            except Exception:
                _log.exception("[%s pid %d] sink.requests_failed failed", self.label, self.pid)

    def _stalled(self, reason: str) -> None:
        """The child does not read its stdin (the write queue stayed full): end the transport."""
        _log.error("[%s pid %d] %s", self.label, self.pid, reason)
        self.notify_closed(self.closed_error(reason))

    def _report_end(self, reason: str) -> None:
        """On the reader thread, at end of stream: wait (bounded) for the exit and stderr, then tell the sink."""
        if owned(self):
            try:
                self.popen.wait(EXIT_AFTER_EOF_WAIT_S)
            except subprocess.TimeoutExpired:
                pass
        returncode = self.popen.returncode if owned(self) else None
        assert self.stderr is not None
        if returncode is not None and self.stderr.thread.ident is not None:
            # The drain has read what stderr held at the exit: the last words are in the tail.
            self.stderr.caught_up.wait(STDERR_DRAIN_WAIT_S)
        if returncode is None or reason == HELD_STDOUT:
            message = f"{self.label} (pid {self.pid}) {reason}"
        else:
            message = f"{self.label} (pid {self.pid}) exited"
        self.notify_closed(self.closed_error(message))

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

    # -- Reclaimable ----------------------------------------------------------------

    def close_stdin(self, timeout: float) -> bool:
        assert self.writer is not None
        return self.writer.close_stdin(timeout)

    def streams_closed(self, timeout: float) -> bool:
        """Wait (bounded) for stdout and stderr to reach end of file: True when nobody holds them any more."""
        deadline = time.monotonic() + timeout
        assert self.stderr is not None
        for thread in (self.reader.thread, self.stderr.thread):
            if thread.ident is None or thread is threading.current_thread():
                return False
            thread.join(max(0.0, deadline - time.monotonic()))
            if thread.is_alive():
                return False
        return self.reader.ended_at_eof and self.stderr.eof

    def reclaim_done(self) -> None:
        """close() reclaimed what it could: threads stop waiting on pipes a survivor may hold."""
        assert self.stderr is not None
        self.stderr.stop_when_quiet()
        self.reader.stop_when_quiet()

    # -- closing ----------------------------------------------------------------------

    def begin_close(self, *, notify: bool) -> bool:
        """Mark closing; True for the one caller that must do the work."""
        me = threading.current_thread()
        with self.lock:
            if self.closing:
                closer = self.closer
                first = False
            else:
                self.closing = True
                self.closer = me
                if not notify:
                    self.notified = True
                first = True
        assert self.stderr is not None
        if first:
            self.stderr.closing = True
            self.reader.begin_close()
        elif me is not closer and me is not self.reader.thread and me is not self.stderr.thread:
            # Another thread is closing: return when it is done, so that after
            # close() the process is gone whichever thread did the work.
            self.closed_event.wait(CLOSE_WAIT_S)
        return first

    def close(self, *, notify: bool = True, stdin_grace: float = STDIN_CLOSE_GRACE_S) -> None:
        if not owned(self):
            self.release_in_fork()
            return
        if not self.begin_close(notify=notify):
            return
        try:
            reclaim([self], stdin_grace=stdin_grace, terminate_grace=TERMINATE_GRACE_S)
            self.finish(time.monotonic() + THREAD_JOIN_S)
        finally:
            self.closed_event.set()
            _LIVE.discard(self)
        self.notify_closed(self.closed_error("Transport closed"))

    def finish(self, join_deadline: float) -> None:
        """Join the threads (bounded, never the current one) and close every descriptor."""
        me = threading.current_thread()
        assert self.stderr is not None and self.writer is not None
        threads = [self.reader.thread, self.stderr.thread, self.writer.thread]
        if self.exit_watch is not None:
            threads.append(self.exit_watch.waiter)
        for thread in threads:
            if thread is not None and thread is not me and thread.ident is not None:
                thread.join(max(0.0, join_deadline - time.monotonic()))
                if thread.is_alive():
                    _log.warning("[%s pid %d] thread %s did not end", self.label, self.pid, thread.name)
        if not self.writer.close_stdin(max(0.0, join_deadline - time.monotonic())):
            _log.warning("[%s pid %d] a write is still blocked on stdin; left open", self.label, self.pid)
        self.reader.close_unstarted()
        if not self.reader.thread.is_alive() and not self.reader.close_fds():
            _log.warning("[%s pid %d] a caller still reads stdout; its descriptors are left open", self.label, self.pid)
        self.stderr.close_unstarted()
        if self.exit_watch is not None:
            self.exit_watch.close()

    def close_unstarted(self) -> None:
        """Set-up failed before any thread ran: close every descriptor, reap the child."""
        for closer in (self.reader.close_unstarted, getattr(self.stderr, "close_unstarted", None)):
            if closer is not None:
                closer()
        if self.writer is not None:
            self.writer.close_unused()
        if self.exit_watch is not None:
            self.exit_watch.close()

    def release_in_fork(self) -> None:
        """In a process forked after the child started: let go of this process's copies, nothing more.

        The child, its pipes and its threads are the parent's: nothing is
        signalled, written or waited for, and no lock is taken (a thread of the
        parent may have held one at the fork).  Only this process's copies of
        the descriptors are closed, so the parent's server never sees an end
        of file because a fork of its client went away.
        """
        self.closing = True
        self.notified = True
        _LIVE.discard(self)
        streams = [self.popen.stdin, self.popen.stdout, self.popen.stderr]
        for stream in streams:
            if stream is not None:
                try:
                    stream.close()  # raw pipes: no lock, and the object knows it is closed
                except OSError:
                    pass
        self.reader.release_in_fork()
        assert self.stderr is not None
        self.stderr.release_in_fork()
        if self.exit_watch is not None:
            self.exit_watch.release_in_fork()
        self.closed_event.set()


def finalize(child: Child, description: str) -> None:
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
        live = list(_LIVE)
        for child in live:
            if not owned(child):
                child.release_in_fork()  # a fork's exit never touches the parent's servers
        children = [child for child in live if owned(child) and child.begin_close(notify=False)]
        if not children:
            return
        reclaim(children, stdin_grace=ATEXIT_STDIN_GRACE_S, terminate_grace=ATEXIT_TERMINATE_GRACE_S)
        deadline = time.monotonic() + ATEXIT_JOIN_S
        for child in children:
            child.finish(deadline)
            child.closed_event.set()
    except Exception:  # never a traceback at interpreter exit
        _log.debug("closing stdio transports at exit failed", exc_info=True)


__all__ = [
    "ATEXIT_JOIN_S",
    "ATEXIT_STDIN_GRACE_S",
    "ATEXIT_TERMINATE_GRACE_S",
    "CLOSE_WAIT_S",
    "FRAMINGS",
    "THREAD_JOIN_S",
    "Child",
    "finalize",
]
