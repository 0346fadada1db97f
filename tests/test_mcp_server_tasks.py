"""McpServer's tasks extension (``io.modelcontextprotocol/tasks``): tool calls run as tasks.

The pure tier over ``test_client()`` (no process, no socket): our own
McpClient waiting for tasks (results, questions answered through
``tasks/update``, cancellation), and the wire by hand through the JSON-RPC
client under a test client (the ``CreateTaskResult`` and ``tasks/get``
shapes, gating on the extension, partial answers, an explicit start after a
multi-round question, what closing does).  One real-peer test over HTTP
(wsgiref); the suite's ``tasks-*`` scenarios run in
tests/test_mcp_server_conformance.py.

Waiting for a task's end is the protocol's own polling of ``tasks/get`` (as a
client does), bounded by ``WAIT_S``.
"""

from __future__ import annotations

import queue
import threading
import time
from typing import Any, Dict, Iterator, List

import pytest

from jsonrpc_threads import HttpTransport, JsonRpcClient
from jsonrpc_threads.errors import JsonRpcError
from jsonrpc_threads.mcp import Context, McpClient, McpServer

from .wsgi_support import WsgirefServer

#: Bounds every wait of these tests.
WAIT_S = 10.0
TASKS = "io.modelcontextprotocol/tasks"
NAME_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


def meta(tasks: bool = True) -> Dict[str, Any]:
    capabilities: Dict[str, Any] = {"elicitation": {}}
    if tasks:
        capabilities["extensions"] = {TASKS: {}}
    return {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    }


class Probe:
    """What the tools saw: how often each ran, their task ids, their cancellation."""

    def __init__(self) -> None:
        self.runs: Dict[str, int] = {}
        self.task_ids: List[Any] = []
        self.started = threading.Event()
        self.cancelled = threading.Event()
        self.release = threading.Event()
        self.lock = threading.Lock()

    def ran(self, name: str, ctx: Context) -> None:
        with self.lock:
            self.runs[name] = self.runs.get(name, 0) + 1
            self.task_ids.append(ctx.task_id)


def make_server(probe: Probe) -> McpServer:
    server = McpServer("tasks-test")

    @server.tool()
    def plain(ctx: Context) -> str:
        probe.ran("plain", ctx)
        return "plain"

    @server.tool(task_support="optional")
    def work(ctx: Context, text: str = "done") -> str:
        probe.ran("work", ctx)
        return f"worked: {text}"

    @server.tool(task_support="optional")
    def waits(ctx: Context) -> str:
        probe.ran("waits", ctx)
        probe.started.set()
        if ctx.cancelled.wait(WAIT_S):
            probe.cancelled.set()
        return "waited"

    @server.tool(task_support="required")
    def fails(ctx: Context) -> str:
        raise ValueError("the tool broke")

    @server.tool(task_support="required")
    def breaks(ctx: Context) -> str:
        raise JsonRpcError(-32050, "protocol trouble", {"why": "test"})

    @server.tool(task_support="optional")
    def asks(ctx: Context) -> str:
        probe.ran("asks", ctx)
        answer = ctx.elicit("Who?", NAME_SCHEMA, key="who")
        return f"hello {answer['content']['name']}"

    @server.tool(task_support="optional")
    def asks_two(ctx: Context) -> str:
        answers = ctx.ask(
            {
                "a": {"method": "elicitation/create", "params": {"message": "A?", "requestedSchema": NAME_SCHEMA}},
                "b": {"method": "elicitation/create", "params": {"message": "B?", "requestedSchema": NAME_SCHEMA}},
            }
        )
        return f"{answers['a']['content']['name']}+{answers['b']['content']['name']}"

    @server.tool(task_support="required", task_start="explicit")
    def asks_then_task(ctx: Context) -> str:
        answer = ctx.elicit("Who?", NAME_SCHEMA, key="who")
        began = ctx.start_task()
        probe.ran("asks_then_task", ctx)
        return f"task={began} for {answer['content']['name']}"

    return server


def answer_name(params: Dict[str, Any]) -> Dict[str, Any]:
    return {"action": "accept", "content": {"name": "ann"}}


@pytest.fixture
def probe() -> Iterator[Probe]:
    found = Probe()
    yield found
    found.release.set()


@pytest.fixture
def raw(probe: Probe) -> Iterator[JsonRpcClient]:
    """The JSON-RPC client under a test client: the extension's wire, by hand."""
    with make_server(probe).test_client(mode="stateless") as client:
        yield client.rpc


