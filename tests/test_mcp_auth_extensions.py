"""The pieces of the authorization extensions: DPoP proofs and nonces (RFC 9449), workload identity (RFC 7523).

The flows themselves run against real authorization and resource servers in
the conformance suite (tests/test_mcp_conformance.py: ``auth/dpop``,
``auth/dpop-nonce``, ``auth/wif-jwt-bearer``, the ``auth/iss-*`` scenarios of
RFC 9207, ``auth/authorization-server-migration``); here the parts are checked
one by one, the proofs with ``cryptography``'s own verification.
"""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path
from typing import Any, Dict, Tuple

import pytest

pytest.importorskip("authlib", reason="the oauth extra (Authlib) is needed")

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

from jsonrpc_threads.auth import AssertionRequest, AuthorizationError, OAuth, WorkloadIdentity
from jsonrpc_threads.auth._dpop import DpopKey, Nonces, htu, supports
from jsonrpc_threads.auth._metadata import auth_challenge


def b64url_decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def verify(proof: str) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """Verify an ES256 proof with the public key of its own header; its header and claims."""
    header_b64, claims_b64, signature_b64 = proof.split(".")
    header = json.loads(b64url_decode(header_b64))
    jwk = header["jwk"]
    public = ec.EllipticCurvePublicNumbers(
        int.from_bytes(b64url_decode(jwk["x"]), "big"), int.from_bytes(b64url_decode(jwk["y"]), "big"), ec.SECP256R1()
    ).public_key()
    raw = b64url_decode(signature_b64)
    signature = encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
    public.verify(signature, f"{header_b64}.{claims_b64}".encode(), ec.ECDSA(hashes.SHA256()))
    return header, json.loads(b64url_decode(claims_b64))


def test_a_proof_is_an_es256_jwt_with_the_public_key_only() -> None:
    key = DpopKey()
    header, claims = verify(key.proof("post", "https://mcp.example.com/mcp?token=secret#frag"))
    assert header["typ"] == "dpop+jwt" and header["alg"] == "ES256"
    assert set(header["jwk"]) == {"kty", "crv", "x", "y"}  # no "d": never the private key
    assert claims["htm"] == "POST" and claims["htu"] == "https://mcp.example.com/mcp"
    assert isinstance(claims["iat"], int) and isinstance(claims["jti"], str)
    assert "ath" not in claims and "content_digest" not in claims and "nonce" not in claims


def test_a_resource_proof_binds_the_token_the_body_and_the_nonce() -> None:
    key = DpopKey()
    body = b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}'
    _, claims = verify(key.proof("POST", "https://mcp.example.com/mcp", access_token="tok", nonce="n-1", body=body))
    assert claims["ath"] == base64.urlsafe_b64encode(hashlib.sha256(b"tok").digest()).rstrip(b"=").decode()
    assert claims["content_digest"] == "sha-256=:" + base64.b64encode(hashlib.sha256(body).digest()).decode() + ":"
    assert claims["nonce"] == "n-1"
    second = verify(key.proof("POST", "https://mcp.example.com/mcp", access_token="tok"))[1]
    assert second["jti"] != claims["jti"]  # fresh each time


def test_a_tampered_proof_does_not_verify() -> None:
    proof = DpopKey().proof("POST", "https://x/mcp")
    header, claims, signature = proof.split(".")
    forged = base64.urlsafe_b64encode(json.dumps({**json.loads(b64url_decode(claims)), "htm": "GET"}).encode())
    with pytest.raises(InvalidSignature):
        verify(f"{header}.{forged.rstrip(b'=').decode()}.{signature}")


def test_the_thumbprint_is_rfc_7638_and_the_key_survives_the_store() -> None:
    key = DpopKey()
    canonical = json.dumps({"crv": "P-256", "kty": "EC", "x": key.jwk["x"], "y": key.jwk["y"]}, separators=(",", ":"))
    expected = base64.urlsafe_b64encode(hashlib.sha256(canonical.encode()).digest()).rstrip(b"=").decode()
    assert key.thumbprint == expected
    again = DpopKey(key.pem)
    assert again.thumbprint == key.thumbprint and again.jwk == key.jwk
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    with pytest.raises(ValueError):
        DpopKey(other)


def test_nonces_are_kept_per_origin_and_checked() -> None:
    nonces = Nonces()
    assert nonces.note("https://as.example.com/token", {"DPoP-Nonce": "abc"})
    assert not nonces.note("https://as.example.com/other", {"DPoP-Nonce": "abc"})  # the same: not new
    assert nonces.get("https://as.example.com/anything") == "abc"
    assert nonces.get("https://rs.example.com/mcp") is None
    assert not nonces.note("https://rs.example.com/mcp", {"DPoP-Nonce": "bad value\n"})
    assert nonces.get("https://rs.example.com/mcp") is None


def test_the_dpop_challenge_and_metadata() -> None:
    challenge = auth_challenge('Bearer realm="x", DPoP error="use_dpop_nonce", resource_metadata="https://r/prm"')
    assert challenge is not None and challenge.is_dpop() and challenge.error == "use_dpop_nonce"
    bearer = auth_challenge('Bearer resource_metadata="https://r/prm"')
    assert bearer is not None and bearer.is_bearer()
    assert auth_challenge("Basic realm=x") is None
    assert supports({"dpop_signing_alg_values_supported": ["RS256", "ES256"]})
    assert not supports({"dpop_signing_alg_values_supported": ["RS256"]}) and not supports({})
    assert htu("https://h:8443/p?q=1#f") == "https://h:8443/p"


def test_workload_identity_reads_its_jwt_as_the_platform_provides_it(tmp_path: Path) -> None:
    request = AssertionRequest(issuer="https://as", resource="https://rs/mcp", scopes=())
    assert WorkloadIdentity(token=" eyJ.x.y \n")(request) == "eyJ.x.y"
    token_file = tmp_path / "token"
    token_file.write_text("first\n")
    identity = WorkloadIdentity(token_file=str(token_file))
    assert identity(request) == "first"
    token_file.write_text("rotated\n")  # read again for every token request
    assert identity(request) == "rotated"
    assert WorkloadIdentity(provider=lambda: "from-code")(request) == "from-code"
    with pytest.raises(AuthorizationError):
        WorkloadIdentity(token_file=str(tmp_path / "missing"))(request)
    with pytest.raises(AuthorizationError):
        WorkloadIdentity(token="  ")(request)
    with pytest.raises(ValueError):
        WorkloadIdentity()
    with pytest.raises(ValueError):
        WorkloadIdentity(token="a", provider=lambda: "b")


def test_oauth_options_for_the_extensions() -> None:
    # Workload identity needs no client id; client credentials still do.
    assert OAuth(assertion=WorkloadIdentity(token="jwt")) is not None
    with pytest.raises(ValueError):
        OAuth(client_credentials=True, client_secret="s")
    for setting in (True, False, "auto"):
        assert OAuth(dpop=setting) is not None
    with pytest.raises(ValueError):
        OAuth(dpop="sometimes")
