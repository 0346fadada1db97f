"""One run of the authorization protocol for one MCP server: the steps, in their order.

Theory of operation.  ``run_flow`` runs with no lock held, on the thread
that leads the single flight (``_server_auth``); it talks to the network
and may call ``on_authorize``.  It is given a private copy of the server's
stored entry and updates it (registrations, endpoints, scopes); the caller
adopts the copy only when a token comes out.

The order, after the MCP specification 2025-11-25:

1. an expired token of the authorization code grant is refreshed, nothing else;
2. discovery (``_discovery``): the protected resource's metadata, its
   authorization server and that server's metadata;
3. without a user (``client_credentials``, a JWT bearer assertion): that grant
   (``_tokens``);
4. with a user: a 401 on a token that worked before, from the same issuer,
   is first answered with a refresh; otherwise, or when the refresh is refused,
   the authorization code grant (``_authorization_code``).

The client's identity (``_registration``) is settled inside the grant,
once the redirect URI is known.
"""

from __future__ import annotations

import logging
from typing import Optional

from ..errors import AuthorizationError
from ._authorization_code import authorization_code
from ._context import AUTHORIZATION_CODE, Config, FlowContext, Trigger
from ._discovery import discover
from ._dpop import TOKEN_TYPE, Nonces, load_key
from ._http import FlowHttp
from ._tokens import Token, machine_grant, refresh
from .store import Entry

logger = logging.getLogger(__name__)


def run_flow(
    config: Config, server_url: str, entry: Entry, trigger: Trigger, token: Optional[Token], nonces: Nonces
) -> Token:
    """Obtain a new token for ``server_url`` (updating ``entry``); one HTTP session, closed at the end.

    Args:
        config: the settings.
        server_url: the MCP server's URL.
        entry: a private copy of the server's stored entry, updated in place.
        trigger: why the flow runs.
        token: the current token, if any (a refresh starts from it).
        nonces: the DPoP nonces servers handed out.

    Raises:
        AuthorizationError: any step failed or was refused.
    """
    with FlowHttp(timeout=config.timeout, verify=config.verify) as http:
        flow = FlowContext(config, server_url, http, entry, nonces)
        if token is not None and token.token_type == TOKEN_TYPE:
            flow.dpop = load_key(entry)  # a refresh of a DPoP-bound token proves the same key
        if trigger.kind == "expired" and config.grant == AUTHORIZATION_CODE and token is not None:
            return refresh(flow, token)
        discovery = discover(flow, trigger.challenge)
        flow.use_dpop(discovery, trigger)
        if config.grant != AUTHORIZATION_CODE:
            return machine_grant(flow, discovery, trigger)
        if (
            trigger.kind == "challenge"
            and not trigger.step_up
            and token is not None
            and token.refresh_token
            and token.confirmed
            and token.issuer == discovery.issuer
        ):
            try:
                return refresh(flow, token)
            except AuthorizationError as exc:
                logger.info("%s: refresh refused (%s); authorizing again", flow.label, reason(exc))
        return authorization_code(flow, discovery, trigger)


def reason(exc: AuthorizationError) -> str:
    """A short reason for a log line: the OAuth error code, else the message."""
    return exc.oauth_error or exc.message


__all__ = ["reason", "run_flow"]
