"""AcpClient against a real agent written with the official ACP Python SDK (tests/peers/acp_agent.py).

Each test starts the agent as a child process and drives it as an editor would:
the handshake and what it declares, sessions, prompt turns whose updates
stream in order, permission requests (granted, refused, a callback that
raises), cancel mid-turn, and the agent's failures: one that hangs (the prompt
times out, ``session/cancel`` goes out, nothing is left running), one that exits
mid-turn, one that floods updates, one that prints log lines on stdout.  The
file and terminal services have their own modules (test_acp_files.py,
test_acp_terminals.py).
"""

from __future__ import annotations

import importlib.util
import json
import logging
import threading
import time
from typing import Any, Dict, List, Optional

import pytest

from jsonrpc_threads import RemoteError, RequestTimeout, TransportClosed
from jsonrpc_threads.acp import AcpClient
from jsonrpc_threads.errors import MethodNotFound, ProtocolError

from .conftest import peer_command

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("acp") is None,
    reason="the official ACP SDK (agent-client-protocol, Python 3.10+) is not installed",
)

#: Seconds any one call may take (the agent is a Python process that imports pydantic).
TIMEOUT_S = 30.0
#: A turn of six chunks takes about a millisecond; one that takes this long waited for nothing.
LATE_TURN_S = 0.04


def agent_command(*flags: str) -> List[str]:
    return peer_command("acp_agent", *flags)


def script(*steps: Dict[str, Any]) -> str:
    """A prompt the scripted agent runs step by step."""
    return json.dumps(list(steps))


def texts(updates: List[Dict[str, Any]]) -> List[str]:
    """The text of every agent_message_chunk, in order."""
    return [u["content"]["text"] for u in updates if u.get("sessionUpdate") == "agent_message_chunk"]


def said(result: Dict[str, Any], prefix: str) -> Any:
    """The JSON the agent said after ``prefix`` (e.g. ``"permission: "``)."""
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


# -- the handshake -----------------------------------------------------------------------------


def test_the_handshake_agrees_on_version_1_and_declares_only_what_is_served(tmp_path: Any) -> None:
    with AcpClient(agent_command("--auth"), default_timeout=TIMEOUT_S) as agent:
        assert agent.protocol_version == 1
        assert agent.agent_info == {"name": "scripted-agent", "version": "1.0.0"}
        assert agent.agent_capabilities["loadSession"] is False
        assert agent.auth_methods == [{"id": "token", "name": "Token"}]
        saw = agent.initialize_result["clientSaw"]
        assert saw["fs"] == {"readTextFile": False, "writeTextFile": False}
        assert saw["terminal"] is False
    served = {"fs_root": tmp_path, "fs_write": True, "terminal": True}
    with AcpClient(agent_command(), default_timeout=TIMEOUT_S, **served) as agent:
        saw = agent.initialize_result["clientSaw"]
        assert saw["fs"] == {"readTextFile": True, "writeTextFile": True}
        assert saw["terminal"] is True
    with AcpClient(agent_command(), default_timeout=TIMEOUT_S, fs_root=tmp_path) as agent:
        assert agent.initialize_result["clientSaw"]["fs"] == {"readTextFile": True, "writeTextFile": False}


def test_an_agent_of_another_protocol_version_is_refused_and_reclaimed() -> None:
    client = AcpClient(agent_command("--version", "2"), default_timeout=TIMEOUT_S)
    with pytest.raises(ProtocolError, match="protocol version 2"), client:
        pass
    assert client.closed
    with pytest.raises(TransportClosed):  # a closed client's calls fail as closed
        client.new_session()


