"""One way to make an object with ``close()`` a context manager, and one way to close it off the caller's path.

``with thing:`` gives ``thing`` and calls ``thing.close()`` when the block ends,
however it ends.  A class whose entering does more (``McpClient`` and
``LspClient`` run their handshake) overrides ``_on_enter()``: if it raises, the
object is closed before the exception goes on.

``close_in_background(thing)`` is for a caller leaving at its deadline:
whatever is stuck in ``thing`` (a hook that blocks, a read not yet
interrupted) is reclaimed on a daemon thread of its own, so the caller never
waits a close's grace past its deadline.
"""

from __future__ import annotations

import logging
import threading
from types import TracebackType
from typing import Any, Callable, Optional, Type, TypeVar

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


def close_in_background(thing: Any, name: str) -> threading.Thread:
    """Call ``thing.close()`` on a daemon thread named ``name``; what it raises is logged.

    Returns:
        The thread (started), for a caller that may want to join it later.
    """

    def close() -> None:
        try:
            thing.close()
        except Exception:  # reclaiming in the background: nobody to raise to
            logging.getLogger(__name__).warning("closing %s in the background failed", name, exc_info=True)

    thread = threading.Thread(target=close, name=name, daemon=True)
    thread.start()
    return thread


#: What ``ReportThenClose`` calls with an error leaving its block: it reports it, and may return
#: what to call once the object closed (to withdraw a "still closing" notice, say).
Reporter = Callable[[BaseException], Optional[Callable[[], None]]]


class ReportThenClose:
    """``with ReportThenClose(thing, report) as t:``: an error leaving the block is reported before ``thing`` closes.

    For a command line whose client reclaims a server on close (seconds, for
    one that ignores its input): the user reads the error at the deadline,
    then the server is stopped.

    Args:
        thing: a context manager with ``close()``.
        report: called with the error (see ``Reporter``); ``None``: nothing reported.
        enter: ``False`` when the block starts ``thing`` itself: entering gives
            it as it is, and leaving only closes it.
    """

    def __init__(self, thing: Any, report: Optional[Reporter], *, enter: bool = True) -> None:
        self._thing = thing
        self._report = report
        self._enter = enter

    def __enter__(self) -> Any:
        return self._thing.__enter__() if self._enter else self._thing

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> Any:
        after = self._report(exc) if (exc is not None and self._report is not None) else None
        try:
            if not self._enter:
                self._thing.close()
                return None
            return self._thing.__exit__(exc_type, exc, tb)
        finally:
            if after is not None:
                after()
