"""McpServer.wsgi_app() on real WSGI servers on 127.0.0.1 (wsgiref threaded, waitress): both eras over HTTP.

McpClient talks to it through HttpTransport; raw POSTs (``requests``) check
what HTTP adds: statuses, the stateless era's header checks, sessions and
their end, the GET stream, the DNS-rebinding defence, body limits, a client
that goes away while its tool runs, and a ``BaseException`` raised on the
WSGI server's own thread.
"""

from __future__ import annotations

import json
import socket
import threading
from typing import Any, Dict, Iterator, List, Tuple
from urllib.parse import urlsplit

import pytest
import requests

from jsonrpc_threads import HttpTransport
from jsonrpc_threads.mcp import Context, McpClient, McpServer

from .wsgi_support import SERVERS, WsgirefServer

WAIT_S = 10.0
STATELESS_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
}


def make_server() -> Tuple[McpServer, Dict[str, threading.Event]]:
    server = McpServer("http-test")
    events = {"started": threading.Event(), "cancelled": threading.Event(), "release": threading.Event()}

    @server.tool()
    def echo(text: str) -> str:
        return text

    @server.tool()
    def counts(ctx: Context, steps: int = 3) -> str:
        for step in range(steps):
            ctx.progress(step + 1, steps)
        return "counted"

    @server.tool()
    def asks(ctx: Context) -> str:
        answer = ctx.elicit("Name?", {"type": "object", "properties": {"name": {"type": "string"}}}, key="name")
        return f"hi {answer['content']['name']}"

    @server.tool()
    def waits(ctx: Context) -> str:
        events["started"].set()
        if ctx.cancelled.wait(WAIT_S):
            events["cancelled"].set()
        events["release"].wait(WAIT_S)
        return "done"

    return server, events


@pytest.fixture(params=[kind.name for kind in SERVERS])
def served(request: pytest.FixtureRequest) -> Iterator[Tuple[McpServer, str, Dict[str, threading.Event]]]:
    kind = {kind.name: kind for kind in SERVERS}[request.param]
    server, events = make_server()
    app = server.wsgi_app(heartbeat=0.2)
    try:
        with kind(app) as http:
            yield server, http.url, events
            events["release"].set()
    finally:
        app.close()


def elicit(params: Dict[str, Any]) -> Dict[str, Any]:
    return {"action": "accept", "content": {"name": "ann"}}


@pytest.mark.parametrize("mode", ["auto", "session"])
def test_mcp_client_over_http_in_both_eras(served: Any, mode: str) -> None:
    _, url, _ = served
    with McpClient(HttpTransport(url), mode=mode, on_elicitation=elicit) as client:
        assert client.protocol_version == ("2026-07-28" if mode == "auto" else "2025-11-25")
        assert [tool["name"] for tool in client.list_tools()] == ["echo", "counts", "asks", "waits"]
        assert client.call_tool("echo", {"text": "hé"})["content"][0]["text"] == "hé"
        seen: List[Any] = []
        assert (
            client.call_tool("counts", on_progress=lambda *report: seen.append(report))["content"][0]["text"]
            == "counted"
        )
        assert [report[0]["progress"] for report in seen] == [1, 2, 3]
        assert client.call_tool("asks")["content"][0]["text"] == "hi ann"
        if mode == "session":
            assert client.rpc.transport.session_id


def post(url: str, message: Dict[str, Any], headers: Dict[str, str] | None = None) -> requests.Response:
    sent = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream", **(headers or {})}
    return requests.post(url, data=json.dumps(message), headers=sent, timeout=WAIT_S)


def stateless_headers(method: str, name: str | None = None) -> Dict[str, str]:
    headers = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method}
    if name is not None:
        headers["Mcp-Name"] = name
    return headers


def stateless_call(name: str, arguments: Dict[str, Any], request_id: int = 1) -> Dict[str, Any]:
    params = {"name": name, "arguments": arguments, "_meta": STATELESS_META}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def test_stateless_headers_must_agree_with_the_body(served: Any) -> None:
    _, url, _ = served
    good = post(url, stateless_call("echo", {"text": "x"}), stateless_headers("tools/call", "echo"))
    assert good.status_code == 200 and good.json()["result"]["content"][0]["text"] == "x"
    padded = post(url, stateless_call("echo", {"text": "x"}), stateless_headers("tools/call", "echo  "))
    assert padded.status_code == 200
    for headers in (
        stateless_headers("tools/call", "other"),
        stateless_headers("tools/call"),
        stateless_headers("TOOLS/CALL", "echo"),
        {"Mcp-Method": "tools/call", "Mcp-Name": "echo"},
    ):
        refused = post(url, stateless_call("echo", {"text": "x"}, 7), headers)
        assert refused.status_code == 400, headers
        assert refused.json()["error"]["code"] == -32020 and refused.json()["id"] == 7


def test_stateless_errors_have_their_http_status(served: Any) -> None:
    _, url, _ = served
    unknown = {"jsonrpc": "2.0", "id": 3, "method": "nope/nope", "params": {"_meta": STATELESS_META}}
    answer = post(url, unknown, stateless_headers("nope/nope"))
    assert answer.status_code == 404 and answer.json()["error"]["code"] == -32601 and answer.json()["id"] == 3
    no_meta = post(url, {"jsonrpc": "2.0", "id": 4, "method": "tools/list", "params": {}}, {})
    assert no_meta.status_code == 400 and no_meta.json()["error"]["code"] == -32602


