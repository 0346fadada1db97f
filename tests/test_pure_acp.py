"""ACP turns, cancellation and permissions, in memory: the pure tier's ACP tests.

The agent is a ``JsonRpcClient`` on the other end of a ``MemoryTransport``
pair whose request handlers play a scripted agent (``ScriptedAgent``): a
prompt that is a JSON list runs its steps (``say``, ``chunks``, ``tool``,
``permission``, ``read``, ``write``, ``await_cancel``, ``stop``), each update a ``session/update``
notification sent before the prompt's answer, a permission a
``session/request_permission`` request to the client, a read or a write
an ``fs/*`` request the client serves confined to its ``fs_root``.  tests/test_acp.py
keeps the same behaviours against an agent written on the official ACP SDK,
as a real child process.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Tuple

import pytest

from jsonrpc_threads import JsonRpcClient
from jsonrpc_threads.acp import AcpClient
from jsonrpc_threads.errors import InvalidParams, JsonRpcError
from jsonrpc_threads.testing import MemoryTransport

WAIT_S = 10.0
OPTIONS = [["allow", "allow_once"], ["always", "allow_always"], ["never", "reject_always"], ["deny", "reject_once"]]


class ScriptedAgent:
    """The agent's side of one connection: its handlers run on the agent client's handler threads."""

    def __init__(self) -> None:
        self.transport, peer = MemoryTransport.pair("acp-agent")
        self.rpc = JsonRpcClient(peer, default_timeout=WAIT_S, handler_workers=8)
        self._lock = threading.Lock()
        self._cancelled: Dict[str, threading.Event] = {}
        self._sessions = 0
        for method, handler in (
            ("initialize", self.initialize),
            ("session/new", self.new_session),
            ("session/prompt", self.prompt),
        ):
            self.rpc.on_request(method, handler)
        self.rpc.on_notification("session/cancel", self.cancel)

    def close(self) -> None:
        self.rpc.close()

    def initialize(self, params: Dict[str, Any]) -> Dict[str, Any]:
        return {
            "protocolVersion": 1,
            "agentCapabilities": {"loadSession": False},
            "agentInfo": {"name": "scripted-agent", "version": "1.0.0"},
            "authMethods": [],
            "clientSaw": params.get("clientCapabilities"),
        }

    def new_session(self, params: Dict[str, Any]) -> Dict[str, Any]:
        with self._lock:
            self._sessions += 1
            session_id = f"s{self._sessions}"
            self._cancelled[session_id] = threading.Event()
        return {"sessionId": session_id}

    def cancel(self, params: Dict[str, Any]) -> None:
        session_id = params["sessionId"]
        with self._lock:
            event = self._cancelled.setdefault(session_id, threading.Event())
        self.say(session_id, "cancel received")
        event.set()

    def say(self, session_id: str, text: str) -> None:
        update = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}
        self.rpc.notify("session/update", {"sessionId": session_id, "update": update})

    def prompt(self, params: Dict[str, Any]) -> Dict[str, Any]:
        session_id = params["sessionId"]
        with self._lock:
            cancelled = self._cancelled.setdefault(session_id, threading.Event())
        cancelled.clear()
        text = "".join(block.get("text", "") for block in params["prompt"])
        try:
            steps = json.loads(text)
        except ValueError:
            steps = None
        if not isinstance(steps, list):
            self.say(session_id, f"echo: {text}")
            return {"stopReason": "end_turn"}
        for step in steps:
            if cancelled.is_set():
                return {"stopReason": "cancelled"}
            if "stop" in step:
                return {"stopReason": step["stop"]}
            self.run(session_id, step, cancelled)
        return {"stopReason": "cancelled" if cancelled.is_set() else "end_turn"}

    def run(self, session_id: str, step: Dict[str, Any], cancelled: threading.Event) -> None:
        if "say" in step:
            self.say(session_id, step["say"])
        elif "chunks" in step:
            for i in range(step["chunks"]):
                self.say(session_id, f"{i} ")
        elif "tool" in step:
            call = {"sessionUpdate": "tool_call", "toolCallId": step["tool"], "title": "a tool", "kind": "read"}
            done = {"sessionUpdate": "tool_call_update", "toolCallId": step["tool"], "status": "completed"}
            for update in (call, done):
                self.rpc.notify("session/update", {"sessionId": session_id, "update": update})
        elif "permission" in step:
            options = [{"optionId": i, "name": i, "kind": kind} for i, kind in step["permission"]]
            tool_call = {"toolCallId": "call_1", "title": "edit"}
            answer = self.rpc.call(
                "session/request_permission", {"sessionId": session_id, "toolCall": tool_call, "options": options}
            )
            self.say(session_id, "permission: " + json.dumps(answer["outcome"]))
        elif "read" in step or "write" in step:
            what = "read" if "read" in step else "write"
            method = "fs/read_text_file" if what == "read" else "fs/write_text_file"
            try:
                answer: Any = self.rpc.call(method, {"sessionId": session_id, **step[what]})
            except JsonRpcError as exc:
                answer = {"error": exc.code}
            self.say(session_id, f"{what}: " + json.dumps(answer))
        elif "await_cancel" in step:
            cancelled.wait(WAIT_S)
        else:
            raise InvalidParams(f"unknown step {step!r}")


@pytest.fixture
def agents() -> Iterator[List[ScriptedAgent]]:
    made: List[ScriptedAgent] = []
    yield made
    for agent in made:
        agent.close()


def connect(agents: List[ScriptedAgent], **options: Any) -> AcpClient:
    agent = ScriptedAgent()
    agents.append(agent)
    options.setdefault("default_timeout", WAIT_S)
    return AcpClient(agent.transport, **options)


def script(*steps: Dict[str, Any]) -> str:
    return json.dumps(list(steps))


def texts(updates: List[Dict[str, Any]]) -> List[str]:
    return [u["content"]["text"] for u in updates if u.get("sessionUpdate") == "agent_message_chunk"]


def said(result: Dict[str, Any], prefix: str) -> Any:
    for text in texts(result["updates"]):
        if text.startswith(prefix):
            return json.loads(text[len(prefix) :])
    raise AssertionError(f"the agent never said {prefix!r}: {texts(result['updates'])}")


class Collector:
    """An on_update that records what it got and on which thread, and can signal a given text."""

    def __init__(self, signal_on: Optional[str] = None) -> None:
        self.updates: List[Dict[str, Any]] = []
        self.threads: List[str] = []
        self.signal_on = signal_on
        self.seen = threading.Event()

    def __call__(self, update: Dict[str, Any]) -> None:
        self.updates.append(update)
        self.threads.append(threading.current_thread().name)
        if self.signal_on is not None and texts([update]) == [self.signal_on]:
            self.seen.set()


# -- the handshake -------------------------------------------------------------------------------------


def test_the_handshake_declares_only_what_is_served(agents: List[ScriptedAgent], tmp_path: Any) -> None:
    with connect(agents) as agent:
        assert agent.protocol_version == 1
        assert agent.agent_info == {"name": "scripted-agent", "version": "1.0.0"}
        saw = agent.initialize_result["clientSaw"]
        assert saw["fs"] == {"readTextFile": False, "writeTextFile": False} and saw["terminal"] is False
    with connect(agents, fs_root=tmp_path, fs_write=True, terminal=True) as agent:
        saw = agent.initialize_result["clientSaw"]
        assert saw["fs"] == {"readTextFile": True, "writeTextFile": True} and saw["terminal"] is True


# -- prompt turns ----------------------------------------------------------------------------------------


def test_a_turn_streams_its_updates_in_order_on_a_worker_before_prompt_returns(agents: List[ScriptedAgent]) -> None:
    collector = Collector()
    with connect(agents) as agent:
        session = agent.new_session()
        result = agent.prompt(session, script({"chunks": 20}, {"tool": "call_1"}), on_update=collector)
    assert result["stopReason"] == "end_turn"
    assert result["updates"] == collector.updates
    assert texts(result["updates"]) == [f"{i} " for i in range(20)]
    assert [u["sessionUpdate"] for u in result["updates"][20:]] == ["tool_call", "tool_call_update"]
    caller = threading.current_thread().name
    assert all(name != caller and "reader" not in name for name in collector.threads)


def test_a_plain_text_prompt_is_one_text_block(agents: List[ScriptedAgent]) -> None:
    with connect(agents) as agent:
        session = agent.new_session()
        assert texts(agent.prompt(session, "hello")["updates"]) == ["echo: hello"]
        blocks = [{"type": "text", "text": "hel"}, {"type": "text", "text": "lo"}]
        assert texts(agent.prompt(session, blocks)["updates"]) == ["echo: hello"]
        with pytest.raises(TypeError):
            agent.prompt(session, {"type": "text", "text": "a dict is not a list"})  # type: ignore[arg-type]


def test_the_agents_stop_reason_is_returned(agents: List[ScriptedAgent]) -> None:
    with connect(agents) as agent:
        session = agent.new_session()
        assert agent.prompt(session, script({"say": "so far"}, {"stop": "max_tokens"}))["stopReason"] == "max_tokens"


def test_sessions_prompted_from_many_threads_at_once_each_get_their_own_updates(agents: List[ScriptedAgent]) -> None:
    results: Dict[int, Dict[str, Any]] = {}
    errors: List[BaseException] = []
    with connect(agents) as agent:
        sessions = [agent.new_session() for _ in range(8)]

        def turn(number: int) -> None:
            try:
                steps = ({"say": f"s{number}-{i}"} for i in range(30))
                results[number] = agent.prompt(sessions[number], script(*steps))
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=turn, args=(n,)) for n in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(WAIT_S)
    assert not errors and len(results) == 8
    for number, result in results.items():
        assert texts(result["updates"]) == [f"s{number}-{i}" for i in range(30)]


def test_one_turn_at_a_time_per_session(agents: List[ScriptedAgent]) -> None:
    with connect(agents) as agent:
        session = agent.new_session()
        collector = Collector(signal_on="started")
        done: Dict[str, Any] = {}
        steps = script({"say": "started"}, {"await_cancel": True})
        thread = threading.Thread(target=lambda: done.update(agent.prompt(session, steps, on_update=collector)))
        thread.start()
        try:
            assert collector.seen.wait(WAIT_S)
            with pytest.raises(RuntimeError, match="already has a session/prompt running"):
                agent.prompt(session, "a second turn at once")
        finally:
            agent.cancel(session)
            thread.join(WAIT_S)
        assert done["stopReason"] == "cancelled"


# -- cancel ----------------------------------------------------------------------------------------------


def test_cancel_mid_turn_returns_the_agents_cancelled_stop_reason(agents: List[ScriptedAgent]) -> None:
    collector = Collector(signal_on="working")
    with connect(agents) as agent:
        session = agent.new_session()
        canceller = threading.Thread(target=lambda: collector.seen.wait(WAIT_S) and agent.cancel(session))
        canceller.start()
        begun = time.monotonic()
        steps = script({"say": "working"}, {"await_cancel": True}, {"say": "never"})
        result = agent.prompt(session, steps, on_update=collector)
        canceller.join(WAIT_S)
    assert result["stopReason"] == "cancelled"
    assert time.monotonic() - begun < WAIT_S
    assert "never" not in texts(result["updates"])
    assert "cancel received" in texts(result["updates"])


def test_cancel_answers_a_pending_permission_request_cancelled(agents: List[ScriptedAgent]) -> None:
    asked = threading.Event()
    person = threading.Event()  # a person who never decides (until the test ends)

    def on_permission(params: Dict[str, Any]) -> Optional[str]:
        asked.set()
        person.wait(WAIT_S)
        return "allow"

    with connect(agents, on_permission=on_permission) as agent:
        session = agent.new_session()
        canceller = threading.Thread(target=lambda: asked.wait(WAIT_S) and agent.cancel(session))
        canceller.start()
        try:
            steps = script({"permission": [["allow", "allow_once"], ["deny", "reject_once"]]}, {"say": "after"})
            result = agent.prompt(session, steps)
        finally:
            person.set()
            canceller.join(WAIT_S)
    assert said(result, "permission: ")["outcome"] == "cancelled"
    assert result["stopReason"] == "cancelled"


# -- permission --------------------------------------------------------------------------------------------


def ask(agents: List[ScriptedAgent], on_permission: Any, options: Any = OPTIONS) -> Dict[str, Any]:
    with connect(agents, on_permission=on_permission) as agent:
        session = agent.new_session()
        result = agent.prompt(session, script({"permission": options}))
    outcome: Dict[str, Any] = said(result, "permission: ")
    return outcome


def test_permission_granted_by_the_callback_with_the_request_it_saw(agents: List[ScriptedAgent]) -> None:
    seen: List[Dict[str, Any]] = []
    outcome = ask(agents, lambda params: seen.append(params) or "always")
    assert outcome["outcome"] == "selected" and outcome["optionId"] == "always"
    assert [o["optionId"] for o in seen[0]["options"]] == ["allow", "always", "never", "deny"]
    assert seen[0]["toolCall"]["toolCallId"] == "call_1"


def test_without_a_callback_the_reject_once_option_is_chosen(agents: List[ScriptedAgent]) -> None:
    assert ask(agents, None)["optionId"] == "deny"
    assert ask(agents, None, [["allow", "allow_once"], ["never", "reject_always"]])["optionId"] == "never"


def test_without_a_callback_or_a_reject_option_the_answer_is_cancelled(agents: List[ScriptedAgent]) -> None:
    assert ask(agents, None, [["allow", "allow_once"]])["outcome"] == "cancelled"


@pytest.mark.parametrize(
    ("decision", "logged"),
    [
        (None, None),
        ("not-offered", "did not offer"),
        (RuntimeError("the dialog crashed"), "on_permission raised"),
        (SystemExit(2), "on_permission raised"),
        (KeyboardInterrupt(), "on_permission raised"),
    ],
)
def test_a_callback_that_refuses_raises_or_names_an_unknown_option_answers_cancelled(
    agents: List[ScriptedAgent], decision: Any, logged: Optional[str], caplog: pytest.LogCaptureFixture
) -> None:
    def on_permission(params: Dict[str, Any]) -> Optional[str]:
        if isinstance(decision, BaseException):
            raise decision
        return decision  # type: ignore[no-any-return]

    with caplog.at_level(logging.WARNING, logger="jsonrpc_threads.acp"):
        assert ask(agents, on_permission)["outcome"] == "cancelled"
    if logged is not None:
        assert any(logged in record.getMessage() for record in caplog.records)


def test_a_permission_callback_may_call_back_into_the_client(agents: List[ScriptedAgent]) -> None:
    clients: List[AcpClient] = []

    def on_permission(params: Dict[str, Any]) -> Optional[str]:
        other = clients[0].new_session()  # a request of the client, from the callback's thread
        return "allow" if other else None

    with connect(agents, on_permission=on_permission) as agent:
        clients.append(agent)
        session = agent.new_session()
        result = agent.prompt(session, script({"permission": OPTIONS}))
    assert said(result, "permission: ")["optionId"] == "allow"


# -- files, confined to fs_root ------------------------------------------------------------------------------

SECRET = "the secret outside the root\n"


@pytest.fixture
def places(tmp_path: Path) -> Tuple[Path, Path]:
    """``root`` (the agent's) with a file, and ``outside`` beside it with a secret and links to it."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "src").mkdir(parents=True)
    outside.mkdir()
    (root / "src" / "main.py").write_text("line 1\nline 2\nline 3\n", encoding="utf-8")
    (outside / "secret.txt").write_text(SECRET, encoding="utf-8")
    (root / "link-to-secret").symlink_to(outside / "secret.txt")
    (root / "link-to-outside").symlink_to(outside, target_is_directory=True)
    return root, outside


def files_turn(agents: List[ScriptedAgent], root: Path, *steps: Dict[str, Any], **options: Any) -> List[str]:
    with connect(agents, fs_root=root, **options) as agent:
        session = agent.new_session(root)
        return texts(agent.prompt(session, script(*steps))["updates"])


def test_reads_inside_the_root_are_served(agents: List[ScriptedAgent], places: Tuple[Path, Path]) -> None:
    root, _ = places
    said_ = files_turn(agents, root, {"read": {"path": str(root / "src" / "main.py"), "line": 2, "limit": 1}})
    assert said_ == ["read: " + json.dumps({"content": "line 2\n"})]


@pytest.mark.parametrize(
    "path",
    [
        "{outside}/secret.txt",
        "{root}/src/../../outside/secret.txt",
        "{root}/link-to-secret",
        "{root}/link-to-outside/secret.txt",
        "src/main.py",
    ],
    ids=["outside", "dot-dot", "link-to-a-file", "link-through-a-directory", "relative"],
)
def test_reads_that_lead_out_of_the_root_are_refused(
    agents: List[ScriptedAgent], places: Tuple[Path, Path], path: str
) -> None:
    root, outside = places
    said_ = files_turn(agents, root, {"read": {"path": path.format(root=root, outside=outside)}})
    assert len(said_) == 1 and said_[0].startswith('read: {"error": ')
    assert "secret" not in said_[0]


def test_writes_need_fs_write_and_stay_in_the_root(agents: List[ScriptedAgent], places: Tuple[Path, Path]) -> None:
    root, outside = places
    inside = {"write": {"path": str(root / "new" / "file.txt"), "content": "made\n"}}
    refused = files_turn(agents, root, inside)
    assert refused[0].startswith('write: {"error": ') and not (root / "new").exists()
    out = {"write": {"path": str(root / "link-to-secret"), "content": "overwritten"}}
    said_ = files_turn(agents, root, inside, out, fs_write=True)
    assert said_[0] == "write: {}" and (root / "new" / "file.txt").read_text(encoding="utf-8") == "made\n"
    assert said_[1].startswith('write: {"error": ')
    assert (outside / "secret.txt").read_text(encoding="utf-8") == SECRET
