"""What the protocol core reports: small records, one per thing that happened on the connection.

``Connection`` returns these; the shell
acts on them (settles a future, runs a handler, sends an answer, writes a log
line).  Each is a plain record with ``__slots__``, compared by value, never
changed once made; any thread may hold one.  ``token`` is whatever the shell
registered the request with (its future), handed back untouched.  An
error an event carries is its own object (``fresh_error``): no two futures
ever share an exception object.
"""

from __future__ import annotations

import copy
from typing import Any, ClassVar, List, Optional, Tuple

from ..errors import JsonRpcError, RequestId, TransportClosed


class Event:
    """The base of every event: equality and repr by the fields (its ``__slots__``)."""

    __slots__: ClassVar[Tuple[str, ...]] = ()

    def _values(self) -> Tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self._values() == other._values()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"{type(self).__name__}({fields})"


class Answered(Event):
    """A request's response arrived: ``result`` is its ``result`` member."""

    __slots__ = ("request_id", "result", "token")

    def __init__(self, request_id: RequestId, token: Any, result: Any) -> None:
        self.request_id = request_id
        self.token = token
        self.result = result


class Failed(Event):
    """A request ended with ``error``: the peer's error response, a malformed answer, a failure in transit, the end."""

    __slots__ = ("error", "request_id", "token")

    def __init__(self, request_id: RequestId, token: Any, error: JsonRpcError) -> None:
        self.request_id = request_id
        self.token = token
        self.error = error


class Held(Event):
    """A request's response arrived but waits for notifications received before it (reported later as ``Answered``).

    Nothing is settled: the shell only tells a caller that reads its own
    answer to stop reading and wait, since the answer is in.
    """

    __slots__ = ("request_id", "token")

    def __init__(self, request_id: RequestId, token: Any) -> None:
        self.request_id = request_id
        self.token = token


class TimedOut(Event):
    """Requests whose deadlines passed together, before their answers: the shell raises ``RequestTimeout``.

    One event for the whole batch, as parallel lists (the request ids, their
    tokens, methods and timeouts): a burst of 100,000 timeouts makes no object
    a request.
    """

    __slots__ = ("methods", "request_ids", "timeouts", "tokens")

    def __init__(
        self,
        request_ids: List[RequestId],
        tokens: List[Any],
        methods: List[str],
        timeouts: List[Optional[float]],
    ) -> None:
        self.request_ids = request_ids
        self.tokens = tokens
        self.methods = methods
        self.timeouts = timeouts


class PeerRequest(Event):
    """The peer asks: the shell runs the handler of ``method`` and sends its answer."""

    __slots__ = ("method", "params", "request_id")

    def __init__(self, request_id: RequestId, method: str, params: Any) -> None:
        self.request_id = request_id
        self.method = method
        self.params = params


class PeerNotification(Event):
    """The peer tells: the shell runs the handler, then reports ``ticket`` done (``Connection.notification_done``)."""

    __slots__ = ("method", "params", "ticket")

    def __init__(self, method: str, params: Any, ticket: int) -> None:
        self.method = method
        self.params = params
        self.ticket = ticket


class Rejected(Event):
    """The peer sent an invalid request: ``answer`` is the encoded error response to send it."""

    __slots__ = ("answer", "error")

    def __init__(self, error: JsonRpcError, answer: bytes) -> None:
        self.error = error
        self.answer = answer


class Streamed(Event):
    """One answer of a streamed request: ``result`` is its ``result`` member; the request is still pending."""

    __slots__ = ("request_id", "result", "token")

    def __init__(self, request_id: RequestId, token: Any, result: Any) -> None:
        self.request_id = request_id
        self.token = token
        self.result = result


class Ignored(Event):
    """Something that changes nothing (``reason``, and what it was): a log line, at warning level or debug."""

    __slots__ = ("detail", "reason", "warning")

    def __init__(self, reason: str, detail: Any, *, warning: bool) -> None:
        self.reason = reason
        self.detail = detail
        self.warning = warning


def fresh_error(error: JsonRpcError) -> JsonRpcError:
    """A copy of ``error`` without traceback, context or cause: one raise, one object."""
    try:
        duplicate = copy.copy(error)
    except Exception:  # an exotic subclass that cannot be copied: a plain one
        duplicate = (
            TransportClosed(error.message)
            if isinstance(error, TransportClosed)
            else JsonRpcError(error.code, error.message, error.data)
        )
    duplicate.__traceback__ = None
    duplicate.__cause__ = None
    duplicate.__context__ = None
    return duplicate


__all__ = [
    "Answered",
    "Event",
    "Failed",
    "Held",
    "Ignored",
    "PeerNotification",
    "PeerRequest",
    "Rejected",
    "Streamed",
    "TimedOut",
    "fresh_error",
]
