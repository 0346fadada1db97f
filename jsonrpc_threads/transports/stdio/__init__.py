"""Run a JSON-RPC peer as a child process and talk to it over stdin and stdout.

Theory of operation.  The child is spawned when the transport is built
(``_spawn``), so a command that cannot run fails at once.  Its three
standard streams are pipes, each served by one piece:

- stdin (``_writer``): messages go out in call order, each whole, and a
  sender never blocks on a child that stopped reading;
- stdout (``_reader``): decoded by the framing (one JSON text per line by
  default, or ``Content-Length`` headers for language servers) and delivered
  to the sink by the reader thread, or by a caller reading its own answer
  (``reads=``, a strategy: see ``StdioTransport``);
- stderr (``_stderr``): drained from the start into the module logger and
  a bounded tail, so a child that floods stderr never blocks on a full pipe.

At end of stream the reader waits briefly for the child to exit and for the
stderr drain to catch up, so the ``TransportClosed`` it reports carries
the exit code and the child's last words.  The child's exit is watched too
(``_exit_watch``): a child that exits while a process it started still
holds stdout ends the stream anyway.  ``StdioTransport.close`` reclaims
the whole process tree (``_reclaim``): close stdin, wait, terminate every
process of the tree, wait, kill what is left, reap; every wait bounded by a
named constant.  ``_child`` ties the pieces together and holds the
finalizer and the ``atexit`` hook.

Two pieces serve other child processes of the library too, and are public
here for that: ``child_env`` (the allowlisted environment a child starts
from) and ``reclaim`` (the reclaim of a ``Reclaimable`` child and its whole
process tree).  The ACP client's terminals start and end their commands with
them, so a terminal's command gets no more of the environment than an agent,
and leaves no more behind than a transport's child.
"""

from __future__ import annotations

import os
import time
import weakref
from typing import Callable, Mapping, Optional, Sequence, Union

from ...errors import RequestId
from ...framing import encode_content_length, encode_line
from ...runtime import logs as _logs
from ...runtime.closing import Closing
from ...runtime.logs import get_logger
from ..base import MessageSink
from ._child import (
    ATEXIT_JOIN_S,
    ATEXIT_STDIN_GRACE_S,
    ATEXIT_TERMINATE_GRACE_S,
    CLOSE_WAIT_S,
    FRAMINGS,
    READS,
    THREAD_JOIN_S,
    Child,
    finalize,
)
from ._fast_path import READER_PARK_S
from ._reader import EXIT_AFTER_EOF_WAIT_S
from ._reclaim import (
    KILL_GRACE_S,
    STDIN_CLOSE_GRACE_S,
    TERMINATE_GRACE_S,
    Reclaimable,
    reap_quietly,
    reclaim,
    stdin_grace_within,
)
from ._spawn import DEFAULT_ENV_ALLOWLIST, Command, child_env, default_label, parse_command, spawn
from ._stderr import DEFAULT_STDERR_TAIL_BYTES, STDERR_DRAIN_WAIT_S

__all__ = [
    "ATEXIT_JOIN_S",
    "ATEXIT_STDIN_GRACE_S",
    "ATEXIT_TERMINATE_GRACE_S",
    "CLOSE_WAIT_S",
    "DEFAULT_ENV_ALLOWLIST",
    "DEFAULT_MAX_LINE_BYTES",
    "DEFAULT_STDERR_TAIL_BYTES",
    "EXIT_AFTER_EOF_WAIT_S",
    "KILL_GRACE_S",
    "READER_PARK_S",
    "READS",
    "STDERR_DRAIN_WAIT_S",
    "STDIN_CLOSE_GRACE_S",
    "TERMINATE_GRACE_S",
    "THREAD_JOIN_S",
    "Reclaimable",
    "StdioTransport",
    "child_env",
    "reclaim",
]

_log = get_logger(__name__)

#: The longest excerpt of the child's stderr in a timeout's hint.
_HINT_STDERR_CHARS = 200
#: Default limit on one message from the child (one line, or one Content-Length body).
DEFAULT_MAX_LINE_BYTES = 16 * 1024 * 1024

SinkRef = Callable[[], Optional[MessageSink]]


def _strong_ref(sink: MessageSink) -> SinkRef:
    return lambda: sink


