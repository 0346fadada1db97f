"""The pure parts of MCP authorization: challenges, metadata locations, resources, scopes.

Nothing here does I/O or keeps state.  The flow in ``_flow`` asks these
functions where to look and what to send, and does the talking itself:

- ``parse_www_authenticate`` reads the challenges of a 401 or 403 answer
  (RFC 9110 section 11.6.1); MCP servers send ``Bearer`` with
  ``resource_metadata``, ``scope`` and ``error`` (RFC 6750 section 3, RFC 9728
  section 5.1);
- ``protected_resource_metadata_urls`` and
  ``authorization_server_metadata_urls`` list the well-known locations, in
  the order the MCP specification (2025-11-25) tries them: RFC 9728 path-based
  first, then root; RFC 8414 and OpenID Connect Discovery with the
  path-insertion variants for issuers that have a path;
- ``resource_matches`` decides whether protected-resource metadata speaks
  for the server we called (RFC 9728 section 3.3): same origin, and its path
  a prefix of ours on a segment boundary;
- ``origin`` and every comparison of origins read a URL as ``requests``
  prepares it, the origin it connects to (``connect_origin``), so that a
  URL spelled to mislead one parser (``http://a\\@b/``) cannot pass for
  another origin; a URL from the network with a backslash, a control
  character or user info (``url_hazard``) is refused;
- ``select_scopes`` applies the scope selection strategy: what the caller
  asked for, else the challenge's ``scope``, else ``scopes_supported``, else
  nothing; plus what was requested before (step-up accumulates, SEP-2350).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Mapping, Optional, Sequence
from urllib.parse import urlsplit, urlunsplit

from ..transports.http import connect_origin, prepared_url, url_hazard

PRM_WELL_KNOWN = "/.well-known/oauth-protected-resource"
OAUTH_AS_WELL_KNOWN = "/.well-known/oauth-authorization-server"
OPENID_WELL_KNOWN = "/.well-known/openid-configuration"
OFFLINE_ACCESS = "offline_access"

_DEFAULT_PORTS = {"http": 80, "https": 443}
_SEPARATORS = " \t,"


@dataclass(frozen=True)
class Challenge:
    """One challenge of a ``WWW-Authenticate`` header.

    Attributes:
        scheme: the auth scheme, as sent (compare with ``is_bearer``).
        params: the auth parameters, names in lower case.
    """

    scheme: str
    params: Mapping[str, str] = field(default_factory=dict)

    def is_bearer(self) -> bool:
        return self.scheme.lower() == "bearer"

    def is_dpop(self) -> bool:
        """A ``DPoP`` challenge (RFC 9449 section 7.1): the server wants DPoP-bound tokens."""
        return self.scheme.lower() == "dpop"

    @property
    def error(self) -> Optional[str]:
        """The ``error`` parameter (``invalid_token``, ``insufficient_scope``), if any."""
        return self.params.get("error")

    @property
    def resource_metadata(self) -> Optional[str]:
        """The URL of the protected-resource metadata (RFC 9728 section 5.1), if given."""
        value = self.params.get("resource_metadata")
        return value or None

    @property
    def scopes(self) -> List[str]:
        """The scopes named by the ``scope`` parameter (possibly none)."""
        return split_scopes(self.params.get("scope"))


def parse_www_authenticate(value: str) -> List[Challenge]:
    """Every challenge in a ``WWW-Authenticate`` value (several headers joined by commas).

    Parameters are ``name=token`` or ``name="quoted string"`` (backslash
    escapes honoured).  A ``token68`` (``Basic abc==``) is skipped.  Never raises:
    what does not parse is dropped.
    """
    challenges: List[Challenge] = []
    params: Dict[str, str] = {}
    position = 0
    length = len(value)
    while position < length:
        while position < length and value[position] in _SEPARATORS:
            position += 1
        start = position
        while position < length and value[position] not in _SEPARATORS and value[position] != "=":
            position += 1
        word = value[start:position]
        after = position
        while after < length and value[after] in " \t":
            after += 1
        if not word:
            position = after + 1  # a stray "=": skip it
            continue
        if after < length and value[after] == "=" and challenges and not value.startswith("=", after + 1):
            position = after + 1
            while position < length and value[position] in " \t":
                position += 1
            if position < length and value[position] == '"':
                position += 1
                chars: List[str] = []
                while position < length and value[position] != '"':
                    if value[position] == "\\" and position + 1 < length:
                        position += 1
                    chars.append(value[position])
                    position += 1
                position += 1  # the closing quote
                text = "".join(chars)
            else:
                start = position
                while position < length and value[position] not in _SEPARATORS:
                    position += 1
                text = value[start:position]
            params.setdefault(word.lower(), text)
            continue
        if after < length and value[after] == "=":
            # a token68 (or a parameter before any scheme): skip it and its padding
            position = after
            while position < length and value[position] == "=":
                position += 1
            continue
        params = {}
        challenges.append(Challenge(word, params))
        position = after
    return challenges


def bearer_challenge(header: Optional[str]) -> Optional[Challenge]:
    """The first ``Bearer`` challenge of a ``WWW-Authenticate`` value, or ``None``."""
    if not header:
        return None
    for challenge in parse_www_authenticate(header):
        if challenge.is_bearer():
            return challenge
    return None


def auth_challenge(header: Optional[str]) -> Optional[Challenge]:
    """The first challenge of a scheme OAuth answers (``Bearer`` or ``DPoP``), or ``None``.

    A ``DPoP`` challenge wins over a ``Bearer`` one in the same header.
    """
    if not header:
        return None
    found = [c for c in parse_www_authenticate(header) if c.is_bearer() or c.is_dpop()]
    return next((c for c in found if c.is_dpop()), found[0] if found else None)


def split_scopes(value: Optional[str]) -> List[str]:
    """A space-separated scope string as a list, in order, without duplicates."""
    if not value:
        return []
    return merge_scopes(value.split())


def merge_scopes(*groups: Iterable[str]) -> List[str]:
    """The union of scope lists, in first-seen order."""
    merged: List[str] = []
    for group in groups:
        for scope in group:
            if scope and scope not in merged:
                merged.append(scope)
    return merged


def _netloc(scheme: str, host: str, port: Optional[int]) -> str:
    if ":" in host:
        host = f"[{host}]"
    if port is None or port == _DEFAULT_PORTS.get(scheme):
        return host
    return f"{host}:{port}"


def origin(url: str) -> str:
    """``scheme://host[:port]`` of ``url`` (no credentials, path or query): where ``requests`` connects.

    Read from the URL as ``requests`` prepares it (a URL it cannot prepare, as written).
    """
    try:
        url = prepared_url(url)
    except ValueError:
        pass
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    return f"{scheme}://{_netloc(scheme, parts.hostname or '', parts.port)}"


def canonical_resource(url: str) -> str:
    """The canonical URI of an MCP server (RFC 8707; MCP "canonical server URI").

    Lower-case scheme and host, no default port, no query or fragment, no
    trailing slash: ``HTTPS://MCP.example.com:443/mcp/`` is
    ``https://mcp.example.com/mcp``.
    """
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    netloc = _netloc(scheme, (parts.hostname or "").lower(), parts.port)
    path = parts.path.rstrip("/")
    return urlunsplit((scheme, netloc, path, "", ""))


def protected_resource_metadata_urls(server_url: str) -> List[str]:
    """Where protected-resource metadata may be, in order (RFC 9728 section 3.1).

    The path-based location (``/.well-known/oauth-protected-resource/<path>``)
    first when the server URL has a path, then the root.
    """
    path = urlsplit(server_url).path.rstrip("/")
    base = origin(server_url)
    urls = []
    if path:
        urls.append(base + PRM_WELL_KNOWN + path)
    urls.append(base + PRM_WELL_KNOWN)
    return urls


def authorization_server_metadata_urls(issuer: str) -> List[str]:
    """Where an authorization server's metadata may be, in order.

    For an issuer with a path (``https://as.example.com/tenant1``): RFC 8414
    with path insertion, OpenID Connect Discovery with path insertion, then
    OpenID Connect Discovery with the path appended.  Without a path: RFC 8414,
    then OpenID Connect Discovery.  (MCP 2025-11-25, "Authorization Server
    Metadata Discovery".)
    """
    path = urlsplit(issuer).path.rstrip("/")
    base = origin(issuer)
    if path:
        return [
            base + OAUTH_AS_WELL_KNOWN + path,
            base + OPENID_WELL_KNOWN + path,
            base + path + OPENID_WELL_KNOWN,
        ]
    return [base + OAUTH_AS_WELL_KNOWN, base + OPENID_WELL_KNOWN]


def resource_matches(resource: str, server_url: str) -> bool:
    """Whether protected-resource metadata for ``resource`` may speak for ``server_url``.

    Same scheme, host and port (compared case-insensitively, default ports
    filled in), and the resource's path equal to the server's or a prefix of
    it ending at a ``/``.  A resource with a fragment never matches.
    """
    if url_hazard(resource) is not None:
        return False
    try:
        wanted = urlsplit(resource)
        actual = urlsplit(server_url)
        if wanted.fragment or connect_origin(resource) != connect_origin(server_url):
            return False
    except ValueError:
        return False
    prefix = wanted.path.rstrip("/")
    path = actual.path.rstrip("/")
    return path == prefix or path.startswith(prefix + "/")


def select_scopes(
    *,
    configured: Optional[Sequence[str]],
    challenged: Sequence[str],
    supported: Optional[Sequence[str]],
    previous: Sequence[str] = (),
) -> List[str]:
    """The scopes to request (an empty list: send no ``scope`` at all).

    ``configured`` (the caller's choice) wins; else the challenge's ``scope``;
    else everything in the protected-resource metadata's ``scopes_supported``.
    Scopes requested before are kept, and a challenge's scopes are always
    added: a step-up asks for the union (SEP-2350), never for less.
    """
    if configured is not None:
        base = list(configured)
    elif challenged:
        base = list(challenged)
    else:
        base = [s for s in (supported or ()) if isinstance(s, str)]
    return merge_scopes(previous, base, challenged)


def with_offline_access(scopes: List[str], as_scopes_supported: object) -> List[str]:
    """``scopes`` plus ``offline_access`` when the authorization server lists it.

    Only added to a non-empty request: a lone ``offline_access`` would replace
    the server's default scopes (SEP-2207 lets clients that want refresh
    tokens ask for it, and forbids it when the server does not list it).
    """
    if (
        scopes
        and OFFLINE_ACCESS not in scopes
        and isinstance(as_scopes_supported, list)
        and OFFLINE_ACCESS in as_scopes_supported
    ):
        return [*scopes, OFFLINE_ACCESS]
    return scopes


def is_loopback_host(host: str) -> bool:
    """``localhost`` or a loopback IP literal."""
    host = host.strip("[]").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def application_type(redirect_uri: Optional[str]) -> str:
    """The registration's ``application_type`` (SEP-837): ``native`` unless the redirect is an https web page."""
    if redirect_uri is None:
        return "web"
    parts = urlsplit(redirect_uri)
    if parts.scheme == "https" and not is_loopback_host(parts.hostname or ""):
        return "web"
    return "native"


def same_issuer(advertised: object, expected: str) -> bool:
    """RFC 8414 section 3.3: the metadata's ``issuer`` is the one we looked up.

    Compared as strings, ignoring one trailing ``/`` on either side.
    """
    return isinstance(advertised, str) and advertised.rstrip("/") == expected.rstrip("/")
