"""Reading an answer's body, every socket read bounded by its exchange: the chunks, JSON, an error excerpt.

The body is read as it arrives (never waiting for a full buffer or the end
of a chunked answer).  With an exchange that has a deadline, each socket read
waits no longer than the time left (``bound_next_read``),
so a server that trickles bytes (or none) frees its reader at the deadline;
an exchange that is stopped has its socket shut down, which ends the read at once.
SSE bodies are read as ``body_chunks`` by ``stream``.

Network errors are raised as they come (the caller translates them, see
``errors``), except by ``read_excerpt``.
"""

from __future__ import annotations

from typing import Any, Iterator, List

import requests

from ...errors import MessageTooLarge
from .errors import is_network_error
from .exchange import Exchange
from .wire import CHUNK_BYTES, ERROR_BODY_LIMIT_BYTES


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


__all__ = ["body_chunks", "media_type", "read_body", "read_excerpt"]