class StdioTransport(Closing):
    """A child process speaking JSON-RPC on its stdin and stdout.

    The child is started here, so ``pid`` is known at once and a command
    that cannot run fails here.  Messages flow once ``start`` was called
    (by the client).  Close it with ``close`` or a ``with`` block; one
    that is garbage-collected unclosed is reclaimed with a
    ``ResourceWarning``, and those still open at interpreter exit are
    closed by an ``atexit`` hook (graces of ``ATEXIT_STDIN_GRACE_S`` and
    ``ATEXIT_TERMINATE_GRACE_S``, and no sink call).

    Thread-safe: ``send`` may be called from any number of threads (each
    message goes out whole, in call order, and no sender blocks on a child
    that does not read); ``close``, ``stderr_tail``, ``returncode``
    from any thread at any time, including from inside a sink callback.

    The environment of the child is, by default, only the parent's variables
    named in ``DEFAULT_ENV_ALLOWLIST``, updated with ``env``; with
    ``inherit_env=True`` it starts from the whole parent environment instead.

    Args:
        command: the argv list; a ``str`` is split with ``shlex.split``
            (POSIX rules) and is never run through a shell.
        env: variables to set in the child (a value of ``None`` removes that
            variable).
        cwd: the child's working directory; the parent's by default.
        inherit_env: start from the parent's whole environment rather than the
            allowlist.
        max_line_bytes: the largest message accepted from the child (a line,
            newline excluded, or a ``Content-Length`` body).  A longer one is
            discarded with an error logged; when it is a response, its request
            fails with ``MessageTooLarge``.
        framing: ``"lines"`` (one JSON text per line: MCP servers, most
            JSON-RPC tools) or ``"content-length"`` (headers and a body:
            language servers).
        stderr_tail_bytes: how much of the end of the child's stderr to keep
            for ``stderr_tail`` and for ``TransportClosed`` errors.
        label: a short name for logs; derived from ``command`` by default.
        stderr_log_level: the level at which each stderr line is logged on
            this module's logger.
        reads: who reads the child's stdout, a performance strategy (see
            "Strategies" in ``docs/internals.md``): ``"caller"`` (the
            default): a blocking ``call()`` whose request is the only one
            pending writes it and reads its own answer on its own thread, while
            the reader thread steps aside (it looks again every
            ``READER_PARK_S``); everything else the reader thread reads.
            ``"reader_thread"``: the plain design, the reference the same tests
            run: the reader thread reads everything and hands each answer
            over.  Both deliver the same messages in the same order.

    Raises:
        TransportClosed: when the command cannot be started (not found, not
            executable, bad ``cwd``); the message names the command and the
            OS error.
        ValueError: for an empty command, a non-positive ``max_line_bytes``,
            an unknown ``framing`` or an unknown ``reads``.
    """

    def __init__(
        self,
        command: Command,
        *,
        env: Optional[Mapping[str, Optional[str]]] = None,
        cwd: Optional[Union[str, os.PathLike[str]]] = None,
        inherit_env: bool = False,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        framing: str = "lines",
        stderr_tail_bytes: int = DEFAULT_STDERR_TAIL_BYTES,
        label: Optional[str] = None,
        stderr_log_level: int = _logs.DEBUG,
        reads: str = "caller",
    ) -> None:
        argv = parse_command(command)
        if max_line_bytes <= 0:
            raise ValueError("max_line_bytes must be positive")
        if framing not in FRAMINGS:
            raise ValueError(f"framing must be one of {FRAMINGS}, not {framing!r}")
        if reads not in READS:
            raise ValueError(f"reads must be one of {READS}, not {reads!r}")
        self.label = label or default_label(argv)
        self.framing = framing
        self.reads = reads
        self._encode = encode_line if framing == "lines" else encode_content_length
        started_at = time.time()
        popen = spawn(argv, child_env(env, inherit_env), cwd)
        try:
            child = Child(
                popen,
                self.label,
                framing=framing,
                reads=reads,
                max_message_bytes=max_line_bytes,
                stderr_tail_bytes=stderr_tail_bytes,
                stderr_log_level=stderr_log_level,
                started_at=started_at,
            )
        except BaseException:  # e.g. out of file descriptors
            reap_quietly(popen)
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
        self._finalizer = weakref.finalize(self, finalize, child, f"StdioTransport({self.label!r}, pid={child.pid})")
        # Interpreter exit is handled by the atexit hook, without a warning.
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

    @property
    def saw_content_length(self) -> bool:
        """True once a ``framing="lines"`` stream carried a ``Content-Length:`` header (a language server?)."""
        return self._child.reader.saw_content_length

    def start(self, sink: MessageSink) -> None:
        """Start the reader thread, which delivers each message of stdout to ``sink``.

        The transport keeps ``sink`` alive; its threads refer to it weakly.

        Raises:
            TransportClosed: when the transport was closed.
            RuntimeError: when called a second time.
        """
        sink_ref: SinkRef
        try:
            sink_ref = weakref.ref(sink)
        except TypeError:  # an object without weak reference support: held strongly
            sink_ref = _strong_ref(sink)
        self._sink = sink
        self._child.start_reader(sink_ref)

    def send(
        self,
        data: bytes,
        request_ids: Sequence[RequestId] = (),
        *,
        deadline: Optional[float] = None,
        headers: Optional[Mapping[str, str]] = None,
    ) -> None:
        """Write one encoded message (or batch) to the child's stdin, framed.

        ``headers`` (per-message metadata, see ``base``) are ignored: a
        pipe has nowhere to carry them.

        Returns at once: the message is written now, or queued behind earlier
        ones and written by the writer thread as the child reads, in order.
        Only when ``MAX_BACKLOG_BYTES`` are already waiting does
        it wait for room, until ``deadline``; past it the child is taken for
        dead and the transport ends.

        Raises:
            TransportClosed: when the transport is closed or ended, the write
                failed (broken pipe), or the child does not read (see above).
            ValueError: with ``framing="lines"``, when ``data`` holds a newline.
        """
        frame = self._encode(data)
        child = self._child
        if child.ended:
            raise child.closed_error("Transport closed")
        assert child.writer is not None
        child.writer.write(frame, request_ids, deadline)
        if request_ids:
            child.reader.gate.ensure_reading()

    def drive_call(
        self,
        data: bytes,
        request_id: RequestId,
        done: Callable[[], bool],
        deadline: Optional[float],
        headers: Optional[Mapping[str, str]] = None,
    ) -> bool:
        """Send one request and read stdout on the calling thread until ``done()`` or ``deadline``.

        The fast path of a blocking call (``DrivesCalls``, and
        ``_fast_path``): the thread that waits for an answer reads it
        itself, which saves the hand-off from the reader thread.  Only one thread reads at a time: when
        another one is reading, the request is sent as ``send`` sends it
        and this returns at once, for the caller to wait for its answer as
        usual.  Everything read here is delivered to the sink as the reader
        thread would deliver it, in order.  Returns True once the request was
        sent (False only when pipes cannot be polled here: nothing sent).

        Raises:
            TransportClosed: when the transport is closed or the write failed.
            ValueError: as ``send``.
        """
        frame = self._encode(data)
        child = self._child
        if child.ended:
            raise child.closed_error("Transport closed")
        writer = child.writer
        assert writer is not None
        gate = child.reader.gate
        if gate.drive(lambda: writer.write(frame, (request_id,), deadline), done, deadline):
            return True
        if not child.reader.can_poll:
            return False
        writer.write(frame, (request_id,), deadline)  # another thread reads: as send() does, framed once
        gate.ensure_reading()
        return True

    def timeout_hint(self) -> str:
        """What may explain a request timing out (``ExplainsTimeouts``).

        A line-framed stream that carried ``Content-Length:`` headers, or a
        line-framed child that is running and has written nothing at all (both
        what a language server does: use ``framing="content-length"``), and
        the last line the child wrote to stderr.
        """
        hints = []
        reader = self._child.reader
        if reader.saw_content_length:
            hints.append(
                "the server sent Content-Length headers: it frames messages as a language server does; "
                'use StdioTransport(..., framing="content-length")'
            )
        elif self.framing == "lines" and reader.bytes_read == 0 and self.returncode is None:
            hints.append(
                "the server has written nothing on stdout; if it is a language server, it waits for "
                'Content-Length headers: use StdioTransport(..., framing="content-length")'
            )
        last = self._child.stderr_tail().rstrip().rsplit("\n", 1)[-1].strip()
        if last:
            excerpt = last if len(last) <= _HINT_STDERR_CHARS else last[: _HINT_STDERR_CHARS - 3] + "..."
            hints.append(f"its stderr ends with: {excerpt}")
        return "; ".join(hints)

    def abandon(self, request_ids: Sequence[RequestId]) -> None:
        """These requests were given up: drop their messages if they are still queued for stdin."""
        writer = self._child.writer
        if writer is not None:
            writer.abandon(request_ids)

    def release_in_fork(self) -> None:
        """In a process forked after the child started: close this process's copies of the pipes, nothing else.

        (``SurvivesFork``.)  The child is the parent's: it is not
        signalled, and its stdin sees no end of file.  ``close`` does the
        same in a forked process.
        """
        self._finalizer.detach()
        self._child.release_in_fork()

    def close(self, *, stdin_grace: Optional[float] = None) -> None:
        """Reclaim the child and its whole process tree; bounded in time.

        Lets what is queued for stdin go out, closes stdin and waits up to
        ``STDIN_CLOSE_GRACE_S`` (together; ``stdin_grace`` shortens it, for
        a child already told to exit) for the child to exit; then
        terminates every process of its tree (collected before any signal) and
        waits up to ``TERMINATE_GRACE_S``; then kills what is left and
        waits up to ``KILL_GRACE_S``.  Then joins the threads and closes
        the pipes, and calls ``sink.transport_closed`` if that was not done yet.
        In a process forked after the child started, nothing is signalled:
        the child is not this process's to reclaim.

        Idempotent and thread-safe; a second concurrent call returns when the
        first is done.  Safe to call from a sink callback (it does not wait for
        its own thread).

        Raises:
            ValueError: a ``stdin_grace`` that is not from 0 to ``STDIN_CLOSE_GRACE_S``.
        """
        grace = stdin_grace_within(stdin_grace)
        self._finalizer.detach()
        self._child.close(stdin_grace=grace)

    def __repr__(self) -> str:
        child = self._child
        state = "closed" if child.closing else "ended" if child.ended else "running"
        return f"<StdioTransport {self.label!r} pid={child.pid} {state}>"
