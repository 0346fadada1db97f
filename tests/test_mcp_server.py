"""McpServer's logic in both eras, over ``test_client()``: an McpClient connected in memory (no process, no socket).

The pure tier: every behaviour of the engine a user meets (lists, calls, bad
arguments, failures, progress, logs, the questions a tool asks in each era,
the stateless era's signed ``requestState``, cancellation, a tool's timeout,
change notifications), each in both eras where both have it.
"""

from __future__ import annotations

import base64
import json
import threading
import time
from typing import Any, Dict, Iterator, List

import pytest

from jsonrpc_threads import JsonRpcClient
from jsonrpc_threads.errors import JsonRpcError, RemoteError
from jsonrpc_threads.mcp import Context, Image, McpServer

ERAS = ["auto", "session"]
#: Bounds every wait of these tests.
WAIT_S = 10.0

NAME_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


def make_server() -> McpServer:
    server = McpServer("test-server", version="1.2.3", instructions="for the tests")

    @server.tool()
    def add(a: int, b: int = 2) -> int:
        """Add two numbers.

        Args:
            a: the first number.
            b: the second number.
        """
        return a + b

    @server.tool()
    def fails() -> str:
        raise ValueError("the tool broke")

    @server.tool()
    def reports(ctx: Context, steps: int = 3) -> str:
        for step in range(steps):
            ctx.progress(step + 1, steps, f"step {step + 1}")
            ctx.log("info", f"step {step + 1}")
            ctx.log("debug", "noise")
        return "reported"

    @server.tool()
    def greet(ctx: Context) -> str:
        answer = ctx.elicit("Who are you?", NAME_SCHEMA, key="who")
        return f"hello {answer['content']['name']}"

    @server.tool()
    def two_rounds(ctx: Context) -> str:
        first = ctx.elicit("First?", NAME_SCHEMA, key="first")
        second = ctx.sample([{"role": "user", "content": "Second?"}], key="second")
        return f"{first['content']['name']} / {second['content']['text']}"

    @server.tool()
    def roots(ctx: Context) -> List[str]:
        return [root["uri"] for root in ctx.list_roots()]

    @server.tool()
    def picture() -> Image:
        return Image(b"\x89PNG\r\n\x1a\n" + b"\0" * 8, mime_type="image/png")

    @server.resource("test://static", mime_type="text/plain", description="static text")
    def static() -> str:
        return "static text"

    @server.resource("test://items/{item}")
    def item(item: str) -> bytes:
        return item.encode()

    @server.prompt()
    def hello(name: str) -> str:
        """Says hello.

        Args:
            name: whom to greet.
        """
        return f"Hello {name}"

    @server.completion("hello")
    def names(argument: str, value: str, others: Dict[str, Any]) -> List[str]:
        return [name for name in ("ann", "anna", "bob") if name.startswith(value)]

    return server


def answers(params: Dict[str, Any]) -> Dict[str, Any]:
    return {"action": "accept", "content": {"name": "ann"}}


def sample(params: Dict[str, Any]) -> Dict[str, Any]:
    return {"role": "assistant", "content": {"type": "text", "text": "sampled"}, "model": "test"}


@pytest.fixture(params=ERAS)
def client(request: pytest.FixtureRequest) -> Iterator[Any]:
    server = make_server()
    with server.test_client(
        mode=request.param, on_elicitation=answers, on_sampling=sample, roots=[{"uri": "file:///work", "name": "work"}]
    ) as connected:
        yield connected


def test_each_era_is_the_one_asked_for(client: Any) -> None:
    assert client.protocol_version in ("2026-07-28", "2025-11-25")
    assert client.server_info["name"] == "test-server"
    assert client.server_info["version"] == "1.2.3"
    assert client.instructions == "for the tests"


def test_tools_are_listed_with_schemas_from_their_signatures(client: Any) -> None:
    tools = {tool["name"]: tool for tool in client.list_tools()}
    assert list(tools) == ["add", "fails", "reports", "greet", "two_rounds", "roots", "picture"]
    add = tools["add"]
    assert add["description"] == "Add two numbers."
    assert add["inputSchema"]["properties"]["a"] == {"type": "integer", "description": "the first number."}
    assert add["inputSchema"]["required"] == ["a"]
    assert add["outputSchema"]["properties"]["result"] == {"type": "integer"}
    assert "ctx" not in tools["reports"]["inputSchema"]["properties"]