def call(client: JsonRpcClient, name: str, arguments: Any = None, tasks: bool = True, **extra: Any) -> Dict[str, Any]:
    params = {"name": name, "arguments": arguments or {}, "_meta": meta(tasks), **extra}
    result: Dict[str, Any] = client.call("tools/call", params, timeout=WAIT_S)
    return result


def get(client: JsonRpcClient, task_id: str, method: str = "tasks/get", **extra: Any) -> Dict[str, Any]:
    result: Dict[str, Any] = client.call(method, {"taskId": task_id, "_meta": meta(), **extra}, timeout=WAIT_S)
    return result


def poll(client: JsonRpcClient, task_id: str, until: Any) -> Dict[str, Any]:
    """Poll ``tasks/get`` (as a client does, at the server's interval) until ``until(task)``, within ``WAIT_S``."""
    deadline = time.monotonic() + WAIT_S
    pause = threading.Event()  # never set: the poll interval
    while True:
        task = get(client, task_id)
        if until(task):
            return task
        assert time.monotonic() < deadline, f"task {task_id} stayed {task['status']}"
        pause.wait(task["pollIntervalMs"] / 1000.0)


def terminal(task: Dict[str, Any]) -> bool:
    return task["status"] in ("completed", "failed", "cancelled")


# -- our own client -----------------------------------------------------------------------------


def test_our_client_waits_for_a_task_and_gets_its_result(probe: Probe) -> None:
    server = make_server(probe)
    with server.test_client() as client:
        assert TASKS in client.server_extensions
        result = client.call_tool("work", {"text": "x"}, timeout=WAIT_S)
    assert result["content"][0]["text"] == "worked: x"
    assert probe.task_ids and isinstance(probe.task_ids[0], str)  # it ran as a task


def test_a_question_in_a_task_is_answered_through_tasks_update_without_a_rerun(probe: Probe) -> None:
    with make_server(probe).test_client(on_elicitation=answer_name) as client:
        result = client.call_tool("asks", timeout=WAIT_S)
    assert result["content"][0]["text"] == "hello ann"
    assert probe.runs["asks"] == 1  # parked and resumed, never run again


def test_cancelling_the_future_cancels_the_task_and_sets_the_tools_event(probe: Probe) -> None:
    with make_server(probe).test_client() as client:
        future = client.submit_tool("waits", timeout=WAIT_S)
        assert future.wait_for_task(WAIT_S) is not None
        assert probe.started.wait(WAIT_S)
        future.cancel()
        assert probe.cancelled.wait(WAIT_S)


def test_a_session_calls_task_tools_as_plain_calls_and_refuses_required_ones(probe: Probe) -> None:
    with make_server(probe).test_client(mode="session") as client:
        assert client.call_tool("work", timeout=WAIT_S)["content"][0]["text"] == "worked: done"
        with pytest.raises(JsonRpcError) as refused:
            client.call_tool("fails", timeout=WAIT_S)
    assert refused.value.code == -32021
    assert probe.task_ids == [None]


# -- the wire -----------------------------------------------------------------------------------


def test_a_task_is_created_flat_and_readable_at_once(raw: JsonRpcClient, probe: Probe) -> None:
    created = call(raw, "waits")
    assert created["resultType"] == "task" and created["status"] == "working"
    assert isinstance(created["ttlMs"], int) and isinstance(created["pollIntervalMs"], int)
    assert {"result", "error", "inputRequests", "requestState", "task", "ttl"}.isdisjoint(created)
    assert created["createdAt"].endswith("Z") and created["lastUpdatedAt"].endswith("Z")
    found = get(raw, created["taskId"])
    assert found["taskId"] == created["taskId"] and found["status"] == "working"
    assert found["resultType"] == "complete" and "result" not in found


def test_a_finished_task_inlines_its_result_or_its_error(raw: JsonRpcClient) -> None:
    done = poll(raw, call(raw, "work")["taskId"], terminal)
    assert done["status"] == "completed" and done["result"]["content"][0]["text"] == "worked: done"
    failed_tool = poll(raw, call(raw, "fails")["taskId"], terminal)
    assert failed_tool["status"] == "completed" and failed_tool["result"]["isError"] is True
    broken = poll(raw, call(raw, "breaks")["taskId"], terminal)
    assert broken["status"] == "failed" and "result" not in broken
    assert broken["error"] == {"code": -32050, "message": "protocol trouble", "data": {"why": "test"}}


def test_cancel_acks_empty_sets_cancelled_and_is_idempotent(raw: JsonRpcClient, probe: Probe) -> None:
    task_id = call(raw, "waits")["taskId"]
    assert probe.started.wait(WAIT_S)
    assert get(raw, task_id, "tasks/cancel") == {"resultType": "complete"}
    assert probe.cancelled.wait(WAIT_S)
    assert get(raw, task_id)["status"] == "cancelled"
    assert get(raw, task_id, "tasks/cancel") == {"resultType": "complete"}


