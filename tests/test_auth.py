"""jsonrpc_threads.auth: OAuth for MCP servers, against a real authorization server and MCP server.

The peer (tests/peers/oauth_peer.py) is an OAuth authorization server and a
protected MCP server, both on 127.0.0.1, served in this process.  The user is
played by ``user_agent`` (it follows the authorization URL to its redirect
with http.client, as a browser would) or, for the default loopback flow, by a
thread that follows the redirect all the way to the client's listener.  The
official conformance suite (``make conformance``) covers the discovery
variants; these tests cover what it does not reach: concurrency, refresh,
the file store, redaction, the loopback listener, servers that never accept.
"""

from __future__ import annotations

import logging
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Iterator, List
from urllib.parse import parse_qs, urlsplit

import pytest
import requests

pytest.importorskip("authlib", reason="the oauth extra (authlib) is not installed")

from jsonrpc_threads.auth import (
    AuthorizationError,
    FileTokenStore,
    LoopbackAuthorizer,
    MemoryTokenStore,
    OAuth,
    RedirectListener,
)
from jsonrpc_threads.auth._metadata import (
    authorization_server_metadata_urls,
    bearer_challenge,
    canonical_resource,
    parse_www_authenticate,
    protected_resource_metadata_urls,
    resource_matches,
    select_scopes,
    with_offline_access,
)
from jsonrpc_threads.client import JsonRpcClient
from jsonrpc_threads.mcp import McpClient
from jsonrpc_threads.transports.http import HttpTransport

from .peers.oauth_peer import OAuthPeer, follow, user_agent

#: Upper bound for any single wait in these tests.
WAIT_S = 10.0
REDIRECT_URI = "http://127.0.0.1:9/callback"  # nothing listens: user_agent stops at the redirect


@pytest.fixture
def peer() -> Iterator[OAuthPeer]:
    with OAuthPeer() as server:
        yield server


def headless(**options: Any) -> OAuth:
    options.setdefault("on_authorize", user_agent)
    options.setdefault("redirect_uri", REDIRECT_URI)
    return OAuth(**options)


def rpc_client(peer: OAuthPeer, auth: OAuth) -> JsonRpcClient:
    return JsonRpcClient(HttpTransport(peer.mcp_url, auth=auth), default_timeout=WAIT_S)


# -- the pure parts ----------------------------------------------------------------------


def test_www_authenticate_challenges() -> None:
    header = (
        'Basic realm="x", Bearer error="insufficient_scope", scope="files:read  files:write", '
        'resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource", '
        'error_description="needs \\"write\\", too"'
    )
    challenges = parse_www_authenticate(header)
    assert [c.scheme for c in challenges] == ["Basic", "Bearer"]
    bearer = challenges[1]
    assert bearer.error == "insufficient_scope"
    assert bearer.scopes == ["files:read", "files:write"]
    assert bearer.resource_metadata == "https://mcp.example.com/.well-known/oauth-protected-resource"
    assert bearer.params["error_description"] == 'needs "write", too'
    assert bearer_challenge("Negotiate abc==, bearer scope=mcp") == challenges[1].__class__("bearer", {"scope": "mcp"})
    assert bearer_challenge('Basic realm="x"') is None
    assert bearer_challenge("") is None
    assert parse_www_authenticate('=,, Bearer realm="unterminated')[0].params == {"realm": "unterminated"}


def test_metadata_locations() -> None:
    assert protected_resource_metadata_urls("https://MCP.example.com:443/public/mcp/") == [
        "https://mcp.example.com/.well-known/oauth-protected-resource/public/mcp",
        "https://mcp.example.com/.well-known/oauth-protected-resource",
    ]
    assert protected_resource_metadata_urls("http://127.0.0.1:8080") == [
        "http://127.0.0.1:8080/.well-known/oauth-protected-resource"
    ]
    assert authorization_server_metadata_urls("https://auth.example.com/tenant1/") == [
        "https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
        "https://auth.example.com/.well-known/openid-configuration/tenant1",
        "https://auth.example.com/tenant1/.well-known/openid-configuration",
    ]
    assert authorization_server_metadata_urls("https://auth.example.com") == [
        "https://auth.example.com/.well-known/oauth-authorization-server",
        "https://auth.example.com/.well-known/openid-configuration",
    ]
    assert canonical_resource("HTTPS://MCP.Example.com:443/mcp/?x=1#f") == "https://mcp.example.com/mcp"


