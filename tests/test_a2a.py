"""A2aClient against agents served by the official A2A SDK (tests/peers/a2a_agent.py) on 127.0.0.1.

The agent runs as a child process, served by a2a-sdk's request handler and
routes (uvicorn): v1.0, v0.3 through the SDK's compatibility layer (its card
offering a 0.3 interface, or written as v0.3 agents write cards), an agent that
cannot stream, and one whose card puts its interface on another origin.  Each
test drives it as a caller would: a message reply, a task streamed with its
status updates and artifact, one that stays ``working`` (a stream's timeout,
``wait``'s timeout, ``cancel_task``), one that goes to ``input-required`` and
is continued, the agent's errors with A2A's codes, a server that dies
mid-stream, and where the caller's credentials go.
"""

from __future__ import annotations

import gc
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Dict, Iterator, List

import pytest
import requests.auth

from jsonrpc_threads import HttpConnectionError, HttpError, RequestTimeout, TransportClosed
from jsonrpc_threads.a2a import (
    A2aClient,
    TaskNotCancelable,
    TaskNotFound,
    UnsupportedOperation,
    event_kind,
    state_of,
    text_of,
)
from jsonrpc_threads.errors import MethodNotFound, ProtocolError, RemoteError
from jsonrpc_threads.transports.http import DEFAULT_MAX_WORKERS

from .a2a_support import AgentProcess, needs_a2a_sdk, seen

pytestmark = needs_a2a_sdk

#: Seconds any one call may take (the agent is a Python process on a shared machine).
TIMEOUT_S = 30.0
#: A short timeout, for the calls that must run out of it.
SHORT_S = 0.5
#: How late past its timeout a call may return (a loaded machine).
LATE_S = 2.0


@pytest.fixture(scope="module")
def agent() -> Iterator[AgentProcess]:
    with AgentProcess() as process:
        yield process


@pytest.fixture(scope="module")
def legacy_agent() -> Iterator[AgentProcess]:
    """A v0.3 agent whose card is written as v0.3 agents write it."""
    with AgentProcess("--version", "0.3", "--legacy-card") as process:
        yield process


@pytest.fixture
def client(agent: AgentProcess) -> Iterator[A2aClient]:
    with A2aClient(agent.url, default_timeout=TIMEOUT_S) as a2a:
        yield a2a


def open_streams(a2a: A2aClient) -> int:
    """The requests the client's JSON-RPC client holds open (a stream is one until it ends or is closed)."""
    agent = a2a._connection.agent  # the client on the agent's interface, once the card came
    return 0 if agent is None else agent.rpc.stats()["pending"]


def assert_no_open_stream(a2a: A2aClient) -> None:
    assert open_streams(a2a) == 0


def card_fetches(base: str) -> int:
    return sum(1 for record in seen(base) if record["path"].endswith("/agent-card.json"))


# -- the card ----------------------------------------------------------------------------------


def test_the_card_is_fetched_once_and_names_the_interface_and_version(agent: AgentProcess) -> None:
    before = card_fetches(agent.url)
    with A2aClient(agent.url) as a2a:
        assert a2a.protocol_version is None and a2a.interface_url is None
        card = a2a.fetch_card(timeout=TIMEOUT_S)
        assert card["name"] == "word-agent" and a2a.card is card
        assert a2a.protocol_version == "1.0"
        assert a2a.interface_url == f"{agent.url}/rpc"
        a2a.send_message("hello")
        a2a.send_message("again")
        assert "A2A 1.0" in repr(a2a)
    assert card_fetches(agent.url) == before + 1
    posts = [r for r in seen(agent.url) if r["method"] == "POST"]
    assert posts and all(r["headers"]["a2a-version"] == "1.0" for r in posts)


def test_a_url_ending_in_json_is_the_card_itself(agent: AgentProcess) -> None:
    with A2aClient(f"{agent.url}/.well-known/agent-card.json") as a2a:
        assert text_of(a2a.send_message("hi", timeout=TIMEOUT_S)) == "echo: hi"


def test_concurrent_first_calls_fetch_the_card_once(agent: AgentProcess) -> None:
    before = card_fetches(agent.url)
    with A2aClient(agent.url, default_timeout=TIMEOUT_S) as a2a, ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda n: text_of(a2a.send_message(f"n{n}")), range(8)))
    assert answers == [f"echo: n{n}" for n in range(8)]
    assert card_fetches(agent.url) == before + 1


