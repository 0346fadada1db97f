"""jsonrpc_threads.wsgi: handler(method, params) served as JSON-RPC over HTTP by real WSGI servers.

Every test runs against wsgiref's threaded server and waitress, on 127.0.0.1,
and talks to them with our own HttpTransport (and, for the HTTP statuses, with
requests).  The MCP tests serve the bundled example MCP server's handler, so
an McpClient and a ToolRegistry speak Streamable HTTP (JSON answers) to it.
"""

from __future__ import annotations

import io
import threading
from typing import Any, Callable, Iterator, List

import pytest
import requests

from jsonrpc_threads import HttpTransport, JsonRpcClient
from jsonrpc_threads.errors import InternalError, InvalidParams, MethodNotFound, RemoteError
from jsonrpc_threads.examples import mcp_tool_server
from jsonrpc_threads.mcp import McpClient, ToolRegistry
from jsonrpc_threads.server import current_request_id as server_request_id
from jsonrpc_threads.server import notify
from jsonrpc_threads.wsgi import JsonRpcApp, current_environ, current_request_id

from .wsgi_support import SERVERS

WAIT_S = 20.0


class Tools:
    """The handler under test, and what it saw."""

    def __init__(self) -> None:
        self.notified = threading.Event()
        self.seen: List[Any] = []
        self.barrier = threading.Barrier(2, timeout=WAIT_S)

    def __call__(self, method: str, params: Any) -> Any:
        if method == "add":
            return params["a"] + params["b"]
        if method == "whoami":
            return {"id": current_request_id(), "agent": current_environ().get("HTTP_USER_AGENT", "")[:8]}
        if method == "meet":  # returns only once two calls run at the same time
            self.barrier.wait()
            return "met"
        if method == "boom":
            raise ValueError("a bug in the tool")
        if method == "picky":
            raise InvalidParams("a must be positive", data={"a": params.get("a")})
        if method == "progress":
            notify("notifications/progress", {})  # no stream to send it on: dropped
            return server_request_id()
        if method == "note":
            self.seen.append(params)
            self.notified.set()
            return None
        raise MethodNotFound(data={"method": method})


@pytest.fixture(params=SERVERS, ids=[server.name for server in SERVERS])
def served(request: pytest.FixtureRequest) -> Iterator[Any]:
    tools = Tools()
    with request.param(JsonRpcApp(tools)) as server:
        server.tools = tools
        yield server


@pytest.fixture
def client(served: Any) -> Iterator[JsonRpcClient]:
    with JsonRpcClient(HttpTransport(served.url), default_timeout=WAIT_S) as rpc:
        yield rpc


def post(url: str, body: bytes, **headers: str) -> requests.Response:
    return requests.post(url, data=body, headers={"Content-Type": "application/json", **headers}, timeout=WAIT_S)


def test_calls_are_answered_with_the_handlers_results_and_errors(client: JsonRpcClient) -> None:
    assert client.call("add", {"a": 2, "b": 3}) == 5
    assert client.call("whoami")["id"] == 2
    with pytest.raises(MethodNotFound) as info:
        client.call("nope")
    assert isinstance(info.value, RemoteError)
    with pytest.raises(InternalError) as crashed:
        client.call("boom")
    assert crashed.value.data == {"exception": "ValueError"}
    with pytest.raises(InvalidParams) as picky:
        client.call("picky", {"a": -1})
    assert picky.value.data == {"a": -1}
    assert client.call("progress") == 6  # a handler written for serve(): notify() drops, the id is known


def test_a_batch_is_answered_in_order_and_a_notification_before_202(client: JsonRpcClient, served: Any) -> None:
    with client.batch() as batch:
        first = batch.request("add", {"a": 1, "b": 1})
        batch.notify("note", {"in": "batch"})
        second = batch.request("add", {"a": 2, "b": 2})
    assert (first.result(WAIT_S), second.result(WAIT_S)) == (2, 4)
    served.tools.notified.clear()
    client.notify("note", {"alone": True})
    assert served.tools.notified.is_set(), "202 came before the notification's handler ran"
    assert served.tools.seen == [{"in": "batch"}, {"alone": True}]


def test_requests_run_concurrently_on_the_servers_threads(client: JsonRpcClient) -> None:
    futures = [client.request("meet", timeout=WAIT_S) for _ in range(2)]
    assert [future.result(WAIT_S) for future in futures] == ["met", "met"]


