"""One POST and its answer: JSON, SSE or 202.

Theory of operation.  A message goes out as one POST with ``Accept:
application/json, text/event-stream``; the answer is handled without
knowing what the messages mean (no method name is ever read):

- ``application/json``: the body is one message (or a batch) for the sink;
- ``text/event-stream``: each event's data is a message, delivered as it
  arrives; the server's requests and notifications (progress, sampling) come
  before the response, while the caller waits;
- ``202 Accepted`` with no body: the answer to notifications and responses;
- anything else fails the requests it carried (``_httpbase.errors``
  maps the status).

An SSE answer is one ``SseStream``: to know whether
it broke before it delivered the responses it owes, the exchange strikes the
ids the sink says each message answered (no answer is decoded here), and a
stream that ends early is resumed (GET, ``Last-Event-ID``, the server's
``retry`` delay), bounded by ``max_resumptions`` in all and by the exchange's
deadline; the responses on the resumed stream settle the original futures.
In the stateless revision nothing is resumed: the requests fail
(``StreamLost``), to be sent again as new requests.

Thread-safety: a ``Poster`` carries any number of exchanges at once,
each on its own thread.
"""

from __future__ import annotations

import json
import logging
import threading
from typing import Any, Dict, Optional

import requests

from ...errors import HttpError, JsonRpcError, StreamLost
from .._httpbase.endpoint import Endpoint
from .._httpbase.errors import DeadlinePassed, excerpt, status_error
from .._httpbase.exchange import Exchange
from .._httpbase.reading import media_type, read_body, read_excerpt
from .._httpbase.sink import SinkCalls
from .._httpbase.stream import Resumption, SseStream, delivering
from .._httpbase.wire import ACCEPT_POST, JSON_TYPE, SESSION_HEADER, SSE_TYPE
from ._session import SessionState

logger = logging.getLogger(__name__)


class Poster:
    """Carries exchanges: POSTs, their answers and their resumptions.

    Args:
        endpoint: where the requests go.
        session: the session (its id is taken from answers; stateless or not).
        sink: where what arrives goes.
        max_message_bytes: the largest JSON body or SSE event accepted.
        max_resumptions: GETs one exchange may make to resume its stream.
    """

    def __init__(
        self,
        endpoint: Endpoint,
        session: SessionState,
        sink: SinkCalls,
        *,
        max_message_bytes: int,
        max_resumptions: int,
    ) -> None:
        self._endpoint = endpoint
        self._session = session
        self._sink = sink
        self._label = endpoint.label
        self.max_message_bytes = max_message_bytes
        self._resumption = Resumption(max_resumptions)  # in all, for each POST's answer
        self._closing: threading.Event = endpoint.closing

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
        except BaseException as exc:  # a bug, or user code's SystemExit: never leave a request hanging
            logger.exception("%s: unexpected failure of a POST", self._label)
            self._sink.fail(exchange.owed(), HttpError(f"{self._label}: unexpected failure: {type(exc).__name__}"))

    def post(self, exchange: Exchange, data: bytes) -> None:
        """Run an exchange without requests (a notification, a response) and raise what failed.

        Raises:
            JsonRpcError: as ``send``
                without request ids (``DeadlinePassed`` at the deadline).
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
            self._handle_answer(response, exchange, sent_session=SESSION_HEADER in headers)
        finally:
            response.close()

    def _handle_answer(self, response: requests.Response, exchange: Exchange, *, sent_session: bool) -> None:
        """Deliver a POST's answer (an SSE answer, resumed as needed).

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
        self._session.capture(response.headers)
        kind = media_type(response)
        if status == 202 or (not kind and response.headers.get("Content-Length") == "0"):
            if exchange.unanswered:
                raise HttpError(
                    f"{self._label}: the server accepted the request ({status}) without answering it",
                    status_code=status,
                )
            return
        if kind == JSON_TYPE:
            self._deliver_json(response, exchange)
            return
        if kind == SSE_TYPE:
            stream = SseStream(
                self._endpoint,
                exchange,
                limit=self.max_message_bytes,
                resumption=self._resumption,
                what="the SSE stream",
                on_event=delivering(exchange, self._sink.deliver),
                wanted=lambda cause: self._still_owed(exchange, cause),
            )
            stream.follow(response)
            return
        body = read_excerpt(response, exchange)
        if not kind and not body and not exchange.unanswered:
            return
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

    def _still_owed(self, exchange: Exchange, cause: Optional[JsonRpcError]) -> bool:
        """The SSE answer ended: resume it while it owes responses (never in the stateless revision).

        Raises:
            StreamLost: (stateless) it ended before the responses.
        """
        if not exchange.unanswered:
            return False
        if self._session.stateless:
            # The 2026-07-28 transport resumes nothing: the requests fail, to be sent anew.
            reason = f": {cause.message}" if cause is not None else ""
            raise StreamLost(f"{self._label}: the SSE stream ended before the response{reason}")
        return True


def _is_json(body: bytes) -> bool:
    try:
        json.loads(body)
    except ValueError:
        return False
    return True


__all__ = ["Poster"]
