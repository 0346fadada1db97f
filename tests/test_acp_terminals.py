"""``terminal/*``: commands a real agent runs through the client, each reclaimed at release or close.

The agent (tests/peers/acp_agent.py, official Python SDK) creates terminals
and asks for their output, their exit, a kill, a release; the tests check what
it was told and that no process is left: a command that starts a process of
its own tells its pids through a FIFO (a pipe the test waits on, with a
timeout), and after release or close every one of them must be gone.  The
bounded output buffer is tested pure, at every split of multi-byte text.
"""

from __future__ import annotations

import json
import os
import select
import sys
import threading
import time
from pathlib import Path
from typing import Any, Dict, Iterator, List, Tuple

import psutil
import pytest

from jsonrpc_threads import RequestTimeout
from jsonrpc_threads.acp import KILL_WAIT_S, AcpClient
from jsonrpc_threads.acp.output import OutputBuffer
from jsonrpc_threads.acp.terminals import TerminalService
from jsonrpc_threads.acp.wire import exit_status
from jsonrpc_threads.deadlines import Deadline

from .conftest import needs_acp_sdk, peer_command

needs_sdk = needs_acp_sdk

TIMEOUT_S = 30.0


def python(code: str, **extra: Any) -> Dict[str, Any]:
    """``terminal/create`` params running ``code`` in this Python."""
    return {"command": sys.executable, "args": ["-c", code], **extra}


def _run(steps: List[Dict[str, Any]], *, terminal: bool = True, timeout: Any = TIMEOUT_S, **options: Any) -> List[str]:
    with AcpClient(peer_command("acp_agent"), terminal=terminal, default_timeout=TIMEOUT_S, **options) as agent:
        session = agent.new_session()
        result = agent.prompt(session, json.dumps(steps), timeout=timeout)
    return [u["content"]["text"] for u in result["updates"] if u["sessionUpdate"] == "agent_message_chunk"]


def answers(said: List[str]) -> Dict[str, Any]:
    """``{action: answer}`` from what the agent said about its terminal."""
    found: Dict[str, Any] = {}
    for text in said:
        action, _, rest = text.partition(": ")
        if action in ("output", "wait", "kill", "release"):
            found[action] = json.loads(rest)
        elif action == "created":
            found[action] = rest
    return found


@pytest.fixture
def pids_fifo(tmp_path: Path) -> Iterator[Tuple[str, int]]:
    """A FIFO a command writes its pids into, and the test's end of it (opened without blocking)."""
    path = str(tmp_path / "pids")
    os.mkfifo(path)
    read_end = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        yield path, read_end
    finally:
        os.close(read_end)


def spawner(fifo: str) -> str:
    """A command that starts a grandchild, tells both pids through ``fifo``, and sleeps."""
    return (
        "import os, subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(1000)'])\n"
        f"fd = os.open({fifo!r}, os.O_WRONLY)\n"
        "os.write(fd, f'{os.getpid()} {child.pid}\\n'.encode())\n"
        "time.sleep(1000)\n"
    )


def read_pids(read_end: int) -> List[int]:
    ready, _, _ = select.select([read_end], [], [], TIMEOUT_S)
    assert ready, "the command never told its pids"
    return [int(pid) for pid in os.read(read_end, 100).split()]


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


# -- through the agent ----------------------------------------------------------------------------


@needs_sdk
def test_output_and_exit_status_of_a_command(tmp_path: Path) -> None:
    code = "import os, sys; print(os.getcwd()); print(os.environ['GREETING']); sys.exit(3)"
    create = python(code, env=[{"name": "GREETING", "value": "hi there"}])
    said = _run([{"terminal": create, "then": ["wait", "output", "release"]}], cwd=tmp_path)
    got = answers(said)
    assert got["created"].startswith("term_")
    assert got["wait"] == {"exitCode": 3}
    assert got["output"] == {"output": f"{tmp_path}\nhi there\n", "truncated": False, "exitStatus": {"exitCode": 3}}
    assert got["release"] == {}


SECRET = "ACP_TEST_SECRET_TOKEN"
SHOW_ENV = f"import os; print(os.environ.get({SECRET!r}), os.environ.get('GREETING'), 'PATH' in os.environ)"


@needs_sdk
@pytest.mark.parametrize("inherit_env", [False, True])
def test_a_terminal_starts_from_the_agents_allowlist_unless_inherit_env(
    monkeypatch: pytest.MonkeyPatch, inherit_env: bool
) -> None:
    monkeypatch.setenv(SECRET, "hunter2")
    create = python(SHOW_ENV, env=[{"name": "GREETING", "value": "hi"}])
    said = _run([{"terminal": create, "then": ["wait", "output", "release"]}], inherit_env=inherit_env)
    shown = "hunter2" if inherit_env else "None"
    assert answers(said)["output"]["output"] == f"{shown} hi True\n"


