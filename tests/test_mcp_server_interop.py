"""McpServer against real third-party clients, in both eras, under real WSGI servers (issue 45).

The server is tests/peers/mcp_interop_server.py: run as a child process over
stdio, served in this process by wsgiref and waitress, or by gunicorn
(threads, ``--preload``: made before the fork).  The clients:

- the official Python SDK's ``mcp.Client`` (stdio and Streamable HTTP), in
  the 2025 era (``mode="legacy"``: ``initialize``, a session) and the 2026
  one (``"auto"`` probes ``server/discover``; a pinned ``"2026-07-28"``);
- fastmcp's ``Client`` (both eras; it drives the SDK's session);
- the TypeScript SDK's v2 client (``@modelcontextprotocol/client``, a Node
  script, tests/node/mcp_ts_client.mjs): ``legacy``, ``auto``, pinned.

Each drives the same run: tools listed and called, progress, elicitation and
sampling answered by the client's callbacks, a resource, a template and its
completion, a prompt, a call that never returns cut by the client's timeout
(the tool sees ``cancelled``; the next calls go on), and a tool raising a
``BaseException`` (an error answer; the server goes on).  Then the robustness
items with the real peers: a client that goes away while its tool runs, a
tampered ``requestState``, a session id that does not exist.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import subprocess
import sys
from contextlib import contextmanager
from typing import Any, Dict, Iterator, List, Optional, Tuple

import pytest
import requests

from .conftest import PEERS_DIR, TESTS_DIR, needs_sdk
from .peers.mcp_interop_server import make_server
from .wsgi_support import SERVERS, WaitressServer

try:
    import anyio  # comes with the official SDK (Python 3.10+)
except ImportError:  # pragma: no cover - Python 3.9: the SDK's tests skip
    anyio = None

#: How long one client's run, or one step of a peer's start, may take.
WAIT_S = 30.0
#: The read timeout after which a client gives up on the call that hangs (and cancels it).
GIVE_UP_S = 0.5
#: How long a raw POST may wait for its answer (one that never comes fails the test quickly).
ANSWER_S = 5.0
NODE = TESTS_DIR / "node" / "node_modules" / "node" / "bin" / "node"
TS_CLIENT = TESTS_DIR / "node" / "mcp_ts_client.mjs"
SDK_ERAS = ["legacy", "auto", "2026-07-28"]
EXPECTED_VERSION = {"legacy": "2025-11-25", "auto": "2026-07-28", "2026-07-28": "2026-07-28"}
EXPECTED = {
    "tools": ["echo", "counts", "asks", "samples", "hangs", "was_cancelled", "hang_started", "pid", "ends_badly"],
    "echo": "hi",
    "counts": "counted 3",
    "progress": [1.0, 2.0, 3.0],
    "asks": "hello ann",
    "samples": "model says 42",
    "resources": ["test://greeting"],
    "greeting": "hello from a resource",
    "item": "item x",
    "templates": ["test://items/{item}"],
    "prompt": "Please greet bo.",
    "completion": ["apple", "apricot"],
    "hangs": "timed out",
    "cancelled_runs": 1,
    "ends_badly": -32603,
    "after": "still here",
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def text_of(result: Any) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


# -- the official Python SDK's client and fastmcp's -----------------------------------------


def sdk_client(target: Any, mode: str) -> Any:
    """The official SDK's ``Client``, answering elicitation and sampling."""
    import mcp_types as types  # noqa: PLC0415
    from mcp import Client  # noqa: PLC0415 - the SDK is a test extra of Python 3.10+

    async def elicit(context: Any, params: Any) -> Any:
        return types.ElicitResult(action="accept", content={"name": "ann"})

    async def sample(context: Any, params: Any) -> Any:
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="42"), model="fake"
        )

    return Client(target, mode=mode, elicitation_callback=elicit, sampling_callback=sample)


