"""The event stream of the legacy HTTP+SSE transport: one GET that carries every message of the server.

Theory of operation.  One daemon thread (``jsonrpc-sse[<label>]``) GETs the
server's URL (``Accept: text/event-stream``) and decodes the stream with
:class:`~jsonrpc_threads.framing.SseDecoder`.  The first event the server
sends is ``endpoint``: the URL (relative to the stream's) where the client
POSTs its messages; it must be on the stream's origin (a server may not send
the client's credentials elsewhere).  Every ``message`` event (or an event
with no name) is one JSON-RPC message, handed to the client's sink as bytes;
the ids of the responses among them (the sink says which) are struck off
the requests the transport posted (:class:`Owed`).

An event over the size limit is dropped, and the request it answered (its id
found as the event went by, :mod:`jsonrpc_threads.framing.response_ids`) fails with
:class:`~jsonrpc_threads.errors.MessageTooLarge`; the stream goes on.  A
stream that breaks or ends is resumed with ``Last-Event-ID`` when the server
gave event ids, after its ``retry`` delay (doubled each time), at most
``max_reconnects`` times in a row; a resumed stream that names a different
``endpoint`` is a new session the old requests belong to no more.  Otherwise,
and once the reconnections are spent, the transport ends: the requests still
owed fail, and the sink is told the transport closed.

Stopping never blocks: it shuts down the socket of the GET in progress.

Thread-safety: :meth:`EventStream.stop` and :meth:`EventStream.wait_endpoint`
may be called from any thread.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Callable, List, Optional, Sequence, Set, Tuple
from urllib.parse import urljoin, urlsplit

from ...errors import HttpConnectionError, HttpError, JsonRpcError, MessageTooLarge, RequestId, TransportClosed
from ...framing import Oversized, SseDecoder
from ...framing.sse import Event
from ..http._endpoint import Endpoint
from ..http._errors import is_network_error, resume_error
from ..http._exchange import Exchange
from ..http._reading import body_chunks, media_type, read_excerpt
from ..http._redact import url_label
from ..http._sink import SinkCalls
from ..http._wire import ACCEPT_STREAM, DEFAULT_RETRY_S, LAST_EVENT_ID_HEADER, MAX_RETRY_S, SSE_TYPE

logger = logging.getLogger(__name__)

ENDPOINT_EVENT = "endpoint"
MESSAGE_EVENT = "message"


class Owed:
    """The requests posted whose response has not come on the stream yet.  Thread-safe."""

    def __init__(self) -> None:
        # _lock guards _ids.
        self._lock = threading.Lock()
        self._ids: Set[RequestId] = set()

    def add(self, request_ids: Sequence[RequestId]) -> None:
        with self._lock:
            self._ids.update(request_ids)

    def strike(self, request_id: RequestId) -> None:
        with self._lock:
            self._ids.discard(request_id)

    def take_all(self) -> List[RequestId]:
        with self._lock:
            ids, self._ids = list(self._ids), set()
        return ids


class EventStream:
    """The GET stream of one legacy HTTP+SSE transport, on a thread of its own.

    Args:
        endpoint: the stream's URL, headers and connections.
        sink: where messages (and the end) go.
        owed: the requests posted and not yet answered.
        max_message_bytes: the largest event accepted.
        max_reconnects: resumptions in a row before the transport ends.
        read_timeout: the longest one socket read may wait.
        on_end: called (once, on the thread) when the stream is over for good.
    """

    def __init__(
        self,
        endpoint: Endpoint,
        sink: SinkCalls,
        owed: Owed,
        *,
        max_message_bytes: int,
        max_reconnects: int,
        read_timeout: float,
        on_end: Callable[[TransportClosed], None],
    ) -> None:
        self._endpoint = endpoint
        self._sink = sink
        self._owed = owed
        self._label = endpoint.label
        self._max_message_bytes = max_message_bytes
        self._max_reconnects = max_reconnects
        self._read_timeout = read_timeout
        self._on_end = on_end
        self._stop = threading.Event()
        self._have_endpoint = threading.Event()
        # _lock guards _current (the GET in progress) and post_url.
        self._lock = threading.Lock()
        self._current: Optional[Exchange] = None
        #: Where messages are POSTed, once the server said (the ``endpoint`` event).
        self.post_url: Optional[str] = None
        self._ended: Optional[TransportClosed] = None
        self._fatal: Optional[TransportClosed] = None  # why the stream was given up, from the thread
        self._last_event_id: Optional[str] = None
        self._retry_s = DEFAULT_RETRY_S
        self._thread = threading.Thread(target=self._run, name=f"jsonrpc-sse[{self._label}]", daemon=True)

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def start(self) -> None:
        self._thread.start()

    def wait_endpoint(self, deadline: Optional[float]) -> str:
        """The POST URL, waiting for the ``endpoint`` event until ``deadline``.

        Raises:
            TransportClosed: the stream ended before (or without) one.
            HttpConnectionError: ``deadline`` passed first.
        """
        while not self._have_endpoint.is_set():
            if self._ended is not None:
                raise TransportClosed(self._ended.message)
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise HttpConnectionError(f"{self._label}: the server has not sent its endpoint event yet")
            self._have_endpoint.wait(0.5 if left is None else min(left, 0.5))
        url = self.post_url
        ended = self._ended
        if ended is not None or url is None or self._stop.is_set():  # stopped (close) wakes it without a URL
            raise TransportClosed(ended.message if ended is not None else f"{self._label}: HTTP+SSE transport closed")
        return url

    def stop(self) -> None:
        """End the stream now (the GET in progress is interrupted).  Never blocks."""
        with self._lock:
            self._stop.set()
            current = self._current
        if current is not None:
            current.stop()
        self._have_endpoint.set()

    def join(self, timeout: float) -> None:
        if self._thread is not threading.current_thread() and self._thread.ident is not None:
            self._thread.join(timeout)

    # -- the thread -----------------------------------------------------------------------

    def _run(self) -> None:
        error: Optional[TransportClosed] = None
        try:
            error = self._attempts()
        except Exception:  # a bug: end the transport, never the process
            logger.exception("%s: the SSE stream failed", self._label)
            error = TransportClosed(f"{self._label}: the SSE stream failed unexpectedly")
        finally:
            self._ended = error or TransportClosed(f"{self._label}: HTTP+SSE transport closed")
            self._have_endpoint.set()
            self._fail_owed(self._ended)
            self._on_end(self._ended)

    def _attempts(self) -> Optional[TransportClosed]:
        failures = 0
        while not self._stop.is_set():
            delivered, cause = self._once()
            if self._fatal is not None:
                return self._fatal
            if self._stop.is_set():
                return None
            if delivered:
                failures = 0
            if self.post_url is None:
                return TransportClosed(f"{self._label}: the HTTP+SSE stream ended before its endpoint event{cause}")
            if self._last_event_id is None:
                return TransportClosed(f"{self._label}: the HTTP+SSE stream ended{cause} (no event id to resume it)")
            failures += 1
            if failures > self._max_reconnects:
                return TransportClosed(f"{self._label}: the HTTP+SSE stream could not be resumed{cause}")
            delay = min(self._retry_s * (2 ** (failures - 1)), MAX_RETRY_S)
            logger.debug("%s: resuming the SSE stream in %.3fs", self._label, delay)
            if self._stop.wait(delay):
                return None
        return None

    def _once(self) -> Tuple[bool, str]:
        """One GET: (whether it delivered a message, why it ended)."""
        exchange = Exchange((), None, self._read_timeout)
        with self._lock:
            if self._stop.is_set():
                return False, ""
            self._current = exchange
        try:
            return self._get(exchange)
        finally:
            with self._lock:
                self._current = None

    def _get(self, exchange: Exchange) -> Tuple[bool, str]:
        endpoint = self._endpoint
        try:
            headers = endpoint.headers(ACCEPT_STREAM)
            if self._last_event_id is not None:
                headers[LAST_EVENT_ID_HEADER] = self._last_event_id
            response = endpoint.request("GET", headers, exchange)
        except TransportClosed:
            self._stop.set()
            return False, ""
        except JsonRpcError as exc:
            if isinstance(exc, HttpError) and exc.status_code is not None and not isinstance(exc, HttpConnectionError):
                self._stop_for_good()
            return False, f" ({exc.message})"
        delivered = False
        try:
            kind = media_type(response)
            if response.status_code != 200 or kind != SSE_TYPE:
                body = read_excerpt(response, exchange)
                error = resume_error(self._label, response.status_code, kind, body, sent_session=False)
                if 400 <= response.status_code < 500:
                    self._stop_for_good()
                return False, f" ({error.message})"
            decoder = SseDecoder(self._max_message_bytes, find_response_ids=True)
            for chunk in body_chunks(response, exchange):
                for frame in decoder.feed(chunk):
                    if isinstance(frame, Oversized):
                        self._oversized(frame)
                    elif self._event(frame):
                        delivered = True
                    if self._stop.is_set():
                        return delivered, ""
            decoder.end()
            return delivered, ""
        except Exception as exc:
            if not is_network_error(exc):
                raise
            return delivered, " (the connection broke)"
        finally:
            response.close()

    def _stop_for_good(self) -> None:
        self._last_event_id = None  # a refusal is not resumed

    def _event(self, event: Event) -> bool:
        """Handle one event; True when it delivered a message."""
        if event.id is not None:
            self._last_event_id = event.id or None
        if event.retry is not None:
            self._retry_s = min(event.retry / 1000.0, MAX_RETRY_S)
        if event.event == ENDPOINT_EVENT:
            self._take_endpoint(event.data.strip())
            return False
        if event.event != MESSAGE_EVENT or not event.data:
            return False
        for request_id in self._sink.deliver(event.data.encode("utf-8")):
            self._owed.strike(request_id)
        return True

    def _take_endpoint(self, value: str) -> None:
        url = urljoin(self._endpoint.url, value)
        base, target = urlsplit(self._endpoint.url), urlsplit(url)
        if (target.scheme, target.netloc) != (base.scheme, base.netloc):
            logger.error(
                "%s: the server named an endpoint on another origin (%s); refused", self._label, url_label(url)
            )
            self._fatal = TransportClosed(
                f"{self._label}: refused the endpoint the server named: it is on another origin ({url_label(url)})"
            )
            self._stop.set()
            return
        with self._lock:
            previous = self.post_url
            self.post_url = url
        if previous is not None and previous != url:
            # A new session: the requests sent to the old one will not be answered.
            self._fail_owed(TransportClosed(f"{self._label}: the server started a new session; the request was lost"))
        logger.debug("%s: messages go to %s", self._label, url_label(url))
        self._have_endpoint.set()

    def _oversized(self, note: Oversized) -> None:
        logger.error(
            "%s: skipped an SSE event of %d bytes: over the limit of %d bytes", self._label, note.size, note.limit
        )
        if not note.response_ids:  # no response, or none known (the decoder scanned it)
            return
        for request_id in note.response_ids:
            self._owed.strike(request_id)
        self._sink.fail(note.response_ids, MessageTooLarge(note.limit, "SSE event"))

    def _fail_owed(self, error: TransportClosed) -> None:
        owed = self._owed.take_all()
        if owed:
            self._sink.fail(owed, error)


__all__ = ["ENDPOINT_EVENT", "MESSAGE_EVENT", "EventStream", "Owed"]