@pytest.mark.parametrize(
    ("resource", "server", "matches"),
    [
        ("https://mcp.example.com/mcp", "https://mcp.example.com/mcp", True),
        ("https://mcp.example.com", "https://mcp.example.com/mcp", True),
        ("https://mcp.example.com/", "https://mcp.example.com/mcp", True),
        ("https://MCP.example.com:443/mcp", "https://mcp.example.com/mcp/", True),
        ("https://mcp.example.com/mc", "https://mcp.example.com/mcp", False),
        ("https://mcp.example.com/mcp/v2", "https://mcp.example.com/mcp", False),
        ("https://evil.example.com/mcp", "https://mcp.example.com/mcp", False),
        ("http://mcp.example.com/mcp", "https://mcp.example.com/mcp", False),
        ("https://mcp.example.com:8443/mcp", "https://mcp.example.com/mcp", False),
        ("https://mcp.example.com/mcp#x", "https://mcp.example.com/mcp", False),
        ("not a url", "https://mcp.example.com/mcp", False),
    ],
)
def test_resource_matching(resource: str, server: str, matches: bool) -> None:
    assert resource_matches(resource, server) is matches


def test_scope_selection() -> None:
    assert select_scopes(configured=None, challenged=["a"], supported=["a", "b"]) == ["a"]
    assert select_scopes(configured=None, challenged=[], supported=["a", "b"]) == ["a", "b"]
    assert select_scopes(configured=None, challenged=[], supported=None) == []
    assert select_scopes(configured=["x"], challenged=[], supported=["a"]) == ["x"]
    assert select_scopes(configured=None, challenged=["b", "c"], supported=None, previous=["a", "b"]) == [
        "a",
        "b",
        "c",
    ]
    assert with_offline_access(["a"], ["a", "offline_access"]) == ["a", "offline_access"]
    assert with_offline_access(["a"], ["a"]) == ["a"]
    assert with_offline_access([], ["offline_access"]) == []


# -- flows against the real peer ---------------------------------------------------------


def test_mcp_client_authorizes_once_and_proceeds(peer: OAuthPeer) -> None:
    auth = headless()
    with McpClient(HttpTransport(peer.mcp_url, auth=auth), default_timeout=WAIT_S) as client:
        assert [tool["name"] for tool in client.list_tools()] == ["echo"]
        result = client.call_tool("echo", {"x": 1})
        assert result["content"][0]["text"] == '{"x": 1}'
    assert peer.authorizations == 1
    assert peer.token_requests == ["authorization_code"]
    (registration,) = peer.registrations
    assert registration["redirect_uris"] == [REDIRECT_URI]
    assert registration["application_type"] == "native"
    assert "refresh_token" in registration["grant_types"]
    (query,) = peer.authorization_queries
    assert query["resource"] == peer.mcp_url
    assert query["code_challenge_method"] == "S256"
    assert len(query["state"]) >= 32
    assert "scope" not in query  # no challenge scope, no scopes_supported
    assert peer.token_forms[0]["resource"] == peer.mcp_url
    refused = [method for method, token in peer.mcp_requests if token is None]
    # Only the first request (mode="auto": the server/discover probe) went out without a token.
    assert refused == ["server/discover"]


def test_concurrent_401s_cause_one_authorization(peer: OAuthPeer) -> None:
    threads = 10

    def slow_user(url: str) -> str:
        # The user takes their time: every request has been refused by then.
        assert peer.wait_for_refusals(threads, WAIT_S)
        return user_agent(url)

    auth = headless(on_authorize=slow_user)
    with rpc_client(peer, auth) as client:
        futures = [client.request("tools/list") for _ in range(threads)]
        results = [future.result(WAIT_S) for future in futures]
    assert all(result["tools"][0]["name"] == "echo" for result in results)
    assert peer.authorizations == 1
    assert peer.token_requests == ["authorization_code"]
    assert len(peer.registrations) == 1
    assert peer.refusals == threads


def test_token_is_refreshed_before_it_expires(peer: OAuthPeer) -> None:
    peer.expires_in = 30  # inside the 60 s refresh margin: due for renewal at once
    auth = headless()
    with rpc_client(peer, auth) as client:
        client.call("ping")
        first = peer.mcp_requests[-1][1]
        client.call("ping")
        second = peer.mcp_requests[-1][1]
    assert first is not None and second is not None and first != second
    assert peer.token_requests == ["authorization_code", "refresh_token"]
    assert peer.authorizations == 1
    assert peer.token_forms[1]["resource"] == peer.mcp_url


def test_revoked_token_is_refreshed_without_the_user(peer: OAuthPeer) -> None:
    auth = headless()
    with rpc_client(peer, auth) as client:
        client.call("ping")
        peer.revoke_access_tokens()
        client.call("ping")
    assert peer.token_requests == ["authorization_code", "refresh_token"]
    assert peer.authorizations == 1


