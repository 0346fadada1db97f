"""Progress of an MCP client's own requests: their tokens, the routing of reports, and a deadline that moves with them.

Theory of operation.  A request whose caller gave ``on_progress`` carries a
fresh ``_meta.progressToken`` (``ProgressRoutes.open``); the server's
``notifications/progress`` for that token reach the callback, on the
client's notification thread, in order, and (the JSON-RPC client sees to it)
before the request's response is handed over.  With
``reset_timeout_on_progress`` the call's deadline slides
(``ProgressRoutes.wait_sliding``): each report moves it ``timeout``
seconds on, never past a hard limit, both measured from the moment the call
entered the library.

Thread-safety: every method may be called from any thread (one lock guards
the routes; no callback runs under it).
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from concurrent.futures import Future
from concurrent.futures import wait as futures_wait
from typing import Any, Callable, Dict, NamedTuple, Optional, Tuple

from ..deadlines.timeouts import wait_slice
from ..errors import RequestTimeout

logger = logging.getLogger(__name__)

ProgressCallback = Callable[[Dict[str, Any]], None]
#: Without ``max_timeout``, a sliding deadline ends at most this many times ``timeout`` after the call entered.
DEFAULT_HARD_LIMIT_FACTOR = 10


class Progress(NamedTuple):
    """A call's progress settings.

    Attributes:
        callback: ``callback(params)`` for each ``notifications/progress``.
        reset: each report moves the deadline ``timeout`` seconds on.
        max_timeout: the hard limit with ``reset`` (default: ten times ``timeout``).
    """

    callback: ProgressCallback
    reset: bool = False
    max_timeout: Optional[float] = None


class _Route:
    __slots__ = ("callback", "last")

    def __init__(self, callback: ProgressCallback, since: float) -> None:
        self.callback = callback
        self.last = since


class ProgressRoutes:
    """The progress tokens of one client's requests in flight, and their callbacks."""

    def __init__(self) -> None:
        self._tokens = itertools.count(1)
        # _lock guards _routes.
        self._lock = threading.Lock()
        self._routes: Dict[Any, _Route] = {}

    def open(self, callback: ProgressCallback, since: float) -> Tuple[str, _Route]:
        """A new token routed to ``callback``; ``since`` is when the call entered (the sliding deadline's start)."""
        token = f"jsonrpc-threads-{next(self._tokens)}"
        route = _Route(callback, since)
        with self._lock:
            self._routes[token] = route
        return token, route

    def close(self, token: str) -> None:
        """The request of ``token`` is over: later reports for it are dropped."""
        with self._lock:
            self._routes.pop(token, None)

    def route(self, params: Any) -> None:
        """``notifications/progress``: the callback of its token (a notification handler)."""
        if not isinstance(params, dict):
            return
        with self._lock:
            route = self._routes.get(params.get("progressToken"))
        if route is None:
            logger.debug("progress for an unknown token %r dropped", params.get("progressToken"))
            return
        route.last = time.monotonic()
        route.callback(params)

    @staticmethod
    def wait_sliding(
        future: Future[Any], method: str, route: _Route, timeout: float, cancel: Callable[[Future[Any], str], bool]
    ) -> Any:
        """The result of ``future``, waiting until ``timeout`` seconds passed without a report.

        The future's own deadline is the hard limit.  ``concurrent.futures.wait``,
        not ``future.result(timeout)``: since Python 3.11 the future's own
        ``RequestTimeout`` (the hard limit) is a ``TimeoutError`` too, and
        must not be mistaken for "no progress yet".

        Raises:
            RequestTimeout: no report for ``timeout`` seconds (the request is
                withdrawn), or the hard limit passed.
        """
        while True:
            remaining = route.last + timeout - time.monotonic()
            done, _ = futures_wait((future,), timeout=wait_slice(time.monotonic() + max(0.0, remaining)))
            if done:
                return future.result()
            if route.last + timeout > time.monotonic():
                continue  # progress arrived meanwhile: the deadline moved
            if cancel(future, f"No progress for {timeout}s"):
                raise RequestTimeout(method, getattr(future, "request_id", None), timeout)
            return future.result()  # settled in the meantime


def hard_limit(timeout: float, max_timeout: Optional[float]) -> float:
    """The seconds after which a sliding deadline of ``timeout`` ends for good."""
    return max_timeout if max_timeout is not None else timeout * DEFAULT_HARD_LIMIT_FACTOR


__all__ = ["DEFAULT_HARD_LIMIT_FACTOR", "Progress", "ProgressCallback", "ProgressRoutes", "hard_limit"]