def test_a_card_that_is_missing_or_not_an_object_fails_clearly(agent: AgentProcess) -> None:
    with A2aClient(f"{agent.url}/nowhere") as a2a:
        with pytest.raises(HttpError) as missing:
            a2a.send_message("hi", timeout=TIMEOUT_S)
        assert missing.value.status_code == 404
        assert "/nowhere/.well-known/agent-card.json" in missing.value.message
    with A2aClient(f"{agent.url}/_seen.json") as a2a, pytest.raises(ProtocolError, match="not a JSON object"):
        a2a.fetch_card(timeout=TIMEOUT_S)


def test_the_first_calls_deadline_covers_the_card_fetch() -> None:
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)  # connections complete in the backlog; nothing ever answers
    try:
        with A2aClient(f"http://127.0.0.1:{silent.getsockname()[1]}") as a2a:
            started = time.monotonic()
            with pytest.raises(RequestTimeout) as timed_out:
                a2a.send_message("hi", timeout=SHORT_S)
            assert time.monotonic() - started < SHORT_S + LATE_S
            assert timed_out.value.timeout == SHORT_S
            assert timed_out.value.method == "SendMessage" and "card" in timed_out.value.message
    finally:
        silent.close()


def test_timeouts_are_checked_where_they_enter(client: A2aClient) -> None:
    with pytest.raises(ValueError):
        client.send_message("hi", timeout=-1)
    with pytest.raises(TypeError):
        client.get_task("x", timeout="1")
    with pytest.raises(TypeError):
        client.send_message("hi", timeout=True)
    with pytest.raises(ValueError):
        A2aClient("http://127.0.0.1:1", default_timeout=float("nan"))
    with pytest.raises(RequestTimeout):
        client.send_message("hi", timeout=0)
    assert text_of(client.send_message("hi", timeout=float("inf"))) == "echo: hi"


def test_bad_arguments_fail_before_anything_is_sent(client: A2aClient) -> None:
    with pytest.raises(ValueError):
        A2aClient("ftp://127.0.0.1/agent")
    with pytest.raises(ValueError):
        A2aClient("http://127.0.0.1:1", allow_origins=["not a url"])
    with pytest.raises(TypeError):
        client.send_message(42)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        client.send_message("")
    with pytest.raises(ValueError):
        client.send_message({"role": "ROLE_USER", "parts": [{"text": "x"}], "taskId": "a"}, task_id="b")
    with pytest.raises(TypeError):
        client.get_task(None)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        client.get_task("x", history_length=-1)
    with pytest.raises(ValueError):
        client.list_tasks(status="sleeping")


# -- messages and tasks ------------------------------------------------------------------------


def test_a_message_reply_comes_back_unwrapped_as_the_agent_spelled_it(client: A2aClient) -> None:
    reply = client.send_message("hello there")
    assert event_kind(reply) == "message" and reply["role"] == "ROLE_AGENT"
    assert text_of(reply) == "echo: hello there"
    assert "message" not in reply and reply["parts"] == [{"text": "echo: hello there"}]


def test_a_message_dict_is_sent_as_given_with_what_it_lacks_filled_in(client: A2aClient) -> None:
    message = {"parts": [{"text": "hello"}, {"text": "parts"}], "metadata": {"from": "test"}}
    assert text_of(client.send_message(message)) == "echo: hello\nparts"  # the SDK joins the parts by lines
    assert "messageId" not in message  # the caller's dict is left as it was


def test_send_message_answers_once_the_task_is_done(client: A2aClient) -> None:
    task = client.send_message("task a b")
    assert event_kind(task) == "task" and task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert state_of(task) == "completed" and text_of(task) == "done: a b"
    again = client.get_task(task["id"], history_length=0)
    assert state_of(again) == "completed" and not again.get("history")
    assert len(client.get_task(task["id"])["history"]) >= 1


def test_a_task_streams_its_status_updates_and_artifact_in_order(client: A2aClient) -> None:
    events = client.stream_message("steps 3")
    kinds, states, texts = [], [], []
    for event in events:
        kinds.append(event_kind(event))
        states.append(state_of(event))
        texts.append(text_of(event))
    assert kinds[0] == "task" and kinds[-1] == "status-update"
    assert states[-1] == "completed" and events.closed
    updates = [text for kind, text in zip(kinds, texts) if kind == "status-update" and text]
    assert updates == ["working on it", "step 1", "step 2", "step 3"]
    assert [t for k, t in zip(kinds, texts) if k == "artifact-update"] == ["done: 3"]
    assert_no_open_stream(client)


