"""The authorization flow for one MCP server, and the state that makes it happen once.

Theory of operation.  :class:`ServerAuth` holds what one MCP server's
authorization needs across requests: the current token, the client
registrations, the scopes requested so far.  When a request needs a token it
does not have (a 401, a 403 ``insufficient_scope``, an expired token with a
way to renew it, an explicit :meth:`ServerAuth.authorize`), it decides under
its lock whether the current token already answers the need (another thread
just got it), whether a flow is already running (then it waits for that
flow's outcome), or whether this thread leads a new flow.  The flow itself
(:class:`_Flow`) runs with no lock held: it talks to the network and calls
``on_authorize``.  Its outcome is shared through a ``Future`` with every
thread that waited, so many threads hitting a 401 together cause one
authorization, and a failure fails them all with the same error.

The number of tokens obtained since a request last succeeded with one is
bounded (``max_authorizations``): a server that answers 401 or 403 whatever it
is given ends in :class:`AuthorizationError`, not in a loop.  A flow that fails
does not count: its error goes to the requests that waited for it, and the
next request may start a new one.

One flow (:class:`_Flow`), in the order of the MCP specification 2025-11-25:
protected-resource metadata (the challenge's ``resource_metadata``, then the
well-known locations); its ``resource`` must match the server; the first
authorization server it names, whose metadata is found by RFC 8414 / OpenID
Connect discovery and must carry the same issuer.  A server without
protected-resource metadata is a 2025-03-26 server: metadata at the root of its
origin, else ``/authorize``, ``/token`` and ``/register`` there.  Then the
client identity (pre-registered, a client ID metadata document URL, a stored
registration, or dynamic registration), the grant (authorization code with
PKCE S256, ``state`` and ``resource``; client credentials; or a JWT bearer
assertion), and the token.
"""

from __future__ import annotations

import copy
import logging
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union
from urllib.parse import parse_qs, quote, urlencode, urlsplit, urlunsplit

from ..transports.http import url_label
from . import _authlib
from ._errors import AuthorizationError
from ._http import FlowHttp, describe_oauth_error
from ._metadata import (
    OAUTH_AS_WELL_KNOWN,
    OPENID_WELL_KNOWN,
    Challenge,
    application_type,
    authorization_server_metadata_urls,
    canonical_resource,
    merge_scopes,
    origin,
    protected_resource_metadata_urls,
    resource_matches,
    same_issuer,
    select_scopes,
    split_scopes,
    with_offline_access,
)
from .grants import JWT_BEARER_GRANT, AssertionProvider, AssertionRequest
from .loopback import LoopbackAuthorizer
from .store import Entry, TokenStore

logger = logging.getLogger(__name__)

AUTHORIZATION_CODE = "authorization_code"
CLIENT_CREDENTIALS = "client_credentials"
REFRESH_TOKEN = "refresh_token"  # noqa: S105 - a grant type, not a secret
#: Sent as ``redirect_uri`` when ``on_authorize`` is a plain callable and no redirect URI was given.
DEFAULT_HEADLESS_REDIRECT_URI = "http://127.0.0.1/callback"
_SECRET_METHODS = ("client_secret_basic", "client_secret_post")

Authorize = Callable[[str], str]


@dataclass(frozen=True)
class Config:
    """The settings of an :class:`~jsonrpc_threads.auth.OAuth`, shared by its servers."""

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

    def header(self) -> str:
        return f"Bearer {self.access_token}"

    def expired(self, margin: float) -> bool:
        return self.expires_at is not None and time.time() >= self.expires_at - margin

    def covers(self, scopes: Sequence[str]) -> bool:
        granted = split_scopes(self.scope)
        return all(scope in granted for scope in scopes)

    def to_dict(self) -> Dict[str, Any]:
        return {name: getattr(self, name) for name in self.__slots__}

    @classmethod
    def from_dict(cls, data: Any) -> Optional[Token]:
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


@dataclass(frozen=True)
class _Client:
    client_id: str
    client_secret: Optional[str] = field(repr=False)
    method: str
    preregistered: bool = False

    def to_dict(self) -> Dict[str, Any]:
        data: Dict[str, Any] = {"client_id": self.client_id, "token_endpoint_auth_method": self.method}
        if self.preregistered:
            data["preregistered"] = True  # its secret comes from the configuration, never stored
        elif self.client_secret:
            data["client_secret"] = self.client_secret
        return data


