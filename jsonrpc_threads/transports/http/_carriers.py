"""Where an HTTP transport's exchanges run: the pool, the caller's own thread, or the hook senders.

Theory of operation.  ``HttpTransport`` decides what a message is (requests
or not, a blocking call or not); ``Carriers`` puts its exchange on a thread
and keeps the exchanges in flight (``Inflight``), so that ``abandon`` and
``close`` reach every one of them:

- ``submit``: a POST carrying requests, on the pool
  (``jsonrpc-http[<label>]-N``); returns at once;
- ``drive``: a blocking call's POST on the caller's thread, as many callers
  at once as the pool has threads (``DirectCallers``); never when the
  transport has hooks that may block (``runs_user_code``);
- ``post``: a POST without requests, on the caller's thread, or on a hook
  sender while the caller waits with its deadline when hooks may block
  (``_httpbase.hooks``).

Thread-safety: every method may be called from any thread.
"""

from __future__ import annotations

import functools
import threading
import time
from typing import Callable, Optional, Sequence

from ...errors import RequestId
from ...runtime.workers import PoolClosed, WorkerPool
from .._httpbase.errors import closed_error
from .._httpbase.exchange import Exchange, Inflight
from .._httpbase.hooks import HookSenders
from .._httpbase.wire import HOOK_SEND_WORKERS
from ._post import Poster


class Carriers:
    """The threads that carry one transport's exchanges, and the exchanges in flight.  Thread-safe.

    Args:
        poster: what runs an exchange.
        label: the transport's label, for thread names.
        max_workers: the pool's threads, and the most callers exchanging on
            their own threads at once.
        runs_user_code: the transport has hooks (``auth``,
            ``header_provider``) that may block: exchanges never run on a
            thread that must be free by a deadline.
    """

    def __init__(self, poster: Poster, label: str, max_workers: int, runs_user_code: bool) -> None:
        self._poster = poster
        self._inflight = Inflight()
        self._pool = WorkerPool(max_workers, f"jsonrpc-http[{label}]")
        # Only with hooks that may block: where messages without requests are sent.
        self._hooks: Optional[HookSenders] = (
            HookSenders(label, f"jsonrpc-http-send[{label}]", HOOK_SEND_WORKERS) if runs_user_code else None
        )
        self._direct = DirectCallers(max_workers)

    @property
    def can_drive(self) -> bool:
        """False when the transport has hooks that may block: ``drive`` would always decline."""
        return self._hooks is None

    def submit(self, exchange: Exchange, data: bytes) -> None:
        """Carry a POST with requests on the pool; returns at once.

        Raises:
            TransportClosed: the pool is shut down (nothing was sent).
        """
        self._inflight.add(exchange)
        try:
            self._pool.submit(self._carry_on_pool, exchange, data)
        except PoolClosed:
            self._inflight.remove(exchange)
            raise closed_error() from None

    def drive(self, exchange: Exchange, data: bytes) -> bool:
        """Carry a blocking call's POST on the calling thread; False, having sent nothing, when full.

        Raises: nothing of its own (failures go to the sink, as on the pool).
        """
        direct = self._direct
        if not direct.enter():
            return False
        self._inflight.add(exchange)
        try:
            self._poster.carry(exchange, data)
        finally:
            self._inflight.remove(exchange)
            direct.leave()
        return True

    def post(self, exchange: Exchange, data: bytes) -> None:
        """A POST without requests, until the server accepted it (on a hook sender when hooks may block).

        Raises:
            DeadlinePassed: the exchange's deadline passed first.
            JsonRpcError: as ``Poster.post``.
        """
        if self._hooks is None:
            self._poster.post(exchange, data)
        else:
            self._hooks.run(exchange, functools.partial(self._poster.post, exchange, data))

    def run_briefly(self, step: Callable[[], None], timeout: float) -> None:
        """Run a step that may call the hooks (the DELETE at close): here, or on a hook sender, waiting ``timeout``."""
        if self._hooks is None:
            step()
        else:
            self._hooks.run_briefly(step, timeout)

    def abandon(self, request_ids: Sequence[RequestId]) -> None:
        """Stop the exchanges all of whose unanswered requests are abandoned.  Never blocks."""
        self._inflight.abandon(request_ids)

    def in_worker(self) -> bool:
        """True on one of the pool's threads."""
        return self._pool.in_worker()

    def stop_all(self) -> None:
        """Stop every exchange in flight (at close).  Never blocks."""
        self._inflight.stop_all()

    def shutdown(self, grace: float) -> float:
        """Join the pool and the hook senders, and wait for the direct callers, each within ``grace``.

        Returns:
            The deadline (monotonic) the waits after the pool's join share.
        """
        self._pool.shutdown(grace)
        deadline = time.monotonic() + grace
        if self._hooks is not None:
            self._hooks.shutdown(grace)
        self._direct.wait_idle(deadline)
        return deadline

    def _carry_on_pool(self, exchange: Exchange, data: bytes) -> None:
        try:
            if not (exchange.stopped or exchange.past_deadline()):  # else nobody waits for it any more
                self._poster.carry(exchange, data)
        finally:
            self._inflight.remove(exchange)


class DirectCallers:
    """Callers running their call's exchange on their own thread (``drive``): how many, at most.

    Args:
        limit: the most at once (more callers use the pool).
    """

    def __init__(self, limit: int) -> None:
        self._limit = limit
        # _lock guards _count; _idle is notified when it drops to 0.
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._count = 0
        self._local = threading.local()  # .active: this thread is inside drive_call

    def enter(self) -> bool:
        """Count the calling thread in; False when full (or it is in already)."""
        local = self._local
        with self._lock:
            if self._count >= self._limit or getattr(local, "active", False):
                return False
            self._count += 1
        local.active = True
        return True

    def leave(self) -> None:
        self._local.active = False
        with self._lock:
            self._count -= 1
            if not self._count:
                self._idle.notify_all()

    def wait_idle(self, deadline: float) -> None:
        """Wait (until ``deadline``) for the other direct callers, their reads interrupted."""
        mine = 1 if getattr(self._local, "active", False) else 0
        with self._lock:
            while self._count > mine:
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                self._idle.wait(left)


__all__ = ["Carriers", "DirectCallers"]
