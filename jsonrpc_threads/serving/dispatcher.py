"""Input lines in, answers and handler jobs out: the reader's side of the server loop.

Theory of operation: ``Dispatcher`` runs on the thread that reads the input
(``jsonrpc_threads.server.serve``'s).  For each line it decodes the JSON,
answers at once what needs no handler (a line that is not JSON: -32700; an
empty batch or a message that is not valid: -32600; a response: logged and
ignored, never answered) and submits every request and notification to the
worker pool, where the handler runs inside ``handling`` (so ``notify`` and
``current_request_id`` work) under the one policy of
``jsonrpc_threads.runtime.dispatch``.  A batch's answers are collected in one
``_Batch``: its requests may finish in any order on any worker, and whichever
completes the batch writes the array, in the order of the batch.  The reader
never waits for a handler.
"""

from __future__ import annotations

import functools
import threading

from ..errors import InvalidRequest, ParseError
from ..messages import (
    ErrorResponse,
    Notification,
    Request,
    Response,
    decode,
    encode,
    error_message,
    parse_message,
    split_batch,
)
from ..runtime.dispatch import answer_request, run_notification
from .connection import ServerConnection
from .context import handling
from .logs import logger

TYPE_CHECKING = False  # typing is not imported at run time: a tool server starts faster
if TYPE_CHECKING:
    from typing import Any, Callable, List, Optional

    from ..runtime.workers import WorkerPool

    #: ``handler(method, params) -> result``; ``params`` is a dict, a list or ``None``.
    Handler = Callable[[str, Any], Any]


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


class Dispatcher:
    """Turns input lines into answers and handler jobs.

    Not thread-safe: one reader thread calls it; the jobs it submits run on the
    pool's workers, and every answer goes out through ``connection``.

    Args:
        handler: ``handler(method, params) -> result``, run on a worker.
        connection: where answers go.
        pool: the workers that run handlers.
        on_response: given every response the peer sends (``{"id", "result"}`` or
            ``{"id", "error"}``, as parsed JSON), on the reader's thread (it must
            not block: a worker may be the one waiting for that answer): how a
            server that sends requests of its own gets their answers.  ``None``: responses
            are logged and ignored.
    """

    def __init__(
        self,
        handler: Handler,
        connection: ServerConnection,
        pool: WorkerPool,
        on_response: Optional[Callable[[Any], None]] = None,
    ) -> None:
        self._handler = handler
        self._connection = connection
        self._pool = pool
        self._on_response = on_response

    def line_too_long(self, limit: int) -> None:
        """A line over ``limit`` bytes was discarded: answer -32600 with ``"id": null`` and the limit."""
        logger.warning("discarded an input line longer than %d bytes", limit)
        error = InvalidRequest(
            f"Message larger than the limit of {limit} bytes",
            data={"reason": "line too long", "limit": limit},
        )
        self._connection.write_line(encode(error_message(None, error)))

    def line(self, line: bytes) -> None:
        """One input line (not blank, newline removed): answer it at once or submit its handlers."""
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
        if _is_response(obj) and self._on_response is not None:
            self._on_response(obj)  # on this thread: a worker may be waiting for it
            return
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


def _is_response(obj: Any) -> bool:
    return isinstance(obj, dict) and "method" not in obj and "id" in obj and ("result" in obj or "error" in obj)


__all__ = ["Dispatcher"]
