"""Writing to the child's stdin: in order, whole, and never blocking a caller.

Theory of operation.  stdin is non-blocking, and one party at a time owns the
writing (``_owner``): a caller, the writer thread, or a reader holding it.  A
frame goes on the wire in one of three ways, and which one never changes what
the child reads:

- the caller writes it itself, in one ``write()``, when nothing is queued,
  nobody owns the writing and the frame is at most ``PIPE_BUF`` bytes: the
  kernel then writes it whole or not at all (``EAGAIN``), so an interrupt
  (``KeyboardInterrupt`` on the main thread) can never leave half of it in
  the pipe;
- otherwise it is queued, and the writer thread (started on first need)
  writes the queue in order, waiting in ``poll()`` while the pipe is full.
  Signals never interrupt that thread, so a large frame is always written
  whole (or the pipe breaks);
- or, while it is held (``StdinWriter.hold``: the stdio fast path,
  ``_fast_path``, holds it while it delivers a chunk of answers), it is
  queued, and ``StdinWriter.release_hold`` writes what was queued in one
  ``write()``.  More than ``PIPE_BUF`` bytes go to the writer thread instead,
  and an interrupted write fails the requests it carried (they are never
  written twice).

So ``StdinWriter.write`` returns at once even when the child has stopped
reading: a request's caller waits for its answer within its own deadline, not
for the pipe.  The queue is bounded (``MAX_BACKLOG_BYTES``): a sender that
finds it full waits for room until its deadline, and then the child is taken
for dead (it has not read its stdin for that long) and writing ends.  Frames
of requests the client gave up on are dropped while still queued
(``StdinWriter.abandon``).  A failed write (broken pipe) fails the
requests it carried, and those queued, through ``fail_requests``; every later
write raises.  ``StdinWriter.close_stdin`` first lets the queue drain
(bounded), so a last notification (an LSP ``exit``) still reaches the child.

The queue itself, its byte count and the chunks the writer thread takes from
it, is ``_frames``.

Thread-safety: every method may be called from any thread.
"""

from __future__ import annotations

import errno
import os
import select
import threading
import time
from typing import IO, Callable, List, Optional, Sequence

from ...deadlines.timeouts import wait_slice
from ...errors import JsonRpcError, RequestId, TransportClosed
from ...runtime.logs import get_logger
from .._poll import POLL_SLICE_MS, notify_all_waiting
from ._frames import Frame, FrameQueue, ids_of

_log = get_logger("jsonrpc_threads.transports.stdio")

#: The most bytes queued for stdin; a sender waits for room (until its deadline) beyond it.
MAX_BACKLOG_BYTES = 64 * 1024 * 1024
#: Frames up to this size are written by the caller in one atomic write (POSIX PIPE_BUF).
ATOMIC_WRITE_BYTES = int(getattr(select, "PIPE_BUF", 512))
#: close_stdin(): after the queue had its time to drain, how long the writer gets to let go.
WRITER_RELEASE_WAIT_S = 0.5
_CAN_POLL = hasattr(select, "poll")
_CALLER = "caller"
_THREAD = "thread"
_HOLDER = "holder"

FailRequests = Callable[[Sequence[RequestId], JsonRpcError], None]
ClosedError = Callable[[str], TransportClosed]


