"""OAuth: a ``requests.auth.AuthBase`` that authorizes requests to MCP servers.

Theory of operation.  ``OAuth.__call__`` runs for every request ``requests``
prepares: it adds ``Authorization: Bearer <token>`` when a token is known for
the request's server (renewing an expired one first) and registers a response
hook.  The hook looks at the answer: a 401 (any, or one with a ``Bearer``
challenge) or a 403 whose challenge says ``insufficient_scope`` starts or
joins the authorization for that server (``_server_auth.ServerAuth``), then the
request is sent again, as a copy with the new token, on the same connection
adapter (``response.connection.send``), as ``requests``' own digest
authentication does.  Each request goes around at most ``max_authorizations``
times; the answer that ends the loop is returned as the response, so the
transport reports it as it would any other.  A success with a token resets
the server's count of fruitless authorizations.

A DELETE (an MCP client ending its session) is never worth an authorization:
its 401 is returned as it is.
"""

from __future__ import annotations

import logging
import os
import threading
from typing import Any, Dict, Optional, Sequence, Tuple, Union

import requests
import requests.auth
from requests.utils import rewind_body

from ..errors import AuthorizationError
from ..transports.http import url_label
from . import _authlib
from ._context import AUTHORIZATION_CODE, CLIENT_CREDENTIALS, Authorize, Config
from ._dpop import DPOP_HEADER, USE_DPOP_NONCE
from ._http import DEFAULT_FLOW_TIMEOUT_S
from ._metadata import auth_challenge, canonical_resource
from ._server_auth import ServerAuth
from .grants import JWT_BEARER_GRANT, AssertionProvider
from .loopback import LoopbackAuthorizer
from .store import FileTokenStore, MemoryTokenStore, TokenStore

logger = logging.getLogger(__name__)

#: How many authorizations (or refreshes) may follow one another without a
#: request succeeding before ``AuthorizationError`` is raised.
DEFAULT_MAX_AUTHORIZATIONS = 3
#: Seconds before its expiry at which a token is renewed.
DEFAULT_REFRESH_MARGIN_S = 60.0
#: Bytes of a 401/403 body read (so the connection can be reused) before re-sending.
_DRAIN_LIMIT_BYTES = 64 * 1024


