"""The event stream of the legacy HTTP+SSE transport: one GET that carries every message of the server.

Theory of operation.  One daemon thread (``jsonrpc-sse[<label>]``) follows one
``SseStream`` over the server's URL (``Accept:
text/event-stream``).  The first event the server sends is ``endpoint``: the
URL (relative to the stream's) where the client POSTs its messages; it must
be on the stream's origin (a server may not send the client's credentials
elsewhere).  Every ``message`` event (or an event with no name) is one
JSON-RPC message, handed to the client's sink as bytes; the ids of the
responses among them (the sink says which) are struck off the requests the
transport posted (``Owed``).

An event over the size limit is dropped, and the request it answered (its id
found as the event went by, ``jsonrpc_threads.framing.response_ids``)
fails with ``MessageTooLarge``; the stream goes
on.  A stream that breaks or ends is resumed with ``Last-Event-ID`` when the
server gave event ids, after its ``retry`` delay (doubled each time), at most
``max_reconnects`` times in a row (a healthy stream starts the count afresh);
a resumed stream that names a different ``endpoint`` is a new session the
old requests belong to no more.  Otherwise (no event id, a refusal, the
resumptions spent, or a stream that ended before its ``endpoint`` event) the
transport ends: the requests still owed fail, and the sink is told the
transport closed.

Stopping never blocks: it shuts down the socket of the GET in progress.

Thread-safety: ``EventStream.stop`` and ``EventStream.wait_endpoint``
may be called from any thread.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Callable, List, Optional, Sequence, Set
from urllib.parse import urljoin, urlsplit

from ...errors import HttpConnectionError, JsonRpcError, MessageTooLarge, RequestId, TransportClosed
from ...framing import Oversized
from ...framing.sse import Event
from .._httpbase.endpoint import Endpoint
from .._httpbase.exchange import Exchange
from .._httpbase.sink import SinkCalls
from .._httpbase.stream import Resumption, SseStream
from ..redact import url_label

logger = logging.getLogger(__name__)

ENDPOINT_EVENT = "endpoint"
MESSAGE_EVENT = "message"
#: How often a sender waiting for the ``endpoint`` event looks whether the stream ended.
_ENDPOINT_POLL_S = 0.5


class Owed:
    """The requests posted whose response has not come on the stream yet.  Thread-safe."""

    def __init__(self) -> None:
        # _lock guards _ids.
        self._lock = threading.Lock()
        self._ids: Set[RequestId] = set()

    def add(self, request_ids: Sequence[RequestId]) -> None:
        with self._lock:
            self._ids.update(request_ids)

    def strike(self, request_ids: Sequence[RequestId]) -> None:
        with self._lock:
            self._ids.difference_update(request_ids)

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
        self._on_end = on_end
        self._exchange = Exchange((), None, read_timeout)  # no deadline: it lasts until stopped
        self._stream = SseStream(
            endpoint,
            self._exchange,
            limit=max_message_bytes,
            resumption=Resumption(max_reconnects, refund_when_healthy=True),
            what="the HTTP+SSE stream",
            on_event=self._event,
            on_oversized=self._oversized,
            wanted=self._resumable,
            find_response_ids=True,
        )
        self._have_endpoint = threading.Event()
        # _lock guards post_url.
        self._lock = threading.Lock()
        #: Where messages are POSTed, once the server said (the ``endpoint`` event).
        self.post_url: Optional[str] = None
        self._ended: Optional[TransportClosed] = None
        self._fatal: Optional[TransportClosed] = None  # why the stream was given up, from the thread
        self._thread = threading.Thread(target=self._run, name=f"jsonrpc-sse[{self._label}]", daemon=True)

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def start(self) -> None:
        self._thread.start()

    def wait_endpoint(self, deadline: Optional[float]) -> str:
        """The POST URL, waiting for the ``endpoint`` event until ``deadline``.

        Raises:
            TransportClosed: the stream ended (or was stopped) before (or without) one.
            HttpConnectionError: ``deadline`` passed first.
        """
        while not self._have_endpoint.is_set():
            if self._ended is not None:
                raise TransportClosed(self._ended.message)
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise HttpConnectionError(f"{self._label}: the server has not sent its endpoint event yet")
            self._have_endpoint.wait(_ENDPOINT_POLL_S if left is None else min(left, _ENDPOINT_POLL_S))
        url = self.post_url
        ended = self._ended
        if ended is not None or url is None or self._exchange.stopped:  # stop() wakes the waiters without a URL
            raise TransportClosed(ended.message if ended is not None else f"{self._label}: HTTP+SSE transport closed")
        return url

    def stop(self) -> None:
        """End the stream now (the GET in progress is interrupted).  Never blocks."""
        self._exchange.stop()
        self._have_endpoint.set()

    def join(self, timeout: float) -> None:
        if self._thread is not threading.current_thread() and self._thread.ident is not None:
            self._thread.join(timeout)

    # -- the thread -----------------------------------------------------------------------

    def _run(self) -> None:
        error: Optional[TransportClosed] = None
        try:
            self._stream.follow()
            if self._fatal is not None:
                error = self._fatal
            elif not self._exchange.stopped:  # not wanted any more: no endpoint event came
                cause = self._stream.cause
                reason = f" ({cause.message})" if cause is not None else ""
                error = TransportClosed(f"{self._label}: the HTTP+SSE stream ended before its endpoint event{reason}")
        except TransportClosed:
            pass  # close()
        except JsonRpcError as exc:  # a refusal, no event id, the resumptions spent
            error = TransportClosed(exc.message)
        except Exception:  # a bug: end the transport, never the process
            logger.exception("%s: the SSE stream failed", self._label)
            error = TransportClosed(f"{self._label}: the SSE stream failed unexpectedly")
        finally:
            self._ended = error or TransportClosed(f"{self._label}: HTTP+SSE transport closed")
            self._have_endpoint.set()
            self._fail_owed(self._ended)
            self._on_end(self._ended)

    def _resumable(self, cause: Optional[JsonRpcError]) -> bool:
        """The stream ended: resume it only once the server has named its endpoint (and nothing was fatal)."""
        return self.post_url is not None and self._fatal is None

    def _event(self, event: Event) -> bool:
        """Handle one event; True when it delivered a message."""
        if event.event == ENDPOINT_EVENT:
            self._take_endpoint(event.data.strip())
            return False
        if event.event != MESSAGE_EVENT or not event.data:
            return False
        self._owed.strike(self._sink.deliver(event.data.encode("utf-8")))
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
            self._exchange.stop()
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
        if note.response_ids:  # else no response, or none known (the decoder scanned it)
            self._owed.strike(note.response_ids)
            self._sink.fail(note.response_ids, MessageTooLarge(note.limit, "SSE event"))

    def _fail_owed(self, error: TransportClosed) -> None:
        owed = self._owed.take_all()
        if owed:
            self._sink.fail(owed, error)


__all__ = ["ENDPOINT_EVENT", "MESSAGE_EVENT", "EventStream", "Owed"]