def test_the_handshake_runs_once_for_concurrent_first_calls() -> None:
    agent = AcpClient(agent_command(), default_timeout=TIMEOUT_S)
    try:
        sessions: List[str] = []
        errors: List[BaseException] = []

        def start() -> None:
            try:
                sessions.append(agent.new_session())
            except BaseException as exc:  # reported below
                errors.append(exc)

        threads = [threading.Thread(target=start) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(TIMEOUT_S)
        assert not errors
        assert len(set(sessions)) == 8
        assert agent.protocol_version == 1
        assert agent.rpc.stats()["calls"] == 1 + 8  # one initialize
    finally:
        agent.close()


def test_authenticate_then_a_session() -> None:
    with AcpClient(agent_command("--auth"), default_timeout=TIMEOUT_S) as agent:
        with pytest.raises(RemoteError) as refused:
            agent.new_session()
        assert refused.value.code == -32000  # ACP: authentication required
        assert agent.authenticate("token") == {}
        assert agent.new_session()


# -- sessions ------------------------------------------------------------------------------------


def test_new_session_sends_its_cwd_and_mcp_servers(tmp_path: Any) -> None:
    outside: List[Any] = []
    got = threading.Event()

    def on_update(session_id: str, update: Dict[str, Any]) -> None:
        outside.append((session_id, update))
        got.set()

    with AcpClient(agent_command(), cwd=tmp_path, on_update=on_update, default_timeout=TIMEOUT_S) as agent:
        servers = {"files": {"command": "mcp-files", "args": ["--root", "/x"], "env": {"TOKEN": "t"}}}
        session = agent.new_session(mcp_servers=servers)
        assert got.wait(TIMEOUT_S)
        ((session_id, update),) = outside
        assert session_id == session
        told = json.loads(update["content"]["text"])
        assert told["cwd"] == str(tmp_path)
        assert told["mcpServers"] == [
            {
                "name": "files",
                "command": "mcp-files",
                "args": ["--root", "/x"],
                "env": [{"name": "TOKEN", "value": "t"}],
            }
        ]
        assert agent.sessions[session]["sessionId"] == session
        assert agent.sessions[session]["cwd"] == str(tmp_path)


def test_load_session_returns_the_replayed_history_in_order() -> None:
    with AcpClient(agent_command("--load"), default_timeout=TIMEOUT_S) as agent:
        session = agent.new_session()
        agent.prompt(session, script({"say": "one"}, {"say": "two"}))
        replayed = agent.load_session(session)
        kinds = [u["sessionUpdate"] for u in replayed]
        assert kinds == ["user_message_chunk", "agent_message_chunk", "agent_message_chunk"]
        assert texts(replayed) == ["one", "two"]


def test_load_session_is_not_sent_to_an_agent_that_does_not_offer_it() -> None:
    with AcpClient(agent_command(), default_timeout=TIMEOUT_S) as agent:
        with pytest.raises(MethodNotFound, match="loadSession"):
            agent.load_session("some-session")
        assert agent.rpc.stats()["calls"] == 1  # initialize only


def test_set_mode_and_the_update_it_causes_outside_a_turn() -> None:
    changes: List[Dict[str, Any]] = []
    changed = threading.Event()

    def on_update(session_id: str, update: Dict[str, Any]) -> None:
        if update["sessionUpdate"] == "current_mode_update":
            changes.append(update)
            changed.set()

    with AcpClient(agent_command("--modes"), on_update=on_update, default_timeout=TIMEOUT_S) as agent:
        session = agent.new_session()
        assert [m["id"] for m in agent.sessions[session]["modes"]["availableModes"]] == ["ask", "code"]
        assert agent.set_mode(session, "code") == {}
        assert changed.wait(TIMEOUT_S)
        assert changes == [{"sessionUpdate": "current_mode_update", "currentModeId": "code"}]


# -- prompt turns --------------------------------------------------------------------------------


def test_a_turn_streams_its_updates_in_order_on_a_worker_before_prompt_returns() -> None:
    collector = Collector()
    with AcpClient(agent_command(), default_timeout=TIMEOUT_S) as agent:
        session = agent.new_session()
        result = agent.prompt(session, script({"chunks": 20}, {"tool": "call_1"}), on_update=collector)
    assert result["stopReason"] == "end_turn"
    assert result["updates"] == collector.updates  # all of them delivered before prompt() returned
    assert texts(result["updates"]) == [f"{i} " for i in range(20)]
    assert [u["sessionUpdate"] for u in result["updates"][20:]] == ["tool_call", "tool_call_update"]
    caller = threading.current_thread().name
    assert all(name != caller and "reader" not in name for name in collector.threads)


def test_a_plain_text_prompt_is_one_text_block() -> None:
    with AcpClient(agent_command(), default_timeout=TIMEOUT_S) as agent:
        session = agent.new_session()
        assert texts(agent.prompt(session, "hello")["updates"]) == ["echo: hello"]
        blocks = [{"type": "text", "text": "hel"}, {"type": "text", "text": "lo"}]
        assert texts(agent.prompt(session, blocks)["updates"]) == ["echo: hello"]
        with pytest.raises(TypeError):
            agent.prompt(session, {"type": "text", "text": "a dict is not a list"})  # type: ignore[arg-type]


def test_a_flood_of_updates_is_delivered_whole_and_in_order_before_prompt_returns() -> None:
    count = 3000
    collector = Collector()
    with AcpClient(agent_command(), default_timeout=TIMEOUT_S) as agent:
        session = agent.new_session()
        result = agent.prompt(session, script({"flood": count}), on_update=collector)
    assert len(collector.updates) == count
    assert "".join(texts(collector.updates)) == "".join(f"{i}," for i in range(count))
    assert result["updates"] == collector.updates


def test_a_turn_whose_updates_are_not_delivered_in_time_times_out_and_keeps_them() -> None:
    """Issue #47, item 3: a slow on_update never lets prompt() claim a finished turn.

    Before: the agent's answer, held behind the updates still being delivered,
    was released at the deadline; prompt() returned end_turn with one update of
    forty delivered, and the other 39 went to the client-wide on_update.
    """
    count = 40
    release = threading.Event()  # the callback is slow until the test says otherwise
    delivered: List[str] = []
    all_delivered = threading.Event()
    strays: List[Dict[str, Any]] = []
    cancel_received = threading.Event()

    def on_update(update: Dict[str, Any]) -> None:
        release.wait(TIMEOUT_S)
        delivered.extend(texts([update]))
        if len(delivered) == count:
            all_delivered.set()

    def on_stray(session_id: str, update: Dict[str, Any]) -> None:
        if texts([update]) == ["cancel received"]:
            cancel_received.set()
        else:
            strays.append(update)

    with AcpClient(agent_command(), on_update=on_stray, default_timeout=TIMEOUT_S) as agent:
        session = agent.new_session()
        started = time.monotonic()
        try:
            with pytest.raises(RequestTimeout) as timed_out:
                agent.prompt(session, script({"flood": count}), on_update=on_update, timeout=1.0)
            assert 1.0 <= time.monotonic() - started < 1.0 + 5.0
        finally:
            release.set()
        assert timed_out.value.method == "session/prompt"
        assert cancel_received.wait(TIMEOUT_S), "session/cancel never reached the agent"
        assert all_delivered.wait(TIMEOUT_S)
    flood = [f"{i}," for i in range(count)]
    assert delivered == flood  # every one to the turn's callback, in order
    assert not set(texts(strays)) & set(flood)  # none to another callback


def test_a_turn_started_from_inside_an_update_callback_gets_its_own_updates() -> None:
    nested: List[Dict[str, Any]] = []
    inner = Collector()

    with AcpClient(agent_command(), default_timeout=TIMEOUT_S) as agent:
        first, second = agent.new_session(), agent.new_session()

        def on_update(update: Dict[str, Any]) -> None:
            if texts([update]) == ["0 "]:
                nested.append(agent.prompt(second, "from a callback", on_update=inner, timeout=TIMEOUT_S))

        outer = agent.prompt(first, script({"chunks": 3}), on_update=on_update)
    assert texts(outer["updates"]) == ["0 ", "1 ", "2 "]
    assert len(nested) == 1
    assert texts(nested[0]["updates"]) == ["echo: from a callback"]
    assert inner.updates == nested[0]["updates"]  # delivered before the nested prompt returned


def test_an_update_callback_that_raises_is_logged_and_the_turn_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    def on_update(update: Dict[str, Any]) -> None:
        raise RuntimeError("a broken display")

    with AcpClient(agent_command(), default_timeout=TIMEOUT_S) as agent:
        session = agent.new_session()
        with caplog.at_level(logging.ERROR, logger="jsonrpc_threads.acp"):
            result = agent.prompt(session, script({"chunks": 3}), on_update=on_update)
    assert texts(result["updates"]) == ["0 ", "1 ", "2 "]
    assert sum("on_update raised" in r.getMessage() for r in caplog.records) == 3


def test_the_agents_stop_reason_is_returned() -> None:
    with AcpClient(agent_command(), default_timeout=TIMEOUT_S) as agent:
        session = agent.new_session()
        assert agent.prompt(session, script({"say": "so far"}, {"stop": "max_tokens"}))["stopReason"] == "max_tokens"


def test_sessions_prompted_from_many_threads_at_once_each_get_their_own_updates() -> None:
    results: Dict[int, Dict[str, Any]] = {}
    errors: List[BaseException] = []
    with AcpClient(agent_command(), default_timeout=TIMEOUT_S) as agent:
        sessions = [agent.new_session() for _ in range(8)]

        def turn(number: int) -> None:
            try:
                results[number] = agent.prompt(
                    sessions[number], script(*({"say": f"s{number}-{i}"} for i in range(30)))
                )
            except BaseException as exc:  # reported below
                errors.append(exc)

        threads = [threading.Thread(target=turn, args=(n,)) for n in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(TIMEOUT_S)
    assert not errors
    for number, result in results.items():
        assert texts(result["updates"]) == [f"s{number}-{i}" for i in range(30)]


def test_one_turn_at_a_time_per_session() -> None:
    with AcpClient(agent_command(), default_timeout=TIMEOUT_S) as agent:
        session = agent.new_session()
        collector = Collector(signal_on="started")
        done: Dict[str, Any] = {}
        thread = threading.Thread(
            target=lambda: done.update(
                agent.prompt(session, script({"say": "started"}, {"await_cancel": True}), on_update=collector)
            )
        )
        thread.start()
        try:
            assert collector.seen.wait(TIMEOUT_S)
            with pytest.raises(RuntimeError, match="already has a session/prompt running"):
                agent.prompt(session, "a second turn at once")
        finally:
            agent.cancel(session)
            thread.join(TIMEOUT_S)
        assert done["stopReason"] == "cancelled"


# -- cancel ------------------------------------------------------------------------------------------


def test_cancel_mid_turn_returns_the_agents_cancelled_stop_reason() -> None:
    collector = Collector(signal_on="working")
    with AcpClient(agent_command(), default_timeout=TIMEOUT_S) as agent:
        session = agent.new_session()
        canceller = threading.Thread(target=lambda: collector.seen.wait(TIMEOUT_S) and agent.cancel(session))
        canceller.start()
        started = time.monotonic()
        result = agent.prompt(session, script({"say": "working"}, {"sleep": 60}, {"say": "never"}), on_update=collector)
        canceller.join(TIMEOUT_S)
    assert result["stopReason"] == "cancelled"
    assert time.monotonic() - started < TIMEOUT_S
    assert "never" not in texts(result["updates"])
    assert "cancel received" in texts(result["updates"])  # sent before the answer: part of the turn


def test_cancel_answers_a_pending_permission_request_cancelled() -> None:
    asked = threading.Event()
    person = threading.Event()  # a person who never decides (until the test ends)

    def on_permission(params: Dict[str, Any]) -> Optional[str]:
        asked.set()
        person.wait(TIMEOUT_S)
        return "allow"

    with AcpClient(agent_command(), on_permission=on_permission, default_timeout=TIMEOUT_S) as agent:
        session = agent.new_session()
        canceller = threading.Thread(target=lambda: asked.wait(TIMEOUT_S) and agent.cancel(session))
        canceller.start()
        try:
            result = agent.prompt(
                session, script({"permission": [["allow", "allow_once"], ["deny", "reject_once"]]}, {"say": "after"})
            )
        finally:
            person.set()
            canceller.join(TIMEOUT_S)
    assert said(result, "permission: ")["outcome"] == "cancelled"
    assert result["stopReason"] == "cancelled"


# -- permission --------------------------------------------------------------------------------------

OPTIONS = [["allow", "allow_once"], ["always", "allow_always"], ["never", "reject_always"], ["deny", "reject_once"]]


def _ask(on_permission: Any, options: Any = OPTIONS) -> Dict[str, Any]:
    with AcpClient(agent_command(), on_permission=on_permission, default_timeout=TIMEOUT_S) as agent:
        session = agent.new_session()
        result = agent.prompt(session, script({"permission": options}))
    outcome: Dict[str, Any] = said(result, "permission: ")
    return outcome


def test_permission_granted_by_the_callback_with_the_request_it_saw() -> None:
    seen: List[Dict[str, Any]] = []
    outcome = _ask(lambda params: seen.append(params) or "always")
    assert outcome == {"outcome": "selected", "optionId": "always", "_meta": None}
    assert [o["optionId"] for o in seen[0]["options"]] == ["allow", "always", "never", "deny"]
    assert seen[0]["toolCall"]["toolCallId"] == "call_1"


def test_without_a_callback_the_reject_once_option_is_chosen() -> None:
    assert _ask(None)["optionId"] == "deny"
    assert _ask(None, [["allow", "allow_once"], ["never", "reject_always"]])["optionId"] == "never"


def test_without_a_callback_or_a_reject_option_the_answer_is_cancelled() -> None:
    assert _ask(None, [["allow", "allow_once"]])["outcome"] == "cancelled"


@pytest.mark.parametrize(
    ("decision", "logged"),
    [
        (None, None),
        ("not-offered", "did not offer"),
        (RuntimeError("the dialog crashed"), "on_permission raised"),
        (SystemExit(2), "on_permission raised"),  # issue 47, item 7: never answered before
        (KeyboardInterrupt(), "on_permission raised"),
    ],
)
def test_a_callback_that_refuses_raises_or_names_an_unknown_option_answers_cancelled(
    decision: Any, logged: Optional[str], caplog: pytest.LogCaptureFixture
) -> None:
    def on_permission(params: Dict[str, Any]) -> Optional[str]:
        if isinstance(decision, BaseException):
            raise decision
        return decision  # type: ignore[no-any-return]

    with caplog.at_level(logging.WARNING, logger="jsonrpc_threads.acp"):
        assert _ask(on_permission)["outcome"] == "cancelled"
    if logged is not None:
        assert any(logged in record.getMessage() for record in caplog.records)


def test_a_permission_callback_may_call_back_into_the_client() -> None:
    clients: List[AcpClient] = []

    def on_permission(params: Dict[str, Any]) -> Optional[str]:
        other = clients[0].new_session()  # a request of the client, from the callback's thread
        return "allow" if other else None

    with AcpClient(agent_command(), on_permission=on_permission, default_timeout=TIMEOUT_S) as agent:
        clients.append(agent)
        session = agent.new_session()
        result = agent.prompt(session, script({"permission": OPTIONS}))
    assert said(result, "permission: ")["optionId"] == "allow"


# -- the agent's failures ------------------------------------------------------------------------


def test_an_agent_that_hangs_times_the_prompt_out_cancels_it_and_leaves_nothing_running() -> None:
    cancels = threading.Event()

    def on_update(update: Dict[str, Any]) -> None:
        if texts([update]) == ["cancel received"]:
            cancels.set()

    agent = AcpClient(agent_command(), default_timeout=TIMEOUT_S)
    try:
        session = agent.new_session()
        started = time.monotonic()
        with pytest.raises(RequestTimeout) as timed_out:
            # What the agent sends after the timeout, until it answers the cancelled prompt, is still this turn's.
            agent.prompt(session, script({"say": "thinking"}, {"hang": True}), timeout=1.0, on_update=on_update)
        assert 1.0 <= time.monotonic() - started < 1.0 + 5.0
        assert timed_out.value.method == "session/prompt"
        assert cancels.wait(TIMEOUT_S), "session/cancel never reached the agent"
        pid = agent.rpc.transport.pid  # type: ignore[attr-defined]
    finally:
        agent.close()
    import psutil  # noqa: PLC0415

    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def test_an_agent_that_exits_mid_turn_fails_the_prompt_with_its_exit_code_and_stderr() -> None:
    with AcpClient(agent_command(), default_timeout=TIMEOUT_S) as agent:
        session = agent.new_session()
        with pytest.raises(TransportClosed) as gone:
            agent.prompt(session, script({"say": "about to go"}, {"exit": 3}))
        assert gone.value.returncode == 3
        assert "dying mid-turn" in gone.value.stderr_tail
        assert agent.closed
        with pytest.raises(TransportClosed):
            agent.new_session()


def test_log_lines_on_the_agents_stdout_are_logged_and_skipped(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING), AcpClient(agent_command("--log-stdout"), default_timeout=TIMEOUT_S) as agent:
        session = agent.new_session()
        result = agent.prompt(session, script({"say": "a"}, {"log": "INFO: thinking hard"}, {"say": "b"}))
    assert texts(result["updates"]) == ["a", "b"]
    logged = " ".join(record.getMessage() for record in caplog.records)
    assert "INFO: thinking hard" in logged
    assert "[agent log] prompt" in logged


# -- arguments and lifecycle ---------------------------------------------------------------------


def test_bad_arguments_fail_before_anything_is_sent(tmp_path: Any) -> None:
    with pytest.raises(ValueError, match="fs_root"):
        AcpClient(agent_command(), fs_write=True)
    with pytest.raises(ValueError, match="not a directory"):
        AcpClient(agent_command(), fs_root=tmp_path / "missing")
    with pytest.raises(TypeError):
        AcpClient(agent_command(), prompt_timeout="soon")  # type: ignore[arg-type]
    with AcpClient(agent_command(), default_timeout=TIMEOUT_S) as agent:
        session = agent.new_session()
        calls = agent.rpc.stats()["calls"]
        with pytest.raises(ValueError):
            agent.prompt(session, "x", timeout=-1)
        with pytest.raises(TypeError):
            agent.prompt(session, "x", timeout="1")
        with pytest.raises(TypeError):
            agent.prompt(42, "x")  # type: ignore[arg-type]
        with pytest.raises(ValueError):
            agent.set_mode(session, "")
        assert agent.rpc.stats()["calls"] == calls


def test_closing_the_client_fails_later_calls_and_is_idempotent() -> None:
    agent = AcpClient(agent_command(), default_timeout=TIMEOUT_S)
    with agent:
        session = agent.new_session()
    assert agent.closed
    agent.close()
    with pytest.raises(TransportClosed):
        agent.prompt(session, "hello")


def test_a_turn_returns_as_soon_as_its_updates_are_delivered() -> None:
    """Regression: through ``JsonRpcClient.call()`` an answer behind notifications came about 50 ms late."""
    late = 0
    with AcpClient(agent_command(), default_timeout=TIMEOUT_S) as agent:
        session = agent.new_session()
        for _ in range(100):
            started = time.monotonic()
            assert len(agent.prompt(session, script({"chunks": 6}))["updates"]) == 6
            late += time.monotonic() - started > LATE_TURN_S
    assert late < 10, f"{late} of 100 turns took more than {LATE_TURN_S * 1000:.0f} ms"


def test_close_from_another_thread_fails_a_running_turn_at_once() -> None:
    collector = Collector(signal_on="started")
    outcome: List[BaseException] = []
    agent = AcpClient(agent_command(), default_timeout=TIMEOUT_S)
    try:
        session = agent.new_session()

        def turn() -> None:
            try:
                agent.prompt(session, script({"say": "started"}, {"hang": True}), on_update=collector)
            except BaseException as exc:  # checked below
                outcome.append(exc)

        thread = threading.Thread(target=turn)
        thread.start()
        assert collector.seen.wait(TIMEOUT_S)
    finally:
        agent.close()
    thread.join(TIMEOUT_S)
    assert not thread.is_alive()
    assert len(outcome) == 1 and isinstance(outcome[0], TransportClosed)
