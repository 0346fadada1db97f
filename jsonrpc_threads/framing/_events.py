"""What a decoder hands back besides complete messages (which are plain ``bytes``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

#: Bytes kept of a message over the limit: enough to find the id of a response.
OVERSIZED_HEAD_BYTES = 64 * 1024


@dataclass(frozen=True)
class Oversized:
    """A message longer than the limit was skipped.

    Attributes:
        head: its first bytes (at most :data:`OVERSIZED_HEAD_BYTES`).
        size: how many bytes it had (at least; the framing's own bytes excluded).
        limit: the limit it broke.
    """

    head: bytes
    size: int
    limit: int


@dataclass(frozen=True)
class FramingError:
    """Bytes that do not follow the framing were skipped (the stream goes on).

    Attributes:
        reason: what was wrong, for a log line.
        excerpt: the first bytes of what was skipped.
    """

    reason: str
    excerpt: bytes


#: One item out of a decoder: a complete message, or a note about what was skipped.
Frame = Union[bytes, Oversized, FramingError]