class OAuth(requests.auth.AuthBase):
    """OAuth 2.1 authorization for MCP servers, as the MCP specification (2025-11-25) describes it.

    Use it as ``HttpTransport(url, auth=OAuth(...))`` (or as the ``auth`` of any
    ``requests`` call).  Nothing happens until a server answers 401: then the
    server's protected-resource metadata and its authorization server are
    discovered, the client identifies itself (``client_id``, a client ID
    metadata document, or dynamic registration), the user authorizes (by
    default in the browser, the redirect arriving on 127.0.0.1), and the
    request is sent again with the token.  Tokens are refreshed before they
    expire; a 403 ``insufficient_scope`` asks for the union of the scopes
    requested so far and those the server names (step-up).

    Thread-safe: any number of threads may use it at once, also across
    transports.  Threads that hit a 401 together wait for one authorization.

    Args:
        client_id: a pre-registered client id (with ``client_secret`` or
            ``private_key`` for a confidential client).  Without one, the client
            ID metadata document URL or dynamic client registration is used.
        client_secret: the pre-registered client's secret.
        client_metadata_url: an https URL where this client's metadata
            document is published; used as the client id with authorization
            servers that advertise ``client_id_metadata_document_supported``.
        scopes: the scopes to request.  By default: those of the server's
            challenge, else all its metadata lists in ``scopes_supported``,
            else none (no ``scope`` parameter).  ``offline_access`` is added when
            the authorization server lists it.
        on_authorize: ``callable(authorization_url) -> redirect URL``: show the
            user the URL, return the URL the authorization server redirected
            the user's browser to (with ``code`` and ``state``).  Called on the
            thread that hit the 401.  Default: a ``LoopbackAuthorizer``
            (opens the browser, listens on 127.0.0.1 for the redirect).
        token_store: a ``TokenStore``, or a path for a
            ``FileTokenStore`` (mode 0600).  Default: in memory.
        client_name: the ``client_name`` sent in dynamic registration.
        redirect_uri: the redirect URI.  With the default ``on_authorize``: the
            loopback address to listen on (``http://127.0.0.1:8765/callback``);
            by default a free port.  With your own ``on_authorize``: sent as is
            (default ``http://127.0.0.1/callback``).
        client_credentials: use the client credentials grant (no user;
            needs ``client_id`` with ``client_secret`` or ``private_key``).
        private_key: a PEM private key (RSA, EC or Ed25519) for
            ``private_key_jwt`` client authentication (RFC 7523).
        signing_algorithm: the JWS algorithm for ``private_key``; by default
            the key's (``RS256``, ``ES256``, ``ES384``, ``ES512``, ``EdDSA``).
        assertion: ``callable(AssertionRequest) -> str`` returning a JWT for
            the JWT bearer grant (RFC 7523), e.g. ``CrossAppAccess`` for
            enterprise-managed authorization.
        token_endpoint_auth_method: force the client authentication of a
            pre-registered client (``none``, ``client_secret_basic``,
            ``client_secret_post``, ``private_key_jwt``); by default the first
            the server supports.
        max_authorizations: tokens obtained (by authorization or refresh) in
            a row without a request succeeding with one, after which requests
            that are refused fail with ``AuthorizationError`` instead of
            trying again (until one succeeds, or ``authorize``).
        refresh_margin: seconds before expiry at which tokens are renewed.
        timeout: (connect, read) seconds of each request to authorization servers.
        verify: TLS verification for those requests, as in ``requests``.
        dpop: DPoP-bound tokens (RFC 9449, the MCP DPoP extension): ``"auto"``
            (when the MCP server asks for them, with a ``DPoP`` challenge or in
            its protected-resource metadata, and the authorization server
            accepts ES256 proofs), ``True`` (always; an authorization server
            without DPoP fails), ``False`` (never).  Each request then carries
            a fresh proof (with the server's nonce when it asks for one); the
            key is kept with the tokens in the token store.

    Raises:
        ImportError: Authlib is not installed (the ``oauth`` extra).
        ValueError: inconsistent arguments.
    """

    def __init__(
        self,
        *,
        client_id: Optional[str] = None,
        client_secret: Optional[str] = None,
        client_metadata_url: Optional[str] = None,
        scopes: Optional[Sequence[str]] = None,
        on_authorize: Optional[Authorize] = None,
        token_store: Optional[Union[TokenStore, str, os.PathLike[str]]] = None,
        client_name: str = "jsonrpc_threads",
        redirect_uri: Optional[str] = None,
        client_credentials: bool = False,
        private_key: Optional[Union[str, bytes]] = None,
        signing_algorithm: Optional[str] = None,
        assertion: Optional[AssertionProvider] = None,
        token_endpoint_auth_method: Optional[str] = None,
        max_authorizations: int = DEFAULT_MAX_AUTHORIZATIONS,
        refresh_margin: float = DEFAULT_REFRESH_MARGIN_S,
        timeout: Tuple[float, float] = DEFAULT_FLOW_TIMEOUT_S,
        verify: Union[bool, str] = True,
        dpop: Union[bool, str] = "auto",
    ) -> None:
        _authlib.require()
        if dpop not in (True, False, "auto"):
            raise ValueError("dpop must be True, False or 'auto'")
        if isinstance(scopes, str):
            raise ValueError("scopes must be a list of scope names, not a string")
        if client_credentials and assertion is not None:
            raise ValueError("choose client_credentials=True or assertion=, not both")
        if client_credentials and not client_id:
            raise ValueError("client_credentials needs a pre-registered client_id")
        if client_credentials and not client_secret and private_key is None:
            raise ValueError("client_credentials needs client_secret or private_key")
        if max_authorizations < 1:
            raise ValueError("max_authorizations must be at least 1")
        if private_key is not None:
            _authlib.key_type_and_alg(private_key)  # fail now, not at the first 401
        if token_store is None:
            store: TokenStore = MemoryTokenStore()
        elif isinstance(token_store, (str, os.PathLike)):
            store = FileTokenStore(token_store)
        else:
            store = token_store
        if client_credentials:
            grant = CLIENT_CREDENTIALS
        elif assertion is not None:
            grant = JWT_BEARER_GRANT
        else:
            grant = AUTHORIZATION_CODE
        self._config = Config(
            client_id=client_id,
            client_secret=client_secret,
            client_metadata_url=client_metadata_url,
            scopes=tuple(scopes) if scopes is not None else None,
            on_authorize=on_authorize if on_authorize is not None else LoopbackAuthorizer(),
            redirect_uri=redirect_uri,
            client_name=client_name,
            grant=grant,
            private_key=private_key,
            signing_algorithm=signing_algorithm,
            token_endpoint_auth_method=token_endpoint_auth_method,
            assertion=assertion,
            store=store,
            max_authorizations=max_authorizations,
            refresh_margin=refresh_margin,
            timeout=timeout,
            verify=verify,
            dpop=dpop,
        )
        # _lock guards _servers.
        self._lock = threading.Lock()
        self._servers: Dict[str, ServerAuth] = {}

    @property
    def token_store(self) -> TokenStore:
        """Where tokens and client registrations are kept."""
        return self._config.store

    def authorize(self, server_url: str) -> None:
        """Authorize for ``server_url`` now, before the first request.

        Useful for an interactive login at start-up, outside any request
        timeout.  Discovery starts from the well-known metadata locations.

        Raises:
            AuthorizationError: authorization failed.
        """
        self._server(server_url).authorize()

    def forget(self, server_url: str) -> None:
        """Drop the tokens and registrations kept for ``server_url`` (in memory and in the store)."""
        key = canonical_resource(server_url)
        with self._lock:
            self._servers.pop(key, None)
        self._config.store.delete(key)

    # -- requests.auth.AuthBase ------------------------------------------------------------

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        if request.url is None:
            return request
        request.headers.update(self._server(request.url).headers(request.method or "GET", request.url, request.body))
        request.register_hook("response", self._on_response)  # type: ignore[no-untyped-call]
        return request

    def _server(self, url: str) -> ServerAuth:
        key = canonical_resource(url)
        with self._lock:
            server = self._servers.get(key)
        if server is not None:
            return server
        try:
            entry = self._config.store.load(key)  # the store may be user code: no lock held
        except Exception as exc:
            logger.warning("%s: the token store failed to load (%s)", key, type(exc).__name__)
            entry = None
        with self._lock:
            return self._servers.setdefault(key, ServerAuth(self._config, url, key, entry))

    def _on_response(self, response: requests.Response, **kwargs: Any) -> requests.Response:
        request = response.request
        url = request.url
        if url is None:
            return response
        server = self._server(url)
        rounds = 0
        nonce_retried = False
        while True:
            sent = request.headers.get("Authorization")
            status = response.status_code
            fresh_nonce = server.nonces.note(url, response.headers)
            challenge = auth_challenge(response.headers.get("WWW-Authenticate"))
            if (
                status == 401
                and challenge is not None
                and challenge.error == USE_DPOP_NONCE
                and DPOP_HEADER in request.headers
                and fresh_nonce
                and not nonce_retried
            ):
                # The server wants a nonce in the proof (RFC 9449 section 9): same token, new proof.
                nonce_retried = True
                token = server.token()
                if token is not None:
                    headers = server.headers_for(token, request.method or "POST", url, request.body)
                    _drain(response)
                    resent = self._resend(response, request, headers, kwargs)
                    if resent is None:
                        return response
                    response, request = resent
                    continue
            if not _wants_authorization(status, challenge, response) or request.method == "DELETE":
                if status < 400 and sent:
                    server.confirm(sent)
                return response
            _drain(response)
            if rounds >= self._config.max_authorizations:
                raise AuthorizationError(
                    f"{url_label(url)}: still answered {status} after {rounds} authorization(s); giving up",
                    status_code=status,
                    oauth_error=challenge.error if challenge is not None else None,
                )
            rounds += 1
            token = server.handle_challenge(status, challenge, sent)
            logger.debug("%s: %d answered; sending the request again with a new token", url_label(url), status)
            headers = server.headers_for(token, request.method or "POST", url, request.body)
            resent = self._resend(response, request, headers, kwargs)
            if resent is None:
                return response
            response, request = resent

    @staticmethod
    def _resend(
        response: requests.Response, request: requests.PreparedRequest, headers: Dict[str, str], kwargs: Dict[str, Any]
    ) -> Optional[Tuple[requests.Response, requests.PreparedRequest]]:
        """Send a copy of ``request`` with ``headers`` on the same connection adapter (None: cannot)."""
        retry = request.copy()
        retry.headers.pop(DPOP_HEADER, None)
        retry.headers.update(headers)
        if not _rewind(retry):
            logger.debug("%s: the request body cannot be sent again", url_label(request.url or ""))
            return None
        new_response = response.connection.send(retry, **kwargs)
        new_response.history.append(response)
        new_response.request = retry
        return new_response, retry

    def __repr__(self) -> str:
        client = f" client_id={self._config.client_id!r}" if self._config.client_id else ""
        return f"<OAuth{client} grant={self._config.grant!r}>"


def _wants_authorization(status: int, challenge: Any, response: requests.Response) -> bool:
    if status == 401:
        # No challenge at all still means "authorize"; a challenge for another scheme does not.
        return challenge is not None or not response.headers.get("WWW-Authenticate")
    return status == 403 and challenge is not None and challenge.error == "insufficient_scope"


def _drain(response: requests.Response) -> None:
    """Read a little of the refused answer so its connection can be reused, then release it."""
    try:
        read = 0
        for chunk in response.iter_content(16 * 1024):
            read += len(chunk)
            if read >= _DRAIN_LIMIT_BYTES:
                break
    except (requests.RequestException, OSError, RuntimeError):
        pass
    response.close()


def _rewind(request: requests.PreparedRequest) -> bool:
    body = request.body
    if body is None or isinstance(body, (bytes, str)):
        return True
    if getattr(request, "_body_position", None) is not None:
        try:
            rewind_body(request)
            return True
        except requests.RequestException:
            return False
    return False


__all__ = ["DEFAULT_MAX_AUTHORIZATIONS", "DEFAULT_REFRESH_MARGIN_S", "OAuth"]
