"""The listen stream: a GET on which the server sends requests and notifications of its own.

Theory of operation.  One daemon thread (``jsonrpc-http-listen[<label>]``)
opens the stream (``Accept: text/event-stream``) and delivers each event's
data to the sink, as a POST's SSE answer is delivered.  However an opened
stream ends, the thread reconnects with ``Last-Event-ID`` after the server's
``retry`` delay: that is how servers poll.  A server that ends every stream
at once without a message gets the delay doubled each time (up to
``MAX_RETRY_S``), until a stream delivers a message or stays open for
``LISTEN_HEALTHY_S``, so a broken server is never hammered.  A GET that fails
is retried the same way, ``max_resumptions`` times in a row at most.  The
stream ends for good on 405 (the server has none), any other 4xx, a
redirect, an event over the size limit, :meth:`ListenStream.stop` or
``close()``.

Stopping never blocks: it shuts down the socket of the GET in progress, so
the thread ends at once instead of at its next event.

Thread-safety: :meth:`ListenStream.stop` may be called from any thread.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Optional, Tuple

from ...errors import HttpError, JsonRpcError, MessageTooLarge, TransportClosed
from ._endpoint import Endpoint
from ._exchange import Exchange
from ._reading import consume_sse, media_type
from ._sink import SinkCalls
from ._wire import ACCEPT_STREAM, DEFAULT_RETRY_S, LAST_EVENT_ID_HEADER, LISTEN_HEALTHY_S, MAX_RETRY_S, SSE_TYPE

logger = logging.getLogger(__name__)

#: How one GET went: None (stop for good), or (opened, healthy).
_Outcome = Optional[Tuple[bool, bool]]


class ListenStream:
    """The GET stream for server-initiated messages, on a thread of its own.

    Args:
        endpoint: where the GETs go.
        sink: where the messages go.
        max_message_bytes: the largest event accepted.
        max_failures: GETs that may fail in a row before the stream is given up.
        read_timeout: the longest one socket read may wait.

    Attributes:
        answered: set once the first GET was answered (the stream open, or
            refused) or failed, and when the thread ends.
    """

    def __init__(
        self,
        endpoint: Endpoint,
        sink: SinkCalls,
        *,
        max_message_bytes: int,
        max_failures: int,
        read_timeout: float,
    ) -> None:
        self._endpoint = endpoint
        self._sink = sink
        self._label = endpoint.label
        self._max_message_bytes = max_message_bytes
        self._max_failures = max_failures
        self._read_timeout = read_timeout
        self.answered = threading.Event()
        self._stop = threading.Event()
        # _lock guards _current (the GET in progress) against stop().
        self._lock = threading.Lock()
        self._current: Optional[Exchange] = None
        self._last_event_id: Optional[str] = None
        self._retry_s = DEFAULT_RETRY_S
        self._thread = threading.Thread(target=self._run, name=f"jsonrpc-http-listen[{self._label}]", daemon=True)

    @property
    def alive(self) -> bool:
        """True while the thread runs."""
        return self._thread.is_alive()

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """End the stream now (the GET in progress is interrupted).  Never blocks."""
        with self._lock:
            self._stop.set()
            current = self._current
        if current is not None:
            current.stop()

    def join(self, timeout: float) -> None:
        """Wait (bounded) for the thread to end; never the calling thread itself."""
        if self._thread is not threading.current_thread() and self._thread.ident is not None:
            self._thread.join(timeout)

    # -- the thread -----------------------------------------------------------------------

    def _run(self) -> None:
        try:
            self._attempts()
        except Exception:  # a bug: log it, never kill the process
            logger.exception("%s: listen stream failed", self._label)
        finally:
            self.answered.set()

    def _attempts(self) -> None:
        failures = 0  # GETs failed in a row
        idle = 0  # streams in a row that opened and ended without being healthy
        while not self._stop.is_set():
            outcome = self._once()
            self.answered.set()
            if outcome is None:
                return
            opened, healthy = outcome
            if opened:
                failures = 0
                idle = 0 if healthy else idle + 1
                backoff = max(0, idle - 1)
            else:
                failures += 1
                if failures > self._max_failures:
                    logger.warning("%s: listen stream given up after %d failed attempts", self._label, failures)
                    return
                backoff = failures - 1
            if self._stop.wait(min(self._retry_s * (2**backoff), MAX_RETRY_S)):
                return

    def _once(self) -> _Outcome:
        """One GET of the listen stream."""
        exchange = Exchange((), None, self._read_timeout)
        exchange.last_event_id = self._last_event_id
        exchange.retry_s = self._retry_s
        with self._lock:
            if self._stop.is_set():
                return None
            self._current = exchange
        try:
            return self._get(exchange)
        finally:
            with self._lock:
                self._current = None
            self._last_event_id = exchange.last_event_id
            self._retry_s = exchange.retry_s

    def _get(self, exchange: Exchange) -> _Outcome:
        endpoint = self._endpoint
        try:
            headers = endpoint.headers(ACCEPT_STREAM)
            if exchange.last_event_id is not None:
                headers[LAST_EVENT_ID_HEADER] = exchange.last_event_id
            response = endpoint.request("GET", headers, exchange)
        except TransportClosed:
            return None
        except JsonRpcError as exc:
            if self._stop.is_set():
                return None
            if isinstance(exc, HttpError) and exc.status_code is not None and 300 <= exc.status_code < 400:
                logger.warning("%s: listen stream: %s; not retrying", self._label, exc.message)
                return None  # a redirect will be refused again: retrying is a loop
            logger.debug("%s: listen stream: %s", self._label, exc)
            return False, False
        self.answered.set()
        opened_at = time.monotonic()
        try:
            status = response.status_code
            kind = media_type(response)
            if status == 405:
                logger.debug("%s: the server offers no listen stream (405)", self._label)
                return None
            if 400 <= status < 500:
                logger.warning("%s: listen stream refused (%d); not retrying", self._label, status)
                return None
            if status != 200 or kind != SSE_TYPE:
                logger.debug("%s: listen stream answered %d %s", self._label, status, kind)
                return False, False
            errors = endpoint.errors("the listen stream broke", exchange)
            broken = consume_sse(response, exchange, self._max_message_bytes, self._sink.deliver, errors)
            if self._stop.is_set() or isinstance(broken, TransportClosed):
                return None
            if broken is not None:
                logger.debug("%s: listen stream: %s", self._label, broken)
            healthy = exchange.messages > 0 or time.monotonic() - opened_at >= LISTEN_HEALTHY_S
            return True, healthy
        except MessageTooLarge as exc:
            logger.warning("%s: listen stream ended: %s", self._label, exc)
            return None
        finally:
            response.close()


__all__ = ["ListenStream"]