def test_a_call_returns_text_and_structured_content(client: Any) -> None:
    result = client.call_tool("add", {"a": 40})
    assert result["content"] == [{"type": "text", "text": "42"}]
    assert result["structuredContent"] == {"result": 42}
    assert not result.get("isError")


def test_a_bad_argument_is_an_error_result_naming_the_field(client: Any) -> None:
    result = client.call_tool("add", {"a": "forty"})
    assert result["isError"] is True
    assert "a" in result["content"][0]["text"] and "integer" in result["content"][0]["text"]
    missing = client.call_tool("add", {})
    assert missing["isError"] is True and "a" in missing["content"][0]["text"]


def test_a_failing_tool_is_an_error_result_without_a_traceback(client: Any) -> None:
    result = client.call_tool("fails")
    assert result["isError"] is True
    assert result["content"] == [{"type": "text", "text": "the tool broke"}]


def test_an_unknown_tool_is_invalid_params(client: Any) -> None:
    with pytest.raises(RemoteError) as caught:
        client.call_tool("nope")
    assert caught.value.code == -32602


def test_progress_reaches_the_caller_before_the_result(client: Any) -> None:
    seen: List[Any] = []
    result = client.call_tool("reports", {"steps": 3}, on_progress=lambda *report: seen.append(report))
    assert result["content"][0]["text"] == "reported"
    assert [report[0]["progress"] for report in seen] == [1, 2, 3]
    assert seen[-1][0]["message"] == "step 3"


def test_elicitation_is_answered_in_both_eras(client: Any) -> None:
    assert client.call_tool("greet")["content"][0]["text"] == "hello ann"


def test_a_tool_asking_twice_gets_both_answers(client: Any) -> None:
    assert client.call_tool("two_rounds")["content"][0]["text"] == "ann / sampled"


def test_roots_are_listed_in_both_eras(client: Any) -> None:
    assert client.call_tool("roots")["structuredContent"] == {"result": ["file:///work"]}


def test_images_are_content_blocks(client: Any) -> None:
    block = client.call_tool("picture")["content"][0]
    assert block["type"] == "image" and block["mimeType"] == "image/png"


def test_resources_templates_and_the_not_found_error(client: Any) -> None:
    assert [resource["uri"] for resource in client.list_resources()] == ["test://static"]
    assert [template["uriTemplate"] for template in client.list_resource_templates()] == ["test://items/{item}"]
    text = client.read_resource("test://static")["contents"][0]
    assert text == {"uri": "test://static", "mimeType": "text/plain", "text": "static text"}
    blob = client.read_resource("test://items/abc")["contents"][0]
    assert blob["blob"] == "YWJj" and blob["uri"] == "test://items/abc"
    with pytest.raises(RemoteError) as caught:
        client.read_resource("test://missing")
    expected = -32602 if client.protocol_version == "2026-07-28" else -32002
    assert caught.value.code == expected
    assert caught.value.data == {"uri": "test://missing"}


def test_prompts_and_completions(client: Any) -> None:
    (prompt,) = client.list_prompts()
    assert prompt["arguments"] == [{"name": "name", "description": "whom to greet.", "required": True}]
    got = client.get_prompt("hello", {"name": "Ann"})
    assert got["messages"] == [{"role": "user", "content": {"type": "text", "text": "Hello Ann"}}]
    completed = client.rpc.call(
        "completion/complete",
        _with_meta(
            client, {"ref": {"type": "ref/prompt", "name": "hello"}, "argument": {"name": "name", "value": "an"}}
        ),
    )
    assert completed["completion"]["values"] == ["ann", "anna"]


def _with_meta(client: Any, params: Dict[str, Any]) -> Dict[str, Any]:
    """Raw params as the client's era needs them (the stateless era's _meta)."""
    if client.protocol_version != "2026-07-28":
        return params
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    return {**params, "_meta": meta}


# -- the stateless era's multi-round requests, on the wire ------------------------------------------


@pytest.fixture
def raw() -> Iterator[JsonRpcClient]:
    """The JSON-RPC client under a test client: the stateless era's rounds made by hand."""
    with make_server().test_client(mode="stateless") as client:  # no initialize on this connection
        yield client.rpc


STATELESS_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}, "sampling": {}},
}


def call_greet(client: JsonRpcClient, **extra: Any) -> Dict[str, Any]:
    return client.call("tools/call", {"name": "greet", "arguments": {}, "_meta": STATELESS_META, **extra})


