"""The command line, run as a subprocess (``python -m jsonrpc_threads``): outputs and exit codes."""

from __future__ import annotations

import errno
import importlib.util
import io
import json
import os
import pty
import select
import shlex
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional

import psutil
import pytest

from jsonrpc_threads import __version__
from jsonrpc_threads.cli import ELAPSED_AFTER_S, EXIT_CODES, ProgressDisplay, build_parser
from jsonrpc_threads.cli.output import PROG, STILL_STOPPING
from jsonrpc_threads.lsp import uri_to_path

from .conftest import PEERS_DIR
from .peers.lsp_servers import pylsp_command, pyright_command, write_project
from .peers.registry_launch import sdk_http_peer

#: Seconds one command may take (each starts Python and a server or two).
RUN_TIMEOUT_S = 60.0
MARKER_VARIABLE = "JSONRPC_THREADS_CLI_TEST"


class Run:
    def __init__(self, completed: subprocess.CompletedProcess[str]) -> None:
        self.code = completed.returncode
        self.out = completed.stdout
        self.err = completed.stderr

    def __repr__(self) -> str:
        return f"<exit {self.code}; stdout {self.out!r}; stderr {self.err!r}>"


def run(*args: str, stdin: str = "", env: Optional[Dict[str, str]] = None) -> Run:
    completed = subprocess.run(
        [sys.executable, "-m", "jsonrpc_threads", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        check=False,
        env=None if env is None else {**os.environ, **env},
    )
    result = Run(completed)
    assert "Traceback" not in result.err, result
    return result


def servers_left(marker: str) -> List[int]:
    """Processes still running with our marker in their environment (the CLI must reap its servers)."""
    left = []
    for process in psutil.process_iter():
        try:
            if process.environ().get(MARKER_VARIABLE) == marker and process.status() != psutil.STATUS_ZOMBIE:
                left.append(process.pid)
        except psutil.Error:
            pass
    return left


@pytest.fixture
def marker() -> Iterator[str]:
    value = uuid.uuid4().hex
    yield value
    assert servers_left(value) == []


@pytest.fixture
def config(tmp_path: Path, marker: str) -> str:
    if importlib.util.find_spec("mcp") is None:
        pytest.skip("the official MCP SDK (mcp, Python 3.10+) is not installed")
    env = {MARKER_VARIABLE: marker}
    servers: Dict[str, Any] = {
        "example": {"command": sys.executable, "args": ["-m", "jsonrpc_threads.examples.mcp_tool_server"], "env": env},
        "sdk": {"command": sys.executable, "args": [str(PEERS_DIR / "registry_sdk_peer.py")], "env": env},
        "missing": {"command": "jsonrpc-threads-no-such-command"},
        "needs-token": {"url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "Bearer ${CLI_TEST_NO_TOKEN}"}},
    }
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    return str(path)


def one_line(text: str) -> str:
    """The one line of an error (the notice that stopping the server is slow, on a loaded machine, aside)."""
    lines = [line for line in text.splitlines() if line != f"{PROG}: {STILL_STOPPING}"]
    assert len(lines) == 1, text
    return lines[0]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# -- tools ----------------------------------------------------------------------------


def test_tools_lists_every_server_and_reports_the_failed_ones(config: str) -> None:
    result = run("tools", "--config", config)
    assert result.code == 5, result  # that of the first failure: 'missing' could not start
    rows = [line.split() for line in result.out.splitlines()]
    assert rows[0] == ["SERVER", "TOOL", "NAME", "DESCRIPTION"]
    assert ["example", "add", "mcp__example__add", "Add", "two", "numbers."] in rows
    assert ["sdk", "files.read", "mcp__sdk__files_read", "A", "tool", "whose", "name", "has", "a", "dot."] in rows
    assert {row[0] for row in rows[1:]} == {"example", "sdk"}
    errors = result.err.splitlines()
    assert len(errors) == 2, result
    assert errors[0].startswith("jsonrpc-threads: server 'missing' failed to start: cannot start")
    assert errors[1].startswith("jsonrpc-threads: server 'needs-token', headers.Authorization:")
    assert "CLI_TEST_NO_TOKEN is not set" in errors[1]


def test_tools_exit_code_is_that_of_the_first_failure(tmp_path: Path, marker: str) -> None:
    path = tmp_path / "mcp.json"
    example = {"command": sys.executable, "args": ["-m", "jsonrpc_threads.examples.mcp_tool_server"]}
    example["env"] = {MARKER_VARIABLE: marker}  # type: ignore[assignment]
    path.write_text(json.dumps({"mcpServers": {"example": example, "missing": {"command": "jsonrpc-threads-nope"}}}))
    result = run("tools", "--config", str(path))
    assert result.code == 5, result
    assert "mcp__example__add" in result.out
    path.write_text(json.dumps({"mcpServers": {"example": example}}))
    result = run("tools", "--config", str(path), "--json")
    assert result.code == 0 and result.err == "", result
    tools = json.loads(result.out)
    assert tools[0]["name"] == "mcp__example__add" and tools[0]["server"] == "example" and tools[0]["tool"] == "add"


# -- call -----------------------------------------------------------------------------


def test_call_prints_the_result_and_shows_progress(config: str) -> None:
    result = run("call", "--config", config, "example", "slow", '{"seconds": 0.2, "steps": 2}')
    assert result.code == 0, result
    assert result.out == "waited 0.2s in 2 steps\n"
    assert result.err.splitlines() == ["progress: 1/2 step 1 of 2", "progress: 2/2 step 2 of 2"]
    result = run("call", "--config", config, "sdk", "sleep", '{"seconds": 0.1, "steps": 2}', "--json")
    assert result.code == 0, result
    assert json.loads(result.out)["content"] == [{"type": "text", "text": "slept 0.1"}]
    assert result.err.splitlines() == ["progress: 1/2 step 1", "progress: 2/2 step 2"]
    result = run("call", "--config", config, "sdk", "multiply", "-", "--no-progress", stdin='{"a": 6, "b": 7}')
    assert (result.code, result.out, result.err) == (0, "42\n", "")


@pytest.mark.parametrize(
    ("args", "code", "stdout", "message"),
    [
        (["example", "add", '{"a": 1, "b": 2}'], 0, "3\n", None),
        (["example", "fail", '{"message": "it broke"}'], 1, "it broke\n", "tool 'fail' on server 'example' reported"),
        (["example", "add", "{oops"], 2, "", "the arguments are not valid JSON"),
        (["example", "add", "[1, 2]"], 2, "", "the arguments must be a JSON object"),
        (["needs-token", "x"], 2, "", "CLI_TEST_NO_TOKEN is not set"),
        (["nope", "add"], 3, "", "Unknown server 'nope' (configured: example, sdk, missing, needs-token)"),
        (["example", "nope"], 3, "", "Unknown tool 'nope' on server 'example' (its tools: add, echo, slow, fail,"),
        (["example", "slow", '{"seconds": 30}', "--timeout", "0.5"], 4, "", "did not finish within 0.5s"),
        (["missing", "add"], 5, "", "server 'missing' failed to start"),
        (["example", "crash", '{"code": 7}'], 5, "", "server 'example' stopped during the call"),
        (
            ["example", "crash", '{"code": 7}'],
            5,
            "",
            "(exit code 7); stderr: mcp_tool_server: crashing on purpose with exit code 7",
        ),
    ],
)
def test_call_exit_codes(config: str, args: List[str], code: int, stdout: str, message: Any) -> None:
    result = run("call", "--config", config, *args)
    assert result.code == code, result
    assert result.out == stdout, result
    if message is None:
        assert result.err == ""
    else:
        line = one_line(result.err)
        assert line.startswith("jsonrpc-threads: ") and message in line, result


@pytest.mark.parametrize(
    ("content", "message"),
    [(None, "cannot read"), ("{not json", "not valid JSON"), ('{"servers": 1}', "must be an object")],
)
def test_a_bad_config_file_is_exit_code_2(tmp_path: Path, content: Any, message: str) -> None:
    path = tmp_path / "mcp.json"
    if content is not None:
        path.write_text(content)
    for args in (["tools", "--config", str(path)], ["call", "--config", str(path), "s", "t"]):
        result = run(*args)
        assert result.code == 2 and result.out == "", result
        assert message in one_line(result.err)


def test_a_configuration_without_servers_says_so(tmp_path: Path) -> None:
    """Issue 37, item 13: ``{"mcpServers": {}}`` is a configuration mistake, said in one line (exit 2)."""
    path = tmp_path / "mcp.json"
    for servers in ({}, {"off": {"command": "x", "disabled": True}}):
        path.write_text(json.dumps({"mcpServers": servers}))
        for args in (["tools", "--config", str(path)], ["tools", "--config", str(path), "--json"]):
            result = run(*args)
            assert (result.code, result.out) == (2, ""), result
            assert one_line(result.err) == f"jsonrpc-threads: {path} configures no server to start", result
        result = run("call", "--config", str(path), "s", "t")
        assert (result.code, result.out) == (2, ""), result
        assert "configures no server" in one_line(result.err), result


def test_tools_prints_no_empty_table_when_no_server_started(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"missing": {"command": "jsonrpc-threads-no-such-command"}}}))
    result = run("tools", "--config", str(path))
    assert (result.code, result.out) == (5, ""), result  # no header over nothing
    assert one_line(result.err).startswith("jsonrpc-threads: server 'missing' failed to start"), result


