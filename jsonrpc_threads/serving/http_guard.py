"""What every HTTP server of this package checks of a request (host, origin, body), and its JSON answer.

Theory of operation.  MCP asks servers on HTTP to defend against DNS
rebinding.  A page whose own name its attacker made resolve to ``127.0.0.1``
reaches a server on loopback with its own name as ``Host`` and its own origin
as ``Origin``, the two agreeing; so a request that arrives over loopback
(``REMOTE_ADDR`` is ``127.x.x.x`` or ``::1``) must name the server by a
loopback name (``localhost``, ``127.x.x.x``, ``[::1]``; any port), else it is
refused.  Behind a reverse proxy on the same machine, or to answer other
names, ``allowed_hosts`` lists the names (and replaces that default; ``"*"``
accepts any).  A request from another machine is held to ``allowed_hosts``
only when it is given.  Then a browser's cross-origin request (an ``Origin``
other than ``scheme://`` + the ``Host`` it was let in with) is refused unless
the origin is in ``allowed_origins``.  A request with neither header (not a
browser's: browsers send both) passes.

``read_body`` reads a request body within a limit: by its
``Content-Length``, or to its end where the server terminates the input
(chunked uploads); a body over the limit is refused before it is read.

``send_json`` answers with one JSON body (or none), its length given.

Used by ``jsonrpc_threads.wsgi.JsonRpcApp`` and by McpServer's WSGI app.

Thread-safety: ``HostGuard`` is immutable; the functions are pure but for
reading the request's input stream.
"""

from __future__ import annotations

from typing import Any, Callable, List, Mapping, Optional, Sequence, Tuple

from ..errors import InvalidRequest, JsonRpcError

__all__ = [
    "ANY_HOST",
    "LOOPBACK_HOSTS",
    "HostGuard",
    "host_name",
    "is_loopback_address",
    "read_body",
    "send_json",
]

#: The names (any port) a request arriving over loopback may give as ``Host`` when
#: ``allowed_hosts`` is not given; any ``127.x.x.x`` address counts too.
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "[::1]")
#: In ``allowed_hosts``: every ``Host`` is accepted (the ``Origin`` check stays).
ANY_HOST = "*"

#: A refusal of ``read_body``: the HTTP status, and the JSON-RPC error to send (``None``: no body).
Refusal = Tuple[str, Optional[JsonRpcError]]


class HostGuard:
    """Decides whether a request's ``Host`` and ``Origin`` are acceptable (see the module docstring).

    Args:
        allowed_hosts: ``"name"`` for any port, ``"name:port"`` for one, ``"*"``
            for any; ``None``: over loopback the loopback names only, from
            another machine any.
        allowed_origins: origins (``"https://app.example.com"``) a browser may
            send from besides the server's own.

    Raises:
        TypeError: either given as one string instead of a list of them.
    """

    def __init__(
        self, allowed_hosts: Optional[Sequence[str]] = None, allowed_origins: Optional[Sequence[str]] = None
    ) -> None:
        for name, value in (("allowed_origins", allowed_origins), ("allowed_hosts", allowed_hosts)):
            if isinstance(value, (str, bytes)):
                raise TypeError(f"{name} takes a list of strings, not one string: [{value!r}]")
        self.allowed_origins = frozenset(origin.rstrip("/").lower() for origin in allowed_origins or ())
        self.allowed_hosts = (
            None if allowed_hosts is None else frozenset(host.strip().lower() for host in allowed_hosts)
        )

    def host_allowed(self, environ: Mapping[str, Any]) -> bool:
        """Whether the request's ``Host`` names this server acceptably."""
        host = environ.get("HTTP_HOST")
        if host is None:
            return True  # no Host at all (HTTP/1.0): not a browser, which always sends one
        host = str(host).strip().lower()
        allowed = self.allowed_hosts
        if allowed is None:
            if not is_loopback_address(str(environ.get("REMOTE_ADDR") or "")):
                return True  # from another machine: the app cannot know its public names
            name = host_name(host)
            return name in LOOPBACK_HOSTS or is_loopback_address(name)
        return ANY_HOST in allowed or host in allowed or host_name(host) in allowed

    def origin_allowed(self, environ: Mapping[str, Any]) -> bool:
        """Whether the request's ``Origin`` (if any) may reach this server."""
        origin = environ.get("HTTP_ORIGIN")
        if not origin:
            return True  # not a browser's cross-site request
        origin = str(origin).rstrip("/").lower()
        if origin in self.allowed_origins:
            return True
        host = str(environ.get("HTTP_HOST") or environ.get("SERVER_NAME") or "").strip().lower()
        return origin.split("://", 1)[-1] == host


def read_body(environ: Mapping[str, Any], limit: int) -> Tuple[bytes, Optional[Refusal]]:
    """The request's body, or why it is refused: ``(b"", ("413 ...", error))`` and the like.

    A body over ``limit`` bytes is ``413``; a bad ``Content-Length`` ``400``;
    no length where the server does not end the input for us ``411``.
    """
    too_large = InvalidRequest(
        f"Message larger than the limit of {limit} bytes", data={"reason": "body too large", "limit": limit}
    )
    stream = environ["wsgi.input"]
    length_text = environ.get("CONTENT_LENGTH") or ""
    if length_text:
        try:
            length = int(length_text)
        except ValueError:
            return b"", ("400 Bad Request", InvalidRequest(data={"reason": "bad Content-Length"}))
        if length > limit:
            return b"", ("413 Content Too Large", too_large)
        return _read_exactly(stream, length), None
    if not environ.get("wsgi.input_terminated"):
        return b"", ("411 Length Required", None)
    body = stream.read(limit + 1)  # a chunked body the server ends for us
    if len(body) > limit:
        return b"", ("413 Content Too Large", too_large)
    return body, None


def send_json(
    start_response: Callable[..., Any], status: str, body: bytes, headers: Sequence[Tuple[str, str]] = ()
) -> List[bytes]:
    """Start a response of ``status`` with ``body`` (JSON; empty: no ``Content-Type``) and ``headers``; its iterable."""
    response_headers = [("Content-Length", str(len(body)))]
    if body:
        response_headers.append(("Content-Type", "application/json"))
    response_headers.extend(headers)
    start_response(status, response_headers)
    return [body]


def host_name(host: str) -> str:
    """``host`` (a ``Host`` header's value, lower case) without its port: ``"[::1]:80"`` -> ``"[::1]"``."""
    if host.startswith("["):
        return host.split("]", 1)[0] + "]"
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def is_loopback_address(address: str) -> bool:
    """Whether ``address`` is a loopback IP address (``127.x.x.x``, ``::1``, ``::ffff:127.x.x.x``)."""
    if address.startswith("::ffff:"):
        address = address[len("::ffff:") :]
    if address in ("::1", "[::1]"):
        return True
    parts = address.split(".")
    return len(parts) == 4 and parts[0] == "127" and all(part.isdigit() and int(part) < 256 for part in parts)


def _read_exactly(stream: Any, length: int) -> bytes:
    parts: List[bytes] = []
    remaining = length
    while remaining > 0:
        chunk = stream.read(remaining)
        if not chunk:
            break  # the client went away: what arrived is all there is
        parts.append(chunk)
        remaining -= len(chunk)
    return b"".join(parts)
