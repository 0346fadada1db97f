"""A newline-delimited stdio JSON-RPC 2.0 server loop for writing tools in Python.

Theory of operation: ``serve`` reads one JSON text per line from a binary
input stream on the calling thread, classifies it with
``jsonrpc_threads.messages``, and hands every request and notification to a
small pool of daemon worker threads, which call ``handler(method, params)``.
Answers go out through one ``ServerConnection``, whose lock serializes
writes so each answer is exactly one line (``json + "\\n"``, flushed).  The
reader never waits for a handler: a slow or hung tool does not stop the others
(unless ``max_workers=1``, which gives strict one-at-a-time handling in arrival
order).

Wire rules (JSON-RPC 2.0):

- A line that is not JSON is answered with ``-32700`` and ``"id": null``; a
  value that is not a valid message with ``-32600`` (carrying its id when a valid
  one could be read, else ``null``).  The loop goes on in both cases.
- A line longer than ``max_line_bytes`` (default ``DEFAULT_MAX_LINE_BYTES``)
  is discarded without being parsed and answered with ``-32600``, ``"id": null``
  and ``data: {"reason": ..., "limit": N}``: its id cannot be read, but a peer
  waiting for it learns that something was refused.
- Blank lines are skipped.  Lines are split on ``b"\\n"`` only (U+2028 and U+2029
  inside JSON strings are ordinary characters); a trailing ``b"\\r"`` is
  harmless JSON whitespace.
- A handler raising a ``JsonRpcError`` (for
  instance ``MethodNotFound`` or
  ``InvalidParams``) answers with that error's
  code, message and data.  Any other exception answers ``-32603`` with
  ``data: {"exception": "<ClassName>"}``; its traceback is logged, never sent.
- Notifications are never answered, even when their handler fails.
- A batch is answered with one array, in the order of its items, once all of
  its requests are done (its items may run concurrently).  Notifications and
  ignored responses get no entry; a batch that produces no entry writes
  nothing; an empty array is answered with one ``-32600`` object.
- Responses arriving at the server (objects with ``result`` or ``error`` and no
  ``method``, even malformed ones) are logged at warning level and ignored:
  answering them could start an error ping-pong with the peer.

Handlers send notifications of their own (progress, logs) with the module-level
``notify``, and find the id of the request they serve with
``current_request_id``; both work on the thread that runs the handler.
``current_connection`` returns the ``ServerConnection`` itself, to be
handed to other threads.

End of input: the loop stops reading, waits up to ``drain_timeout`` (default
``EOF_DRAIN_TIMEOUT_S``) for running handlers so their answers go out, then
closes the connection (later writes are dropped) and returns.  Handlers still
running are left on their daemon threads and cannot keep the process alive.  A
broken output (the peer went away) ends the loop quietly as well.  Once the
output is closed, messages still queued are dropped without calling the handler.

Logging: everything goes to ``logging.getLogger("jsonrpc_threads.server")``.
When the process has not configured logging (the root logger has no handler),
``serve`` attaches a stderr handler to that logger for its duration, so the
tracebacks of failing handlers reach stderr (see ``log_to_stderr``).

Layout: the loop is here; its parts are in ``jsonrpc_threads.serving``: the
output (``ServerConnection``, ``serving/connection.py``), what a handler's
thread knows (``notify``, ``current_request_id``, ``current_connection``,
``serving/context.py``), the dispatcher and the batches
(``serving/dispatcher.py``), the line reader (``serving/lines.py``) and the
logger (``serving/logs.py``).  This module is their public path.
"""

from __future__ import annotations

import sys

from .runtime.workers import WorkerPool
from .serving.connection import ServerConnection
from .serving.context import current_connection, current_request_id, handling, notify
from .serving.dispatcher import Dispatcher
from .serving.lines import read_lines, silence_stdout
from .serving.logs import attach_stderr_logging, detach_stderr_logging, logger

TYPE_CHECKING = False  # typing and logging are not imported at run time: a tool server starts faster
if TYPE_CHECKING:
    from typing import IO, Any, Callable, Optional

    #: ``handler(method, params) -> result``; ``params`` is a dict, a list or ``None``.
    Handler = Callable[[str, Any], Any]

__all__ = [
    "DEFAULT_MAX_LINE_BYTES",
    "DEFAULT_MAX_WORKERS",
    "EOF_DRAIN_TIMEOUT_S",
    "Handler",
    "ServerConnection",
    "current_connection",
    "current_request_id",
    "handling",
    "notify",
    "serve",
]

