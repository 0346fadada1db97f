"""A streaming call's events: the JSON-RPC responses of one SSE answer, read as a bounded iterator.

Theory of operation.  ``SendStreamingMessage`` and ``SubscribeToTask`` (v0.3:
``message/stream``, ``tasks/resubscribe``) are answered by one SSE stream of
several JSON-RPC responses, all with the request's id; each result is one
event (a Task, a Message, a status or an artifact update).  That does not fit
a client whose requests each settle one future, so the request goes out with
``open_stream`` and an
``EventStream`` reads its messages: each is decoded, checked to answer
this request (others are logged and skipped), and its result unwrapped
(``unwrap``); an error response is raised (A2A's codes as
their classes) and ends the stream.

The stream ends where A2A says it does: after a Message, or once the task
reaches a terminal state (``completed``, ``canceled``, ``failed``,
``rejected``) or an interrupted one (``input-required``, ``auth-required``):
the event that says so is the last one handed over, and the HTTP answer is
closed at once, without waiting for the agent to end it.  An answer that ends
before that (the agent died, a proxy cut it) is an
``HttpConnectionError``.

Bounded: the call's deadline bounds the whole stream (the transport's stream
carries it: every socket read, every wait for the next event), and then
``RequestTimeout`` is raised.  Closing the stream (or
leaving a ``for`` early and dropping it) closes the HTTP answer; its thread
ends with it.

Thread-safety: one thread iterates; ``EventStream.close`` may be called
from any thread.
"""

from __future__ import annotations

import logging
from typing import Any, Dict, Iterator, Optional

from .. import messages
from ..deadlines import Deadline
from ..errors import (
    HttpConnectionError,
    InvalidRequest,
    JsonRpcError,
    ParseError,
    ProtocolError,
    RequestTimeout,
)
from ..transports.http import MessageStream
from .errors import error_from_a2a
from .wire import Dialect, ends_stream, task_of

logger = logging.getLogger(__name__)


class EventStream:
    """The events of one streaming call, as plain dicts, until the stream's end.  An iterator; a context manager.

    Each event is what the agent sent, out of its v1.0 wrapper: a Task, a
    Message, a status-update or an artifact-update
    (``event_kind`` tells which,
    ``state_of`` the state it reports).

    Iterating raises:
        RequestTimeout: the call's timeout passed before the stream ended.
        A2aError: the agent refused the call (``TaskNotFound``,
            ``UnsupportedOperation``, ...), before or during the stream.
        HttpConnectionError: the stream broke, or ended before a final event.
        TransportClosed: the client was closed.
        ProtocolError: the agent sent something that is not an A2A event, or
            an event of another task than the stream's (the task named, or
            the first event's): never taken as this task's answer.
        JsonRpcError: any other failure of the exchange (an HTTP status, ...).

    Attributes:
        method: the streaming method called.
        last: the last event handed over (``None`` before the first).
    """

    def __init__(
        self,
        messages: MessageStream,
        request_id: str,
        method: str,
        dialect: Dialect,
        deadline: Deadline,
        task_id: Optional[str] = None,
    ):
        self._messages = messages
        self._task_id = task_id  # the task this stream is about: the one named, else the first event's
        self._request_id = request_id
        self.method = method
        self._dialect = dialect
        self._deadline = deadline
        self._ended = False
        self.last: Optional[Dict[str, Any]] = None

    def __iter__(self) -> Iterator[Dict[str, Any]]:
        return self

    def __next__(self) -> Dict[str, Any]:
        if self._ended:
            raise StopIteration
        try:
            while True:
                try:
                    data = next(self._messages)
                except StopIteration:
                    if self._messages.closed:
                        raise
                    raise HttpConnectionError(
                        f"the agent's {self.method} stream ended before the task reached a terminal or "
                        f"interrupted state (last event: {_describe(self.last)})"
                    ) from None
                event = self._event(data)
                if event is not None:
                    break
        except StopIteration:
            self.close()
            raise
        except RequestTimeout as exc:
            self._abandon()  # the caller leaves at its deadline: no join past it
            raise RequestTimeout(self.method, self._request_id, self._deadline.timeout, exc.hint) from None
        except JsonRpcError as exc:
            self._abandon()
            raise error_from_a2a(exc) from None
        except BaseException:
            self._abandon()
            raise
        owner = task_of(event)
        if owner is not None:
            if self._task_id is None:
                self._task_id = owner
            elif owner != self._task_id:
                self.close()
                raise ProtocolError(
                    f"the agent's {self.method} stream for task {self._task_id!r} carried an event of "
                    f"task {owner!r}: refused (it is never taken as this task's answer)"
                )
        self.last = event
        if ends_stream(event):
            self.close()
        return event

    def _event(self, data: bytes) -> Optional[Dict[str, Any]]:
        """The event one message holds, or ``None`` for a message that is not this call's answer.

        Raises:
            ProtocolError: not JSON, or not an A2A event.
            JsonRpcError: the agent's error response.
        """
        try:
            parsed = messages.parse_message(messages.decode(data))
        except (ParseError, InvalidRequest) as exc:
            raise ProtocolError(f"the agent's {self.method} stream sent what is not JSON-RPC: {data[:200]!r}") from exc
        if not isinstance(parsed, (messages.Response, messages.ErrorResponse)):
            logger.debug("%s stream: skipping a %s", self.method, type(parsed).__name__)
            return None
        if parsed.id is not None and parsed.id != self._request_id:
            logger.debug("%s stream: skipping a response to request %r", self.method, parsed.id)
            return None
        if isinstance(parsed, messages.ErrorResponse):
            raise parsed.error
        return self._dialect.unwrap(parsed.result)

    def close(self) -> None:
        """Close the stream now (the HTTP answer is closed; its thread ends).  Idempotent, from any thread."""
        self._ended = True
        self._messages.close()

    def _abandon(self) -> None:
        """End the stream without waiting for its thread (it ends once what holds it returns)."""
        self._ended = True
        self._messages.close(wait=False)

    @property
    def closed(self) -> bool:
        """True once the stream ended or was closed."""
        return self._ended

    def __enter__(self) -> EventStream:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<EventStream {self.method} {'ended' if self._ended else 'open'}>"


def _describe(event: Optional[Dict[str, Any]]) -> str:
    if event is None:
        return "none"
    status = event.get("status")
    state = status.get("state") if isinstance(status, dict) else None
    return f"{event.get('kind') or ', '.join(sorted(event)[:4])}" + (f" ({state})" if state else "")


__all__ = ["EventStream"]
