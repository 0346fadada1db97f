"""What a decoder hands back besides complete messages (which are plain ``bytes``)."""

from __future__ import annotations

TYPE_CHECKING = False  # typing is not imported at run time (start-up cost)
if TYPE_CHECKING:
    from typing import ClassVar, Tuple, Union

#: Bytes kept of a message over the limit: enough to find the id of a response.
OVERSIZED_HEAD_BYTES = 64 * 1024


class _Note:
    """A small immutable record, equal by value."""

    __slots__: ClassVar[Tuple[str, ...]] = ()

    def _values(self) -> Tuple[object, ...]:
        return tuple(getattr(self, name) for name in type(self).__slots__)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in type(self).__slots__)
        return f"{type(self).__name__}({fields})"


class Oversized(_Note):
    """A message longer than the limit was skipped.

    Attributes:
        head: its first bytes (at most :data:`OVERSIZED_HEAD_BYTES`).
        size: how many bytes it had (at least; the framing's own bytes excluded).
        limit: the limit it broke.
    """

    __slots__ = ("head", "limit", "size")
    head: bytes
    size: int
    limit: int

    def __init__(self, head: bytes, size: int, limit: int) -> None:
        object.__setattr__(self, "head", head)
        object.__setattr__(self, "size", size)
        object.__setattr__(self, "limit", limit)


class FramingError(_Note):
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
