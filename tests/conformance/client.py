"""The MCP conformance client: McpClient over HttpTransport, driven by the official suite.

The suite (npm ``@modelcontextprotocol/conformance``) plays the server and runs
this file as ``<command> <server-url>``, with ``MCP_CONFORMANCE_SCENARIO``
naming the scenario.  ``make conformance`` runs::

    conformance client --command ".venv/bin/python tests/conformance/client.py" --scenario NAME

Every scenario runs ``McpClient`` in its default ``mode="auto"``: it
asks ``server/discover`` first and speaks 2026-07-28 when the scenario's
server does, the ``initialize`` handshake otherwise (the suite's servers of
the older revisions answer the probe with an error or a result that is no
discover result).  What each scenario expects of a client:

- ``initialize``: the handshake (offering 2025-11-25, with clientInfo), then a
  normal session (a ``tools/list``), then a clean close;
- ``tools_call``: find the ``add_numbers`` tool and call it with two numbers;
- ``elicitation-sep1034-client-defaults``: declare elicitation, call
  ``test_client_elicitation_defaults`` and accept the server's form without
  filling anything in: the client must apply the schema's defaults (SEP-1034);
- ``sse-retry``: call ``test_reconnection``, whose SSE stream the server closes
  before the answer; the transport must resume it with GET + ``Last-Event-ID``
  after exactly the ``retry`` delay the server asked for (SEP-1699);
- ``request-metadata``: every request's ``_meta`` (version, capabilities,
  client info) and ``MCP-Protocol-Version``; the first request is refused
  with -32022 and must be retried with a version the server names;
- ``sep-2322-client-request-state``: multi round-trip requests: answer the
  ``inputRequests`` of an ``input_required`` result (with the elicitation
  handler) and retry with ``requestState`` echoed exactly, never leaking it
  into another call, and take a result without ``resultType`` as complete;
- ``http-standard-headers``, ``http-custom-headers``,
  ``http-invalid-tool-headers``: ``Mcp-Method``/``Mcp-Name`` on every POST,
  ``Mcp-Param-*`` for the ``x-mcp-header`` arguments (the values come in
  ``MCP_CONFORMANCE_CONTEXT``), and tools with invalid annotations left out of
  ``tools/list`` (every tool that remains is called);
- ``json-schema-ref-no-deref``: list the tools without fetching the network
  ``$ref`` of a schema; ``json-schema-2020-12-preservation``: send the
  focal tool's schema back, untouched, to ``json_schema_echo``;
- ``sep-2640-client-*`` (the skills extension): ``no-prefetch`` lists the
  skills and reads no file; ``verify-*`` loads the listed skill, whose
  ``SKILL.md`` the server tampered with, and must refuse it before reading
  any other file;
- ``auth/*``: the server answers 401 until the client is authorized
  (``jsonrpc_threads.auth.OAuth``): list the tools and call the first one
  (``auth/scope-step-up`` answers that call 403 ``insufficient_scope``).  The
  user is played by ``user_agent``, which follows the authorization URL to
  the redirect as a browser would.  What the scenario hands over in
  ``MCP_CONFORMANCE_CONTEXT`` decides the client: ``client_id`` (+ secret) is
  a pre-registered client; ``private_key_pem`` or a ``client-credentials``
  scenario the client credentials grant; ``idp_id_token`` cross-app access
  (token exchange at the identity provider, then the JWT bearer grant).  Only
  ``auth/basic-cimd`` is given a client ID metadata document URL: an
  application that publishes one (the suite fetches it in other scenarios,
  which would leave the loopback).  ``auth/resource-mismatch`` and
  ``auth/scope-retry-limit`` end in an ``AuthorizationError`` (exit 1),
  which the suite expects.

The scenario servers advertise ``http://localhost:PORT``; the URL is used with
``127.0.0.1`` instead, where ``make conformance`` makes them listen (no IPv6
attempt first, no name lookup).  The auth scenarios keep ``localhost``: their
protected-resource metadata names ``http://localhost:PORT/mcp``, and a client
must refuse metadata for another resource.  Exit status 0 when the scenario ran
to the end; on failure the traceback goes to stderr, which the suite keeps in
its results.  ``MCP_CONFORMANCE_DEBUG=1`` logs the HTTP exchanges on stderr.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional
from urllib.parse import urlsplit, urlunsplit

import requests

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT) not in sys.path:  # run from a checkout without installing
    sys.path.insert(0, str(REPO_ROOT))

from jsonrpc_threads.mcp import McpClient  # noqa: E402
from jsonrpc_threads.transports.http import HttpTransport  # noqa: E402

if TYPE_CHECKING:  # the auth extra is imported only when an auth scenario runs
    from jsonrpc_threads.auth import OAuth

#: Seconds any one request may take (the suite itself gives the client 30 s).
TIMEOUT_S = 20.0
CLIENT_INFO = {"name": "jsonrpc-threads-conformance-client", "version": "1.0.0"}


def loopback(url: str) -> str:
    """``url`` with host ``localhost`` replaced by ``127.0.0.1``."""
    parts = urlsplit(url)
    if parts.hostname != "localhost":
        return url
    netloc = "127.0.0.1" + (f":{parts.port}" if parts.port is not None else "")
    return urlunsplit(parts._replace(netloc=netloc))


def connect(url: str, **options: Any) -> McpClient:
    return McpClient(HttpTransport(url), client_info=CLIENT_INFO, default_timeout=TIMEOUT_S, **options)


def scenario_context() -> Dict[str, Any]:
    text = os.environ.get("MCP_CONFORMANCE_CONTEXT")
    context = json.loads(text) if text else {}
    return context if isinstance(context, dict) else {}


def sample_arguments(tool: Dict[str, Any]) -> Dict[str, Any]:
    """Arguments for a tool's required properties, by type (what a model would fill in)."""
    schema = tool.get("inputSchema") or {}
    properties = schema.get("properties") or {}
    samples = {"string": "us-west1", "integer": 1, "number": 1.5, "boolean": True, "object": {}, "array": []}
    arguments: Dict[str, Any] = {}
    for name in schema.get("required") or []:
        kind = (properties.get(name) or {}).get("type")
        arguments[name] = samples.get(kind if isinstance(kind, str) else "string", "x")
    return arguments


