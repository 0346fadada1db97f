"""An answer the caller reads itself: one exchange whose messages are handed over as they arrive.

Theory of operation.  ``open_stream`` sends one
request (a POST of the bytes given, or a GET without them) whose answer does
not go to the client's sink: the caller iterates over a ``MessageStream``
and gets each message as bytes, in arrival order.  What counts as a message is
the transport's usual reading, and nothing more is known of it:

- ``application/json``: the body is one message;
- ``text/event-stream``: each event's data is a message, read by the one SSE
  stream (``SseStream``); it is not resumed: a
  stream that breaks ends the iteration with its cause, one the server ends
  ends the iteration;
- ``202`` or an empty body: no message;
- a non-2xx status, a redirect or another content type: the error
  (``_httpbase.errors``), raised by the iteration.

The exchange runs on a thread of its own (``jsonrpc-http-stream[<label>]``),
so that user code in ``auth`` and ``header_provider`` never holds up the
caller, and at most ``max_buffered`` messages wait for the caller: the reader
waits for room (the server's writes then wait on TCP).  Everything is bounded
by the exchange's deadline: the connection, every socket read, the reader's
wait for room, and the caller's wait for the next message; once it passes and
the messages read before it are taken, iterating raises
``RequestTimeout``.  Closing the stream (or
dropping it, or closing the transport) stops the exchange: its socket is shut
down, so the thread ends at once (``close()`` joins it, bounded).

Thread-safety: one thread iterates a stream; ``MessageStream.close`` may be
called from any thread.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from typing import Callable, Deque, Dict, Iterator, List, Mapping, Optional

import requests

from ...errors import HttpError, JsonRpcError, RequestTimeout, TransportClosed
from ...framing.sse import Event
from .._httpbase.endpoint import Endpoint
from .._httpbase.errors import DeadlinePassed, closed_error, excerpt, status_error
from .._httpbase.exchange import Exchange
from .._httpbase.reading import media_type, read_body, read_excerpt
from .._httpbase.settings import HttpSettings
from .._httpbase.stream import Resumption, SseStream
from .._httpbase.wire import ACCEPT_POST, CLOSE_JOIN_GRACE_S, JSON_TYPE, SESSION_HEADER, SSE_TYPE

logger = logging.getLogger(__name__)


class _Answer:
    """What the stream's thread and the caller share: the exchange, the messages read, how it ended.

    Args:
        endpoint: where the request goes.
        settings: the transport's settings (limits, read timeout).
        data: the POST's body, or ``None`` for a GET.
        deadline: on the ``time.monotonic`` clock, or ``None``.
        headers: the message's own headers.
        max_buffered: the most messages read and not yet taken.
        on_end: called (on the stream's thread) once the exchange is over.
    """

    def __init__(
        self,
        endpoint: Endpoint,
        settings: HttpSettings,
        data: Optional[bytes],
        deadline: Optional[float],
        headers: Optional[Mapping[str, str]],
        max_buffered: int,
        on_end: Optional[Callable[[_Answer], None]] = None,
    ) -> None:
        self.endpoint = endpoint
        self.limit = settings.max_message_bytes
        self.data = data
        self.started = time.monotonic()
        self.exchange = Exchange((), deadline, settings.read_timeout, headers)
        self.max_buffered = max_buffered
        self.on_end = on_end
        # _ready's lock guards messages, finished, timed_out, error and closed.
        self._ready = threading.Condition(threading.Lock())
        self.messages: Deque[bytes] = collections.deque()
        self.finished = False
        self.timed_out = False  # the exchange ended at its deadline
        self.error: Optional[JsonRpcError] = None
        self.closed = False  # the caller closed the stream
        self.thread: Optional[threading.Thread] = None

    # -- the stream's thread -------------------------------------------------------------------

    def run(self) -> None:
        """Carry the exchange and hand over what it brings (the stream's thread; never raises)."""
        error: Optional[JsonRpcError] = None
        try:
            self._exchange()
        except JsonRpcError as exc:
            error = exc
        except Exception as exc:  # a bug: never leave the caller waiting
            logger.exception("%s: unexpected failure of a stream", self.endpoint.label)
            error = HttpError(f"{self.endpoint.label}: unexpected failure: {type(exc).__name__}")
        finally:
            self._finish(error)
            if self.on_end is not None:
                self.on_end(self)

    def _exchange(self) -> None:
        endpoint = self.endpoint
        exchange = self.exchange
        if exchange.stopped:
            return
        headers = endpoint.headers(ACCEPT_POST)
        if self.data is not None:
            headers["Content-Type"] = JSON_TYPE
        if exchange.headers:
            headers.update(exchange.headers)
        method = "GET" if self.data is None else "POST"
        response = endpoint.request(method, headers, exchange, data=self.data)
        try:
            self._read(response, sent_session=SESSION_HEADER in headers)
        finally:
            response.close()

    def _read(self, response: requests.Response, *, sent_session: bool) -> None:
        label = self.endpoint.label
        exchange = self.exchange
        status = response.status_code
        if not 200 <= status < 300:
            body = read_excerpt(response, exchange)
            raise status_error(
                label, status, response.reason or "", body, sent_session=sent_session, answers_ours=lambda item: False
            )
        kind = media_type(response)
        if kind == SSE_TYPE:
            stream = SseStream(
                self.endpoint,
                exchange,
                limit=self.limit,
                resumption=Resumption(0),
                what="the SSE answer",
                on_event=self._on_event,
                wanted=_not_resumed,
            )
            stream.follow(response)
            return
        if kind == JSON_TYPE:
            with self.endpoint.errors("reading the answer failed", exchange):
                body = read_body(response, exchange, self.limit)
            if body.strip():
                self._put(body)
            return
        body = read_excerpt(response, exchange)
        if status == 202 or not body:
            return
        raise HttpError(
            f"{label}: unexpected Content-Type {kind or 'none'!r} in a {status} answer",
            status_code=status,
            body_excerpt=excerpt(body),
        )

    def _on_event(self, event: Event) -> bool:
        if not event.data:
            return False  # a priming event, or a keep-alive
        self._put(event.data.encode("utf-8"))
        return True

    def _put(self, message: bytes) -> None:
        """Hand a message over; wait (to the deadline) while ``max_buffered`` wait already.

        Raises:
            DeadlinePassed: the deadline passed while the caller took nothing.
        """
        exchange = self.exchange
        with self._ready:
            while len(self.messages) >= self.max_buffered and not exchange.stopped:
                left = None if exchange.deadline is None else exchange.deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise DeadlinePassed(f"{self.endpoint.label}: the deadline passed before the caller took a message")
                self._ready.wait(left)
            if not exchange.stopped:
                self.messages.append(message)
                self._ready.notify_all()

    def _finish(self, error: Optional[JsonRpcError]) -> None:
        with self._ready:
            self.finished = True
            if isinstance(error, DeadlinePassed):
                self.timed_out = True  # the caller's RequestTimeout
            elif self.error is None:
                self.error = error
            self._ready.notify_all()

    # -- the caller ----------------------------------------------------------------------------

    def take(self) -> Optional[bytes]:
        """The next message; ``None`` once the answer ended.

        Raises:
            RequestTimeout: the deadline passed (and every message read before it was taken).
            JsonRpcError: what ended the exchange (once; then ``None``).
        """
        deadline = self.exchange.deadline
        with self._ready:
            while True:
                if self.messages:
                    message = self.messages.popleft()
                    self._ready.notify_all()
                    return message
                if self.closed:
                    return None
                if self.finished:
                    error, self.error = self.error, None
                    if error is not None:
                        raise error
                    if not self.timed_out:
                        return None
                    break
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    break
                self._ready.wait(left)
        self.stop()
        raise self._timeout()

    def _timeout(self) -> RequestTimeout:
        deadline = self.exchange.deadline
        seconds = None if deadline is None else round(max(0.0, deadline - self.started), 3)
        error = RequestTimeout("POST" if self.data is not None else "GET", None, seconds)
        error.message = f"{self.endpoint.label}: the answer did not end within {seconds}s"
        return error

    def stop(self, error: Optional[JsonRpcError] = None) -> None:
        """End the exchange now (its socket is shut down); ``error`` is what the caller gets next.  Never blocks."""
        with self._ready:
            if not self.finished and error is not None and self.error is None:
                self.error = error
            if error is None:
                self.closed = True
                self.messages.clear()
            self._ready.notify_all()
        self.exchange.stop()


def _not_resumed(cause: Optional[JsonRpcError]) -> bool:
    """The answer's SSE stream ended: a clean end is the end; a break is raised (nothing is resumed)."""
    if cause is not None:
        raise cause
    return False


class MessageStream:
    """The messages of one HTTP answer, as bytes, in arrival order: an iterator.  See the module docstring.

    Made by ``HttpTransport.open_stream``.  One thread iterates it;
    ``close`` may be called from any thread, and so may the end of a
    ``with`` block.  Dropping it unclosed stops its exchange too.

    Iterating raises:
        RequestTimeout: the deadline passed before the answer ended (the
            messages read before it are handed over first); the exchange is stopped.
        TransportClosed: the transport closed.
        HttpConnectionError: the connection failed, timed out (``read_timeout``)
            or broke mid-answer (the answer is not resumed).
        HttpError: a non-2xx answer, a redirect, an unexpected content type.
        JsonRpcError: a JSON-RPC error in a non-2xx answer's body.
        MessageTooLarge: a message over ``max_message_bytes``.
    """

    def __init__(self, answer: _Answer) -> None:
        self._answer = answer

    def __iter__(self) -> Iterator[bytes]:
        return self

    def __next__(self) -> bytes:
        message = self._answer.take()
        if message is None:
            raise StopIteration
        return message

    @property
    def closed(self) -> bool:
        """True once ``close`` was called."""
        return self._answer.closed

    def close(self, *, wait: bool = True) -> None:
        """Stop the exchange (its socket is shut down) and wait for its thread, bounded.  Idempotent.

        Args:
            wait: join the exchange's thread (``CLOSE_JOIN_GRACE_S`` at most);
                ``False`` for a caller leaving at its deadline: the thread ends
                on its own once what holds it (a blocking hook) returns.
        """
        answer = self._answer
        answer.stop()
        thread = answer.thread
        if wait and thread is not None and thread is not threading.current_thread():
            thread.join(CLOSE_JOIN_GRACE_S)

    def __enter__(self) -> MessageStream:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __del__(self) -> None:
        answer = getattr(self, "_answer", None)
        if answer is not None and not answer.finished:
            answer.stop()  # never blocks: the thread ends by itself

    def __repr__(self) -> str:
        answer = self._answer
        state = "closed" if answer.closed else "ended" if answer.finished else "open"
        return f"<MessageStream {answer.endpoint.label} {state}>"


class OpenStreams:
    """The answers of one transport still being read: started here, stopped when it closes.  Thread-safe.

    Args:
        endpoint: the transport's endpoint.
        settings: the transport's settings.
    """

    def __init__(self, endpoint: Endpoint, settings: HttpSettings) -> None:
        self._endpoint = endpoint
        self._settings = settings
        # _lock guards _open and _closed.
        self._lock = threading.Lock()
        self._open: Dict[int, _Answer] = {}
        self._closed = False

    def open(
        self, data: Optional[bytes], deadline: Optional[float], headers: Optional[Mapping[str, str]], max_buffered: int
    ) -> MessageStream:
        """Start the exchange on a thread of its own; the stream that reads it.

        Raises:
            TransportClosed: the transport is closed.
            ValueError: ``max_buffered`` below 1.
        """
        if max_buffered < 1:
            raise ValueError("max_buffered must be at least 1")
        answer = _Answer(self._endpoint, self._settings, data, deadline, headers, max_buffered, self._ended)
        thread = threading.Thread(target=answer.run, name=f"jsonrpc-http-stream[{self._endpoint.label}]", daemon=True)
        answer.thread = thread
        with self._lock:
            if self._closed:
                raise closed_error()
            self._open[id(answer)] = answer
        try:
            thread.start()
        except BaseException:
            self._ended(answer)
            raise
        return MessageStream(answer)

    def _ended(self, answer: _Answer) -> None:
        with self._lock:
            self._open.pop(id(answer), None)

    def stop_all(self) -> None:
        """Stop every answer being read (the caller gets ``TransportClosed``), and refuse new ones."""
        with self._lock:
            self._closed = True
            answers = list(self._open.values())
        for answer in answers:
            answer.stop(TransportClosed("HTTP transport closed"))

    def join(self, deadline: float) -> None:
        """Wait (until ``deadline``) for the threads of the answers stopped by ``stop_all``."""
        with self._lock:
            threads: List[threading.Thread] = [a.thread for a in self._open.values() if a.thread is not None]
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))


__all__ = ["MessageStream", "OpenStreams"]
