"""The Streamable HTTP transport of MCP (revision 2025-11-25), over ``requests``.

Theory of operation.  Every message the client sends is one POST to the
server's URL, with ``Accept: application/json, text/event-stream``.  The server
answers in one of three ways, and this module handles each without knowing
what the messages mean (it never reads a method name):

- ``application/json``: the body is one message (or a batch) for the sink;
- ``text/event-stream``: a stream of SSE events, each one's data a message,
  delivered to the sink as it arrives; requests and notifications from the
  server (progress, sampling) come before the response, while the caller waits;
- ``202 Accepted`` with no body: the answer to notifications and responses.

A POST that carries requests runs on a small pool of daemon threads, so many
are in flight at once and a slow answer never holds back a fast one; ``send``
returns at once and failures come back through ``sink.requests_failed`` for
exactly those ids.  A blocking call skips the pool: ``exchange_directly`` runs
the same exchange on the caller's thread (no hand-off to a pool thread and
back), with every socket read bounded by the call's deadline, so a stalled
server frees the caller when its call times out.  A POST without requests (a
notification, or our answer to a server request) runs on the caller's thread:
``send`` returns once the server accepted it, so ``notifications/initialized``
is on the server before the first request that follows it.

Environment.  ``requests`` reads proxies, CA bundle variables and ``~/.netrc``
on every request; this transport reads them once, when it is made (the URL
never changes), which is a fifth of a local round trip saved.

Framing-level bookkeeping.  To know whether an SSE stream broke before it
delivered the responses it owes, each event's JSON is peeked at for an ``id``
together with ``result`` or ``error``.  A stream that ends early is resumed
with a GET carrying ``Last-Event-ID`` after exactly the ``retry`` delay the
server asked for (1 s when it named none); the responses on the resumed
stream go to the sink like any other, which settles the original futures.

Session.  The ``Mcp-Session-Id`` of any successful answer is sent on every
later request, and ``MCP-Protocol-Version`` once :attr:`HttpTransport.protocol_version`
is set (the MCP layer does that after ``initialize``).  A 404 to a request
that carried a session id means the session expired: :class:`SessionExpired`.

Closing.  Closing a socket from another thread does not wake a thread blocked
reading it; shutting it down does.  So the connections this transport opens
are made by a connection class that records their sockets, and ``close()``
shuts every one of them down, which ends each in-flight read at once.
"""

from __future__ import annotations

import http.client
import json
import logging
import socket
import threading
import time
import weakref
from typing import Any, Callable, Dict, Generator, Iterator, List, Mapping, Optional, Sequence, Set, Tuple, Type, Union
from urllib.parse import urlsplit

import requests
import requests.adapters
import requests.utils
import sseclient
import urllib3
import urllib3.exceptions
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

from .._workers import PoolClosed, WorkerPool
from ..errors import (
    HttpConnectionError,
    HttpError,
    JsonRpcError,
    MessageTooLarge,
    RequestId,
    SessionExpired,
    TransportClosed,
    error_from_response,
)
from ..messages import decode, is_valid_id
from .base import MessageSink

logger = logging.getLogger(__name__)

#: Seconds to wait for a TCP (and TLS) connection to the server.
DEFAULT_CONNECT_TIMEOUT_S = 10.0
#: Seconds a socket read may wait for the next bytes of an answer.  The
#: per-request deadline is the client's; this only bounds a silent server.
DEFAULT_READ_TIMEOUT_S = 300.0
#: Threads that carry POSTs with requests (one per request in flight).
DEFAULT_MAX_WORKERS = 16
#: The largest JSON body or SSE event accepted.
DEFAULT_MAX_MESSAGE_BYTES = 16 * 1024 * 1024
#: Consecutive attempts to resume a broken SSE stream before giving up.
DEFAULT_MAX_RESUMPTIONS = 3
#: The reconnection delay when the server sent no ``retry`` field.
DEFAULT_RETRY_S = 1.0
#: Upper bound of the reconnection delay, however much it backs off.
MAX_RETRY_S = 60.0
#: Connect timeout, and read timeout, of the DELETE that ends the session on close.
DELETE_TIMEOUT_S = 2.0
#: How long ``close()`` waits for the pool and listen threads to end.
CLOSE_JOIN_GRACE_S = 2.0
#: How long a second ``close()`` waits for the first one to finish.
CLOSE_WAIT_S = 2 * DELETE_TIMEOUT_S + 2 * CLOSE_JOIN_GRACE_S + 1.0
#: Characters of an unexpected answer's body kept in :class:`HttpError`.
BODY_EXCERPT_CHARS = 300
#: Bytes of an error answer's body read to look for a JSON-RPC error.
ERROR_BODY_LIMIT_BYTES = 64 * 1024

SESSION_HEADER = "Mcp-Session-Id"
PROTOCOL_VERSION_HEADER = "MCP-Protocol-Version"
LAST_EVENT_ID_HEADER = "Last-Event-ID"
ACCEPT_POST = "application/json, text/event-stream"
ACCEPT_STREAM = "text/event-stream"
JSON_TYPE = "application/json"
SSE_TYPE = "text/event-stream"

_CHUNK_BYTES = 64 * 1024
#: Room for the ``data:`` prefixes, ``id`` and ``event`` lines of one SSE event.
_SSE_FRAMING_SLACK_BYTES = 4096
_REDACTED = "<redacted>"
_SECRET_HEADER_NAMES = frozenset({"authorization", "proxy-authorization", "cookie", "set-cookie"})
_SECRET_HEADER_WORDS = ("token", "key", "secret", "password", "credential")

HeaderProvider = Callable[[], Mapping[str, str]]

#: What a failing socket read or write can raise, at every layer.
_NETWORK_ERRORS: Tuple[Type[BaseException], ...] = (
    requests.RequestException,
    urllib3.exceptions.HTTPError,
    http.client.HTTPException,
    OSError,
)


