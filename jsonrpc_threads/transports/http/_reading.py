"""Reading an answer's body, every socket read bounded by its exchange: JSON, an error excerpt, SSE events.

The body is read as it arrives (never waiting for a full buffer or the end
of a chunked answer).  With an exchange that has a deadline, each socket read
waits no longer than the time left (:meth:`~._exchange.Exchange.bound_next_read`),
so a server that trickles bytes (or none) frees its reader at the deadline;
an exchange that is stopped has its socket shut down, which ends the read at once.

SSE bodies are fed to :class:`~jsonrpc_threads.framing.SseDecoder`;
:func:`consume_sse` delivers each event's data as one message, notes the
event ids and ``retry`` delays the exchange needs to resume a broken stream,
and leaves a stream that owes nothing more.

Network errors are raised as they come (the caller translates them, see
:mod:`._errors`), except by :func:`read_excerpt` and :func:`consume_sse`.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator, List, Optional, Sequence

import requests

from ...errors import JsonRpcError, MessageTooLarge, RequestId
from ...framing import Oversized, SseDecoder
from ...framing.sse import Event
from ._errors import NetworkErrors, is_network_error
from ._exchange import Exchange
from ._wire import CHUNK_BYTES, ERROR_BODY_LIMIT_BYTES, MAX_RETRY_S


def media_type(response: requests.Response) -> str:
    """The answer's media type, lower case, without parameters ("" when none)."""
    return response.headers.get("Content-Type", "").split(";", 1)[0].strip().lower()


def body_chunks(response: requests.Response, exchange: Exchange) -> Iterator[bytes]:
    """The body as it arrives."""
    raw: Any = response.raw
    read1 = getattr(raw, "read1", None)
    bound = exchange.deadline is not None
    # Without a Content-Encoding there is nothing to decode: urllib3 skips its decoder's buffers.
    decode = "Content-Encoding" in response.headers
    if read1 is None or getattr(raw, "chunked", False):
        # Chunked transfer: each HTTP chunk is yielded as soon as it is read.
        chunks = response.iter_content(CHUNK_BYTES)
        while True:
            if bound:
                exchange.bound_next_read(response)
            chunk = next(chunks, None)
            if chunk is None:
                return
            yield chunk
    while True:
        if bound:
            exchange.bound_next_read(response)
        data = read1(CHUNK_BYTES, decode_content=decode)
        if not data:
            return
        yield data


def read_body(response: requests.Response, exchange: Exchange, limit: int) -> bytes:
    """The whole body, up to ``limit`` bytes (checked against ``Content-Length`` first).

    Raises:
        MessageTooLarge: the body is larger (it is not read further).
    """
    length = response.headers.get("Content-Length")
    declared = int(length) if length is not None and length.isdigit() else None
    if declared is not None and declared > limit:
        raise MessageTooLarge(limit, "HTTP answer body")
    if declared is not None and response.headers.get("Content-Encoding", "identity") != "identity":
        declared = None  # the length counts encoded bytes; we count decoded ones
    chunks: List[bytes] = []
    size = 0
    for chunk in body_chunks(response, exchange):
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            raise MessageTooLarge(limit, "HTTP answer body")
        if size == declared:
            break  # all of it: no further read only to learn that the body ended
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def read_excerpt(response: requests.Response, exchange: Exchange) -> bytes:
    """Up to ``ERROR_BODY_LIMIT_BYTES`` of the body; never raises."""
    body = bytearray()
    try:
        for chunk in body_chunks(response, exchange):
            body += chunk
            if len(body) >= ERROR_BODY_LIMIT_BYTES:
                break
    except Exception as exc:
        if not is_network_error(exc):
            raise
    return bytes(body[:ERROR_BODY_LIMIT_BYTES])


def sse_events(response: requests.Response, exchange: Exchange, limit: int) -> Iterator[Event]:
    """The events of an SSE body as they arrive.

    Raises:
        MessageTooLarge: an event above ``limit`` (the stream is abandoned).
    """
    decoder = SseDecoder(limit)
    for chunk in body_chunks(response, exchange):
        for frame in decoder.feed(chunk):
            if isinstance(frame, Oversized):
                raise MessageTooLarge(limit, "SSE event")
            yield frame
    decoder.end()  # an event cut by the end of the stream is dropped


def consume_sse(
    response: requests.Response,
    exchange: Exchange,
    limit: int,
    deliver: Callable[[bytes], Sequence[RequestId]],
    errors: NetworkErrors,
) -> Optional[JsonRpcError]:
    """Deliver SSE events as they arrive, until the stream ends or owes nothing more.

    ``deliver`` returns the ids of the responses a message carried (the sink's answer).

    Returns:
        ``None`` when the stream ended (or every request was answered, or
        the exchange was stopped), else why it broke: an
        :class:`~jsonrpc_threads.errors.HttpConnectionError`, or
        :class:`~jsonrpc_threads.errors.TransportClosed` when ``close()``
        interrupted it.

    Raises:
        MessageTooLarge: an event above ``limit`` (the stream is abandoned).
    """
    try:
        for event in sse_events(response, exchange, limit):
            if exchange.stopped:
                return None
            exchange.events += 1
            if event.id is not None:
                exchange.last_event_id = event.id or None
            if event.retry is not None:
                exchange.retry_s = min(event.retry / 1000.0, MAX_RETRY_S)
            if not event.data:
                continue  # a priming event, or a keep-alive
            exchange.answered(deliver(event.data.encode("utf-8")))
            exchange.messages += 1
            if exchange.done:
                return None  # the server should end the stream now; don't wait for it
    except Exception as exc:
        if not is_network_error(exc):
            raise
        return errors.translate(exc)
    return None


__all__ = ["body_chunks", "consume_sse", "media_type", "read_body", "read_excerpt", "sse_events"]
