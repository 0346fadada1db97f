"""Flow step 2, the client's identity: who this client is to the authorization server.

In order of preference: the pre-registered ``client_id`` (with its secret or
private key), the client ID metadata document URL when the server supports
them, a registration stored from an earlier flow (still valid, same redirect
URI), or dynamic client registration (RFC 7591), whose result is stored in the
flow's entry by issuer.  ``choose_auth_method`` picks how the client
authenticates at the token endpoint.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from ..errors import AuthorizationError
from ..transports.http import url_label
from ._context import FlowContext
from ._discovery import Discovery
from ._http import describe_oauth_error
from ._metadata import application_type

logger = logging.getLogger(__name__)

#: The token endpoint authentication methods that send the client secret.
SECRET_METHODS = ("client_secret_basic", "client_secret_post")


@dataclass(frozen=True)
class Client:
    """A client identity at one authorization server.  Its repr shows no secret.

    Attributes:
        client_id: the client id.
        client_secret: its secret, if it has one.
        method: its token endpoint authentication method.
        preregistered: given in the configuration (its secret is never stored).
    """

    client_id: str
    client_secret: Optional[str] = field(repr=False)
    method: str
    preregistered: bool = False

    def to_dict(self) -> Dict[str, Any]:
        """The identity as kept in the token store."""
        data: Dict[str, Any] = {"client_id": self.client_id, "token_endpoint_auth_method": self.method}
        if self.preregistered:
            data["preregistered"] = True  # its secret comes from the configuration, never stored
        elif self.client_secret:
            data["client_secret"] = self.client_secret
        return data


def choose_auth_method(supported: Any, *, has_secret: bool, has_key: bool) -> str:
    """The token endpoint authentication method for a client, by what the server supports."""
    if has_key:
        return "private_key_jwt"
    if not has_secret:
        return "none"
    methods = supported if isinstance(supported, list) and supported else ["client_secret_basic"]
    for method in SECRET_METHODS:
        if method in methods:
            return method
    return "client_secret_basic"


def identify_client(
    flow: FlowContext, discovery: Discovery, *, redirect_uri: Optional[str], grant_types: List[str]
) -> Client:
    """The client identity to use with ``discovery``'s authorization server (registering one if needed).

    Raises:
        AuthorizationError: no identity is possible, or registration failed.
    """
    config = flow.config
    metadata = discovery.metadata
    supported = metadata.get("token_endpoint_auth_methods_supported")
    if config.client_id:
        method = config.token_endpoint_auth_method or choose_auth_method(
            supported, has_secret=bool(config.client_secret), has_key=config.private_key is not None
        )
        return Client(config.client_id, config.client_secret, method, preregistered=True)
    if config.client_metadata_url and metadata.get("client_id_metadata_document_supported") is True:
        return Client(config.client_metadata_url, None, "none")
    registrations = flow.entry.setdefault("registrations", {})
    stored = registrations.get(discovery.issuer)
    if isinstance(stored, dict) and _still_valid(stored, redirect_uri):
        return Client(
            stored["client_id"], stored.get("client_secret"), str(stored.get("token_endpoint_auth_method", "none"))
        )
    endpoint = metadata.get("registration_endpoint")
    if not isinstance(endpoint, str):
        raise AuthorizationError(
            f"the authorization server {discovery.issuer} needs a client_id: it offers no dynamic client "
            "registration (pass client_id=, or client_metadata_url= if it supports client ID metadata documents)"
        )
    return register(flow, discovery, endpoint, redirect_uri=redirect_uri, grant_types=grant_types)


def _still_valid(stored: Dict[str, Any], redirect_uri: Optional[str]) -> bool:
    if not isinstance(stored.get("client_id"), str):
        return False
    if redirect_uri is not None and stored.get("redirect_uri") != redirect_uri:
        return False
    expires = stored.get("client_secret_expires_at")
    return not (isinstance(expires, (int, float)) and expires and time.time() >= expires)


def register(
    flow: FlowContext, discovery: Discovery, endpoint: str, *, redirect_uri: Optional[str], grant_types: List[str]
) -> Client:
    """Dynamic client registration (RFC 7591); the registration is kept in the flow's entry.

    Raises:
        AuthorizationError: the server refused or could not be reached.
    """
    supported = discovery.metadata.get("token_endpoint_auth_methods_supported")
    public = supported is None or (isinstance(supported, list) and "none" in supported)
    if redirect_uri is not None and public:
        requested = "none"  # a native client with PKCE: no secret to keep
    else:
        requested = choose_auth_method(supported, has_secret=True, has_key=False)
    body: Dict[str, Any] = {
        "client_name": flow.config.client_name,
        "grant_types": grant_types,
        "token_endpoint_auth_method": requested,
        "application_type": application_type(redirect_uri),
    }
    if redirect_uri is not None:
        body["redirect_uris"] = [redirect_uri]
        body["response_types"] = ["code"]
    what = "dynamic client registration"
    status, document = flow.http.post(endpoint, what, body=body)
    client_id = document.get("client_id") if document is not None else None
    if status not in (200, 201) or not isinstance(client_id, str) or not client_id:
        text, code = describe_oauth_error(status, document)
        raise AuthorizationError(f"{what} at {url_label(endpoint)} failed: {text}", oauth_error=code)
    assert document is not None
    secret = document.get("client_secret") if isinstance(document.get("client_secret"), str) else None
    method = document.get("token_endpoint_auth_method")
    if not isinstance(method, str):
        method = (
            requested
            if requested != "none" or not secret
            else choose_auth_method(supported, has_secret=True, has_key=False)
        )
    stored: Dict[str, Any] = {"client_id": client_id, "token_endpoint_auth_method": method}
    if secret:
        stored["client_secret"] = secret
    if redirect_uri is not None:
        stored["redirect_uri"] = redirect_uri
    expires = document.get("client_secret_expires_at")
    if isinstance(expires, (int, float)) and expires:
        stored["client_secret_expires_at"] = expires
    flow.entry.setdefault("registrations", {})[discovery.issuer] = stored
    logger.debug("%s: registered a client with %s", flow.label, url_label(endpoint))
    return Client(client_id, secret, method)


def client_for_refresh(flow: FlowContext) -> Client:
    """The identity the stored token was obtained with.

    Raises:
        AuthorizationError: none is stored.
    """
    data = flow.entry.get("client")
    if not isinstance(data, dict) or not isinstance(data.get("client_id"), str):
        raise AuthorizationError("no client is known for the stored token")
    method = str(data.get("token_endpoint_auth_method", "none"))
    if data.get("preregistered"):
        return Client(data["client_id"], flow.config.client_secret, method, preregistered=True)
    return Client(data["client_id"], data.get("client_secret"), method)


__all__ = ["SECRET_METHODS", "Client", "choose_auth_method", "client_for_refresh", "identify_client", "register"]
