"""The default way a user authorizes: the browser, and a one-shot listener on 127.0.0.1.

Theory of operation.  The authorization server sends the user's browser back to
the client's redirect URI with ``code`` and ``state`` in the query.  A desktop
or command-line client receives that on a loopback address (RFC 8252 section
7.3): ``RedirectListener`` binds ``127.0.0.1`` (a free port by default)
*before* the authorization URL is built, so the URL can name the port, then
serves requests on the waiting thread itself (no thread of its own) until
one arrives on the redirect path carrying ``code``, ``error`` or ``state``, or
until the timeout.  Other requests (a browser's ``/favicon.ico``) get a 404 and
the listener keeps waiting.  The socket is closed as soon as the redirect
arrived, so nothing stays listening.

The listener never logs a request line (it carries the authorization code).
"""

from __future__ import annotations

import html
import http.server
import logging
import socket
import sys
import time
import webbrowser
from typing import Callable, Optional, Tuple
from urllib.parse import parse_qs, urlsplit, urlunsplit

from ..errors import AuthorizationError
from ..runtime.closing import Closing
from ._metadata import is_loopback_host

logger = logging.getLogger(__name__)

#: Seconds a user gets to finish authorizing in the browser.
DEFAULT_AUTHORIZATION_TIMEOUT_S = 300.0
#: Seconds the listener waits for one connection to send its request.
REQUEST_READ_TIMEOUT_S = 5.0
#: The path of the redirect URI the listener serves.
DEFAULT_REDIRECT_PATH = "/callback"
LOOPBACK_HOST = "127.0.0.1"

_DONE_PAGE = (
    "<!doctype html><html><head><meta charset='utf-8'><title>{title}</title></head>"
    "<body style='font-family: sans-serif'><h1>{title}</h1><p>{text}</p></body></html>"
)

BrowserOpener = Callable[[str], object]


class _Server(http.server.HTTPServer):
    """An HTTP server that remembers the first redirect it received."""

    def __init__(self, address: Tuple[str, int], path: str, public_base: str) -> None:
        self.redirect_path = path
        self.public_base = public_base
        self.received: Optional[str] = None
        self.address_family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        super().__init__(address, _Handler)

    def handle_error(self, request: object, client_address: object) -> None:
        logger.debug("redirect listener: a connection failed", exc_info=True)


class _Handler(http.server.BaseHTTPRequestHandler):
    server: _Server
    timeout = REQUEST_READ_TIMEOUT_S  # a connection that never sends a request does not hold us

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        query = parse_qs(parts.query)
        if parts.path != self.server.redirect_path or not ({"code", "error", "state"} & query.keys()):
            self._answer(404, "Not found", "This is not the redirect this client is waiting for.")
            return
        if self.server.received is None:
            self.server.received = self.server.public_base + self.path
        if "error" in query:
            self._answer(200, "Authorization failed", "The client was told. You can close this window.")
        else:
            self._answer(200, "Authorization complete", "You can close this window and return to the application.")

    def _answer(self, status: int, title: str, text: str) -> None:
        body = _DONE_PAGE.format(title=html.escape(title), text=html.escape(text)).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass  # the request line carries the authorization code


