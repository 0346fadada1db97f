"""The steps of one authorization flow, pure parts (jsonrpc_threads/auth/_authorization_code.py,
_registration.py, _tokens.py).  The flows themselves run against a real peer in tests/test_auth.py."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest

pytest.importorskip("authlib", reason="the oauth extra (authlib) is not installed")

from jsonrpc_threads.auth._authorization_code import authorization_url, code_from_redirect
from jsonrpc_threads.auth._discovery import Discovery, endpoint
from jsonrpc_threads.auth._registration import Client, choose_auth_method
from jsonrpc_threads.auth._tokens import Token
from jsonrpc_threads.errors import AuthorizationError

ISSUER = "https://as.example.com"
DISCOVERY = Discovery(
    "https://mcp.example.com/mcp",
    ISSUER,
    {"issuer": ISSUER, "authorization_endpoint": ISSUER + "/authorize?tenant=t1", "token_endpoint": "ftp://x/token"},
    None,
    legacy=False,
    defaults=False,
)
PROMISES_ISS = Discovery(
    DISCOVERY.resource,
    ISSUER,
    {**DISCOVERY.metadata, "authorization_response_iss_parameter_supported": True},
    None,
    legacy=False,
    defaults=False,
)


def test_the_authorization_url_keeps_the_endpoints_query_and_adds_pkce_state_and_resource() -> None:
    client = Client("client-1", "secret", "client_secret_basic")
    url = authorization_url(
        DISCOVERY.metadata["authorization_endpoint"],
        client,
        "http://127.0.0.1:9/cb",
        "v" * 43,
        "st",
        DISCOVERY,
        ["read", "write"],
    )
    params = parse_qs(urlsplit(url).query)
    assert params["tenant"] == ["t1"]
    assert params["client_id"] == ["client-1"] and params["state"] == ["st"]
    assert params["code_challenge_method"] == ["S256"] and params["code_challenge"][0] != "v" * 43
    assert params["resource"] == [DISCOVERY.resource] and params["scope"] == ["read write"]
    assert "secret" not in url


@pytest.mark.parametrize(
    ("redirect", "discovery", "message"),
    [
        ("http://127.0.0.1/cb?code=c&state=forged", DISCOVERY, "state does not match"),
        ("http://127.0.0.1/cb?code=c&state=st&iss=https://evil.example.com", DISCOVERY, "iss mismatch"),
        ("http://127.0.0.1/cb?code=c&state=st", PROMISES_ISS, "lacks the iss its server promised"),
        ("http://127.0.0.1/cb?state=st&error=access_denied&error_description=no", DISCOVERY, "refused: access_denied"),
        ("http://127.0.0.1/cb?state=st", DISCOVERY, "carries no code"),
    ],
)
def test_a_bad_redirect_is_refused(redirect: str, discovery: Discovery, message: str) -> None:
    with pytest.raises(AuthorizationError, match=message):
        code_from_redirect(redirect, "st", discovery)


def test_a_good_redirect_gives_its_code() -> None:
    assert code_from_redirect("http://127.0.0.1/cb?code=abc&state=st", "st", DISCOVERY) == "abc"
    assert code_from_redirect(f"http://127.0.0.1/cb?code=abc&state=st&iss={ISSUER}", "st", PROMISES_ISS) == "abc"


def test_an_endpoint_must_be_http() -> None:
    assert endpoint(DISCOVERY, "authorization_endpoint").startswith("https://")
    with pytest.raises(AuthorizationError, match="no usable token_endpoint"):
        endpoint(DISCOVERY, "token_endpoint")
    with pytest.raises(AuthorizationError, match="no usable registration_endpoint"):
        endpoint(DISCOVERY, "registration_endpoint")


def test_the_client_authentication_method_follows_what_the_server_supports() -> None:
    assert choose_auth_method(None, has_secret=False, has_key=False) == "none"
    assert choose_auth_method(["client_secret_post"], has_secret=True, has_key=False) == "client_secret_post"
    assert choose_auth_method(None, has_secret=True, has_key=False) == "client_secret_basic"
    assert choose_auth_method(["none"], has_secret=True, has_key=True) == "private_key_jwt"


def test_tokens_and_clients_keep_their_secrets_out_of_repr_and_the_store() -> None:
    token = Token("access-xyz", refresh_token="refresh-xyz", expires_at=10.0, scope="a b", issuer=ISSUER)
    assert Token.from_dict(token.to_dict()).to_dict() == token.to_dict()  # type: ignore[union-attr]
    assert "xyz" not in repr(token) and token.covers(["a"]) and not token.covers(["c"])
    assert token.expired(margin=0.0)
    assert Token.from_dict({"token": "no access_token"}) is None
    assert "s3cret" not in repr(Client("id", "s3cret", "client_secret_basic"))
    assert "client_secret" not in Client("id", "s3cret", "client_secret_basic", preregistered=True).to_dict()
    assert Client("id", "s3cret", "client_secret_basic").to_dict()["client_secret"] == "s3cret"