async def exercise_sdk(client: Any) -> Dict[str, Any]:
    """Everything the interop server offers, through an SDK-shaped client (the SDK's, fastmcp's)."""
    import mcp_types as types  # noqa: PLC0415
    from mcp.shared.exceptions import MCPError  # noqa: PLC0415

    seen: Dict[str, Any] = {}
    progress: List[float] = []

    async def on_progress(done: float, total: Any, message: Any) -> None:
        progress.append(done)

    tools = await client.list_tools()
    seen["tools"] = [tool.name for tool in getattr(tools, "tools", tools)]
    seen["echo"] = text_of(await client.call_tool("echo", {"text": "hi"}))
    seen["counts"] = text_of(await client.call_tool("counts", {"steps": 3}, progress_callback=on_progress))
    seen["progress"] = progress
    seen["asks"] = text_of(await client.call_tool("asks", {}))
    seen["samples"] = text_of(await client.call_tool("samples", {"question": "six times seven?"}))
    seen["resources"] = [str(resource.uri) for resource in (await client.list_resources()).resources]
    seen["greeting"] = (await client.read_resource("test://greeting")).contents[0].text
    seen["item"] = (await client.read_resource("test://items/x")).contents[0].text
    templates = (await client.list_resource_templates()).resource_templates
    seen["templates"] = [template.uri_template for template in templates]
    prompt = await client.get_prompt("greet", {"name": "bo"})
    seen["prompt"] = prompt.messages[0].content.text
    ref = types.ResourceTemplateReference(type="ref/resource", uri="test://items/{item}")
    seen["completion"] = (await client.complete(ref, {"name": "item", "value": "ap"})).completion.values
    try:
        await client.call_tool("hangs", {}, read_timeout_seconds=GIVE_UP_S)
        seen["hangs"] = "answered"
    except MCPError as exc:
        seen["hangs"] = "timed out" if "timed out" in exc.message else exc.message
    seen["cancelled_runs"] = (await client.call_tool("was_cancelled", {})).structured_content["result"]
    try:
        await client.call_tool("ends_badly", {})
        seen["ends_badly"] = "answered"
    except MCPError as exc:
        seen["ends_badly"] = exc.code
    seen["after"] = text_of(await client.call_tool("echo", {"text": "still here"}))
    return seen


def run_sdk(target: Any, mode: str) -> Tuple[str, Dict[str, Any]]:
    """The SDK's client's whole run against ``target``: (the protocol version it spoke, what it saw)."""

    async def main() -> Tuple[str, Dict[str, Any]]:
        with anyio.fail_after(WAIT_S):
            async with sdk_client(target, mode) as client:
                return client.protocol_version, await exercise_sdk(client)

    result: Tuple[str, Dict[str, Any]] = anyio.run(main)
    return result


@needs_sdk
@pytest.mark.parametrize("mode", SDK_ERAS)
def test_sdk_client_over_stdio(mode: str) -> None:
    from mcp.client.stdio import StdioServerParameters  # noqa: PLC0415

    params = StdioServerParameters(command=sys.executable, args=[str(PEERS_DIR / "mcp_interop_server.py")])
    version, seen = run_sdk(params, mode)
    assert version == EXPECTED_VERSION[mode]
    assert seen == EXPECTED


@needs_sdk
@pytest.mark.parametrize("mode", SDK_ERAS)
@pytest.mark.parametrize("kind", SERVERS, ids=lambda kind: kind.name)
def test_sdk_client_over_http(kind: Any, mode: str) -> None:
    server, events = make_server()
    app = server.wsgi_app(heartbeat=0.2)
    try:
        with kind(app) as http:
            version, seen = run_sdk(http.url, mode)
    finally:
        app.close()
    assert version == EXPECTED_VERSION[mode]
    assert seen == EXPECTED
    assert events["hang_cancelled"].is_set()


@needs_sdk
@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_fastmcp_client_over_http(mode: str) -> None:
    fastmcp = pytest.importorskip("fastmcp", reason="fastmcp (Python 3.10+) is not installed")

    async def elicit(message: str, response_type: Any, params: Any, context: Any) -> Dict[str, Any]:
        return {"name": "ann"}

    async def sample(messages: Any, params: Any, context: Any) -> str:
        return "42"

    async def main(url: str) -> Tuple[str, Dict[str, Any]]:
        with anyio.fail_after(WAIT_S):
            client = fastmcp.Client(url, mode=mode, elicitation_handler=elicit, sampling_handler=sample)
            async with client:
                return client.session.protocol_version, await exercise_fastmcp(client)

    server, events = make_server()
    app = server.wsgi_app(heartbeat=0.2)
    try:
        with WaitressServer(app) as http:
            version, seen = anyio.run(main, http.url)
    finally:
        app.close()
    assert version == EXPECTED_VERSION[mode]
    assert seen == EXPECTED
    assert events["hang_cancelled"].is_set()


