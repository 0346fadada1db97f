"""Where a transport whose hooks may block sends what must still end by a deadline.

``auth`` (any ``requests.auth.AuthBase``: OAuth may refresh a token, or wait
for the user in a browser) and ``header_provider`` are user code that runs
while a request is made, and Python cannot interrupt a thread.  So when a
transport has them, a message without requests (a notification, an answer
to the server) is posted on a thread of a small pool of its own
(``HOOK_SEND_WORKERS`` threads), and the sender waits for it no
longer than its deadline; the DELETE that ends a session goes the same way,
so ``close()`` stays bounded.  A hook still blocks the thread it runs on, but
the exchange is stopped at the deadline: once the hook returns, nothing is
sent.

Thread-safety: every method may be called from any thread.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Callable

from ...deadlines.timeouts import passed, wait_slice
from ...runtime.workers import PoolClosed, WorkerPool
from .errors import DeadlinePassed, closed_error
from .exchange import Exchange
from .wire import HOOK_SEND_WORKERS


class HookSenders:
    """The pool that sends, for a transport with hooks, what a caller waits for with a deadline.

    Args:
        label: the transport's label (for messages).
        thread_name: the name of the pool's threads (``<name>-N``).
        workers: threads in the pool.
    """

    def __init__(self, label: str, thread_name: str, workers: int = HOOK_SEND_WORKERS) -> None:
        self._label = label
        self._pool = WorkerPool(workers, thread_name)

    def run(self, exchange: Exchange, send: Callable[[], None]) -> None:
        """Run ``send()`` (which carries ``exchange``) on a sender thread; wait no longer than its deadline.

        Raises:
            DeadlinePassed: the deadline passed first (the exchange is stopped).
            TransportClosed: the transport closed.
            JsonRpcError: what ``send()`` raised.
        """
        outcome: Future[None] = Future()
        try:
            self._pool.submit(_run_into, send, outcome)
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
                        raise  # send() itself raised a TimeoutError
                    if passed(deadline):
                        break
        except BaseException:
            exchange.stop()
            raise
        exchange.stop()  # not sent once the hook returns, or its read ends now
        raise DeadlinePassed(f"{self._label}: the deadline passed while the request waited for its hooks")

    def run_briefly(self, work: Callable[[], None], wait: float) -> None:
        """Run ``work()`` (which never raises) on a sender thread, waiting at most ``wait`` seconds."""
        finished = threading.Event()
        try:
            self._pool.submit(_run_then_set, work, finished)
        except PoolClosed:
            return
        finished.wait(wait)

    def shutdown(self, grace: float) -> None:
        """Stop the pool; a thread stuck in a hook is left to end on its own (a daemon)."""
        self._pool.shutdown(grace)


def _run_into(send: Callable[[], None], outcome: Future[None]) -> None:
    try:
        send()
    except BaseException as exc:
        outcome.set_exception(exc)
    else:
        outcome.set_result(None)


def _run_then_set(work: Callable[[], None], finished: threading.Event) -> None:
    try:
        work()
    finally:
        finished.set()


__all__ = ["HookSenders"]