def accept_confirmation(params: Dict[str, Any]) -> Dict[str, Any]:
    return {"action": "accept", "content": {"confirmed": True}}


def echo_sampling(params: Dict[str, Any]) -> Dict[str, Any]:
    return {"role": "assistant", "content": {"type": "text", "text": "ok"}, "model": "conformance-model"}


def tool_names(client: McpClient) -> List[str]:
    return [tool["name"] for tool in client.list_tools()]


def require_success(result: Dict[str, Any], what: str) -> None:
    if result.get("isError"):
        raise SystemExit(f"{what} returned an error result: {result}")


def initialize(url: str) -> None:
    with connect(url) as client:
        print(f"connected to {client.server_info} with protocol {client.protocol_version}")
        print(f"tools: {tool_names(client)}")


def tools_call(url: str) -> None:
    with connect(url) as client:
        if "add_numbers" not in tool_names(client):
            raise SystemExit("the server offers no add_numbers tool")
        result = client.call_tool("add_numbers", {"a": 5, "b": 3})
        require_success(result, "add_numbers")
        print(f"add_numbers: {result['content']}")


def elicitation_defaults(url: str) -> None:
    def accept_as_is(params: Dict[str, Any]) -> Dict[str, Any]:
        # A user who accepts the form untouched: McpClient fills in the schema's defaults.
        return {"action": "accept", "content": {}}

    with connect(url, on_elicitation=accept_as_is) as client:
        if "test_client_elicitation_defaults" not in tool_names(client):
            raise SystemExit("the server offers no test_client_elicitation_defaults tool")
        result = client.call_tool("test_client_elicitation_defaults")
        require_success(result, "test_client_elicitation_defaults")
        print(f"test_client_elicitation_defaults: {result['content']}")


def sse_retry(url: str) -> None:
    with connect(url) as client:
        if "test_reconnection" not in tool_names(client):
            raise SystemExit("the server offers no test_reconnection tool")
        result = client.call_tool("test_reconnection")
        require_success(result, "test_reconnection")
        print(f"test_reconnection: {result['content']}")


