"""Content-Length framing, as language servers speak it.

Each message is a header part, a blank line, and a body of exactly as many
bytes as ``Content-Length`` says::

    Content-Length: 52\\r\\n
    Content-Type: application/vscode-jsonrpc; charset=utf-8\\r\\n
    \\r\\n
    {"jsonrpc":"2.0","id":1,"result":{"capabilities":{}}}

Header names are case-insensitive; ``Content-Type`` is accepted and other
headers are ignored; header lines may end with CRLF or a bare LF.  A header
part without a usable ``Content-Length`` (missing, not a number, given twice
with different values) is a ``FramingError``:
it is skipped and decoding goes on with the next header part, so one bad
message never poisons the stream.  Bytes that never form a header part (no
blank line within ``MAX_HEADER_BYTES``) are skipped up to the next
``Content-Length`` the decoder finds.  A body longer than the limit is
skipped as it arrives (scanned for the ids of the responses it holds, see
``response_ids``) and reported as ``Oversized``.
"""

from __future__ import annotations

import re

from ._events import OVERSIZED_HEAD_BYTES, FramingError, Oversized
from .response_ids import ResponseIdScan, response_ids

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import List, Optional

    from ._events import Frame

#: The longest header part accepted (all header lines together).
MAX_HEADER_BYTES = 8 * 1024
_EXCERPT_BYTES = 80
_HEADER_END = re.compile(rb"\r?\n\r?\n")
_CONTENT_LENGTH = re.compile(rb"(?i)content-length")


def encode_content_length(body: bytes) -> bytes:
    """One message as it goes on the wire: the ``Content-Length`` header, a blank line, ``body``."""
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


class ContentLengthDecoder:
    """Feed it bytes; it hands back every complete body.

    Not thread-safe: one reader at a time feeds it.

    Args:
        max_message_bytes: the largest body accepted.
    """

    __slots__ = ("_buffer", "_discard_head", "_discard_left", "_discard_scan", "_discard_size", "_limit", "_need")

    def __init__(self, max_message_bytes: int) -> None:
        if max_message_bytes <= 0:
            raise ValueError("max_message_bytes must be positive")
        self._limit = max_message_bytes
        self._buffer = bytearray()
        self._need: Optional[int] = None  # the body length once its headers were read
        self._discard_left = 0  # bytes of an oversized body still to drop
        self._discard_head = b""
        self._discard_size = 0
        self._discard_scan = ResponseIdScan()  # made anew for each oversized body

    @property
    def buffered(self) -> int:
        """Bytes held of a message not complete yet."""
        return len(self._buffer)

    def feed(self, data: bytes) -> List[Frame]:
        """Take the next bytes of the stream; return the bodies (and notes) they complete."""
        out: List[Frame] = []
        if self._discard_left:
            skipped = data[: self._discard_left]
            self._discard_scan.feed(skipped)
            room = OVERSIZED_HEAD_BYTES - len(self._discard_head)
            if room > 0:
                self._discard_head += skipped[:room]
            if len(data) < self._discard_left:
                self._discard_left -= len(data)
                return out
            data = data[self._discard_left :]
            self._discard_left = 0
            out.append(
                Oversized(self._discard_head, self._discard_size, self._limit, self._discard_scan.response_ids())
            )
            self._discard_head = b""
        buffer = self._buffer
        buffer += data
        position = 0
        while True:
            need = self._need
            if need is None:
                found = _HEADER_END.search(buffer, position)
                if found is None:
                    if len(buffer) - position > MAX_HEADER_BYTES:
                        position = self._resync(buffer, position, out)
                        continue
                    break
                header = bytes(buffer[position : found.start()])
                length = self._content_length(header)
                if length is None:
                    # Stray bytes before a header (a body that was not what it
                    # said, a log line): start again at the last Content-Length in it.
                    restart = _last_content_length(header)
                    skipped = header[:restart] if restart else header
                    out.append(FramingError("bytes outside the framing were skipped", skipped[:_EXCERPT_BYTES]))
                    position = position + restart if restart else found.end()
                    continue
                position = found.end()
                if length > self._limit:
                    available = len(buffer) - position
                    if available >= length:
                        body = bytes(buffer[position : position + length])
                        out.append(Oversized(body[:OVERSIZED_HEAD_BYTES], length, self._limit, response_ids(body)))
                        position += length
                        continue
                    self._discard_scan = ResponseIdScan()
                    self._discard_scan.feed(bytes(buffer[position:]))
                    self._discard_head = bytes(buffer[position : position + OVERSIZED_HEAD_BYTES])
                    self._discard_size = length
                    self._discard_left = length - available
                    position = len(buffer)
                    break
                self._need = need = length
            if len(buffer) - position < need:
                break
            out.append(bytes(buffer[position : position + need]))
            position += need
            self._need = None
        del buffer[:position]
        return out

    def end(self) -> List[Frame]:
        """End of stream: a cut message is reported, never delivered."""
        out: List[Frame] = []
        if self._discard_left:  # cut short: which responses it held is unknown
            out.append(Oversized(self._discard_head, self._discard_size, self._limit))
        elif self._need is not None or self._buffer.strip():
            out.append(FramingError("stream ended inside a message", bytes(self._buffer[:_EXCERPT_BYTES])))
        self._buffer.clear()
        self._need = None
        self._discard_left = 0
        return out

    def _content_length(self, header: bytes) -> Optional[int]:
        """The body length a header part announces, or None when it announces no single one."""
        length: Optional[int] = None
        for raw in header.split(b"\n"):
            name, colon, value = raw.partition(b":")
            if not colon or name.strip().lower() != b"content-length":
                continue  # Content-Type and the like
            text = value.strip()
            if not text.isdigit():
                return None
            parsed = int(text)
            if length is not None and parsed != length:
                return None
            length = parsed
        if length is not None and not header[:1].isalpha():
            return None  # stray bytes before the first header line
        return length

    def _resync(self, buffer: bytearray, position: int, out: List[Frame]) -> int:
        """No header part ends within the limit: skip to the next ``Content-Length`` after the start."""
        found = _CONTENT_LENGTH.search(buffer, position + 1)
        end = found.start() if found is not None else len(buffer) - len(b"content-length")
        end = max(end, position + 1)
        out.append(
            FramingError(
                "no header part within the limit; skipped", bytes(buffer[position : position + _EXCERPT_BYTES])
            )
        )
        return end


def _last_content_length(header: bytes) -> int:
    """Where the last ``Content-Length`` in ``header`` starts, if after its first byte; else 0."""
    start = 0
    for found in _CONTENT_LENGTH.finditer(header):
        start = found.start()
    return start


__all__ = ["MAX_HEADER_BYTES", "ContentLengthDecoder", "encode_content_length"]