def test_version() -> None:
    result = run("--version")
    assert (result.code, result.out, result.err) == (0, f"jsonrpc-threads {__version__}\n", ""), result


def test_usage_errors_are_exit_code_2() -> None:
    for args in ([], ["frobnicate"], ["call", "--config"], ["call", "--config", "x.json", "s", "t", "--timeout", "-1"]):
        result = run(*args)
        assert result.code == 2, (args, result)
        assert result.err.splitlines()[-1].startswith("jsonrpc-threads"), result
    result = run("--help")
    assert result.code == 0 and "exit codes: 0 success; 1 " in " ".join(result.out.split())


# -- rpc ------------------------------------------------------------------------------


def test_rpc_over_stdio(marker: str) -> None:
    server = f"env {MARKER_VARIABLE}={marker} {sys.executable} -m jsonrpc_threads.examples.tool_server"
    result = run("rpc", "--stdio", server, "add", '{"a": 1, "b": 2}')
    assert (result.code, json.loads(result.out), result.err) == (0, 3, ""), result
    result = run("rpc", "--stdio", server, "echo", "-", stdin='{"text": "from stdin"}')
    assert json.loads(result.out) == "from stdin"
    result = run("rpc", "--stdio", server, "nope")
    assert result.code == 1, result
    assert json.loads(result.out) == {"code": -32601, "message": "Method not found", "data": {"method": "nope"}}
    result = run("rpc", "--stdio", server, "hang", "--timeout", "0.3")
    assert result.code == 4 and "no answer to 'hang' within 0.3s" in one_line(result.err), result
    result = run("rpc", "--stdio", server, "crash", '{"code": 9}')
    assert result.code == 5, result
    assert one_line(result.err).endswith("(exit code 9); stderr: tool_server: crashing on purpose with exit code 9")
    result = run("rpc", "--stdio", server, "add", '"text"')
    assert result.code == 2 and "must be a JSON object or array" in one_line(result.err), result