def redact_headers(headers: Mapping[str, str]) -> Dict[str, str]:
    """A copy of ``headers`` fit for a log line: secret values replaced.

    ``Authorization``, ``Proxy-Authorization``, ``Cookie``, ``Set-Cookie`` and
    every header whose name contains ``token``, ``key``, ``secret``,
    ``password`` or ``credential`` (in any case) show as ``<redacted>``.
    """
    redacted: Dict[str, str] = {}
    for name, value in headers.items():
        lowered = name.lower()
        if lowered in _SECRET_HEADER_NAMES or any(word in lowered for word in _SECRET_HEADER_WORDS):
            redacted[name] = _REDACTED
        else:
            redacted[name] = value
    return redacted


def url_label(url: str) -> str:
    """The URL without credentials, query or fragment, for logs and thread names."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    netloc = f"{host}:{port}" if port is not None else host
    return f"{parts.scheme}://{netloc}{parts.path}"


# -- sockets that close() can interrupt ------------------------------------------


def _shutdown_socket(sock: socket.socket) -> None:
    try:
        # The base-class method also for TLS sockets: it only wakes the reader.
        socket.socket.shutdown(sock, socket.SHUT_RDWR)
    except OSError:
        pass


class _SocketRegistry:
    """The sockets of this transport's connections, so ``close()`` can shut them down."""

    def __init__(self) -> None:
        # _lock guards _sockets and _closed.
        self._lock = threading.Lock()
        self._sockets: weakref.WeakSet[socket.socket] = weakref.WeakSet()
        self._closed = False

    def add(self, sock: socket.socket) -> bool:
        """Record ``sock``; after :meth:`shutdown_all`, shut it down and return False."""
        with self._lock:
            if not self._closed:
                self._sockets.add(sock)
                return True
        _shutdown_socket(sock)
        return False

    def shutdown_all(self) -> None:
        """Shut down every recorded socket, and every socket added from now on."""
        with self._lock:
            self._closed = True
            sockets = list(self._sockets)
        for sock in sockets:
            _shutdown_socket(sock)

    def close_all(self) -> None:
        """Close every recorded socket still open (once the threads that used them are done).

        urllib3 2 closes a pool's idle connections only when the pool is garbage
        collected, and an exception kept anywhere (a log record, a future) keeps
        the pool alive through its traceback: without this, their fds would stay open.
        """
        with self._lock:
            sockets = list(self._sockets)
            self._sockets.clear()
        for sock in sockets:
            try:
                sock.close()
            except OSError:
                pass


def _tracking_pool_classes(registry: _SocketRegistry) -> Dict[str, Type[HTTPConnectionPool]]:
    """urllib3 pool classes whose connections record their sockets in ``registry``."""

    class _Connection(HTTPConnection):
        def connect(self) -> None:
            super().connect()
            if self.sock is not None and not registry.add(self.sock):
                raise ConnectionAbortedError("HTTP transport closed")

    class _TlsConnection(HTTPSConnection):
        def connect(self) -> None:
            super().connect()
            if self.sock is not None and not registry.add(self.sock):
                raise ConnectionAbortedError("HTTP transport closed")

    class _Pool(HTTPConnectionPool):
        ConnectionCls = _Connection

    class _TlsPool(HTTPSConnectionPool):
        ConnectionCls = _TlsConnection

    return {"http": _Pool, "https": _TlsPool}


class _TrackingAdapter(requests.adapters.HTTPAdapter):
    """An adapter whose connections ``close()`` can interrupt; never retries, never redirects."""

    def __init__(self, registry: _SocketRegistry, pool_maxsize: int) -> None:
        self._pool_classes = _tracking_pool_classes(registry)  # before super(): it builds the pool manager
        super().__init__(pool_connections=4, pool_maxsize=pool_maxsize, max_retries=0)

    def init_poolmanager(self, connections: int, maxsize: int, block: bool = False, **pool_kwargs: Any) -> None:
        super().init_poolmanager(connections, maxsize, block, **pool_kwargs)
        self.poolmanager.pool_classes_by_scheme = self._pool_classes

    def proxy_manager_for(self, proxy: str, **proxy_kwargs: Any) -> Any:
        manager = super().proxy_manager_for(proxy, **proxy_kwargs)
        if type(manager) is urllib3.ProxyManager:
            manager.pool_classes_by_scheme = self._pool_classes
        return manager


def _settle_environment(
    session: requests.Session, url: str, auth: Optional[requests.auth.AuthBase], verify: Union[bool, str]
) -> None:
    """Read what ``requests`` takes from the environment once, for this URL, and stop it reading more.

    With ``trust_env`` on, ``requests`` looks up proxies (walking ``os.environ``
    twice), the CA bundle variables and ``~/.netrc`` on every request: a
    fifth of a local round trip.  The URL never changes, so the same lookups
    made here give the same settings: proxies from ``HTTP(S)_PROXY`` /
    ``ALL_PROXY`` unless ``NO_PROXY`` exempts the host, ``REQUESTS_CA_BUNDLE``
    or ``CURL_CA_BUNDLE`` when ``verify`` is True, and ``.netrc`` credentials
    when no ``auth`` is given.
    """
    session.auth = auth
    settings = session.merge_environment_settings(url, {}, None, verify, None)
    if auth is None:
        netrc_auth = requests.utils.get_netrc_auth(url)
        if netrc_auth:
            session.auth = netrc_auth
    session.trust_env = False
    session.proxies = settings["proxies"]
    session.verify = settings["verify"]


# -- SSE ----------------------------------------------------------------------------