def test_step_up_asks_for_the_union_of_scopes(peer: OAuthPeer) -> None:
    peer.challenge_scope = "mcp:read"
    peer.method_scopes = {"tools/call": ["mcp:read", "mcp:write"]}
    with McpClient(HttpTransport(peer.mcp_url, auth=headless()), default_timeout=WAIT_S) as client:
        client.list_tools()
        client.call_tool("echo", {})
    assert [q.get("scope") for q in peer.authorization_queries] == ["mcp:read", "mcp:read mcp:write"]


def test_offline_access_only_when_offered(peer: OAuthPeer) -> None:
    peer.scopes_supported = ["mcp", "offline_access"]
    with rpc_client(peer, headless()) as client:
        client.call("ping")
    assert peer.authorization_queries[0]["scope"] == "mcp offline_access"


def test_server_that_always_answers_401_fails_clearly(peer: OAuthPeer) -> None:
    peer.always_401 = True
    with rpc_client(peer, headless()) as client:
        with pytest.raises(AuthorizationError, match="giving up") as caught:
            client.call("ping")
        assert caught.value.status_code == 401
        authorizations = peer.authorizations
        assert 1 <= authorizations <= 3
        with pytest.raises(AuthorizationError, match="giving up"):
            client.call("ping")
        assert peer.authorizations == authorizations  # no new round without a success first


def test_a_declined_authorization_can_be_tried_again(peer: OAuthPeer) -> None:
    answers = iter([None, "ok"])

    def fickle_user(url: str) -> str:
        if next(answers) is None:
            raise RuntimeError("the user closed the browser tab")
        return user_agent(url)

    with rpc_client(peer, headless(on_authorize=fickle_user, max_authorizations=1)) as client:
        with pytest.raises(AuthorizationError, match="on_authorize failed"):
            client.call("ping")
        client.call("ping")  # a failed flow does not count against the bound
    assert peer.authorizations == 1
    assert peer.token_requests == ["authorization_code"]


def test_metadata_for_another_resource_is_refused(peer: OAuthPeer) -> None:
    peer.prm_resource = "http://127.0.0.1:1/mcp"
    with rpc_client(peer, headless()) as client, pytest.raises(AuthorizationError, match="refusing to authorize"):
        client.call("ping")
    assert peer.authorizations == 0
    assert peer.registrations == []


def test_redirect_with_a_forged_state_is_refused(peer: OAuthPeer) -> None:
    def forger(url: str) -> str:
        location = user_agent(url)
        return location.replace("state=", "state=forged")

    with rpc_client(peer, headless(on_authorize=forger)) as client, pytest.raises(AuthorizationError, match="state"):
        client.call("ping")
    assert peer.token_requests == []


def test_pre_registered_client_and_explicit_authorize(peer: OAuthPeer) -> None:
    peer.add_client("app", "app-secret", "client_secret_post", [REDIRECT_URI])
    auth = headless(
        client_id="app",
        client_secret="app-secret",  # a test client
        token_endpoint_auth_method="client_secret_post",
    )
    auth.authorize(peer.mcp_url)
    with rpc_client(peer, auth) as client:
        client.call("ping")
    assert peer.registrations == []
    assert peer.refusals == 0  # the token was there before the first request
    assert peer.token_forms[0]["client_id"] == "app"


def test_client_credentials_grant(peer: OAuthPeer) -> None:
    peer.add_client("machine", "machine-secret", "client_secret_basic", [])
    auth = OAuth(client_id="machine", client_secret="machine-secret", client_credentials=True)
    with rpc_client(peer, auth) as client:
        client.call("ping")
    assert peer.token_requests == ["client_credentials"]
    assert peer.authorizations == 0


# -- the token store ---------------------------------------------------------------------


def test_file_store_is_private_and_reused(peer: OAuthPeer, tmp_path: Path) -> None:
    path = tmp_path / "state" / "tokens.json"
    with rpc_client(peer, headless(token_store=str(path))) as client:
        client.call("ping")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert not [p for p in path.parent.iterdir() if p != path]  # no temporary file left

    # A new process (a new OAuth) finds the token: no new authorization.
    with rpc_client(peer, headless(token_store=FileTokenStore(path))) as client:
        client.call("ping")
    assert peer.authorizations == 1

    os.chmod(path, 0o644)  # widened by someone: the next write narrows it again
    FileTokenStore(path).save("other", {"x": 1})
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_memory_store_copies() -> None:
    store = MemoryTokenStore()
    entry = {"token": {"access_token": "a"}}
    store.save("k", entry)
    entry["token"]["access_token"] = "changed"
    loaded = store.load("k")
    assert loaded == {"token": {"access_token": "a"}}
    store.delete("k")
    assert store.load("k") is None


