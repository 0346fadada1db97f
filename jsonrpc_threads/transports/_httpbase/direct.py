"""Sending a request straight through the session's adapter: what ``Session.send`` does for us, at about half its cost.

Theory of operation.  ``requests.Session.prepare_request`` and
``Session.send`` are general: they merge settings, cookies and hooks that
may change between requests, look up proxies, and follow redirects.  A
transport's session never changes its URL, its settings or its hooks, so
most of that work gives the same answer every time; on a loopback server
it was half the time of a whole round trip (see ``benchmarks/README.md``).

:class:`DirectSender` keeps what matters, in the order ``requests`` does it:

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
proxies.  A URL that a proxy serves is sent through ``Session.send``, which
adds the proxy's credentials: :meth:`DirectSender.prepare` returns ``None``
for it and the caller takes the general path.

Thread-safety: any number of threads may send at once (the adapter's pools
are thread-safe; the cached URLs are written once per URL, idempotently, and
the remembered valid header fields only ever grow, to a bound).
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Set, Tuple

import requests
import requests.cookies
import requests.hooks
import requests.utils
from requests.structures import CaseInsensitiveDict

from ..redact import is_secret_header

#: How many distinct URLs keep a prepared form (the endpoint, the legacy POST URL, a few more).
_MAX_CACHED_URLS = 16
#: How many header fields are remembered as valid (a header provider may vary its values).
_MAX_VALID_HEADERS = 256


class DirectSender:
    """Sends requests for one session through its mounted adapter.

    Args:
        session: the transport's session; its settings (proxies, verify,
            cert, headers, hooks, auth) must not change after this is made,
            except its cookie jar, which is read on every request.
    """

    def __init__(self, session: requests.Session) -> None:
        self._session = session
        # requests' own defaults (User-Agent, Accept-Encoding, Accept, Connection): valid by construction.
        self._default_headers = [header for header in session.headers.items() if header[1] is not None]
        # URL -> (prepared URL, whether it holds credentials), or None when a proxy serves it.
        self._urls: Dict[str, Optional[Tuple[str, bool]]] = {}
        # Header fields already found valid (the same few go out with every request), credentials aside.
        self._valid_headers: Set[Tuple[str, str]] = set()

    def prepare(
        self, method: str, url: str, headers: Dict[str, str], data: Optional[bytes]
    ) -> Optional[requests.PreparedRequest]:
        """The request as ``Session.prepare_request`` makes it, or ``None`` if ``url`` needs a proxy.

        Runs the ``auth`` hook, for as long as it takes.

        Raises:
            requests.RequestException: a header ``requests`` refuses
                (``InvalidHeader``); an exception from the ``auth`` hook as is.
        """
        known = self._prepared_url(url)
        if known is None:
            return None
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
        return request

    def send(self, request: requests.PreparedRequest, timeout: Tuple[float, float]) -> requests.Response:
        """Send a request from :meth:`prepare`; the answer's body is left to stream.

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


__all__ = ["DirectSender"]
