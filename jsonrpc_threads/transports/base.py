"""The contract between :class:`~jsonrpc_threads.client.JsonRpcClient` and a transport.

A transport moves bytes and nothing else: it never looks at method names, never
builds a message and never owns a future.  The client hands it encoded messages
through :meth:`Transport.send`, and the transport reports what happens through
the :class:`MessageSink` the client gave it in :meth:`Transport.start`:

- every complete message received (one stdio line, one HTTP JSON body, one SSE
  event's data) goes to :meth:`MessageSink.message_received` as bytes, in the
  order it arrived;
- a failure that concerns only some requests (an HTTP status, a reset
  connection) goes to :meth:`MessageSink.requests_failed` with their ids, so the
  client settles exactly those futures;
- the end of the transport (EOF, child exit, ``close()``) goes once to
  :meth:`MessageSink.transport_closed`.

Sink methods are called from the transport's own threads and return quickly;
they never block on the transport.

Optional fast paths.  Beyond the required surface below, a transport may offer
methods that :class:`~jsonrpc_threads.client.JsonRpcClient` uses when present,
so that a blocking ``call()`` needs no hand-off between threads:

- ``read_directly(done, deadline) -> bool`` and ``resume_reader()`` (stdio): the
  caller reads the stream itself until its answer is in, when no other thread
  is reading; the sink's optional ``has_pending()`` tells the reader thread
  when it may step aside;
- ``exchange_directly(data, request_ids, deadline) -> bool`` (HTTP): the caller
  carries the whole exchange of a message with requests on its own thread,
  as ``send(data, request_ids)`` would on a transport thread, with the same
  sink calls; no read outlasts ``deadline`` (then the exchange is abandoned
  unreported, for the client's timer to fail it).  ``False`` means declined,
  nothing sent: the client falls back to ``send``.

``deadline`` is on the :func:`time.monotonic` clock, ``None`` for no deadline.
"""

from __future__ import annotations

from typing import Any, Protocol, Sequence, runtime_checkable

from ..errors import JsonRpcError, RequestId, TransportClosed


class MessageSink(Protocol):
    """What a transport calls back into.  Implemented by the client; thread-safe."""

    def message_received(self, data: bytes) -> None:
        """One complete JSON text (a message or a batch) arrived."""

    def requests_failed(self, request_ids: Sequence[RequestId], error: JsonRpcError) -> None:
        """The requests with these ids failed in transit; settle them with ``error``."""

    def transport_closed(self, error: TransportClosed) -> None:
        """The transport is gone for good; fail everything pending with ``error``."""


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

    def send(self, data: bytes, request_ids: Sequence[RequestId] = ()) -> None:
        """Put one encoded message (or batch) on the wire, in call order.

        ``request_ids`` are the ids of the requests inside ``data`` (empty for a
        notification or a response); a transport that learns of a failure after
        ``send`` returned reports it through ``sink.requests_failed`` with them.

        Raises:
            TransportClosed: when the transport is closed or the write failed;
                nothing was delivered, and no sink call follows for these ids.
            JsonRpcError: another failure known at once (e.g. an HTTP error on
                a notification, which is sent synchronously).
        """

    def close(self) -> None:
        """Release everything (process, threads, connections), bounded in time.

        Idempotent.  ``sink.transport_closed`` is called (once) if it was not yet.
        """


def describe(transport: Any) -> str:
    """A short label for logs and thread names."""
    label = getattr(transport, "label", None)
    return str(label) if label else type(transport).__name__
