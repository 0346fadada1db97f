"""What the flow takes from Authlib: PKCE, client authentication, signed JWT assertions.

Authlib is the optional extra ``jsonrpc_threads[oauth]``; it is imported here
lazily, by name, so that ``import jsonrpc_threads.auth`` works without it and
``require`` can say which extra is missing.  Two generations of Authlib are
supported: 1.7 and later sign with ``joserfc`` key objects, older releases
(the ones that still run on Python 3.9) with a PEM string.
"""

from __future__ import annotations

import importlib
from typing import Any, Dict, Optional, Tuple, Union

MISSING_EXTRA = (
    "jsonrpc_threads.auth.OAuth needs Authlib: install the 'oauth' extra, pip install 'jsonrpc_threads[oauth]'"
)
CLIENT_ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
#: Seconds a client assertion is valid for.
ASSERTION_LIFETIME_S = 300

PrivateKey = Union[str, bytes]


def extra_module(name: str) -> Any:
    """The module ``name`` of the auth extra, or an ImportError that says which extra to install."""
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise ImportError(MISSING_EXTRA) from exc


def require() -> None:
    """Raise ``ImportError`` naming the extra when Authlib is not installed."""
    extra_module("authlib.oauth2.rfc7636")


def new_verifier() -> str:
    """A PKCE code verifier: 64 unreserved characters (RFC 7636 section 4.1)."""
    return str(extra_module("authlib.common.security").generate_token(64))


def new_state() -> str:
    """An unguessable ``state`` value."""
    return str(extra_module("authlib.common.security").generate_token(32))


def s256_challenge(verifier: str) -> str:
    """The S256 code challenge of ``verifier``."""
    return str(extra_module("authlib.oauth2.rfc7636").create_s256_code_challenge(verifier))


def apply_client_auth(
    method: str, client_id: str, client_secret: Optional[str], url: str, headers: Dict[str, str], body: str
) -> Tuple[Dict[str, str], str]:
    """Authenticate a token-endpoint request: ``none``, ``client_secret_basic`` or ``client_secret_post``."""
    auth = extra_module("authlib.oauth2.auth").ClientAuth(client_id, client_secret, method)
    _, new_headers, new_body = auth.prepare("POST", url, dict(headers), body)
    return dict(new_headers), str(new_body)


def key_type_and_alg(private_key: PrivateKey) -> Tuple[str, str]:
    """The JWK key type and the default signing algorithm of a PEM private key.

    Raises:
        ValueError: the key is not a PEM private key of a supported type.
    """
    serialization = extra_module("cryptography.hazmat.primitives.serialization")
    rsa = extra_module("cryptography.hazmat.primitives.asymmetric.rsa")
    ec = extra_module("cryptography.hazmat.primitives.asymmetric.ec")
    ed25519 = extra_module("cryptography.hazmat.primitives.asymmetric.ed25519")
    data = private_key.encode("ascii") if isinstance(private_key, str) else private_key
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (TypeError, ValueError):
        raise ValueError("private_key is not an unencrypted PEM private key") from None
    if isinstance(key, rsa.RSAPrivateKey):
        return "RSA", "RS256"
    if isinstance(key, ec.EllipticCurvePrivateKey):
        size = key.curve.key_size
        return "EC", {256: "ES256", 384: "ES384", 521: "ES512"}.get(size, "ES256")
    if isinstance(key, ed25519.Ed25519PrivateKey):
        return "OKP", "EdDSA"
    raise ValueError("private_key must be an RSA, EC or Ed25519 key")


def client_assertion(private_key: PrivateKey, alg: Optional[str], client_id: str, audience: str) -> str:
    """A ``private_key_jwt`` client assertion (RFC 7523 section 2.2): iss = sub = client_id.

    Raises:
        ValueError: the key cannot be used.
    """
    key_type, default_alg = key_type_and_alg(private_key)
    rfc7523 = extra_module("authlib.oauth2.rfc7523")
    try:
        importlib.import_module("authlib._joserfc_helpers")
    except ImportError:
        key: Any = private_key  # Authlib < 1.7 signs with authlib.jose, which takes the PEM
    else:
        pem = private_key.decode("ascii") if isinstance(private_key, bytes) else private_key
        key = extra_module("joserfc.jwk").import_key(pem, key_type)
    token = rfc7523.private_key_jwt_sign(
        key, client_id=client_id, token_endpoint=audience, alg=alg or default_alg, expires_in=ASSERTION_LIFETIME_S
    )
    return token.decode("ascii") if isinstance(token, bytes) else str(token)


__all__ = [
    "CLIENT_ASSERTION_TYPE",
    "MISSING_EXTRA",
    "apply_client_auth",
    "client_assertion",
    "key_type_and_alg",
    "new_state",
    "new_verifier",
    "require",
    "s256_challenge",
]