# -- secrets stay out of logs and errors -------------------------------------------------


def test_no_token_or_secret_in_logs_or_errors(peer: OAuthPeer, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    peer.expires_in = 30  # a refresh too
    auth = headless(token_endpoint_auth_method=None)
    errors: List[str] = []
    with rpc_client(peer, auth) as client:
        client.call("ping")
        client.call("ping")
        peer.always_401 = True
        with pytest.raises(AuthorizationError) as caught:
            client.call("ping")
        errors.append(str(caught.value))
        errors.append(repr(caught.value))
    secrets = list(peer.issued)
    secrets += [client["secret"] for client in peer.clients.values() if client["secret"]]
    secrets += [form["code"] for form in peer.token_forms if "code" in form]
    secrets += [form["code_verifier"] for form in peer.token_forms if "code_verifier" in form]
    assert len(secrets) >= 6
    text = caplog.text + "\n".join(errors) + repr(auth) + repr(auth.token_store)
    leaked = [secret for secret in secrets if secret in text]
    assert leaked == []
    assert "refresh" in caplog.text or "token" in caplog.text  # the flow did log


# -- the loopback redirect ---------------------------------------------------------------


def test_redirect_listener_takes_one_real_redirect() -> None:
    listener = RedirectListener()
    parts = urlsplit(listener.redirect_uri)
    assert parts.hostname == "127.0.0.1" and parts.port and parts.path == "/callback"
    answers: List[int] = []

    def browser() -> None:
        answers.append(follow(f"http://127.0.0.1:{parts.port}/favicon.ico")[0])
        answers.append(follow(listener.redirect_uri + "?code=the-code&state=the-state")[0])

    thread = threading.Thread(target=browser)
    thread.start()
    try:
        redirected = listener.wait(WAIT_S)
    finally:
        thread.join(WAIT_S)
    assert answers == [404, 200]
    assert parse_qs(urlsplit(redirected).query) == {"code": ["the-code"], "state": ["the-state"]}
    with pytest.raises(AuthorizationError):
        listener.wait(WAIT_S)  # one shot: closed now


def test_redirect_listener_times_out() -> None:
    with RedirectListener() as listener, pytest.raises(AuthorizationError, match="no authorization redirect"):
        listener.wait(0.2)


def test_redirect_listener_refuses_non_loopback_uris() -> None:
    with pytest.raises(ValueError):
        RedirectListener("http://example.com:8080/callback")
    with pytest.raises(ValueError):
        RedirectListener("https://127.0.0.1:8080/callback")


def test_default_flow_opens_the_browser_and_listens_on_loopback(peer: OAuthPeer) -> None:
    browsers: List[threading.Thread] = []
    landed: List[int] = []

    def open_browser(url: str) -> None:
        # Like a real browser: returns at once, the page loads on its own.
        def load() -> None:
            status, location = follow(url)
            assert status == 302
            landed.append(follow(location)[0])

        thread = threading.Thread(target=load, name="test-browser")
        browsers.append(thread)
        thread.start()

    auth = OAuth(on_authorize=LoopbackAuthorizer(open_browser=open_browser, timeout=WAIT_S))
    try:
        with rpc_client(peer, auth) as client:
            assert client.call("tools/list")["tools"][0]["name"] == "echo"
    finally:
        for thread in browsers:
            thread.join(WAIT_S)
    assert landed == [200]
    (registration,) = peer.registrations
    (redirect_uri,) = registration["redirect_uris"]
    assert redirect_uri.startswith("http://127.0.0.1:") and redirect_uri.endswith("/callback")
    with pytest.raises(requests.ConnectionError):  # the listener is gone
        requests.get(redirect_uri, timeout=WAIT_S)


# -- without the extra -------------------------------------------------------------------


def test_package_imports_without_authlib_and_names_the_extra() -> None:
    code = (
        "import sys; sys.modules['authlib'] = None\n"
        "import jsonrpc_threads.auth as auth\n"
        "try:\n"
        "    auth.OAuth()\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=WAIT_S, check=True)
    assert "jsonrpc_threads[oauth]" in done.stdout


def test_bad_arguments() -> None:
    with pytest.raises(ValueError):
        OAuth(client_credentials=True)
    with pytest.raises(ValueError):
        OAuth(client_id="x", client_credentials=True)
    with pytest.raises(ValueError):
        OAuth(scopes="a b")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        OAuth(client_id="x", private_key="not a key", client_credentials=True)