def request_metadata(url: str) -> None:
    # Every capability declared, so that the suite checks each one's shape.
    with connect(
        url, roots=["file:///conformance"], on_sampling=echo_sampling, on_elicitation=accept_confirmation
    ) as client:
        print(f"connected with protocol {client.protocol_version} ({client.era})")
        print(f"tools: {tool_names(client)}")


def request_state(url: str) -> None:
    with connect(url, on_elicitation=accept_confirmation) as client:
        for name in tool_names(client):
            result = client.call_tool(name)
            print(f"{name}: {result.get('content')}")


def standard_headers(url: str) -> None:
    with connect(url) as client:
        for tool in client.list_tools():
            client.call_tool(tool["name"], sample_arguments(tool))
        for resource in client.list_resources():
            client.read_resource(resource["uri"])
        for prompt in client.list_prompts():
            client.get_prompt(prompt["name"])
        print("headers exercised on every method")


def custom_headers(url: str) -> None:
    calls = scenario_context().get("toolCalls") or []
    with connect(url) as client:
        listed = set(tool_names(client))
        for call in calls:
            if call["name"] in listed:
                result = client.call_tool(call["name"], call.get("arguments") or {})
                print(f"{call['name']}: {result.get('content')}")


def invalid_tool_headers(url: str) -> None:
    with connect(url) as client:
        tools = client.list_tools()  # the tools whose x-mcp-header is invalid are left out
        print(f"kept: {[tool['name'] for tool in tools]}")
        for tool in tools:
            client.call_tool(tool["name"], sample_arguments(tool))


def list_tools_only(url: str) -> None:
    with connect(url) as client:
        print(f"tools: {tool_names(client)}")


def schema_preservation(url: str) -> None:
    with connect(url) as client:
        tools = {tool["name"]: tool for tool in client.list_tools()}
        focal = tools["json_schema_2020_12_tool"]
        client.call_tool("json_schema_echo", {"schema": focal["inputSchema"]})
        print("echoed the focal tool's inputSchema")


def skills_no_prefetch(url: str) -> None:
    with connect(url) as client:
        entries = client.list_skills()
        print(f"skills: {[entry['uri'] for entry in entries]} (nothing read)")


def skills_verify(url: str) -> None:
    from jsonrpc_threads.mcp import SkillVerificationError  # noqa: PLC0415

    with connect(url) as client:
        for entry in client.list_skills():
            try:
                skill = client.load_skill(entry)
            except SkillVerificationError as exc:
                print(f"refused {entry['uri']}: {exc.reason}")
                continue
            for uri in skill.files():
                if uri != skill.uri:
                    skill.read(uri)
            print(f"loaded {skill.name}")


#: A client ID metadata document URL, as the suite's auth/basic-cimd expects.
CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"
#: The redirect URI registered by the headless user agent (nothing listens there).
REDIRECT_URI = "http://localhost:3000/callback"
#: Seconds the user agent waits for the authorization endpoint.
USER_AGENT_TIMEOUT_S = 10.0


def user_agent(authorization_url: str) -> str:
    """Play the user: open the authorization URL, return where the server redirects to.

    The suite's authorization endpoints approve at once and answer with a
    redirect to ``redirect_uri`` carrying ``code`` and ``state``.
    """
    with requests.Session() as browser:
        response = browser.get(authorization_url, allow_redirects=False, timeout=USER_AGENT_TIMEOUT_S)
        with response:
            location = response.headers.get("Location")
            if not response.is_redirect or not location:
                raise SystemExit(f"the authorization endpoint answered {response.status_code} without a redirect")
            return location


