"""An OAuth authorization server and a protected MCP server on 127.0.0.1, for tests.

Standard library only (it must not import jsonrpc_threads).  In-process::

    with OAuthPeer() as peer:          # two servers, free ports, each serving in a thread
        peer.mcp_url                   # http://127.0.0.1:P/mcp (the protected resource)
        peer.issuer                    # http://127.0.0.1:Q (the authorization server)
        peer.authorizations            # how many times /authorize was visited
        peer.token_requests            # the grant_type of every token request, in order

The authorization server (RFC 8414 metadata at ``/.well-known/oauth-authorization-server``):

- ``/register`` (RFC 7591): issues ``client-N``; a secret too unless the
  client asked for ``token_endpoint_auth_method: none``;
- ``/authorize``: approves at once, redirecting to ``redirect_uri`` with
  ``code``, ``state`` and ``iss``; it checks ``response_type``, the client, the
  redirect URI and that ``code_challenge_method`` is ``S256``;
- ``/token``: ``authorization_code`` (PKCE S256 verified, ``redirect_uri`` and
  ``resource`` must match the authorization request), ``refresh_token`` and
  ``client_credentials``; client authentication by ``client_secret_basic``,
  ``client_secret_post`` or ``none``, as registered.  Tokens carry the scopes
  asked for; ``expires_in`` is ``OAuthPeer.expires_in``.

The MCP server answers ``initialize``, ``ping``, ``tools/list`` and
``tools/call`` (tool ``echo``) with JSON, notifications with 202, GET and DELETE
with 405.  Without a valid bearer token: 401 and ``WWW-Authenticate: Bearer
resource_metadata="..."`` (plus ``scope`` when ``OAuthPeer.challenge_scope``
is set).  A method listed in ``OAuthPeer.method_scopes`` without those
scopes: 403 ``insufficient_scope``.  ``OAuthPeer.always_401`` refuses every
token.  Protected-resource metadata is at the path-based RFC 9728 location.
"""

from __future__ import annotations

import base64
import hashlib
import http.client
import itertools
import json
import secrets
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, List, Optional, Tuple
from urllib.parse import parse_qs, urlencode, urlsplit, urlunsplit

PROTOCOL_VERSION = "2025-11-25"


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = True

    def __init__(self, peer: OAuthPeer, handler: type) -> None:
        self.peer = peer
        super().__init__(("127.0.0.1", 0), handler)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.0"  # one request per connection: nothing lingers after a test

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _send(self, status: int, body: Any = None, headers: Optional[Dict[str, str]] = None) -> None:
        data = b"" if body is None else json.dumps(body).encode("utf-8")
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        if body is not None:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(data)


class _AuthorizationServer(_Handler):
    def do_GET(self) -> None:
        peer = self.server.peer
        parts = urlsplit(self.path)
        if parts.path == "/.well-known/oauth-authorization-server":
            self._send(200, peer.as_metadata())
        elif parts.path == "/authorize":
            self._authorize({k: v[0] for k, v in parse_qs(parts.query).items()})
        else:
            self._send(404, {"error": "not_found"})

    def do_POST(self) -> None:
        path = urlsplit(self.path).path
        body = self._body()
        if path == "/register":
            self._register(json.loads(body or b"{}"))
        elif path == "/token":
            self._token({k: v[0] for k, v in parse_qs(body.decode("utf-8")).items()})
        else:
            self._send(404, {"error": "not_found"})

    def _register(self, request: Dict[str, Any]) -> None:
        peer = self.server.peer
        with peer.lock:
            peer.registrations.append(request)
            client_id = f"client-{next(peer.counter)}"
            method = request.get("token_endpoint_auth_method", "client_secret_basic")
            secret = None if method == "none" else secrets.token_urlsafe(16)
            peer.clients[client_id] = {
                "secret": secret,
                "method": method,
                "redirect_uris": request.get("redirect_uris", []),
            }
        answer = {"client_id": client_id, "token_endpoint_auth_method": method, **request}
        if secret:
            answer["client_secret"] = secret
        self._send(201, answer)

    def _authorize(self, query: Dict[str, str]) -> None:
        peer = self.server.peer
        client = peer.clients.get(query.get("client_id", ""))
        redirect_uri = query.get("redirect_uri", "")
        with peer.lock:
            peer.authorizations += 1
            peer.authorization_queries.append(query)
        if client is None or redirect_uri not in client["redirect_uris"]:
            self._send(400, {"error": "invalid_request", "error_description": "unknown client or redirect_uri"})
            return
        params: Dict[str, str] = {"state": query.get("state", ""), "iss": peer.issuer}
        if query.get("response_type") != "code" or query.get("code_challenge_method") != "S256":
            params["error"] = "invalid_request"
        else:
            code = secrets.token_urlsafe(16)
            with peer.lock:
                peer.codes[code] = dict(query)
            params["code"] = code
        parts = urlsplit(redirect_uri)
        location = urlunsplit(parts._replace(query=urlencode(params)))
        self.send_response(302)
        self.send_header("Location", location)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _client_auth(self, form: Dict[str, str]) -> Optional[str]:
        """The authenticated client id, or None."""
        peer = self.server.peer
        header = self.headers.get("Authorization", "")
        if header.startswith("Basic "):
            client_id, _, secret = base64.b64decode(header[6:]).decode("utf-8").partition(":")
            used = "client_secret_basic"
        elif "client_secret" in form:
            client_id, secret, used = form.get("client_id", ""), form["client_secret"], "client_secret_post"
        else:
            client_id, secret, used = form.get("client_id", ""), None, "none"
        client = peer.clients.get(client_id)
        if client is None or client["method"] != used or client["secret"] != secret:
            return None
        return client_id

    def _token(self, form: Dict[str, str]) -> None:
        peer = self.server.peer
        grant = form.get("grant_type", "")
        with peer.lock:
            peer.token_requests.append(grant)
            peer.token_forms.append(form)
        client_id = self._client_auth(form)
        if client_id is None:
            self._send(401, {"error": "invalid_client"})
            return
        if grant == "authorization_code":
            with peer.lock:
                request = peer.codes.pop(form.get("code", ""), None)
            verifier = form.get("code_verifier", "")
            challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
            if (
                request is None
                or request.get("client_id") != client_id
                or request.get("redirect_uri") != form.get("redirect_uri")
                or request.get("code_challenge") != challenge
                or request.get("resource") != form.get("resource")
            ):
                self._send(400, {"error": "invalid_grant"})
                return
            scopes = request.get("scope", "").split()
        elif grant == "refresh_token":
            with peer.lock:
                previous = peer.refresh_tokens.pop(form.get("refresh_token", ""), None)
            if previous is None:
                self._send(400, {"error": "invalid_grant"})
                return
            scopes = previous
        elif grant == "client_credentials":
            scopes = form.get("scope", "").split()
        else:
            self._send(400, {"error": "unsupported_grant_type"})
            return
        self._send(200, peer.issue(scopes, refresh=grant != "client_credentials"))