async def exercise_fastmcp(client: Any) -> Dict[str, Any]:
    """fastmcp's ``Client`` spells a few calls its own way: adapt it to ``exercise_sdk``'s."""

    class Adapted:
        async def list_tools(self) -> Any:
            return await client.list_tools()

        async def call_tool(
            self, name: str, arguments: Any, read_timeout_seconds: Any = None, progress_callback: Any = None
        ) -> Any:
            return await client.call_tool(
                name, arguments, timeout=read_timeout_seconds, progress_handler=progress_callback
            )

        async def list_resources(self) -> Any:
            return type("Listed", (), {"resources": await client.list_resources()})

        async def read_resource(self, uri: str) -> Any:
            return type("Read", (), {"contents": await client.read_resource(uri)})

        async def list_resource_templates(self) -> Any:
            return type("Listed", (), {"resource_templates": await client.list_resource_templates()})

        async def get_prompt(self, name: str, arguments: Any) -> Any:
            return await client.get_prompt(name, arguments)

        async def complete(self, ref: Any, argument: Any) -> Any:
            return type("Completed", (), {"completion": await client.complete(ref, argument)})

    return await exercise_sdk(Adapted())


# -- the TypeScript SDK's client -------------------------------------------------------------


@pytest.mark.parametrize("mode", SDK_ERAS)
def test_typescript_client_over_http(mode: str) -> None:
    if not (NODE.exists() and (TESTS_DIR / "node" / "node_modules" / "@modelcontextprotocol" / "client").exists()):
        pytest.skip("the npm peers are not installed (npm ci --prefix tests/node)")
    server, events = make_server()
    app = server.wsgi_app(heartbeat=0.2)
    try:
        with WaitressServer(app) as http:
            done = subprocess.run(
                [str(NODE), str(TS_CLIENT), http.url, mode],
                capture_output=True,
                text=True,
                timeout=WAIT_S,
                check=False,
            )
    finally:
        app.close()
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout)
    assert seen["protocolVersion"] == EXPECTED_VERSION[mode]
    assert seen["server"] == {"name": "interop", "version": "1.2.3"}
    assert seen["tools"] == EXPECTED["tools"]
    assert (seen["echo"], seen["counts"], seen["progress"]) == ("hi", "counted 3", [1, 2, 3])
    assert (seen["asks"], seen["samples"]) == ("hello ts", "model says seven")
    assert (seen["resource"], seen["prompt"], seen["completion"]) == (
        "item x",
        "Please greet bo.",
        ["apple", "apricot"],
    )
    assert seen["hangs"] == "REQUEST_TIMEOUT" and seen["cancelledRuns"] == {"result": 1}
    assert seen["endsBadly"] == -32603 and seen["after"] == "still here"
    assert events["hang_cancelled"].is_set()


# -- gunicorn ---------------------------------------------------------------------------------


