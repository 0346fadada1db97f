"""One way to make an object with ``close()`` a context manager.

``with thing:`` gives ``thing`` and calls ``thing.close()`` when the block ends,
however it ends.  A class whose entering does more (``McpClient`` and
``LspClient`` run their handshake) overrides ``_on_enter()``: if it raises, the
object is closed before the exception goes on.
"""

from __future__ import annotations

from types import TracebackType
from typing import Optional, Type, TypeVar

_Self = TypeVar("_Self", bound="Closing")


class Closing:
    """Mixin: ``__enter__`` returns ``self``, ``__exit__`` calls ``close`` (exceptions propagate)."""

    __slots__ = ()

    def close(self) -> None:
        """Release what the object holds.  Subclasses implement it; idempotent."""
        raise NotImplementedError

    def _on_enter(self) -> None:
        """What ``with`` does on entering besides giving the object (nothing here)."""

    def __enter__(self: _Self) -> _Self:
        try:
            self._on_enter()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        self.close()
