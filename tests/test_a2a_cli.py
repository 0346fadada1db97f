"""``python -m jsonrpc_threads a2a``, run in a fresh interpreter against the SDK-served agent.

The reply is printed (the Message's text, or the task's artifacts), with
``--stream`` as it comes (progress on stderr), the exit status says how the
task ended, ``--task-id`` continues a task that asked for input, ``--timeout``
bounds the whole command, and an agent that cannot be reached exits 5.
"""

from __future__ import annotations

import json
import socket
import time
from typing import Iterator, Tuple

import pytest

from .a2a_support import AgentProcess, needs_a2a_sdk, seen
from .helpers import run_command

pytestmark = needs_a2a_sdk

TIMEOUT_S = 60.0


@pytest.fixture(scope="module")
def agent() -> Iterator[AgentProcess]:
    with AgentProcess() as process:
        yield process


def a2a(*args: str, stdin: str = "") -> Tuple[int, str, str]:
    return run_command("a2a", *args, stdin=stdin, timeout=TIMEOUT_S)


def test_a_message_reply_is_printed(agent: AgentProcess) -> None:
    assert a2a(agent.url, "hello there")[:2] == (0, "echo: hello there\n")
    assert a2a(agent.url, "-", stdin="from stdin")[:2] == (0, "echo: from stdin\n")


def test_a_tasks_artifacts_are_printed(agent: AgentProcess) -> None:
    assert a2a(agent.url, "task a b")[:2] == (0, "done: a b\n")


def test_with_stream_the_reply_comes_as_it_comes_and_progress_goes_to_stderr(agent: AgentProcess) -> None:
    code, out, err = a2a(agent.url, "steps 2", "--stream")
    assert (code, out) == (0, "done: 2\n")
    assert err.splitlines() == ["[working] working on it", "[working] step 1", "[working] step 2"]
    code, out, _ = a2a(agent.url, "hi", "--stream")
    assert (code, out) == (0, "echo: hi\n")


def test_a_task_that_asks_for_input_exits_1_and_is_continued_with_its_id(agent: AgentProcess) -> None:
    code, out, err = a2a(agent.url, "ask", "--stream")
    assert (code, out) == (1, "which one?\n")
    assert "input-required" in err and "--task-id " in err
    task_id = err.split("--task-id ", 1)[1].split()[0]
    assert a2a(agent.url, "the blue one", "--task-id", task_id)[:2] == (0, "you chose: the blue one\n")


def test_a_failed_task_exits_1_and_says_so(agent: AgentProcess) -> None:
    code, out, err = a2a(agent.url, "fail")
    assert (code, out) == (1, "it went wrong\n") and "ended failed" in err


def test_json_prints_the_result_and_each_event(agent: AgentProcess) -> None:
    code, out, _ = a2a(agent.url, "task j", "--json")
    assert code == 0 and json.loads(out)["status"]["state"] == "TASK_STATE_COMPLETED"
    code, out, _ = a2a(agent.url, "task j", "--json", "--stream")
    events = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and events[0]["id"] and events[-1]["status"]["state"] == "TASK_STATE_COMPLETED"


def test_headers_go_to_the_agent(agent: AgentProcess) -> None:
    before = len(seen(agent.url))
    assert a2a(agent.url, "hi", "--header", "X-Api-Key: k-9")[0] == 0
    assert [r["headers"].get("x-api-key") for r in seen(agent.url)[before:]] == ["k-9", "k-9"]


def test_the_timeout_bounds_the_whole_command(agent: AgentProcess) -> None:
    started = time.monotonic()
    code, _, err = a2a(agent.url, "forever", "--stream", "--timeout", "1")
    assert code == 4 and "within 1.0s" in err
    assert "(id" not in err  # issue 47, first hour: no protocol internals on the line
    assert time.monotonic() - started < TIMEOUT_S / 2


def test_usage_errors_and_an_agent_that_cannot_be_reached() -> None:
    assert a2a("not-a-url", "hi")[0] == 2
    assert a2a("http://127.0.0.1:1", "   ")[0] == 2
    assert a2a("http://127.0.0.1:1", "hi", "--header", "no colon")[0] == 2
    for bad in ("X-Key: a\nInjected: 1", "X-Key: a\rb", "Bad Name: v"):  # issue 47, item 12
        code, out, err = a2a("http://127.0.0.1:1", "hi", "--header", bad)
        assert (code, out) == (2, ""), err
        assert "header" in err and "a\nInjected" not in err
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()  # nothing listens there now
    code, out, err = a2a(f"http://127.0.0.1:{port}", "hi")
    assert (code, out) == (5, "") and "refused" in err.lower()
