"""A streaming call's events: the results of one streamed request, read as a bounded iterator.

Theory of operation.  ``SendStreamingMessage`` and ``SubscribeToTask`` (v0.3:
``message/stream``, ``tasks/resubscribe``) are answered by one SSE stream of
several JSON-RPC responses, all with the request's id; each result is one
event (a Task, a Message, a status or an artifact update).  The JSON-RPC
client knows such a request (``JsonRpcClient.request_stream``): it owns the
id, parses every response, keeps the deadline, and hands over the results as
a ``ResponseStream``.  An ``EventStream`` reads that: it takes each result
out of its v1.0 wrapper (``Dialect.unwrap``) and checks that it is about
the stream's task; an error response is raised (A2A's codes as their
classes) and ends the stream.

The stream ends where A2A says it does (``ends_stream``, the
``is_final`` of the request): after a Message, or once the task reaches a
terminal state (``completed``, ``canceled``, ``failed``, ``rejected``) or
an interrupted one (``input-required``, ``auth-required``): the event that
says so is the last one handed over, and the HTTP answer is closed at once,
without waiting for the agent to end it.  An answer that ends before that
(the agent died, a proxy cut it) is an ``HttpConnectionError``.

Bounded: the call's deadline bounds the whole stream (every wait for the
next event), and then ``RequestTimeout`` is raised, naming the call's whole
timeout.  Closing the stream (or leaving a ``for`` early and dropping it)
withdraws the request: the HTTP answer is closed, and the transport's thread
that read it is free.

Thread-safety: one thread iterates; ``EventStream.close`` may be called
from any thread.
"""

from __future__ import annotations

from typing import Any, Dict, Iterator, Optional

from .. import ResponseStream
from ..deadlines import Deadline
from ..errors import JsonRpcError, ProtocolError, RequestTimeout
from .errors import error_from_a2a
from .wire import Dialect, ends_stream, task_of


def is_final(dialect: Dialect) -> Any:
    """The ``is_final`` of a streaming call in ``dialect``: its result's event ends the stream.

    The check raises ``ProtocolError`` for a result that is no A2A event.
    """
    return lambda result: ends_stream(dialect.unwrap(result))


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
        answers: ResponseStream,
        dialect: Dialect,
        deadline: Deadline,
        task_id: Optional[str] = None,
    ):
        self._answers = answers
        self._task_id = task_id  # the task this stream is about: the one named, else the first event's
        self.method = answers.method
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
            event = self._dialect.unwrap(next(self._answers))
        except StopIteration:
            self._ended = True
            raise
        except RequestTimeout as exc:
            self._ended = True
            raise RequestTimeout(self.method, self._answers.request_id, self._deadline.timeout, exc.hint) from None
        except JsonRpcError as exc:
            self.close()
            raise error_from_a2a(exc) from None
        except BaseException:
            self.close()
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
            self._ended = True  # the request ended with it (its is_final)
        return event

    def close(self) -> None:
        """Close the stream now (the request is withdrawn; its HTTP answer closed).  Idempotent, from any thread."""
        self._ended = True
        self._answers.close()

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


__all__ = ["EventStream", "is_final"]
