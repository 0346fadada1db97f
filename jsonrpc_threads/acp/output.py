"""A terminal's output: the last N bytes of what the command wrote, cut at a character boundary (pure).

Theory of operation.  ACP's ``terminal/create`` names an ``outputByteLimit``:
once the output grows past it, the client drops bytes *from the start*, and the
retained text must begin on a character boundary, even if that keeps a little
less than the limit.  ``OutputBuffer`` does exactly that on every append,
so it never holds more than its limit; ``OutputBuffer.text`` decodes what
is kept as UTF-8 (bytes that are not, a command's binary noise, become U+FFFD).

Not thread-safe by itself: the terminal that owns it appends and reads under
its own lock.
"""

from __future__ import annotations


def _is_continuation(byte: int) -> bool:
    return byte & 0xC0 == 0x80


#: The longest UTF-8 sequence: at most this many continuation bytes follow a lead byte.
_MAX_CONTINUATION = 3


class OutputBuffer:
    """The retained end of a stream of bytes, at most ``limit`` of them.

    Args:
        limit: the most bytes kept (``0`` keeps nothing).

    Raises:
        ValueError: a negative limit.
    """

    __slots__ = ("_data", "limit", "truncated")

    def __init__(self, limit: int) -> None:
        if limit < 0:
            raise ValueError(f"an output limit must be >= 0, not {limit}")
        self.limit = limit
        self.truncated = False
        self._data = bytearray()

    def append(self, chunk: bytes) -> None:
        """Add bytes at the end, dropping from the start what goes past the limit."""
        if not chunk:
            return
        data = self._data
        data += chunk
        excess = len(data) - self.limit
        if excess > 0:
            self.truncated = True
            del data[:excess]
        if self.truncated:
            # After a cut, drop the rest of a character cut in two: at most 3 continuation
            # bytes (more means the stream is not UTF-8 there, and the cut stays as it is).
            extra = 0
            while extra < len(data) and extra <= _MAX_CONTINUATION and _is_continuation(data[extra]):
                extra += 1
            if 0 < extra <= _MAX_CONTINUATION:
                del data[:extra]

    def __len__(self) -> int:
        return len(self._data)

    def text(self) -> str:
        """What is kept, as text (invalid UTF-8 replaced; a character still being written left out)."""
        data = self._data
        return data[: _complete_length(data)].decode("utf-8", errors="replace")


def _sequence_length(lead: int) -> int:
    if lead < 0xC0:
        return 1
    if lead < 0xE0:
        return 2
    if lead < 0xF0:
        return 3
    return 4


def _complete_length(data: bytearray) -> int:
    """``len(data)``, less the start of a character at its end whose other bytes have not come yet."""
    end = len(data)
    for back in range(1, min(_MAX_CONTINUATION + 1, end) + 1):
        byte = data[end - back]
        if not _is_continuation(byte):
            return end - back if byte >= 0xC0 and _sequence_length(byte) > back else end
    return end


__all__ = ["OutputBuffer"]
