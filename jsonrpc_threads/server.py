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
"""

from __future__ import annotations

import contextvars
import functools
import os
import sys
import threading

from ._logs import LazyLogger
from .errors import InvalidRequest, ParseError
from .messages import (
    ErrorResponse,
    Notification,
    Request,
    Response,
    decode,
    encode,
    error_message,
    notification_message,
    parse_message,
    split_batch,
)
from .runtime.dispatch import answer_request, run_notification
from .runtime.workers import WorkerPool

TYPE_CHECKING = False  # typing and logging are not imported at run time: a tool server starts faster
if TYPE_CHECKING:
    import logging
    from typing import IO, Any, Callable, Iterator, List, Optional

    from .errors import RequestId
    from .messages import Params

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
    "notify",
    "serve",
]


class _ServerLogger(LazyLogger):
    """This module's logger: when it first loads logging, the stderr handler of serve() goes in."""

    __slots__ = ()

    @property
    def logger(self) -> logging.Logger:
        real = self._logger
        if real is None:
            real = LazyLogger.logger.fget(self)  # type: ignore[attr-defined]
            _stderr_logging_loaded()
        return real


logger = _ServerLogger(__name__)

#: At end of input, how long ``serve`` waits for running handlers before it returns.
EOF_DRAIN_TIMEOUT_S = 5.0
#: How many handlers run at once by default.
DEFAULT_MAX_WORKERS = 8
#: The longest line accepted by default (16 MiB, without the newline).
DEFAULT_MAX_LINE_BYTES = 16 * 1024 * 1024
#: When ``serve`` returns, how long it waits for its idle workers to exit.
WORKER_JOIN_GRACE_S = 1.0

_DISCARD_CHUNK_BYTES = 64 * 1024


def __getattr__(name: str) -> Any:
    """``Handler`` (a ``typing.Callable``), made on first use: typing loads only when asked for."""
    if name == "Handler":
        from typing import Any, Callable  # noqa: PLC0415

        return Callable[[str, Any], Any]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class ServerConnection:
    """The output side of one ``serve`` loop: every message is one flushed line.

    Created by ``serve``; handlers reach it through ``current_connection``.
    Thread-safe: any thread may call ``notify`` at any time, and writes never
    interleave.  Once the output is broken or ``serve`` has returned, the
    connection is closed and messages are dropped (logged at debug level).
    """

    def __init__(self, stream: IO[bytes]) -> None:
        self._stream = stream
        # Serializes writes to _stream (its only job: the lock *is* the framing);
        # _closed and _broken are only changed while holding it.
        self._write_lock = threading.Lock()
        self._closed = False
        self._broken = False

    @property
    def closed(self) -> bool:
        """True once the output is broken or the loop has ended."""
        return self._closed

    @property
    def broken(self) -> bool:
        """True when a write failed (the peer went away)."""
        return self._broken

    def notify(self, method: str, params: Params = None) -> None:
        """Send a notification to the peer (best effort).

        Args:
            method: the notification's method.
            params: a mapping, a sequence or ``None``.

        Raises:
            TypeError: when the method or params have the wrong type or cannot be
                encoded as JSON (the caller's bug; nothing is sent).
        """
        self.write_line(encode(notification_message(method, params)))

    def write_line(self, data: bytes) -> bool:
        """Write one encoded message (or batch) and a newline, then flush.

        Returns:
            True when written; False when the connection is closed or the write
            failed (which closes it).
        """
        with self._write_lock:
            if self._closed:
                logger.debug("output closed; dropped %d bytes", len(data))
                return False
            try:
                self._stream.write(data + b"\n")
                self._stream.flush()
            except (OSError, ValueError) as exc:  # ValueError: write to a closed file
                self._closed = True
                self._broken = True
                logger.info("output is gone (%s: %s); stopping", type(exc).__name__, exc)
                return False
            return True

    def close(self) -> None:
        """Drop every later message.  Idempotent; does not close the stream."""
        with self._write_lock:
            self._closed = True


class _HandlerContext:
    """What a handler's thread knows of the request it serves."""

    __slots__ = ("connection", "request_id")

    def __init__(self, connection: ServerConnection, request_id: Optional[RequestId]) -> None:
        self.connection = connection
        self.request_id = request_id


_current: contextvars.ContextVar[Optional[_HandlerContext]] = contextvars.ContextVar(
    "jsonrpc_threads_server_handler", default=None
)


