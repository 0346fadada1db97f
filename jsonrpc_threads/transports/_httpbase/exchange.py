"""One exchange (a request and its answer, resumptions included), and how it ends early.

Theory of operation.  Every HTTP request a transport makes belongs to one
``Exchange``, carried on one thread from start to end: a POST and its
answer (on a pool thread, or the caller's own thread for a blocking call), or
a long-lived event stream (the listen stream, the legacy transport's stream,
on their own threads).  It knows

- the requests it carries (``unanswered``: struck off as their responses
  pass by, the sink telling which ids a delivered message answered, so a
  stream that owes nothing more is left at once, and a broken one is resumed
  only while it still owes something);
- its deadline (the request's, from the client): every connection attempt,
  socket read and wait before a resumption ends by then (``time_left``).

An exchange ends early when it is *stopped* (``Exchange.stop``): every
request it carries was abandoned by the client (settled locally: timeout,
``Future.cancel()``), or the transport closes.  Stopping never blocks: it
shuts down the socket of the connection the exchange is using (attached to
it by ``connections``), so a read in progress ends at once; a wait before
a resumption wakes; a connection made later is shut down as it attaches; and
nothing is sent after an ``auth`` hook returns.  A stopped exchange reports
nothing: the client has settled its requests already.

``Inflight`` finds the exchange of a request id for
``abandon``.

Thread-safety: an exchange is read and advanced by the thread carrying it;
``Exchange.abandon``, ``Exchange.stop``, ``Exchange.attach`` and
``Exchange.detach`` may be called from any thread (one small lock).
"""

from __future__ import annotations

import socket
import threading
import time
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Set, Tuple

from ...errors import RequestId
from ...messages import is_valid_id
from .connections import shutdown_socket, socket_of


