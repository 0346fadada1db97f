"""Flow step 1, discovery: which authorization server speaks for an MCP server, and its endpoints.

In the order of the MCP specification 2025-11-25: protected-resource metadata
(the challenge's ``resource_metadata``, then the well-known locations), whose
``resource`` must match the server; the first authorization server it names,
whose metadata is found by RFC 8414 / OpenID Connect discovery and must carry
the same issuer.  A server without protected-resource metadata is a
2025-03-26 server: authorization-server metadata at the root of its origin,
else ``/authorize``, ``/token`` and ``/register`` there.

Every URL the network hands us (the challenge's ``resource_metadata``, the
``resource``, the issuers, the endpoints) is refused when it holds a
backslash, a control character or user info (``url_hazard``): parsers
disagree on where such a URL leads, and origins are compared as ``requests``
connects (``origin``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional
from urllib.parse import urlsplit

from ..errors import AuthorizationError
from ..transports.http import url_hazard, url_label
from ._context import FlowContext
from ._metadata import (
    OAUTH_AS_WELL_KNOWN,
    OPENID_WELL_KNOWN,
    Challenge,
    authorization_server_metadata_urls,
    canonical_resource,
    origin,
    protected_resource_metadata_urls,
    resource_matches,
    same_issuer,
)

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Discovery:
    """What discovery found.

    Attributes:
        resource: the ``resource`` parameter: the metadata's, exactly as published.
        issuer: the authorization server's issuer.
        metadata: its metadata (endpoints, supported methods and scopes).
        prm_scopes: the protected resource's ``scopes_supported``, if it said.
        legacy: a 2025-03-26 server (no protected-resource metadata).
        defaults: no authorization-server metadata either: the default endpoints.
        resource_metadata: the protected-resource metadata document (``{}`` without one).
    """

    resource: str
    issuer: str
    metadata: Dict[str, Any]
    prm_scopes: Optional[List[str]]
    legacy: bool
    defaults: bool
    resource_metadata: Dict[str, Any] = field(default_factory=dict)


def discover(flow: FlowContext, challenge: Optional[Challenge]) -> Discovery:
    """Find the authorization server of ``flow``'s MCP server.

    Raises:
        AuthorizationError: metadata for another resource or issuer, or none to be found.
    """
    urls: List[str] = []
    if challenge is not None and challenge.resource_metadata:
        _refuse_hazard(challenge.resource_metadata, "the challenge's resource_metadata")
        urls.append(challenge.resource_metadata)
    urls.extend(url for url in protected_resource_metadata_urls(flow.server_url) if url not in urls)
    for url in urls:
        document, _ = flow.http.get_json(url, "protected resource metadata")
        if document is not None:
            return _from_resource_metadata(flow, url, document)
    logger.debug("%s: no protected resource metadata: a 2025-03-26 server", flow.label)
    return _legacy_discovery(flow)


def endpoint(discovery: Discovery, name: str) -> str:
    """The http(s) URL of the endpoint ``name`` (``token_endpoint``, ...).

    Raises:
        AuthorizationError: the metadata has no usable one.
    """
    value = discovery.metadata.get(name)
    if not isinstance(value, str) or urlsplit(value).scheme not in ("http", "https"):
        raise AuthorizationError(f"the authorization server {discovery.issuer} has no usable {name}")
    _refuse_hazard(value, f"the {name} of the authorization server {discovery.issuer}")
    return value


def _refuse_hazard(url: str, what: str) -> None:
    """Raise ``AuthorizationError`` when ``url`` (from the network) may lead elsewhere than it reads."""
    hazard = url_hazard(url)
    if hazard is not None:
        shown = "".join(char if char.isprintable() else "?" for char in url_label(url))
        raise AuthorizationError(f"refusing to authorize: {what} has {hazard} in it ({shown})")


def _from_resource_metadata(flow: FlowContext, url: str, document: Dict[str, Any]) -> Discovery:
    resource = document.get("resource")
    if isinstance(resource, str):
        _refuse_hazard(resource, f"the resource of the protected resource metadata at {url_label(url)}")
    if not isinstance(resource, str) or not resource_matches(resource, flow.server_url):
        raise AuthorizationError(
            f"refusing to authorize: the protected resource metadata at {url_label(url)} is for "
            f"{resource if isinstance(resource, str) else 'no resource'}, not for {flow.label}"
        )
    servers = document.get("authorization_servers")
    issuers = [s for s in servers if isinstance(s, str) and s] if isinstance(servers, list) else []
    if not issuers:
        raise AuthorizationError(f"the protected resource metadata at {url_label(url)} names no authorization server")
    issuer = issuers[0]
    _refuse_hazard(issuer, f"the authorization server named at {url_label(url)}")
    tried: List[str] = []
    for metadata_url in authorization_server_metadata_urls(issuer):
        metadata, why = flow.http.get_json(metadata_url, "authorization server metadata")
        if metadata is None:
            tried.append(why)
            continue
        if not same_issuer(metadata.get("issuer"), issuer):
            raise AuthorizationError(
                f"refusing to authorize: the metadata at {url_label(metadata_url)} is for issuer "
                f"{metadata.get('issuer')!r}, not {issuer!r}"
            )
        scopes = document.get("scopes_supported")
        prm_scopes = [s for s in scopes if isinstance(s, str)] if isinstance(scopes, list) else None
        return Discovery(
            resource, issuer, metadata, prm_scopes, legacy=False, defaults=False, resource_metadata=document
        )
    raise AuthorizationError(f"no authorization server metadata for {issuer} ({'; '.join(tried)})")


def _legacy_discovery(flow: FlowContext) -> Discovery:
    base = origin(flow.server_url)
    resource = canonical_resource(flow.server_url)
    for url in (base + OAUTH_AS_WELL_KNOWN, base + OPENID_WELL_KNOWN):
        metadata, _ = flow.http.get_json(url, "authorization server metadata (2025-03-26)")
        if metadata is not None:
            # No protected-resource metadata named an issuer: the server's origin stands for it.
            # The metadata may name an issuer below that origin (its /oauth), never another origin.
            issuer = metadata.get("issuer")
            if not isinstance(issuer, str):
                issuer = base
            elif url_hazard(issuer) is not None or origin(issuer) != base:
                raise AuthorizationError(
                    f"refusing to authorize: the metadata at {url_label(url)} is for issuer {issuer!r}, not for {base}"
                )
            return Discovery(resource, issuer, metadata, None, legacy=True, defaults=False)
    logger.debug("%s: no authorization server metadata: the default endpoints", flow.label)
    metadata = {
        "authorization_endpoint": base + "/authorize",
        "token_endpoint": base + "/token",
        "registration_endpoint": base + "/register",
    }
    return Discovery(resource, base, metadata, None, legacy=True, defaults=True)


__all__ = ["Discovery", "discover", "endpoint"]