def test_a_session_ends_with_delete_and_is_404_after(served: Any) -> None:
    _, url, _ = served
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    opened = post(url, init)
    session = opened.headers["Mcp-Session-Id"]
    assert all(0x21 <= ord(ch) <= 0x7E for ch in session)
    headers = {"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"}
    assert post(url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, headers).status_code == 202
    listed = post(url, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, headers)
    assert listed.status_code == 200 and len(listed.json()["result"]["tools"]) == 4
    assert requests.delete(url, headers=headers, timeout=WAIT_S).status_code == 200
    assert post(url, {"jsonrpc": "2.0", "id": 3, "method": "tools/list"}, headers).status_code == 404
    assert requests.delete(url, headers=headers, timeout=WAIT_S).status_code == 404


def test_bad_bodies_get_clear_answers(served: Any) -> None:
    _, url, _ = served
    not_json = requests.post(url, data=b"{nope", headers={"Content-Type": "application/json"}, timeout=WAIT_S)
    assert not_json.status_code == 400 and not_json.json()["error"]["code"] == -32700
    batch = post(url, [{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}])  # type: ignore[arg-type]
    assert batch.status_code == 400 and batch.json()["error"]["code"] == -32600
    wrong_type = requests.post(url, data=b"{}", headers={"Content-Type": "text/plain"}, timeout=WAIT_S)
    assert wrong_type.status_code == 415
    too_big = requests.post(
        url, data=b" " * (5 * 1024 * 1024), headers={"Content-Type": "application/json"}, timeout=WAIT_S
    )
    assert too_big.status_code == 413


def test_dns_rebinding_is_refused(served: Any) -> None:
    _, url, _ = served
    message = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    assert post(url, message, {"Host": "evil.example"}).status_code == 421
    assert post(url, message, {"Origin": "http://evil.example"}).status_code == 403
    port = urlsplit(url).port
    allowed = post(url, message, {"Host": f"localhost:{port}", "Origin": f"http://localhost:{port}"})
    assert allowed.status_code not in {403, 421}


def test_the_get_stream_carries_list_changes_to_its_session(served: Any) -> None:
    server, url, _ = served
    changed = threading.Event()
    with McpClient(HttpTransport(url), mode="session") as client:
        client.rpc.on_notification("notifications/tools/list_changed", lambda params: changed.set())
        client.list_tools()

        @server.tool()
        def added() -> str:
            return "added"

        assert changed.wait(WAIT_S)
    assert requests.get(url, headers={"Accept": "text/event-stream"}, timeout=WAIT_S).status_code == 405


def test_a_client_that_goes_away_cancels_its_run() -> None:
    server, events = make_server()
    app = server.wsgi_app(heartbeat=0.1)
    try:
        with WsgirefServer(app) as http:
            parts = urlsplit(http.url)
            body = json.dumps(stateless_call("waits", {})).encode()
            head = (
                f"POST {parts.path} HTTP/1.1\r\nHost: 127.0.0.1:{parts.port}\r\nContent-Type: application/json\r\n"
                f"Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n"
                f"Mcp-Method: tools/call\r\nMcp-Name: waits\r\nContent-Length: {len(body)}\r\n\r\n"
            ).encode()
            with socket.create_connection((parts.hostname, parts.port), timeout=WAIT_S) as sock:
                sock.sendall(head + body)
                assert events["started"].wait(WAIT_S)
                assert sock.recv(100).startswith(b"HTTP/1.")  # the heartbeat made it an SSE answer
            assert events["cancelled"].wait(WAIT_S)
            events["release"].set()
    finally:
        events["release"].set()
        app.close()


class Halt(BaseException):
    """Not an ``Exception``, as ``SystemExit`` and ``KeyboardInterrupt`` are not."""


#: How long a raw POST may wait for its answer (an answer that never comes fails the test, not the suite).
ANSWER_S = 5.0


@pytest.mark.parametrize("kind", SERVERS, ids=lambda kind: kind.name)
def test_a_base_exception_on_the_wsgi_servers_thread_is_an_error_answer(kind: Any) -> None:
    """``json_response=True`` runs user code on the WSGI server's own thread: what it raises stays in the app."""
    server = McpServer("halts")

    @server.resource("test://halts")
    def halts() -> str:
        raise Halt("resource")

    @server.prompt()
    def exits() -> str:
        raise SystemExit(3)

    @server.tool()
    def tool_halts() -> str:
        raise Halt("tool")

    @server.tool()
    def fine() -> str:
        return "fine"

    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    calls = [
        ("resources/read", {"uri": "test://halts"}, "test://halts"),
        ("prompts/get", {"name": "exits"}, "exits"),
        ("tools/call", {"name": "tool_halts", "arguments": {}}, "tool_halts"),
        ("tools/call", {"name": "fine", "arguments": {}}, "fine"),
    ]
    app = server.wsgi_app(json_response=True)
    answers = []
    try:
        with kind(app) as http:
            for number, (method, params, name) in enumerate(calls, 1):
                headers = {
                    "Accept": "application/json, text/event-stream",
                    "MCP-Protocol-Version": "2026-07-28",
                    "Mcp-Method": method,
                    "Mcp-Name": name,
                }
                body = {"jsonrpc": "2.0", "id": number, "method": method, "params": {**params, "_meta": meta}}
                answer = requests.post(http.url, json=body, headers=headers, timeout=ANSWER_S)
                answers.append((answer.status_code, answer.json()))
    finally:
        app.close()
    for status, message in answers[:3]:
        assert status == 200 and message["error"]["code"] == -32603, message
    assert answers[3][1]["result"]["content"] == [{"type": "text", "text": "fine"}]
