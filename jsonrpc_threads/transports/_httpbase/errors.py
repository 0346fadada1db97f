"""The one place where HTTP failures become this library's exceptions.

Two kinds of failure enter here, and nowhere else:

- an exception out of ``requests``, urllib3, ``http.client`` or a socket
  (``NetworkErrors``, a context manager around every call that touches
  the network, in the spirit of httpcore's ``map_exceptions``):
  ``TransportClosed`` while the transport is
  closing, ``DeadlinePassed`` once the exchange's deadline is over,
  ``HttpConnectionError`` for a refused, reset or
  timed-out connection, ``HttpError`` for the rest;
- an HTTP status that is not the answer we wait for (``status_error``,
  ``redirect_error``, ``stream_refused``): 404 to a request that carried
  a session id is ``SessionExpired``, a JSON-RPC
  error body is that error, a redirect is refused (never followed), anything
  else an ``HttpError`` with the status and an
  excerpt of the body.

The exceptions raised here never chain the library exception they replace
(``from None``): a urllib3 error's text holds the request's URL, query string
included, and whoever logs our exception with its traceback must not log that.
What went wrong at the socket (``Connection refused``) is kept in the message.

Pure translation: no I/O, no threads, no locks.
"""

from __future__ import annotations

import http.client
import json
import re
import socket
from types import TracebackType
from typing import Any, Callable, Dict, Mapping, Optional, Set, Tuple, Type

import requests
import urllib3.exceptions

from ...errors import HttpConnectionError, HttpError, JsonRpcError, SessionExpired, TransportClosed, error_from_response
from ..redact import url_label
from .wire import BODY_EXCERPT_CHARS

#: What a failing socket read or write can raise, at every layer.
NETWORK_ERRORS: Tuple[Type[BaseException], ...] = (
    requests.RequestException,
    urllib3.exceptions.HTTPError,
    http.client.HTTPException,
    OSError,
)
#: An HTTP field name (RFC 9110 section 5.1: ``1*tchar``).
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
#: An HTTP field value: visible ASCII, space and tab, no surrounding whitespace.
_FIELD_VALUE = re.compile(r"(?:[\x21-\x7e](?:[\x20\x09\x21-\x7e]*[\x21-\x7e])?)?")
#: ``requests`` errors that mean the connection (not the request) failed.
_CONNECTION_FAILURES: Tuple[Type[BaseException], ...] = (
    requests.ConnectionError,
    requests.Timeout,
    requests.exceptions.ChunkedEncodingError,
)


class DeadlinePassed(HttpConnectionError):
    """An exchange's deadline passed mid-way; its requests are the client's to fail (never reported)."""


def closed_error() -> TransportClosed:
    return TransportClosed("HTTP transport closed")


def excerpt(body: bytes) -> str:
    """The start of an answer's body, as text, for an error message."""
    return body[: BODY_EXCERPT_CHARS * 4].decode("utf-8", errors="replace")[:BODY_EXCERPT_CHARS]


def is_network_error(exc: BaseException) -> bool:
    """True for what the network layers raise (and not for our own errors, some of which are OSErrors)."""
    return isinstance(exc, NETWORK_ERRORS) and not isinstance(exc, JsonRpcError)


def network_error(
    exc: BaseException,
    *,
    label: str,
    what: str,
    timeouts: Tuple[float, float],
    closing: bool,
    deadline_passed: bool,
) -> JsonRpcError:
    """Our exception for ``exc``, raised by the network layers while doing ``what``."""
    if closing:
        return closed_error()
    if deadline_passed:
        return DeadlinePassed(f"{label}: {what}: the deadline passed")
    if isinstance(exc, requests.RequestException) and not isinstance(exc, _CONNECTION_FAILURES):
        return HttpError(f"{label}: {what}: {type(exc).__name__}: {root_cause(exc)}")
    if isinstance(exc, (requests.Timeout, urllib3.exceptions.TimeoutError, socket.timeout)):
        connect = isinstance(exc, (requests.ConnectTimeout, urllib3.exceptions.ConnectTimeoutError))
        kind, limit = ("connect", timeouts[0]) if connect else ("read", timeouts[1])
        return HttpConnectionError(f"{label}: {what}: {kind} timed out after {limit}s")
    return HttpConnectionError(f"{label}: {what}: {root_cause(exc)}")