class handling:
    """``with handling(connection, request_id):`` what ``notify``, ``current_request_id`` and
    ``current_connection`` see inside the block, on this thread.

    ``serve`` runs every handler in one; ``jsonrpc_threads.wsgi`` runs
    the same handlers in one too, so that they work there unchanged.
    """

    __slots__ = ("_context", "_token")

    def __init__(self, connection: ServerConnection, request_id: Optional[RequestId]) -> None:
        self._context = _HandlerContext(connection, request_id)

    def __enter__(self) -> None:
        self._token = _current.set(self._context)

    def __exit__(self, *exc_info: object) -> None:
        _current.reset(self._token)


def _context(what: str) -> _HandlerContext:
    context = _current.get()
    if context is None:
        raise RuntimeError(f"{what}() works only inside a handler called by jsonrpc_threads.server.serve()")
    return context


def notify(method: str, params: Params = None) -> None:
    """Send a notification from inside a handler, e.g. progress while it works.

    The notification goes out at once, so the peer receives it before the answer
    to the request being handled.  Best effort: dropped when the output is gone.
    Works on the thread that runs the handler (a thread the handler starts sees it
    only when run through ``contextvars.copy_context().run``; otherwise pass it
    ``current_connection``).  Thread-safe.

    Args:
        method: the notification's method.
        params: a mapping, a sequence or ``None``.

    Raises:
        RuntimeError: when called outside a handler.
        TypeError: when the params cannot be encoded as JSON.
    """
    _context("notify").connection.notify(method, params)


def current_request_id() -> Optional[RequestId]:
    """The id of the request the calling handler serves (``None`` for a notification).

    Raises:
        RuntimeError: when called outside a handler.
    """
    return _context("current_request_id").request_id


def current_connection() -> ServerConnection:
    """The connection of the loop that called the current handler.

    Hand it to another thread to keep sending notifications from there.

    Raises:
        RuntimeError: when called outside a handler.
    """
    return _context("current_connection").connection


class _Batch:
    """Collects the answers of one batch; whoever completes it writes the array."""

    def __init__(self, connection: ServerConnection) -> None:
        self._connection = connection
        self._lock = threading.Lock()  # guards _parts and _missing
        self._parts: List[Optional[bytes]] = []
        self._missing = 1  # held by the dispatcher until seal()

    def add(self, answer: bytes) -> None:
        with self._lock:
            self._parts.append(answer)

    def reserve(self) -> Callable[[bytes], None]:
        """A slot for a request's answer; returns the function that fills it."""
        with self._lock:
            index = len(self._parts)
            self._parts.append(None)
            self._missing += 1
        return lambda answer: self._fill(index, answer)

    def seal(self) -> None:
        """No more items; write now if every answer is in."""
        self._release()

    def _fill(self, index: int, answer: bytes) -> None:
        with self._lock:
            self._parts[index] = answer
        self._release()

    def _release(self) -> None:
        with self._lock:
            self._missing -= 1
            if self._missing:
                return
            parts = [part for part in self._parts if part is not None]
        if parts:
            self._connection.write_line(b"[" + b",".join(parts) + b"]")


class _Dispatcher:
    """Turns input lines into answers and handler jobs.  Runs on the reader thread."""

    def __init__(self, handler: Handler, connection: ServerConnection, pool: WorkerPool) -> None:
        self._handler = handler
        self._connection = connection
        self._pool = pool

    def line_too_long(self, limit: int) -> None:
        logger.warning("discarded an input line longer than %d bytes", limit)
        error = InvalidRequest(
            f"Message larger than the limit of {limit} bytes",
            data={"reason": "line too long", "limit": limit},
        )
        self._connection.write_line(encode(error_message(None, error)))

    def line(self, line: bytes) -> None:
        try:
            value = decode(line)
        except ParseError as exc:
            logger.warning("input line is not JSON (%s); answered -32700", exc.data)
            self._connection.write_line(encode(error_message(None, exc)))
            return
        try:
            items = split_batch(value)
        except InvalidRequest as exc:
            logger.warning("empty batch; answered -32600")
            self._connection.write_line(encode(error_message(None, exc)))
            return
        if not isinstance(value, list):
            self._item(value, self._connection.write_line, None)
            return
        batch = _Batch(self._connection)
        for item in items:
            self._item(item, None, batch)
        batch.seal()

    def _item(
        self,
        obj: Any,
        deliver: Optional[Callable[[bytes], object]],
        batch: Optional[_Batch],
    ) -> None:
        """Classify one message; answer, ignore or submit it.

        Answers go to ``deliver`` for a single message, into ``batch`` otherwise.
        """
        try:
            message = parse_message(obj)
        except InvalidRequest as exc:
            if isinstance(obj, dict) and "method" not in obj and ("result" in obj or "error" in obj):
                logger.warning("ignored a malformed response: %s", exc.data)
                return
            logger.warning("invalid request (%s); answered -32600", exc.data)
            request_id = exc.data.get("id") if isinstance(exc.data, dict) else None
            answer = encode(error_message(request_id, exc))
            if batch is not None:
                batch.add(answer)
            elif deliver is not None:
                deliver(answer)
            return
        if isinstance(message, (Response, ErrorResponse)):
            logger.warning("ignored a response (id %r): this server sends no requests", message.id)
            return
        if isinstance(message, Notification):
            self._pool.submit(functools.partial(self._run_notification, message))
            return
        if batch is not None:
            deliver = batch.reserve()
        assert deliver is not None
        self._pool.submit(functools.partial(self._answer, message, deliver))

    def _answer(self, request: Request, deliver: Callable[[bytes], object]) -> None:
        if self._connection.closed:
            logger.debug("output is gone; request %r (id %r) dropped unhandled", request.method, request.id)
            return
        deliver(self._run_request(request))

    def _run_request(self, request: Request) -> bytes:
        with handling(self._connection, request.id):
            return answer_request(
                request.id,
                request.method,
                functools.partial(self._handler, request.method, request.params),
                "server",
                logger,
            )

    def _run_notification(self, notification: Notification) -> None:
        if self._connection.closed:
            logger.debug("output is gone; notification %r dropped unhandled", notification.method)
            return
        with handling(self._connection, None):
            run_notification(
                notification.method,
                functools.partial(self._handler, notification.method, notification.params),
                "server",
                logger,
            )