@contextmanager
def gunicorn(
    *flags: str, workers: int = 1, env: Optional[Dict[str, str]] = None
) -> Iterator[Tuple[str, subprocess.Popen[bytes]]]:
    """gunicorn's threaded workers serving tests/peers/mcp_interop_server.py's ``app`` on 127.0.0.1: (URL, process)."""
    pytest.importorskip("gunicorn", reason="gunicorn is not installed")
    port = free_port()
    command = [sys.executable, "-m", "gunicorn", "-k", "gthread", "--threads", "8", "-w", str(workers)]
    command += ["--chdir", str(PEERS_DIR), "-b", f"127.0.0.1:{port}", "--graceful-timeout", "2", *flags]
    process = subprocess.Popen(
        [*command, "mcp_interop_server:app"],
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, **(env or {})},
    )
    assert process.stderr is not None
    try:
        booted = _wait_for_lines(process.stderr, "Booting worker", workers)
        assert booted, f"gunicorn did not start its {workers} workers"
        yield f"http://127.0.0.1:{port}/mcp", process
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(WAIT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(WAIT_S)
        process.stderr.close()


def _wait_for_lines(stream: Any, needle: str, count: int) -> bool:
    """Read ``stream`` until ``needle`` was seen on ``count`` lines (False at its end or after ``WAIT_S``)."""
    buffered = b""
    seen = 0
    fd = stream.fileno()
    while seen < count:
        ready, _, _ = select.select([fd], [], [], WAIT_S)
        if not ready:
            return False
        chunk = os.read(fd, 65536)
        if not chunk:
            return False
        buffered += chunk
        *lines, buffered = buffered.split(b"\n")
        seen += sum(needle.encode() in line for line in lines)
    return True


@needs_sdk
@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_gunicorn_preload_serves_both_eras_from_the_forked_worker(mode: str) -> None:
    with gunicorn("--preload") as (url, process):
        version, seen = run_sdk(url, mode)
        worker = pid_of(url)
    assert version == EXPECTED_VERSION[mode]
    assert seen == EXPECTED
    assert worker != process.pid  # the server was made in the master and serves in its fork


def test_gunicorn_preload_after_the_app_served_in_the_master() -> None:
    """The app ran a call on its pool before the fork: the forked worker must not hand work to the parent's threads."""
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
    headers = {
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call",
        "Mcp-Name": "echo",
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
    body["params"] = {"name": "echo", "arguments": {"text": "forked"}, "_meta": meta}
    with gunicorn("--preload", env={"MCP_INTEROP_WARM_UP": "1"}) as (url, _):
        answer = requests.post(url, json=body, headers=headers, timeout=ANSWER_S)
    assert answer.status_code == 200
    assert answer.json()["result"]["content"] == [{"type": "text", "text": "forked"}]


def pid_of(url: str) -> int:
    async def main() -> int:
        with anyio.fail_after(WAIT_S):
            async with sdk_client(url, "auto") as client:
                return int((await client.call_tool("pid", {})).structured_content["result"])

    pid: int = anyio.run(main)
    return pid


@needs_sdk
def test_gunicorn_preloaded_workers_share_the_state_secret_for_multi_round_calls() -> None:
    """Two workers forked from one preloaded server: a round that began in one is finished by either."""
    with gunicorn("--preload", workers=2) as (url, _):
        answers = [run_one_call(url, "asks", {}) for _ in range(12)]  # each call on connections of its own
    assert answers == [("2026-07-28", "hello ann")] * 12


def run_one_call(url: str, name: str, arguments: Dict[str, Any]) -> Tuple[str, str]:
    async def main() -> Tuple[str, str]:
        with anyio.fail_after(WAIT_S):
            async with sdk_client(url, "2026-07-28") as client:
                return client.protocol_version, text_of(await client.call_tool(name, arguments))

    result: Tuple[str, str] = anyio.run(main)
    return result


# -- robustness with real peers ---------------------------------------------------------------


@needs_sdk
@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
def test_sdk_client_going_away_mid_call_cancels_its_tool_and_others_go_on(mode: str) -> None:
    with gunicorn() as (url, _):

        async def main() -> Tuple[int, str]:
            with anyio.fail_after(WAIT_S):
                async with sdk_client(url, "auto") as watcher:
                    async with anyio.create_task_group() as group:

                        async def leaves() -> None:
                            async with sdk_client(url, mode) as client:
                                await client.call_tool("hangs", {})

                        group.start_soon(leaves)
                        started = await watcher.call_tool("hang_started", {})
                        assert started.structured_content["result"] is True
                        group.cancel_scope.cancel()  # the client goes away: its connections close
                    runs = (await watcher.call_tool("was_cancelled", {})).structured_content["result"]
                    return runs, text_of(await watcher.call_tool("echo", {"text": "on"}))

        runs, after = anyio.run(main)
    assert (runs, after) == (1, "on")


@needs_sdk
@pytest.mark.parametrize("kind", SERVERS, ids=lambda kind: kind.name)
def test_sdk_tampered_request_state_is_refused(kind: Any) -> None:
    from mcp.shared.exceptions import MCPError  # noqa: PLC0415

    server, _ = make_server()
    app = server.wsgi_app()

    async def main(url: str) -> Tuple[Any, Any]:
        with anyio.fail_after(WAIT_S):
            async with sdk_client(url, "2026-07-28") as client:
                first = await client.session.call_tool("asks", {}, allow_input_required=True)
                state = first.request_state
                answers = {"name": {"action": "accept", "content": {"name": "eve"}}}
                tampered = state[:-2] + ("A" if state[-2] != "A" else "B") + state[-1]
                try:
                    await client.session.call_tool(
                        "asks", {}, input_responses=answers, request_state=tampered, allow_input_required=True
                    )
                except MCPError as exc:
                    refused: Any = (exc.code, exc.data)
                else:
                    refused = None
                honest = await client.session.call_tool(
                    "asks", {}, input_responses=answers, request_state=state, allow_input_required=True
                )
                return refused, text_of(honest)

    try:
        with kind(app) as http:
            refused, honest = anyio.run(main, http.url)
    finally:
        app.close()
    assert refused == (-32602, {"reason": "requestState integrity check failed"})
    assert honest == "hello eve"


def test_gunicorn_answers_404_to_a_session_id_that_does_not_exist() -> None:
    with gunicorn("--preload") as (url, _):
        headers = {
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
            "Mcp-Session-Id": "no-such-session",
            "MCP-Protocol-Version": "2025-11-25",
        }
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        answer = requests.post(url, json=body, headers=headers, timeout=WAIT_S)
        gone = requests.delete(url, headers=headers, timeout=WAIT_S)
    assert answer.status_code == 404 and answer.json()["error"]["code"] == -32001
    assert gone.status_code == 404
