"""Observing clients (jsonrpc_threads/observe.py): stats() counters, the wire trace, and OpenTelemetry spans.

Over real peers: the stdio test peer for the JSON-RPC client, the bundled
example MCP server (behind a WSGI app that records what each tools/call
carried in its ``_meta``) for the registry's spans and their ``traceparent``.
The spans are checked with the OpenTelemetry SDK's in-memory exporter.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from typing import Any, Dict, Iterator, List

import pytest

from jsonrpc_threads import JsonRpcClient, RequestTimeout, StdioTransport
from jsonrpc_threads.errors import MethodNotFound
from jsonrpc_threads.examples import mcp_tool_server
from jsonrpc_threads.mcp import ToolRegistry
from jsonrpc_threads.observe import WireMessage, trace_wire
from jsonrpc_threads.wsgi import JsonRpcApp

from .conftest import peer_command
from .helpers import scripted
from .wsgi_support import WsgirefServer

WAIT_S = 20.0


@pytest.fixture
def client() -> Iterator[JsonRpcClient]:
    """The counters and the trace are the client's own: the in-memory peer is enough."""
    with JsonRpcClient(scripted(), default_timeout=WAIT_S) as rpc:
        yield rpc


@pytest.fixture
def stdio_client() -> Iterator[JsonRpcClient]:
    with JsonRpcClient(StdioTransport(peer_command("stdio_peer")), default_timeout=WAIT_S) as rpc:
        yield rpc


def test_stats_count_calls_errors_timeouts_cancels_and_pending(client: JsonRpcClient) -> None:
    assert client.stats() == {"calls": 0, "errors": 0, "timeouts": 0, "cancels": 0, "pending": 0}
    client.call("echo", [1])
    with pytest.raises(MethodNotFound):
        client.call("no_such_method")
    with pytest.raises(RequestTimeout):
        client.call("sleep", {"seconds": 5}, timeout=0.1)
    waiting = client.request("sleep", {"seconds": 5}, timeout=WAIT_S)
    assert client.stats()["pending"] == 1
    assert waiting.cancel()
    assert client.stats() == {"calls": 4, "errors": 1, "timeouts": 1, "cancels": 1, "pending": 0}


def test_stats_count_the_requests_lost_with_the_transport(stdio_client: JsonRpcClient) -> None:
    client = stdio_client
    pending = [client.request("sleep", {"seconds": 5}, timeout=WAIT_S) for _ in range(3)]
    with pytest.raises(Exception):  # noqa: B017 - the peer exits: TransportClosed
        client.call("exit", {"code": 1})
    for future in pending:
        assert future.exception(WAIT_S) is not None
    assert client.stats()["errors"] == 4


def test_the_wire_trace_sees_every_message_in_order_off_the_callers_threads(client: JsonRpcClient) -> None:
    seen: List[WireMessage] = []
    threads = set()
    released = threading.Event()
    first = threading.Event()
    all_four = threading.Event()

    def trace(message: WireMessage) -> None:
        threads.add(threading.current_thread().name)
        seen.append(message)
        first.set()
        if len(seen) == 4:
            all_four.set()
        released.wait(WAIT_S)  # a slow trace holds up only the trace

    trace_wire(client, trace, headers={"Authorization": "Bearer s3cr3t-t0ken"})
    assert client.call("echo", ["the token is s3cr3t-t0ken"]) == ["the token is s3cr3t-t0ken"]
    with client.batch() as batch:
        answer = batch.request("echo", [2])
        batch.notify("note", {"x": 1})
    assert answer.result(WAIT_S) == [2]
    assert first.wait(WAIT_S)
    released.set()
    client.close()  # the trace delivers what it holds, then its thread ends
    assert all_four.wait(WAIT_S)
    directions = [message.direction for message in seen]
    assert directions == ["out", "in", "out", "in"]
    assert '"method":"echo"' in seen[0].text and "<redacted>" in seen[0].text
    assert all("s3cr3t-t0ken" not in message.text for message in seen)
    assert seen[2].text.startswith("[") and seen[3].text.startswith("[")
    assert seen[0].transport == client.transport.label and seen[0].time <= seen[1].time
    assert threads == {f"jsonrpc-wire-trace[{client.transport.label}]"}


def test_a_trace_that_raises_is_logged_and_the_client_goes_on(client: JsonRpcClient) -> None:
    calls = []

    def trace(message: WireMessage) -> None:
        calls.append(message)
        raise RuntimeError("a broken trace")

    trace_wire(client, trace)
    assert [client.call("echo", [n]) for n in range(3)] == [[0], [1], [2]]
    trace_wire(client, None)  # stop tracing
    client.call("echo", [3])


# -- OpenTelemetry --------------------------------------------------------------------------------


class RecordingMcpServer:
    """The example MCP server's handler, recording the _meta of every tools/call."""

    def __init__(self) -> None:
        self.metas: List[Dict[str, Any]] = []

    def __call__(self, method: str, params: Any) -> Any:
        if method == "tools/call":
            self.metas.append(dict(params.get("_meta") or {}))
        return mcp_tool_server.handle(method, params)


def test_each_tool_call_is_a_span_whose_traceparent_reaches_the_server() -> None:
    sdk = pytest.importorskip("opentelemetry.sdk.trace")
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: PLC0415
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: PLC0415
    from opentelemetry.trace import SpanKind, StatusCode  # noqa: PLC0415

    exporter = InMemorySpanExporter()
    provider = sdk.TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("test")
    recording = RecordingMcpServer()
    with WsgirefServer(JsonRpcApp(recording)) as server:
        config = {"mcpServers": {"web": {"url": server.url}}}
        registry = ToolRegistry.from_config(config, tracing=provider, default_timeout=WAIT_S)
        with registry, tracer.start_as_current_span("handle a request") as parent:
            assert registry.call_tool("web", "add", {"a": 1, "b": 2})["content"][0]["text"] == "3"
            assert registry.call_tool("web", "fail", {"message": "no"})["isError"] is True
            with pytest.raises(RequestTimeout):
                registry.call_tool("web", "slow", {"seconds": 3}, timeout=0.2)
    spans = {span.name: span for span in exporter.get_finished_spans()}
    add = spans["tools/call add"]
    assert add.kind == SpanKind.CLIENT and add.parent is not None
    assert add.parent.span_id == parent.get_span_context().span_id
    assert add.attributes["gen_ai.tool.name"] == "add" and add.attributes["jsonrpc_threads.server"] == "web"
    assert add.status.status_code == StatusCode.UNSET
    context = add.get_span_context()
    assert (
        recording.metas[0]["traceparent"]
        == f"00-{context.trace_id:032x}-{context.span_id:016x}-{int(context.trace_flags):02x}"
    )
    assert spans["tools/call fail"].attributes["error.type"] == "tool_error"
    assert spans["tools/call fail"].status.status_code == StatusCode.ERROR
    assert spans["tools/call slow"].attributes["error.type"] == "RequestTimeout"
    assert len({meta["traceparent"] for meta in recording.metas}) == 3


def test_without_tracing_nothing_of_opentelemetry_is_imported() -> None:
    script = """
import sys
from jsonrpc_threads.mcp import ToolRegistry
config = {"mcpServers": {"example": {"command": sys.executable, "args": ["-m", "jsonrpc_threads.examples.mcp_tool_server"]}}}
with ToolRegistry.from_config(config) as registry:
    assert registry.call_tool("example", "add", {"a": 1, "b": 1})["content"][0]["text"] == "2"
print(sorted(m for m in sys.modules if m.startswith("opentelemetry")))
"""  # noqa: E501 - a line of the script run in a fresh interpreter
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
