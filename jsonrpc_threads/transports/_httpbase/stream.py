"""One resumable SSE stream, for all three: a POST's answer, the listen stream, the legacy transport's stream.

Theory of operation.  An ``SseStream`` reads one logical event stream,
on the thread that carries its exchange, across as many HTTP responses as it
takes:

- the events are decoded as they arrive (``SseDecoder``),
  every socket read bounded by the exchange's deadline
  (``body_chunks``); each event's ``id`` and ``retry`` are
  noted here, and the event goes to the owner (``on_event``), which delivers
  its data; an event over the size limit goes to ``on_oversized`` (which
  raises ``MessageTooLarge`` unless the owner
  says otherwise);
- the stream is left as soon as its exchange owes nothing more (every
  request it carried was answered), or was stopped;
- when it ends or breaks while the owner still wants it (``wanted``), it is
  resumed: a GET carrying ``Last-Event-ID`` after exactly the ``retry`` delay
  the server asked for (1 s when it named none), doubled for each further
  resumption that brought nothing, up to ``MAX_RETRY_S``: no extra backoff on
  the first attempt.

How far it goes is bounded twice.  By the exchange's deadline: a delay that
would end past it is not waited out, and no GET goes out after it.  By
``max_resumptions``, counted as ``Resumption`` says: in all for a
POST's answer (a stream that delivers an event and breaks again is no fresh
start); in a row for a long-lived stream, where a healthy stream (one that
delivered a message, or stayed open ``HEALTHY_STREAM_S``) starts
the count afresh; and for the listen stream only GETs that fail count, since
a server may poll by ending that stream.  A GET answered 4xx (404 to a
session: ``SessionExpired``) or redirected is not tried again; a connection
error, a 5xx or an answer that is not an event stream is.

Stopping the exchange (the client abandoned its requests, the transport
closes) ends the stream at once: its socket is shut down, and a wait before
a resumption wakes.  Outcomes: ``SseStream.follow`` returns when the
stream is done, stopped, or no longer wanted, and raises what ended it
otherwise (see there).

Thread-safety: one thread follows a stream.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import Callable, Optional, Sequence

import requests

from ...errors import HttpConnectionError, HttpError, JsonRpcError, MessageTooLarge, RequestId
from ...framing import Oversized, SseDecoder
from ...framing.sse import Event
from .endpoint import Endpoint
from .errors import DeadlinePassed, closed_error, is_network_error, stream_refused
from .exchange import Exchange
from .reading import body_chunks, media_type, read_excerpt
from .wire import (
    ACCEPT_STREAM,
    DEFAULT_RETRY_S,
    HEALTHY_STREAM_S,
    LAST_EVENT_ID_HEADER,
    MAX_RETRY_S,
    SESSION_HEADER,
    SSE_TYPE,
)

logger = logging.getLogger(__name__)

#: The most doublings of the retry delay (it is capped at ``MAX_RETRY_S`` long before).
_MAX_DOUBLINGS = 16


@dataclass(frozen=True)
class Resumption:
    """How a stream that ended is resumed, and how often.

    Attributes:
        max_resumptions: the bound (``max_resumptions`` of the transport).
        refund_when_healthy: a healthy stream starts the count afresh (the
            long-lived streams); else resumptions count in all (a POST's answer).
        needs_event_id: resume only with the ``Last-Event-ID`` of an event
            seen (a GET without one opens a new stream, not this one); else
            reconnect without it (the listen stream).
        count_failed_gets_only: only GETs that fail count toward the bound (the
            listen stream: a server may poll by ending it); else every resumption.
    """

    max_resumptions: int
    refund_when_healthy: bool = False
    needs_event_id: bool = True
    count_failed_gets_only: bool = False


def too_large(note: Oversized) -> None:
    """The owner's ``on_oversized`` by default: an event over the limit ends the stream."""
    raise MessageTooLarge(note.limit, "SSE event")


def delivering(exchange: Exchange, deliver: Callable[[bytes], Sequence[RequestId]]) -> Callable[[Event], bool]:
    """An ``on_event`` that delivers every event's data as a message and strikes what it answered."""

    def on_event(event: Event) -> bool:
        if not event.data:
            return False  # a priming event, or a keep-alive
        exchange.answered(deliver(event.data.encode("utf-8")))
        return True

    return on_event


class SseStream:
    """One event stream and its resumptions, on its exchange's thread.  See the module docstring.

    Args:
        endpoint: where the GETs go.
        exchange: what the stream carries: its deadline, what it still owes, its stop.
        limit: the largest event accepted (``max_message_bytes``).
        resumption: how it is resumed.
        what: the stream, for messages ("the SSE stream").
        on_event: takes each event (its id and retry already noted); True when
            it delivered a message.  May raise to end the stream.
        on_oversized: takes the note of an event over the limit; raises to end the stream.
        wanted: after the stream ended (``cause``: why it broke, None when it
            ended cleanly), whether to resume it (when it still owes
            something); may raise to end it with that error.  By default always.
        find_response_ids: the decoder reports an oversized event once it
            ended, with the ids of the responses it held (see
            ``SseDecoder``).
        answered: set once a GET of the stream was answered (open or refused) or failed.

    Attributes:
        last_event_id: the id of the last event that had one (sent to resume).
        retry_s: the reconnection delay the server asked for.
        resumptions: GETs made to resume, in all.
        cause: why the last response ended (None: it ended cleanly).
    """

    def __init__(
        self,
        endpoint: Endpoint,
        exchange: Exchange,
        *,
        limit: int,
        resumption: Resumption,
        what: str,
        on_event: Callable[[Event], bool],
        on_oversized: Callable[[Oversized], None] = too_large,
        wanted: Optional[Callable[[Optional[JsonRpcError]], bool]] = None,
        find_response_ids: bool = False,
        answered: Optional[threading.Event] = None,
    ) -> None:
        self._endpoint = endpoint
        self._exchange = exchange
        self._label = endpoint.label
        self._limit = limit
        self._resumption = resumption
        self._what = what
        self._on_event = on_event
        self._on_oversized = on_oversized
        self._wanted = wanted
        self._find_response_ids = find_response_ids
        self.last_event_id: Optional[str] = None
        self.retry_s = DEFAULT_RETRY_S
        self.resumptions = 0
        self.cause: Optional[JsonRpcError] = None
        self._answered = answered
        self._streak = 0  # resumptions since the stream was last healthy (in all, unless refunded)
        self._failures = 0  # GETs in a row that failed

    def follow(self, response: Optional[requests.Response] = None) -> None:
        """Read the stream, resuming it while it is wanted.

        Args:
            response: the stream's first response (a POST's SSE answer);
                ``None`` opens the stream with a GET.

        Returns once the exchange owes nothing more, was stopped, or the
        owner no longer wants the stream.

        Raises:
            TransportClosed: the transport is closing.
            DeadlinePassed: the exchange's deadline passed first.
            HttpConnectionError: it cannot be resumed: no event id to resume
                with, or ``max_resumptions`` spent (the last cause in the message).
            HttpError: a GET answered 4xx (``SessionExpired`` for 404 to a
                session) or a redirect: not tried again.
            MessageTooLarge: an event over the limit (unless ``on_oversized`` says otherwise).
            JsonRpcError: what ``on_event``, ``on_oversized`` or ``wanted`` raised.
        """
        if response is None:
            response = self._get()
        while True:
            if response is not None:
                self._read(response)
            if not self._standing() or self._exchange.done:
                return
            if self._wanted is not None and not self._wanted(self.cause):
                return
            if not self._wait_to_resume():
                return
            response = self._get()

    # -- reading one response ----------------------------------------------------------------

    def _read(self, response: requests.Response) -> None:
        """Deliver the events of one response until it ends or breaks (``cause``), owes nothing more, or is stopped."""
        exchange = self._exchange
        opened_at = time.monotonic()
        delivered = False
        self.cause = None
        try:
            decoder = SseDecoder(self._limit, find_response_ids=self._find_response_ids)
            for chunk in body_chunks(response, exchange):
                for frame in decoder.feed(chunk):
                    if exchange.stopped:
                        return
                    if isinstance(frame, Oversized):
                        self._on_oversized(frame)
                        continue
                    if frame.id is not None:
                        self.last_event_id = frame.id or None
                    if frame.retry is not None:
                        self.retry_s = min(frame.retry / 1000.0, MAX_RETRY_S)
                    if self._on_event(frame):
                        delivered = True
                    if exchange.done:
                        return  # the server should end the stream now; don't wait for it
            for frame in decoder.end():  # an oversized event cut off by the end
                if isinstance(frame, Oversized):
                    self._on_oversized(frame)
        except Exception as exc:
            if not is_network_error(exc):
                raise
            self.cause = self._endpoint.errors(f"{self._what} broke", exchange).translate(exc)
        finally:
            response.close()
            healthy = delivered or time.monotonic() - opened_at >= HEALTHY_STREAM_S
            if healthy and self._resumption.refund_when_healthy:
                self._streak = 0

    # -- resuming ---------------------------------------------------------------------------

    def _standing(self) -> bool:
        """False when the exchange was stopped (nothing more to do).

        Raises:
            TransportClosed: the transport is closing.
            DeadlinePassed: the exchange's deadline has passed.
        """
        if self._endpoint.closing.is_set():
            raise closed_error()
        if self._exchange.stopped:
            return False
        if self._exchange.past_deadline():
            raise DeadlinePassed(f"{self._label}: the deadline passed before {self._what} resumed")
        return True

    def _wait_to_resume(self) -> bool:
        """Wait the retry delay before a resumption; False when stopped meanwhile.  Raises when it cannot resume."""
        resumption = self._resumption
        reason = f": {self.cause.message}" if self.cause is not None else ""
        if resumption.needs_event_id and self.last_event_id is None:
            raise HttpConnectionError(
                f"{self._label}: {self._what} ended{reason}, and cannot be resumed: the server sent no event id"
            )
        counted = self._failures if resumption.count_failed_gets_only else self._streak
        if counted >= resumption.max_resumptions:
            raise HttpConnectionError(
                f"{self._label}: {self._what} could not be resumed after {counted} attempt(s){reason}"
            )
        delay = min(self.retry_s * 2 ** min(self._streak, _MAX_DOUBLINGS), MAX_RETRY_S)
        logger.debug("%s: resuming %s in %.3fs (Last-Event-ID %r)", self._label, self._what, delay, self.last_event_id)
        exchange = self._exchange
        deadline = exchange.deadline
        if deadline is not None and deadline - time.monotonic() < delay:
            # It would resume past the deadline: wait for the deadline (or a stop), then give up.
            exchange.wait(max(0.0, deadline - time.monotonic()))
            if not self._standing():
                return False
            raise DeadlinePassed(f"{self._label}: the deadline passed before {self._what} resumed")
        exchange.wait(delay)
        if not self._standing():
            return False
        self.resumptions += 1
        self._streak += 1
        return True

    def _get(self) -> Optional[requests.Response]:
        """One GET of the stream (with ``Last-Event-ID`` once known); None when it failed and may be tried again.

        Raises:
            HttpError: a 4xx answer or a redirect (not tried again).
            TransportClosed, DeadlinePassed: as ``follow``.
        """
        endpoint = self._endpoint
        exchange = self._exchange
        try:
            try:
                headers = endpoint.headers(ACCEPT_STREAM)
                if self.last_event_id is not None:
                    headers[LAST_EVENT_ID_HEADER] = self.last_event_id
                response = endpoint.request("GET", headers, exchange)
            except DeadlinePassed:
                if exchange.stopped and not endpoint.closing.is_set():
                    return None  # follow() sees the stop
                raise
            except HttpError as exc:
                if exc.status_code is not None and not isinstance(exc, HttpConnectionError):
                    raise  # a redirect: it would be refused again
                self._failed(exc)
                return None
            status = response.status_code
            kind = media_type(response)
            if status == 200 and kind == SSE_TYPE:
                self._failures = 0
                return response
            with response:
                body = read_excerpt(response, exchange)
            error = stream_refused(
                self._label,
                self._what,
                status,
                kind,
                body,
                sent_session=SESSION_HEADER in headers,
                resuming=LAST_EVENT_ID_HEADER in headers,
            )
            if 400 <= status < 500:
                raise error
            self._failed(error)
            return None
        finally:
            if self._answered is not None:
                self._answered.set()

    def _failed(self, error: JsonRpcError) -> None:
        logger.debug("%s: %s", self._label, error.message)
        self.cause = error
        self._failures += 1


__all__ = ["Resumption", "SseStream", "delivering", "too_large"]
