"""Secrets kept out of log lines: redacted headers, URL labels, and a filter on the lines urllib3 writes for us.

Theory of operation.  The transport's own log lines hold no secret by
construction: they name the server by ``url_label`` (no user info, query
or fragment) and show headers only through ``redact_headers``.  The lines
that urllib3 writes while it carries our requests are another matter:
``urllib3.connectionpool`` logs every request line at DEBUG with its path
*and query string* (where some servers expect a token), and a header parse
warning logs the whole URL.  So every HTTP request of a transport runs inside
a ``LogScope``, which marks the thread; a ``logging.Filter`` on the
loggers of urllib3 and requests rewrites each record made on a marked thread,
replacing the transport's known secrets (the URL's query string and user info,
the values of secret headers, those added by ``header_provider`` included)
and anything shaped like one (a URL's query, ``user:password@``, ``Bearer
...``) with ``<redacted>``.  Records made on other threads, or outside our
requests, are never touched, and nothing is done unless a logger is enabled
for the record's level (urllib3 checks that before it makes a record).

Thread-safety: everything here may be used from any thread, and in a process
forked from one that was using it (the lock below is made anew in the child).
"""

from __future__ import annotations

import logging
import re
import threading
from types import TracebackType
from typing import Dict, List, Mapping, Optional, Tuple, Type
from urllib.parse import parse_qsl, urlsplit

from ..runtime.fork import at_fork_in_child

REDACTED = "<redacted>"
#: The loggers (and their children) whose records a ``LogScope`` rewrites.
LIBRARY_LOGGER_PREFIXES = ("urllib3", "requests")
#: Loggers known to write URLs, filtered even before they exist.
_KNOWN_LIBRARY_LOGGERS = (
    "urllib3",
    "urllib3.connection",
    "urllib3.connectionpool",
    "urllib3.poolmanager",
    "urllib3.response",
    "urllib3.util.retry",
    "requests",
)
#: Shorter values are too common to replace wherever they appear (the patterns still apply).
_MIN_SECRET_CHARS = 4
_SECRET_HEADER_NAMES = frozenset({"authorization", "proxy-authorization", "cookie", "set-cookie"})
_SECRET_HEADER_WORDS = ("token", "key", "secret", "password", "credential")
_QUERY = re.compile(r"\?[^\s\"'<>]+")
_USERINFO = re.compile(r"(?<=//)[^/\s@\"'<>]*@")
_CREDENTIAL = re.compile(r"(?i)\b(bearer|basic|token)(\s+)[^\s\"',;]+")

_local = threading.local()


def is_secret_header(name: str) -> bool:
    """True for a header whose value must never be logged (see ``redact_headers``)."""
    lowered = name.lower()
    return lowered in _SECRET_HEADER_NAMES or any(word in lowered for word in _SECRET_HEADER_WORDS)


def redact_headers(headers: Mapping[str, str]) -> Dict[str, str]:
    """A copy of ``headers`` fit for a log line: secret values replaced.

    ``Authorization``, ``Proxy-Authorization``, ``Cookie``, ``Set-Cookie`` and
    every header whose name contains ``token``, ``key``, ``secret``,
    ``password`` or ``credential`` (in any case) show as ``<redacted>``.
    """
    return {name: REDACTED if is_secret_header(name) else value for name, value in headers.items()}


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


class Secrets:
    """What must never appear in a log line one transport causes (fixed when it is made).

    Args:
        url: the endpoint (its query string, query values and user info are secrets).
        headers: the static headers (the values of secret ones are secrets).
    """

    __slots__ = ("_values",)

    def __init__(self, url: str, headers: Mapping[str, str]) -> None:
        parts = urlsplit(url)
        values: List[str] = []
        if parts.query:
            values.append(parts.query)
            values.extend(value for _, value in parse_qsl(parts.query, keep_blank_values=True))
        if parts.password:
            values.append(parts.password)
        if "@" in parts.netloc:
            values.append(parts.netloc.rsplit("@", 1)[0])
        values.extend(_header_secrets(headers))
        self._values: Tuple[str, ...] = _longest_first(values)

    def including(self, url: str) -> Secrets:
        """These secrets and those of another URL of the same server (the legacy transport's POST URL)."""
        extended = Secrets(url, {})
        extended._values = _longest_first([*self._values, *extended._values])
        return extended

    def redact(self, text: str, headers: Optional[Mapping[str, str]] = None) -> str:
        """``text`` with every secret replaced (also those among ``headers``, the request's own)."""
        text = _USERINFO.sub(REDACTED + "@", text)
        text = _QUERY.sub("?" + REDACTED, text)
        text = _CREDENTIAL.sub(lambda found: found.group(1) + found.group(2) + REDACTED, text)
        values = self._values
        if headers:
            values = _longest_first([*values, *_header_secrets(headers)])
        for value in values:
            if value in text:
                text = text.replace(value, REDACTED)
        return text


