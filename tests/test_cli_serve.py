"""``jsonrpc-threads serve``, run as a child process: an McpServer of a module over stdio and HTTP, and its errors."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Iterator, List, Optional

import pytest

from jsonrpc_threads.cli import EXIT_OK, EXIT_USAGE
from jsonrpc_threads.mcp import McpClient

#: Seconds a command may take to start, answer, or stop.
RUN_TIMEOUT_S = 30.0

TOOLS = '''
from jsonrpc_threads.mcp import Context, McpServer

print("a print at import time goes to stderr")

server = McpServer("serve-test")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def count(to: int, ctx: Context) -> str:
    """Report progress up to a number."""
    for step in range(1, to + 1):
        ctx.progress(step, to)
    return f"counted to {to}"
'''

ONLY_ONE = '''
from jsonrpc_threads.mcp import McpServer

tools = McpServer("only-one")


@tools.tool()
def echo(text: str) -> str:
    """Say it back."""
    return text
'''

TWO = """
from jsonrpc_threads.mcp import McpServer

first = McpServer("first")
second = McpServer("second")
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "my_tools.py").write_text(TOOLS, encoding="utf-8")
    (tmp_path / "only_one.py").write_text(ONLY_ONE, encoding="utf-8")
    (tmp_path / "two.py").write_text(TWO, encoding="utf-8")
    (tmp_path / "broken.py").write_text("raise RuntimeError('no database configured')\n", encoding="utf-8")
    (tmp_path / "needs_dep.py").write_text("import not_installed_anywhere\n", encoding="utf-8")
    return tmp_path


def serve_command(*args: str) -> List[str]:
    return [sys.executable, "-m", "jsonrpc_threads", "serve", *args]


def stdio_client(project: Path, *args: str) -> McpClient:
    argv = serve_command(*args)
    return McpClient({"command": argv[0], "args": argv[1:], "cwd": str(project)}, default_timeout=RUN_TIMEOUT_S)


@pytest.mark.parametrize("target", ["my_tools", "my_tools:server", "my_tools.py", "my_tools.py:server"])
@pytest.mark.parametrize("mode", ["auto", "session"])
def test_serve_over_stdio_a_module_or_a_file(project: Path, target: str, mode: str) -> None:
    with stdio_client(project, target) as client:
        assert client.call_tool("add", {"a": 2, "b": 3})["structuredContent"] == {"result": 5}
        assert progress_of_count(client, 3) == [1, 2, 3]


def progress_of_count(client: McpClient, to: int) -> List[float]:
    """Call ``count``; the progress it reported."""
    seen: List[float] = []
    result = client.call_tool("count", {"to": to}, on_progress=lambda params: seen.append(params["progress"]))
    assert result["content"][0]["text"] == f"counted to {to}"
    return seen


def test_serve_finds_the_only_server_of_a_module(project: Path) -> None:
    with stdio_client(project, str(project / "only_one.py")) as client:
        assert [tool["name"] for tool in client.list_tools()] == ["echo"]


class HttpServe:
    """``serve --http`` as a child process: its URL read from its first line, within a bound."""

    def __init__(self, project: Path, *args: str) -> None:
        self.process = subprocess.Popen(
            serve_command(*args),
            cwd=str(project),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        killer = threading.Timer(RUN_TIMEOUT_S, self.process.kill)  # a child that never prints its URL: EOF
        killer.start()
        try:
            assert self.process.stdout is not None
            self.url = self.process.stdout.readline().strip()
        finally:
            killer.cancel()
            killer.join()

    def stop(self, signum: int) -> subprocess.CompletedProcess[str]:
        self.process.send_signal(signum)
        out, err = self.process.communicate(timeout=RUN_TIMEOUT_S)
        return subprocess.CompletedProcess(self.process.args, self.process.returncode, out, err)

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.communicate(timeout=RUN_TIMEOUT_S)


@pytest.fixture
def http_serve(project: Path) -> Iterator[HttpServe]:
    served = HttpServe(project, "my_tools:server", "--http", "127.0.0.1:0")
    try:
        yield served
    finally:
        served.close()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_serve_over_http_in_both_eras_until_a_signal(http_serve: HttpServe, signum: int) -> None:
    assert http_serve.url.startswith("http://127.0.0.1:") and http_serve.url.endswith("/mcp"), http_serve.url
    for mode, era in (("auto", "stateless"), ("session", "session")):
        with McpClient({"url": http_serve.url}, mode=mode, default_timeout=RUN_TIMEOUT_S) as client:
            assert client.era == era
            assert progress_of_count(client, 2) == [1, 2]
    stopped = http_serve.stop(signum)
    assert stopped.returncode == EXIT_OK, stopped
    assert stopped.stdout == "", stopped  # the URL was the only line
    assert "Traceback" not in stopped.stderr, stopped
    assert "a print at import time goes to stderr" in stopped.stderr


def run_serve(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        serve_command(*args),
        cwd=str(project),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        check=False,
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nowhere:server"], "no module named 'nowhere'"),
        (["nowhere.py"], "'nowhere.py' is not a .py file"),
        (["my_tools:srv"], "my_tools has no attribute 'srv'"),
        (["my_tools:add"], "my_tools:add is a function, not an McpServer"),
        (["my_tools:"], "is not MODULE:SERVER"),
        (["two"], "two holds several McpServers (first, second)"),
        (["broken.py"], "importing broken.py failed: RuntimeError: no database configured"),
        (["needs_dep"], "importing needs_dep failed: ModuleNotFoundError: No module named 'not_installed_anywhere'"),
        (["my_tools", "--http", "127.0.0.1:http"], "the port must be a number"),
    ],
)
def test_a_target_that_leads_nowhere_is_one_line_and_the_usage_exit_code(
    project: Path, args: List[str], message: str
) -> None:
    completed = run_serve(project, *args)
    assert completed.returncode == EXIT_USAGE, completed
    lines = [line for line in completed.stderr.splitlines() if not line.startswith("a print at import time")]
    assert len(lines) == 1 and lines[0].startswith("jsonrpc-threads: "), completed
    assert message in lines[0], completed
    assert completed.stdout == ""


def test_an_address_in_use_is_one_line_and_the_usage_exit_code(http_serve: HttpServe, project: Path) -> None:
    taken: Optional[str] = http_serve.url.split("//", 1)[1].split("/", 1)[0]
    assert taken is not None
    completed = run_serve(project, "my_tools", "--http", taken)
    assert completed.returncode == EXIT_USAGE, completed
    assert completed.stderr.splitlines()[-1].startswith(f"jsonrpc-threads: cannot listen on {taken}: "), completed
