"""The whole contract between ``JsonRpcClient`` and a transport.

A transport moves bytes and nothing else: it never looks at method names, never
builds a message and never owns a future.  The client hands it encoded messages
through ``Transport.send``, and the transport reports what happens through
the ``MessageSink`` the client gave it in ``Transport.start``:

- every complete message received (one stdio line, one HTTP JSON body, one SSE
  event's data) goes to ``MessageSink.message_received`` as bytes, in the
  order it arrived; several that one read brought may go together to
  ``TakesChunks.messages_received``, where the sink has it (the client
  does: it settles their responses with one lock round trip);
- ``MessageSink.message_received`` returns the ids of the responses the
  message carried (as the peer wrote them; empty for a request, a notification
  or anything that is not JSON-RPC).  So a transport that tracks which of its
  requests are still owed an answer (an HTTP exchange, an SSE stream) is told
  which were answered, and never decodes a message itself to find out;
- a failure that concerns only some requests (an HTTP status, a reset
  connection) goes to ``MessageSink.requests_failed`` with their ids, so the
  client settles exactly those futures;
- the end of the transport (EOF, child exit, ``close()``) goes once to
  ``MessageSink.transport_closed``.

Sink methods are called from the transport's own threads (or from a caller's
thread inside ``DrivesCalls.drive_call``), return quickly, never block on
the transport and never run user code.

Beyond the required surface, a transport may offer optional capabilities, each
a small protocol below; the client looks for them once, when it is made
(``capabilities``), never by probing attribute names elsewhere:

- ``DrivesCalls``: a blocking ``call()`` carries its own request on the
  calling thread (stdio: the caller reads its answer itself; HTTP: the caller
  runs the POST), so the answer needs no hand-off between threads;
- ``AbandonsRequests``: the client says which requests it settled locally
  (timeout, ``Future.cancel()``), so the transport stops work it carries for
  them (an HTTP read, a queued write) and frees the thread;
- ``ExplainsTimeouts``: what the transport noticed that may explain a
  request timing out (the client puts it in ``RequestTimeout``);
- ``SurvivesFork``: in a process forked after the transport was made,
  let go of this process's copies of its descriptors and nothing more (the
  client calls it from ``close()`` there, instead of ``Transport.close``).

A layer above may ask more of a transport through protocols of its own (the
MCP layer's session, legacy fallback and revision): a transport satisfies
them by its methods and attributes alone, and imports nothing of that layer.

Message headers.  ``Transport.send`` and ``DrivesCalls.drive_call``
take ``headers``: metadata about this one message that the layer above
computed (MCP's ``Mcp-Method``, ``Mcp-Name``, ``Mcp-Param-*`` of revision
2026-07-28), as ``{name: value}``.  A transport with a place for per-message
metadata (HTTP: the POST's headers) sends them with the message; one without
(stdio) ignores them.  A transport never derives them from ``data``: knowing
what a message means stays above it.  The client passes ``headers`` only when
it was given some, so a transport written before they existed still works
for every caller that does not use them.

Deadlines are on the ``time.monotonic`` clock; ``None`` means none.
"""

from __future__ import annotations

from typing import Any, Callable, Deque, Mapping, NamedTuple, Optional, Protocol, Sequence, runtime_checkable

from ..errors import JsonRpcError, RequestId, TransportClosed


class MessageSink(Protocol):
    """What a transport calls back into.  Implemented by the client; thread-safe.

    ``message_received`` returns the ids of the responses the message
    carried (those the client took as answers and settled, or dropped as late:
    a response with a valid id, alone or in a batch), and nothing for anything
    else (a request, a notification, text that is not JSON).  A transport that
    tracks what it still owes (an HTTP exchange reads its stream until every
    request it carried is answered) strikes those ids: it never decodes a
    message itself to learn what it answered.
    """

    def message_received(self, data: bytes) -> Sequence[RequestId]:
        """One complete JSON text (a message or a batch) arrived.

        Returns:
            The ids of the responses it carried, in order, as the peer wrote
            them (only ids of a valid type: an ``int`` or a ``str``), whether or
            not a request was waiting for them; empty for anything else (a
            request, a notification, a text that is not JSON).  A streamed
            request's results (``JsonRpcClient.request_stream``) answer nothing
            until its last: the exchange that carries it goes on.  Never raises.
        """

    def requests_failed(self, request_ids: Sequence[RequestId], error: JsonRpcError) -> None:
        """The requests with these ids failed in transit; settle them with ``error``."""

    def transport_closed(self, error: TransportClosed) -> None:
        """The transport is gone for good; fail everything pending with ``error``."""

    def has_pending(self) -> bool:
        """True while some request waits for its answer (cheap, lock-free)."""


class TakesChunks(MessageSink, Protocol):
    """Optional, on the sink's side: several messages that one read brought, delivered at once.

    A transport may look for it (by name) on the sink it was given and, when it
    is there, hand over a run of complete messages in one call instead of one
    ``MessageSink.message_received`` each.  Without it, one at a time.
    """

    def messages_received(self, chunk: Deque[bytes]) -> None:
        """Take the messages in ``chunk`` in order, from the left, each as ``message_received`` would.

        The sink pops each message before it looks at it; should it be
        interrupted (``KeyboardInterrupt``), what is left in ``chunk`` was not
        looked at, for the transport to deliver later.
        """