#: At end of input, how long ``serve`` waits for running handlers before it returns.
EOF_DRAIN_TIMEOUT_S = 5.0
#: How many handlers run at once by default.
DEFAULT_MAX_WORKERS = 8
#: The longest line accepted by default (16 MiB, without the newline).
DEFAULT_MAX_LINE_BYTES = 16 * 1024 * 1024
#: When ``serve`` returns, how long it waits for its idle workers to exit.
WORKER_JOIN_GRACE_S = 1.0


def __getattr__(name: str) -> Any:
    """``Handler`` (a ``typing.Callable``), made on first use: typing loads only when asked for."""
    if name == "Handler":
        from typing import Any, Callable  # noqa: PLC0415

        return Callable[[str, Any], Any]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def serve(
    handler: Handler,
    *,
    stdin: Optional[IO[bytes]] = None,
    stdout: Optional[IO[bytes]] = None,
    max_workers: int = DEFAULT_MAX_WORKERS,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    drain_timeout: Optional[float] = EOF_DRAIN_TIMEOUT_S,
    log_to_stderr: bool = True,
    print_to_stderr: bool = True,
    on_response: Optional[Callable[[Any], None]] = None,
) -> None:
    """Serve JSON-RPC 2.0 requests, one JSON text per line, until end of input.

    ``handler`` is called as ``handler(method, params)`` for every request and
    notification, on a worker thread, up to ``max_workers`` at a time: it must be
    thread-safe unless ``max_workers=1``.  Its return value is the result (any
    JSON-encodable value); it raises a
    ``JsonRpcError`` (e.g.
    ``MethodNotFound``,
    ``InvalidParams``) to answer with that error.
    Inside it, ``notify`` and ``current_request_id`` are available.  The
    wire rules are in the module docstring.

    Args:
        handler: ``handler(method, params) -> result``; ``params`` is a dict, a
            list or ``None`` when the message had none.
        stdin: a binary stream to read (default ``sys.stdin.buffer``).
        stdout: a binary stream to write (default ``sys.stdout.buffer``).
        max_workers: the most handlers running at once; queued work waits for a
            free worker.  ``1`` handles messages strictly one after another.
        max_line_bytes: the longest line accepted, newline excluded; a longer
            line is discarded and answered with ``-32600`` and ``"id": null``.
        drain_timeout: at end of input, seconds to wait for running handlers
            before returning (``None``: wait for them however long they take).
            Work still queued or running after it is abandoned.
        log_to_stderr: when logging is not configured (the root logger has no
            handler), log this module's warnings and handler tracebacks to
            stderr while serving.
        print_to_stderr: when serving on the process's own stdout (``stdout``
            not given), point ``sys.stdout`` at ``sys.stderr`` while serving, so
            a stray ``print()`` in a handler cannot corrupt the protocol stream.
        on_response: for a server that sends the peer requests of its own
            (through ``current_connection().write_line``): called with every
            response the peer sends (the parsed JSON object), on the reading
            thread: it must return at once (settle a future, say), since the
            worker that waits for the answer may be the last one free.
            ``None`` (the default): responses are logged and ignored.

    Raises:
        ValueError: for a ``max_workers`` or ``max_line_bytes`` below 1.  Bad
            input never raises: it is answered or logged.
    """
    if max_workers < 1:
        raise ValueError(f"max_workers must be at least 1, not {max_workers}")
    if max_line_bytes < 1:
        raise ValueError(f"max_line_bytes must be at least 1, not {max_line_bytes}")
    own_stdout = stdout is None
    in_stream: IO[bytes] = sys.stdin.buffer if stdin is None else stdin
    out_stream: IO[bytes] = sys.stdout.buffer if stdout is None else stdout
    connection = ServerConnection(out_stream)
    pool = WorkerPool(max_workers, "jsonrpc-server-worker")
    dispatcher = Dispatcher(handler, connection, pool, on_response)
    logging_attached = log_to_stderr and attach_stderr_logging()
    saved_stdout = None
    if own_stdout and print_to_stderr:
        saved_stdout = sys.stdout
        try:
            saved_stdout.flush()
        except (OSError, ValueError):
            pass
        sys.stdout = sys.stderr
    drained = False
    try:
        for line in read_lines(in_stream, max_line_bytes):
            if line is None:
                dispatcher.line_too_long(max_line_bytes)
            elif line.strip():
                dispatcher.line(line)
            if connection.closed:
                break
        else:
            drained = pool.wait_idle(drain_timeout)
            if not drained:
                logger.warning(
                    "end of input: %d handler(s) still running after %ss; returning without them",
                    pool.unfinished,
                    drain_timeout,
                )
    finally:
        connection.close()
        pool.shutdown(WORKER_JOIN_GRACE_S, wait_for_busy=False)
        if saved_stdout is not None:
            sys.stdout = saved_stdout
        if own_stdout and connection.broken:
            silence_stdout()
        if logging_attached:
            detach_stderr_logging()
