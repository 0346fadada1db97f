"""The agent card: where it is, which of its interfaces this client speaks to, and who gets credentials (pure).

Theory of operation.  An A2A agent describes itself in a card (JSON), found at
``/.well-known/agent-card.json`` under its base URL (``card_url``; a URL
whose path ends in ``.json`` is the card itself).  The card lists the
interfaces the agent serves; ``choose_interface`` takes the first JSON-RPC
interface of version 1.0 (``supportedInterfaces``, in the agent's order of
preference), else the first of version 0.3, else what a v0.3 card says in its
own fields (``url`` with ``preferredTransport``, ``additionalInterfaces``): the
card tells the version, and so the ``Dialect``.

Credentials.  What the caller gives to authenticate (``auth``, ``headers``,
``header_provider``) goes to the origin of the card (scheme, host and port)
and to the origins the caller allows, and nowhere else: a card is data from the
network, and one that names an interface on another origin must not collect
the caller's credentials there.  ``Origins`` decides, on the origin each URL
really leads to: the one ``requests`` connects to (``connect_origin``, read
from the prepared URL), never another parser's reading of it.  A card URL with
a backslash, a control character or user info is refused outright
(``url_hazard``): parsers disagree on where such a URL leads.

No I/O, no threads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, FrozenSet, Iterable, List, Mapping, Optional, Tuple
from urllib.parse import urljoin, urlsplit, urlunsplit

from ..errors import ProtocolError
from ..transports.http import Origin, connect_origin, url_hazard, url_label
from .wire import CARD_PATH, DIALECTS, JSONRPC_BINDING, LEGACY_PROTOCOL_VERSION, PROTOCOL_VERSION, Dialect


def card_url(url: str) -> str:
    """Where the card of the agent at ``url`` is: ``url`` itself when its path ends in ``.json``, else
    ``/.well-known/agent-card.json`` under it (its path kept, as a base).

    Raises:
        ValueError: not an ``http(s)://host`` URL.
    """
    origin_of(url)  # checks it
    parts = urlsplit(url)
    if parts.path.endswith(".json"):
        return urlunsplit((parts.scheme, parts.netloc, parts.path, parts.query, ""))
    return urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/") + CARD_PATH, parts.query, ""))


def origin_of(url: str) -> Origin:
    """The origin of an ``http(s)`` URL: the one ``requests`` connects to (see the module docstring).

    Raises:
        ValueError: not an ``http(s)://host`` URL, or one with a backslash or a
            control character (the message never holds its credentials or query).
    """
    if not isinstance(url, str):
        raise TypeError(f"a URL is a str, not {type(url).__name__}")
    url = url.strip()
    hazard = url_hazard(url, allow_user_info=True)
    if hazard is not None:
        raise ValueError(f"refusing a URL with {hazard} in it: {_shown(url)!r}")
    try:
        return connect_origin(url)
    except ValueError:
        raise ValueError(f"not an http(s) URL with a host: {_shown(url)!r}") from None


def _shown(url: str) -> str:
    """``url`` fit for a message: no user info, query or fragment, and no control character."""
    return "".join(char if char.isprintable() else "?" for char in url_label(url))


@dataclass(frozen=True)
class Origins:
    """The origins that get the caller's credentials: the card's, and those allowed.

    Args:
        card: the card's URL.
        allowed: more origins (``"https://host[:port]"``; a path is ignored).

    Raises:
        ValueError: an allowed origin that is not an ``http(s)`` URL.
    """

    trusted: FrozenSet[Origin]

    @classmethod
    def of(cls, card: str, allowed: Iterable[str] = ()) -> Origins:
        if isinstance(allowed, str):
            allowed = (allowed,)
        return cls(frozenset({origin_of(card), *(origin_of(url) for url in allowed)}))

    def trust(self, url: str) -> bool:
        """True when ``url`` is on a trusted origin."""
        return origin_of(url) in self.trusted


@dataclass(frozen=True)
class Interface:
    """The interface this client speaks to.

    Attributes:
        url: the JSON-RPC endpoint.
        dialect: the version's spelling (``V1`` or ``V03``).
        tenant: the ``tenant`` the card names for it (v1.0), or ``None``.
    """

    url: str
    dialect: Dialect
    tenant: Optional[str] = None

    def __repr__(self) -> str:
        # The URL may carry the caller's user info (a relative interface under the card's URL).
        return f"Interface(url={url_label(self.url)!r}, version={self.dialect.version!r}, tenant={self.tenant!r})"


def choose_interface(card: Mapping[str, Any], url: str) -> Interface:
    """The card's JSON-RPC interface this client speaks to (see the module docstring).

    Args:
        card: the agent card.
        url: where the card came from (a relative interface URL is resolved against it).

    Raises:
        ProtocolError: the card offers no JSON-RPC interface of version 1.0 or
            0.3, or names one without a usable URL.
    """
    found: List[Tuple[str, Mapping[str, Any]]] = []
    entries = card.get("supportedInterfaces")
    for entry in entries if isinstance(entries, list) else ():
        if isinstance(entry, Mapping) and _is_jsonrpc(entry.get("protocolBinding")):
            version = _major_minor(entry.get("protocolVersion"))
            if version in DIALECTS:
                found.append((version, entry))
    for wanted in (PROTOCOL_VERSION, LEGACY_PROTOCOL_VERSION):
        for version, entry in found:
            if version == wanted:
                tenant = entry.get("tenant")
                return _interface(entry.get("url"), url, DIALECTS[version], tenant if isinstance(tenant, str) else None)
    legacy = _legacy_url(card)
    if legacy is not None:
        return _interface(legacy, url, DIALECTS[LEGACY_PROTOCOL_VERSION], None)
    name = card.get("name")
    raise ProtocolError(
        f"the card of agent {name!r} offers no JSON-RPC interface of A2A {PROTOCOL_VERSION} or "
        f"{LEGACY_PROTOCOL_VERSION} (supportedInterfaces: {entries!r:.300})"
    )


def _legacy_url(card: Mapping[str, Any]) -> Optional[str]:
    """A v0.3 card's JSON-RPC URL: ``url`` when its ``preferredTransport`` is JSON-RPC (the default), else
    the first JSON-RPC entry of ``additionalInterfaces``."""
    main = card.get("url")
    if isinstance(main, str) and _is_jsonrpc(card.get("preferredTransport", JSONRPC_BINDING)):
        return main
    extra = card.get("additionalInterfaces")
    for entry in extra if isinstance(extra, list) else ():
        if isinstance(entry, Mapping) and _is_jsonrpc(entry.get("transport")) and isinstance(entry.get("url"), str):
            return str(entry["url"])
    return None


def _interface(target: Any, base: str, dialect: Dialect, tenant: Optional[str]) -> Interface:
    if not isinstance(target, str) or not target.strip():
        raise ProtocolError(f"the agent card names a JSON-RPC interface without a URL: {target!r:.200}")
    hazard = url_hazard(target.strip())
    if hazard is not None:
        raise ProtocolError(
            f"refusing the agent card's JSON-RPC interface: its URL has {hazard} in it ({_shown(target.strip())!r})"
        )
    resolved = urljoin(base, target.strip())
    try:
        origin_of(resolved)
    except ValueError as exc:
        raise ProtocolError(f"the agent card's JSON-RPC interface: {exc}") from None
    return Interface(resolved, dialect, tenant or None)


def _is_jsonrpc(binding: Any) -> bool:
    return isinstance(binding, str) and binding.strip().upper() in (JSONRPC_BINDING, "JSON-RPC")


def _major_minor(version: Any) -> str:
    """``"1.0"`` of ``"1.0.2"``: patch versions do not count (A2A, "Versioning")."""
    if not isinstance(version, str):
        return ""
    return ".".join(version.strip().split(".")[:2])


__all__ = ["Interface", "Origin", "Origins", "card_url", "choose_interface", "origin_of"]