@runtime_checkable
class Transport(Protocol):
    """A way to exchange JSON-RPC messages with one peer.

    Implementations are thread-safe: ``send`` may be called from many threads
    at once, and ``close`` from any thread, any number of times.
    """

    def start(self, sink: MessageSink) -> None:
        """Begin delivering received messages to ``sink``.  Called once, by the client.

        Raises:
            TransportClosed: when the peer cannot be reached or started.
        """

    def send(
        self,
        data: bytes,
        request_ids: Sequence[RequestId] = (),
        *,
        deadline: Optional[float] = None,
        headers: Optional[Mapping[str, str]] = None,
    ) -> None:
        """Put one encoded message (or batch) on the wire, in call order.

        ``request_ids`` are the ids of the requests inside ``data`` (empty for a
        notification or a response); a transport that learns of a failure after
        ``send`` returned reports it through ``sink.requests_failed`` with them.
        ``send`` never blocks past ``deadline``; with ``request_ids`` it should
        not block at all, and ``deadline`` is the requests' own (the latest of
        them for a batch; ``None`` when one has none): past it, the transport
        may stop carrying them without reporting anything, since the client
        times them out itself.  ``headers``: this message's metadata (see the
        module docstring), sent with it where the transport has a place for
        them, ignored where it has none.

        Raises:
            TransportClosed: when the transport is closed or the write failed;
                nothing was delivered, and no sink call follows for these ids.
            JsonRpcError: another failure known at once (e.g. an HTTP error on
                a notification, which is sent synchronously, or the deadline).
        """

    def close(self) -> None:
        """Release everything (process, threads, connections), bounded in time.

        Idempotent.  ``sink.transport_closed`` is called (once) if it was not yet.
        """


@runtime_checkable
class DrivesCalls(Protocol):
    """Optional: a blocking call can carry its own request on the calling thread."""

    def drive_call(
        self,
        data: bytes,
        request_id: RequestId,
        done: Callable[[], bool],
        deadline: Optional[float],
        headers: Optional[Mapping[str, str]] = None,
    ) -> bool:
        """Send one request and carry it on the calling thread until ``done()`` or ``deadline``.

        ``headers`` as in ``Transport.send``.  ``done()`` becomes true
        once the answer is in: settled, or received and waiting for the
        handlers of notifications that came before it (the client settles it
        when they finish; there is nothing more to read for it).

        Everything received meanwhile goes to the sink exactly as the
        transport's own threads would deliver it, in order.  Returns ``False``
        (having sent nothing) to decline, when the call cannot be carried here
        right now: the client then uses ``Transport.send``.  Returns
        ``True`` once the request was sent, even when ``done()`` is still
        false (the deadline passed, or another thread took over the reading);
        the client waits for the answer as usual.  Never blocks past
        ``deadline`` and never runs user code.

        Raises:
            TransportClosed: as ``Transport.send``; nothing was sent.
        """


@runtime_checkable
class AbandonsRequests(Protocol):
    """Optional: stop carrying requests that the client has settled on its own."""

    def abandon(self, request_ids: Sequence[RequestId]) -> None:
        """These requests were settled locally (timeout, cancel); nobody waits for their answer.

        Called from any thread, never under a client lock; returns at once.
        An answer that still arrives is delivered as usual (the client drops it).
        """


@runtime_checkable
class ExplainsTimeouts(Protocol):
    """Optional: a clue for a request that timed out."""

    def timeout_hint(self) -> str:
        """What may explain a timeout (``""`` for nothing).  Cheap, never blocks, any thread."""


@runtime_checkable
class SurvivesFork(Protocol):
    """Optional: what ``close()`` means in a process forked after the transport was made."""

    def release_in_fork(self) -> None:
        """Close only this process's copies of the descriptors; never signal, write, or end a session.

        Takes no lock (a thread of the parent may have held one at the fork).
        A transport without it is simply not closed in a forked process.
        """


class Capabilities(NamedTuple):
    """The optional capabilities of one transport, looked up once."""

    drive_call: Optional[Callable[..., bool]]
    abandon: Optional[Callable[[Sequence[RequestId]], None]]
    timeout_hint: Optional[Callable[[], str]]
    release_in_fork: Optional[Callable[[], None]]


def capabilities(transport: Transport) -> Capabilities:
    """The optional capabilities ``transport`` declares (the protocols above)."""
    return Capabilities(
        drive_call=transport.drive_call if isinstance(transport, DrivesCalls) else None,
        abandon=transport.abandon if isinstance(transport, AbandonsRequests) else None,
        timeout_hint=transport.timeout_hint if isinstance(transport, ExplainsTimeouts) else None,
        release_in_fork=transport.release_in_fork if isinstance(transport, SurvivesFork) else None,
    )


def describe(transport: Any) -> str:
    """A short label for logs and thread names."""
    label = getattr(transport, "label", None)
    return str(label) if label else type(transport).__name__
