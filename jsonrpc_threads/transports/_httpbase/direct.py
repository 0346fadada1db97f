"""The direct path: a request sent straight through the session's adapter, at about half the cost of ``Session.send``.

Theory of operation.  ``requests.Session.prepare_request`` and
``Session.send`` are general: they merge settings, cookies and hooks that
may change between requests, look up proxies, and follow redirects; the
adapter looks its pool up again, parses the URL twice and fills a cookie jar
for every answer.  A transport's session never changes its URL, its settings
or its hooks, so most of that work gives the same answer every time.  This
module is the one place that knows it; the plain path
(``PlainSender`` over a ``TrackedAdapter``)
is what it must behave like, and ``endpoint`` chooses it, once.  Each of
its four parts pays for itself in a same-run A/B (``benchmarks/README.md``,
"What the HTTP transport keeps of its tuning" and, for the one write, "The
guard's second look").

``DirectSender`` keeps what matters, in the order ``requests`` does it:

- the session's default headers (``User-Agent``, ``Accept-Encoding``, ...)
  under the request's own, and ``Content-Length`` for the body;
- the session's cookies (``Cookie``), and the cookies every answer sets
  back into the session's jar (a load balancer's sticky session);
- the ``auth`` hook (an ``AuthBase``, a ``(user, password)`` pair, or
  credentials in the URL), run on the prepared request as ``requests``
  runs it, and any ``response`` hook it registers (digest authentication
  answers its ``401`` from one);
- the mounted adapter's ``send()`` with the session's TLS settings, so
  connections, pools, certificates and the size of the pool are exactly
  those of the session.

What it leaves out: redirects (the transport refuses them anyway) and
proxies: a URL that a proxy serves takes the plain path, which adds the
proxy's credentials.  ``DirectAdapter`` remembers its pool and request
target per URL while no proxy is involved, leaves an answer's cookie jar
to be made when first read (the session's own jar gets the cookies either way),
and its connections write a request's head and a small body in one system
call (``OneWrite``).

Thread-safety: any number of threads may send at once (the adapter's pools
are thread-safe; the cached URLs are written once per URL, idempotently, and
the remembered valid header fields only ever grow, to a bound).
"""

from __future__ import annotations

import functools
from typing import Any, Dict, Optional, Set, Tuple

import requests
import requests.cookies
import requests.hooks
import requests.utils
from requests.structures import CaseInsensitiveDict
from urllib3.connectionpool import ConnectionPool

from ..redact import is_secret_header
from .connections import Connections, PlainSender, Send, TrackedAdapter

#: How many distinct URLs keep a prepared form (the endpoint, the legacy POST URL, a few more).
_MAX_CACHED_URLS = 16
#: How many header fields are remembered as valid (a header provider may vary its values).
_MAX_VALID_HEADERS = 256
#: How many (URL, TLS settings) pools an adapter remembers before it forgets them all.
_MAX_REMEMBERED_POOLS = 16
#: How many URLs' request targets an adapter remembers before it forgets them all.
_MAX_REMEMBERED_TARGETS = 16
#: A request body up to this size goes out in the same write as the request's head.
ONE_WRITE_MAX_BYTES = 64 * 1024


class OneWrite:
    """Connections of ``DirectAdapter``: a request's head and its body (up to ``ONE_WRITE_MAX_BYTES``) in one write.

    urllib3 writes them apart, which wakes the server twice and gives up the
    GIL twice per request.  A sequential caller hardly notices (about 2%);
    sixteen threads calling at once on two CPUs pay 14% more per call without it
    (``benchmarks/README.md``).  What is held is written in order before
    anything that is not bytes (a file body goes as it comes).

    Not thread-safe, as a connection is not: one exchange uses it at a time.
    """

    _held: Optional[bytearray] = None

    def request(self, method: str, url: str, body: Any = None, headers: Any = None, **options: Any) -> None:
        if not isinstance(body, bytes) or len(body) > ONE_WRITE_MAX_BYTES:
            super().request(method, url, body, headers, **options)  # type: ignore[misc]
            return
        self._held = bytearray()
        try:
            super().request(method, url, body, headers, **options)  # type: ignore[misc]
            held = self._held
        finally:
            self._held = None
        if held:
            super().send(held)  # type: ignore[misc]

    def send(self, data: Any) -> None:
        held = self._held
        if held is not None:
            if isinstance(data, (bytes, bytearray)):
                held += data
                return
            self._held = None
            super().send(held)  # type: ignore[misc]
        super().send(data)  # type: ignore[misc]


