"""The example agents the README runs against: AcpClient and A2aClient on the package's own peers.

``jsonrpc_threads.examples.acp_agent`` is an ACP agent on the stdio server loop,
started as a real child process; ``jsonrpc_threads.examples.a2a_agent`` an A2A
1.0 agent served over HTTP on 127.0.0.1 from threads of this process.  Each
test drives one as the README does (a turn, a cancel, a stream, a task's life)
and checks what the client saw and that nothing is left running: the leak
fixture checks threads, children and files after each test.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Dict, List

import psutil
import pytest

from jsonrpc_threads import RequestTimeout
from jsonrpc_threads.a2a import (
    A2aClient,
    TaskNotCancelable,
    TaskNotFound,
    UnsupportedOperation,
    event_kind,
    state_of,
    text_of,
)
from jsonrpc_threads.acp import AcpClient
from jsonrpc_threads.errors import InvalidParams
from jsonrpc_threads.examples import a2a_agent, acp_agent

from .test_snippets import ALL_BLOCKS, ROOT, Block, blocks_of

#: Seconds any one call may take (a Python child process starts, a few words are written).
TIMEOUT_S = 30.0
ACP_AGENT = [sys.executable, "-m", "jsonrpc_threads.examples.acp_agent"]


def _texts(updates: List[Dict[str, Any]]) -> List[str]:
    return [_text(u) for u in updates if u["sessionUpdate"] == "agent_message_chunk"]


def _text(update: Dict[str, Any]) -> str:
    return str(update["content"]["text"])


# -- ACP ----------------------------------------------------------------------------------------


def test_acp_a_turn_streams_its_words_in_order_then_ends_its_turn() -> None:
    seen: List[str] = []
    with AcpClient(ACP_AGENT, default_timeout=TIMEOUT_S) as agent:
        assert agent.protocol_version == 1
        assert agent.agent_info == acp_agent.AGENT_INFO
        session = agent.new_session()
        result = agent.prompt(session, "one two three", on_update=lambda u: seen.append(u["content"]["text"]))
        assert result["stopReason"] == "end_turn"
        assert _texts(result["updates"]) == ["one ", "two ", "three "] == seen
        other = agent.new_session()
        assert other != session
        assert _texts(agent.prompt(other, [{"type": "text", "text": "four"}])["updates"]) == ["four "]


def test_acp_cancel_stops_a_running_turn_with_cancelled() -> None:
    first_word = threading.Event()
    with AcpClient(ACP_AGENT, default_timeout=TIMEOUT_S) as agent:
        session = agent.new_session()
        canceller = threading.Thread(target=lambda: first_word.wait(TIMEOUT_S) and agent.cancel(session))
        canceller.start()
        try:
            result = agent.prompt(session, "word " * 2000, on_update=lambda update: first_word.set())  # 40 s of words
        finally:
            canceller.join(TIMEOUT_S)
        assert result["stopReason"] == "cancelled"
        assert 1 <= len(result["updates"]) < 2000
        assert agent.prompt(session, "still here")["stopReason"] == "end_turn"  # the session goes on


def test_acp_a_prompt_that_times_out_is_cancelled_and_the_session_stays_usable() -> None:
    with AcpClient(ACP_AGENT, default_timeout=TIMEOUT_S) as agent:
        session = agent.new_session()
        first: List[str] = []
        with pytest.raises(RequestTimeout):
            agent.prompt(session, "word " * 2000, timeout=0.3, on_update=lambda update: first.append(_text(update)))
        again: List[str] = []
        result = agent.prompt(session, "again", on_update=lambda update: again.append(_text(update)))
        assert result["stopReason"] == "end_turn"
        # Issue 47, item 3: a word the agent sent for the timed-out turn before the cancel reached it
        # is still that turn's (ACP updates carry no turn id: the turn keeps them until its answer).
        assert _texts(result["updates"]) == again == ["again "]
        assert first and set(first) == {"word "}


def test_acp_what_the_agent_sends_for_a_timed_out_turn_before_answering_it_stays_that_turns() -> None:
    """Issue 47, item 3: updates carry no turn id; a turn given up on keeps its session's updates until its answer.

    Before: the timed-out turn was forgotten at once, and the words the agent sent
    while it stopped went to the next prompt of the session (or to the client-wide callback).
    """
    lingering = [sys.executable, str(Path(__file__).parent / "peers" / "acp_lingering_agent.py")]
    outside: List[str] = []
    with AcpClient(lingering, default_timeout=TIMEOUT_S, on_update=lambda _s, u: outside.append(_text(u))) as agent:
        session = agent.new_session()
        first: List[str] = []
        with pytest.raises(RequestTimeout):
            agent.prompt(session, "linger", timeout=0.3, on_update=lambda update: first.append(_text(update)))
        again: List[str] = []
        result = agent.prompt(session, "hello again", on_update=lambda update: again.append(_text(update)))
    assert _texts(result["updates"]) == again == ["hello ", "again "]
    assert first[-3:] == ["late "] * 3 and set(first) == {"word ", "late "}
    assert outside == []


def test_acp_an_unknown_session_is_refused() -> None:
    with AcpClient(ACP_AGENT, default_timeout=TIMEOUT_S) as agent, pytest.raises(InvalidParams):
        agent.prompt("no-such-session", "hello")


def test_acp_close_reclaims_the_agents_process() -> None:
    agent = AcpClient(ACP_AGENT, default_timeout=TIMEOUT_S)
    try:
        agent.new_session()
        children = psutil.Process().children()
        assert len(children) == 1
        process = children[0]
    finally:
        agent.close()
    assert not process.is_running()  # terminated and reaped by close(), before it returned


# -- A2A ----------------------------------------------------------------------------------------


@pytest.fixture
def a2a() -> Any:
    with a2a_agent.ExampleAgent() as url, A2aClient(url, default_timeout=TIMEOUT_S) as agent:
        yield agent


def test_a2a_the_card_and_a_plain_message(a2a: A2aClient) -> None:
    assert a2a.card["name"] == "example-agent"
    assert a2a.protocol_version == "1.0"
    assert a2a.interface_url is not None and a2a.interface_url.endswith(a2a_agent.RPC_PATH)
    reply = a2a.send_message("hello")
    assert event_kind(reply) == "message"
    assert text_of(reply) == "you said: hello"


def test_a2a_send_answers_the_task_once_it_is_done(a2a: A2aClient) -> None:
    task = a2a.send_message("report on Q3")
    assert state_of(task) == "completed"
    assert text_of(task) == "Sales grew 12%"
    assert a2a.get_task(task["id"]) == task
    assert a2a.get_task(task["id"], history_length=0).get("history") is None


def test_a2a_a_stream_carries_the_tasks_events_in_order(a2a: A2aClient) -> None:
    events = list(a2a.stream_message("report on Q3", timeout=TIMEOUT_S))
    assert [event_kind(e) for e in events] == ["task", "status-update", *["artifact-update"] * 3, "status-update"]
    assert [state_of(e) for e in events if event_kind(e) != "artifact-update"] == ["submitted", "working", "completed"]
    assert [text_of(e) for e in events if event_kind(e) == "artifact-update"] == list(a2a_agent.REPORT)
    assert text_of(events[1]) == "looking at the numbers"
    assert len({e.get("taskId", e.get("id")) for e in events}) == 1
    plain = list(a2a.stream_message("hello"))
    assert [text_of(e) for e in plain] == ["you said: hello"]


def test_a2a_get_wait_cancel_and_list_a_task(a2a: A2aClient) -> None:
    task = a2a.send_message("forever", return_immediately=True)
    with pytest.raises(RequestTimeout):
        a2a.wait(task["id"], timeout=0.3)
    assert state_of(a2a.get_task(task["id"])) in ("submitted", "working")
    assert state_of(a2a.cancel_task(task["id"])) == "canceled"
    assert state_of(a2a.wait(task["id"])) == "canceled"
    with pytest.raises(TaskNotCancelable):
        a2a.cancel_task(task["id"])
    with pytest.raises(TaskNotFound):
        a2a.get_task("no-such-task")
    page = a2a.list_tasks(context_id=task["contextId"], status="canceled")
    assert [t["id"] for t in page["tasks"]] == [task["id"]]


def test_a2a_subscribe_follows_a_running_task_and_refuses_one_that_ended(a2a: A2aClient) -> None:
    task = a2a.send_message("forever", return_immediately=True)
    with a2a.subscribe(task["id"]) as events:
        first = next(events)
        assert event_kind(first) == "task" and first["id"] == task["id"]
        a2a.cancel_task(task["id"])
        assert [state_of(e) for e in events][-1] == "canceled"
    with pytest.raises(UnsupportedOperation):
        next(iter(a2a.subscribe(task["id"])))


def test_a2a_closing_the_agent_ends_running_tasks_and_open_streams() -> None:
    agent = a2a_agent.ExampleAgent()
    client = A2aClient(agent.url, default_timeout=TIMEOUT_S)
    try:
        task = client.send_message("forever", return_immediately=True)
        events = client.subscribe(task["id"])
        assert event_kind(next(events)) == "task"
        agent.close()
        assert [state_of(e) for e in events][-1] == "canceled"  # the stream ended with the task's last event
    finally:
        client.close()
        agent.close()


def test_a2a_the_module_prints_its_url_and_serves_until_interrupted() -> None:
    with subprocess.Popen(
        [sys.executable, "-m", "jsonrpc_threads.examples.a2a_agent"], stdout=subprocess.PIPE, text=True
    ) as process:
        try:
            assert process.stdout is not None
            url = process.stdout.readline().strip()
            with A2aClient(url, default_timeout=TIMEOUT_S) as client:
                assert text_of(client.send_message("hi")) == "you said: hi"
        finally:
            process.send_signal(signal.SIGINT)
            returncode = process.wait(TIMEOUT_S)
    assert returncode == 0  # Ctrl-C: it closed the agent and exited


# -- the pages ----------------------------------------------------------------------------------

#: What the visible text before an example that is not run says: that it is an illustration, or what it needs.
_SAYS_WHY = re.compile(r"\b(illustration|needs?)\b", re.IGNORECASE)


def test_the_readme_runs_every_example_as_written_the_agents_ones_included() -> None:
    blocks = blocks_of(ROOT / "README.md")
    assert [block.name for block in blocks if block.directive == "skip"] == []
    python = "".join(block.code for block in blocks if block.language == "python")
    assert "jsonrpc_threads.examples.acp_agent" in python
    assert "jsonrpc_threads.examples.a2a_agent" in python


def _paragraph_before(block: Block) -> str:
    """The visible paragraph just before a block (its directive comment and blank lines skipped)."""
    lines = block.page.read_text(encoding="utf-8").splitlines()[: block.line - 1]
    while lines and (not lines[-1].strip() or lines[-1].lstrip().startswith("<!--")):
        lines.pop()
    paragraph: List[str] = []
    while lines and lines[-1].strip():
        paragraph.insert(0, lines.pop())
    return " ".join(paragraph)


def test_an_example_that_is_not_run_says_on_the_page_what_it_needs() -> None:
    silent = [
        block.name
        for block in ALL_BLOCKS
        if block.directive == "skip" and not _SAYS_WHY.search(_paragraph_before(block))
    ]
    assert silent == [], "say it visibly, not only in the skip comment: an illustration, or what it needs"