class RedirectListener(Closing):
    """A one-shot HTTP listener on a loopback address for the authorization redirect.

    Bound when constructed (the port is known at once, see
    ``redirect_uri``); closed by ``close``, by leaving its ``with``
    block, or once ``wait`` returned.  Not thread-safe: one thread waits.

    Args:
        redirect_uri: the redirect URI to serve (``http``, a loopback host, a
            port and a path); ``None`` binds a free port on ``127.0.0.1`` with
            the path ``/callback``.

    Raises:
        ValueError: for a redirect URI that is not ``http://`` on a loopback host.
        OSError: when the address cannot be bound (the port is taken).
    """

    def __init__(self, redirect_uri: Optional[str] = None) -> None:
        if redirect_uri is None:
            scheme, host, port, path = "http", LOOPBACK_HOST, 0, DEFAULT_REDIRECT_PATH
        else:
            parts = urlsplit(redirect_uri)
            host = parts.hostname or ""
            if parts.scheme != "http" or not is_loopback_host(host):
                raise ValueError("the redirect listener serves only http:// on a loopback host (127.0.0.1, localhost)")
            scheme, port, path = "http", parts.port or 80, parts.path or "/"
        bind_host = LOOPBACK_HOST if host.lower() == "localhost" else host.strip("[]")
        self._server = _Server((bind_host, port), path, "")
        bound_port = self._server.server_address[1]
        netloc_host = f"[{host.strip('[]')}]" if ":" in host else host
        base = urlunsplit((scheme, f"{netloc_host}:{bound_port}", "", "", ""))
        self._server.public_base = base
        #: The redirect URI to register and to send in the authorization request.
        self.redirect_uri = base + path
        self._closed = False

    def wait(self, timeout: Optional[float] = DEFAULT_AUTHORIZATION_TIMEOUT_S) -> str:
        """Serve until the redirect arrives; return the full URL the browser was sent to.

        Closes the listener before returning.

        Args:
            timeout: seconds to wait; ``None`` waits forever.

        Raises:
            AuthorizationError: no redirect arrived in time, or the listener is closed.
        """
        if self._closed:
            raise AuthorizationError("the redirect listener is closed")
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            while self._server.received is None:
                if deadline is None:
                    self._server.timeout = None
                else:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        raise AuthorizationError(
                            f"no authorization redirect arrived at {self.redirect_uri} within {timeout}s"
                        )
                    self._server.timeout = remaining
                self._server.handle_request()
            return self._server.received
        finally:
            self.close()

    def close(self) -> None:
        """Stop listening (idempotent)."""
        if not self._closed:
            self._closed = True
            self._server.server_close()

    def __repr__(self) -> str:
        return f"<RedirectListener {self.redirect_uri}{' closed' if self._closed else ''}>"


def _open_browser(url: str) -> object:
    # Printed too: the browser may open on another screen, or not at all (SSH, containers).
    print(f"Authorize in your browser; if it did not open, visit:\n\n    {url}\n", file=sys.stderr, flush=True)
    try:
        webbrowser.open(url)
    except webbrowser.Error:
        pass
    return None


class LoopbackAuthorizer:
    """The default ``on_authorize``: open the browser, receive the redirect on 127.0.0.1.

    ``OAuth`` uses it in two steps: ``listen``
    before building the authorization URL (whose ``redirect_uri`` names the
    listener's port), then ``open`` and ``RedirectListener.wait``.
    Called directly with an authorization URL it does both, binding the port
    named by that URL's ``redirect_uri``.  Thread-safe (each authorization
    has its own listener).

    Args:
        open_browser: ``callable(url)`` that shows the URL to the user; by
            default the URL is printed on stderr and ``webbrowser.open``
            opens it.
        timeout: seconds the user has to finish (``None``: no limit).
    """

    def __init__(
        self,
        *,
        open_browser: Optional[BrowserOpener] = None,
        timeout: Optional[float] = DEFAULT_AUTHORIZATION_TIMEOUT_S,
    ) -> None:
        self._open_browser: BrowserOpener = open_browser or _open_browser
        self.timeout = timeout

    def listen(self, redirect_uri: Optional[str] = None) -> RedirectListener:
        """Bind a ``RedirectListener`` (see there for ``redirect_uri``)."""
        return RedirectListener(redirect_uri)

    def open(self, authorization_url: str) -> None:
        """Show ``authorization_url`` to the user."""
        self._open_browser(authorization_url)

    def __call__(self, authorization_url: str) -> str:
        """Open ``authorization_url`` and wait for the redirect to its ``redirect_uri``.

        Raises:
            AuthorizationError: no usable ``redirect_uri`` in the URL, or no redirect in time.
        """
        values = parse_qs(urlsplit(authorization_url).query).get("redirect_uri")
        if not values:
            raise AuthorizationError("the authorization URL names no redirect_uri")
        try:
            listener = self.listen(values[0])
        except (ValueError, OSError) as exc:
            raise AuthorizationError(f"cannot listen for the authorization redirect: {exc}") from exc
        with listener:
            self.open(authorization_url)
            return listener.wait(self.timeout)


__all__ = [
    "DEFAULT_AUTHORIZATION_TIMEOUT_S",
    "DEFAULT_REDIRECT_PATH",
    "LoopbackAuthorizer",
    "RedirectListener",
]