class _ResourceServer(_Handler):
    def do_GET(self) -> None:
        peer = self.server.peer
        if urlsplit(self.path).path == "/.well-known/oauth-protected-resource/mcp":
            self._send(200, peer.resource_metadata())
        elif self.path.startswith("/mcp"):
            self._send(405, {"error": "method not allowed"})
        else:
            self._send(404, {"error": "not_found"})

    def do_DELETE(self) -> None:
        self._send(405, {"error": "method not allowed"})

    def do_POST(self) -> None:
        peer = self.server.peer
        body = self._body()
        if urlsplit(self.path).path != "/mcp":
            self._send(404, {"error": "not_found"})
            return
        message = json.loads(body)
        method = message.get("method", "")
        header = self.headers.get("Authorization", "")
        token = header[7:] if header.startswith("Bearer ") else None
        granted = peer.token_scopes(token)
        with peer.lock:
            peer.mcp_requests.append((method, token))
        if granted is None or peer.always_401:
            with peer.lock:
                peer.refusals += 1
                peer.lock_condition.notify_all()
            challenge = f'Bearer resource_metadata="{peer.mcp_base}/.well-known/oauth-protected-resource/mcp"'
            if peer.challenge_scope:
                challenge += f', scope="{peer.challenge_scope}"'
            self._send(401, {"error": "invalid_token"}, {"WWW-Authenticate": challenge})
            return
        needed = peer.method_scopes.get(method, [])
        if not all(scope in granted for scope in needed):
            challenge = (
                f'Bearer error="insufficient_scope", scope="{" ".join(needed)}", '
                f'resource_metadata="{peer.mcp_base}/.well-known/oauth-protected-resource/mcp"'
            )
            self._send(403, {"error": "insufficient_scope"}, {"WWW-Authenticate": challenge})
            return
        if "id" not in message:
            self._send(202)
            return
        self._send(200, {"jsonrpc": "2.0", "id": message["id"], "result": self._result(method, message)})

    @staticmethod
    def _result(method: str, message: Dict[str, Any]) -> Any:
        if method == "initialize":
            return {
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "oauth-peer", "version": "1.0.0"},
            }
        if method == "tools/list":
            return {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}
        if method == "tools/call":
            arguments = message.get("params", {}).get("arguments", {})
            return {"content": [{"type": "text", "text": json.dumps(arguments)}]}
        return {}