def test_rpc_timeouts_name_the_tool(marker: str) -> None:
    server = f"env {MARKER_VARIABLE}={marker} {sys.executable} -m jsonrpc_threads.examples.mcp_tool_server"
    params = {"name": "slow", "arguments": {"seconds": 30}}
    result = run("rpc", "--stdio", server, "tools/call", json.dumps(params), "--timeout", "0.5")
    assert result.code == 4, result
    assert one_line(result.err) == "jsonrpc-threads: no answer to 'tools/call' for tool 'slow' within 0.5s"


ENV_SERVER = """\
import json, os, sys
for line in sys.stdin:
    request = json.loads(line)
    print(json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": dict(os.environ)}), flush=True)
"""


def test_rpc_stdio_passes_an_allowlist_of_the_environment(tmp_path: Path) -> None:
    script = tmp_path / "env_server.py"
    script.write_text(ENV_SERVER)
    server = f"{sys.executable} {script}"
    secret = {"JSONRPC_THREADS_CLI_SECRET": "s3cret"}
    result = run("rpc", "--stdio", server, "env", env=secret)
    assert result.code == 0, result
    child = json.loads(result.out)
    assert "JSONRPC_THREADS_CLI_SECRET" not in child and child["PATH"] == os.environ["PATH"]
    result = run("rpc", "--stdio", server, "env", "--env", "GREETING=hello world", "--env", "EMPTY=", env=secret)
    child = json.loads(result.out)
    assert child["GREETING"] == "hello world" and child["EMPTY"] == "" and "JSONRPC_THREADS_CLI_SECRET" not in child
    result = run("rpc", "--stdio", server, "env", "--inherit-env", "--env", "GREETING=hi", env=secret)
    child = json.loads(result.out)
    assert child["JSONRPC_THREADS_CLI_SECRET"] == "s3cret" and child["GREETING"] == "hi"
    for bad in (["--env", "NOVALUE"], ["--env", "=x"]):
        result = run("rpc", "--stdio", server, "env", *bad)
        assert result.code == 2 and "NAME=VALUE" in one_line(result.err), result
    result = run("rpc", "--url", "http://127.0.0.1:9/mcp", "--env", "A=b", "ping")
    assert result.code == 2 and "go with --stdio" in one_line(result.err), result
    help_text = " ".join(run("rpc", "--help").out.split())
    assert "--env NAME=VALUE" in help_text and "--inherit-env" in help_text and "allowlist" in help_text


