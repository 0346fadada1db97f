"""Assertions for the JWT bearer grant, and cross-app access (enterprise-managed authorization).

With ``OAuth(assertion=...)`` the client gets its access token with the JWT
bearer grant (RFC 7523 section 2.1) instead of sending a user to a browser:
the callable is asked for an assertion whenever a token is needed, with the
authorization server's issuer, the resource and the scopes.

``CrossAppAccess`` is such a callable for the MCP extension "enterprise
managed authorization" (SEP-990, cross-app access): it exchanges the user's ID
token from the enterprise identity provider for an Identity Assertion JWT
Authorization Grant (ID-JAG) at that provider's token endpoint (RFC 8693 token
exchange), which the MCP authorization server then accepts as the assertion.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, List, Optional, Tuple, Union
from urllib.parse import urlencode

from ..errors import AuthorizationError
from ..transports.redact import url_label
from ._authlib import apply_client_auth
from ._http import DEFAULT_FLOW_TIMEOUT_S, FlowHttp, describe_oauth_error

# Protocol identifiers (RFC 8693, RFC 7523, SEP-990), not secrets.
TOKEN_EXCHANGE_GRANT = "urn:ietf:params:oauth:grant-type:token-exchange"  # noqa: S105
JWT_BEARER_GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer"
ID_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:id_token"  # noqa: S105
ID_JAG_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:id-jag"  # noqa: S105


@dataclass(frozen=True)
class AssertionRequest:
    """What an assertion is wanted for.

    Attributes:
        issuer: the MCP authorization server's issuer (the assertion's audience).
        resource: the MCP server's resource identifier (RFC 8707).
        scopes: the scopes about to be requested (possibly none).
    """

    issuer: str
    resource: str
    scopes: Tuple[str, ...]


AssertionProvider = Callable[[AssertionRequest], str]


class WorkloadIdentity:
    """An ``AssertionProvider`` for workload identity federation: the workload's own JWT.

    A workload (a Kubernetes pod, a SPIFFE workload, a CI job) already holds
    a JWT its platform issued; with ``OAuth(assertion=WorkloadIdentity(...))``
    the client presents it to the MCP server's authorization server with the
    JWT bearer grant (RFC 7523 section 2.1), with no ``client_id`` unless one
    is given, and no user.  A failure is reported as it is, never retried with
    another grant.  Thread-safe.

    Args:
        token: the JWT itself.
        token_file: a file that holds it, read again for every token request
            (platforms rotate such files: a projected service-account token).
        provider: a callable returning a fresh JWT.

    Exactly one of the three is given.

    Raises:
        ValueError: none, or more than one, of them.
    """

    def __init__(
        self,
        *,
        token: Optional[str] = None,
        token_file: Optional[str] = None,
        provider: Optional[Callable[[], str]] = None,
    ) -> None:
        if sum(item is not None for item in (token, token_file, provider)) != 1:
            raise ValueError("give exactly one of token=, token_file= or provider=")
        self._token = token
        self._token_file = token_file
        self._provider = provider

    def __call__(self, request: AssertionRequest) -> str:
        """The workload's JWT (the same for every request: its audience is set by its issuer).

        Raises:
            AuthorizationError: the file cannot be read, or the JWT is empty.
        """
        if self._token is not None:
            value = self._token
        elif self._token_file is not None:
            try:
                with open(self._token_file, encoding="utf-8") as handle:
                    value = handle.read()
            except OSError as exc:
                raise AuthorizationError(f"cannot read the workload token file: {exc.strerror}") from None
        else:
            assert self._provider is not None
            value = self._provider()
        value = value.strip()
        if not value:
            raise AuthorizationError("the workload identity token is empty")
        return value

    def __repr__(self) -> str:
        source = "file" if self._token_file is not None else "callable" if self._provider is not None else "token"
        return f"<WorkloadIdentity from {source}>"


class CrossAppAccess:
    """An ``AssertionProvider`` that gets an ID-JAG from the enterprise identity provider.

    Each call posts an RFC 8693 token exchange to ``idp_token_endpoint``:
    the ID token as ``subject_token``, ``requested_token_type`` ID-JAG,
    ``audience`` the MCP authorization server's issuer, ``resource`` the MCP
    server; the ``access_token`` of the answer is the ID-JAG.  Thread-safe.

    Args:
        idp_token_endpoint: the identity provider's token endpoint.
        idp_client_id: this client's id at the identity provider.
        id_token: the user's ID token, or a callable returning a fresh one.
        idp_client_secret: the client secret at the identity provider, when it
            has one (sent with ``client_secret_basic``; otherwise ``client_id``
            goes in the body).
        timeout: (connect, read) seconds for the exchange.
        verify: TLS verification, as in ``requests``.
    """

    def __init__(
        self,
        *,
        idp_token_endpoint: str,
        idp_client_id: str,
        id_token: Union[str, Callable[[], str]],
        idp_client_secret: Optional[str] = None,
        timeout: Tuple[float, float] = DEFAULT_FLOW_TIMEOUT_S,
        verify: Union[bool, str] = True,
    ) -> None:
        self.idp_token_endpoint = idp_token_endpoint
        self.idp_client_id = idp_client_id
        self._id_token = id_token
        self._idp_client_secret = idp_client_secret
        self._timeout = timeout
        self._verify = verify

    def __call__(self, request: AssertionRequest) -> str:
        """Exchange the ID token for an ID-JAG for ``request``.

        Raises:
            AuthorizationError: the identity provider refused or could not be reached.
        """
        id_token = self._id_token() if callable(self._id_token) else self._id_token
        form: List[Tuple[str, str]] = [
            ("grant_type", TOKEN_EXCHANGE_GRANT),
            ("requested_token_type", ID_JAG_TOKEN_TYPE),
            ("subject_token", id_token),
            ("subject_token_type", ID_TOKEN_TYPE),
            ("audience", request.issuer),
            ("resource", request.resource),
        ]
        if request.scopes:
            form.append(("scope", " ".join(request.scopes)))
        method = "client_secret_basic" if self._idp_client_secret else "none"
        headers, body = apply_client_auth(
            method, self.idp_client_id, self._idp_client_secret, self.idp_token_endpoint, {}, urlencode(form)
        )
        what = "token exchange at the identity provider"
        with FlowHttp(timeout=self._timeout, verify=self._verify) as http:
            status, document = http.post(self.idp_token_endpoint, what, form=body, headers=headers)
        assertion = document.get("access_token") if document is not None else None
        if status != 200 or not isinstance(assertion, str) or not assertion:
            text, code = describe_oauth_error(status, document)
            raise AuthorizationError(f"{what} ({url_label(self.idp_token_endpoint)}) failed: {text}", oauth_error=code)
        issued = document.get("issued_token_type") if document is not None else None
        if issued is not None and issued != ID_JAG_TOKEN_TYPE:
            raise AuthorizationError(f"{what} returned a {issued!r}, not an ID-JAG")
        return assertion

    def __repr__(self) -> str:
        return f"<CrossAppAccess idp={url_label(self.idp_token_endpoint)} client_id={self.idp_client_id!r}>"


__all__ = [
    "ID_JAG_TOKEN_TYPE",
    "JWT_BEARER_GRANT",
    "TOKEN_EXCHANGE_GRANT",
    "AssertionProvider",
    "AssertionRequest",
    "CrossAppAccess",
    "WorkloadIdentity",
]
