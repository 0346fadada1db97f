"""What one authorization flow is given: the settings, why it runs, and the entry it updates.

``Config`` is an ``OAuth``'s settings, shared
(immutable) by every server it authorizes.  ``Trigger`` says why a flow
runs.  ``FlowContext`` is one run: the settings, the server, the HTTP
client of the run, and a private copy of the server's stored entry (token,
registrations, endpoints, scopes) that the steps read and update; the single
flight (``_server_auth``) adopts it when the run succeeds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Tuple, Union

from ..errors import AuthorizationError
from ..transports.http import url_label
from ._dpop import DpopKey, Nonces, load_key
from ._dpop import supports as dpop_supports
from ._http import FlowHttp
from ._metadata import Challenge, select_scopes
from .grants import AssertionProvider
from .store import Entry, TokenStore

if TYPE_CHECKING:
    from ._discovery import Discovery

AUTHORIZATION_CODE = "authorization_code"
CLIENT_CREDENTIALS = "client_credentials"
REFRESH_TOKEN = "refresh_token"  # noqa: S105 - a grant type, not a secret

Authorize = Callable[[str], str]


@dataclass(frozen=True)
class Config:
    """The settings of an ``OAuth``, shared by its servers."""

    client_id: Optional[str]
    client_secret: Optional[str] = field(repr=False)
    client_metadata_url: Optional[str]
    scopes: Optional[Tuple[str, ...]]
    on_authorize: Authorize
    redirect_uri: Optional[str]
    client_name: str
    grant: str
    private_key: Optional[Union[str, bytes]] = field(repr=False)
    signing_algorithm: Optional[str]
    token_endpoint_auth_method: Optional[str]
    assertion: Optional[AssertionProvider]
    store: TokenStore
    max_authorizations: int
    refresh_margin: float
    timeout: Tuple[float, float]
    verify: Union[bool, str]
    dpop: Union[bool, str] = "auto"


@dataclass(frozen=True)
class Trigger:
    """Why a flow runs.

    Attributes:
        kind: ``"challenge"`` (a 401 or 403), ``"expired"`` or ``"explicit"``.
        sent: the access token the failed request carried.
        status: the status of the challenge.
        challenge: its ``Bearer`` challenge, when it had one.
    """

    kind: str
    sent: Optional[str] = field(repr=False)  # a bearer token: never in a repr
    status: Optional[int] = None
    challenge: Optional[Challenge] = None

    @property
    def step_up(self) -> bool:
        """A 403 ``insufficient_scope``: more scopes are needed."""
        return self.status == 403


@dataclass
class FlowContext:
    """One run of the flow for one server.  Single-threaded: its thread owns it.

    Attributes:
        config: the settings.
        server_url: the MCP server's URL.
        http: the run's HTTP client (closed when the run ends).
        entry: the run's copy of the server's stored entry.
        nonces: the DPoP nonces servers handed out (shared with the server's requests).
        dpop: the DPoP key the tokens of this run are bound to, once the run decided to use DPoP.
    """

    config: Config
    server_url: str
    http: FlowHttp
    entry: Entry
    nonces: Nonces = field(default_factory=Nonces)
    dpop: Optional[DpopKey] = None

    def use_dpop(self, discovery: Discovery, trigger: Trigger) -> None:
        """Decide whether this run's tokens are DPoP-bound; make (or reuse) the key if they are.

        ``dpop=True``: always (the authorization server must support ES256);
        ``"auto"``: when the authorization server supports ES256 and the MCP
        server asks for DPoP (a ``DPoP`` challenge, or protected-resource
        metadata that requires or lists it); ``False``: never.

        Raises:
            AuthorizationError: ``dpop=True`` and the authorization server does not support ES256 proofs.
        """
        setting = self.config.dpop
        if setting is False:
            return
        as_supports = dpop_supports(discovery.metadata)
        if setting is True:
            if not as_supports:
                raise AuthorizationError(
                    f"DPoP was asked for, but the authorization server {discovery.issuer} does not accept ES256 proofs"
                )
        else:
            prm = discovery.resource_metadata
            server_asks = (
                (trigger.challenge is not None and trigger.challenge.is_dpop())
                or prm.get("dpop_bound_access_tokens_required") is True
                or dpop_supports(prm)
            )
            if not (as_supports and server_asks):
                return
        key = load_key(self.entry)
        if key is None:
            key = DpopKey()
            self.entry["dpop_key"] = key.pem
        self.dpop = key

    @property
    def label(self) -> str:
        """The server's URL without credentials or query, for messages and logs."""
        return url_label(self.server_url)

    def scopes(self, discovery: Discovery, trigger: Trigger) -> List[str]:
        """The scopes to request: configured, else challenged, else supported; plus those requested before."""
        previous = self.entry.get("scopes")
        return select_scopes(
            configured=self.config.scopes,
            challenged=trigger.challenge.scopes if trigger.challenge is not None else [],
            supported=discovery.prm_scopes,
            previous=[s for s in previous if isinstance(s, str)] if isinstance(previous, list) else [],
        )

    def remember(self, discovery: Discovery, token_endpoint: str, client: Dict[str, Any], scopes: List[str]) -> None:
        """Keep what a later refresh needs: issuer, endpoint, resource, scopes and client."""
        self.entry.update(
            {
                "issuer": discovery.issuer,
                "token_endpoint": token_endpoint,
                "resource": discovery.resource,
                "scopes": scopes,
                "client": client,
            }
        )


__all__ = [
    "AUTHORIZATION_CODE",
    "CLIENT_CREDENTIALS",
    "REFRESH_TOKEN",
    "Authorize",
    "Config",
    "FlowContext",
    "Trigger",
]