@needs_sdk
def test_the_output_buffer_keeps_the_end_within_the_limit() -> None:
    code = "import sys; sys.stdout.write('0123456789' * 1000 + 'é' * 50 + 'END')"
    said = _run([{"terminal": python(code, outputByteLimit=64), "then": ["wait", "output", "release"]}])
    output = answers(said)["output"]
    assert output["truncated"] is True
    assert output["output"].endswith("éEND")
    assert len(output["output"].encode()) <= 64
    assert "\ufffd" not in output["output"]


@needs_sdk
def test_kill_then_output_and_exit_then_release() -> None:
    code = "import time; print('started', flush=True); time.sleep(1000)"
    said = _run([{"terminal": python(code), "then": ["kill", "wait", "output", "release"]}])
    got = answers(said)
    assert got["kill"] == {}
    assert got["wait"] == {"signal": "SIGKILL"}
    assert got["output"]["exitStatus"] == {"signal": "SIGKILL"}


@needs_sdk
def test_terminals_are_refused_unless_enabled() -> None:
    (said,) = _run([{"terminal": python("print(1)"), "then": ["release"]}], terminal=False)
    assert said.startswith("error -32601:")


@needs_sdk
def test_unreleased_terminals_and_their_process_trees_are_reclaimed_at_close(pids_fifo: Tuple[str, int]) -> None:
    fifo, read_end = pids_fifo
    with AcpClient(peer_command("acp_agent"), terminal=True, default_timeout=TIMEOUT_S) as agent:
        session = agent.new_session()
        result = agent.prompt(session, json.dumps([{"terminal": python(spawner(fifo))}]))  # never released
        assert answers([u["content"]["text"] for u in result["updates"]])["created"]
        pids = read_pids(read_end)
        assert not any(gone(pid) for pid in pids)
    assert all(gone(pid) for pid in pids)


@needs_sdk
def test_a_wait_for_exit_ends_with_the_prompts_deadline_and_nothing_is_left() -> None:
    code = "import time; time.sleep(1000)"
    with pytest.raises(RequestTimeout):
        _run([{"terminal": python(code), "then": ["wait", "release"]}], timeout=2.0)


# -- the service itself -----------------------------------------------------------------------------


@pytest.fixture
def service() -> Iterator[TerminalService]:
    terminals = TerminalService(
        default_cwd=lambda session_id: None, wait_deadline=lambda session_id: Deadline.after(5.0)
    )
    try:
        yield terminals
    finally:
        terminals.close()


def test_release_kills_the_whole_process_tree(service: TerminalService, pids_fifo: Tuple[str, int]) -> None:
    fifo, read_end = pids_fifo
    terminal_id = service.create({"sessionId": "s", **python(spawner(fifo))})["terminalId"]
    pids = read_pids(read_end)
    assert "exitStatus" not in service.output({"sessionId": "s", "terminalId": terminal_id})
    assert service.release({"sessionId": "s", "terminalId": terminal_id}) == {}
    assert all(gone(pid) for pid in pids)
    assert service.alive() == []


def daemon_starter(fifo: str, *, exit_after: bool) -> str:
    """A command that starts a daemon (double fork, ``setsid``) that ignores SIGTERM and holds stdout.

    The daemon is neither the command's descendant (its parent exited) nor in
    its process group; the command tells both pids through ``fifo`` once the
    daemon runs, then exits (``exit_after``) or sleeps.
    """
    return (
        "import os, signal, sys, time\n"
        "read_end, write_end = os.pipe()\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        "        signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "        os.write(write_end, f'{os.getpid()}'.encode())\n"
        "        time.sleep(1000)\n"
        "    os._exit(0)\n"
        "os.close(write_end)\n"
        "os.wait()\n"
        "daemon = os.read(read_end, 100).decode()\n"
        "print('daemon', daemon, flush=True)\n"
        f"fd = os.open({fifo!r}, os.O_WRONLY)\n"
        "os.write(fd, f'{os.getpid()} {daemon}\\n'.encode())\n"
        f"{'sys.exit(0)' if exit_after else 'time.sleep(1000)'}\n"
    )


def _reader_threads(terminal_id: str) -> List[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread.name == f"acp-terminal[{terminal_id}]"]


#: A release or close kills at once (no SIGTERM step) and waits at most KILL_WAIT_S for
#: the tree, then as long again for the reader: the bound, with room for a slow machine.
RECLAIM_BOUND_S = 2 * KILL_WAIT_S + 2.0