def oauth_for(scenario: str, context: Dict[str, Any]) -> OAuth:
    """The OAuth a real application in this scenario's situation would be configured with."""
    from jsonrpc_threads.auth import CrossAppAccess, OAuth, WorkloadIdentity  # noqa: PLC0415 - the oauth extra

    client_id: Optional[str] = context.get("client_id")
    client_secret: Optional[str] = context.get("client_secret")
    common: Dict[str, Any] = {"client_name": CLIENT_INFO["name"], "timeout": (5.0, 10.0)}
    if context.get("idp_id_token"):
        assertion = CrossAppAccess(
            idp_token_endpoint=context["idp_token_endpoint"],
            idp_client_id=context["idp_client_id"],
            id_token=context["idp_id_token"],
        )
        return OAuth(client_id=client_id, client_secret=client_secret, assertion=assertion, **common)
    if context.get("valid_jwt"):
        # A workload with a JWT from its platform: the JWT bearer grant (workload identity federation).
        return OAuth(client_id=client_id, assertion=WorkloadIdentity(token=context["valid_jwt"]), **common)
    if context.get("private_key_pem") or "client-credentials" in scenario:
        return OAuth(
            client_id=client_id,
            client_secret=client_secret,
            private_key=context.get("private_key_pem"),
            signing_algorithm=context.get("signing_algorithm"),
            client_credentials=True,
            **common,
        )
    return OAuth(
        client_id=client_id,
        client_secret=client_secret,
        client_metadata_url=CLIENT_METADATA_URL if scenario == "auth/basic-cimd" else None,
        on_authorize=user_agent,
        redirect_uri=REDIRECT_URI,
        **common,
    )


def authorized(url: str) -> None:
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    auth = oauth_for(scenario, scenario_context())
    with McpClient(HttpTransport(url, auth=auth), client_info=CLIENT_INFO, default_timeout=TIMEOUT_S) as client:
        tools = client.list_tools()
        print(f"tools: {[tool['name'] for tool in tools]}")
        if tools:
            result = client.call_tool(tools[0]["name"], {})
            require_success(result, tools[0]["name"])
            print(f"{tools[0]['name']}: {result['content']}")


#: The auth scenarios of the pinned suite (0.1.16); newer ``auth/*`` names run the same client.
AUTH_SCENARIOS = (
    "auth/metadata-default",
    "auth/metadata-var1",
    "auth/metadata-var2",
    "auth/metadata-var3",
    "auth/basic-cimd",
    "auth/scope-from-www-authenticate",
    "auth/scope-from-scopes-supported",
    "auth/scope-omitted-when-undefined",
    "auth/scope-step-up",
    "auth/scope-retry-limit",
    "auth/token-endpoint-auth-basic",
    "auth/token-endpoint-auth-post",
    "auth/token-endpoint-auth-none",
    "auth/pre-registration",
    "auth/2025-03-26-oauth-metadata-backcompat",
    "auth/2025-03-26-oauth-endpoint-fallback",
    "auth/resource-mismatch",
    "auth/offline-access-scope",
    "auth/offline-access-not-supported",
    "auth/client-credentials-jwt",
    "auth/client-credentials-basic",
    "auth/cross-app-access-complete-flow",
)

SCENARIOS: Dict[str, Callable[[str], None]] = {
    "initialize": initialize,
    "tools_call": tools_call,
    "elicitation-sep1034-client-defaults": elicitation_defaults,
    "sse-retry": sse_retry,
    "request-metadata": request_metadata,
    "sep-2322-client-request-state": request_state,
    "http-standard-headers": standard_headers,
    "http-custom-headers": custom_headers,
    "http-invalid-tool-headers": invalid_tool_headers,
    "json-schema-ref-no-deref": list_tools_only,
    "json-schema-2020-12-preservation": schema_preservation,
    "sep-2640-client-no-prefetch": skills_no_prefetch,
    "sep-2640-client-verify-digest": skills_verify,
    "sep-2640-client-verify-size": skills_verify,
    "sep-2640-client-verify-frontmatter": skills_verify,
    **{name: authorized for name in AUTH_SCENARIOS},
}


def main(argv: List[str]) -> int:
    debug = os.environ.get("MCP_CONFORMANCE_DEBUG") == "1"
    logging.basicConfig(
        level=logging.DEBUG if debug else logging.WARNING,
        stream=sys.stderr,
        format="%(relativeCreated)6.0f %(threadName)s %(name)s: %(message)s",
    )
    if len(argv) < 2:
        print(f"usage: MCP_CONFORMANCE_SCENARIO=NAME {argv[0]} SERVER_URL", file=sys.stderr)
        return 2
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    run = SCENARIOS.get(scenario)
    if run is None and scenario.startswith("auth/"):
        run = authorized
    if run is None:
        print(f"unknown scenario {scenario!r} (known: {', '.join(SCENARIOS)})", file=sys.stderr)
        return 2
    url = argv[-1]
    run(url if run is authorized else loopback(url))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
