"""A streamed answer: one request, many responses to its id, read as a bounded iterator.

Theory of operation.  Some peers answer a request with a stream of
responses, each a JSON-RPC response to the same id (A2A's
``SendStreamingMessage`` and ``SubscribeToTask``, over one SSE answer).  The
request's life is the core's as any other's: the protocol core
(``Connection.register(..., streamed=True)``) keeps it pending and reports
each result as a ``Streamed`` event; an error response, the deadline, the
transport's loss or ``close()`` end it as they end any request.  What is
particular to a stream is here:

- ``Answers`` is the token the core hands back: the shell pushes each result
  to it, or settles it with the error that ended the request (a
  ``RequestTimeout`` at the deadline).  It only queues and wakes: it never
  blocks and never runs user code (the shell calls it from reader and timer
  threads);
- ``ResponseStream`` is what the caller holds: an iterator over the queued
  results, in arrival order.  Each wait for the next one is bounded by the
  request's deadline (past it, the caller's thread ends the request itself,
  as a blocking ``call()`` does); the results that came before the end are
  handed over first, then the error is raised.  ``is_final(result)`` runs on
  the caller's thread: once it says so, that result is the last one handed
  over and the request is ended (``Shell.end_stream``: the transport stops
  reading, the peer is told nothing); ``close()`` withdraws the request as a
  future's ``cancel()`` does (the peer is told, where the client is
  configured to).

A transport knows nothing of this: the client's sink tells it which messages
answered a request (``MessageSink.message_received``), and a stream's
answers but its last answer none, so the exchange that carries it goes on.

Thread-safety: one thread iterates a stream; ``close`` may be called from
any thread.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from typing import TYPE_CHECKING, Any, Callable, Deque, Iterator, Mapping, Optional

from .. import messages
from ..errors import RequestId, RequestTimeout
from ..runtime.logs import get_logger

if TYPE_CHECKING:
    from .shell import Shell

logger = get_logger("jsonrpc_threads.core.streams")

#: How long a caller whose deadline passed waits for the request's end it just caused (it is
#: settled before ``Shell.time_out`` returns: this only bounds a wait that cannot happen).
SETTLED_WAIT_S = 1.0

#: What ``Answers.take`` returns when its deadline passed first.
WAITED_OUT: Any = object()

#: Decides, on the caller's thread, whether a result is a stream's last.
IsFinal = Callable[[Any], bool]


class Answers:
    """The results of one streamed request as they arrive, and how it ended.  Thread-safe; never blocks.

    The token the protocol core holds for the request: the shell calls
    ``push`` for each result and ``settle_exception`` (or
    ``settle_timeout``) once the request ends.
    """

    def __init__(self) -> None:
        # _ready's lock guards _items, _error and _dropped.
        self._ready = threading.Condition(threading.Lock())
        self._items: Deque[Any] = deque()
        self._error: Optional[BaseException] = None  # what ended the request (raised after the items)
        self._dropped = False  # the caller closed the stream: nothing more is kept

    def push(self, result: Any) -> None:
        """One more result (from the shell)."""
        with self._ready:
            if not self._dropped and self._error is None:
                self._items.append(result)
                self._ready.notify_all()

    def settle_exception(self, error: BaseException) -> None:
        """The request ended with ``error`` (from the shell); the first end counts."""
        with self._ready:
            if self._error is None:
                self._error = error
                self._ready.notify_all()

    def settle_timeout(self, method: str, request_id: RequestId, timeout: Optional[float], hint: str) -> None:
        """The request's deadline passed (from the shell's timer)."""
        self.settle_exception(RequestTimeout(method, request_id, timeout, hint))

    def drop(self) -> None:
        """The caller closed the stream: forget what is queued, keep nothing more."""
        with self._ready:
            self._dropped = True
            self._items.clear()
            self._ready.notify_all()

    def take(self, deadline: Optional[float]) -> Any:
        """The next result, waiting until ``deadline`` at most.

        Raises:
            StopIteration: the stream was dropped.
            BaseException: what ended the request (once every result before it was taken).

        Returns:
            The result, or ``WAITED_OUT`` when the deadline passed first (the caller ends the request).
        """
        with self._ready:
            while True:
                if self._items:
                    return self._items.popleft()
                if self._dropped:
                    raise StopIteration
                if self._error is not None:
                    raise self._error
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return WAITED_OUT
                self._ready.wait(left)


class ResponseStream:
    """The results of one streamed request, in arrival order: an iterator and a context manager.

    Made by ``JsonRpcClient.request_stream``.  One thread iterates; ``close``
    may be called from any thread.  Dropping it unclosed closes it.

    Iterating raises:
        RequestTimeout: the request's timeout passed before its final result.
        JsonRpcError: the peer's error response (a subclass for the standard
            codes), which ends the stream; ``TransportClosed`` when the
            transport went away or the client closed; what the transport
            raised (``HttpConnectionError``: the answer broke or ended early).
        Exception: what ``is_final`` raised (the stream is closed).

    Attributes:
        request_id: the request's id.
        method: the request's method.
        timeout: the request's timeout, in seconds (``None``: none).
    """

    def __init__(
        self,
        shell: Shell,
        request_id: RequestId,
        method: str,
        timeout: Optional[float],
        deadline: Optional[float],
        is_final: Optional[IsFinal],
    ) -> None:
        self.request_id = request_id
        self.method = method
        self.timeout = timeout
        self._deadline = deadline
        self._is_final = is_final
        self._shell = shell
        self._answers = Answers()
        self._ended = False  # the caller saw the end: the final result, the error, or close()

    def __iter__(self) -> Iterator[Any]:
        return self

    def __next__(self) -> Any:
        if self._ended:
            raise StopIteration
        try:
            result = self._answers.take(self._deadline)
            if result is WAITED_OUT:  # this thread's wait ended first: the request ends here, as at the timer
                self._shell.time_out(self.request_id)  # settles the Answers (unless it ended meanwhile: so did they)
                result = self._answers.take(time.monotonic() + SETTLED_WAIT_S)
                if result is WAITED_OUT:
                    raise RequestTimeout(self.method, self.request_id, self.timeout)
            final = self._is_final is not None and self._is_final(result)
        except StopIteration:
            self._ended = True
            raise
        except BaseException:
            self.close()
            raise
        if final:
            self._ended = True
            self._answers.drop()
            self._shell.end_stream(self.request_id)
        return result

    @property
    def closed(self) -> bool:
        """True once the stream ended (its final result or error taken) or was closed."""
        return self._ended

    def close(self, reason: str = "Cancelled by the client") -> None:
        """Stop now: the request is withdrawn (the peer told ``reason`` where the client sends cancellations).

        Idempotent; never blocks on the peer; from any thread.
        """
        self._ended = True
        self._answers.drop()
        self._shell.withdraw(self.request_id, reason)
        self._shell.end_stream(self.request_id, final=False)  # what the core still keeps of it, if anything

    def cancel(self) -> bool:
        """As a future's ``cancel()``: ``close()``; True when the stream was still open (now withdrawn)."""
        return self.cancel_with_reason("Cancelled by the client")

    def cancel_with_reason(self, reason: str) -> bool:
        """As ``cancel``, telling the peer ``reason`` (what ``JsonRpcClient.cancel(stream, reason)`` calls)."""
        was_open = not self._ended
        self.close(reason)
        return was_open

    def __enter__(self) -> ResponseStream:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __del__(self) -> None:
        # The shell never holds this object (the core holds its Answers), so dropping it never runs under its lock.
        if not getattr(self, "_ended", True):
            try:
                self.close()
            except Exception:  # the interpreter is shutting down, say: the deadline ends it
                logger.debug("closing a dropped stream failed", exc_info=True)

    def __repr__(self) -> str:
        return f"<ResponseStream {self.method} id={self.request_id!r} {'ended' if self._ended else 'open'}>"


def start_stream(
    shell: Shell,
    method: str,
    params: messages.Params,
    timeout: Optional[float],
    is_final: Optional[IsFinal],
    headers: Optional[Mapping[str, str]],
) -> ResponseStream:
    """Register a streamed request in the core, send it, and return its stream (see ``request_stream``).

    Raises:
        TransportClosed: (a fresh one) the client is closed.
        TypeError, ValueError: params that cannot be encoded.
    """
    request_id, data = shell.core.request(method, params)
    deadline = None if timeout is None else time.monotonic() + timeout
    stream = ResponseStream(shell, request_id, method, timeout, deadline, is_final)
    shell.register(request_id, method, timeout, deadline, stream._answers, streamed=True)
    try:
        shell.send(data, (request_id,), deadline, headers)
    except BaseException as exc:  # interrupted (KeyboardInterrupt): the caller never gets the stream
        shell.interrupted(request_id, stream._answers, exc)
        stream._ended = True
        raise
    return stream


__all__ = ["SETTLED_WAIT_S", "WAITED_OUT", "Answers", "IsFinal", "ResponseStream", "start_stream"]
