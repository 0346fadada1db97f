"""DPoP (RFC 9449) for MCP: a key pair, the proofs it signs, and the nonces servers hand out.

Theory of operation.  A DPoP-bound access token is useless without the private
key it was bound to: with every request the client sends a *proof*, a JWT it
signs with that key (``typ`` ``dpop+jwt``, the public key in the header's
``jwk``), naming the request's method (``htm``) and URL without query or
fragment (``htu``), when it was made (``iat``), a unique ``jti``, and, towards
the resource server, the hash of the access token (``ath``) and, as the MCP
profile asks, the digest of the body (``content_digest``, RFC 9530).  The
token request at the authorization server carries a proof too: that is where
the token gets bound (its ``cnf.jkt`` is the key's RFC 7638 thumbprint).

Servers may require a nonce (RFC 9449 sections 8 and 9): they answer
``use_dpop_nonce`` with a ``DPoP-Nonce`` header, and the client signs a new
proof with that ``nonce`` and sends the request again.  ``Nonces`` keeps
the last nonce of each origin (servers may also rotate it on any answer).

The key is ES256 (ECDSA on P-256 with SHA-256), made with ``cryptography``
(the ``oauth`` extra).  It is kept, as PEM, with the server's tokens in the
token store, so that a stored DPoP-bound token (and a refresh token bound to
the same key) remains usable by a later process.

Thread-safety: ``DpopKey`` is immutable; ``Nonces`` takes one lock.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import threading
import time
from typing import Any, Dict, Mapping, Optional, Union
from urllib.parse import urlsplit, urlunsplit

from ._metadata import origin

#: The one signing algorithm used for proofs.
ALG = "ES256"
PROOF_TYPE = "dpop+jwt"
DPOP_HEADER = "DPoP"
NONCE_HEADER = "DPoP-Nonce"
USE_DPOP_NONCE = "use_dpop_nonce"
#: The token type (and ``Authorization`` scheme) of a DPoP-bound token.
TOKEN_TYPE = "DPoP"  # noqa: S105 - a token type, not a secret


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _module(name: str) -> Any:
    from ._authlib import extra_module as load  # noqa: PLC0415 - the extra's import, with its message

    return load(name)


class DpopKey:
    """An ES256 key pair for DPoP proofs.

    Args:
        pem: a PKCS#8 PEM private key (P-256) to use; a new key is made without one.

    Raises:
        ImportError: ``cryptography`` (the ``oauth`` extra) is not installed.
        ValueError: ``pem`` is not a P-256 private key.
    """

    def __init__(self, pem: Optional[Union[str, bytes]] = None) -> None:
        ec = _module("cryptography.hazmat.primitives.asymmetric.ec")
        serialization = _module("cryptography.hazmat.primitives.serialization")
        if pem is None:
            key = ec.generate_private_key(ec.SECP256R1())
        else:
            data = pem.encode("ascii") if isinstance(pem, str) else pem
            key = serialization.load_pem_private_key(data, password=None)
            if not isinstance(key, ec.EllipticCurvePrivateKey) or key.curve.name != "secp256r1":
                raise ValueError("a DPoP key must be a P-256 private key")
        self._key = key
        numbers = key.public_key().public_numbers()
        self.jwk: Dict[str, str] = {
            "kty": "EC",
            "crv": "P-256",
            "x": _b64url(numbers.x.to_bytes(32, "big")),
            "y": _b64url(numbers.y.to_bytes(32, "big")),
        }
        canonical = json.dumps(
            {"crv": self.jwk["crv"], "kty": "EC", "x": self.jwk["x"], "y": self.jwk["y"]}, separators=(",", ":")
        )
        #: The RFC 7638 SHA-256 thumbprint of the public key (the token's ``cnf.jkt``).
        self.thumbprint = _b64url(hashlib.sha256(canonical.encode("ascii")).digest())

    @property
    def pem(self) -> str:
        """The private key as PKCS#8 PEM (for the token store)."""
        serialization = _module("cryptography.hazmat.primitives.serialization")
        data = self._key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        return str(data.decode("ascii"))

    def proof(
        self,
        method: str,
        url: str,
        *,
        access_token: Optional[str] = None,
        nonce: Optional[str] = None,
        body: Optional[Union[bytes, str]] = None,
    ) -> str:
        """A fresh proof for one request (a new ``jti`` each time).

        Args:
            method: the HTTP method.
            url: the request's URL (query and fragment are left out of ``htu``).
            access_token: the token the request carries (gives ``ath``).
            nonce: the server's nonce, when it asked for one.
            body: the request's body (gives ``content_digest``, sent to resource servers only).
        """
        ec = _module("cryptography.hazmat.primitives.asymmetric.ec")
        hashes = _module("cryptography.hazmat.primitives.hashes")
        utils = _module("cryptography.hazmat.primitives.asymmetric.utils")
        header = {"typ": PROOF_TYPE, "alg": ALG, "jwk": self.jwk}
        claims: Dict[str, Any] = {
            "jti": secrets.token_urlsafe(16),
            "htm": method.upper(),
            "htu": htu(url),
            "iat": int(time.time()),
        }
        if access_token is not None:
            claims["ath"] = _b64url(hashlib.sha256(access_token.encode("ascii")).digest())
            if body is not None:
                raw = body.encode("utf-8") if isinstance(body, str) else body
                claims["content_digest"] = "sha-256=:" + base64.b64encode(hashlib.sha256(raw).digest()).decode() + ":"
        if nonce is not None:
            claims["nonce"] = nonce
        signing_input = (
            _b64url(json.dumps(header, separators=(",", ":")).encode())
            + "."
            + _b64url(json.dumps(claims, separators=(",", ":")).encode())
        )
        der = self._key.sign(signing_input.encode("ascii"), ec.ECDSA(hashes.SHA256()))
        r, s = utils.decode_dss_signature(der)
        return signing_input + "." + _b64url(r.to_bytes(32, "big") + s.to_bytes(32, "big"))