class _SseReader(sseclient.SSEClient):
    """sseclient-py's reader, bounded, keeping events that carry no data.

    sseclient-py drops every event whose data is empty, but MCP's priming event
    is exactly that: an id (and often a ``retry``) with empty data, which the
    client must remember to resume the stream.  So this subclass keeps
    sseclient's interface and :class:`sseclient.Event`, and parses fields by
    the WHATWG rules itself: lines end with CRLF, LF or CR; a line starting
    with ``:`` is a comment; a blank line ends an event, and an event cut off
    by the end of the stream is dropped; ``retry`` is kept only when it is all
    digits.  Events with empty data are yielded too; the caller
    skips them after noting their ``id`` and ``retry``.  An event (or a line)
    larger than the limit raises :class:`MessageTooLarge`.
    """

    def __init__(self, chunks: Iterator[bytes], limit: int) -> None:
        super().__init__(chunks)
        self._chunks = chunks
        self._limit = limit

    def _events_lines(self) -> Iterator[List[bytes]]:
        """Yield the lines of each complete event, without line terminators."""
        limit = self._limit + _SSE_FRAMING_SLACK_BYTES
        buffer = bytearray()
        lines: List[bytes] = []
        size = 0
        pending_cr = False  # the last chunk ended with CR: a following LF belongs to it
        for chunk in self._chunks:
            if not chunk:
                continue
            start = 0
            if pending_cr and chunk[:1] == b"\n":
                start = 1
            pending_cr = False
            buffer += chunk[start:] if start else chunk
            position = 0
            while True:
                cr = buffer.find(b"\r", position)
                lf = buffer.find(b"\n", position)
                if cr < 0 and lf < 0:
                    break
                if cr < 0 or (0 <= lf < cr):
                    end, next_start = lf, lf + 1
                elif cr + 1 < len(buffer):
                    end, next_start = cr, cr + 2 if buffer[cr + 1] == 0x0A else cr + 1
                else:  # CR at the end: maybe the first half of a CRLF
                    end, next_start = cr, cr + 1
                    pending_cr = True
                line = bytes(buffer[position:end])
                position = next_start
                if line:
                    size += len(line) + 1
                    if size > limit:
                        raise MessageTooLarge(self._limit, "SSE event")
                    lines.append(line)
                elif lines:
                    yield lines
                    lines = []
                    size = 0
            del buffer[:position]
            if len(buffer) + size > limit:
                raise MessageTooLarge(self._limit, "SSE event")
        # An event cut by the end of the stream is not dispatched (WHATWG).

    def events(self) -> Generator[sseclient.Event, None, None]:
        """Yield :class:`sseclient.Event` objects, including those with empty data.

        ``event.retry`` is an ``int`` (milliseconds) or ``None``.
        """
        for lines in self._events_lines():
            event_id: Optional[str] = None
            event_type = ""
            data: List[str] = []
            retry: Optional[int] = None
            for raw in lines:
                line = raw.decode("utf-8", errors="replace")
                if line.startswith(":"):
                    continue
                field, colon, value = line.partition(":")
                if colon and value.startswith(" "):
                    value = value[1:]
                if field == "data":
                    data.append(value)
                elif field == "id":
                    if "\0" not in value:
                        event_id = value
                elif field == "event":
                    event_type = value
                elif field == "retry" and value.isdigit() and value.isascii():
                    retry = int(value)
            text = "\n".join(data)
            if len(text) > self._limit:
                raise MessageTooLarge(self._limit, "SSE event")
            event = sseclient.Event()
            event.id = event_id
            event.event = event_type or "message"
            event.data = text
            event.retry = retry
            yield event


def _body_chunks(response: requests.Response, state: Optional[_StreamState] = None) -> Iterator[bytes]:
    """The body as it arrives (never waiting for a full buffer or the end).

    With the ``state`` of an exchange that has a deadline, every socket read is
    bounded by the time left (see :meth:`_StreamState.bound_next_read`).
    """
    raw = response.raw
    read1 = getattr(raw, "read1", None)
    bound = state is not None and state.deadline is not None
    if read1 is None or getattr(raw, "chunked", False):
        # Chunked transfer: each HTTP chunk is yielded as soon as it is read.
        chunks = response.iter_content(_CHUNK_BYTES)
        while True:
            if bound:
                state.bound_next_read(response)  # type: ignore[union-attr]
            chunk = next(chunks, None)
            if chunk is None:
                return
            yield chunk
    while True:
        if bound:
            state.bound_next_read(response)  # type: ignore[union-attr]
        data = read1(_CHUNK_BYTES, decode_content=True)
        if not data:
            return
        yield data


class _DeadlinePassed(HttpConnectionError):
    """An exchange on the caller's thread abandoned at the call's deadline (never reported)."""


class _StreamState:
    """What one logical exchange (a POST's answer and its resumptions) has seen.

    ``deadline`` (on the :func:`time.monotonic` clock) is set for an exchange
    run on the caller's thread (:meth:`HttpTransport.exchange_directly`): no
    socket read, connection attempt or resumption delay of it lasts past the
    deadline, so the caller is free again when its call times out.
    """

    __slots__ = ("deadline", "events", "had_ids", "last_event_id", "read_timeout", "retry_s", "unanswered")

    def __init__(
        self, request_ids: Sequence[RequestId], deadline: Optional[float] = None, read_timeout: float = 0.0
    ) -> None:
        self.unanswered: Set[RequestId] = set(request_ids)
        # A stream that answers requests is done once all are answered; one that
        # answers a notification (or is the listen stream) is read to its end.
        self.had_ids = bool(self.unanswered)
        self.last_event_id: Optional[str] = None
        self.retry_s = DEFAULT_RETRY_S
        self.events = 0
        self.deadline = deadline
        self.read_timeout = read_timeout

    def time_left(self) -> float:
        """Seconds to the deadline (only for an exchange with one).

        Raises:
            socket.timeout: the deadline has passed.
        """
        left = self.deadline - time.monotonic()  # type: ignore[operator]
        if left <= 0:
            raise socket.timeout("the call's deadline passed")
        return left

    def bound_next_read(self, response: requests.Response) -> None:
        """Let the next socket read of ``response`` wait no longer than the deadline allows.

        Raises:
            socket.timeout: the deadline has passed.
        """
        timeout = min(self.read_timeout, self.time_left())
        sock = getattr(getattr(response.raw, "connection", None), "sock", None)
        if sock is not None:
            sock.settimeout(timeout)

    def past_deadline(self) -> bool:
        return self.deadline is not None and time.monotonic() >= self.deadline

    def note(self, value: Any) -> None:
        """Strike the ids of the responses in a decoded message (or batch)."""
        if not self.unanswered:
            return
        for item in value if isinstance(value, list) else (value,):
            if isinstance(item, dict) and "method" not in item and ("result" in item or "error" in item):
                request_id = item.get("id")
                if is_valid_id(request_id):
                    self.unanswered.discard(request_id)

    def note_bytes(self, payload: bytes) -> None:
        if self.unanswered:
            try:
                self.note(decode(payload))
            except JsonRpcError:
                pass


