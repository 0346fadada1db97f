"""The extensions McpClient speaks, against a real server: tasks, skills, MCP Apps' visibility, JSON Schema 2020-12.

tests/peers/mcp_ext_peer.py is an official-SDK ``MCPServer`` with small SDK
``Extension``s for tasks (``io.modelcontextprotocol/tasks``) and skills
(``io.modelcontextprotocol/skills``), tools with MCP Apps metadata, and a
tool with a hand-written JSON Schema 2020-12 ``inputSchema``.  It runs over
stdio (and over Streamable HTTP where a header matters).  The extensions are
of the stateless era (2026-07-28), where ``mode="auto"`` goes with the SDK.
"""

from __future__ import annotations

import copy
import sys
import threading
import time
from concurrent.futures import CancelledError, Future
from typing import Any, Dict, Iterator, List

import pytest

from jsonrpc_threads import RemoteError, RequestTimeout, StdioTransport, TransportClosed
from jsonrpc_threads.mcp import McpClient, SkillVerificationError, TaskFuture, ToolRegistry, UnknownTool
from jsonrpc_threads.transports.http import HttpTransport

from .conftest import peer_command
from .peers.mcp_launch import ServerProcess

pytest.importorskip("mcp.server.mcpserver", reason="the official MCP Python SDK (mcp>=2, Python>=3.10) is needed")

from .peers.mcp_ext_peer import FORMS_URI, SCHEMA_2020, SKILL_URI

WAIT_S = 20.0


def confirm(params: Dict[str, Any]) -> Dict[str, Any]:
    return {"action": "accept", "content": {"sure": True}}


def ext_stdio(**options: Any) -> McpClient:
    options.setdefault("default_timeout", WAIT_S)
    return McpClient(StdioTransport(peer_command("mcp_ext_peer")), **options)


def text_of(result: Any) -> str:
    return "".join(item.get("text", "") for item in result["content"])


# -- tasks -----------------------------------------------------------------------------------


def test_call_tool_waits_for_a_task_to_complete() -> None:
    with ext_stdio() as client:
        assert "io.modelcontextprotocol/tasks" in client.server_extensions
        started = time.monotonic()
        result = client.call_tool("slow_compute", {"seconds": 0.3, "value": "x"})
        assert text_of(result) == "computed x"  # the task's inlined result, not the synchronous one
        assert time.monotonic() - started >= 0.3


def test_submit_tool_is_a_future_of_the_tasks_result() -> None:
    with ext_stdio() as client:
        future = client.submit_tool("slow_compute", {"seconds": 0.3, "value": "y"})
        assert isinstance(future, Future) and isinstance(future, TaskFuture)
        done = threading.Event()
        future.add_done_callback(lambda f: done.set())
        assert text_of(future.result(WAIT_S)) == "computed y"
        assert done.wait(WAIT_S)
        assert future.task_id is not None and future.task_id.startswith("task-")
        assert future.status == "completed"


def test_a_task_that_needs_input_is_answered_from_the_elicitation_handler() -> None:
    asked: List[Dict[str, Any]] = []

    def answer(params: Dict[str, Any]) -> Dict[str, Any]:
        asked.append(params)
        return confirm(params)

    with ext_stdio(on_elicitation=answer) as client:
        result = client.call_tool("confirm", {"item": "delete"})
    assert text_of(result) == "confirmed delete: {'sure': True}"
    assert asked and asked[0]["message"] == "Really do delete?"


def test_a_failed_task_raises_its_error() -> None:
    with ext_stdio() as client:
        with pytest.raises(RemoteError) as caught:
            client.call_tool("explode")
        assert caught.value.code == -32603 and "exploded" in caught.value.message
        failed = client.submit_tool("explode")
        assert isinstance(failed.exception(WAIT_S), RemoteError)


def test_cancelling_the_future_sends_tasks_cancel() -> None:
    with ext_stdio() as client:
        future = client.submit_tool("slow_compute", {"seconds": 60, "value": "never"})
        task_id = future.wait_for_task(WAIT_S)  # the task exists once the first answer came
        assert task_id is not None and not future.done()
        assert future.cancel()
        with pytest.raises(CancelledError):
            future.result(0)
        # tasks/cancel goes out in the background; the server waits (bounded) until it marked the task.
        assert text_of(client.call_tool("cancelled_tasks", {"wait": WAIT_S})) == task_id


def test_a_task_past_its_timeout_is_cancelled_and_times_out() -> None:
    with ext_stdio() as client:
        started = time.monotonic()
        with pytest.raises(RequestTimeout):
            client.call_tool("slow_compute", {"seconds": 60, "value": "late"}, timeout=0.5)
        assert time.monotonic() - started < 5.0
        assert text_of(client.call_tool("cancelled_tasks", {"wait": WAIT_S})).startswith("task-")


def test_closing_the_client_fails_a_polled_task_at_once() -> None:
    client = ext_stdio()
    future = client.submit_tool("slow_compute", {"seconds": 60, "value": "x"})
    assert future.wait_for_task(WAIT_S) is not None
    started = time.monotonic()
    client.close()
    assert time.monotonic() - started < 5.0
    assert isinstance(future.exception(WAIT_S), TransportClosed)


