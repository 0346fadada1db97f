"""The listen stream: a GET on which the server sends requests and notifications of its own.

Theory of operation.  One daemon thread (``jsonrpc-http-listen[<label>]``)
follows one ``SseStream`` (``Accept:
text/event-stream``), delivering each event's data to the sink as a POST's
SSE answer is delivered.  However an opened stream ends, it is opened again,
with ``Last-Event-ID`` once the server gave event ids, after the server's
``retry`` delay: that is how servers poll.  A server that ends every stream
at once without a message gets the delay doubled each time (up to
``MAX_RETRY_S``), until a stream delivers a message or stays open for
``HEALTHY_STREAM_S``, so a broken server is never hammered; only GETs that
fail count toward the bound, ``max_resumptions`` in a row.  The stream ends
for good on 405 (the server has none), any other 4xx, a redirect, an event
over the size limit, ``ListenStream.stop`` or ``close()``.

Stopping never blocks: it shuts down the socket of the GET in progress, so
the thread ends at once instead of at its next event.

A transport has at most one listen stream running (``Listens``); one that
was stopped (``reset_session``) may still be ending, and ``close`` waits for
it too.

Thread-safety: ``ListenStream.stop`` and every method of ``Listens`` may be
called from any thread.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import List, Optional

from ...errors import HttpError, JsonRpcError, MessageTooLarge, TransportClosed
from .._httpbase.endpoint import Endpoint
from .._httpbase.errors import closed_error
from .._httpbase.exchange import Exchange
from .._httpbase.sink import SinkCalls
from .._httpbase.stream import Resumption, SseStream, delivering

logger = logging.getLogger(__name__)


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
        self._label = endpoint.label
        self._exchange = Exchange((), None, read_timeout)  # no deadline: it lasts until stopped
        self.answered = threading.Event()
        self._stream = SseStream(
            endpoint,
            self._exchange,
            limit=max_message_bytes,
            resumption=Resumption(
                max_failures, refund_when_healthy=True, needs_event_id=False, count_failed_gets_only=True
            ),
            what="the listen stream",
            on_event=delivering(self._exchange, sink.deliver),
            answered=self.answered,
        )
        self._thread = threading.Thread(target=self._run, name=f"jsonrpc-http-listen[{self._label}]", daemon=True)

    @property
    def alive(self) -> bool:
        """True while the thread runs."""
        return self._thread.is_alive()

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """End the stream now (the GET in progress is interrupted).  Never blocks."""
        self._exchange.stop()

    def join(self, timeout: float) -> None:
        """Wait (bounded) for the thread to end; never the calling thread itself."""
        if self._thread is not threading.current_thread() and self._thread.ident is not None:
            self._thread.join(timeout)

    def _run(self) -> None:
        try:
            self._stream.follow()
        except TransportClosed:
            pass
        except MessageTooLarge as exc:
            logger.warning("%s: listen stream ended: %s", self._label, exc.message)
        except HttpError as exc:
            if exc.status_code == 405:
                logger.debug("%s: the server offers no listen stream (405)", self._label)
            elif exc.status_code is not None and 300 <= exc.status_code < 500:
                logger.warning("%s: listen stream refused (%d); not retrying", self._label, exc.status_code)
            else:
                logger.warning("%s: listen stream given up: %s", self._label, exc.message)
        except JsonRpcError as exc:
            logger.warning("%s: listen stream ended: %s", self._label, exc.message)
        except Exception:  # a bug: log it, never kill the process
            logger.exception("%s: listen stream failed", self._label)
        finally:
            self.answered.set()


class Listens:
    """The listen streams of one transport: the one running, and those stopped that may not have ended yet.

    Args: as ``ListenStream``'s (every stream is made with them).
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
        self._max_message_bytes = max_message_bytes
        self._max_failures = max_failures
        self._read_timeout = read_timeout
        # _lock guards _current, _stopped and _closed.
        self._lock = threading.Lock()
        self._current: Optional[ListenStream] = None
        self._stopped: List[ListenStream] = []  # stopped, maybe not ended yet
        self._closed = False

    @property
    def running(self) -> bool:
        """True while the stream opened by ``open`` runs."""
        current = self._current
        return current is not None and current.alive

    def open(self) -> threading.Event:
        """Start a listen stream, unless one runs.

        Returns:
            The running stream's ``answered`` event.

        Raises:
            TransportClosed: after ``close``.
        """
        with self._lock:
            if self._closed:
                raise closed_error()
            listen = self._current
            if listen is None or not listen.alive:
                listen = self._current = ListenStream(
                    self._endpoint,
                    self._sink,
                    max_message_bytes=self._max_message_bytes,
                    max_failures=self._max_failures,
                    read_timeout=self._read_timeout,
                )
                listen.start()
        return listen.answered

    def reset(self) -> None:
        """Stop the running stream (a new session opens its own).  Never blocks."""
        with self._lock:
            listen = self._current
            self._current = None
            if listen is not None:
                self._stopped = [s for s in self._stopped if s.alive]
                self._stopped.append(listen)
        if listen is not None:
            listen.stop()

    def close(self) -> None:
        """Stop every stream and refuse new ones; ``join`` then waits for them.  Never blocks."""
        with self._lock:
            self._closed = True
            if self._current is not None:
                self._stopped.append(self._current)
            self._current = None
            listens = list(self._stopped)
        for listen in listens:
            listen.stop()

    def join(self, deadline: float) -> None:
        """Wait (until ``deadline``, monotonic) for the stopped streams' threads to end."""
        with self._lock:
            listens = list(self._stopped)
        for listen in listens:
            listen.join(max(0.0, deadline - time.monotonic()))


__all__ = ["ListenStream", "Listens"]