class _ListenStream:
    """The GET stream for server-initiated messages; stopped by its event."""

    def __init__(self) -> None:
        self.stop = threading.Event()
        # Set once the first GET was answered (stream open, or refused) or failed.
        self.answered = threading.Event()
        self.thread: Optional[threading.Thread] = None


def _media_type(response: requests.Response) -> str:
    return response.headers.get("Content-Type", "").split(";", 1)[0].strip().lower()


def _excerpt(body: bytes) -> str:
    return body[: BODY_EXCERPT_CHARS * 4].decode("utf-8", errors="replace")[:BODY_EXCERPT_CHARS]


def _root_cause(exc: BaseException) -> str:
    """The innermost socket-level reason of a requests/urllib3 error (no URL in it)."""
    seen: Set[int] = set()
    current: Optional[BaseException] = exc
    found: Optional[BaseException] = None
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, (OSError, http.client.HTTPException)) and not isinstance(
            current, (requests.RequestException, urllib3.exceptions.HTTPError)
        ):
            found = current
        following: Any = getattr(current, "reason", None)
        if not isinstance(following, BaseException):
            following = current.__cause__ or current.__context__
        if following is None and current.args and isinstance(current.args[0], BaseException):
            following = current.args[0]
        current = following
    if found is None:
        return type(exc).__name__
    if isinstance(found, OSError) and found.strerror:
        return found.strerror
    return str(found) or type(found).__name__


def _is_timeout(exc: BaseException) -> bool:
    return isinstance(exc, (requests.Timeout, urllib3.exceptions.TimeoutError, socket.timeout))


