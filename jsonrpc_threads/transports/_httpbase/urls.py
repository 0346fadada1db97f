"""Where a URL really leads: the origin ``requests`` connects to, and the spellings that mislead a reader.

Theory of operation.  A decision to send credentials somewhere (an A2A
card's interface, an OAuth resource or issuer) compares origins, and an
origin read from a URL by one parser may not be the one another parser
connects to.  ``urllib.parse`` ends the authority of
``http://127.0.0.1:1\\@127.0.0.1:2/rpc`` at the last ``@`` and reads host
``127.0.0.1:2``; ``requests`` (through urllib3) ends it at the backslash,
prepares ``http://127.0.0.1:1/%5C@127.0.0.1:2/rpc`` and connects to port 1.
So ``connect_origin`` reads the origin from the URL as ``requests`` prepares
it (``PreparedRequest.prepare_url``), the very string its adapter takes the
host and port from: what is trusted is where the bytes go.

``url_hazard`` names what no URL from the network needs and what makes
parsers disagree: a backslash, a control character (a tab or a newline is
dropped by one parser and kept by another), or user info (``user@host``:
credentials of its own, and the classic way to dress one host as another).
Callers refuse such a URL with a clear error rather than guess.

Pure: no I/O, no threads; any thread may call these.
"""

from __future__ import annotations

from typing import Optional, Tuple
from urllib.parse import urlsplit

import requests

from ..redact import url_label

#: An origin: (scheme, host, port), the scheme and host in lower case, the port explicit.
Origin = Tuple[str, str, int]
DEFAULT_PORTS = {"http": 80, "https": 443}


def prepared_url(url: str) -> str:
    """``url`` as ``requests`` prepares it for sending (its host and port are where it connects).

    Raises:
        ValueError: a URL ``requests`` cannot send to (the message holds no credentials or query).
    """
    request = requests.PreparedRequest()
    try:
        request.prepare_url(url, None)
    except (requests.RequestException, ValueError, UnicodeError):
        raise ValueError(f"not a URL requests can send to: {url_label(url)!r}") from None
    if request.url is None:  # pragma: no cover - prepare_url sets it or raises
        raise ValueError(f"not a URL requests can send to: {url_label(url)!r}")
    return request.url


def connect_origin(url: str) -> Origin:
    """The origin ``requests`` connects to for ``url``: read from the prepared URL, as its adapter reads it.

    Raises:
        ValueError: not an ``http(s)://host`` URL ``requests`` can send to (the
            message holds no credentials or query).
    """
    parts = urlsplit(prepared_url(url))
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:
        port = -1
    if scheme not in DEFAULT_PORTS or not parts.hostname or port == -1:
        raise ValueError(f"not an http(s) URL with a host: {url_label(url)!r}")
    return scheme, parts.hostname.lower(), port if port is not None else DEFAULT_PORTS[scheme]


def url_hazard(url: str, *, allow_user_info: bool = False) -> Optional[str]:
    """What in ``url`` may make parsers disagree on its host, in words, or ``None`` when nothing does.

    A backslash, a control character (C0, DEL or C1, a tab or newline
    included), or user info in its authority (``user[:password]@``).

    Args:
        url: the URL, absolute or relative.
        allow_user_info: user info is no hazard (a URL the caller wrote, with
            credentials of their own, rather than one from the network).
    """
    if "\\" in url:
        return "a backslash"
    if any(ord(char) < 0x20 or 0x7F <= ord(char) <= 0x9F for char in url):
        return "a control character"
    if not allow_user_info and "@" in urlsplit(url).netloc:
        return "user info (user@host)"
    return None


__all__ = ["DEFAULT_PORTS", "Origin", "connect_origin", "prepared_url", "url_hazard"]