def test_a_question_ends_the_round_with_input_required_and_a_signed_state(raw: JsonRpcClient) -> None:
    first = call_greet(raw)
    assert first["resultType"] == "input_required"
    assert first["inputRequests"] == {
        "who": {"method": "elicitation/create", "params": {"message": "Who are you?", "requestedSchema": NAME_SCHEMA}}
    }
    answer = {"who": {"action": "accept", "content": {"name": "bo"}}}
    second = call_greet(raw, inputResponses=answer, requestState=first["requestState"])
    assert second["resultType"] == "complete"
    assert second["content"][0]["text"] == "hello bo"


def test_a_tampered_state_is_refused_and_names_no_secret(raw: JsonRpcClient) -> None:
    state = call_greet(raw)["requestState"]
    body, signature = state.split(".")
    tampered = body[:-2] + ("AA" if body[-2:] != "AA" else "BB") + "." + signature
    answer = {"who": {"action": "accept", "content": {"name": "bo"}}}
    with pytest.raises(RemoteError) as caught:
        call_greet(raw, inputResponses=answer, requestState=tampered)
    assert caught.value.code == -32602
    assert "integrity" in caught.value.message


def test_a_state_made_for_other_arguments_is_refused(raw: JsonRpcClient) -> None:
    state = raw.call("tools/call", {"name": "two_rounds", "arguments": {}, "_meta": STATELESS_META})["requestState"]
    with pytest.raises(RemoteError) as caught:
        call_greet(raw, inputResponses={"who": {"action": "decline"}}, requestState=state)
    assert caught.value.code == -32602


def test_answers_to_questions_not_asked_are_ignored_and_missing_ones_asked_again(raw: JsonRpcClient) -> None:
    first = call_greet(raw)
    again = call_greet(raw, inputResponses={"other": {"action": "accept"}}, requestState=first["requestState"])
    assert again["resultType"] == "input_required" and list(again["inputRequests"]) == ["who"]


def test_a_question_needing_an_undeclared_capability_is_refused(raw: JsonRpcClient) -> None:
    meta = {**STATELESS_META, "io.modelcontextprotocol/clientCapabilities": {}}
    with pytest.raises(RemoteError) as caught:
        raw.call("tools/call", {"name": "greet", "arguments": {}, "_meta": meta})
    assert caught.value.code == -32021
    assert caught.value.data == {"requiredCapabilities": {"elicitation": {}}}


def test_the_stateless_era_checks_its_meta_and_version(raw: JsonRpcClient) -> None:
    with pytest.raises(RemoteError) as missing:
        raw.call("tools/list", {})
    assert missing.value.code == -32602
    meta = {**STATELESS_META, "io.modelcontextprotocol/protocolVersion": "2099-01-01"}
    with pytest.raises(RemoteError) as unsupported:
        raw.call("tools/list", {"_meta": meta})
    assert unsupported.value.code == -32022
    assert unsupported.value.data == {"supported": ["2026-07-28"], "requested": "2099-01-01"}
    with pytest.raises(RemoteError) as removed:
        raw.call("ping", {"_meta": STATELESS_META})
    assert removed.value.code == -32601
    listed = raw.call("tools/list", {"_meta": STATELESS_META})
    assert listed["resultType"] == "complete" and listed["ttlMs"] == 0 and listed["cacheScope"] == "private"


def test_discover_names_the_server_and_its_capabilities(raw: JsonRpcClient) -> None:
    found = raw.call("server/discover", {"_meta": STATELESS_META})
    assert found["supportedVersions"] == ["2026-07-28"]
    assert set(found["capabilities"]) == {"tools", "resources", "prompts", "completions"}
    assert found["_meta"]["io.modelcontextprotocol/serverInfo"] == {"name": "test-server", "version": "1.2.3"}


# -- cancellation, timeouts, concurrency -----------------------------------------------------------


def test_a_cancelled_call_sets_the_tools_event_and_others_go_on() -> None:
    server = McpServer("cancel")
    started = threading.Event()
    saw_cancel = threading.Event()

    @server.tool()
    def wait(ctx: Context) -> str:
        started.set()
        if ctx.cancelled.wait(WAIT_S):
            saw_cancel.set()
        return "stopped"

    @server.tool()
    def quick() -> str:
        return "quick"

    with server.test_client(mode="session") as client:
        future = client.rpc.request("tools/call", {"name": "wait", "arguments": {}}, timeout=WAIT_S)
        assert started.wait(WAIT_S)
        assert client.call_tool("quick")["content"][0]["text"] == "quick"
        client.rpc.cancel(future, reason="enough")
        assert saw_cancel.wait(WAIT_S)


