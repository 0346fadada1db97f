"""``$/progress``: work-done reports and partial results, routed by token.

A request may carry a ``workDoneToken`` (the server reports ``begin`` /
``report`` / ``end`` under it) and a ``partialResultToken`` (the server sends
pieces of the result under it, and then answers with an empty result: the
pieces *are* the result).  ``ProgressRouter`` makes fresh tokens for a
request, routes each ``$/progress`` notification to that request's
``on_progress`` callback, and keeps the partial results, which the client
joins with the final answer so that a helper returns the whole result either
way.  A server may also create tokens of its own
(``window/workDoneProgress/create``, for background work such as indexing):
their reports go to the client-wide callback, or to the debug log.

The handlers run on the client's notification thread, one at a time, in
arrival order, and every report that arrived before a response has been
handled before the ``call()`` it belongs to returns (the client's ordering
rule), so the partial results are complete when the answer is.

Thread-safe.
"""

from __future__ import annotations

import itertools
import threading
from typing import Any, Callable, Dict, List, Optional, Union

from ..runtime.logs import get_logger

logger = get_logger(__name__)

PROGRESS_METHOD = "$/progress"
CREATE_METHOD = "window/workDoneProgress/create"

ProgressToken = Union[int, str]
#: ``on_progress(params)``: the ``$/progress`` params as sent, ``{"token": ..., "value": ...}``.
ProgressCallback = Callable[[Dict[str, Any]], None]


class _Route:
    """Where the reports under one token go; a partial-result route also keeps them."""

    __slots__ = ("callback", "collect", "partials")

    def __init__(self, callback: Optional[ProgressCallback], *, collect: bool) -> None:
        self.callback = callback
        self.collect = collect
        self.partials: List[Any] = []


class Tokens:
    """The tokens of one request, and what came under them (see ``ProgressRouter.open``)."""

    __slots__ = ("_partial_route", "partial", "work_done")

    def __init__(self, work_done: str, partial: Optional[str], partial_route: Optional[_Route]) -> None:
        self.work_done = work_done
        self.partial = partial
        self._partial_route = partial_route

    def params(self) -> Dict[str, Any]:
        """The members to add to the request's params."""
        found: Dict[str, Any] = {"workDoneToken": self.work_done}
        if self.partial is not None:
            found["partialResultToken"] = self.partial
        return found

    def partial_results(self) -> List[Any]:
        """The partial results received so far, in order."""
        route = self._partial_route
        return list(route.partials) if route is not None else []


class ProgressRouter:
    """Routes ``$/progress`` to the callbacks of the requests that carry the tokens.  Thread-safe.

    Args:
        prefix: the start of every token this router makes (unique per client).
        on_server_progress: ``callback(params)`` for reports under tokens the
            server created; ``None`` logs them at debug level.
    """

    def __init__(self, prefix: str, on_server_progress: Optional[ProgressCallback] = None) -> None:
        self._prefix = prefix
        self._numbers = itertools.count(1)
        self._on_server_progress = on_server_progress
        # _lock guards _routes and _server_tokens.
        self._lock = threading.Lock()
        self._routes: Dict[ProgressToken, _Route] = {}
        self._server_tokens: Dict[ProgressToken, None] = {}

    def open(self, callback: Optional[ProgressCallback], *, partial: bool) -> Tokens:
        """Fresh tokens for one request: work-done always, partial results when ``partial``."""
        number = next(self._numbers)
        work_done = f"{self._prefix}-{number}-work"
        partial_token = f"{self._prefix}-{number}-partial" if partial else None
        partial_route = _Route(callback, collect=True) if partial_token is not None else None
        with self._lock:
            self._routes[work_done] = _Route(callback, collect=False)
            if partial_token is not None and partial_route is not None:
                self._routes[partial_token] = partial_route
        return Tokens(work_done, partial_token, partial_route)

    def close(self, tokens: Tokens) -> None:
        """The request is settled: its tokens are routed no more."""
        with self._lock:
            self._routes.pop(tokens.work_done, None)
            if tokens.partial is not None:
                self._routes.pop(tokens.partial, None)

    def create(self, params: Any) -> None:
        """Request handler for ``window/workDoneProgress/create``: the token is accepted."""
        token = params.get("token") if isinstance(params, dict) else None
        if isinstance(token, (int, str)) and not isinstance(token, bool):
            with self._lock:
                self._server_tokens[token] = None

    def route(self, params: Any) -> None:
        """Notification handler for ``$/progress`` (runs on the notification thread)."""
        if not isinstance(params, dict):
            return
        token = params.get("token")
        if not isinstance(token, (int, str)) or isinstance(token, bool):
            return
        value = params.get("value")
        callback: Optional[ProgressCallback]
        with self._lock:
            route = self._routes.get(token)
            if route is not None:
                if route.collect:
                    route.partials.append(value)
                callback = route.callback
            elif token in self._server_tokens:
                if isinstance(value, dict) and value.get("kind") == "end":
                    del self._server_tokens[token]
                callback = self._on_server_progress
                if callback is None:
                    logger.debug("server progress %r: %.200r", token, value)
            else:
                logger.debug("$/progress for an unknown token %r dropped", token)
                return
        if callback is not None:
            callback(params)


def join_results(final: Any, partials: List[Any]) -> Any:
    """The whole result of a request that streamed ``partials`` before answering ``final``.

    Partial results of list-shaped answers (locations, symbols) are lists: the
    whole is their concatenation, followed by whatever the final answer still
    holds.  A server that streamed nothing leaves the answer as it is.
    """
    if not partials:
        return final
    pieces: List[Any] = []
    for partial in partials:
        if isinstance(partial, list):
            pieces.extend(partial)
        elif partial is not None:
            pieces.append(partial)
    if isinstance(final, list):
        pieces.extend(final)
    elif final is not None:
        return final  # not a list: the server answered in full after all
    return pieces


__all__ = [
    "CREATE_METHOD",
    "PROGRESS_METHOD",
    "ProgressCallback",
    "ProgressRouter",
    "ProgressToken",
    "Tokens",
    "join_results",
]