@dataclass(frozen=True)
class _Discovery:
    resource: str  # the `resource` parameter: the metadata's, exactly as published
    issuer: str
    metadata: Dict[str, Any]
    prm_scopes: Optional[List[str]]
    legacy: bool  # a 2025-03-26 server (no protected-resource metadata)
    defaults: bool  # no authorization-server metadata either: the default endpoints


@dataclass(frozen=True)
class _Trigger:
    kind: str  # "challenge", "expired" or "explicit"
    sent: Optional[str]  # the access token the failed request carried
    status: Optional[int] = None
    challenge: Optional[Challenge] = None

    @property
    def step_up(self) -> bool:
        return self.status == 403


def choose_auth_method(supported: Any, *, has_secret: bool, has_key: bool) -> str:
    """The token endpoint authentication method for a client, by what the server supports."""
    if has_key:
        return "private_key_jwt"
    if not has_secret:
        return "none"
    methods = supported if isinstance(supported, list) and supported else ["client_secret_basic"]
    for method in _SECRET_METHODS:
        if method in methods:
            return method
    return "client_secret_basic"


class ServerAuth:
    """Tokens and the single-flight authorization for one MCP server.  Thread-safe."""

    def __init__(self, config: Config, server_url: str, key: str, entry: Optional[Entry]) -> None:
        self._config = config
        self.server_url = server_url
        self.key = key
        # _lock guards _entry, _token, _pending and _unconfirmed.
        self._lock = threading.Lock()
        self._entry: Entry = entry if isinstance(entry, dict) else {}
        self._token = Token.from_dict(self._entry.get("token"))
        self._pending: Optional[Future[Token]] = None
        self._unconfirmed = 0  # tokens obtained since a request last succeeded with one

    # -- what the AuthBase asks -----------------------------------------------------------

    def header(self) -> Optional[str]:
        """The ``Authorization`` value for a new request (renewing an expired token first)."""
        with self._lock:
            token = self._token
        if token is None:
            return None
        renewable = token.refresh_token is not None or self._config.grant != AUTHORIZATION_CODE
        if token.expired(self._config.refresh_margin) and renewable:
            try:
                token = self._acquire(_Trigger("expired", token.access_token))
            except AuthorizationError as exc:
                logger.info("%s: renewing the expired token failed (%s)", url_label(self.server_url), _reason(exc))
                self._drop(token)
                return None
        return token.header()

    def confirm(self, sent_header: str) -> None:
        """A request that carried ``sent_header`` succeeded."""
        entry = None
        with self._lock:
            token = self._token
            if token is None or token.header() != sent_header:
                return
            self._unconfirmed = 0
            if not token.confirmed:
                token.confirmed = True  # from now on a 401 for it is worth a refresh
                self._entry["token"] = token.to_dict()
                entry = copy.deepcopy(self._entry)
        if entry is not None:
            self._save(entry)

    def handle_challenge(self, status: int, challenge: Optional[Challenge], sent_header: Optional[str]) -> str:
        """The ``Authorization`` value to re-send with after a 401 or a 403 ``insufficient_scope``.

        Raises:
            AuthorizationError: authorization failed or the bound was reached.
        """
        sent = sent_header[7:] if sent_header and sent_header[:7].lower() == "bearer " else None
        return self._acquire(_Trigger("challenge", sent, status, challenge)).header()

    def authorize(self) -> Token:
        """Run a flow now (no challenge: discovery from the well-known locations)."""
        with self._lock:
            self._unconfirmed = 0
            sent = self._token.access_token if self._token is not None else None
        return self._acquire(_Trigger("explicit", sent))

    # -- single flight ---------------------------------------------------------------------

    def _satisfied(self, trigger: _Trigger, token: Optional[Token]) -> bool:
        if token is None:
            return False
        if trigger.kind == "expired":
            return not token.expired(self._config.refresh_margin)
        if token.access_token == trigger.sent:
            return False
        if trigger.step_up and trigger.challenge is not None:
            return token.covers(trigger.challenge.scopes)
        return True

    def _acquire(self, trigger: _Trigger) -> Token:
        while True:
            with self._lock:
                token = self._token
                if self._satisfied(trigger, token):
                    assert token is not None
                    return token
                running = self._pending
                if running is None:
                    if self._unconfirmed >= self._config.max_authorizations:
                        raise AuthorizationError(
                            f"{url_label(self.server_url)}: still refused after {self._unconfirmed} "
                            "authorization(s); giving up",
                            status_code=trigger.status,
                            oauth_error=trigger.challenge.error if trigger.challenge is not None else None,
                        )
                    pending: Future[Token] = Future()
                    self._pending = pending
                    entry = copy.deepcopy(self._entry)
            if running is not None:
                running.result()  # the leader's token, or its error raised here too
                continue
            try:
                token, entry = self._run_flow(trigger, token, entry)
            except BaseException as exc:
                with self._lock:
                    self._pending = None
                pending.set_exception(exc)
                raise
            with self._lock:
                self._token = token
                self._entry = entry
                self._pending = None
                # Only tokens count: a flow that failed (the user declined, the
                # server was down) may be tried again by the next request.
                self._unconfirmed += 1
            self._save(entry)
            pending.set_result(token)
            return token

    def _run_flow(self, trigger: _Trigger, token: Optional[Token], entry: Entry) -> Tuple[Token, Entry]:
        config = self._config
        with FlowHttp(timeout=config.timeout, verify=config.verify) as http:
            flow = _Flow(config, self.server_url, http, entry)
            new_token = flow.run(trigger, token)
        entry["token"] = new_token.to_dict()
        return new_token, entry

    def _drop(self, token: Token) -> None:
        with self._lock:
            if self._token is not token:
                return
            self._token = None
            self._entry.pop("token", None)
            entry = copy.deepcopy(self._entry)
        self._save(entry)

    def _save(self, entry: Entry) -> None:
        try:
            self._config.store.save(self.key, entry)
        except Exception as exc:
            logger.warning("%s: the token store failed (%s); tokens kept in memory", self.key, type(exc).__name__)


