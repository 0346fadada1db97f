"""HttpTransport: the transport contract (``base``) over MCP Streamable HTTP.

Where each message runs:

- a POST carrying requests (``send`` with ids) runs on the pool
  (``jsonrpc-http[<label>]-N``), bounded by the requests' deadline; ``send``
  returns at once and failures reach ``sink.requests_failed`` for those ids;
- a blocking call (``drive_call``) runs its POST on the caller's thread, every
  socket read bounded by its deadline: no hand-off to a pool thread and back;
- a POST without requests (a notification, our answer to a server request)
  runs on the caller's thread, and ``send`` returns once the server accepted
  it, so ``notifications/initialized`` is on the server before the first
  request that follows it; never past the send's deadline.

Hooks.  Python cannot interrupt a thread, and ``auth`` (any
``requests.auth.AuthBase``: OAuth may refresh a token, or ask the user in a
browser) and ``header_provider`` are user code that may block.  So a
transport that has them never runs an exchange on a thread that must be free
by a deadline: ``drive_call`` declines (the call's POST runs on the pool and
the caller waits with its deadline), and a POST without requests runs on a
sender thread while the caller waits with its deadline (``_httpbase.hooks``).  A
hook still blocks the thread it runs on, but once it returns, an exchange
that nobody waits for any more is not sent.  The price is the pool hop:
measured against the benchmarks' echo server on loopback, a blocking call
with a trivial ``AuthBase`` takes about 655 us, against 525-545 us on the
caller's thread.  ``requests``' own basic credentials (``HTTPBasicAuth``, a
``.netrc`` entry) are not hooks: they only set a header, and keep the fast path.

Abandonment.  When the client settles requests itself (timeout,
``Future.cancel()``) it calls ``HttpTransport.abandon``; once every
request an exchange carries is abandoned, the exchange stops: its socket is
shut down, so the read ends at once and the pool thread is free for the next
request, and it is never resumed (``_httpbase.exchange``).

Which thread carries each exchange is ``_carriers``; the listen streams are
``_listen``'s.

Thread-safety: every method may be called from any number of threads.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from typing import Callable, Mapping, Optional, Sequence, Union

import requests.auth

from ...errors import RequestId, RequestTimeout, TransportClosed
from .._httpbase.endpoint import Endpoint
from .._httpbase.errors import DeadlinePassed, check_message_headers, closed_error
from .._httpbase.exchange import Exchange
from .._httpbase.settings import HeaderProvider, HttpSettings, check_url
from .._httpbase.sink import SinkCalls
from .._httpbase.wire import (
    CLOSE_JOIN_GRACE_S,
    CLOSE_WAIT_S,
    DEFAULT_CONNECT_TIMEOUT_S,
    DEFAULT_MAX_MESSAGE_BYTES,
    DEFAULT_MAX_RESUMPTIONS,
    DEFAULT_MAX_WORKERS,
    DEFAULT_READ_TIMEOUT_S,
    DELETE_TIMEOUT_S,
    HOOK_SEND_WORKERS,
)
from ..base import MessageSink
from ..redact import url_label
from ._carriers import Carriers
from ._fetch import Fetches
from ._listen import Listens
from ._post import Poster
from ._session import SessionState, delete_session

logger = logging.getLogger(__name__)


class HttpTransport:
    """MCP Streamable HTTP: one POST per message, JSON or SSE answers, sessions.

    Thread-safe: ``send``, ``drive_call`` and ``abandon`` may be
    called from many threads at once; ``close``, ``reset_session``
    and ``open_listen_stream`` from any thread.  Received messages are
    delivered to the sink from the pool's threads (``jsonrpc-http[<label>]-N``),
    the listen thread (``jsonrpc-http-listen[<label>]``), or the thread that
    runs the exchange (a blocking call's, a notification's).

    Deadlines: a blocking call returns by its deadline whatever the server
    does (and whatever ``auth`` and ``header_provider`` do: see the module
    docstring), and so does ``send`` without request ids.  A request
    that times out or is cancelled frees the thread that carried it at once.

    Proxies (``HTTP_PROXY``, ``HTTPS_PROXY``, ``ALL_PROXY``, ``NO_PROXY``), the
    CA bundle variables (``REQUESTS_CA_BUNDLE``, ``CURL_CA_BUNDLE``, when
    ``verify`` is True) and ``~/.netrc`` credentials (when ``auth`` is None)
    are taken from the environment as ``requests`` takes them, but once, when
    the transport is made: a later change applies to transports made after it.

    Args:
        url: the server's MCP endpoint (``http://`` or ``https://``).
        headers: headers sent with every request.
        auth: a ``requests.auth.AuthBase`` applied to every request (e.g.
            ``jsonrpc_threads.auth.OAuth``).
        header_provider: called before every request for more headers (fresh
            tokens); what it returns wins over ``headers``.
        connect_timeout: seconds to wait for a connection.
        read_timeout: seconds one socket read may wait for data.  A silent SSE
            stream past it is treated as broken (and resumed when it can be).
        max_workers: threads carrying requests; more requests queue.  As many
            blocking calls again run their exchange on their own threads.
        max_message_bytes: the largest JSON body or SSE event accepted.
        max_resumptions: GETs, in all, one request's broken SSE stream may
            make to resume; also the failed GETs in a row after which the
            listen stream is given up.
        verify: TLS verification, as in ``requests`` (a bool or a CA bundle path).
        sender: how requests go out, a performance strategy (see "Strategies"
            in ``docs/internals.md``): ``"direct"`` (the default) prepares and
            sends each request straight through the session's adapter, doing
            once what ``requests`` redoes per request (merged settings, the
            pool's lookup), and writes a request's head and small body in one
            system call; a URL a proxy serves goes the plain way anyway.
            ``"requests"``: the plain one, the reference the same tests run:
            ``Session.prepare_request`` and ``Session.send`` as they are.

    Raises:
        ValueError: for a URL that is not ``http(s)://host...``, bad limits or
            an unknown ``sender``.

    Attributes:
        url: the endpoint.
        label: the URL without credentials or query, used in logs and thread names.
        settings: every keyword above, as one immutable
            ``HttpSettings`` (see ``from_settings``).
    """

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
        max_resumptions: int = DEFAULT_MAX_RESUMPTIONS,
        verify: Union[bool, str] = True,
        sender: str = "direct",
    ) -> None:
        check_url(url)
        self.settings = settings = HttpSettings(
            headers=headers or {},
            auth=auth,
            header_provider=header_provider,
            connect_timeout=connect_timeout,
            read_timeout=read_timeout,
            max_workers=max_workers,
            max_message_bytes=max_message_bytes,
            max_resumptions=max_resumptions,
            verify=verify,
            sender=sender,
        )
        self.url = url
        self.label = url_label(url)
        self._closing = threading.Event()
        self._close_done = threading.Event()
        self._session = SessionState(self.label)
        self._endpoint = Endpoint(
            url,
            settings,
            # Connections for the pool, as many direct callers, and the hook senders.
            pool_maxsize=2 * max_workers + HOOK_SEND_WORKERS + 4,
            closing=self._closing,
            add_headers=self._session.add_headers,
        )
        self._sink = SinkCalls(self.label, self._closing)
        poster = Poster(
            self._endpoint,
            self._session,
            self._sink,
            max_message_bytes=max_message_bytes,
            max_resumptions=max_resumptions,
        )
        self._carriers = Carriers(poster, self.label, max_workers, self._endpoint.runs_user_code)
        self._fetches = Fetches(self._endpoint, settings)  # the GETs whose body fetch() hands to callers
        self._listens = Listens(
            self._endpoint,
            self._sink,
            max_message_bytes=max_message_bytes,
            max_failures=max_resumptions,
            read_timeout=read_timeout,
        )
        # _lock guards _closed.
        self._lock = threading.Lock()
        self._closed = False

    # -- Transport ------------------------------------------------------------------------

    def start(self, sink: MessageSink) -> None:
        """Remember the sink.  No connection is made until the first ``send``.

        Raises:
            TransportClosed: when the transport was closed.
        """
        with self._lock:
            if self._closed:
                raise closed_error()
            self._sink.sink = sink

    def send(
        self,
        data: bytes,
        request_ids: Sequence[RequestId] = (),
        *,
        deadline: Optional[float] = None,
        headers: Optional[Mapping[str, str]] = None,
    ) -> None:
        """POST one encoded message (or batch).

        ``headers``: the message's own headers (MCP's ``Mcp-Method`` and the
        like, computed by the layer above), sent with this POST after the
        transport's own; a name or value that is not a valid HTTP header
        fails the message at once.

        With ``request_ids``, the POST runs on the pool and this returns at
        once; ``deadline`` is the requests' own (past it the exchange ends,
        and reports nothing: the client times them out); failures reach
        ``sink.requests_failed`` for those ids.  Without (a notification or a
        response), the POST runs here (on the hook senders' pool when hooks
        may block) and this returns once the server accepted it, never past
        ``deadline``.

        Raises:
            TransportClosed: when the transport is closed (or not started).
            RequestTimeout: (no ids) the server did not accept it by ``deadline``
                (it may still arrive: the POST was under way).
            SessionExpired: (no ids) 404 to a message that carried a session id.
            HttpConnectionError: (no ids) the connection failed or timed out.
            HttpError: (no ids) any other non-2xx answer, a redirect, or an
                answer with an unexpected content type; (with or without ids)
                a message header that is not valid HTTP.
            JsonRpcError: (no ids) the JSON-RPC error the server answered with.
            MessageTooLarge: (no ids) an answer above ``max_message_bytes``.
        """
        if self._closed or self._sink.sink is None:
            raise TransportClosed("HTTP transport closed" if self._closed else "HTTP transport not started")
        if headers:
            check_message_headers(self.label, headers)
        if request_ids:
            self._carriers.submit(Exchange(request_ids, deadline, self.settings.read_timeout, headers), data)
            return
        started = time.monotonic()
        try:
            self._carriers.post(Exchange((), deadline, self.settings.read_timeout, headers), data)
        except DeadlinePassed:
            raise _send_timeout(self.label, deadline, started) from None

    def drive_call(
        self,
        data: bytes,
        request_id: RequestId,
        done: Callable[[], bool],
        deadline: Optional[float],
        headers: Optional[Mapping[str, str]] = None,
    ) -> bool:
        """The ``DrivesCalls`` capability: run a call's POST on the calling thread.

        Everything received is delivered to the sink as the pool would deliver
        it (server requests and progress while the answer streams in);
        failures go to ``sink.requests_failed``.  The connection attempt,
        every socket read (each also bounded by ``read_timeout``) and every
        wait before resuming a stream end by ``deadline``, and the exchange is
        then abandoned without reporting anything (the client times the call
        out): the caller is free at its deadline.  ``close`` interrupts it.

        Returns:
            True once the exchange is over; False, having sent nothing, when
            it cannot run here: the transport has hooks that may block (see
            the module docstring), as many callers as ``max_workers`` are
            exchanging directly already, or the deadline has passed.

        Raises:
            TransportClosed: when the transport is closed (or not started);
                nothing was sent.
            HttpError: a message header that is not valid HTTP (nothing sent).
        """
        carriers = self._carriers
        if not carriers.can_drive or (deadline is not None and deadline <= time.monotonic()):
            return False
        if self._closed or self._sink.sink is None:
            raise TransportClosed("HTTP transport closed" if self._closed else "HTTP transport not started")
        if headers:
            check_message_headers(self.label, headers)
        return carriers.drive(Exchange((request_id,), deadline, self.settings.read_timeout, headers), data)

    def abandon(self, request_ids: Sequence[RequestId]) -> None:
        """The ``AbandonsRequests`` capability: the client settled these requests.

        An exchange all of whose unanswered requests are abandoned stops at
        once: its socket is shut down (freeing the thread that read it) and it
        is never resumed.  Returns at once; never blocks.
        """
        self._carriers.abandon(request_ids)

    def release_in_fork(self) -> None:
        """In a process forked after the transport was made: close this process's copies of its sockets.

        (``SurvivesFork``.)  No DELETE
        (the session is the parent's), no socket shutdown (it would cut the
        parent's connections), no lock taken.
        """
        self._closed = True
        self._endpoint.release_in_fork()

    def close(self) -> None:
        """End the session (DELETE), stop every thread and connection, tell the sink.

        Idempotent and thread-safe; bounded in time (``DELETE_TIMEOUT_S`` for
        the DELETE, ``CLOSE_JOIN_GRACE_S`` for the threads, whose reads are
        interrupted).  A second caller waits for the first (bounded).
        ``sink.transport_closed`` is called once.
        """
        with self._lock:
            first = not self._closed
            self._closed = True
        carriers = self._carriers
        if not first:
            if not carriers.in_worker():
                self._close_done.wait(CLOSE_WAIT_S)
            return
        self._closing.set()
        try:
            self._listens.close()
            session_id = self._session.end()
            if session_id is not None:
                carriers.run_briefly(
                    functools.partial(delete_session, self._endpoint, session_id), 2 * DELETE_TIMEOUT_S
                )
            carriers.stop_all()
            self._fetches.stop_all()
            self._endpoint.shutdown_all()  # ends every read in progress
            deadline = carriers.shutdown(CLOSE_JOIN_GRACE_S)
            self._fetches.join(deadline)
            self._listens.join(deadline)
            self._endpoint.close()
        finally:
            self._sink.closed()
            self._close_done.set()

    # -- SessionTransport --------------------------------------------------------------------

    @property
    def protocol_version(self) -> Optional[str]:
        """When set, sent as ``MCP-Protocol-Version`` on every request (the MCP layer sets it after ``initialize``)."""
        return self._session.protocol_version

    @protocol_version.setter
    def protocol_version(self, value: Optional[str]) -> None:
        self._session.protocol_version = value

    @property
    def session_id(self) -> Optional[str]:
        """The ``Mcp-Session-Id`` the server assigned, or ``None``."""
        return self._session.session_id

    @property
    def stateless(self) -> bool:
        """The stateless revision (2026-07-28) of Streamable HTTP: no session, no listen stream, no resumption.

        Set by the MCP layer before its first request (see
        ``SessionTransport``); setting it
        forgets a session id taken before.
        """
        return self._session.stateless

    @stateless.setter
    def stateless(self, value: bool) -> None:
        self._session.stateless = bool(value)
        if value:
            self.reset_session()

    @property
    def listening(self) -> bool:
        """True while the GET stream opened by ``open_listen_stream`` is running."""
        return self._listens.running

    def reset_session(self) -> None:
        """Forget the session id (and stop the listen stream), to start a new session.

        The next request goes out without ``Mcp-Session-Id``; the MCP layer
        sends ``initialize`` again.  No DELETE is sent: the old session is
        usually gone already.
        """
        self._session.reset()
        self._listens.reset()

    def open_listen_stream(self, *, wait: Optional[float] = None) -> None:
        """Open the GET stream on which the server may send requests and notifications.

        Runs in its own daemon thread; messages go to the sink (see
        ``_listen`` for how it reconnects).  A server without one (405) is
        fine: the thread ends, logged at debug level.  Does nothing while a
        listen stream is running; ``close`` and ``reset_session`` stop it.

        Args:
            wait: seconds to wait for the server's answer to the first GET (the
                stream open, or refused), so that what the server sends there
                right after is not lost; ``None`` returns at once.

        Raises:
            TransportClosed: when the transport is closed or not started.
        """
        if self.stateless:
            logger.debug("%s: no listen stream in the stateless revision", self.label)
            return
        if self._closed or self._sink.sink is None:
            raise TransportClosed("HTTP transport closed" if self._closed else "HTTP transport not started")
        answered = self._listens.open()
        if wait is not None:
            answered.wait(wait)

    def fetch(self, *, deadline: Optional[float] = None, headers: Optional[Mapping[str, str]] = None) -> bytes:
        """GET the transport's URL; its JSON body, as bytes (``b""`` for none): a document, not a message.

        Nothing goes to the sink.  The GET runs on a thread of its own and the
        caller waits for it until ``deadline`` (so a blocking ``auth`` or
        ``header_provider`` never holds it longer; see ``_fetch``).  Needs no
        ``start``; ``close`` stops it.

        Raises:
            RequestTimeout: the deadline passed first.
            TransportClosed: the transport is closed (or closed meanwhile).
            HttpConnectionError: the connection failed, timed out or broke.
            HttpError: a non-2xx answer, a redirect, another content type, or
                a header that is not valid HTTP.
            MessageTooLarge: a body over ``max_message_bytes``.
        """
        if headers:
            check_message_headers(self.label, headers)
        return self._fetches.fetch(deadline, headers)

    @classmethod
    def from_settings(cls, url: str, settings: HttpSettings) -> HttpTransport:
        """A transport to ``url`` made with ``settings`` (another transport's ``settings``, say).

        Raises:
            ValueError: for a URL that is not ``http(s)://host...``.
        """
        return cls(url, **settings.keywords())

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"<HttpTransport {self.label} {state}>"


def _send_timeout(label: str, deadline: Optional[float], started: float) -> RequestTimeout:
    """What ``send`` without ids raises when its deadline passed first."""
    seconds = None if deadline is None else round(max(0.0, deadline - started), 3)
    error = RequestTimeout("POST", None, seconds)
    error.message = f"{label}: the server did not accept the message within {seconds}s"
    return error


__all__ = ["HttpTransport"]
