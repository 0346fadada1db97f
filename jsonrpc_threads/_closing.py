"""One way to make an object with ``close()`` a context manager.

``with thing:`` gives ``thing`` and calls ``thing.close()`` when the block ends,
however it ends.  A class whose ``__enter__`` does more (``McpClient`` runs the
handshake) overrides ``__enter__`` only.
"""

from __future__ import annotations

from types import TracebackType
from typing import Optional, Type, TypeVar

_Self = TypeVar("_Self", bound="Closing")


class Closing:
    """Mixin: ``__enter__`` returns ``self``, ``__exit__`` calls :meth:`close` (exceptions propagate)."""

    __slots__ = ()

    def close(self) -> None:
        """Release what the object holds.  Subclasses implement it; idempotent."""
        raise NotImplementedError

    def __enter__(self: _Self) -> _Self:
        return self

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        self.close()
