"""What a handler's thread knows of the request it serves: its id and its connection.

Theory of operation: the loop runs every handler inside ``handling(connection,
request_id)``, which sets a ``contextvars.ContextVar`` for the block; the
module-level ``notify``, ``current_request_id`` and ``current_connection``
read it, so they work on the thread that runs the handler (and in a context
copied with ``contextvars.copy_context()``) and raise ``RuntimeError``
anywhere else.  ``jsonrpc_threads.wsgi`` runs its handlers in a ``handling``
block too, with a closed connection, so a handler written for ``serve`` runs
there unchanged (its notifications are dropped).  The public path of these
functions is ``jsonrpc_threads.server``.
"""

from __future__ import annotations

import contextvars

from .connection import ServerConnection

TYPE_CHECKING = False  # typing is not imported at run time: a tool server starts faster
if TYPE_CHECKING:
    from typing import Optional

    from ..errors import RequestId
    from ..messages import Params


class _HandlerContext:
    """What a handler's thread knows of the request it serves."""

    __slots__ = ("connection", "request_id")

    def __init__(self, connection: ServerConnection, request_id: Optional[RequestId]) -> None:
        self.connection = connection
        self.request_id = request_id


_current: contextvars.ContextVar[Optional[_HandlerContext]] = contextvars.ContextVar(
    "jsonrpc_threads_server_handler", default=None
)


class handling:
    """``with handling(connection, request_id):`` what ``notify``, ``current_request_id`` and
    ``current_connection`` see inside the block, on this thread.

    ``serve`` runs every handler in one; ``jsonrpc_threads.wsgi`` runs
    the same handlers in one too, so that they work there unchanged.
    """

    __slots__ = ("_context", "_token")

    def __init__(self, connection: ServerConnection, request_id: Optional[RequestId]) -> None:
        self._context = _HandlerContext(connection, request_id)

    def __enter__(self) -> None:
        self._token = _current.set(self._context)

    def __exit__(self, *exc_info: object) -> None:
        _current.reset(self._token)


def _context(what: str) -> _HandlerContext:
    context = _current.get()
    if context is None:
        raise RuntimeError(f"{what}() works only inside a handler called by jsonrpc_threads.server.serve()")
    return context


def notify(method: str, params: Params = None) -> None:
    """Send a notification from inside a handler, e.g. progress while it works.

    The notification goes out at once, so the peer receives it before the answer
    to the request being handled.  Best effort: dropped when the output is gone.
    Works on the thread that runs the handler (a thread the handler starts sees it
    only when run through ``contextvars.copy_context().run``; otherwise pass it
    ``current_connection``).  Thread-safe.

    Args:
        method: the notification's method.
        params: a mapping, a sequence or ``None``.

    Raises:
        RuntimeError: when called outside a handler.
        TypeError: when the params cannot be encoded as JSON.
    """
    _context("notify").connection.notify(method, params)


def current_request_id() -> Optional[RequestId]:
    """The id of the request the calling handler serves (``None`` for a notification).

    Raises:
        RuntimeError: when called outside a handler.
    """
    return _context("current_request_id").request_id


def current_connection() -> ServerConnection:
    """The connection of the loop that called the current handler.

    Hand it to another thread to keep sending notifications from there.

    Raises:
        RuntimeError: when called outside a handler.
    """
    return _context("current_connection").connection


__all__ = ["current_connection", "current_request_id", "handling", "notify"]