def test_http_statuses_for_what_is_not_a_json_rpc_post(served: Any) -> None:
    for method in ("GET", "DELETE", "PUT"):
        answer = requests.request(method, served.url, timeout=WAIT_S)
        assert answer.status_code == 405 and answer.headers["Allow"] == "POST", method
    garbage = post(served.url, b"{not json")
    assert garbage.status_code == 400 and garbage.json()["error"]["code"] == -32700
    assert garbage.json()["id"] is None
    empty = post(served.url, b"[]")
    assert empty.status_code == 400 and empty.json()["error"]["code"] == -32600
    only_notes = post(served.url, b'[{"jsonrpc": "2.0", "method": "note", "params": {}}]')
    assert only_notes.status_code == 202 and only_notes.content == b""
    a_response = post(served.url, b'{"jsonrpc": "2.0", "id": 9, "result": 1}')
    assert a_response.status_code == 202
    invalid = post(served.url, b'{"jsonrpc": "2.0", "id": 4, "method": 5}')
    assert invalid.status_code == 200 and invalid.json() == {
        "jsonrpc": "2.0",
        "id": 4,
        "error": {"code": -32600, "message": "Invalid Request", "data": {"reason": "method must be a string", "id": 4}},
    }


@pytest.mark.parametrize("server_class", SERVERS, ids=[server.name for server in SERVERS])
def test_a_body_over_the_limit_is_refused_413(server_class: Callable[..., Any]) -> None:
    with server_class(JsonRpcApp(Tools(), max_body_bytes=100)) as server:
        answer = post(
            server.url, b'{"jsonrpc": "2.0", "id": 1, "method": "add", "params": {"a": "' + b"x" * 100 + b'"}}'
        )
        assert answer.status_code == 413 and answer.json()["error"]["data"]["limit"] == 100
        assert (
            post(server.url, b'{"jsonrpc": "2.0", "id": 1, "method": "add", "params": {"a": 1, "b": 2}}').json()[
                "result"
            ]
            == 3
        )


@pytest.mark.parametrize("server_class", SERVERS, ids=[server.name for server in SERVERS])
def test_a_cross_origin_post_is_refused_unless_allowed(server_class: Callable[..., Any]) -> None:
    body = b'{"jsonrpc": "2.0", "id": 1, "method": "add", "params": {"a": 1, "b": 2}}'
    with server_class(JsonRpcApp(Tools(), allowed_origins=["https://app.example"])) as server:
        host = server.url.split("/")[2]
        assert post(server.url, body, Origin="https://evil.example").status_code == 403
        assert post(server.url, body, Origin=f"http://{host}").json()["result"] == 3
        assert post(server.url, body, Origin="https://app.example").json()["result"] == 3
        assert post(server.url, body).json()["result"] == 3  # no Origin: not a browser


@pytest.mark.parametrize("server_class", SERVERS, ids=[server.name for server in SERVERS])
def test_dns_rebinding_is_refused_on_loopback(server_class: Callable[..., Any]) -> None:
    """Issue 37, item 3: a page whose own name was made to resolve to 127.0.0.1 is refused.

    Its browser sends the page's name as ``Host`` and its origin as ``Origin``,
    the two agreeing: only the allowlist of loopback names tells it apart.
    """
    body = b'{"jsonrpc": "2.0", "id": 1, "method": "add", "params": {"a": 1, "b": 2}}'
    with server_class(JsonRpcApp(Tools())) as server:
        port = server.url.split("/")[2].rsplit(":", 1)[1]
        evil = f"evil.example:{port}"
        refused = post(server.url, body, Host=evil, Origin=f"http://{evil}")
        assert refused.status_code == 421, refused.text
        assert post(server.url, body, Host=evil).status_code == 421  # no Origin: its Host still tells
        assert post(server.url, body, Host=f"127.0.0.2.evil.example:{port}").status_code == 421
        for name in ("localhost", "127.0.0.1", "[::1]", "LOCALHOST"):
            host = f"{name}:{port}"
            assert post(server.url, body, Host=host, Origin=f"http://{host.lower()}").json()["result"] == 3, host
        # A loopback Host with a page of another origin is a cross-origin POST: refused too.
        assert post(server.url, body, Host=f"localhost:{port}", Origin=f"http://{evil}").status_code == 403
        assert post(server.url, body, Host=f"localhost:{port}", Origin="null").status_code == 403