def test_the_extension_is_gated_and_unknown_tasks_are_invalid_params(raw: JsonRpcClient) -> None:
    for method in ("tasks/get", "tasks/update", "tasks/cancel"):
        with pytest.raises(JsonRpcError) as gated:
            raw.call(method, {"taskId": "x", "inputResponses": {}, "_meta": meta(tasks=False)}, timeout=WAIT_S)
        assert gated.value.code == -32021
    with pytest.raises(JsonRpcError) as unknown:
        get(raw, "no-such-task")
    assert unknown.value.code == -32602
    with pytest.raises(JsonRpcError) as required:
        call(raw, "fails", tasks=False)
    assert required.value.code == -32021
    assert required.value.data == {"requiredCapabilities": {"extensions": {TASKS: {}}}}
    plain = call(raw, "work", tasks=False)
    assert plain["resultType"] == "complete" and "taskId" not in plain
    assert "taskId" not in call(raw, "plain", task={"ttl": 1000})
    discovered = raw.call("server/discover", {"_meta": meta()}, timeout=WAIT_S)
    assert discovered["capabilities"]["extensions"] == {TASKS: {}}


def test_questions_park_the_task_and_partial_answers_keep_it_waiting(raw: JsonRpcClient) -> None:
    task_id = call(raw, "asks_two")["taskId"]
    parked = poll(raw, task_id, lambda task: task["status"] == "input_required")
    assert sorted(parked["inputRequests"]) == ["a", "b"]
    assert parked["inputRequests"]["a"]["method"] == "elicitation/create"
    ack = get(raw, task_id, "tasks/update", inputResponses={"a": {"action": "accept", "content": {"name": "x"}}})
    assert ack == {"resultType": "complete"}
    still = get(raw, task_id)
    assert still["status"] == "input_required" and list(still["inputRequests"]) == ["b"]
    get(raw, task_id, "tasks/update", inputResponses={"b": {"action": "accept", "content": {"name": "y"}}})
    done = poll(raw, task_id, terminal)
    assert done["result"]["content"][0]["text"] == "x+y"


def test_an_explicit_start_asks_in_rounds_then_becomes_a_task(raw: JsonRpcClient, probe: Probe) -> None:
    first = call(raw, "asks_then_task")
    assert first["resultType"] == "input_required" and "taskId" not in first
    answer = {"who": {"action": "accept", "content": {"name": "Alice"}}}
    second = call(raw, "asks_then_task", inputResponses=answer, requestState=first["requestState"])
    assert second["resultType"] == "task" and "requestState" not in second
    done = poll(raw, second["taskId"], terminal)
    assert done["result"]["content"][0]["text"] == "task=True for Alice"
    assert probe.task_ids == [second["taskId"]]


def test_a_listener_naming_a_task_hears_its_status_change(raw: JsonRpcClient, probe: Probe) -> None:
    heard: queue.Queue[Dict[str, Any]] = queue.Queue()
    acknowledged = threading.Event()
    raw.on_notification("notifications/tasks", heard.put)
    raw.on_notification("notifications/subscriptions/acknowledged", lambda params: acknowledged.set())
    task_id = call(raw, "waits")["taskId"]
    listen = raw.request("subscriptions/listen", {"notifications": {"taskIds": [task_id]}, "_meta": meta()})
    try:
        assert acknowledged.wait(WAIT_S)
        get(raw, task_id, "tasks/cancel")
        told = heard.get(timeout=WAIT_S)
        assert (told["taskId"], told["status"]) == (task_id, "cancelled")
        assert told["_meta"]["io.modelcontextprotocol/subscriptionId"] is not None
    finally:
        raw.cancel(listen)


def test_closing_the_last_client_cancels_running_tasks(probe: Probe) -> None:
    server = make_server(probe)
    with server.test_client(mode="stateless") as client:
        call(client.rpc, "waits")
        assert probe.started.wait(WAIT_S)
    assert probe.cancelled.wait(WAIT_S)  # and the autouse fixture finds no task worker left


# -- a real peer --------------------------------------------------------------------------------


def test_our_client_over_http_answers_a_tasks_question(probe: Probe) -> None:
    app = make_server(probe).wsgi_app()
    try:
        with WsgirefServer(app) as http, McpClient(HttpTransport(http.url), on_elicitation=answer_name) as client:
            result = client.call_tool("asks", timeout=WAIT_S)
    finally:
        app.close()
    assert result["content"][0]["text"] == "hello ann"
    assert isinstance(probe.task_ids[0], str)
