"""Newline framing: one JSON text per line, split on ``b"\\n"`` only.

U+2028 and U+2029 inside a JSON string are not line breaks here (they are
ordinary characters in UTF-8 JSON), a trailing ``b"\\r"`` is JSON whitespace
and left in place, blank lines are skipped, and a last line without its
newline is handed back by ``LineDecoder.end`` at end of stream.

A line longer than the limit is never held whole: its head is kept, the rest
is counted, scanned for the ids of the responses it holds
(``ResponseIdScan``) and dropped as
it arrives, and once its newline comes the decoder hands back one
``Oversized``.
"""

from __future__ import annotations

from ._events import OVERSIZED_HEAD_BYTES, Oversized
from .response_ids import ResponseIdScan, response_ids

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import List

    from ._events import Frame

_CONTENT_LENGTH_PREFIX = b"content-length:"


def encode_line(body: bytes) -> bytes:
    """One message as it goes on the wire: ``body`` and a newline.

    Raises:
        ValueError: when ``body`` holds a newline, which would break the framing.
    """
    if b"\n" in body:
        raise ValueError("a message framed by lines must not contain a newline")
    return body + b"\n"


class LineDecoder:
    """Feed it bytes; it hands back every complete, non-blank line (without the newline).

    Not thread-safe: one reader at a time feeds it (the transport's read baton).

    Args:
        max_line_bytes: the longest line accepted, newline excluded.

    Attributes:
        saw_content_length: True once a line started with ``Content-Length:``
            (the peer frames with headers: a hint for the error message).
    """

    __slots__ = (
        "_discard_head",
        "_discard_scan",
        "_discard_size",
        "_discarding",
        "_limit",
        "_partial",
        "saw_content_length",
    )

    def __init__(self, max_line_bytes: int) -> None:
        if max_line_bytes <= 0:
            raise ValueError("max_line_bytes must be positive")
        self._limit = max_line_bytes
        self._partial = bytearray()  # the start of a line whose newline has not arrived
        self._discarding = False  # inside a line over the limit: drop bytes until its newline
        self._discard_head = b""
        self._discard_size = 0
        self._discard_scan = ResponseIdScan()  # made anew for each oversized line
        self.saw_content_length = False

    @property
    def buffered(self) -> int:
        """Bytes held of a line not complete yet."""
        return len(self._partial)

    def feed(self, data: bytes) -> List[Frame]:
        """Take the next bytes of the stream; return the lines (and notes) they complete."""
        out: List[Frame] = []
        if self._discarding:
            newline = data.find(b"\n")
            skipped = data if newline < 0 else data[:newline]
            self._discard_size += len(skipped)
            self._discard_scan.feed(skipped)
            room = OVERSIZED_HEAD_BYTES - len(self._discard_head)
            if room > 0:
                self._discard_head += skipped[:room]
            if newline < 0:
                return out
            out.append(self._end_discard())
            data = data[newline + 1 :]
        partial = self._partial
        if partial:
            newline = data.find(b"\n")
            if newline < 0:
                partial += data
                if len(partial) > self._limit:
                    self._begin_discard(bytes(partial), len(partial))
                    partial.clear()
                return out
            line = bytes(partial) + data[:newline]
            partial.clear()
            self._emit(line, out)
            data = data[newline + 1 :]
        lines = data.split(b"\n")
        rest = lines.pop()
        for line in lines:
            self._emit(line, out)
        if rest:
            if len(rest) > self._limit:
                self._begin_discard(rest, len(rest))
            else:
                partial += rest
        return out

    def end(self) -> List[Frame]:
        """End of stream: the last line if it had no newline (or the note of a cut oversized line)."""
        out: List[Frame] = []
        if self._discarding:
            out.append(self._end_discard())
        elif self._partial:
            line = bytes(self._partial)
            self._partial.clear()
            self._emit(line, out)
        return out

    def _emit(self, line: bytes, out: List[Frame]) -> None:
        if len(line) > self._limit:
            out.append(Oversized(line[:OVERSIZED_HEAD_BYTES], len(line), self._limit, response_ids(line)))
        elif line and not line.isspace():
            if line[:1] not in (b"{", b"[") and line[:15].lower() == _CONTENT_LENGTH_PREFIX:
                self.saw_content_length = True
            out.append(line)

    def _begin_discard(self, start: bytes, size: int) -> None:
        self._discarding = True
        self._discard_head = start[:OVERSIZED_HEAD_BYTES]
        self._discard_size = size
        self._discard_scan = ResponseIdScan()
        self._discard_scan.feed(start)

    def _end_discard(self) -> Oversized:
        note = Oversized(self._discard_head, self._discard_size, self._limit, self._discard_scan.response_ids())
        self._discarding = False
        self._discard_head = b""
        self._discard_size = 0
        return note


__all__ = ["LineDecoder", "encode_line"]