def test_a_command_line_or_url_that_cannot_be_used_is_one_line_and_exit_code_2(tmp_path: Path) -> None:
    """Issue 37, item 13: what the user typed, and what is wrong with it; never a traceback."""
    for args, message in (
        (["--stdio", "python -c 'oops"], '--stdio "python -c \'oops" is not a command line: no closing quotation'),
        (["--stdio", "   "], "--stdio needs a command"),
        (["--url", "localhost:8000/rpc"], "--url 'localhost:8000/rpc' has no scheme: did you mean "),
        (["--url", ""], "--url is empty: give an http:// or https:// URL"),
        (["--url", "ftp://127.0.0.1/rpc"], "--url 'ftp://127.0.0.1/rpc' is not an http:// or https:// URL"),
        (["--url", "http:///rpc"], "--url 'http:///rpc' names no host"),
        (["--url", "http://[::1/rpc"], "--url 'http://[::1/rpc' is not a valid URL"),
    ):
        result = run("rpc", *args, "ping")
        assert (result.code, result.out) == (2, ""), (args, result)
        assert one_line(result.err) == f"jsonrpc-threads: {message}" or message in one_line(result.err), result
    assert "'http://localhost:8000/rpc'" in run("rpc", "--url", "localhost:8000/rpc", "ping").err
    project = write_project(tmp_path)
    result = run("lsp", "--stdio", "pylsp --x 'y", "diagnostics", str(project / "main.py"))
    assert (result.code, result.out) == (2, ""), result
    assert "no closing quotation" in one_line(result.err), result


def test_one_line_messages_carry_no_local_error_codes() -> None:
    result = run("rpc", "--url", f"http://127.0.0.1:{free_port()}/mcp", "ping")
    assert result.code == 5, result
    assert "(code -32002)" not in one_line(result.err) and "Connection refused" in result.err, result


def test_rpc_failures_to_connect_are_exit_code_5() -> None:
    result = run("rpc", "--stdio", "jsonrpc-threads-no-such-command --flag", "ping")
    assert result.code == 5 and "cannot start" in one_line(result.err), result
    result = run("rpc", "--url", f"http://127.0.0.1:{free_port()}/mcp", "ping")
    assert result.code == 5 and "Connection refused" in one_line(result.err), result


def test_rpc_over_http() -> None:
    pytest.importorskip("mcp")
    with sdk_http_peer() as url:
        params = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "cli", "version": "0"}}
        result = run("rpc", "--url", url, "--header", "X-Test: yes", "initialize", json.dumps(params))
    assert result.code == 0, result
    answer = json.loads(result.out)
    assert answer["protocolVersion"] == "2025-06-18"
    assert answer["serverInfo"]["name"] == "registry-sdk-peer"


# -- the progress display -------------------------------------------------------------