class LogScope:
    """``with LogScope(secrets, headers):`` around an HTTP request: see the module docstring.

    Cheap (two attribute writes); scopes nest.
    """

    __slots__ = ("_headers", "_previous", "_secrets")

    def __init__(self, secrets: Secrets, headers: Optional[Mapping[str, str]] = None) -> None:
        self._secrets = secrets
        self._headers = headers
        self._previous: Optional[LogScope] = None

    def __enter__(self) -> LogScope:
        self._previous = getattr(_local, "scope", None)
        _local.scope = self
        return self

    def __exit__(
        self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException], tb: Optional[TracebackType]
    ) -> None:
        _local.scope = self._previous
        self._previous = None

    def redact(self, text: str) -> str:
        return self._secrets.redact(text, self._headers)


class _RedactingFilter(logging.Filter):
    """Rewrites the records made inside a ``LogScope``; never drops one."""

    def filter(self, record: logging.LogRecord) -> bool:
        scope: Optional[LogScope] = getattr(_local, "scope", None)
        if scope is None:
            return True
        try:
            message = record.getMessage()
        except Exception:  # a malformed record: drop its arguments, they may hold a secret
            message = str(record.msg)
        record.msg = scope.redact(message)
        record.args = None
        if record.exc_info:
            record.exc_text = scope.redact(logging.Formatter().formatException(record.exc_info))
            record.exc_info = None
        elif record.exc_text:
            record.exc_text = scope.redact(record.exc_text)
        if record.stack_info:
            record.stack_info = scope.redact(record.stack_info)
        return True


_FILTER = _RedactingFilter()
# _install_lock guards _loggers_seen: how many loggers existed at the last install.
_install_lock = threading.Lock()
_loggers_seen = -1


def _new_install_lock() -> None:
    """In a forked child: a thread of the parent may have held the lock at the fork."""
    global _install_lock
    _install_lock = threading.Lock()


at_fork_in_child(_new_install_lock)


def install_log_filter() -> None:
    """Put the filter on the loggers of urllib3 and requests (idempotent; cheap while no logger was added)."""
    global _loggers_seen
    registry = logging.root.manager.loggerDict
    with _install_lock:
        if len(registry) == _loggers_seen:
            return
        names = set(_KNOWN_LIBRARY_LOGGERS)
        names.update(name for name in list(registry) if name.split(".", 1)[0] in LIBRARY_LOGGER_PREFIXES)
        for name in names:
            logger = logging.getLogger(name)
            if _FILTER not in logger.filters:
                logger.addFilter(_FILTER)
        _loggers_seen = len(registry)


def _header_secrets(headers: Mapping[str, str]) -> List[str]:
    secrets: List[str] = []
    for name, value in headers.items():
        if value and is_secret_header(name):
            text = str(value)
            secrets.append(text)
            scheme, _, credential = text.partition(" ")
            if credential and scheme.isalpha():
                secrets.append(credential)  # "Bearer <token>": the token alone too
    return secrets


def _longest_first(values: List[str]) -> Tuple[str, ...]:
    """Distinct values long enough to replace, longest first (so no part of one is left)."""
    return tuple(sorted({value for value in values if len(value) >= _MIN_SECRET_CHARS}, key=len, reverse=True))


__all__ = ["REDACTED", "LogScope", "Secrets", "install_log_filter", "is_secret_header", "redact_headers", "url_label"]