class HttpTransport:
    """MCP Streamable HTTP: one POST per message, JSON or SSE answers, sessions.

    Thread-safe: :meth:`send` and :meth:`exchange_directly` may be called from
    many threads at once; :meth:`close`, :meth:`reset_session` and
    :meth:`open_listen_stream` from any thread.  Received messages are
    delivered to the sink from the pool's threads (named
    ``jsonrpc-http[<label>]-N``), from the listen thread
    (``jsonrpc-http-listen[<label>]``) or, for the answer of a notification or
    of an exchange run by :meth:`exchange_directly`, from the thread that sent it.

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
        max_resumptions: consecutive attempts at resuming a broken SSE stream.
        verify: TLS verification, as in ``requests`` (a bool or a CA bundle path).

    Raises:
        ValueError: for a URL that is not ``http(s)://host...`` or bad limits.

    Attributes:
        url: the endpoint.
        label: the URL without credentials or query, used in logs and thread names.
        protocol_version: when set, sent as ``MCP-Protocol-Version`` on every
            request (the MCP layer sets it after ``initialize``).
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
    ) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {url_label(url)!r}")
        if max_workers < 1:
            raise ValueError("max_workers must be at least 1")
        if max_message_bytes <= 0:
            raise ValueError("max_message_bytes must be positive")
        if max_resumptions < 0:
            raise ValueError("max_resumptions must be >= 0")
        if not connect_timeout > 0 or not read_timeout > 0:
            raise ValueError("connect_timeout and read_timeout must be positive")
        self.url = url
        self.label = url_label(url)
        self.protocol_version: Optional[str] = None
        self.max_message_bytes = max_message_bytes
        self.max_resumptions = max_resumptions
        self._static_headers: Dict[str, str] = dict(headers or {})
        self._header_provider = header_provider
        self._timeouts = (connect_timeout, read_timeout)
        self._registry = _SocketRegistry()
        self._http = requests.Session()
        _settle_environment(self._http, url, auth, verify)
        # Connections for the pool's threads and as many callers exchanging directly.
        adapter = _TrackingAdapter(self._registry, pool_maxsize=2 * max_workers + 4)
        self._http.mount("http://", adapter)
        self._http.mount("https://", adapter)
        self._pool = WorkerPool(max_workers, f"jsonrpc-http[{self.label}]")
        self._max_direct = max_workers
        # _lock guards _sink, _session_id, _closed, _sink_closed, _listen, _stopped_listens
        # and _direct_count (callers inside exchange_directly); _direct_idle is notified
        # when _direct_count drops to 0.
        self._lock = threading.Lock()
        self._direct_count = 0
        self._direct_idle = threading.Condition(self._lock)
        self._direct_local = threading.local()
        self._sink: Optional[MessageSink] = None
        self._session_id: Optional[str] = None
        self._closed = False
        self._sink_closed = False
        self._listen: Optional[_ListenStream] = None
        self._stopped_listens: List[_ListenStream] = []  # stopped, maybe not ended yet
        self._closing = threading.Event()
        self._close_done = threading.Event()

    # -- Transport ------------------------------------------------------------------

    def start(self, sink: MessageSink) -> None:
        """Remember the sink.  No connection is made until the first :meth:`send`.

        Raises:
            TransportClosed: when the transport was closed.
        """
        with self._lock:
            if self._closed:
                raise TransportClosed("HTTP transport closed")
            self._sink = sink

    def send(self, data: bytes, request_ids: Sequence[RequestId] = (), *, deadline: Optional[float] = None) -> None:
        """POST one encoded message (or batch).

        With ``request_ids``, the POST runs on the pool and this returns at
        once; its failures reach ``sink.requests_failed`` for those ids.
        Without (a notification or a response), the POST runs here and this
        returns once the server accepted it.

        Raises:
            TransportClosed: when the transport is closed (or not started).
            SessionExpired: (no ids) 404 to a message that carried a session id.
            HttpConnectionError: (no ids) the connection failed or timed out.
            HttpError: (no ids) any other non-2xx answer, a redirect, or an
                answer with an unexpected content type.
            JsonRpcError: (no ids) the JSON-RPC error the server answered with.
            MessageTooLarge: (no ids) an answer above ``max_message_bytes``.
        """
        if self._closed or self._sink is None:
            raise TransportClosed("HTTP transport closed" if self._closed else "HTTP transport not started")
        ids = tuple(request_ids)
        if ids:
            try:
                self._pool.submit(self._post_on_pool, data, ids)
            except PoolClosed:
                raise TransportClosed("HTTP transport closed") from None
            return
        self._post(data, _StreamState(()))

    def exchange_directly(
        self, data: bytes, request_ids: Sequence[RequestId], deadline: Optional[float] = None
    ) -> bool:
        """POST a message that carries requests and read its answer on the calling thread.

        The optional fast path of a blocking call (``JsonRpcClient.call()`` uses
        it when a transport offers it): the same exchange as :meth:`send` with
        ``request_ids``, run here instead of on the pool, which saves the
        hand-off to a pool thread and back.  Everything received is delivered
        to the sink as the pool would deliver it (server requests and progress
        while the answer streams in); failures go to ``sink.requests_failed``.

        ``deadline`` (on the :func:`time.monotonic` clock) is the call's: the
        connection attempt, every socket read (each also bounded by
        ``read_timeout``) and every wait before resuming a stream end by then,
        and the exchange is abandoned without reporting anything, leaving the
        sink's own timer to fail the request (the caller's thread is free at
        the deadline, never held until ``read_timeout``).  :meth:`close`
        interrupts it as it interrupts the pool's reads.

        Returns:
            True once the exchange is over (answered, failed or abandoned at the
            deadline); False, having sent nothing, when it cannot run here (as
            many callers as ``max_workers`` are already exchanging directly, or
            the deadline has passed): then use :meth:`send`.

        Raises:
            TransportClosed: when the transport is closed (or not started);
                nothing was sent.
        """
        if deadline is not None and deadline <= time.monotonic():
            return False
        local = self._direct_local
        with self._lock:
            if self._closed or self._sink is None:
                raise TransportClosed("HTTP transport closed" if self._closed else "HTTP transport not started")
            if self._direct_count >= self._max_direct or getattr(local, "active", False):
                return False
            self._direct_count += 1
        local.active = True
        try:
            self._exchange(data, _StreamState(request_ids, deadline, self._timeouts[1]))
        finally:
            local.active = False
            with self._lock:
                self._direct_count -= 1
                if not self._direct_count:
                    self._direct_idle.notify_all()
        return True

    def drive_call(
        self, data: bytes, request_id: RequestId, done: Callable[[], bool], deadline: Optional[float]
    ) -> bool:
        """The :class:`~.base.DrivesCalls` capability: :meth:`exchange_directly` for one request."""
        return self.exchange_directly(data, (request_id,), deadline)

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
            session_id = self._session_id
            listens = self._stopped_listens
            if self._listen is not None:
                listens.append(self._listen)
            self._listen = None
            self._stopped_listens = []
        if not first:
            if not self._pool.in_worker():
                self._close_done.wait(CLOSE_WAIT_S)
            return
        self._closing.set()
        try:
            for listen in listens:
                listen.stop.set()
            if session_id is not None:
                self._delete_session(session_id)
            self._registry.shutdown_all()  # ends every read in progress
            self._pool.shutdown(CLOSE_JOIN_GRACE_S)
            deadline = time.monotonic() + CLOSE_JOIN_GRACE_S
            self._wait_direct_exchanges(deadline)
            for listen in listens:
                if listen.thread is not None and listen.thread is not threading.current_thread():
                    listen.thread.join(max(0.0, deadline - time.monotonic()))
            self._http.close()
            self._registry.close_all()
        finally:
            self._notify_closed()
            self._close_done.set()

    # -- session ------------------------------------------------------------------------

    @property
    def session_id(self) -> Optional[str]:
        """The ``Mcp-Session-Id`` the server assigned, or ``None``."""
        return self._session_id

    @property
    def listening(self) -> bool:
        """True while the GET stream opened by :meth:`open_listen_stream` is running."""
        listen = self._listen
        return listen is not None and listen.thread is not None and listen.thread.is_alive()

    def reset_session(self) -> None:
        """Forget the session id (and stop the listen stream), to start a new session.

        The next request goes out without ``Mcp-Session-Id``; the MCP layer
        sends ``initialize`` again.  No DELETE is sent: the old session is
        usually gone already.
        """
        with self._lock:
            self._session_id = None
            listen = self._listen
            self._listen = None
            if listen is not None:
                self._stopped_listens = [
                    s for s in self._stopped_listens if s.thread is not None and s.thread.is_alive()
                ]
                self._stopped_listens.append(listen)
        if listen is not None:
            listen.stop.set()

    def open_listen_stream(self, *, wait: Optional[float] = None) -> None:
        """Open the GET stream on which the server may send requests and notifications.

        Runs in its own daemon thread; messages go to the sink.  A server
        without one (405) is fine: the thread ends, logged at debug level.  A
        broken stream is resumed (``Last-Event-ID``, ``retry`` delay) until
        ``max_resumptions`` consecutive attempts fail.  Does nothing while a
        listen stream is running; :meth:`close` and :meth:`reset_session` stop it.

        Args:
            wait: seconds to wait for the server's answer to the first GET (the
                stream open, or refused), so that what the server sends there
                right after is not lost; ``None`` returns at once.

        Raises:
            TransportClosed: when the transport is closed or not started.
        """
        with self._lock:
            if self._closed or self._sink is None:
                raise TransportClosed("HTTP transport closed" if self._closed else "HTTP transport not started")
            if self._listen is not None and self._listen.thread is not None and self._listen.thread.is_alive():
                listen = self._listen
            else:
                listen = _ListenStream()
                listen.thread = threading.Thread(
                    target=self._listen_loop, args=(listen,), name=f"jsonrpc-http-listen[{self.label}]", daemon=True
                )
                self._listen = listen
                listen.thread.start()
        if wait is not None:
            listen.answered.wait(wait)

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"<HttpTransport {self.label} {state}>"

    # -- exchanges -------------------------------------------------------------------------

    def _post_on_pool(self, data: bytes, request_ids: Tuple[RequestId, ...]) -> None:
        self._exchange(data, _StreamState(request_ids))

    def _exchange(self, data: bytes, state: _StreamState) -> None:
        """POST requests and deliver the answer; report the failure of what was not answered."""
        try:
            self._post(data, state)
        except JsonRpcError as exc:
            if isinstance(exc, _DeadlinePassed) or (state.past_deadline() and not isinstance(exc, TransportClosed)):
                return  # abandoned at the call's deadline: the client's timer fails it
            self._fail(state.unanswered, exc)
        except Exception as exc:  # a bug: never leave a request hanging
            logger.exception("%s: unexpected failure of a POST", self.label)
            self._fail(state.unanswered, HttpError(f"{self.label}: unexpected failure: {type(exc).__name__}: {exc}"))

    def _wait_direct_exchanges(self, deadline: float) -> None:
        """Wait (until ``deadline``) for the callers exchanging directly, their reads interrupted."""
        mine = 1 if getattr(self._direct_local, "active", False) else 0
        with self._lock:
            while self._direct_count > mine:
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                self._direct_idle.wait(left)

    def _post(self, data: bytes, state: _StreamState) -> None:
        """POST ``data`` and deliver its answer; raise for what was not answered."""
        headers = self._headers(ACCEPT_POST)
        headers["Content-Type"] = JSON_TYPE
        response = self._request("POST", headers, data=data, state=state)
        try:
            broken = self._handle_answer(response, state, sent_session=SESSION_HEADER in headers)
        finally:
            response.close()
        if state.unanswered:
            self._resume(state, broken)

    def _handle_answer(
        self, response: requests.Response, state: _StreamState, *, sent_session: bool
    ) -> Optional[JsonRpcError]:
        """Deliver a POST's answer.  Returns why an SSE stream broke, if it did.

        Raises:
            JsonRpcError: the failure of the ids still unanswered.
        """
        status = response.status_code
        if not 200 <= status < 300:
            raise self._status_error(response, state, sent_session=sent_session)
        self._capture_session(response)
        media_type = _media_type(response)
        if status == 202 or (not media_type and response.headers.get("Content-Length") == "0"):
            if state.unanswered:
                raise HttpError(
                    f"{self.label}: the server accepted the request ({status}) without answering it",
                    status_code=status,
                )
            return None
        if media_type == JSON_TYPE:
            self._deliver_json(response, state)
            return None
        if media_type == SSE_TYPE:
            return self._consume_sse(response, state, None)
        body = self._read_excerpt(response, state)
        if not media_type and not body and not state.unanswered:
            return None
        raise HttpError(
            f"{self.label}: unexpected Content-Type {media_type or 'none'!r} in a {status} answer",
            status_code=status,
            body_excerpt=_excerpt(body),
        )

    def _deliver_json(self, response: requests.Response, state: _StreamState) -> None:
        body = self._read_body(response, state)
        status = response.status_code
        if not body.strip():
            if state.unanswered:
                raise HttpError(f"{self.label}: empty {status} answer to a request", status_code=status)
            return
        try:
            value = decode(body)  # the client's decoder: what passes here, the client reads too
        except JsonRpcError:
            raise HttpError(
                f"{self.label}: the {status} answer is not valid JSON", status_code=status, body_excerpt=_excerpt(body)
            ) from None
        state.note(value)
        self._deliver(body)
        if state.unanswered:
            raise HttpError(
                f"{self.label}: the answer holds no response for request id(s) {sorted(map(str, state.unanswered))}",
                status_code=status,
                body_excerpt=_excerpt(body),
            )

    def _consume_sse(
        self, response: requests.Response, state: _StreamState, stop: Optional[threading.Event]
    ) -> Optional[JsonRpcError]:
        """Deliver SSE events as they arrive, until the stream ends or owes nothing more.

        Returns:
            ``None`` when the stream ended normally (or every id was answered,
            or ``stop`` was set), else the error that broke it: an
            :class:`HttpConnectionError`, or :class:`TransportClosed` when
            ``close()`` interrupted it.

        Raises:
            MessageTooLarge: an event above the limit (the stream is abandoned).
        """
        reader = _SseReader(_body_chunks(response, state), self.max_message_bytes)
        try:
            for event in reader.events():
                if stop is not None and stop.is_set():
                    return None
                state.events += 1
                if event.id is not None:
                    state.last_event_id = event.id or None
                if event.retry is not None:
                    state.retry_s = min(event.retry / 1000.0, MAX_RETRY_S)
                if not event.data:
                    continue  # a priming event, or a keep-alive
                payload: bytes = event.data.encode("utf-8")
                state.note_bytes(payload)
                self._deliver(payload)
                if state.had_ids and not state.unanswered:
                    return None  # the server should end the stream now; don't wait for it
        except MessageTooLarge:
            raise
        except _NETWORK_ERRORS as exc:
            return self._connection_error(exc, "the SSE stream broke")
        return None

    def _resume(self, state: _StreamState, cause: Optional[JsonRpcError]) -> None:
        """Resume a POST's SSE stream with GET + ``Last-Event-ID`` until it answered.

        Raises:
            JsonRpcError: when the stream cannot be resumed (``HttpConnectionError``
                or ``SessionExpired``), or ``TransportClosed``.
        """
        attempts = 0
        while state.unanswered:
            if self._closing.is_set():
                raise TransportClosed("HTTP transport closed")
            if state.past_deadline():
                raise _DeadlinePassed(f"{self.label}: the call's deadline passed while reading the answer")
            if state.last_event_id is None:
                reason = f" ({cause.message})" if cause is not None else ""
                raise HttpConnectionError(
                    f"{self.label}: the SSE stream ended before the response{reason}, "
                    "and cannot be resumed: the server sent no event id"
                )
            if attempts >= self.max_resumptions:
                reason = f": {cause.message}" if cause is not None else ""
                raise HttpConnectionError(
                    f"{self.label}: the SSE stream could not be resumed after {attempts} attempt(s){reason}"
                )
            delay = min(state.retry_s * (2**attempts), MAX_RETRY_S)
            logger.debug(
                "%s: resuming an SSE stream in %.3fs (Last-Event-ID %r)", self.label, delay, state.last_event_id
            )
            if state.deadline is not None and state.deadline - time.monotonic() < delay:
                # Not resumed before the call's deadline: wait for it, then abandon the exchange.
                if self._closing.wait(max(0.0, state.deadline - time.monotonic())):
                    raise TransportClosed("HTTP transport closed")
                raise _DeadlinePassed(f"{self.label}: the call's deadline passed before the SSE stream resumed")
            if self._closing.wait(delay):
                raise TransportClosed("HTTP transport closed")
            attempts += 1
            events_before = state.events
            headers = self._headers(ACCEPT_STREAM)
            headers[LAST_EVENT_ID_HEADER] = state.last_event_id
            try:
                response = self._request("GET", headers, state=state)
            except HttpConnectionError as exc:
                cause = exc
                continue
            try:
                status = response.status_code
                if status == 404 and SESSION_HEADER in headers:
                    raise SessionExpired(
                        f"{self.label}: the session expired (404) while resuming an SSE stream", status_code=404
                    )
                if status != 200 or _media_type(response) != SSE_TYPE:
                    raise HttpConnectionError(
                        f"{self.label}: the SSE stream broke and cannot be resumed: "
                        f"GET answered {status} {_media_type(response) or ''}".rstrip(),
                        status_code=status,
                        body_excerpt=_excerpt(self._read_excerpt(response, state)),
                    )
                cause = self._consume_sse(response, state, None)
            finally:
                response.close()
            if state.events > events_before:
                attempts = 0

    def _listen_loop(self, listen: _ListenStream) -> None:
        try:
            self._listen_attempts(listen)
        finally:
            listen.answered.set()

    def _listen_attempts(self, listen: _ListenStream) -> None:
        state = _StreamState(())
        failures = 0
        while not listen.stop.is_set():
            try:
                opened = self._listen_once(listen, state)
            except Exception:  # a bug: log it, never kill the process
                logger.exception("%s: listen stream failed", self.label)
                return
            listen.answered.set()
            if opened is None:
                return
            if opened:
                failures = 0  # however an opened stream ends, reconnect: that is how servers poll
            else:
                failures += 1
                if failures > self.max_resumptions:
                    logger.warning("%s: listen stream given up after %d failed attempts", self.label, failures)
                    return
            delay = min(state.retry_s * (2 ** max(0, failures - 1)), MAX_RETRY_S)
            if listen.stop.wait(delay):
                return

    def _listen_once(self, listen: _ListenStream, state: _StreamState) -> Optional[bool]:
        """One GET of the listen stream: True if it opened, False if it failed, None to stop."""
        try:
            headers = self._headers(ACCEPT_STREAM)
            if state.last_event_id is not None:
                headers[LAST_EVENT_ID_HEADER] = state.last_event_id
            response = self._request("GET", headers)
        except TransportClosed:
            return None
        except JsonRpcError as exc:
            if isinstance(exc, HttpError) and exc.status_code is not None and 300 <= exc.status_code < 400:
                logger.warning("%s: listen stream: %s; not retrying", self.label, exc.message)
                return None  # a redirect will be refused again: retrying is a loop
            logger.debug("%s: listen stream: %s", self.label, exc)
            return False
        listen.answered.set()
        try:
            status = response.status_code
            media_type = _media_type(response)
            if status == 405:
                logger.debug("%s: the server offers no listen stream (405)", self.label)
                return None
            if 400 <= status < 500:
                logger.warning("%s: listen stream refused (%d); not retrying", self.label, status)
                return None
            if status != 200 or media_type != SSE_TYPE:
                logger.debug("%s: listen stream answered %d %s", self.label, status, media_type)
                return False
            broken = self._consume_sse(response, state, listen.stop)
            if broken is not None:
                logger.debug("%s: listen stream: %s", self.label, broken)
            return True
        except TransportClosed:
            return None
        except MessageTooLarge as exc:
            logger.warning("%s: listen stream ended: %s", self.label, exc)
            return None
        finally:
            response.close()

    def _delete_session(self, session_id: str) -> None:
        try:
            headers = self._headers(ACCEPT_POST)
            headers[SESSION_HEADER] = session_id
            response = self._request("DELETE", headers, timeout=(DELETE_TIMEOUT_S, DELETE_TIMEOUT_S), closing=True)
        except JsonRpcError as exc:
            logger.debug("%s: DELETE of the session failed: %s", self.label, exc)
            return
        with response:
            # 405: the server does not let clients end sessions; nothing to do.
            logger.debug("%s: DELETE of the session answered %d", self.label, response.status_code)

    # -- helpers ----------------------------------------------------------------------------

    def _headers(self, accept: str) -> Dict[str, str]:
        headers = dict(self._static_headers)
        provider = self._header_provider
        if provider is not None:
            try:
                headers.update(provider())
            except JsonRpcError:
                raise
            except Exception as exc:
                raise HttpError(f"{self.label}: header_provider failed: {type(exc).__name__}") from exc
        headers["Accept"] = accept
        session_id = self._session_id
        if session_id is not None:
            headers[SESSION_HEADER] = session_id
        protocol_version = self.protocol_version
        if protocol_version is not None:
            headers[PROTOCOL_VERSION_HEADER] = protocol_version
        return headers

    def _request(
        self,
        method: str,
        headers: Dict[str, str],
        *,
        data: Optional[bytes] = None,
        timeout: Optional[Tuple[float, float]] = None,
        closing: bool = False,
        state: Optional[_StreamState] = None,
    ) -> requests.Response:
        """Send one HTTP request (streamed answer); translate every failure.

        With the ``state`` of an exchange that has a deadline, connecting and
        waiting for the answer's headers end by that deadline.

        Raises:
            TransportClosed: the transport is (being) closed.
            HttpConnectionError: the connection failed or timed out.
            HttpError: any other failure to send.
        """
        if self._closing.is_set() and not closing:
            raise TransportClosed("HTTP transport closed")
        if timeout is None:
            timeout = self._timeouts
            if state is not None and state.deadline is not None:
                try:
                    left = state.time_left()
                except socket.timeout as exc:
                    raise self._connection_error(exc, f"{method} failed") from None
                timeout = (min(timeout[0], left), min(timeout[1], left))
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug("%s: %s %s", self.label, method, redact_headers(headers))
        try:
            response = self._http.request(
                method,
                self.url,
                data=data,
                headers=headers,
                timeout=timeout,
                stream=True,
                allow_redirects=False,
            )
        except _NETWORK_ERRORS as exc:
            if isinstance(exc, requests.RequestException) and not isinstance(
                exc, (requests.ConnectionError, requests.Timeout)
            ):
                raise HttpError(f"{self.label}: {method} failed: {type(exc).__name__}: {_root_cause(exc)}") from exc
            raise self._connection_error(exc, f"{method} failed") from exc
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug(
                "%s: %s answered %d %s", self.label, method, response.status_code, _media_type(response) or "-"
            )
        if 300 <= response.status_code < 400:
            location = response.headers.get("Location", "")
            status = response.status_code
            response.close()
            raise HttpError(
                f"{self.label}: redirect ({status}) to {url_label(location)!r} refused: redirects are not followed",
                status_code=status,
            )
        return response

    def _connection_error(self, exc: BaseException, what: str) -> JsonRpcError:
        if self._closing.is_set():
            return TransportClosed("HTTP transport closed")
        if _is_timeout(exc):
            kind = "connect" if isinstance(exc, requests.ConnectTimeout) else "read"
            limit = self._timeouts[0] if kind == "connect" else self._timeouts[1]
            return HttpConnectionError(f"{self.label}: {what}: {kind} timed out after {limit}s")
        return HttpConnectionError(f"{self.label}: {what}: {_root_cause(exc)}")

    def _status_error(self, response: requests.Response, state: _StreamState, *, sent_session: bool) -> JsonRpcError:
        """The error for a non-2xx answer; a JSON-RPC error answering one of ours is delivered."""
        status = response.status_code
        body = self._read_excerpt(response, state)
        if status == 404 and sent_session:
            return SessionExpired(
                f"{self.label}: the session expired (404)", status_code=404, body_excerpt=_excerpt(body)
            )
        error: Optional[JsonRpcError] = None
        try:
            value = json.loads(body) if body else None
        except ValueError:
            value = None
        for item in value if isinstance(value, list) else (value,):
            if not (isinstance(item, dict) and "error" in item and "result" not in item):
                continue
            request_id = item.get("id")
            if is_valid_id(request_id) and request_id in state.unanswered:
                state.unanswered.discard(request_id)
                self._deliver(json.dumps(item, ensure_ascii=False).encode("utf-8"))
            elif error is None:
                error = error_from_response(item["error"])
        if error is not None:
            return error
        reason = response.reason or http.client.responses.get(status, "")
        return HttpError(
            f"{self.label}: HTTP {status} {reason}".rstrip(), status_code=status, body_excerpt=_excerpt(body)
        )

    def _read_body(self, response: requests.Response, state: _StreamState) -> bytes:
        """The whole body, up to ``max_message_bytes`` (checked against ``Content-Length`` first)."""
        limit = self.max_message_bytes
        length = response.headers.get("Content-Length")
        if length is not None and length.isdigit() and int(length) > limit:
            raise MessageTooLarge(limit, "HTTP answer body")
        chunks: List[bytes] = []
        size = 0
        try:
            for chunk in _body_chunks(response, state):
                chunks.append(chunk)
                size += len(chunk)
                if size > limit:
                    raise MessageTooLarge(limit, "HTTP answer body")
        except _NETWORK_ERRORS as exc:
            raise self._connection_error(exc, "reading the answer failed") from exc
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    def _read_excerpt(self, response: requests.Response, state: Optional[_StreamState] = None) -> bytes:
        """Up to ``ERROR_BODY_LIMIT_BYTES`` of the body; never raises."""
        body = bytearray()
        try:
            for chunk in _body_chunks(response, state):
                body += chunk
                if len(body) >= ERROR_BODY_LIMIT_BYTES:
                    break
        except _NETWORK_ERRORS:
            pass
        return bytes(body[:ERROR_BODY_LIMIT_BYTES])

    def _capture_session(self, response: requests.Response) -> None:
        session_id = response.headers.get(SESSION_HEADER)
        if session_id is None or session_id == self._session_id:
            return
        if not session_id or not all(0x21 <= ord(ch) <= 0x7E for ch in session_id):
            logger.warning("%s: ignoring a malformed %s header", self.label, SESSION_HEADER)
            return
        with self._lock:
            if not self._closed:
                self._session_id = session_id
        logger.debug("%s: session established", self.label)

    def _deliver(self, payload: bytes) -> None:
        sink = self._sink
        if sink is None:
            return
        try:
            sink.message_received(payload)
        except Exception:
            logger.exception("%s: the sink failed on a received message", self.label)

    def _fail(self, request_ids: Set[RequestId], error: JsonRpcError) -> None:
        sink = self._sink
        if sink is None or not request_ids:
            return
        if self._closing.is_set() and not isinstance(error, TransportClosed):
            error = TransportClosed("HTTP transport closed")
        try:
            sink.requests_failed(sorted(request_ids, key=str), error)
        except Exception:
            logger.exception("%s: the sink failed on a request failure", self.label)

    def _notify_closed(self) -> None:
        with self._lock:
            sink = self._sink
            already = self._sink_closed
            self._sink_closed = True
        if sink is None or already:
            return
        try:
            sink.transport_closed(TransportClosed("HTTP transport closed"))
        except Exception:
            logger.exception("%s: the sink failed on transport_closed", self.label)


__all__ = [
    "DEFAULT_CONNECT_TIMEOUT_S",
    "DEFAULT_MAX_MESSAGE_BYTES",
    "DEFAULT_MAX_RESUMPTIONS",
    "DEFAULT_MAX_WORKERS",
    "DEFAULT_READ_TIMEOUT_S",
    "DEFAULT_RETRY_S",
    "HttpTransport",
    "redact_headers",
    "url_label",
]
