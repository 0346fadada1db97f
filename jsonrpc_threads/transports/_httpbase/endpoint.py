"""The server's URL over one ``requests.Session``: the headers of each request, and the request itself.

Every HTTP request the transport makes (POST, the GETs of resumption and of
the listen stream, DELETE) goes through ``Endpoint.request``, which

- builds the request and runs the ``auth`` hook (``requests`` calls it while
  preparing), then sends it only if its exchange still stands (neither
  stopped nor past its deadline: a slow hook must not send a request that
  nobody waits for any more);
- bounds connecting and waiting for the answer's headers by the exchange's
  deadline, and never follows a redirect;
- marks the thread for the connection bookkeeping (``connections``) and
  for the log filter (``jsonrpc_threads.transports.redact``), and
  translates every failure at the one edge where network errors enter
  (``errors``).

Thread-safety: any number of threads may make requests at once.
"""

from __future__ import annotations

import logging
import threading
from typing import Callable, Dict, Optional, Tuple

import requests

from ...errors import HttpError, JsonRpcError
from ..redact import LogScope, Secrets, install_log_filter, redact_headers, url_label
from .connections import Connections, PlainSender, TrackedAdapter, carrying, make_session, runs_user_code
from .direct import DirectAdapter, DirectSender
from .errors import DeadlinePassed, NetworkErrors, closed_error, redirect_error
from .exchange import Exchange
from .settings import HttpSettings

logger = logging.getLogger(__name__)


class Endpoint:
    """One server URL, its headers and its connections.

    Args:
        url: the endpoint.
        settings: the transport's settings (headers, hooks, timeouts, TLS).
        pool_maxsize: connections kept alive.
        closing: set once the transport closes.
        add_headers: puts a transport's own headers into every request's
            (Streamable HTTP: the session's), after the others.

    Attributes:
        label: the URL without credentials or query, for logs and thread names.
        closing: as given.
        runs_user_code: True when ``auth`` or ``header_provider`` may run code
            that blocks while a request is made (see ``HttpTransport``).
    """

    def __init__(
        self,
        url: str,
        settings: HttpSettings,
        *,
        pool_maxsize: int,
        closing: threading.Event,
        add_headers: Optional[Callable[[Dict[str, str]], None]] = None,
    ) -> None:
        self.url = url
        self.label = url_label(url)
        self.timeouts = (settings.connect_timeout, settings.read_timeout)
        self.closing = closing
        self.connections = Connections()
        # How requests go out (settings.sender): the direct path (.direct), a measured strategy,
        # or the plain one it must behave like, TrackedAdapter and PlainSender (.connections).
        self._sender: PlainSender
        if settings.sender == "direct":
            self._http = make_session(
                url, settings.auth, settings.verify, DirectAdapter(self.connections, pool_maxsize)
            )
            self._sender = DirectSender(self._http)
        else:
            self._http = make_session(
                url, settings.auth, settings.verify, TrackedAdapter(self.connections, pool_maxsize)
            )
            self._sender = PlainSender(self._http)
        self._static_headers: Dict[str, str] = dict(settings.headers)
        self._header_provider = settings.header_provider
        self._add_headers = add_headers
        self._secrets = Secrets(url, self._static_headers)
        self.runs_user_code = settings.header_provider is not None or runs_user_code(self._http.auth)
        install_log_filter()

    def errors(self, what: str, exchange: Exchange) -> NetworkErrors:
        """The error translation for doing ``what`` within ``exchange``."""
        return NetworkErrors(self.label, what, self.timeouts, self.closing.is_set, exchange.past_deadline)

    def headers(self, accept: str) -> Dict[str, str]:
        """The headers of one request: static, then the provider's, then Accept and the transport's own.

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
            except BaseException as exc:  # SystemExit too: this request fails, never hangs (Ctrl-C passes)
                if _interrupts_caller(exc):
                    raise
                raise HttpError(f"{self.label}: header_provider failed: {type(exc).__name__}") from None
        headers["Accept"] = accept
        if self._add_headers is not None:
            self._add_headers(headers)
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
        if self.closing.is_set() and not while_closing:
            raise closed_error()
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug("%s: %s %s", self.label, method, redact_headers(headers))
        what = f"{method} failed"
        secrets = self._secrets if target is None else self._secrets.including(target)
        with LogScope(secrets, headers), carrying(exchange), self.errors(what, exchange):
            url = self.url if target is None else target
            try:
                send = self._sender.prepare(method, url, headers, data)
            except Exception:
                raise
            except BaseException as exc:  # the auth hook's SystemExit: this request fails, never hangs
                if _interrupts_caller(exc):
                    raise
                raise HttpError(f"{self.label}: {what}: the auth hook raised {type(exc).__name__}") from None
            # The auth hook ran while preparing, for as long as it liked.
            if exchange.stopped:
                raise DeadlinePassed(f"{self.label}: {what}: the exchange was abandoned")
            if timeout is None:
                timeout = self.timeouts
                left = exchange.time_left()  # socket.timeout once passed: DeadlinePassed
                if left is not None:
                    timeout = (min(timeout[0], left), min(timeout[1], left))
            response = send(timeout)
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

    def release_in_fork(self) -> None:
        """In a process forked since: close this process's copies of the sockets; no shutdown, no lock.

        (What a transport's ``release_in_fork`` does, see
        ``SurvivesFork``.)
        """
        self.connections.release_in_fork()

    def close(self) -> None:
        """Close the session's pools and every socket (once no thread uses them)."""
        self._http.close()
        self.connections.close_all()


def _interrupts_caller(exc: BaseException) -> bool:
    """True for a Ctrl-C on the main thread: it stops the program, not just this request."""
    return isinstance(exc, KeyboardInterrupt) and threading.current_thread() is threading.main_thread()


__all__ = ["Endpoint"]