class OAuthPeer:
    """The authorization server and the MCP server, each on its own free port.  A context manager.

    Attributes set before use change how they answer: ``expires_in``,
    ``scopes_supported`` (both metadata documents), ``challenge_scope``,
    ``method_scopes``, ``always_401``, ``prm_resource``.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.lock_condition = threading.Condition(self.lock)
        self.counter = itertools.count(1)
        self.expires_in = 3600
        self.scopes_supported: Optional[List[str]] = None
        self.challenge_scope: Optional[str] = None
        self.method_scopes: Dict[str, List[str]] = {}
        self.always_401 = False
        self.prm_resource: Optional[str] = None
        self.clients: Dict[str, Dict[str, Any]] = {}
        self.codes: Dict[str, Dict[str, str]] = {}
        self.tokens: Dict[str, List[str]] = {}
        self.refresh_tokens: Dict[str, List[str]] = {}
        self.registrations: List[Dict[str, Any]] = []
        self.authorizations = 0
        self.authorization_queries: List[Dict[str, str]] = []
        self.token_requests: List[str] = []
        self.token_forms: List[Dict[str, str]] = []
        self.mcp_requests: List[Tuple[str, Optional[str]]] = []
        self.refusals = 0
        self.issued: List[str] = []  # every access and refresh token, for redaction checks
        self._as = _Server(self, _AuthorizationServer)
        self._rs = _Server(self, _ResourceServer)
        self.issuer = self._as.base
        self.mcp_base = self._rs.base
        self.mcp_url = self._rs.base + "/mcp"
        self._threads = [
            threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, name=f"oauth-peer-{i}")
            for i, server in enumerate((self._as, self._rs))
        ]

    def add_client(self, client_id: str, secret: Optional[str], method: str, redirect_uris: List[str]) -> None:
        """A pre-registered client."""
        with self.lock:
            self.clients[client_id] = {"secret": secret, "method": method, "redirect_uris": redirect_uris}

    def as_metadata(self) -> Dict[str, Any]:
        metadata: Dict[str, Any] = {
            "issuer": self.issuer,
            "authorization_endpoint": self.issuer + "/authorize",
            "token_endpoint": self.issuer + "/token",
            "registration_endpoint": self.issuer + "/register",
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post", "none"],
            "authorization_response_iss_parameter_supported": True,
        }
        if self.scopes_supported is not None:
            metadata["scopes_supported"] = self.scopes_supported
        return metadata

    def resource_metadata(self) -> Dict[str, Any]:
        metadata: Dict[str, Any] = {
            "resource": self.prm_resource or self.mcp_url,
            "authorization_servers": [self.issuer],
        }
        if self.scopes_supported is not None:
            metadata["scopes_supported"] = self.scopes_supported
        return metadata

    def issue(self, scopes: List[str], *, refresh: bool) -> Dict[str, Any]:
        access = "at-" + secrets.token_urlsafe(16)
        answer: Dict[str, Any] = {"access_token": access, "token_type": "Bearer", "expires_in": self.expires_in}
        with self.lock:
            self.tokens[access] = scopes
            self.issued.append(access)
            if refresh:
                refresh_token = "rt-" + secrets.token_urlsafe(16)
                self.refresh_tokens[refresh_token] = scopes
                self.issued.append(refresh_token)
                answer["refresh_token"] = refresh_token
        if scopes:
            answer["scope"] = " ".join(scopes)
        return answer

    def token_scopes(self, token: Optional[str]) -> Optional[List[str]]:
        with self.lock:
            return None if token is None else self.tokens.get(token)

    def revoke_access_tokens(self) -> None:
        """Every access token issued so far stops working (refresh tokens still do)."""
        with self.lock:
            self.tokens.clear()

    def wait_for_refusals(self, count: int, timeout: float) -> bool:
        """Wait until the MCP server answered ``count`` requests with 401."""
        with self.lock_condition:
            return self.lock_condition.wait_for(lambda: self.refusals >= count, timeout)

    def __enter__(self) -> OAuthPeer:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        for server in (self._as, self._rs):
            server.shutdown()
        for thread in self._threads:
            thread.join()
        for server in (self._as, self._rs):
            server.server_close()


def user_agent(authorization_url: str) -> str:
    """Play the user's browser: open the authorization URL, return the redirect's Location.

    Uses ``http.client`` (not ``requests``) so that no library logs the code.
    """
    parts = urlsplit(authorization_url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    try:
        connection.request("GET", f"{parts.path}?{parts.query}")
        response = connection.getresponse()
        response.read()
        location = response.getheader("Location")
    finally:
        connection.close()
    if response.status != 302 or not location:
        raise RuntimeError(f"the authorization endpoint answered {response.status}")
    return location


def follow(url: str) -> Tuple[int, str]:
    """GET ``url`` with http.client; return the status and the Location header (or '')."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    try:
        connection.request("GET", f"{parts.path}?{parts.query}" if parts.query else parts.path or "/")
        response = connection.getresponse()
        response.read()
        return response.status, response.getheader("Location") or ""
    finally:
        connection.close()


__all__ = ["OAuthPeer", "follow", "user_agent"]