class StdinWriter:
    """The child's stdin, written in order.  See the module docstring.

    Args:
        stream: the child's stdin (a raw binary pipe).
        label, pid: for log lines and the thread's name.
        fail_requests: called (outside any lock) with the ids of requests that
            could not be written, and why.
        closed_error: builds the ``TransportClosed`` for a message (exit code
            and stderr tail included).
        failed_error: the same, for a write that failed (a broken pipe: the
            child is exiting, and its exit code and last words are worth a
            short wait).
        on_stalled: called (outside any lock) with the reason when the queue
            stayed full past a sender's deadline: the child does not read.
    """

    def __init__(
        self,
        stream: IO[bytes],
        label: str,
        pid: int,
        fail_requests: FailRequests,
        closed_error: ClosedError,
        failed_error: ClosedError,
        on_stalled: Callable[[str], None],
    ) -> None:
        self._stream = stream
        self._fd = stream.fileno()
        self._label = label
        self._pid = pid
        self._fail_requests = fail_requests
        self._closed_error = closed_error
        self._failed_error = failed_error
        self._failed = False  # writing ended because a write failed (not close, not a stall)
        self._on_stalled = on_stalled
        if _CAN_POLL:
            os.set_blocking(self._fd, False)
        # _lock guards _queue (its counts too), _owner, _error, _closed and _thread.
        # Two conditions on _lock: _work wakes the writer thread (handed the writing,
        # or writing is over); _cond wakes those waiting for the queue to shrink or
        # the owner to let go (room, close).  Apart, so that a caller letting go of
        # a direct write never wakes the writer thread for nothing.
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._work = threading.Condition(self._lock)
        self._queue = FrameQueue()
        self._owner: Optional[str] = None  # who writes now: everybody else queues
        self._error: Optional[str] = None  # why writing is over (broken pipe, closed)
        self._closed = False  # stdin was closed
        self._thread: Optional[threading.Thread] = None
        #: Asked (outside the lock) before a frame is written directly: False queues it for the
        #: writer thread instead (the fast path's pipelining pace; None: always write directly).
        self.pace: Optional[Callable[[], bool]] = None

    @property
    def thread(self) -> Optional[threading.Thread]:
        """The writer thread, once started."""
        return self._thread

    @property
    def backlog_bytes(self) -> int:
        """Bytes queued and not written yet."""
        return self._queue.queued_bytes

    def write(
        self, frame: bytes, request_ids: Sequence[RequestId], deadline: Optional[float], *, may_queue: bool = True
    ) -> None:
        """Put ``frame`` on the wire after everything written before it; never blocks on the pipe.

        ``may_queue``: False when the caller reads the answer itself next: it
        is never queued only to go out with later frames (see ``pace``).

        Raises:
            TransportClosed: stdin is closed or broken, or the queue stayed
                full until ``deadline`` (writing is over then).
        """
        direct = False
        stalled: Optional[str] = None
        if self._error is not None:  # a look without the lock first: the fast path takes it once, below
            with self._lock:
                error = self._error
                failed = self._failed
            if error is not None:
                raise (self._failed_error if failed else self._closed_error)(error)
        pace = self.pace
        write_now = pace is None or not may_queue or self._owner is not None or bool(self._queue) or pace()
        with self._lock:
            if self._owner is None and not self._queue and len(frame) <= ATOMIC_WRITE_BYTES and _CAN_POLL and write_now:
                self._owner = _CALLER
                direct = True
            else:
                stalled = self._wait_for_room(len(frame), deadline)
                if stalled is None:
                    self._queue.add(frame, request_ids)
                    if self._owner is None:
                        self._hand_to_thread_locked()
        if stalled is not None:
            self._fail_queued(include_in_flight=False)
            self._on_stalled(stalled)
            raise self._closed_error(stalled)
        if direct:
            self._write_direct(frame, request_ids)

    def hold(self) -> bool:
        """Queue every frame written from now on, for ``release_hold`` to write in one go.

        Taken by whoever delivers a chunk of answers from stdout, while the
        callers it wakes write their next requests.  Returns False (nothing
        held) when somebody else owns the writing, frames are queued already,
        or writing is over.
        """
        with self._lock:
            if self._owner is not None or self._queue or self._error is not None or not _CAN_POLL:
                return False
            self._owner = _HOLDER
            return True

    def release_hold(self) -> None:
        """Write what was queued since ``hold``: in one atomic write, or by the writer thread.

        Never raises: when the write fails, the requests it carried are failed
        through ``fail_requests`` (and every later write raises).
        """
        with self._lock:
            if self._owner != _HOLDER:
                return
            if not self._queue or self._error is not None:
                self._owner = None
                notify_all_waiting(self._cond)  # the fast path: usually nobody waits
                return
            if self._queue.queued_bytes > ATOMIC_WRITE_BYTES:
                self._hand_to_thread_locked()  # too much for one write that is whole or nothing
                return
            frames = self._queue.take_all()
            self._owner = _CALLER
        self._write_held(frames)

    def _write_held(self, frames: List[Frame]) -> None:
        """release_hold(): ``frames`` (at most PIPE_BUF bytes) in one write; a failure fails their requests."""
        data = frames[0].data if len(frames) == 1 else b"".join([frame.data for frame in frames])
        try:
            failure = self._write_owned(data, (), frames)
        except BaseException:  # interrupted: whether they went out is not known, so never twice
            self._fail_requests(ids_of(frames), self._closed_error("Interrupted while its request was being written"))
            raise
        if failure is not None:  # other callers' frames: their requests fail now, not at their deadlines
            self._fail_requests(ids_of(frames), self._write_failed(failure))

    def abandon(self, request_ids: Sequence[RequestId]) -> None:
        """Drop the still queued frames of these requests (not those being written)."""
        with self._lock:
            if self._queue.drop(request_ids):
                self._cond.notify_all()

    def close_stdin(self, timeout: float) -> bool:
        """Let the queue drain (for up to ``timeout``), then close stdin.

        Frames not written by then are dropped, their requests failed; the
        writer thread then gets ``WRITER_RELEASE_WAIT_S`` to let go.
        Returns False when a write still held stdin at the end (left open then).
        Idempotent.
        """
        deadline = time.monotonic() + max(0.0, timeout)
        with self._lock:
            if self._owner == _HOLDER:  # a reader's hold (maybe this very thread's): the writer thread takes over
                if self._queue:
                    self._hand_to_thread_locked()
                else:
                    self._owner = None
            while self._error is None and (self._queue or self._owner is not None):
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(min(left, POLL_SLICE_MS / 1000.0))
            if self._error is None:
                self._error = "Transport closed"
            self._cond.notify_all()
            self._work.notify_all()
            # The writer thread gives up within a poll slice; a caller's write is one system call.
            release_deadline = time.monotonic() + WRITER_RELEASE_WAIT_S
            while self._owner is not None:
                left = release_deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(min(left, POLL_SLICE_MS / 1000.0))
            free = self._owner is None
            close_now = free and not self._closed
            if close_now:
                self._closed = True
        self._fail_queued(include_in_flight=free)
        if close_now:
            try:
                self._stream.close()
            except OSError:
                pass
        return free

    def join(self, timeout: float) -> None:
        """Wait (bounded) for the writer thread to end (after ``close_stdin``)."""
        thread = self._thread
        if thread is not None and thread is not threading.current_thread() and thread.ident is not None:
            thread.join(timeout)

    def close_unused(self) -> None:
        """Close stdin of a transport that never wrote (set-up failed)."""
        with self._lock:
            self._error = self._error or "Transport closed"
            closed, self._closed = self._closed, True
        if not closed:
            try:
                self._stream.close()
            except OSError:
                pass

    # -- internals ------------------------------------------------------------------

    def _write_direct(self, frame: bytes, request_ids: Sequence[RequestId]) -> None:
        """One atomic write by the caller; handed to the writer thread when the pipe is full."""
        failure = self._write_owned(frame, request_ids)
        if failure is not None:
            raise self._write_failed(failure)

    def _write_failed(self, failure: OSError) -> TransportClosed:
        """After a write of ours failed: fail what is queued; the error for the requests that write carried."""
        self._fail_queued(include_in_flight=True)
        error = self._failed_error(self._failure_text(failure))
        error.__cause__ = failure
        return error

    def _failure_text(self, cause: object) -> str:
        return f"Write to {self._label} (pid {self._pid}) failed: {cause}"

    def _write_owned(
        self, data: bytes, request_ids: Sequence[RequestId], frames: Optional[List[Frame]] = None
    ) -> Optional[OSError]:
        """Write ``data`` (at most PIPE_BUF bytes) in one write, owning the writing, then hand the writing on.

        A full pipe puts it back at the head of the queue for the writer thread
        (``frames``, or one frame of ``data`` and ``request_ids``).  Returns the
        write's failure (writing is over then), or None.
        """
        written = False
        completed = False  # False in the finally: interrupted, the bytes are taken as not sent
        failure: Optional[OSError] = None
        try:
            try:
                os.write(self._fd, data)  # <= PIPE_BUF: all of it, or EAGAIN and nothing
                written = True
            except BlockingIOError:
                pass
            except OSError as exc:
                failure = exc
            completed = True
        finally:
            # Also on KeyboardInterrupt: the bytes went out whole or not at all,
            # and the writing is handed on either way.
            with self._lock:
                if failure is not None:
                    self._failed = self._error is None
                    self._break_locked(self._failure_text(failure))
                elif completed and not written and self._error is None:
                    self._queue.put_back(data, request_ids, frames)
                if self._queue and self._error is None:
                    self._hand_to_thread_locked()
                else:
                    self._owner = None
                    notify_all_waiting(self._cond)  # the fast path: usually nobody waits
        return failure

    def _wait_for_room(self, size: int, deadline: Optional[float]) -> Optional[str]:
        """With _lock held: wait while the queue is over the limit (bounded by ``deadline``).

        Returns why writing ended when the queue stayed full until the deadline.

        Raises:
            TransportClosed: writing ended meanwhile.
        """
        queue = self._queue
        while queue.queued_bytes and queue.queued_bytes + size > MAX_BACKLOG_BYTES:
            if self._error is not None:
                raise self._closed_error(self._error)
            if deadline is not None and time.monotonic() >= deadline:
                reason = (
                    f"{self._label} (pid {self._pid}) does not read its stdin: "
                    f"{queue.queued_bytes} bytes have been waiting"
                )
                self._break_locked(reason)
                return reason
            self._cond.wait(wait_slice(deadline))
        return None

    def _hand_to_thread_locked(self) -> None:
        """With _lock held: the writer thread owns the writing from now on."""
        self._owner = _THREAD
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=f"jsonrpc-stdio-writer[{self._pid}]", daemon=True)
            self._thread.start()
        else:
            self._work.notify()

    def _break_locked(self, reason: str) -> None:
        if self._error is None:
            self._error = reason
        self._cond.notify_all()
        self._work.notify_all()

    def _fail_queued(self, *, include_in_flight: bool) -> None:
        """Once writing is over: drop what is queued and fail its requests (outside the lock)."""
        with self._lock:
            reason = self._error
            failed = self._failed
            if reason is None:
                return
            frames = self._queue.take_unwritten(include_in_flight=include_in_flight)
            if not frames:
                return
            self._cond.notify_all()
        ids = ids_of(frames)
        if ids:
            self._fail_requests(ids, (self._failed_error if failed else self._closed_error)(reason))

    def _run(self) -> None:
        """The writer thread: write the queue in order while it owns the writing, until writing is over."""
        poller = select.poll() if _CAN_POLL else None
        if poller is not None:
            poller.register(self._fd, select.POLLOUT)
        while True:
            with self._lock:
                while True:
                    if self._error is not None:
                        if self._owner == _THREAD:
                            self._owner = None
                        self._queue.in_flight = 0
                        self._cond.notify_all()
                        break
                    if self._owner == _THREAD:
                        if self._queue:
                            break
                        self._owner = None  # nothing left: let callers write directly again
                        self._cond.notify_all()
                    self._work.wait(wait_slice(None))
                if self._error is not None:
                    over = True
                else:
                    over = False
                    chunk, frames = self._queue.next_chunk()
            if over:
                self._fail_queued(include_in_flight=True)
                return
            failure = self._write_out(chunk, poller)
            with self._lock:
                self._queue.in_flight = 0
                if failure is None:
                    self._queue.written(frames, len(chunk))
                else:
                    self._failed = self._error is None
                    self._break_locked(failure)
                self._cond.notify_all()

    def _write_out(self, chunk: bytes, poller: Optional[select.poll]) -> Optional[str]:
        """Write all of ``chunk``, waiting in poll() while the pipe is full; why it failed, if it did."""
        view = memoryview(chunk)
        while view:
            try:
                written = os.write(self._fd, view)
                view = view[written:]
            except BlockingIOError:
                if self._error is not None:
                    return self._error  # closing, and the child does not read: give up
                if poller is not None:
                    poller.poll(POLL_SLICE_MS)
            except OSError as exc:
                if exc.errno == errno.EINTR:
                    continue
                return self._failure_text(exc)
        return None


__all__ = ["ATOMIC_WRITE_BYTES", "MAX_BACKLOG_BYTES", "StdinWriter"]