def test_progress_bar_on_a_terminal_redraws_one_line() -> None:
    stream = io.StringIO()
    display = ProgressDisplay(stream, live=True)
    display.update({"progress": 1, "total": 4, "message": "first step"})
    display.update({"progress": 4, "total": 4})
    display.update({"progress": 7})  # no total: a count
    display.finish()
    frames = stream.getvalue().split("\r")
    assert frames[1].startswith("[" + "#" * 8 + "." * 22 + "] 1/4  25% first step")
    assert frames[2].startswith("[" + "#" * 30 + "] 4/4 100%")
    assert frames[3].startswith("[" + "?" * 30 + "] 7")
    assert frames[-1] == "" and "\n" not in stream.getvalue()


#: The longest a terminal test waits for the command to finish.
TERMINAL_WAIT_S = 60.0


def run_on_terminal(*args: str) -> tuple[int, str]:
    """Run the command with stderr on a pseudo-terminal; its exit code and all it drew there."""
    master, slave = pty.openpty()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "jsonrpc_threads", *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=slave,
        )
    finally:
        os.close(slave)
    chunks: List[bytes] = []
    deadline = time.monotonic() + TERMINAL_WAIT_S
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], deadline - time.monotonic())
            if not ready:
                break
            try:
                chunk = os.read(master, 65536)
            except OSError as exc:  # EIO: every writer closed the terminal
                if exc.errno != errno.EIO:
                    raise
                break
            if not chunk:
                break
            chunks.append(chunk)
        code = proc.wait(TERMINAL_WAIT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    return code, b"".join(chunks).decode("utf-8", "replace")


def test_a_long_call_without_progress_shows_elapsed_time_on_a_terminal(config: str) -> None:
    seconds = ELAPSED_AFTER_S + 1.5
    code, screen = run_on_terminal("call", "--config", config, "example", "slow", json.dumps({"seconds": seconds}))
    assert code == 0, screen
    frames = [frame.strip() for frame in screen.split("\r") if frame.strip()]
    assert "waiting for tool 'slow' on server 'example'... 1s" in frames, screen
    assert any(frame.startswith("[" + "#" * 30 + "] 1/1 100%") for frame in frames), screen


def test_a_long_rpc_shows_elapsed_time_on_a_terminal_and_names_the_method(marker: str) -> None:
    server = f"env {MARKER_VARIABLE}={marker} {sys.executable} -m jsonrpc_threads.examples.tool_server"
    code, screen = run_on_terminal("rpc", "--stdio", server, "hang", "--timeout", str(ELAPSED_AFTER_S + 1.5))
    assert code == 4, screen
    assert "waiting for the answer to 'hang'... 1s" in screen, screen
    assert screen.rstrip().endswith(f"no answer to 'hang' within {ELAPSED_AFTER_S + 1.5}s"), screen


def test_no_elapsed_time_when_stderr_is_not_a_terminal(config: str) -> None:
    seconds = ELAPSED_AFTER_S + 1.5
    result = run("call", "--config", config, "example", "slow", json.dumps({"seconds": seconds}))
    assert result.code == 0, result
    assert result.err.splitlines() == ["progress: 1/1 step 1 of 1"], result


# -- lsp --------------------------------------------------------------------------------


def lsp_run(server: List[str], marker: str, root: Path, *args: str) -> Run:
    """``lsp`` on a project: absolute paths, the marker in the server's environment."""
    return run("lsp", "--stdio", shlex.join(server), "--root", str(root), "--env", f"{MARKER_VARIABLE}={marker}", *args)


def test_lsp_definition_across_files_with_pylsp(tmp_path: Path, marker: str) -> None:
    project = write_project(tmp_path)
    result = lsp_run(pylsp_command(), marker, project, "definition", f"{project / 'main.py'}:3:11")
    assert result.code == 0, result
    [location] = json.loads(result.out)
    assert location["uri"] == (project / "lib.py").as_uri()
    assert location["range"]["start"] == {"line": 0, "character": 4}


def test_lsp_hover_with_pylsp(tmp_path: Path, marker: str) -> None:
    project = write_project(tmp_path)
    result = lsp_run(pylsp_command(), marker, project, "hover", f"{project / 'main.py'}:3:11")
    assert result.code == 0, result
    assert "Say hello to someone." in json.loads(result.out)["contents"]["value"]


def test_lsp_references_with_pyright(tmp_path: Path, marker: str) -> None:
    project = write_project(tmp_path)
    result = lsp_run(pyright_command(), marker, project, "references", f"{project / 'lib.py'}:1:5")
    assert result.code == 0, result
    found = {(uri_to_path(item["uri"]).name, item["range"]["start"]["line"]) for item in json.loads(result.out)}
    assert {("lib.py", 0), ("lib.py", 7), ("main.py", 2)} <= found


def test_lsp_diagnostics_with_pyright(tmp_path: Path, marker: str) -> None:
    project = write_project(tmp_path)
    result = lsp_run(pyright_command(), marker, project, "diagnostics", str(project / "broken.py"))
    assert result.code == 0, result
    diagnostics = json.loads(result.out)
    assert any("undefined_name" in d["message"] and d["range"]["start"]["line"] == 2 for d in diagnostics), diagnostics


def test_lsp_usage_errors_and_a_server_that_cannot_start(tmp_path: Path, marker: str) -> None:
    project = write_project(tmp_path)
    main = str(project / "main.py")
    for args, code, message in (
        (("hover", main), 2, "hover needs FILE:LINE:COL"),
        (("hover", f"{main}:0:1"), 2, "hover needs FILE:LINE:COL"),
        (("hover", f"{main}:99:1"), 2, "has 4 lines, not 99"),
        (("diagnostics", str(project / "missing.py")), 2, "cannot read"),
    ):
        result = lsp_run(pylsp_command(), marker, project, *args)
        assert (result.code, result.out) == (code, ""), result
        assert message in one_line(result.err), result
    result = lsp_run(["jsonrpc-threads-no-such-server"], marker, project, "diagnostics", main)
    assert result.code == 5, result
    assert one_line(result.err).startswith("jsonrpc-threads: cannot start 'jsonrpc-threads-no-such-server'")


def test_every_exit_code_is_documented() -> None:
    assert sorted(EXIT_CODES) == [0, 1, 2, 3, 4, 5, 130]


def test_a_timeout_is_shown_at_the_deadline_before_the_server_is_stopped() -> None:
    """Issue 47, first hour: the error came only after the child was reclaimed (2.2 s past --timeout).

    The server never answers and ignores SIGTERM, so stopping it takes its graces:
    the error line must arrive well before the command ends, and a line says the
    server is being stopped.
    """
    server = f"{sys.executable} {PEERS_DIR / 'stdio_peer.py'} --ignore-sigterm"
    argv = [sys.executable, "-m", "jsonrpc_threads", "rpc", "--stdio", server, "never", "--timeout", "1"]
    process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stderr is not None
    lines = []
    try:
        while True:
            ready, _, _ = select.select([process.stderr], [], [], 30.0)
            assert ready, "no output within 30 s"
            line = process.stderr.readline()
            if not line:
                break
            lines.append((time.monotonic(), line.decode()))
        ended = time.monotonic()
        assert process.wait(timeout=30.0) == 4
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()
    shown = [when for when, text in lines if "no answer to 'never' within 1.0s" in text]
    assert shown, lines
    assert ended - shown[0] >= 1.0, "the error came only once the server was stopped"
    assert any("stopping the server" in text for _, text in lines), lines


def test_verbose_goes_before_or_after_the_command_and_help_shows_examples() -> None:
    """Issue 47, first hour: -v worked only after the subcommand; --help had no examples."""
    parser = build_parser()
    assert parser.parse_args(["-v", "rpc", "--stdio", "x", "ping"]).verbose == 1
    assert parser.parse_args(["rpc", "--stdio", "x", "ping", "-vv"]).verbose == 2
    assert parser.parse_args(["rpc", "--stdio", "x", "ping"]).verbose == 0
    shown = run("--help")
    assert shown.code == 0 and "examples:" in shown.out and "jsonrpc-threads serve" in shown.out


def test_lsp_against_a_server_that_never_answers_initialize_says_so(tmp_path: Path) -> None:
    """Issue 47, first hour: it said "no hover within 3.0s"."""
    source = tmp_path / "app.py"
    source.write_text("x = 1\n")
    silent = f"{sys.executable} {PEERS_DIR / 'stdio_peer.py'} --close-stdout"
    result = run("lsp", "--stdio", silent, "hover", f"{source}:1:1", "--timeout", "1")
    assert result.code == 4, result
    assert one_line(result.err) == "jsonrpc-threads: the server did not answer initialize within 1.0s", result