class DirectSender(PlainSender):
    """Sends requests for one session through its mounted adapter (a proxied URL: the plain way).

    Args:
        session: the transport's session; its settings (proxies, verify,
            cert, headers, hooks, auth) must not change after this is made,
            except its cookie jar, which is read on every request.
    """

    def __init__(self, session: requests.Session) -> None:
        super().__init__(session)
        self._session = session
        # requests' own defaults (User-Agent, Accept-Encoding, Accept, Connection): valid by construction.
        self._default_headers = [header for header in session.headers.items() if header[1] is not None]
        # URL -> (prepared URL, whether it holds credentials), or None when a proxy serves it.
        self._urls: Dict[str, Optional[Tuple[str, bool]]] = {}
        # Header fields already found valid (the same few go out with every request), credentials aside.
        self._valid_headers: Set[Tuple[str, str]] = set()

    def prepare(self, method: str, url: str, headers: Dict[str, str], data: Optional[bytes]) -> Send:
        """Prepare the request as ``Session.prepare_request`` would; see ``PlainSender.prepare``."""
        known = self._prepared_url(url)
        if known is None:  # a proxy serves it
            return super().prepare(method, url, headers, data)
        prepared_url, url_credentials = known
        session = self._session
        request = requests.PreparedRequest()
        request.method = method
        request.url = prepared_url
        checked: CaseInsensitiveDict[Any] = CaseInsensitiveDict(self._default_headers)
        valid = self._valid_headers
        for header in headers.items():
            if header[1] is None:  # as in requests: None removes a default
                checked.pop(header[0], None)
                continue
            if header not in valid:
                requests.utils.check_header_validity(header)  # InvalidHeader, as requests raises it
                if len(valid) < _MAX_VALID_HEADERS and not is_secret_header(header[0]):
                    valid.add(header)  # a credential is checked each time, never kept here
            checked[header[0]] = header[1]
        request.headers = checked
        request.body = data
        if data is not None:
            checked["Content-Length"] = str(len(data))
        elif method not in ("GET", "HEAD"):
            checked["Content-Length"] = "0"
        if len(session.cookies):
            request.prepare_cookies(session.cookies)
        if session.auth is not None or url_credentials:
            request.prepare_auth(session.auth, prepared_url)  # may register response hooks
        for event, hooks in session.hooks.items():
            if hooks:
                request.register_hook(event, hooks)  # type: ignore[no-untyped-call]
        return functools.partial(self._send_direct, request)

    def _send_direct(self, request: requests.PreparedRequest, timeout: Tuple[float, float]) -> requests.Response:
        """Send a request ``prepare`` made; the answer's body is left to stream.

        Raises:
            requests.RequestException: as ``Session.send`` would (the caller translates it).
        """
        session = self._session
        settings: Dict[str, Any] = {
            "stream": True,
            "timeout": timeout,
            "verify": session.verify,
            "cert": session.cert,
            "proxies": {},
        }
        adapter = session.get_adapter(request.url or "")
        response: requests.Response = adapter.send(request, **settings)
        if request.hooks["response"]:
            response = requests.hooks.dispatch_hook(  # type: ignore[no-untyped-call]
                "response", request.hooks, response, **settings
            )
        if "Set-Cookie" in response.headers:
            requests.cookies.extract_cookies_to_jar(session.cookies, request, response.raw)  # type: ignore[no-untyped-call]
        return response

    def _prepared_url(self, url: str) -> Optional[Tuple[str, bool]]:
        try:
            return self._urls[url]
        except KeyError:
            pass
        session = self._session
        prepared: Optional[Tuple[str, bool]] = None
        if requests.utils.select_proxy(url, session.proxies) is None:
            request = requests.PreparedRequest()
            request.prepare_url(url, None)
            assert request.url is not None  # prepare_url() sets it or raises
            prepared = (request.url, any(requests.utils.get_auth_from_url(request.url)))
        if len(self._urls) < _MAX_CACHED_URLS:
            self._urls[url] = prepared
        return prepared