def test_a_streamed_message_reply_is_one_event(client: A2aClient) -> None:
    with client.stream_message("hello stream") as events:
        assert [text_of(event) for event in events] == ["echo: hello stream"]


def test_input_required_ends_the_stream_and_a_follow_up_continues_the_task(client: A2aClient) -> None:
    events = list(client.stream_message("ask"))
    assert state_of(events[-1]) == "input-required" and text_of(events[-1]) == "which one?"
    task_id, context_id = events[0]["id"], events[0]["contextId"]
    done = client.send_message("the red one", task_id=task_id, context_id=context_id)
    assert done["id"] == task_id and state_of(done) == "completed"
    assert text_of(done) == "you chose: the red one"
    with pytest.raises(UnsupportedOperation):  # the task ended: it takes no more messages
        client.send_message("and another", task_id=task_id)


def test_a_working_task_times_the_stream_and_wait_out_and_cancels(client: A2aClient) -> None:
    started = time.monotonic()
    seen_events: List[Dict[str, Any]] = []
    with pytest.raises(RequestTimeout) as timed_out:
        for event in client.stream_message("forever", timeout=SHORT_S):
            seen_events.append(event)
    assert SHORT_S <= time.monotonic() - started < SHORT_S + LATE_S
    assert timed_out.value.timeout == SHORT_S and timed_out.value.method == "SendStreamingMessage"
    assert [state_of(e) for e in seen_events][-1] == "working"
    assert_no_open_stream(client)

    task = client.send_message("forever", return_immediately=True)
    assert state_of(task) in ("submitted", "working")
    started = time.monotonic()
    with pytest.raises(RequestTimeout) as still:
        client.wait(task["id"], timeout=SHORT_S)
    assert time.monotonic() - started < SHORT_S + LATE_S and still.value.timeout == SHORT_S
    canceled = client.cancel_task(task["id"])
    assert state_of(canceled) == "canceled"
    assert state_of(client.wait(task["id"])) == "canceled"
    with pytest.raises(TaskNotCancelable) as again:
        client.cancel_task(task["id"])
    assert again.value.code == -32002
    assert_no_open_stream(client)


def test_subscribe_follows_a_running_task_to_its_end(client: A2aClient) -> None:
    task = client.send_message("forever", return_immediately=True)
    events = client.subscribe(task["id"])
    first = next(events)
    assert event_kind(first) == "task" and first["id"] == task["id"]
    with ThreadPoolExecutor(1) as pool:
        canceled = pool.submit(client.cancel_task, task["id"])
        rest = list(events)
        assert state_of(canceled.result(TIMEOUT_S)) == "canceled"
    assert state_of(rest[-1]) == "canceled" and events.closed


def test_wait_returns_a_task_that_is_done_already(client: A2aClient) -> None:
    task = client.send_message("task x")
    assert state_of(client.wait(task["id"], timeout=TIMEOUT_S)) == "completed"
    asked = client.send_message("ask")
    assert state_of(client.wait(asked["id"], timeout=TIMEOUT_S)) == "input-required"


def test_a_failed_task_is_an_answer_not_an_error(client: A2aClient) -> None:
    task = client.send_message("fail")
    assert state_of(task) == "failed" and text_of(task) == "it went wrong"
    assert state_of(list(client.stream_message("fail"))[-1]) == "failed"


def test_list_tasks_takes_filters_in_either_spelling(client: A2aClient) -> None:
    task = client.send_message("task listed")
    page = client.list_tasks(context_id=task["contextId"])
    assert [t["id"] for t in page["tasks"]] == [task["id"]] and page["nextPageToken"] == ""
    assert client.list_tasks(contextId=task["contextId"], status="completed")["tasks"][0]["id"] == task["id"]
    assert client.list_tasks(context_id=task["contextId"], status="TASK_STATE_WORKING")["tasks"] == []


# -- errors ------------------------------------------------------------------------------------


