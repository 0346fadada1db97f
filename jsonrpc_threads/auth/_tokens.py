"""Flow step 3 without a user: tokens, the token endpoint, and the grants that go straight to it.

``Token`` is an access token with what goes with it (refresh token,
expiry, scope, issuer).  ``request_token`` POSTs one grant to the token
endpoint, authenticating the client as its identity says (``none``, a client
secret, or a ``private_key_jwt`` assertion), and reads the answer.  The grants
that need no user are here: ``refresh`` (``refresh_token``) and
``machine_grant`` (``client_credentials``, or the JWT bearer grant with
an assertion from ``AssertionProvider``); the
authorization code grant is ``_authorization_code``.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple
from urllib.parse import urlencode

from ..errors import AuthorizationError
from ..transports.http import url_label
from . import _authlib
from ._context import CLIENT_CREDENTIALS, REFRESH_TOKEN, FlowContext, Trigger
from ._discovery import Discovery, endpoint
from ._dpop import DPOP_HEADER, TOKEN_TYPE, USE_DPOP_NONCE
from ._http import describe_oauth_error
from ._metadata import merge_scopes, split_scopes
from ._registration import SECRET_METHODS, Client, client_for_refresh, identify_client
from .grants import JWT_BEARER_GRANT, AssertionRequest

logger = logging.getLogger(__name__)


class Token:
    """An access token and what goes with it.  Its repr shows no secret."""

    __slots__ = ("access_token", "confirmed", "expires_at", "issuer", "refresh_token", "scope", "token_type")

    def __init__(
        self,
        access_token: str,
        *,
        token_type: str = "Bearer",  # noqa: S107 - a token type, not a secret
        refresh_token: Optional[str] = None,
        expires_at: Optional[float] = None,
        scope: Optional[str] = None,
        issuer: Optional[str] = None,
        confirmed: bool = False,
    ) -> None:
        self.access_token = access_token
        self.token_type = token_type
        self.refresh_token = refresh_token
        self.expires_at = expires_at  # seconds since the epoch (it outlives the process)
        self.scope = scope
        self.issuer = issuer
        self.confirmed = confirmed  # a request succeeded with it

    @property
    def dpop_bound(self) -> bool:
        """A DPoP-bound token: each request carries a proof of the key it is bound to."""
        return self.token_type == TOKEN_TYPE

    def header(self) -> str:
        """The ``Authorization`` header value (scheme ``DPoP`` for a DPoP-bound token, else ``Bearer``)."""
        return f"{TOKEN_TYPE if self.dpop_bound else 'Bearer'} {self.access_token}"

    def expired(self, margin: float) -> bool:
        """True from ``margin`` seconds before its expiry on."""
        return self.expires_at is not None and time.time() >= self.expires_at - margin

    def covers(self, scopes: Sequence[str]) -> bool:
        """True when every one of ``scopes`` was granted."""
        granted = split_scopes(self.scope)
        return all(scope in granted for scope in scopes)

    def to_dict(self) -> Dict[str, Any]:
        """The token as kept in the token store."""
        return {name: getattr(self, name) for name in self.__slots__}

    @classmethod
    def from_dict(cls, data: Any) -> Optional[Token]:
        """The token kept by ``to_dict``, or ``None`` when ``data`` is not one."""
        if not isinstance(data, dict) or not isinstance(data.get("access_token"), str):
            return None
        expires_at = data.get("expires_at")
        return cls(
            data["access_token"],
            token_type=str(data.get("token_type") or "Bearer"),
            refresh_token=data.get("refresh_token") if isinstance(data.get("refresh_token"), str) else None,
            expires_at=float(expires_at) if isinstance(expires_at, (int, float)) else None,
            scope=data.get("scope") if isinstance(data.get("scope"), str) else None,
            issuer=data.get("issuer") if isinstance(data.get("issuer"), str) else None,
            confirmed=bool(data.get("confirmed")),
        )

    def __repr__(self) -> str:
        refresh = ", refreshable" if self.refresh_token else ""
        return f"<Token scope={self.scope!r} expires_at={self.expires_at!r}{refresh}>"


def request_token(
    flow: FlowContext,
    token_endpoint: str,
    issuer: str,
    client: Client,
    form: List[Tuple[str, str]],
    what: str,
    requested_scopes: List[str],
) -> Token:
    """POST ``form`` (one grant) to the token endpoint as ``client``; the token of the answer.

    Raises:
        AuthorizationError: the server refused, answered something else than
            a Bearer token, or the client cannot authenticate.
    """
    config = flow.config
    body = urlencode(form)
    headers: Dict[str, str] = {}
    method = client.method
    if method in SECRET_METHODS and not client.client_secret:
        method = "none"
    if method == "private_key_jwt":
        if config.private_key is None:
            raise AuthorizationError(
                f"{what}: the client authenticates with private_key_jwt but no private_key was given"
            )
        try:
            assertion = _authlib.client_assertion(
                config.private_key, config.signing_algorithm, client.client_id, issuer
            )
        except ValueError as exc:
            raise AuthorizationError(f"{what}: cannot sign the client assertion: {exc}") from None
        body += "&" + urlencode(
            [("client_assertion_type", _authlib.CLIENT_ASSERTION_TYPE), ("client_assertion", assertion)]
        )
    elif method in (*SECRET_METHODS, "none"):
        if client.client_id:  # an anonymous workload (the JWT bearer grant) sends no client_id
            headers, body = _authlib.apply_client_auth(
                method, client.client_id, client.client_secret, token_endpoint, headers, body
            )
    else:
        raise AuthorizationError(f"{what}: token endpoint authentication {method!r} is not supported")
    status, document = _post_token_request(flow, token_endpoint, what, body, headers)
    access_token = document.get("access_token") if document is not None else None
    if status != 200 or document is None or "error" in document or not isinstance(access_token, str):
        text, code = describe_oauth_error(status, document)
        if status == 200:
            text += " (no access_token in the answer)"
        raise AuthorizationError(f"{what} at {url_label(token_endpoint)} failed: {text}", oauth_error=code)
    token_type = document.get("token_type", "Bearer")
    bound = isinstance(token_type, str) and token_type.lower() == TOKEN_TYPE.lower()
    if bound and flow.dpop is None:
        raise AuthorizationError(f"{what}: the server issued a DPoP token to a request without a DPoP proof")
    if not isinstance(token_type, str) or not (bound or token_type.lower() == "bearer"):
        raise AuthorizationError(f"{what}: token type {token_type!r} is not supported (only Bearer and DPoP)")
    expires_in = document.get("expires_in")
    expires_at = None
    if isinstance(expires_in, (int, float)) and not isinstance(expires_in, bool):
        expires_at = time.time() + float(expires_in)
    elif isinstance(expires_in, str) and expires_in.isdigit():
        expires_at = time.time() + int(expires_in)
    refresh_token = document.get("refresh_token")
    scope = document.get("scope")
    granted = scope if isinstance(scope, str) else (" ".join(merge_scopes(requested_scopes)) or None)
    return Token(
        access_token,
        token_type=TOKEN_TYPE if bound else "Bearer",
        refresh_token=refresh_token if isinstance(refresh_token, str) and refresh_token else None,
        expires_at=expires_at,
        scope=granted,
        issuer=issuer,
    )


def _post_token_request(
    flow: FlowContext, token_endpoint: str, what: str, body: str, headers: Dict[str, str]
) -> Tuple[int, Optional[Dict[str, Any]]]:
    """POST to the token endpoint, with a DPoP proof when the flow binds its tokens.

    A ``use_dpop_nonce`` answer (400 with a ``DPoP-Nonce``) is answered once,
    with a new proof carrying that nonce (RFC 9449 section 8).
    """
    key = flow.dpop
    for _ in range(2):
        sent = dict(headers)
        if key is not None:
            sent[DPOP_HEADER] = key.proof("POST", token_endpoint, nonce=flow.nonces.get(token_endpoint))
        status, document, answer_headers = flow.http.post_answer(token_endpoint, what, form=body, headers=sent)
        fresh = key is not None and flow.nonces.note(token_endpoint, answer_headers)
        if not (status == 400 and document is not None and document.get("error") == USE_DPOP_NONCE and fresh):
            return status, document
        logger.debug("%s: the token endpoint asks for a DPoP nonce; sending the request again", flow.label)
    return status, document


def refresh(flow: FlowContext, token: Token) -> Token:
    """The refresh token grant, at the endpoint and with the client the stored token came from.

    Raises:
        AuthorizationError: the token cannot be refreshed, or the server refused.
    """
    if not token.refresh_token:
        raise AuthorizationError("the token cannot be refreshed")
    token_endpoint = flow.entry.get("token_endpoint")
    issuer = flow.entry.get("issuer")
    resource = flow.entry.get("resource")
    if not (isinstance(token_endpoint, str) and isinstance(issuer, str) and isinstance(resource, str)):
        raise AuthorizationError("the stored token has no token endpoint to refresh it at")
    client = client_for_refresh(flow)
    form = [("grant_type", REFRESH_TOKEN), ("refresh_token", token.refresh_token), ("resource", resource)]
    scopes = flow.entry.get("scopes")
    requested = [s for s in scopes if isinstance(s, str)] if isinstance(scopes, list) else []
    new = request_token(flow, token_endpoint, issuer, client, form, "token refresh", requested)
    if new.refresh_token is None:
        new.refresh_token = token.refresh_token
    if new.scope is None:
        new.scope = token.scope
    logger.debug("%s: token refreshed", flow.label)
    return new


def machine_grant(flow: FlowContext, discovery: Discovery, trigger: Trigger) -> Token:
    """The client credentials grant, or the JWT bearer grant (``OAuth(assertion=...)``).

    Raises:
        AuthorizationError: the assertion provider failed, or the server refused.
    """
    config = flow.config
    token_endpoint = endpoint(discovery, "token_endpoint")
    scopes = flow.scopes(discovery, trigger)
    grant = CLIENT_CREDENTIALS if config.grant == CLIENT_CREDENTIALS else JWT_BEARER_GRANT
    if grant == JWT_BEARER_GRANT and not config.client_id:
        # Workload identity federation: the assertion is the whole credential, no client id.
        client = Client("", None, "none")
    else:
        client = identify_client(flow, discovery, redirect_uri=None, grant_types=[grant])
    form: List[Tuple[str, str]] = [("grant_type", grant)]
    if grant == JWT_BEARER_GRANT:
        assert config.assertion is not None
        request = AssertionRequest(issuer=discovery.issuer, resource=discovery.resource, scopes=tuple(scopes))
        try:
            assertion = config.assertion(request)
        except AuthorizationError:
            raise
        except Exception as exc:
            raise AuthorizationError(f"the assertion provider failed: {type(exc).__name__}") from exc
        form.append(("assertion", assertion))
    form.append(("resource", discovery.resource))
    if scopes:
        form.append(("scope", " ".join(scopes)))
    what = "client credentials grant" if grant == CLIENT_CREDENTIALS else "JWT bearer grant"
    token = request_token(flow, token_endpoint, discovery.issuer, client, form, what, scopes)
    flow.remember(discovery, token_endpoint, client.to_dict(), scopes)
    return token


__all__ = ["Token", "machine_grant", "refresh", "request_token"]