def _read_lines(stream: IO[bytes], limit: int) -> Iterator[Optional[bytes]]:
    """Yield each line without its newline, or ``None`` for a line over ``limit`` (discarded)."""
    while True:
        try:
            line = stream.readline(limit + 1)
        except (OSError, ValueError) as exc:
            logger.info("input is gone (%s: %s); treated as end of input", type(exc).__name__, exc)
            return
        if not line:
            return
        if line.endswith(b"\n"):
            yield line[:-1]
        elif len(line) <= limit:
            yield line  # the last line, without a newline
        else:
            while True:
                try:
                    chunk = stream.readline(_DISCARD_CHUNK_BYTES)
                except (OSError, ValueError):
                    chunk = b""
                if not chunk or chunk.endswith(b"\n"):
                    break
            yield None


# _stderr_lock guards _stderr_users, _stderr_pending and _stderr_handler.
_stderr_lock = threading.RLock()
_stderr_users = 0
_stderr_pending = False  # serve() wants the handler, but logging was not loaded yet
_stderr_handler: Optional[logging.Handler] = None


def _attach_stderr_logging() -> bool:
    """serve() begins: log to stderr while it runs, unless the process configured logging.

    When ``logging`` was never imported, nobody configured it: the handler
    goes in when this module first logs (see ``_ServerLogger``), so a
    server that logs nothing never loads logging.
    """
    global _stderr_users, _stderr_pending
    with _stderr_lock:
        if _stderr_users == 0:
            if "logging" in sys.modules:
                import logging  # noqa: PLC0415 - loaded already

                if logging.getLogger().handlers:
                    return False
                _install_stderr_handler_locked()
            else:
                _stderr_pending = True
        _stderr_users += 1
        return True


def _install_stderr_handler_locked() -> None:
    global _stderr_handler
    import logging  # noqa: PLC0415

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(name)s: %(levelname)s: %(message)s"))
    logging.getLogger(__name__).addHandler(handler)  # the Logger this module's logger stands for
    _stderr_handler = handler


def _stderr_logging_loaded() -> None:
    """This module's logger was just made: put in the handler serve() is waiting for."""
    global _stderr_pending
    with _stderr_lock:
        if not _stderr_pending:
            return
        _stderr_pending = False
        import logging  # noqa: PLC0415

        if _stderr_users and not logging.getLogger().handlers:
            _install_stderr_handler_locked()


def _detach_stderr_logging() -> None:
    global _stderr_users, _stderr_handler, _stderr_pending
    with _stderr_lock:
        _stderr_users -= 1
        if _stderr_users == 0:
            _stderr_pending = False
            if _stderr_handler is not None:
                import logging  # noqa: PLC0415 - loaded: the handler is one of its

                logging.getLogger(__name__).removeHandler(_stderr_handler)
                _stderr_handler = None


def _silence_stdout() -> None:
    # Python's advice for a broken stdout: point the fd at devnull, so the flush at
    # interpreter exit does not print "Exception ignored ... BrokenPipeError".
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, sys.stdout.fileno())
        finally:
            os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


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
    dispatcher = _Dispatcher(handler, connection, pool)
    logging_attached = log_to_stderr and _attach_stderr_logging()
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
        for line in _read_lines(in_stream, max_line_bytes):
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
            _silence_stdout()
        if logging_attached:
            _detach_stderr_logging()