def test_a2as_error_codes_become_their_classes_with_code_and_data(client: A2aClient) -> None:
    with pytest.raises(TaskNotFound) as missing:
        client.get_task("no-such-task")
    assert isinstance(missing.value, RemoteError) and isinstance(missing.value, LookupError)
    assert missing.value.code == -32001 and missing.value.data[0]["reason"] == "TASK_NOT_FOUND"
    with pytest.raises(TaskNotFound):
        client.cancel_task("no-such-task")
    with pytest.raises(TaskNotFound):
        client.send_message("hi", task_id="no-such-task")
    events = client.subscribe("no-such-task")
    with pytest.raises(TaskNotFound):
        next(events)
    assert events.closed
    done = client.send_message("task y")
    with pytest.raises(UnsupportedOperation) as ended:
        list(client.subscribe(done["id"]))
    assert ended.value.code == -32004
    assert_no_open_stream(client)


# -- streams: closing, dropping, many at once --------------------------------------------------


def test_closing_a_stream_early_withdraws_its_request(client: A2aClient) -> None:
    events = client.stream_message("forever")
    assert event_kind(next(events)) == "task"
    assert open_streams(client) == 1
    events.close()
    assert open_streams(client) == 0 and events.closed
    with pytest.raises(StopIteration):
        next(events)
    assert client.send_message("still fine")["parts"] == [{"text": "echo: still fine"}]


def test_streams_closed_early_free_the_transports_threads(client: A2aClient) -> None:
    # Each stream is read on one of the transport's pool threads: were a closed one's thread
    # not freed, the stream after the last free thread would wait for one until its timeout.
    for _ in range(DEFAULT_MAX_WORKERS + 1):
        events = client.stream_message("forever", timeout=TIMEOUT_S)
        assert event_kind(next(events)) == "task"
        events.close()
    assert_no_open_stream(client)


def test_leaving_a_for_early_and_dropping_the_stream_closes_it(client: A2aClient) -> None:
    for event in client.stream_message("forever"):
        assert event_kind(event) == "task"
        break
    gc.collect()
    assert_no_open_stream(client)


def test_closing_the_client_fails_a_running_stream_at_once(agent: AgentProcess) -> None:
    a2a = A2aClient(agent.url, default_timeout=TIMEOUT_S)
    events = a2a.stream_message("forever")
    next(events)
    closer = threading.Timer(0.2, a2a.close)
    closer.start()
    started = time.monotonic()
    with pytest.raises(TransportClosed):
        list(events)
    assert time.monotonic() - started < LATE_S
    closer.join()
    with pytest.raises(TransportClosed):
        a2a.send_message("after")
    a2a.close()  # idempotent
    assert_no_open_stream(a2a)


def test_many_threads_share_one_client(client: A2aClient) -> None:
    def one(number: int) -> str:
        if number % 2:
            return text_of(client.send_message(f"task {number}"))
        events = list(client.stream_message(f"steps {number % 4 + 1}"))
        return text_of(next(e for e in events if event_kind(e) == "artifact-update"))

    with ThreadPoolExecutor(16) as pool:
        answers = list(pool.map(one, range(32)))
    assert answers == [f"done: {n}" if n % 2 else f"done: {n % 4 + 1}" for n in range(32)]
    assert_no_open_stream(client)


# -- a server that dies mid-stream -------------------------------------------------------------


def test_a_server_that_dies_mid_stream_raises_a_clear_error_and_leaves_nothing() -> None:
    with AgentProcess() as dying, A2aClient(dying.url, default_timeout=TIMEOUT_S) as a2a:
        events = a2a.stream_message("die")
        got = [next(events), next(events)]
        assert [state_of(e) for e in got] == ["submitted", "working"]
        started = time.monotonic()
        with pytest.raises(HttpConnectionError) as broke:
            next(events)
        assert time.monotonic() - started < DIE_WAIT_S
        assert "/rpc: the SSE stream broke" in broke.value.message
        assert dying.wait_exit(DIE_WAIT_S) == 3
        assert_no_open_stream(a2a)
        with pytest.raises(HttpConnectionError):
            a2a.send_message("anyone?")


#: How long the dying agent may take to die (it waits 0.2 s for its first event to go out).
DIE_WAIT_S = 10.0


