"""Where a transport whose hooks may block sends what must still end by a deadline.

``auth`` (any ``requests.auth.AuthBase``: OAuth may refresh a token, or wait
for the user in a browser) and ``header_provider`` are user code that runs
while a request is made, and Python cannot interrupt a thread.  So when a
transport has them, a message without requests (a notification, an answer
to the server) is posted on a thread of a small pool of its own
(``jsonrpc-http-send[<label>]-N``, :data:`~._wire.HOOK_SEND_WORKERS` threads),
and the sender waits for it no longer than its deadline; the DELETE that ends
the session goes the same way, so ``close()`` stays bounded.  A hook still
blocks the thread it runs on, but the exchange is stopped at the deadline:
once the hook returns, nothing is sent.

Thread-safety: every method may be called from any thread.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout

from ..._deadlines import passed, wait_slice
from ..._workers import PoolClosed, WorkerPool
from ._endpoint import Endpoint
from ._errors import DeadlinePassed, closed_error
from ._exchange import Exchange
from ._post import Poster
from ._session import delete_session
from ._wire import DELETE_TIMEOUT_S, HOOK_SEND_WORKERS


class HookSenders:
    """The pool that posts messages without requests, and DELETEs, for a transport with hooks.

    Args:
        label: the transport's label (thread names, messages).
        poster: how an exchange is run.
        endpoint: where the DELETE goes.
        workers: threads in the pool.
    """

    def __init__(self, label: str, poster: Poster, endpoint: Endpoint, workers: int = HOOK_SEND_WORKERS) -> None:
        self._label = label
        self._poster = poster
        self._endpoint = endpoint
        self._pool = WorkerPool(workers, f"jsonrpc-http-send[{label}]")

    def post(self, exchange: Exchange, data: bytes) -> None:
        """Post on a sender thread; wait no longer than the exchange's deadline.

        Raises:
            DeadlinePassed: the deadline passed first (the exchange is stopped).
            TransportClosed: the transport closed.
            JsonRpcError: what the POST raised (see ``Poster.post``).
        """
        outcome: Future[None] = Future()
        try:
            self._pool.submit(_post_into, self._poster, exchange, data, outcome)
        except PoolClosed:
            raise closed_error() from None
        deadline = exchange.deadline
        try:
            while True:
                try:
                    outcome.result(wait_slice(deadline))
                    return
                except FutureTimeout:
                    if outcome.done():
                        raise  # the POST itself raised a TimeoutError
                    if passed(deadline):
                        break
        except BaseException:
            exchange.stop()
            raise
        exchange.stop()  # not sent once the hook returns, or its read ends now
        raise DeadlinePassed(f"{self._label}: the deadline passed while the POST waited for its hooks")

    def delete_session(self, session_id: str) -> None:
        """DELETE the session on a sender thread, waiting at most twice ``DELETE_TIMEOUT_S``."""
        finished = threading.Event()
        try:
            self._pool.submit(_delete_then_set, self._endpoint, session_id, finished)
        except PoolClosed:
            return
        finished.wait(2 * DELETE_TIMEOUT_S)

    def shutdown(self, grace: float) -> None:
        """Stop the pool; a thread stuck in a hook is left to end on its own (a daemon)."""
        self._pool.shutdown(grace)


def _post_into(poster: Poster, exchange: Exchange, data: bytes, outcome: Future[None]) -> None:
    try:
        poster.post(exchange, data)
    except BaseException as exc:
        outcome.set_exception(exc)
    else:
        outcome.set_result(None)


def _delete_then_set(endpoint: Endpoint, session_id: str, finished: threading.Event) -> None:
    try:
        delete_session(endpoint, session_id)
    finally:
        finished.set()


__all__ = ["HookSenders"]