@pytest.mark.parametrize("server_class", SERVERS, ids=[server.name for server in SERVERS])
def test_the_hosts_allowed_are_configurable(server_class: Callable[..., Any]) -> None:
    body = b'{"jsonrpc": "2.0", "id": 1, "method": "add", "params": {"a": 1, "b": 2}}'
    app = JsonRpcApp(Tools(), allowed_hosts=["tools.internal", "api.example:8443"])
    with server_class(app) as server:
        port = server.url.split("/")[2].rsplit(":", 1)[1]
        assert post(server.url, body, Host=f"tools.internal:{port}").json()["result"] == 3
        named = f"http://tools.internal:{port}"
        assert post(server.url, body, Host=f"tools.internal:{port}", Origin=named).json()["result"] == 3
        assert post(server.url, body, Host="api.example:8443").json()["result"] == 3
        assert post(server.url, body, Host="api.example:8444").status_code == 421  # that port only
        assert post(server.url, body, Host=f"localhost:{port}").status_code == 421  # the list replaces the default
    with server_class(JsonRpcApp(Tools(), allowed_hosts=["*"])) as server:
        assert post(server.url, body, Host="anything.example").json()["result"] == 3
        assert post(server.url, body, Host="anything.example", Origin="http://other.example").status_code == 403


def test_a_request_from_another_machine_is_held_to_its_own_host_only() -> None:
    """Off loopback the default checks no name (the app cannot know its public ones): Origin against Host."""
    app = JsonRpcApp(Tools())

    def status_of(**environ: str) -> str:
        seen: List[str] = []
        base = {"REQUEST_METHOD": "POST", "CONTENT_LENGTH": "0", "wsgi.input": io.BytesIO(b"")}
        app({**base, **environ}, lambda status, headers: seen.append(status))  # type: ignore[arg-type]
        return seen[0].split()[0]

    remote = {"REMOTE_ADDR": "192.0.2.7", "HTTP_HOST": "api.example"}
    assert status_of(**remote) == "400"  # past the checks: an empty body is not JSON
    assert status_of(**remote, HTTP_ORIGIN="https://api.example") == "400"
    assert status_of(**remote, HTTP_ORIGIN="https://evil.example") == "403"
    assert status_of(REMOTE_ADDR="::ffff:127.0.0.1", HTTP_HOST="api.example") == "421"  # loopback, spelled as IPv6
    assert status_of(REMOTE_ADDR="::1", HTTP_HOST="[::1]:8000") == "400"
    with pytest.raises(TypeError, match="allowed_hosts"):
        JsonRpcApp(Tools(), allowed_hosts="localhost")  # type: ignore[arg-type]


def test_an_mcp_client_and_a_registry_speak_streamable_http_to_it(served: Any) -> None:
    del served
    with SERVERS[0](JsonRpcApp(mcp_tool_server.handle)) as server:
        with McpClient(HttpTransport(server.url), default_timeout=WAIT_S) as mcp:
            assert mcp.server_info["name"] == "jsonrpc-threads-example"
            assert "add" in {tool["name"] for tool in mcp.list_tools()}
            assert mcp.call_tool("add", {"a": 2, "b": 5})["structuredContent"] == {"sum": 7}
        with ToolRegistry.from_config({"mcpServers": {"web": {"url": server.url}}}) as registry:
            message = registry.execute(
                {"id": "c1", "type": "function", "function": {"name": "mcp__web__echo", "arguments": '{"text": "hi"}'}}
            )
            assert message == {"role": "tool", "tool_call_id": "c1", "content": "hi"}
            assert registry.status()["web"]["state"] == "running"


def test_a_handler_outside_of_a_request_has_no_context() -> None:
    with pytest.raises(RuntimeError, match="inside a handler"):
        current_request_id()
    with pytest.raises(RuntimeError, match="inside a handler"):
        current_environ()
    with pytest.raises(ValueError):
        JsonRpcApp(Tools(), max_body_bytes=0)
    status, body = JsonRpcApp(Tools()).answer(
        b'{"jsonrpc": "2.0", "id": "x", "method": "add", "params": {"a": 1, "b": 1}}'
    )
    assert (status, body) == ("200 OK", b'{"jsonrpc":"2.0","id":"x","result":2}')