class NetworkErrors:
    """``with NetworkErrors(...):`` translates whatever the network layers raise inside.

    Args:
        label: the transport's label.
        what: what is being done, for the message ("POST failed").
        timeouts: the transport's (connect, read) timeouts, for the message.
        closing: tells whether the transport is closing.
        deadline_passed: tells whether the exchange's deadline is over.
    """

    __slots__ = ("_closing", "_deadline_passed", "_label", "_timeouts", "_what")

    def __init__(
        self,
        label: str,
        what: str,
        timeouts: Tuple[float, float],
        closing: Callable[[], bool],
        deadline_passed: Callable[[], bool],
    ) -> None:
        self._label = label
        self._what = what
        self._timeouts = timeouts
        self._closing = closing
        self._deadline_passed = deadline_passed

    def translate(self, exc: BaseException) -> JsonRpcError:
        """Our exception for ``exc`` (a network error)."""
        return network_error(
            exc,
            label=self._label,
            what=self._what,
            timeouts=self._timeouts,
            closing=self._closing(),
            deadline_passed=self._deadline_passed(),
        )

    def __enter__(self) -> None:
        return None

    def __exit__(
        self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException], tb: Optional[TracebackType]
    ) -> None:
        if exc is not None and is_network_error(exc):
            raise self.translate(exc) from None


def check_message_headers(label: str, headers: Mapping[str, str]) -> None:
    """Refuse a message header whose name is not an RFC 9110 token or whose value holds what HTTP cannot carry.

    Raises:
        HttpError: naming the header (never its value: it may be a secret).
    """
    for name, value in headers.items():
        problem = header_problem(name, value)
        if problem is not None:
            raise HttpError(f"{label}: {problem.replace('header', 'message header', 1)}")


def header_problem(name: object, value: object) -> Optional[str]:
    """Why HTTP cannot carry this header (a name that is no RFC 9110 token, a value with a line
    break or another control character), or ``None``; the reason never holds the value (a secret, maybe)."""
    if not isinstance(name, str) or not _TOKEN.fullmatch(name):
        return f"invalid header name {name!r}"
    if not isinstance(value, str) or not _FIELD_VALUE.fullmatch(value):
        return f"the value of header {name!r} is not a valid HTTP field value (a line break or control character?)"
    return None


def redirect_error(label: str, status: int, location: str) -> HttpError:
    """A 3xx answer: redirects are never followed (the request could be replayed anywhere)."""
    return HttpError(
        f"{label}: redirect ({status}) to {url_label(location)!r} refused: redirects are not followed",
        status_code=status,
    )


def status_error(
    label: str,
    status: int,
    reason: str,
    body: bytes,
    *,
    sent_session: bool,
    answers_ours: Callable[[Dict[str, Any]], bool],
) -> JsonRpcError:
    """The error for a non-2xx answer to a POST.

    A JSON-RPC error in the body that answers one of the exchange's requests
    is handed to ``answers_ours`` (which delivers it and returns True); the
    first other one (``id`` null, or not ours) is the error returned.  Only a
    real JSON-RPC error response counts (``"jsonrpc": "2.0"``, an ``error``
    object with an integer ``code``, no ``result``): any other body is the
    server's own page, and the answer an ``HttpError`` with its status.
    """
    if status == 404 and sent_session:
        return SessionExpired(f"{label}: the session expired (404)", status_code=404, body_excerpt=excerpt(body))
    error: Optional[JsonRpcError] = None
    try:
        value = json.loads(body) if body else None
    except ValueError:
        value = None
    for item in value if isinstance(value, list) else (value,):
        if not isinstance(item, dict) or not _is_error_response(item):
            continue  # not a JSON-RPC error response (a 404 page's own JSON with an "error" member, say)
        if not answers_ours(item) and error is None:
            error = error_from_response(item["error"])
    if error is not None:
        return error
    reason = reason or http.client.responses.get(status, "")
    return HttpError(f"{label}: HTTP {status} {reason}".rstrip(), status_code=status, body_excerpt=excerpt(body))


def _is_error_response(item: Any) -> bool:
    if not isinstance(item, dict) or item.get("jsonrpc") != "2.0" or "result" in item:
        return False
    error = item.get("error")
    return isinstance(error, dict) and isinstance(error.get("code"), int) and not isinstance(error.get("code"), bool)


def stream_refused(
    label: str, what: str, status: int, media_type: str, body: bytes, *, sent_session: bool, resuming: bool
) -> HttpError:
    """The error for a GET that should have opened (or, ``resuming``, resumed) an event stream and did not.

    ``what``: the stream, for the message ("the listen stream").
    """
    doing = "resumed" if resuming else "opened"
    if status == 404 and sent_session:
        return SessionExpired(f"{label}: the session expired (404): {what} cannot be {doing}", status_code=404)
    return HttpConnectionError(
        f"{label}: {what} cannot be {doing}: GET answered {status} {media_type}".rstrip(),
        status_code=status,
        body_excerpt=excerpt(body),
    )


def root_cause(exc: BaseException) -> str:
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


__all__ = [
    "header_problem",
    "NETWORK_ERRORS",
    "DeadlinePassed",
    "NetworkErrors",
    "check_message_headers",
    "closed_error",
    "excerpt",
    "is_network_error",
    "network_error",
    "redirect_error",
    "stream_refused",
    "root_cause",
    "status_error",
]
