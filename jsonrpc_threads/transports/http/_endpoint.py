"""The server's URL over one ``requests.Session``: the headers of each request, and the request itself.

Every HTTP request the transport makes (POST, the GETs of resumption and of
the listen stream, DELETE) goes through :meth:`Endpoint.request`, which

- builds the request and runs the ``auth`` hook (``requests`` calls it while
  preparing), then sends it only if its exchange still stands (neither
  stopped nor past its deadline: a slow hook must not send a request that
  nobody waits for any more);
- bounds connecting and waiting for the answer's headers by the exchange's
  deadline, and never follows a redirect;
- marks the thread for the connection bookkeeping (:mod:`._connections`) and
  for the log filter (:mod:`._redact`), and translates every failure at the
  one edge where network errors enter (:mod:`._errors`).

Thread-safety: any number of threads may make requests at once.
"""

from __future__ import annotations

import logging
import threading
from typing import Callable, Dict, Mapping, Optional, Tuple, Union
from urllib.parse import urlsplit

import requests
import requests.auth

from ...errors import HttpError, JsonRpcError
from ._connections import Connections, carrying, make_session, runs_user_code
from ._direct import DirectSender
from ._errors import DeadlinePassed, NetworkErrors, closed_error, redirect_error
from ._exchange import Exchange
from ._redact import LogScope, Secrets, install_log_filter, redact_headers, url_label
from ._session import SessionState

logger = logging.getLogger(__name__)

#: Called before every request for more headers (fresh tokens).
HeaderProvider = Callable[[], Mapping[str, str]]


def check_settings(
    url: str,
    *,
    max_workers: int,
    max_message_bytes: int,
    retries: Tuple[str, int],
    connect_timeout: float,
    read_timeout: float,
) -> None:
    """Refuse the settings an HTTP transport cannot work with.

    ``retries`` is (the parameter's name, its value): resumptions or reconnects.

    Raises:
        ValueError: naming the setting (never the URL's credentials or query).
    """
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"not an http(s) URL: {url_label(url)!r}")
    if max_workers < 1:
        raise ValueError("max_workers must be at least 1")
    if max_message_bytes <= 0:
        raise ValueError("max_message_bytes must be positive")
    name, value = retries
    if value < 0:
        raise ValueError(f"{name} must be >= 0")
    if not connect_timeout > 0 or not read_timeout > 0:
        raise ValueError("connect_timeout and read_timeout must be positive")


class Endpoint:
    """One server URL, its headers, its connections and its session.

    Args:
        url: the endpoint.
        label: the URL without credentials or query (for logs).
        headers: sent with every request.
        auth: a ``requests.auth.AuthBase``, or ``None``.
        header_provider: called before every request for more headers.
        timeouts: (connect, read) seconds.
        verify: TLS verification, as in ``requests``.
        pool_maxsize: connections kept alive.
        closing: set once the transport closes.

    Attributes:
        session: the MCP session (id, protocol version).
        runs_user_code: True when ``auth`` or ``header_provider`` may run code
            that blocks while a request is made (see ``HttpTransport``).
    """

    def __init__(
        self,
        url: str,
        label: str,
        *,
        headers: Mapping[str, str],
        auth: Optional[requests.auth.AuthBase],
        header_provider: Optional[HeaderProvider],
        timeouts: Tuple[float, float],
        verify: Union[bool, str],
        pool_maxsize: int,
        closing: threading.Event,
    ) -> None:
        self.url = url
        self.label = label
        self.timeouts = timeouts
        self.session = SessionState(label)
        self.connections = Connections()
        self._http = make_session(url, auth, verify, self.connections, pool_maxsize)
        self._direct = DirectSender(self._http)
        self._static_headers: Dict[str, str] = dict(headers)
        self._header_provider = header_provider
        self._closing = closing
        self._secrets = Secrets(url, self._static_headers)
        self.runs_user_code = header_provider is not None or runs_user_code(self._http.auth)
        install_log_filter()

    def errors(self, what: str, exchange: Exchange) -> NetworkErrors:
        """The error translation for doing ``what`` within ``exchange``."""
        return NetworkErrors(self.label, what, self.timeouts, self._closing.is_set, exchange.past_deadline)

    def headers(self, accept: str) -> Dict[str, str]:
        """The headers of one request: static, then the provider's, then Accept and the session's.

        Raises:
            HttpError: the header provider failed.
        """
        headers = dict(self._static_headers)
        provider = self._header_provider
        if provider is not None:
            try:
                headers.update(provider())
            except JsonRpcError:
                raise
            except Exception as exc:
                raise HttpError(f"{self.label}: header_provider failed: {type(exc).__name__}") from None
        headers["Accept"] = accept
        self.session.add_headers(headers)
        return headers

    def request(
        self,
        method: str,
        headers: Dict[str, str],
        exchange: Exchange,
        *,
        data: Optional[bytes] = None,
        timeout: Optional[Tuple[float, float]] = None,
        while_closing: bool = False,
        target: Optional[str] = None,
    ) -> requests.Response:
        """Send one HTTP request and return its answer, its body still to be read (streamed).

        ``target``: another URL of the same server to send it to (the POST URL
        the legacy HTTP+SSE transport is given); its query is a secret too.

        Raises:
            TransportClosed: the transport is (being) closed.
            DeadlinePassed: the exchange's deadline passed (or it was stopped)
                before the request could go out or be answered.
            HttpConnectionError: the connection failed or timed out.
            HttpError: any other failure to send, or a redirect (refused).
        """
        if self._closing.is_set() and not while_closing:
            raise closed_error()
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug("%s: %s %s", self.label, method, redact_headers(headers))
        what = f"{method} failed"
        secrets = self._secrets if target is None else self._secrets.including(target)
        with LogScope(secrets, headers), carrying(exchange), self.errors(what, exchange):
            url = self.url if target is None else target
            prepared = self._direct.prepare(method, url, headers, data)
            direct = prepared is not None
            if prepared is None:  # a proxy serves the URL: the general path, which adds its credentials
                prepared = self._http.prepare_request(requests.Request(method, url, headers=headers, data=data))
            # The auth hook ran while preparing, for as long as it liked.
            if exchange.stopped:
                raise DeadlinePassed(f"{self.label}: {what}: the exchange was abandoned")
            if timeout is None:
                timeout = self.timeouts
                left = exchange.time_left()  # socket.timeout once passed: DeadlinePassed
                if left is not None:
                    timeout = (min(timeout[0], left), min(timeout[1], left))
            if direct:
                response = self._direct.send(prepared, timeout)
            else:
                response = self._http.send(prepared, timeout=timeout, stream=True, allow_redirects=False)
        status = response.status_code
        if logger.isEnabledFor(logging.DEBUG):
            media_type = response.headers.get("Content-Type", "-")
            logger.debug("%s: %s answered %d %s", self.label, method, status, media_type)
        if 300 <= status < 400:
            location = response.headers.get("Location", "")
            response.close()
            raise redirect_error(self.label, status, location)
        return response

    def shutdown_all(self) -> None:
        """Shut down every connection (reads in progress end at once), and any made later."""
        self.connections.shutdown_all()

    def close(self) -> None:
        """Close the session's pools and every socket (once no thread uses them)."""
        self._http.close()
        self.connections.close_all()


__all__ = ["Endpoint", "HeaderProvider", "check_settings"]
