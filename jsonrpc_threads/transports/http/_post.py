"""One POST and its answer: JSON, SSE or 202, and the resumption of a broken SSE stream.

Theory of operation.  A message goes out as one POST with ``Accept:
application/json, text/event-stream``; the answer is handled without
knowing what the messages mean (no method name is ever read):

- ``application/json``: the body is one message (or a batch) for the sink;
- ``text/event-stream``: each event's data is a message, delivered as it
  arrives; the server's requests and notifications (progress, sampling) come
  before the response, while the caller waits;
- ``202 Accepted`` with no body: the answer to notifications and responses;
- anything else fails the requests it carried (:mod:`._errors` maps the status).

To know whether an SSE stream broke before it delivered the responses it
owes, the exchange strikes the ids the sink says each message answered
(:meth:`~._exchange.Exchange.answered`); no answer is decoded here.  A stream that ends early is
resumed with a GET carrying ``Last-Event-ID`` after exactly the ``retry``
delay the server asked for (1 s when it named none), doubling after each
further attempt; the responses on the resumed stream go to the sink like any
other, which settles the original futures.  Resumption is bounded twice: by
``max_resumptions`` GETs in all for the exchange (a stream that delivers an
event and breaks again is no fresh start), and by the exchange's deadline (a
delay that would end past it is not waited out, and no GET goes out after it).

Thread-safety: a :class:`Poster` carries any number of exchanges at once,
each on its own thread.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from typing import Any, Dict, Optional

import requests

from ...errors import HttpConnectionError, HttpError, JsonRpcError, StreamLost
from ._endpoint import Endpoint
from ._errors import DeadlinePassed, closed_error, excerpt, resume_error, status_error
from ._exchange import Exchange
from ._reading import consume_sse, media_type, read_body, read_excerpt
from ._sink import SinkCalls
from ._wire import ACCEPT_POST, ACCEPT_STREAM, JSON_TYPE, LAST_EVENT_ID_HEADER, MAX_RETRY_S, SESSION_HEADER, SSE_TYPE

logger = logging.getLogger(__name__)


class Poster:
    """Carries exchanges: POSTs, their answers and their resumptions.

    Args:
        endpoint: where the requests go.
        sink: where what arrives goes.
        max_message_bytes: the largest JSON body or SSE event accepted.
        max_resumptions: GETs one exchange may make to resume its stream.
        closing: set once the transport closes.
    """

    def __init__(
        self,
        endpoint: Endpoint,
        sink: SinkCalls,
        *,
        max_message_bytes: int,
        max_resumptions: int,
        closing: threading.Event,
    ) -> None:
        self._endpoint = endpoint
        self._sink = sink
        self._label = endpoint.label
        self.max_message_bytes = max_message_bytes
        self.max_resumptions = max_resumptions
        self._closing = closing

    def carry(self, exchange: Exchange, data: bytes) -> None:
        """Run an exchange that carries requests; what is not answered fails through the sink.

        Reports nothing for an exchange that was stopped (the client settled
        its requests) or whose deadline passed (the client's timer fails
        them).  Never raises.
        """
        try:
            self._post(data, exchange)
        except JsonRpcError as exc:
            if not self._closing.is_set() and (
                exchange.stopped or isinstance(exc, DeadlinePassed) or exchange.past_deadline()
            ):
                return
            self._sink.fail(exchange.owed(), exc)
        except Exception as exc:  # a bug: never leave a request hanging
            logger.exception("%s: unexpected failure of a POST", self._label)
            self._sink.fail(exchange.owed(), HttpError(f"{self._label}: unexpected failure: {type(exc).__name__}"))

    def post(self, exchange: Exchange, data: bytes) -> None:
        """Run an exchange without requests (a notification, a response) and raise what failed.

        Raises:
            JsonRpcError: as :meth:`~jsonrpc_threads.transports.http.HttpTransport.send`
                without request ids (:class:`DeadlinePassed` at the deadline).
        """
        try:
            self._post(data, exchange)
        except JsonRpcError:
            raise
        except Exception as exc:
            logger.exception("%s: unexpected failure of a POST", self._label)
            raise HttpError(f"{self._label}: unexpected failure: {type(exc).__name__}") from None

    # -- one POST --------------------------------------------------------------------------

    def _post(self, data: bytes, exchange: Exchange) -> None:
        """POST ``data`` and deliver its answer; raise for what was not answered."""
        endpoint = self._endpoint
        headers = endpoint.headers(ACCEPT_POST)
        headers["Content-Type"] = JSON_TYPE
        if exchange.headers:
            headers.update(exchange.headers)
        response = endpoint.request("POST", headers, exchange, data=data)
        try:
            broken = self._handle_answer(response, exchange, sent_session=SESSION_HEADER in headers)
        finally:
            response.close()
        if exchange.unanswered:
            if endpoint.session.stateless:
                # The 2026-07-28 transport resumes nothing: the requests fail, to be sent anew.
                reason = f": {broken.message}" if broken is not None else ""
                raise StreamLost(f"{self._label}: the SSE stream ended before the response{reason}")
            self._resume(exchange, broken)

    def _handle_answer(
        self, response: requests.Response, exchange: Exchange, *, sent_session: bool
    ) -> Optional[JsonRpcError]:
        """Deliver a POST's answer.  Returns why an SSE stream broke, if it did.

        Raises:
            JsonRpcError: the failure of the requests still unanswered.
        """
        status = response.status_code
        if not 200 <= status < 300:
            body = read_excerpt(response, exchange)
            raise status_error(
                self._label,
                status,
                response.reason or "",
                body,
                sent_session=sent_session,
                answers_ours=lambda item: self._answer_if_ours(exchange, item),
            )
        self._endpoint.session.capture(response.headers)
        kind = media_type(response)
        if status == 202 or (not kind and response.headers.get("Content-Length") == "0"):
            if exchange.unanswered:
                raise HttpError(
                    f"{self._label}: the server accepted the request ({status}) without answering it",
                    status_code=status,
                )
            return None
        if kind == JSON_TYPE:
            self._deliver_json(response, exchange)
            return None
        if kind == SSE_TYPE:
            errors = self._endpoint.errors("the SSE stream broke", exchange)
            return consume_sse(response, exchange, self.max_message_bytes, self._sink.deliver, errors)
        body = read_excerpt(response, exchange)
        if not kind and not body and not exchange.unanswered:
            return None
        raise HttpError(
            f"{self._label}: unexpected Content-Type {kind or 'none'!r} in a {status} answer",
            status_code=status,
            body_excerpt=excerpt(body),
        )

    def _deliver_json(self, response: requests.Response, exchange: Exchange) -> None:
        with self._endpoint.errors("reading the answer failed", exchange):
            body = read_body(response, exchange, self.max_message_bytes)
        status = response.status_code
        if not body.strip():
            if exchange.unanswered:
                raise HttpError(f"{self._label}: empty {status} answer to a request", status_code=status)
            return
        exchange.answered(self._sink.deliver(body))
        if exchange.unanswered:
            # Only now is the body read here, to say what was wrong with it.
            if _is_json(body):
                owed = sorted(map(str, exchange.unanswered))
                what = f"the answer holds no response for request id(s) {owed}"
            else:
                what = f"the {status} answer is not valid JSON"
            raise HttpError(f"{self._label}: {what}", status_code=status, body_excerpt=excerpt(body))

    def _answer_if_ours(self, exchange: Exchange, item: Dict[str, Any]) -> bool:
        """A JSON-RPC error in an error answer: delivered if it answers one of the exchange's requests."""
        if not exchange.strike(item.get("id")):
            return False
        self._sink.deliver(json.dumps(item, ensure_ascii=False).encode("utf-8"))
        return True

    # -- resumption --------------------------------------------------------------------------

    def _resume(self, exchange: Exchange, cause: Optional[JsonRpcError]) -> None:
        """Resume the exchange's SSE stream with GET + ``Last-Event-ID`` until it answered.

        Raises:
            JsonRpcError: when the stream cannot be resumed (``HttpConnectionError``
                or ``SessionExpired``), ``DeadlinePassed``, or ``TransportClosed``.
        """
        endpoint = self._endpoint
        while exchange.unanswered:
            self._check_standing(exchange, "before the SSE stream resumed")
            if exchange.last_event_id is None:
                reason = f" ({cause.message})" if cause is not None else ""
                raise HttpConnectionError(
                    f"{self._label}: the SSE stream ended before the response{reason}, "
                    "and cannot be resumed: the server sent no event id"
                )
            if exchange.resumptions >= self.max_resumptions:
                reason = f": {cause.message}" if cause is not None else ""
                raise HttpConnectionError(
                    f"{self._label}: the SSE stream could not be resumed after "
                    f"{exchange.resumptions} attempt(s){reason}"
                )
            delay = min(exchange.retry_s * (2**exchange.resumptions), MAX_RETRY_S)
            logger.debug(
                "%s: resuming an SSE stream in %.3fs (Last-Event-ID %r)", self._label, delay, exchange.last_event_id
            )
            deadline = exchange.deadline
            if deadline is not None and deadline - time.monotonic() < delay:
                # It would resume past the deadline: wait for the deadline (or a stop), then give up.
                exchange.wait(max(0.0, deadline - time.monotonic()))
                self._check_standing(exchange, "before the SSE stream resumed")
                raise DeadlinePassed(f"{self._label}: the deadline passed before the SSE stream resumed")
            exchange.wait(delay)
            self._check_standing(exchange, "before the SSE stream resumed")
            exchange.resumptions += 1
            headers = endpoint.headers(ACCEPT_STREAM)
            headers[LAST_EVENT_ID_HEADER] = exchange.last_event_id
            try:
                response = endpoint.request("GET", headers, exchange)
            except HttpConnectionError as exc:
                cause = exc
                continue
            try:
                kind = media_type(response)
                if response.status_code != 200 or kind != SSE_TYPE:
                    body = read_excerpt(response, exchange)
                    raise resume_error(
                        self._label, response.status_code, kind, body, sent_session=SESSION_HEADER in headers
                    )
                errors = endpoint.errors("the resumed SSE stream broke", exchange)
                cause = consume_sse(response, exchange, self.max_message_bytes, self._sink.deliver, errors)
            finally:
                response.close()

    def _check_standing(self, exchange: Exchange, when: str) -> None:
        """Raise if the exchange should go no further (closing, stopped, past its deadline)."""
        if self._closing.is_set():
            raise closed_error()
        if exchange.stopped:
            raise DeadlinePassed(f"{self._label}: the exchange was abandoned {when}")
        if exchange.past_deadline():
            raise DeadlinePassed(f"{self._label}: the deadline passed {when}")


def _is_json(body: bytes) -> bool:
    try:
        json.loads(body)
    except ValueError:
        return False
    return True


__all__ = ["Poster"]