class Exchange:
    """The state of one exchange; see the module docstring.

    Args:
        request_ids: the requests inside the POST (none for a notification,
            a response, or a long-lived stream).
        deadline: on the ``time.monotonic`` clock, or ``None``.
        read_timeout: the longest one socket read may wait.
        headers: the message's own headers (from the layer above), sent with
            its POST only (never with a GET that resumes its stream).
    """

    __slots__ = (
        "_abandoned",
        "_connection",
        "_lock",
        "_wake",
        "deadline",
        "had_ids",
        "headers",
        "read_timeout",
        "request_ids",
        "stopped",
        "unanswered",
    )

    def __init__(
        self,
        request_ids: Sequence[RequestId],
        deadline: Optional[float],
        read_timeout: float,
        headers: Optional[Mapping[str, str]] = None,
    ) -> None:
        self.request_ids = tuple(request_ids)
        self.headers = headers
        # _lock guards unanswered, _abandoned, stopped, _connection and _wake.
        self._lock = threading.Lock()
        self.unanswered: Set[RequestId] = set(self.request_ids)
        self._abandoned: Set[RequestId] = set()
        # A stream that answers requests is done once all are answered; one that
        # answers a notification (or a long-lived stream) is read to its end.
        self.had_ids = bool(self.unanswered)
        self.deadline = deadline
        self.read_timeout = read_timeout
        self.stopped = False
        self._connection: Any = None
        self._wake: Optional[threading.Event] = None  # made when a resumption first waits

    # -- the deadline --------------------------------------------------------------------

    def past_deadline(self) -> bool:
        deadline = self.deadline
        return deadline is not None and time.monotonic() >= deadline

    def time_left(self) -> Optional[float]:
        """Seconds to the deadline (``None`` without one).

        Raises:
            socket.timeout: the deadline has passed.
        """
        deadline = self.deadline
        if deadline is None:
            return None
        left = deadline - time.monotonic()
        if left <= 0:
            raise socket.timeout("the exchange's deadline passed")
        return left

    def bound_next_read(self, response: Any) -> None:
        """Let the next socket read of ``response`` wait no longer than the deadline allows.

        Raises:
            socket.timeout: the deadline has passed.
        """
        left = self.time_left()
        if left is None:
            return
        sock = socket_of(getattr(response.raw, "connection", None))
        if sock is not None:
            sock.settimeout(min(self.read_timeout, left))

    def wait(self, delay: float) -> bool:
        """Sleep ``delay`` seconds unless stopped first; True when stopped."""
        with self._lock:
            if self.stopped:
                return True
            wake = self._wake
            if wake is None:
                wake = self._wake = threading.Event()
        return wake.wait(delay)

    # -- answers -----------------------------------------------------------------------

    @property
    def done(self) -> bool:
        """True once every request it carried was answered."""
        return self.had_ids and not self.unanswered

    def answered(self, request_ids: Sequence[RequestId]) -> None:
        """Strike the requests a delivered message answered (the ids the sink returned)."""
        if request_ids and self.unanswered:
            with self._lock:
                self.unanswered.difference_update(request_ids)

    def strike(self, request_id: Any) -> bool:
        """Strike ``request_id`` if this exchange still owes its answer; True if it did."""
        if not is_valid_id(request_id):
            return False
        with self._lock:
            if request_id in self.unanswered:
                self.unanswered.discard(request_id)
                return True
        return False

    def owed(self) -> List[RequestId]:
        """The requests still unanswered and not abandoned, in a stable order."""
        with self._lock:
            return sorted(self.unanswered - self._abandoned, key=str)

    # -- ending early (any thread) ---------------------------------------------------------

    def abandon(self, request_ids: Iterable[RequestId]) -> None:
        """The client settled these requests itself; stop once none is owed to anyone."""
        with self._lock:
            self._abandoned.update(request_ids)
            if not self.unanswered <= self._abandoned:
                return
        self.stop()

    def stop(self) -> None:
        """End the exchange now: its socket is shut down, its waits wake.  Never blocks."""
        with self._lock:
            if self.stopped:
                return
            self.stopped = True
            connection = self._connection
            if connection is not None:
                # Under the lock: the connection cannot go back to its pool (and
                # on to another exchange) before it is shut down.
                shutdown_socket(socket_of(connection))
            wake = self._wake
        if wake is not None:
            wake.set()

    def attach(self, connection: Any) -> None:
        """``connection`` carries this exchange now (from ``connections``).

        Raises:
            ConnectionAbortedError: the exchange was stopped (the connection is shut down).
        """
        with self._lock:
            if not self.stopped:
                self._connection = connection
                return
        shutdown_socket(socket_of(connection))
        raise ConnectionAbortedError("the exchange was abandoned")

    def detach(self, connection: Any) -> None:
        """``connection`` went back to its pool."""
        with self._lock:
            if self._connection is connection:
                self._connection = None


class Inflight:
    """The exchanges carrying requests, by request id.  Thread-safe; nothing here blocks."""

    def __init__(self) -> None:
        # _lock guards _by_id and _closed.
        self._lock = threading.Lock()
        self._by_id: Dict[RequestId, Exchange] = {}
        self._closed = False

    def add(self, exchange: Exchange) -> None:
        """Track ``exchange``; after ``stop_all`` it is stopped at once."""
        with self._lock:
            if not self._closed:
                for request_id in exchange.request_ids:
                    self._by_id[request_id] = exchange
                return
        exchange.stop()

    def remove(self, exchange: Exchange) -> None:
        by_id = self._by_id
        with self._lock:
            for request_id in exchange.request_ids:
                if by_id.get(request_id) is exchange:
                    del by_id[request_id]

    def abandon(self, request_ids: Sequence[RequestId]) -> None:
        """The client settled these requests: their exchanges stop once they owe nobody."""
        found: Dict[int, Tuple[Exchange, List[RequestId]]] = {}
        with self._lock:
            for request_id in request_ids:
                exchange = self._by_id.pop(request_id, None)
                if exchange is not None:
                    found.setdefault(id(exchange), (exchange, []))[1].append(request_id)
        for exchange, ids in found.values():
            exchange.abandon(ids)

    def stop_all(self) -> None:
        """Stop every exchange, and every one added from now on."""
        with self._lock:
            self._closed = True
            exchanges = {id(exchange): exchange for exchange in self._by_id.values()}
            self._by_id.clear()
        for exchange in exchanges.values():
            exchange.stop()


__all__ = ["Exchange", "Inflight"]