def test_without_the_extension_the_server_answers_at_once() -> None:
    with ext_stdio(tasks=False) as client:
        assert text_of(client.call_tool("slow_compute", {"seconds": 60, "value": "z"})) == "computed z at once"
        future = client.submit_tool("slow_compute", {"seconds": 60, "value": "z"})
        assert text_of(future.result(WAIT_S)) == "computed z at once"
        assert future.task_id is None


@pytest.fixture(scope="module")
def ext_url() -> Iterator[str]:
    with ServerProcess(peer_command("mcp_ext_peer", "--http"), name="ext-http") as server:
        yield server.wait_for(r"listening on (\S+)").group(1)


def test_tasks_over_http(ext_url: str) -> None:
    with McpClient(HttpTransport(ext_url), default_timeout=WAIT_S, on_elicitation=confirm) as client:
        assert text_of(client.call_tool("slow_compute", {"seconds": 0.2, "value": "h"})) == "computed h"
        assert text_of(client.submit_tool("confirm", {"item": "it"}).result(WAIT_S)) == "confirmed it: {'sure': True}"


# -- skills ----------------------------------------------------------------------------------


def reads_of(client: McpClient) -> List[str]:
    text = text_of(client.call_tool("skill_reads"))
    return text.split(",") if text else []


def test_listing_skills_reads_no_file() -> None:
    with ext_stdio() as client:
        assert "io.modelcontextprotocol/skills" in client.server_extensions
        entries = client.list_skills()
        assert [entry["uri"] for entry in entries] == [SKILL_URI, "skill://today/SKILL.md"]
        assert client.get_skill(SKILL_URI) == entries[0]
        assert reads_of(client) == []


def test_a_loaded_skill_is_verified_and_reads_its_listed_files_only() -> None:
    with ext_stdio() as client:
        skill = client.load_skill(client.list_skills()[0])
        assert skill.name == "pdf-tools"
        assert skill.frontmatter == {
            "name": "pdf-tools",
            "description": "Fill in PDF forms",
            "metadata": {"version": "2.1.0"},
        }
        assert skill.files() == [SKILL_URI, FORMS_URI]
        assert reads_of(client) == [SKILL_URI]  # supporting files only when they are read
        assert skill.read("references/FORMS.md") == "The forms, one by one.\n"
        with pytest.raises(SkillVerificationError) as caught:
            skill.read("references/SECRET.md")
        assert "does not list" in caught.value.reason
        assert reads_of(client) == [SKILL_URI, FORMS_URI]
        # A dynamic skill, loaded by its URI alone (its entry comes from skills/get): no digest to check.
        assert client.load_skill("skill://today/SKILL.md").text.endswith("It is a good day.\n")


@pytest.mark.parametrize(
    ("kind", "reason"),
    [("digest", "digest differs"), ("size", "bytes where the entry says"), ("frontmatter", "frontmatter differs")],
)
def test_a_tampered_skill_is_refused_before_anything_else_is_read(kind: str, reason: str) -> None:
    with ext_stdio() as client:
        client.call_tool("tamper", {"kind": kind})
        entry = client.list_skills()[0]
        with pytest.raises(SkillVerificationError) as caught:
            client.load_skill(entry)
        assert reason in caught.value.reason and caught.value.uri == SKILL_URI
        assert reads_of(client) == [SKILL_URI]


# -- MCP Apps' visibility and JSON Schema 2020-12 ------------------------------------------------


@pytest.fixture
def registry() -> Iterator[ToolRegistry]:
    config = {"mcpServers": {"ext": {"command": sys.executable, "args": peer_command("mcp_ext_peer")[1:]}}}
    with ToolRegistry.from_config(config) as tools:
        yield tools


def test_a_tool_for_the_app_alone_is_never_offered_to_the_model(registry: ToolRegistry) -> None:
    names = {tool["tool"] for tool in registry.tools()}
    assert {"render", "plain", "slow_compute"} <= names
    assert "chart" not in names  # _meta.ui.visibility: ["app"]
    assert all("chart" not in tool["function"]["name"] for tool in registry.openai_tools())
    assert all("chart" not in tool["name"] for tool in registry.anthropic_tools())
    with pytest.raises(UnknownTool):
        registry.resolve("mcp__ext__chart")
    # The client itself lists every tool: hiding is the host's (the registry's) business.
    assert "chart" in {tool["name"] for tool in registry.session("ext").list_tools()}


def test_json_schema_2020_12_passes_through_untouched(registry: ToolRegistry) -> None:
    expected = copy.deepcopy(SCHEMA_2020)
    listed = {tool["name"]: tool for tool in registry.session("ext").list_tools()}
    assert listed["schema_2020"]["inputSchema"] == expected
    entry = next(tool for tool in registry.tools() if tool["tool"] == "schema_2020")
    assert entry["inputSchema"] == expected
    openai = next(tool for tool in registry.openai_tools() if tool["function"]["name"] == entry["name"])
    assert openai["function"]["parameters"] == expected
    anthropic = next(tool for tool in registry.anthropic_tools() if tool["name"] == entry["name"])
    assert anthropic["input_schema"] == expected