def _reason(exc: AuthorizationError) -> str:
    return exc.oauth_error or exc.message


class _Flow:
    """One run of the authorization protocol.  Single-threaded; no lock held."""

    def __init__(self, config: Config, server_url: str, http: FlowHttp, entry: Entry) -> None:
        self.config = config
        self.server_url = server_url
        self.label = url_label(server_url)
        self.http = http
        self.entry = entry

    def run(self, trigger: _Trigger, token: Optional[Token]) -> Token:
        config = self.config
        if trigger.kind == "expired" and config.grant == AUTHORIZATION_CODE and token is not None:
            return self.refresh(token)
        discovery = self.discover(trigger.challenge)
        if config.grant != AUTHORIZATION_CODE:
            return self.machine_grant(discovery, trigger)
        if (
            trigger.kind == "challenge"
            and not trigger.step_up
            and token is not None
            and token.refresh_token
            and token.confirmed
            and token.issuer == discovery.issuer
        ):
            try:
                return self.refresh(token)
            except AuthorizationError as exc:
                logger.info("%s: refresh refused (%s); authorizing again", self.label, _reason(exc))
        return self.authorization_code(discovery, trigger)

    # -- discovery ---------------------------------------------------------------------------

    def discover(self, challenge: Optional[Challenge]) -> _Discovery:
        urls: List[str] = []
        if challenge is not None and challenge.resource_metadata:
            urls.append(challenge.resource_metadata)
        urls.extend(url for url in protected_resource_metadata_urls(self.server_url) if url not in urls)
        for url in urls:
            document, _ = self.http.get_json(url, "protected resource metadata")
            if document is not None:
                return self._from_resource_metadata(url, document)
        logger.debug("%s: no protected resource metadata: a 2025-03-26 server", self.label)
        return self._legacy_discovery()

    def _from_resource_metadata(self, url: str, document: Dict[str, Any]) -> _Discovery:
        resource = document.get("resource")
        if not isinstance(resource, str) or not resource_matches(resource, self.server_url):
            raise AuthorizationError(
                f"refusing to authorize: the protected resource metadata at {url_label(url)} is for "
                f"{resource if isinstance(resource, str) else 'no resource'}, not for {self.label}"
            )
        servers = document.get("authorization_servers")
        issuers = [s for s in servers if isinstance(s, str) and s] if isinstance(servers, list) else []
        if not issuers:
            raise AuthorizationError(
                f"the protected resource metadata at {url_label(url)} names no authorization server"
            )
        issuer = issuers[0]
        tried: List[str] = []
        for metadata_url in authorization_server_metadata_urls(issuer):
            metadata, why = self.http.get_json(metadata_url, "authorization server metadata")
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
            return _Discovery(resource, issuer, metadata, prm_scopes, legacy=False, defaults=False)
        raise AuthorizationError(f"no authorization server metadata for {issuer} ({'; '.join(tried)})")

    def _legacy_discovery(self) -> _Discovery:
        base = origin(self.server_url)
        resource = canonical_resource(self.server_url)
        for url in (base + OAUTH_AS_WELL_KNOWN, base + OPENID_WELL_KNOWN):
            metadata, _ = self.http.get_json(url, "authorization server metadata (2025-03-26)")
            if metadata is not None:
                # No protected-resource metadata named an issuer: the server's origin stands for it.
                # The metadata may name an issuer below that origin (its /oauth), never another origin.
                issuer = metadata.get("issuer")
                if not isinstance(issuer, str):
                    issuer = base
                elif origin(issuer) != base:
                    raise AuthorizationError(
                        f"refusing to authorize: the metadata at {url_label(url)} is for issuer {issuer!r}, "
                        f"not for {base}"
                    )
                return _Discovery(resource, issuer, metadata, None, legacy=True, defaults=False)
        logger.debug("%s: no authorization server metadata: the default endpoints", self.label)
        metadata = {
            "authorization_endpoint": base + "/authorize",
            "token_endpoint": base + "/token",
            "registration_endpoint": base + "/register",
        }
        return _Discovery(resource, base, metadata, None, legacy=True, defaults=True)

    @staticmethod
    def _endpoint(discovery: _Discovery, name: str) -> str:
        value = discovery.metadata.get(name)
        if not isinstance(value, str) or urlsplit(value).scheme not in ("http", "https"):
            raise AuthorizationError(f"the authorization server {discovery.issuer} has no usable {name}")
        return value

    # -- client identity -------------------------------------------------------------------

    def client(self, discovery: _Discovery, *, redirect_uri: Optional[str], grant_types: List[str]) -> _Client:
        config = self.config
        metadata = discovery.metadata
        supported = metadata.get("token_endpoint_auth_methods_supported")
        if config.client_id:
            method = config.token_endpoint_auth_method or choose_auth_method(
                supported, has_secret=bool(config.client_secret), has_key=config.private_key is not None
            )
            return _Client(config.client_id, config.client_secret, method, preregistered=True)
        if config.client_metadata_url and metadata.get("client_id_metadata_document_supported") is True:
            return _Client(config.client_metadata_url, None, "none")
        registrations = self.entry.setdefault("registrations", {})
        stored = registrations.get(discovery.issuer)
        if isinstance(stored, dict) and self._still_valid(stored, redirect_uri):
            return _Client(
                stored["client_id"], stored.get("client_secret"), str(stored.get("token_endpoint_auth_method", "none"))
            )
        endpoint = metadata.get("registration_endpoint")
        if not isinstance(endpoint, str):
            raise AuthorizationError(
                f"the authorization server {discovery.issuer} needs a client_id: it offers no dynamic client "
                "registration (pass client_id=, or client_metadata_url= if it supports client ID metadata documents)"
            )
        return self.register(discovery, endpoint, redirect_uri=redirect_uri, grant_types=grant_types)

    @staticmethod
    def _still_valid(stored: Dict[str, Any], redirect_uri: Optional[str]) -> bool:
        if not isinstance(stored.get("client_id"), str):
            return False
        if redirect_uri is not None and stored.get("redirect_uri") != redirect_uri:
            return False
        expires = stored.get("client_secret_expires_at")
        return not (isinstance(expires, (int, float)) and expires and time.time() >= expires)

    def register(
        self, discovery: _Discovery, endpoint: str, *, redirect_uri: Optional[str], grant_types: List[str]
    ) -> _Client:
        """Dynamic client registration (RFC 7591)."""
        supported = discovery.metadata.get("token_endpoint_auth_methods_supported")
        public = supported is None or (isinstance(supported, list) and "none" in supported)
        if redirect_uri is not None and public:
            requested = "none"  # a native client with PKCE: no secret to keep
        else:
            requested = choose_auth_method(supported, has_secret=True, has_key=False)
        body: Dict[str, Any] = {
            "client_name": self.config.client_name,
            "grant_types": grant_types,
            "token_endpoint_auth_method": requested,
            "application_type": application_type(redirect_uri),
        }
        if redirect_uri is not None:
            body["redirect_uris"] = [redirect_uri]
            body["response_types"] = ["code"]
        what = "dynamic client registration"
        status, document = self.http.post(endpoint, what, body=body)
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
        self.entry.setdefault("registrations", {})[discovery.issuer] = stored
        logger.debug("%s: registered a client with %s", self.label, url_label(endpoint))
        return _Client(client_id, secret, method)

    def _client_for_refresh(self) -> _Client:
        data = self.entry.get("client")
        if not isinstance(data, dict) or not isinstance(data.get("client_id"), str):
            raise AuthorizationError("no client is known for the stored token")
        method = str(data.get("token_endpoint_auth_method", "none"))
        if data.get("preregistered"):
            return _Client(data["client_id"], self.config.client_secret, method, preregistered=True)
        return _Client(data["client_id"], data.get("client_secret"), method)

    # -- grants ---------------------------------------------------------------------------

    def authorization_code(self, discovery: _Discovery, trigger: _Trigger) -> Token:
        config = self.config
        authorize_endpoint = self._endpoint(discovery, "authorization_endpoint")
        token_endpoint = self._endpoint(discovery, "token_endpoint")
        methods = discovery.metadata.get("code_challenge_methods_supported")
        if methods is not None and (not isinstance(methods, list) or "S256" not in methods):
            raise AuthorizationError(
                f"refusing to authorize: the authorization server {discovery.issuer} does not support PKCE with S256"
            )
        scopes = self._scopes(discovery, trigger)
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
                client = self.client(discovery, redirect_uri=redirect_uri, grant_types=grant_types)
                url = self._authorization_url(
                    authorize_endpoint, client, redirect_uri, verifier, state, discovery, requested
                )
                logger.info("%s: waiting for the user to authorize at %s", self.label, url_label(authorize_endpoint))
                authorizer.open(url)
                redirected = listener.wait(authorizer.timeout)
        else:
            redirect_uri = config.redirect_uri or DEFAULT_HEADLESS_REDIRECT_URI
            client = self.client(discovery, redirect_uri=redirect_uri, grant_types=grant_types)
            url = self._authorization_url(
                authorize_endpoint, client, redirect_uri, verifier, state, discovery, requested
            )
            logger.info("%s: asking the user to authorize at %s", self.label, url_label(authorize_endpoint))
            try:
                redirected = authorizer(url)
            except AuthorizationError:
                raise
            except Exception as exc:
                raise AuthorizationError(f"on_authorize failed: {type(exc).__name__}") from exc
            if not isinstance(redirected, str):
                raise AuthorizationError("on_authorize must return the URL the user was redirected to")
        code = self._code_from_redirect(redirected, state, discovery)
        form = [
            ("grant_type", AUTHORIZATION_CODE),
            ("code", code),
            ("redirect_uri", redirect_uri),
            ("code_verifier", verifier),
            ("resource", discovery.resource),
        ]
        token = self.token_request(
            token_endpoint, discovery.issuer, client, form, "authorization code exchange", requested
        )
        self._remember(discovery, token_endpoint, client, scopes)
        return token

    def machine_grant(self, discovery: _Discovery, trigger: _Trigger) -> Token:
        config = self.config
        token_endpoint = self._endpoint(discovery, "token_endpoint")
        scopes = self._scopes(discovery, trigger)
        grant = CLIENT_CREDENTIALS if config.grant == CLIENT_CREDENTIALS else JWT_BEARER_GRANT
        client = self.client(discovery, redirect_uri=None, grant_types=[grant])
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
        token = self.token_request(token_endpoint, discovery.issuer, client, form, what, scopes)
        self._remember(discovery, token_endpoint, client, scopes)
        return token

    def refresh(self, token: Token) -> Token:
        if not token.refresh_token:
            raise AuthorizationError("the token cannot be refreshed")
        endpoint = self.entry.get("token_endpoint")
        issuer = self.entry.get("issuer")
        resource = self.entry.get("resource")
        if not (isinstance(endpoint, str) and isinstance(issuer, str) and isinstance(resource, str)):
            raise AuthorizationError("the stored token has no token endpoint to refresh it at")
        client = self._client_for_refresh()
        form = [("grant_type", REFRESH_TOKEN), ("refresh_token", token.refresh_token), ("resource", resource)]
        scopes = self.entry.get("scopes")
        requested = [s for s in scopes if isinstance(s, str)] if isinstance(scopes, list) else []
        new = self.token_request(endpoint, issuer, client, form, "token refresh", requested)
        if new.refresh_token is None:
            new.refresh_token = token.refresh_token
        if new.scope is None:
            new.scope = token.scope
        logger.debug("%s: token refreshed", self.label)
        return new

    def _scopes(self, discovery: _Discovery, trigger: _Trigger) -> List[str]:
        previous = self.entry.get("scopes")
        return select_scopes(
            configured=self.config.scopes,
            challenged=trigger.challenge.scopes if trigger.challenge is not None else [],
            supported=discovery.prm_scopes,
            previous=[s for s in previous if isinstance(s, str)] if isinstance(previous, list) else [],
        )

    def _remember(self, discovery: _Discovery, token_endpoint: str, client: _Client, scopes: List[str]) -> None:
        self.entry.update(
            {
                "issuer": discovery.issuer,
                "token_endpoint": token_endpoint,
                "resource": discovery.resource,
                "scopes": scopes,
                "client": client.to_dict(),
            }
        )

    @staticmethod
    def _authorization_url(
        endpoint: str,
        client: _Client,
        redirect_uri: str,
        verifier: str,
        state: str,
        discovery: _Discovery,
        scopes: List[str],
    ) -> str:
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
        parts = urlsplit(endpoint)
        query = urlencode(params, quote_via=quote)
        return urlunsplit(parts._replace(query=f"{parts.query}&{query}" if parts.query else query))

    @staticmethod
    def _code_from_redirect(redirected: str, state: str, discovery: _Discovery) -> str:
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

    def token_request(
        self,
        endpoint: str,
        issuer: str,
        client: _Client,
        form: List[Tuple[str, str]],
        what: str,
        requested_scopes: List[str],
    ) -> Token:
        body = urlencode(form)
        headers: Dict[str, str] = {}
        method = client.method
        if method in _SECRET_METHODS and not client.client_secret:
            method = "none"
        if method == "private_key_jwt":
            if self.config.private_key is None:
                raise AuthorizationError(
                    f"{what}: the client authenticates with private_key_jwt but no private_key was given"
                )
            try:
                assertion = _authlib.client_assertion(
                    self.config.private_key, self.config.signing_algorithm, client.client_id, issuer
                )
            except ValueError as exc:
                raise AuthorizationError(f"{what}: cannot sign the client assertion: {exc}") from None
            body += "&" + urlencode(
                [("client_assertion_type", _authlib.CLIENT_ASSERTION_TYPE), ("client_assertion", assertion)]
            )
        elif method in (*_SECRET_METHODS, "none"):
            headers, body = _authlib.apply_client_auth(
                method, client.client_id, client.client_secret, endpoint, headers, body
            )
        else:
            raise AuthorizationError(f"{what}: token endpoint authentication {method!r} is not supported")
        status, document = self.http.post(endpoint, what, form=body, headers=headers)
        access_token = document.get("access_token") if document is not None else None
        if status != 200 or document is None or "error" in document or not isinstance(access_token, str):
            text, code = describe_oauth_error(status, document)
            if status == 200:
                text += " (no access_token in the answer)"
            raise AuthorizationError(f"{what} at {url_label(endpoint)} failed: {text}", oauth_error=code)
        token_type = document.get("token_type", "Bearer")
        if not isinstance(token_type, str) or token_type.lower() != "bearer":
            raise AuthorizationError(f"{what}: token type {token_type!r} is not supported (only Bearer)")
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
            refresh_token=refresh_token if isinstance(refresh_token, str) and refresh_token else None,
            expires_at=expires_at,
            scope=granted,
            issuer=issuer,
        )


__all__ = ["AUTHORIZATION_CODE", "CLIENT_CREDENTIALS", "DEFAULT_HEADLESS_REDIRECT_URI", "Config", "ServerAuth", "Token"]
