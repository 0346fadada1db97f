"""Flow step 3 with a user: the authorization code grant, with PKCE (S256), ``state`` and ``resource``.

The user is sent to the authorization endpoint and comes back to the redirect
URI with ``code`` and ``state``: through the default
``LoopbackAuthorizer`` (the browser, and a one-shot
listener on 127.0.0.1 bound before the URL is built, so the URL names its
port), or through the caller's ``on_authorize(url) -> redirect URL``.  The
redirect is checked (``state``; ``iss`` by RFC 9207 when present or promised;
``error``) before the code is exchanged at the token endpoint.
"""

from __future__ import annotations

import logging
from typing import List
from urllib.parse import parse_qs, quote, urlencode, urlsplit, urlunsplit

from ..errors import AuthorizationError
from ..transports.redact import url_label
from . import _authlib
from ._context import AUTHORIZATION_CODE, REFRESH_TOKEN, FlowContext, Trigger
from ._discovery import Discovery, endpoint
from ._metadata import with_offline_access
from ._registration import Client, identify_client
from ._tokens import Token, request_token
from .loopback import LoopbackAuthorizer

logger = logging.getLogger(__name__)

#: Sent as ``redirect_uri`` when ``on_authorize`` is a plain callable and no redirect URI was given.
DEFAULT_HEADLESS_REDIRECT_URI = "http://127.0.0.1/callback"


def authorization_code(flow: FlowContext, discovery: Discovery, trigger: Trigger) -> Token:
    """Send the user to authorize, check the redirect, and exchange its code for a token.

    Raises:
        AuthorizationError: no PKCE S256, the user declined or did not finish
            in time, a forged redirect, or the exchange was refused.
    """
    config = flow.config
    authorize_endpoint = endpoint(discovery, "authorization_endpoint")
    token_endpoint = endpoint(discovery, "token_endpoint")
    methods = discovery.metadata.get("code_challenge_methods_supported")
    if methods is not None and (not isinstance(methods, list) or "S256" not in methods):
        raise AuthorizationError(
            f"refusing to authorize: the authorization server {discovery.issuer} does not support PKCE with S256"
        )
    scopes = flow.scopes(discovery, trigger)
    requested = with_offline_access(scopes, discovery.metadata.get("scopes_supported"))
    verifier = _authlib.new_verifier()
    state = _authlib.new_state()
    authorizer = config.on_authorize
    grant_types = [AUTHORIZATION_CODE, REFRESH_TOKEN]
    if isinstance(authorizer, LoopbackAuthorizer):
        try:
            listener = authorizer.listen(config.redirect_uri)
        except (ValueError, OSError) as exc:
            raise AuthorizationError(f"cannot listen for the authorization redirect: {exc}") from exc
        with listener:
            redirect_uri = listener.redirect_uri
            client = identify_client(flow, discovery, redirect_uri=redirect_uri, grant_types=grant_types)
            url = authorization_url(authorize_endpoint, client, redirect_uri, verifier, state, discovery, requested)
            logger.info("%s: waiting for the user to authorize at %s", flow.label, url_label(authorize_endpoint))
            authorizer.open(url)
            redirected = listener.wait(authorizer.timeout)
    else:
        redirect_uri = config.redirect_uri or DEFAULT_HEADLESS_REDIRECT_URI
        client = identify_client(flow, discovery, redirect_uri=redirect_uri, grant_types=grant_types)
        url = authorization_url(authorize_endpoint, client, redirect_uri, verifier, state, discovery, requested)
        logger.info("%s: asking the user to authorize at %s", flow.label, url_label(authorize_endpoint))
        try:
            redirected = authorizer(url)
        except AuthorizationError:
            raise
        except Exception as exc:
            raise AuthorizationError(f"on_authorize failed: {type(exc).__name__}") from exc
        if not isinstance(redirected, str):
            raise AuthorizationError("on_authorize must return the URL the user was redirected to")
    code = code_from_redirect(redirected, state, discovery)
    form = [
        ("grant_type", AUTHORIZATION_CODE),
        ("code", code),
        ("redirect_uri", redirect_uri),
        ("code_verifier", verifier),
        ("resource", discovery.resource),
    ]
    token = request_token(
        flow, token_endpoint, discovery.issuer, client, form, "authorization code exchange", requested
    )
    flow.remember(discovery, token_endpoint, client.to_dict(), scopes)
    return token


def authorization_url(
    authorization_endpoint: str,
    client: Client,
    redirect_uri: str,
    verifier: str,
    state: str,
    discovery: Discovery,
    scopes: List[str],
) -> str:
    """The URL the user opens: the endpoint with the request's parameters added to its query."""
    params = [
        ("response_type", "code"),
        ("client_id", client.client_id),
        ("redirect_uri", redirect_uri),
        ("code_challenge", _authlib.s256_challenge(verifier)),
        ("code_challenge_method", "S256"),
        ("state", state),
        ("resource", discovery.resource),
    ]
    if scopes:
        params.append(("scope", " ".join(scopes)))
    parts = urlsplit(authorization_endpoint)
    query = urlencode(params, quote_via=quote)
    return urlunsplit(parts._replace(query=f"{parts.query}&{query}" if parts.query else query))


def code_from_redirect(redirected: str, state: str, discovery: Discovery) -> str:
    """The authorization code of the redirect URL, once ``state``, ``iss`` and ``error`` are checked.

    Raises:
        AuthorizationError: a state or issuer mismatch (refused: possible
            CSRF or mix-up), the user or server refused, or no code.
    """
    params = {name: values[0] for name, values in parse_qs(urlsplit(redirected).query).items() if values}
    if params.get("state") != state:
        raise AuthorizationError("the authorization redirect's state does not match: refused (possible CSRF)")
    issuer = None if discovery.defaults else discovery.metadata.get("issuer")
    iss = params.get("iss")
    if iss is not None:
        if iss != issuer:  # RFC 9207: simple string comparison
            raise AuthorizationError("the authorization redirect comes from another issuer (iss mismatch): refused")
    elif discovery.metadata.get("authorization_response_iss_parameter_supported") is True:
        raise AuthorizationError("the authorization redirect lacks the iss its server promised: refused")
    error = params.get("error")
    if error is not None:
        description = params.get("error_description", "")
        text = f"{error[:80]}: {description[:200]}" if description else error[:80]
        raise AuthorizationError(f"authorization refused: {text}", oauth_error=error[:80])
    code = params.get("code")
    if not code:
        raise AuthorizationError("the authorization redirect carries no code")
    return code


__all__ = ["DEFAULT_HEADLESS_REDIRECT_URI", "authorization_code", "authorization_url", "code_from_redirect"]