class DirectAdapter(TrackedAdapter):
    """The plain adapter, remembering pools and request targets per URL, and making cookie jars only when read.

    Args:
        connections: as ``TrackedAdapter``'s.
        pool_maxsize: as ``TrackedAdapter``'s.
    """

    connection_mixin = OneWrite

    def __init__(self, connections: Connections, pool_maxsize: int) -> None:
        self._pools: Dict[Tuple[Any, ...], Any] = {}
        self._targets: Dict[Any, str] = {}  # URL -> the request target requests makes of it, with no proxy
        super().__init__(connections, pool_maxsize)

    def get_connection_with_tls_context(
        self, request: requests.PreparedRequest, verify: Any, proxies: Any = None, cert: Any = None
    ) -> ConnectionPool:
        """The pool for ``request``, remembered per URL and TLS settings while no proxy is involved.

        ``HTTPAdapter`` normalizes a pool key and parses the URL again for every request.
        """
        if proxies:
            return super().get_connection_with_tls_context(request, verify, proxies=proxies, cert=cert)
        key = (request.url, verify, cert)
        pool = self._pools.get(key)
        if pool is None or pool.pool is None:  # an evicted or closed pool has no connection queue
            pool = super().get_connection_with_tls_context(request, verify, proxies=proxies, cert=cert)
            if len(self._pools) >= _MAX_REMEMBERED_POOLS:
                self._pools.clear()
            self._pools[key] = pool
        return pool

    def request_url(self, request: requests.PreparedRequest, proxies: Any) -> str:
        """The request target ``HTTPAdapter.request_url`` makes of the URL, remembered while no proxy is involved.

        It parses the URL twice and looks for a proxy in an empty mapping (3.4 us,
        forty function calls, about a seventieth of a loopback round trip) for
        the same answer every time.
        """
        if proxies:
            return str(super().request_url(request, proxies))
        url = request.url
        target = self._targets.get(url)
        if target is None:
            target = str(super().request_url(request, proxies))
            if len(self._targets) >= _MAX_REMEMBERED_TARGETS:
                self._targets.clear()
            self._targets[url] = target
        return target

    def build_response(self, req: requests.PreparedRequest, resp: Any) -> requests.Response:
        """What ``HTTPAdapter.build_response`` makes, with the cookie jar left until it is read (``_Answer``)."""
        response = _Answer.__new__(_Answer)
        response.__dict__.update(_FRESH_ANSWER)
        response.history = []
        response.status_code = resp.status
        response.headers = CaseInsensitiveDict(resp.headers)
        response.encoding = requests.utils.get_encoding_from_headers(response.headers)
        response.raw = resp
        response.reason = resp.reason
        response.url = req.url.decode("utf-8") if isinstance(req.url, bytes) else req.url  # type: ignore[assignment]
        response.request = req
        response.connection = self
        return response

    def close(self) -> None:
        self._pools.clear()
        self._targets.clear()
        super().close()


class _Answer(requests.Response):
    """A ``requests.Response`` whose cookie jar is made, from the answer's ``Set-Cookie``, when first read.

    ``requests`` builds a jar and parses the answer's cookies into it for
    every response, a twentieth of a loopback round trip; most answers set no
    cookie and nobody reads the jar (the session's own jar gets the cookies
    either way, see ``DirectSender``).
    """

    @property
    def cookies(self) -> requests.cookies.RequestsCookieJar:
        jar: Optional[requests.cookies.RequestsCookieJar] = self.__dict__.get("_jar")
        if jar is None:
            jar = requests.cookies.cookiejar_from_dict({})  # type: ignore[no-untyped-call]
            if self.raw is not None and self.request is not None:
                requests.cookies.extract_cookies_to_jar(jar, self.request, self.raw)  # type: ignore[no-untyped-call]
            self.__dict__["_jar"] = jar
        return jar

    @cookies.setter
    def cookies(self, jar: requests.cookies.RequestsCookieJar) -> None:
        self.__dict__["_jar"] = jar


#: What a fresh ``requests.Response`` holds, but its cookie jar (and its list of redirects, made anew each time).
_FRESH_ANSWER = {name: value for name, value in vars(requests.Response()).items() if name not in ("cookies", "history")}


__all__ = ["DirectAdapter", "DirectSender"]
