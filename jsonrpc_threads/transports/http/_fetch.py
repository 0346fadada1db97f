"""A document the caller reads itself: one GET of the transport's URL, its JSON body handed over as bytes.

Theory of operation.  ``HttpTransport.fetch`` GETs the transport's URL (an
A2A agent's card, say) and returns the body; nothing goes to the sink and
nothing is decoded here:

- ``application/json``: the body, up to ``max_message_bytes``;
- an empty answer (``202``, ``204``, no body): ``b""``;
- a non-2xx status, a redirect (never followed) or another content type: the
  error (``_httpbase.errors``).

The GET runs on a thread of its own (``jsonrpc-http-fetch[<label>]``), so that
user code in ``auth`` and ``header_provider`` never holds up the caller: the
caller waits for the body until the deadline, and then the GET is stopped (its
socket shut down) and ``RequestTimeout`` raised; the thread ends once what
holds it returns.  Every socket read is bounded by the same deadline.
Closing the transport stops every fetch at once (``TransportClosed``).

Thread-safety: any number of fetches at once, from any threads.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Dict, List, Mapping, Optional

from ...errors import HttpError, JsonRpcError, RequestTimeout
from .._httpbase.endpoint import Endpoint
from .._httpbase.errors import DeadlinePassed, closed_error, excerpt, status_error
from .._httpbase.exchange import Exchange
from .._httpbase.reading import media_type, read_body, read_excerpt
from .._httpbase.settings import HttpSettings
from .._httpbase.wire import JSON_TYPE, SESSION_HEADER

logger = logging.getLogger(__name__)


class _Fetch:
    """One GET: its exchange, and what it brought (set on its thread, read once ``done`` is set)."""

    def __init__(self, endpoint: Endpoint, limit: int, exchange: Exchange) -> None:
        self.endpoint = endpoint
        self.limit = limit
        self.exchange = exchange
        self.done = threading.Event()
        self.body = b""
        self.error: Optional[JsonRpcError] = None
        self.closed = False  # the transport closed: the caller gets TransportClosed
        self.thread: Optional[threading.Thread] = None

    def run(self) -> None:
        """Carry the GET (the fetch's thread; never raises)."""
        try:
            self.body = self._get()
        except JsonRpcError as exc:
            self.error = exc
        except Exception as exc:  # a bug: never leave the caller waiting
            logger.exception("%s: unexpected failure of a GET", self.endpoint.label)
            self.error = HttpError(f"{self.endpoint.label}: unexpected failure: {type(exc).__name__}")
        finally:
            self.done.set()

    def _get(self) -> bytes:
        endpoint, exchange = self.endpoint, self.exchange
        if exchange.stopped:
            return b""
        headers = endpoint.headers(JSON_TYPE)
        if exchange.headers:
            headers.update(exchange.headers)
        response = endpoint.request("GET", headers, exchange)
        try:
            status = response.status_code
            if not 200 <= status < 300:
                body = read_excerpt(response, exchange)
                raise status_error(
                    endpoint.label,
                    status,
                    response.reason or "",
                    body,
                    sent_session=SESSION_HEADER in headers,
                    answers_ours=lambda item: False,
                )
            kind = media_type(response)
            if kind == JSON_TYPE:
                with endpoint.errors("reading the answer failed", exchange):
                    return read_body(response, exchange, self.limit)
            body = read_excerpt(response, exchange)
            if not body:
                return b""
            raise HttpError(
                f"{endpoint.label}: unexpected Content-Type {kind or 'none'!r} in a {status} answer",
                status_code=status,
                body_excerpt=excerpt(body),
            )
        finally:
            response.close()


class Fetches:
    """The GETs of one transport in progress: started here, stopped when it closes.  Thread-safe.

    Args:
        endpoint: the transport's endpoint.
        settings: the transport's settings (``max_message_bytes``, ``read_timeout``).
    """

    def __init__(self, endpoint: Endpoint, settings: HttpSettings) -> None:
        self._endpoint = endpoint
        self._settings = settings
        # _lock guards _open, _stopped and _closed.
        self._lock = threading.Lock()
        self._open: Dict[int, _Fetch] = {}
        self._stopped: List[threading.Thread] = []  # the threads of the GETs stop_all stopped
        self._closed = False

    def fetch(self, deadline: Optional[float], headers: Optional[Mapping[str, str]]) -> bytes:
        """GET on a thread of its own; the body (see the module docstring).

        Raises:
            RequestTimeout: the deadline passed first (the GET is stopped).
            TransportClosed: the transport is closed, or closed meanwhile.
            HttpConnectionError: the connection failed or broke.
            HttpError: a non-2xx answer, a redirect, another content type.
            MessageTooLarge: a body over ``max_message_bytes``.
        """
        started = time.monotonic()
        exchange = Exchange((), deadline, self._settings.read_timeout, headers)
        fetch = _Fetch(self._endpoint, self._settings.max_message_bytes, exchange)
        fetch.thread = threading.Thread(
            target=fetch.run, name=f"jsonrpc-http-fetch[{self._endpoint.label}]", daemon=True
        )
        with self._lock:
            if self._closed:
                raise closed_error()
            self._open[id(fetch)] = fetch
        try:
            fetch.thread.start()
            done = fetch.done.wait(None if deadline is None else max(0.0, deadline - time.monotonic()))
        finally:
            with self._lock:
                self._open.pop(id(fetch), None)
        if fetch.closed:
            raise closed_error()
        if not done or isinstance(fetch.error, DeadlinePassed):
            exchange.stop()  # the thread ends once what holds it (a blocking hook) returns
            raise _timeout(self._endpoint.label, deadline, started)
        if fetch.error is not None:
            raise fetch.error
        return fetch.body

    def stop_all(self) -> None:
        """Stop every GET in progress (its caller gets ``TransportClosed`` at once), and refuse new ones."""
        with self._lock:
            self._closed = True
            fetches = list(self._open.values())
            self._stopped = [f.thread for f in fetches if f.thread is not None]
        for fetch in fetches:
            fetch.closed = True
            fetch.exchange.stop()
            fetch.done.set()

    def join(self, deadline: float) -> None:
        """Wait (until ``deadline``) for the threads of the GETs stopped by ``stop_all``."""
        with self._lock:
            threads, self._stopped = self._stopped, []
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))


def _timeout(label: str, deadline: Optional[float], started: float) -> RequestTimeout:
    seconds = None if deadline is None else round(max(0.0, deadline - started), 3)
    error = RequestTimeout("GET", None, seconds)
    error.message = f"{label}: the answer did not end within {seconds}s"
    return error


__all__ = ["Fetches"]
