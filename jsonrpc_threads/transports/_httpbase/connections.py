"""Connections that ``close()`` and ``abandon()`` can interrupt, and the ``requests.Session`` that uses them.

Theory of operation.  Closing a socket from another thread does not wake a
thread blocked reading it; shutting it down does (the read returns at once).
So the connections this transport opens come from urllib3 pool classes of
our own (``make_session`` mounts them) whose connections

- record their socket in the transport's ``Connections``, so that
  ``close()`` shuts every one of them down (``Connections.shutdown_all``);
- attach themselves to the exchange that uses them: an exchange that the
  client abandoned (every request it carries settled: timeout, cancel) shuts
  its own connection down, which ends its read and frees its thread.

Which exchange a connection works for is known from the thread: the thread
that carries an exchange marks itself (``with carrying(exchange):``) around
the HTTP request, and a connection that connects or sends a request on that
thread attaches itself to that exchange.  It is detached when urllib3 puts
it back into its pool, before another exchange can take it, so an exchange
never shuts down a connection that has moved on to someone else.

``TrackedAdapter`` mounts those pools, never retries and never follows
a redirect: the plain adapter.  (The direct path, ``direct``, extends it.)

Environment.  ``requests`` reads proxies, CA bundle variables and
``~/.netrc`` on every request; ``make_session`` reads them once, when the
transport is made (the URL never changes), as ``HttpTransport`` documents: a
session whose settings never change is also what the direct path needs.
"""

from __future__ import annotations

import functools
import socket
import threading
import weakref
from types import TracebackType
from typing import Any, Callable, Dict, Optional, Protocol, Tuple, Type, Union

import requests
import requests.adapters
import requests.auth
import requests.cookies
import requests.utils
import urllib3
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

#: The thread's current exchange (see ``carrying``).
_current = threading.local()


class Attachable(Protocol):
    """What a connection tells the exchange it works for."""

    def attach(self, connection: Any) -> None:
        """``connection`` carries this exchange now; raises ``OSError`` if it was abandoned."""

    def detach(self, connection: Any) -> None:
        """``connection`` went back to its pool."""


def shutdown_socket(sock: Optional[socket.socket]) -> None:
    """Wake every thread reading ``sock`` (never blocks, never raises)."""
    if sock is None:
        return
    try:
        # The base-class method also for TLS sockets: it only wakes the reader.
        socket.socket.shutdown(sock, socket.SHUT_RDWR)
    except OSError:
        pass


def socket_of(connection: Any) -> Optional[socket.socket]:
    """The socket ``connection`` made when it connected.

    ``http.client`` drops a connection's ``sock`` when it hands the socket to
    an answer that closes the connection at its end (no length, no chunks: an
    event stream, often); the answer still reads that socket, so this is what
    must be bounded and shut down.
    """
    return getattr(connection, "connected_sock", None) or getattr(connection, "sock", None)


class carrying:
    """Mark the calling thread as carrying ``exchange`` (cheap; nests)."""

    __slots__ = ("_exchange", "_previous")

    def __init__(self, exchange: Optional[Attachable]) -> None:
        self._exchange = exchange
        self._previous: Optional[Attachable] = None

    def __enter__(self) -> None:
        self._previous = getattr(_current, "exchange", None)
        _current.exchange = self._exchange

    def __exit__(
        self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException], tb: Optional[TracebackType]
    ) -> None:
        _current.exchange = self._previous
        self._previous = None


class Connections:
    """The sockets of one transport's connections.  Thread-safe."""

    def __init__(self) -> None:
        # _lock guards _sockets and _closed.
        self._lock = threading.Lock()
        self._sockets: weakref.WeakSet[socket.socket] = weakref.WeakSet()
        self._closed = False

    def add(self, sock: socket.socket) -> bool:
        """Record ``sock``; after ``shutdown_all``, shut it down and return False."""
        with self._lock:
            if not self._closed:
                self._sockets.add(sock)
                return True
        shutdown_socket(sock)
        return False

    def shutdown_all(self) -> None:
        """Shut down every recorded socket, and every socket added from now on."""
        with self._lock:
            self._closed = True
            sockets = list(self._sockets)
        for sock in sockets:
            shutdown_socket(sock)

    def release_in_fork(self) -> None:
        """In a forked process: close this process's copies of the sockets; no shutdown, no lock.

        ``shutdown()`` would end the connection for the parent too; ``close()``
        of one copy of a socket does not (the parent's copy keeps it open).
        """
        self._closed = True
        for sock in list(self._sockets):
            try:
                sock.close()
            except OSError:
                pass

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


def _attach(connection: Any) -> None:
    exchange: Optional[Attachable] = getattr(_current, "exchange", None)
    if exchange is not None:
        connection.exchange = exchange
        exchange.attach(connection)


def _release(connection: Any) -> None:
    exchange: Optional[Attachable] = getattr(connection, "exchange", None)
    if exchange is not None:
        connection.exchange = None
        exchange.detach(connection)


