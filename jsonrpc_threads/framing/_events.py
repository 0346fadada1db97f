"""What a decoder hands back besides complete messages (which are plain ``bytes``)."""

from __future__ import annotations

from .._records import Record

TYPE_CHECKING = False  # typing is not imported at run time (start-up cost)
if TYPE_CHECKING:
    from typing import Tuple, Union

#: Bytes kept of a message over the limit, for a log line.
OVERSIZED_HEAD_BYTES = 64 * 1024


class Oversized(Record):
    """A message longer than the limit was skipped.

    Attributes:
        head: its first bytes (at most ``OVERSIZED_HEAD_BYTES``).
        size: how many bytes it had (at least; the framing's own bytes excluded).
        limit: the limit it broke.
        response_ids: the ids of the responses it held, found as its bytes went
            by (``response_ids``); ``()`` when it held none, or when that
            is unknown (a message cut short, or not JSON).
    """

    __slots__ = ("head", "limit", "response_ids", "size")
    head: bytes
    size: int
    limit: int
    response_ids: Tuple[Union[int, str], ...]

    def __init__(self, head: bytes, size: int, limit: int, response_ids: Tuple[Union[int, str], ...] = ()) -> None:
        object.__setattr__(self, "head", head)
        object.__setattr__(self, "size", size)
        object.__setattr__(self, "limit", limit)
        object.__setattr__(self, "response_ids", response_ids)


class FramingError(Record):
    """Bytes that do not follow the framing were skipped (the stream goes on).

    Attributes:
        reason: what was wrong, for a log line.
        excerpt: the first bytes of what was skipped.
    """

    __slots__ = ("excerpt", "reason")
    reason: str
    excerpt: bytes

    def __init__(self, reason: str, excerpt: bytes) -> None:
        object.__setattr__(self, "reason", reason)
        object.__setattr__(self, "excerpt", excerpt)


if TYPE_CHECKING:
    #: One item out of a decoder: a complete message, or a note about what was skipped.
    Frame = Union[bytes, Oversized, FramingError]