# -- v0.3 agents -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "flags", [("--version", "0.3"), ("--version", "0.3", "--legacy-card")], ids=["sdk-card", "v03-card"]
)
def test_a_v03_agent_is_told_apart_by_its_card_and_spoken_to_in_v03(flags: Any) -> None:
    with AgentProcess(*flags) as old, A2aClient(old.url, default_timeout=TIMEOUT_S) as a2a:
        reply = a2a.send_message("hello")
        assert a2a.protocol_version == "0.3"
        assert reply["kind"] == "message" and reply["role"] == "agent" and text_of(reply) == "echo: hello"
        task = a2a.send_message("task old")
        assert task["kind"] == "task" and task["status"]["state"] == "completed" and text_of(task) == "done: old"
        events = list(a2a.stream_message("steps 2"))
        assert events[0]["kind"] == "task" and events[-1]["status"]["state"] == "completed"
        assert [text_of(e) for e in events if e["kind"] == "artifact-update"] == ["done: 2"]
        asked = list(a2a.stream_message("ask"))[-1]
        assert state_of(asked) == "input-required"
        done = a2a.send_message("blue", task_id=asked["taskId"])
        assert text_of(done) == "you chose: blue"
        running = a2a.send_message("forever", return_immediately=True)
        with pytest.raises(RequestTimeout):
            a2a.wait(running["id"], timeout=SHORT_S)
        assert state_of(a2a.cancel_task(running["id"])) == "canceled"
        assert state_of(a2a.get_task(running["id"])) == "canceled"
        with pytest.raises(TaskNotFound):
            a2a.get_task("no-such-task")
        with pytest.raises(MethodNotFound):
            a2a.list_tasks()
        posts = [r for r in seen(old.url) if r["method"] == "POST"]
        assert posts and all(r["headers"]["a2a-version"] == "0.3" for r in posts)
        assert_no_open_stream(a2a)


def test_an_agent_that_cannot_stream_is_waited_for_by_polling() -> None:
    with AgentProcess("--no-streaming") as agent, A2aClient(agent.url, default_timeout=TIMEOUT_S) as a2a:
        task = a2a.send_message("steps 5", return_immediately=True)
        assert state_of(a2a.wait(task["id"])) == "completed"
        assert_no_open_stream(a2a)


# -- credentials go only where the caller trusts -----------------------------------------------


SECRET_HEADERS = ("authorization", "x-api-key", "x-token")


def _credentials(**extra: Any) -> Dict[str, Any]:
    return {
        "headers": {"X-Api-Key": "key-1"},
        "auth": requests.auth.HTTPBasicAuth("user", "password"),
        "header_provider": lambda: {"X-Token": "token-1"},
        "default_timeout": TIMEOUT_S,
        **extra,
    }


def _secrets(record: Dict[str, Any]) -> List[str]:
    return sorted(name for name in SECRET_HEADERS if name in record["headers"])


def test_credentials_go_to_the_cards_own_origin(agent: AgentProcess) -> None:
    before = len(seen(agent.url))
    with A2aClient(agent.url, **_credentials()) as a2a:
        a2a.send_message("hello")
        list(a2a.stream_message("task s"))
    records = seen(agent.url)[before:]
    assert [r["method"] for r in records] == ["GET", "POST", "POST"]
    assert all(_secrets(r) == list(SECRET_HEADERS) for r in records)
    assert records[1]["headers"]["x-api-key"] == "key-1" and records[1]["headers"]["x-token"] == "token-1"


def test_an_interface_on_another_origin_gets_no_credentials() -> None:
    with AgentProcess("--split") as split, A2aClient(split.url, **_credentials()) as a2a:
        assert split.interface is not None and split.interface != split.url
        assert text_of(a2a.send_message("hello")) == "echo: hello"
        assert state_of(list(a2a.stream_message("task s"))[-1]) == "completed"
        assert a2a.interface_url == f"{split.interface}/rpc"
        card_port, interface_port = seen(split.url), seen(split.interface)
        assert [r["method"] for r in card_port] == ["GET"] and _secrets(card_port[0]) == list(SECRET_HEADERS)
        assert [r["method"] for r in interface_port] == ["POST", "POST"]
        assert all(_secrets(r) == [] for r in interface_port)
        assert all(r["headers"]["a2a-version"] == "1.0" for r in interface_port)


def test_an_allowed_origin_gets_the_credentials() -> None:
    with AgentProcess("--split") as split:
        assert split.interface is not None
        with A2aClient(split.url, **_credentials(allow_origins=split.interface + "/any/path")) as a2a:
            a2a.send_message("hello")
        assert [_secrets(r) for r in seen(split.interface)] == [list(SECRET_HEADERS)]