def _pool_classes(connections: Connections, mixin: Optional[type] = None) -> Dict[str, Type[HTTPConnectionPool]]:
    """urllib3 pool classes whose connections record their sockets and attach to exchanges.

    ``mixin``: a class whose methods come first in the connections' (a
    strategy's way of writing, see ``direct``); it calls ``super()``.
    """

    def connected(connection: Any) -> None:
        connection.connected_sock = connection.sock
        if connection.sock is not None and not connections.add(connection.sock):
            raise ConnectionAbortedError("HTTP transport closed")
        _attach(connection)

    class _Tracked:
        """What both connection classes add: socket records and exchanges."""

        exchange: Optional[Attachable] = None
        connected_sock: Optional[socket.socket] = None

        def connect(self) -> None:
            super().connect()  # type: ignore[misc]
            connected(self)

        def request(self, method: str, url: str, body: Any = None, headers: Any = None, **options: Any) -> None:
            if getattr(self, "sock", None) is not None:  # a kept-alive connection (a new one attaches in connect())
                _attach(self)
            super().request(method, url, body, headers, **options)  # type: ignore[misc]

    first: Tuple[type, ...] = (_Tracked,) if mixin is None else (mixin, _Tracked)
    _Connection: Type[HTTPConnection] = type("_Connection", (*first, HTTPConnection), {})
    _TlsConnection: Type[HTTPSConnection] = type("_TlsConnection", (*first, HTTPSConnection), {})

    class _Pool(HTTPConnectionPool):
        ConnectionCls = _Connection

        def _put_conn(self, conn: Any) -> None:
            if conn is not None:
                _release(conn)
            super()._put_conn(conn)

    class _TlsPool(HTTPSConnectionPool):
        ConnectionCls = _TlsConnection

        def _put_conn(self, conn: Any) -> None:
            if conn is not None:
                _release(conn)
            super()._put_conn(conn)

    return {"http": _Pool, "https": _TlsPool}


class TrackedAdapter(requests.adapters.HTTPAdapter):
    """The plain adapter: our pool classes (see the module docstring); never retries, never redirects."""

    #: What a subclass puts first in its connections' classes (see ``_pool_classes``).
    connection_mixin: Optional[type] = None

    def __init__(self, connections: Connections, pool_maxsize: int) -> None:
        # Before super(): it builds the pool manager.
        self._pool_classes = _pool_classes(connections, self.connection_mixin)
        super().__init__(pool_connections=4, pool_maxsize=pool_maxsize, max_retries=0)

    def init_poolmanager(self, connections: int, maxsize: int, block: bool = False, **pool_kwargs: Any) -> None:
        super().init_poolmanager(connections, maxsize, block, **pool_kwargs)
        self.poolmanager.pool_classes_by_scheme = self._pool_classes

    def proxy_manager_for(self, proxy: str, **proxy_kwargs: Any) -> Any:
        manager = super().proxy_manager_for(proxy, **proxy_kwargs)
        if type(manager) is urllib3.ProxyManager:
            manager.pool_classes_by_scheme = self._pool_classes
        return manager


#: Sends a prepared request with (connect, read) timeouts; the answer's body is left to stream.
Send = Callable[[Tuple[float, float]], requests.Response]


class PlainSender:
    """How ``requests`` itself sends a request: ``Session.prepare_request``, then ``Session.send``.

    The answer is streamed and a redirect is never followed.  Thread-safe.

    Args:
        session: the transport's session (from ``make_session``).
    """

    def __init__(self, session: requests.Session) -> None:
        self._session = session

    def prepare(self, method: str, url: str, headers: Dict[str, str], data: Optional[bytes]) -> Send:
        """Prepare the request (the ``auth`` hook runs here, for as long as it takes); return what sends it.

        Raises:
            requests.RequestException: a header ``requests`` refuses (``InvalidHeader``);
                an exception from the ``auth`` hook as is.
        """
        prepared = self._session.prepare_request(requests.Request(method, url, headers=headers, data=data))
        return functools.partial(self._send, prepared)

    def _send(self, prepared: requests.PreparedRequest, timeout: Tuple[float, float]) -> requests.Response:
        return self._session.send(prepared, timeout=timeout, stream=True, allow_redirects=False)


def make_session(
    url: str,
    auth: Optional[requests.auth.AuthBase],
    verify: Union[bool, str],
    adapter: requests.adapters.HTTPAdapter,
) -> requests.Session:
    """A ``requests.Session`` for ``url`` over ``adapter`` (a ``TrackedAdapter``), its environment read once.

    With ``trust_env`` on, ``requests`` looks up proxies (walking ``os.environ``
    twice), the CA bundle variables and ``~/.netrc`` on every request.  The
    URL never changes, so the same lookups made here give the same settings:
    proxies from ``HTTP(S)_PROXY`` / ``ALL_PROXY`` unless ``NO_PROXY`` exempts
    the host, ``REQUESTS_CA_BUNDLE`` or ``CURL_CA_BUNDLE`` when ``verify`` is
    True, and ``.netrc`` credentials when no ``auth`` is given.
    """
    session = requests.Session()
    session.auth = auth
    settings = session.merge_environment_settings(url, {}, None, verify, None)
    if auth is None:
        netrc_auth = requests.utils.get_netrc_auth(url)
        if netrc_auth:
            session.auth = netrc_auth
    session.trust_env = False
    session.proxies = settings["proxies"]
    session.verify = settings["verify"]
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session


def runs_user_code(auth: Any) -> bool:
    """True when ``auth`` may run arbitrary code (and so block) while a request is made.

    ``requests``' own basic credentials (an ``HTTPBasicAuth``, an
    ``HTTPProxyAuth`` or a ``(user, password)`` pair, as ``.netrc`` gives) only
    set a header; anything else is user code.
    """
    if auth is None or isinstance(auth, tuple):
        return False
    return type(auth) not in (requests.auth.HTTPBasicAuth, requests.auth.HTTPProxyAuth)


__all__ = [
    "Attachable",
    "Connections",
    "PlainSender",
    "Send",
    "TrackedAdapter",
    "carrying",
    "make_session",
    "runs_user_code",
    "shutdown_socket",
    "socket_of",
]