@pytest.mark.parametrize("exit_after", [True, False], ids=["command-exited", "command-running"])
@pytest.mark.parametrize("end", ["release", "close"])
def test_a_daemon_in_its_own_session_that_ignores_sigterm_is_reclaimed(
    service: TerminalService, pids_fifo: Tuple[str, int], end: str, exit_after: bool
) -> None:
    fifo, read_end = pids_fifo
    terminal_id = service.create({"sessionId": "s", **python(daemon_starter(fifo, exit_after=exit_after))})[
        "terminalId"
    ]
    command, daemon = read_pids(read_end)
    ask = {"sessionId": "s", "terminalId": terminal_id}
    if exit_after:
        assert service.wait_for_exit(ask) == {"exitCode": 0, "signal": None}
    assert not gone(daemon)
    (reader,) = _reader_threads(terminal_id)
    assert reader.is_alive()  # the daemon holds the output open
    started = time.monotonic()
    if end == "release":
        assert service.release(ask) == {}
    else:
        service.close()
    assert time.monotonic() - started < RECLAIM_BOUND_S
    assert gone(daemon) and gone(command)
    reader.join(RECLAIM_BOUND_S)
    assert not reader.is_alive()
    assert service.alive() == []


@pytest.mark.parametrize("inherit_env", [False, True])
def test_the_service_gives_a_command_the_allowlist_and_the_requests_env(
    monkeypatch: pytest.MonkeyPatch, inherit_env: bool
) -> None:
    monkeypatch.setenv(SECRET, "hunter2")
    terminals = TerminalService(
        default_cwd=lambda session_id: None,
        wait_deadline=lambda session_id: Deadline.after(TIMEOUT_S),
        inherit_env=inherit_env,
    )
    try:
        create = {"sessionId": "s", **python(SHOW_ENV, env=[{"name": "GREETING", "value": "hi"}])}
        ask = {"sessionId": "s", "terminalId": terminals.create(create)["terminalId"]}
        assert terminals.wait_for_exit(ask) == {"exitCode": 0, "signal": None}
        shown = "hunter2" if inherit_env else "None"
        assert terminals.output(ask)["output"] == f"{shown} hi True\n"
    finally:
        terminals.close()


def test_a_terminal_belongs_to_its_session(service: TerminalService) -> None:
    from jsonrpc_threads.errors import InvalidParams  # noqa: PLC0415

    terminal_id = service.create({"sessionId": "s", **python("print(1)")})["terminalId"]
    with pytest.raises(InvalidParams, match="no terminal"):
        service.output({"sessionId": "another", "terminalId": terminal_id})
    assert service.wait_for_exit({"sessionId": "s", "terminalId": terminal_id}) == {"exitCode": 0, "signal": None}
    service.release({"sessionId": "s", "terminalId": terminal_id})
    with pytest.raises(InvalidParams, match="no terminal"):
        service.output({"sessionId": "s", "terminalId": terminal_id})


@pytest.mark.parametrize(
    "params",
    [
        {"command": ""},
        {"command": "x", "args": "not a list"},
        {"command": "x", "env": [{"name": "A"}]},
        {"command": "x", "cwd": "relative"},
        {"command": "x", "outputByteLimit": -1},
    ],
)
def test_bad_create_params_are_invalid_params(service: TerminalService, params: Dict[str, Any]) -> None:
    from jsonrpc_threads.errors import InvalidParams  # noqa: PLC0415

    with pytest.raises(InvalidParams):
        service.create({"sessionId": "s", **params})


def test_a_command_that_cannot_start_is_an_internal_error(service: TerminalService) -> None:
    from jsonrpc_threads.errors import InternalError  # noqa: PLC0415

    with pytest.raises(InternalError, match="cannot run"):
        service.create({"sessionId": "s", "command": "/nonexistent/command"})


def test_no_terminals_after_close(service: TerminalService) -> None:
    from jsonrpc_threads.errors import JsonRpcError  # noqa: PLC0415

    service.close()
    with pytest.raises(JsonRpcError, match="closing"):
        service.create({"sessionId": "s", **python("print(1)")})


# -- the output buffer (pure) -------------------------------------------------------------------------

TEXT = "ascii é ü € 𝄞 and more: 日本語のテキスト"


@pytest.mark.parametrize("limit", [0, 1, 2, 3, 4, 5, 7, 16, 40, 1000])
def test_the_buffer_keeps_the_longest_suffix_that_starts_on_a_character(limit: int) -> None:
    data = TEXT.encode()
    for split in range(len(data) + 1):
        buffer = OutputBuffer(limit)
        buffer.append(data[:split])
        buffer.append(data[split:])
        kept = buffer.text()
        assert len(kept.encode()) <= limit
        assert TEXT.endswith(kept)
        assert len(kept.encode()) > limit - 4 or kept == TEXT  # never more than one character short
        assert buffer.truncated == (len(data) > limit)


def test_a_character_still_being_written_is_left_out_until_it_is_whole() -> None:
    buffer = OutputBuffer(100)
    buffer.append("ok €".encode()[:-1])
    assert buffer.text() == "ok "
    buffer.append("€".encode()[-1:])
    assert buffer.text() == "ok €"


def test_exit_status_of_a_signal() -> None:
    assert exit_status(0) == {"exitCode": 0, "signal": None}
    assert exit_status(-9) == {"exitCode": None, "signal": "SIGKILL"}
