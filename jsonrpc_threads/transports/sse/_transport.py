"""SseTransport: the transport contract (``base``) over the legacy HTTP+SSE transport of MCP 2024-11-05.

Where each message runs:

- the event stream (a GET) runs on its own thread from ``SseTransport.start``
  on (``_stream``): it learns the POST URL from the ``endpoint`` event and
  delivers every message the server sends, responses included;
- a message with requests (``send`` with ids) is POSTed on the pool
  (``jsonrpc-sse-post[<label>]-N``), after waiting (until the requests'
  deadline) for the endpoint; ``send`` returns at once, and a refused POST
  fails those requests through the sink;
- a message without requests (a notification, an answer to the server) is
  POSTed on the caller's thread, and ``send`` returns once the server took it
  (202), never past its deadline.

Hooks (``auth``, ``header_provider``) run while a request is made, as in
``HttpTransport``: the GET on the
stream's thread, request POSTs on the pool; a notification's POST on a
sender thread (``jsonrpc-sse-send[<label>]-N``) while the caller waits with
its deadline.

Thread-safety: every method may be called from any number of threads.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from typing import Mapping, Optional, Sequence, Union

import requests.auth

from ...deadlines.timeouts import passed
from ...errors import HttpError, JsonRpcError, RequestId, RequestTimeout, TransportClosed
from ...runtime.workers import PoolClosed, WorkerPool
from .._httpbase.endpoint import Endpoint
from .._httpbase.errors import DeadlinePassed, check_message_headers, status_error
from .._httpbase.exchange import Exchange
from .._httpbase.hooks import HookSenders
from .._httpbase.reading import read_excerpt
from .._httpbase.settings import HeaderProvider, HttpSettings, check_url
from .._httpbase.sink import SinkCalls
from .._httpbase.wire import (
    ACCEPT_POST,
    CLOSE_JOIN_GRACE_S,
    DEFAULT_CONNECT_TIMEOUT_S,
    DEFAULT_MAX_MESSAGE_BYTES,
    DEFAULT_MAX_RESUMPTIONS,
    DEFAULT_MAX_WORKERS,
    DEFAULT_READ_TIMEOUT_S,
    HOOK_SEND_WORKERS,
    JSON_TYPE,
)
from ..base import MessageSink
from ..redact import url_label
from ._stream import EventStream, Owed

logger = logging.getLogger(__name__)

#: How long a message waits for the server's ``endpoint`` event when its own deadline is longer (or none).
ENDPOINT_WAIT_S = 30.0


class SseTransport:
    """The HTTP+SSE transport of MCP 2024-11-05: one GET event stream, and a POST per message.

    Thread-safe: ``send`` may be called from many threads at once,
    ``close`` from any thread, any number of times.  Received messages
    are delivered to the sink from the stream's thread (``jsonrpc-sse[<label>]``).

    Deadlines: ``send`` without request ids returns by its deadline
    whatever the server (and the hooks) do; a request waits for the endpoint
    event and its POST no longer than its own deadline (the client times it
    out then).  ``close`` is bounded.

    Args:
        url: the server's SSE endpoint (``http://`` or ``https://``), e.g.
            ``http://127.0.0.1:3001/sse``.
        headers: headers sent with every request (the GET and the POSTs).
        auth: a ``requests.auth.AuthBase`` applied to every request.
        header_provider: called before every request for more headers.
        connect_timeout: seconds to wait for a connection.
        read_timeout: seconds one socket read may wait; a stream silent for
            longer is taken as broken (and resumed when it can be).
        max_workers: threads posting requests; more requests queue.
        max_message_bytes: the largest event (message) accepted; a larger
            response fails its request with ``MessageTooLarge``.
        max_reconnects: resumptions of a broken stream in a row (only when
            the server gives event ids) before the transport ends.
        verify: TLS verification, as in ``requests``.
        sender: how requests go out: ``"direct"`` (the default) or
            ``"requests"``, as in ``HttpTransport``.

    Raises:
        ValueError: for a URL that is not ``http(s)://host...``, bad limits or
            an unknown ``sender``.

    Attributes:
        url: the stream's URL.
        label: the URL without credentials or query, for logs and thread names.
        settings: every keyword above, as one immutable
            ``HttpSettings`` (``max_reconnects``
            is its ``max_resumptions``; see ``from_settings``).
        revision: ``"2024-11-05"``, the MCP revision that defines this transport
            (the MCP layer reads it as a ``RevisionBound`` transport: MCP over
            it is the ``initialize`` handshake of the session era).
    """

    revision = "2024-11-05"

    def __init__(
        self,
        url: str,
        *,
        headers: Optional[Mapping[str, str]] = None,
        auth: Optional[requests.auth.AuthBase] = None,
        header_provider: Optional[HeaderProvider] = None,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT_S,
        read_timeout: float = DEFAULT_READ_TIMEOUT_S,
        max_workers: int = DEFAULT_MAX_WORKERS,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        max_reconnects: int = DEFAULT_MAX_RESUMPTIONS,
        verify: Union[bool, str] = True,
        sender: str = "direct",
    ) -> None:
        check_url(url)
        if max_reconnects < 0:
            raise ValueError("max_reconnects must be >= 0")
        self.settings = settings = HttpSettings(
            headers=headers or {},
            auth=auth,
            header_provider=header_provider,
            connect_timeout=connect_timeout,
            read_timeout=read_timeout,
            max_workers=max_workers,
            max_message_bytes=max_message_bytes,
            max_resumptions=max_reconnects,
            verify=verify,
            sender=sender,
        )
        self.url = url
        self.label = url_label(url)
        self._closing = threading.Event()
        # Connections for the pool, the stream, and the hook senders.
        self._endpoint = Endpoint(
            url, settings, pool_maxsize=max_workers + HOOK_SEND_WORKERS + 4, closing=self._closing
        )
        self._sink = SinkCalls(self.label, self._closing)
        self._owed = Owed()
        self._stream = EventStream(
            self._endpoint,
            self._sink,
            self._owed,
            max_message_bytes=max_message_bytes,
            max_reconnects=max_reconnects,
            read_timeout=read_timeout,
            on_end=self._stream_ended,
        )
        self._pool = WorkerPool(max_workers, f"jsonrpc-sse-post[{self.label}]")
        # Only with hooks that may block: where messages without requests are sent.
        self._hooks: Optional[HookSenders] = (
            HookSenders(self.label, f"jsonrpc-sse-send[{self.label}]", HOOK_SEND_WORKERS)
            if self._endpoint.runs_user_code
            else None
        )
        # _lock guards _closed and _started; _over is set once the stream ended for good.
        self._lock = threading.Lock()
        self._closed = False
        self._started = False
        self._over = False

    # -- Transport --------------------------------------------------------------------------

    def start(self, sink: MessageSink) -> None:
        """Remember the sink and open the event stream (on its own thread; returns at once).

        Raises:
            TransportClosed: when the transport was closed.
        """
        with self._lock:
            if self._closed:
                raise TransportClosed("HTTP+SSE transport closed")
            if self._started:
                return
            self._started = True
            self._sink.sink = sink
        self._stream.start()

    def send(
        self,
        data: bytes,
        request_ids: Sequence[RequestId] = (),
        *,
        deadline: Optional[float] = None,
        headers: Optional[Mapping[str, str]] = None,
    ) -> None:
        """POST one encoded message (or batch) to the server's endpoint.

        With ``request_ids`` the POST runs on the pool and this returns at
        once (the answers come on the stream; a refused POST fails them
        through the sink).  Without, it runs here and returns once the server
        took the message.  ``headers`` are sent with the POST.

        Raises:
            TransportClosed: the transport is closed (or not started), or its stream ended.
            RequestTimeout: (no ids) not taken by ``deadline``.
            HttpError: (no ids) the POST was refused; (any) a message header that is not valid HTTP.
            JsonRpcError: (no ids) the JSON-RPC error the server answered with.
        """
        if self._closed or self._over or self._sink.sink is None:
            raise TransportClosed(
                "HTTP+SSE transport not started" if self._sink.sink is None else "HTTP+SSE transport closed"
            )
        if headers:
            check_message_headers(self.label, headers)
        if request_ids:
            self._owed.add(request_ids)
            try:
                self._pool.submit(self._post_requests, data, tuple(request_ids), deadline, headers)
            except PoolClosed:
                self._owed.take_all()
                raise TransportClosed("HTTP+SSE transport closed") from None
            return
        started = time.monotonic()
        exchange = Exchange((), deadline, self.settings.read_timeout, headers)
        try:
            if self._hooks is None:
                self._post(exchange, data)
            else:
                self._hooks.run(exchange, functools.partial(self._post, exchange, data))
        except DeadlinePassed:
            raise _send_timeout(self.label, deadline, started) from None

    def release_in_fork(self) -> None:
        """In a process forked after the transport was made: close this process's copies of its sockets.

        (``SurvivesFork``.)  No socket is
        shut down (that would cut the parent's stream), no lock is taken.
        """
        self._closed = True
        self._endpoint.release_in_fork()

    def close(self) -> None:
        """Stop the stream and the pool, close every connection, tell the sink.  Idempotent; bounded."""
        with self._lock:
            first = not self._closed
            self._closed = True
        if not first:
            return
        self._closing.set()
        try:
            self._stream.stop()
            self._endpoint.shutdown_all()  # ends every read in progress
            self._pool.shutdown(CLOSE_JOIN_GRACE_S)
            if self._hooks is not None:
                self._hooks.shutdown(CLOSE_JOIN_GRACE_S)
            self._stream.join(CLOSE_JOIN_GRACE_S)
            self._endpoint.close()
        finally:
            self._sink.closed()

    @classmethod
    def from_settings(cls, url: str, settings: HttpSettings) -> SseTransport:
        """A transport to ``url`` made with ``settings`` (an ``HttpTransport``'s, for the same server, say).

        Raises:
            ValueError: for a URL that is not ``http(s)://host...``.
        """
        keywords = settings.keywords()
        keywords["max_reconnects"] = keywords.pop("max_resumptions")
        return cls(url, **keywords)

    @property
    def post_url(self) -> Optional[str]:
        """Where messages are POSTed, once the server's ``endpoint`` event named it."""
        return self._stream.post_url

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"<SseTransport {self.label} {state}>"

    # -- internals ----------------------------------------------------------------------------

    def _stream_ended(self, error: TransportClosed) -> None:
        """The stream is over for good: the transport is too (the sink fails what is pending)."""
        if not self._closing.is_set():
            logger.info("%s: %s", self.label, error.message)
        self._over = True
        self._sink.closed(error)

    def _post_requests(
        self,
        data: bytes,
        request_ids: Sequence[RequestId],
        deadline: Optional[float],
        headers: Optional[Mapping[str, str]],
    ) -> None:
        try:
            self._post(Exchange(request_ids, deadline, self.settings.read_timeout, headers), data)
        except DeadlinePassed:
            return  # the client times the requests out itself
        except JsonRpcError as exc:
            self._owed.strike(request_ids)
            self._sink.fail(request_ids, exc)

    def _post(self, exchange: Exchange, data: bytes) -> None:
        """POST ``data`` to the endpoint; raise if it was not taken."""
        deadline = exchange.deadline
        wait_until = time.monotonic() + ENDPOINT_WAIT_S
        if deadline is not None:
            wait_until = min(wait_until, deadline)
        try:
            target = self._stream.wait_endpoint(wait_until)
        except HttpError:
            if deadline is not None and passed(deadline):
                raise DeadlinePassed(f"{self.label}: the deadline passed before the endpoint event") from None
            raise
        request_headers = self._endpoint.headers(ACCEPT_POST)
        request_headers["Content-Type"] = JSON_TYPE
        if exchange.headers:
            request_headers.update(exchange.headers)
        response = self._endpoint.request("POST", request_headers, exchange, data=data, target=target)
        with response:
            status = response.status_code
            body = read_excerpt(response, exchange)  # the answer is on the stream; read what came, briefly
            if not 200 <= status < 300:
                raise status_error(
                    self.label, status, response.reason or "", body, sent_session=False, answers_ours=lambda _: False
                )


def _send_timeout(label: str, deadline: Optional[float], started: float) -> RequestTimeout:
    seconds = None if deadline is None else round(max(0.0, deadline - started), 3)
    error = RequestTimeout("POST", None, seconds)
    error.message = f"{label}: the server did not take the message within {seconds}s"
    return error


__all__ = ["ENDPOINT_WAIT_S", "SseTransport"]
