"""What an HTTP transport is made with, written once: the settings both HTTP transports take.

``HttpTransport(url, **keywords)`` and ``SseTransport(url, **keywords)`` keep
their keyword signatures (the public API); each turns them into one
``HttpSettings`` at once, checks them there, and hands that object to
everything below it.  ``transport.settings`` is that object, and
``SseTransport.from_settings(url, settings)`` (or ``HttpTransport.from_settings``)
makes a transport with the same settings: what the MCP layer needs to fall
back from Streamable HTTP to the legacy transport of the same server.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Callable, Dict, Mapping, Optional, Union
from urllib.parse import urlsplit

from ..redact import redact_headers, url_label
from .errors import header_problem
from .wire import (
    DEFAULT_CONNECT_TIMEOUT_S,
    DEFAULT_MAX_MESSAGE_BYTES,
    DEFAULT_MAX_RESUMPTIONS,
    DEFAULT_MAX_WORKERS,
    DEFAULT_READ_TIMEOUT_S,
)

if TYPE_CHECKING:
    import requests.auth

#: Called before every request for more headers (fresh tokens).
HeaderProvider = Callable[[], Mapping[str, str]]
#: How requests go out (``HttpTransport(sender=)``): ``"direct"``, straight through the
#: session's adapter (``direct``), or ``"requests"``, ``Session.send`` as it is (the plain one).
SENDERS = ("direct", "requests")


@dataclass(frozen=True)
class HttpSettings:
    """The settings of an HTTP transport, all but its URL.  Immutable: any thread may share one.

    Attributes:
        headers: sent with every request (a read-only copy of what was given).
        auth: a ``requests.auth.AuthBase`` applied to every request, or ``None``.
        header_provider: called before every request for more headers; what it
            returns wins over ``headers``.
        connect_timeout: seconds to wait for a connection.
        read_timeout: seconds one socket read may wait for data.
        max_workers: threads carrying requests.
        max_message_bytes: the largest JSON body or SSE event accepted.
        max_resumptions: how often a broken SSE stream may be resumed
            (``SseTransport`` calls it ``max_reconnects``).
        verify: TLS verification, as in ``requests`` (a bool or a CA bundle path).
        sender: how requests go out, one of ``SENDERS`` (see ``HttpTransport``).

    Raises:
        ValueError: (when made) for a limit, a timeout or a sender that cannot work, naming it.
    """

    headers: Mapping[str, str] = field(default_factory=dict)
    auth: Optional[requests.auth.AuthBase] = None
    header_provider: Optional[HeaderProvider] = None
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT_S
    read_timeout: float = DEFAULT_READ_TIMEOUT_S
    max_workers: int = DEFAULT_MAX_WORKERS
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    max_resumptions: int = DEFAULT_MAX_RESUMPTIONS
    verify: Union[bool, str] = True
    sender: str = "direct"

    def __post_init__(self) -> None:
        object.__setattr__(self, "headers", MappingProxyType(dict(self.headers or {})))
        for name, value in self.headers.items():
            problem = header_problem(name, value)
            if problem is not None:
                raise ValueError(problem)
        if self.max_workers < 1:
            raise ValueError("max_workers must be at least 1")
        if self.max_message_bytes <= 0:
            raise ValueError("max_message_bytes must be positive")
        if self.max_resumptions < 0:
            raise ValueError("max_resumptions must be >= 0")
        if not self.connect_timeout > 0 or not self.read_timeout > 0:
            raise ValueError("connect_timeout and read_timeout must be positive")
        if self.sender not in SENDERS:
            raise ValueError(f"sender must be one of {SENDERS}, not {self.sender!r}")

    def __repr__(self) -> str:
        """The settings with the values of secret headers redacted, and ``auth`` named by its type only."""
        shown = {item.name: getattr(self, item.name) for item in fields(self)}
        shown["headers"] = redact_headers(self.headers)
        if self.auth is not None:
            shown["auth"] = _Shown(f"<{type(self.auth).__name__}>")
        return f"HttpSettings({', '.join(f'{name}={value!r}' for name, value in shown.items())})"

    def keywords(self) -> Dict[str, Any]:
        """The settings as the keywords of ``HttpTransport`` (and of ``SseTransport``, but ``max_reconnects``)."""
        return {item.name: getattr(self, item.name) for item in fields(self)}


class _Shown(str):
    """Text shown as it is in a ``repr`` (no quotes)."""

    def __repr__(self) -> str:
        return str(self)


def check_url(url: str) -> None:
    """Refuse a URL an HTTP transport cannot use.

    Raises:
        ValueError: naming the URL without its credentials or query.
    """
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"not an http(s) URL: {url_label(url)!r}")


__all__ = ["SENDERS", "HeaderProvider", "HttpSettings", "check_url"]