def test_a_tool_past_its_timeout_is_answered_as_timed_out_and_sees_cancelled() -> None:
    server = McpServer("timeouts")
    release = threading.Event()
    saw_cancel = threading.Event()

    @server.tool(timeout=0.2)
    def hangs(ctx: Context) -> str:
        if ctx.cancelled.wait(WAIT_S):
            saw_cancel.set()
        release.wait(WAIT_S)
        return "late"

    with server.test_client() as client:
        began = time.monotonic()
        result = client.call_tool("hangs")
        took = time.monotonic() - began
        assert result["isError"] is True and "timed out" in result["content"][0]["text"]
        assert took < 2.0
        assert saw_cancel.wait(WAIT_S)
        release.set()


def test_a_tool_raising_base_exception_answers_an_error_and_the_server_goes_on() -> None:
    server = McpServer("exits")

    @server.tool()
    def exits() -> str:
        raise SystemExit(3)

    @server.tool()
    def fine() -> str:
        return "fine"

    with server.test_client(mode="session") as client:
        with pytest.raises(JsonRpcError):
            client.call_tool("exits")
        assert client.call_tool("fine")["content"][0]["text"] == "fine"


def test_list_changes_reach_a_session() -> None:
    server = McpServer("changes")

    @server.tool()
    def first() -> str:
        return "1"

    changed = threading.Event()
    with server.test_client(mode="session") as client:
        client.rpc.on_notification("notifications/tools/list_changed", lambda params: changed.set())
        assert [tool["name"] for tool in client.list_tools()] == ["first"]

        @server.tool()
        def second() -> str:
            return "2"

        assert changed.wait(WAIT_S)
        assert [tool["name"] for tool in client.list_tools()] == ["first", "second"]


def test_log_level_filters_a_sessions_messages() -> None:
    server = make_server()
    logs: List[Dict[str, Any]] = []
    with server.test_client(mode="session", on_log=logs.append) as client:
        client.set_logging_level("warning")
        client.call_tool("reports", {"steps": 1})
        client.set_logging_level("debug")
        client.call_tool("reports", {"steps": 1})
    levels = [entry["level"] for entry in logs]
    assert levels == ["info", "debug"]


def test_definitions_refuse_what_mcp_cannot_describe() -> None:
    server = McpServer("bad")
    with pytest.raises(ValueError):
        server.tool(name="has space")(lambda: "x")
    with pytest.raises(TypeError):

        @server.tool()
        def star(*args: int) -> int:
            return 0

    with pytest.raises(ValueError):

        @server.resource("test://x/{a}")
        def wrong(b: str) -> str:
            return b

    with pytest.raises(ValueError):
        McpServer("short", state_secret="too short")


def test_secrets_stay_out_of_reprs() -> None:
    secret = "a-secret-of-enough-length-0123456789"
    server = McpServer("secretive", state_secret=secret)
    assert secret not in repr(server) and secret not in repr(server.engine.__dict__)
    text = json.dumps(repr(vars(server)))
    assert secret not in text


def test_an_mcp_clients_repr_says_what_it_is_and_where() -> None:
    """Issue 47, first hour: McpClient had no useful repr."""
    client = make_server().test_client()
    assert "not connected" in repr(client) and "McpClient" in repr(client)
    with client:
        assert "2026-07-28" in repr(client) and "'test-server'" in repr(client)
    assert repr(client).endswith("closed>")


def test_a_state_rewritten_as_valid_json_under_the_old_signature_is_refused(raw: JsonRpcClient) -> None:
    """The signature, not the encoding, protects the state: a well-formed forgery is refused too."""
    state = call_greet(raw)["requestState"]
    body, signature = state.split(".")
    payload = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    payload["a"] = {"who": {"action": "accept", "content": {"name": "mallory"}}}
    forged = base64.urlsafe_b64encode(json.dumps(payload).encode()).rstrip(b"=").decode() + "." + signature
    with pytest.raises(RemoteError) as caught:
        call_greet(raw, requestState=forged)
    assert caught.value.code == -32602 and "integrity" in caught.value.message