def htu(url: str) -> str:
    """The ``htu`` of a request URL: without query and fragment (RFC 9449 section 4.2)."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


def supports(metadata: Mapping[str, Any]) -> bool:
    """True when authorization-server (or protected-resource) metadata lists ES256 for DPoP proofs."""
    algs = metadata.get("dpop_signing_alg_values_supported")
    return isinstance(algs, list) and ALG in algs


class Nonces:
    """The last ``DPoP-Nonce`` each server origin handed out.  Thread-safe."""

    def __init__(self) -> None:
        # _lock guards _by_origin.
        self._lock = threading.Lock()
        self._by_origin: Dict[str, str] = {}

    def get(self, url: str) -> Optional[str]:
        with self._lock:
            return self._by_origin.get(origin(url))

    def note(self, url: str, headers: Mapping[str, str]) -> bool:
        """Keep the nonce of an answer from ``url``; True when it is one we did not have."""
        nonce = headers.get(NONCE_HEADER)
        if not nonce or not all(0x21 <= ord(ch) <= 0x7E for ch in nonce):
            return False
        key = origin(url)
        with self._lock:
            new = self._by_origin.get(key) != nonce
            self._by_origin[key] = nonce
        return new


def load_key(entry: Mapping[str, Any]) -> Optional[DpopKey]:
    """The DPoP key kept in a server's stored entry, if any (a damaged one is dropped)."""
    pem = entry.get("dpop_key")
    if not isinstance(pem, str):
        return None
    try:
        return DpopKey(pem)
    except (ValueError, TypeError):
        return None


def require() -> None:
    """Raise ``ImportError`` naming the extra when ``cryptography`` is missing."""
    _module("cryptography.hazmat.primitives.asymmetric.ec")


__all__ = [
    "ALG",
    "DPOP_HEADER",
    "NONCE_HEADER",
    "PROOF_TYPE",
    "TOKEN_TYPE",
    "USE_DPOP_NONCE",
    "DpopKey",
    "Nonces",
    "htu",
    "load_key",
    "require",
    "supports",
]
