"""Every code example of README.md and docs/ runs as written.

Each fenced block is found with the HTML comment (if any) on the line just
before it, which says what to do with it:

- a ``python`` block without a comment runs in a fresh interpreter
  (``sys.executable``), with the virtual environment *not* on ``PATH``: a
  snippet that starts a child must name its interpreter (``sys.executable``);
- ``<!-- test: file NAME -->``: the block is written to ``NAME`` in the page's
  directory, for the page's other blocks (a config, a server);
- ``<!-- test: run -->``: each line of a shell block runs in ``bash`` with the
  virtual environment first on ``PATH``, as if it were activated; each must
  exit 0;
- ``<!-- test: pytest NAME -->``: the block is written to ``NAME`` and run with
  pytest, which must pass;
- ``<!-- test: skip REASON -->``: not run (it needs what the suite cannot have:
  an API key, a remote server); reported as a skip with the reason.

Other blocks (JSON, plain shell lines, text) are prose.  Each block runs in a
temporary directory per test holding the page's ``file`` blocks, in a session
of its own: every process it started must be gone when it ends.  Only loopback
peers are involved (the bundled example servers).
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional

import psutil
import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
#: Seconds one snippet may take (it starts Python and a server or two).
SNIPPET_TIMEOUT_S = 60.0
#: How long the processes a snippet left get to exit before the test fails.
LEFTOVER_GRACE_S = 5.0

_FENCE = re.compile(r"^```([\w+-]*)[^\n]*$")
_DIRECTIVE = re.compile(r"^<!--\s*test:\s*(\w+)\s*(.*?)\s*-->$")
DIRECTIVES = {"file", "run", "pytest", "skip"}
SHELL = {"sh", "bash", "console", "shell"}


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # 1-based line of the opening fence
    language: str
    code: str
    directive: Optional[str]
    argument: str

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks_of(page: Path) -> List[Block]:
    lines = page.read_text(encoding="utf-8").splitlines()
    found: List[Block] = []
    index = 0
    while index < len(lines):
        match = _FENCE.match(lines[index])
        if not match:
            index += 1
            continue
        start = index
        end = index + 1
        while end < len(lines) and lines[end].rstrip() != "```":
            end += 1
        assert end < len(lines), f"{page}:{start + 1}: a code block that is never closed"
        directive, argument = None, ""
        previous = start - 1
        while previous >= 0 and not lines[previous].strip():
            previous -= 1
        if previous >= 0:
            comment = _DIRECTIVE.match(lines[previous].strip())
            if comment:
                directive, argument = comment.group(1), comment.group(2)
                assert directive in DIRECTIVES, f"{page}:{previous + 1}: unknown directive {directive!r}"
        code = "\n".join(lines[start + 1 : end]) + "\n"
        found.append(Block(page, start + 1, match.group(1).lower(), code, directive, argument))
        index = end + 1
    return found


ALL_BLOCKS = [block for page in PAGES for block in blocks_of(page)]
RUNNABLE = [
    block
    for block in ALL_BLOCKS
    if block.directive in ("run", "pytest", "skip") or (block.language == "python" and block.directive is None)
]


def _venv_bin() -> Path:
    return Path(sys.executable).parent


def _environment(activated: bool) -> Dict[str, str]:
    env = dict(os.environ)
    venv_bin = str(_venv_bin())
    path = [p for p in env.get("PATH", "").split(os.pathsep) if p and Path(p) != Path(venv_bin)]
    env.pop("VIRTUAL_ENV", None)
    env.pop("PYTHONPATH", None)
    if activated:
        path.insert(0, venv_bin)
        env["VIRTUAL_ENV"] = sys.prefix
    env["PATH"] = os.pathsep.join(path)
    return env


def _leftovers(session: int) -> List[psutil.Process]:
    left = []
    for process in psutil.process_iter():
        try:
            mine = process.pid != session and os.getsid(process.pid) == session
            if mine and process.status() != psutil.STATUS_ZOMBIE:
                left.append(process)
        except (psutil.Error, OSError):
            pass
    return left


def _run(argv: List[str], cwd: Path, env: Dict[str, str], what: str) -> subprocess.CompletedProcess[str]:
    # Output goes to files, not pipes: a process the snippet left behind would
    # hold a pipe open, and waiting for its end would hide the leak.
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(
            argv,
            cwd=str(cwd),
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            text=True,
            start_new_session=True,  # its own session: whatever it starts can be found afterwards
        )
        try:
            proc.wait(SNIPPET_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        _, alive = psutil.wait_procs(_leftovers(proc.pid), timeout=LEFTOVER_GRACE_S)
        for process in alive:
            process.kill()
        psutil.wait_procs(alive, timeout=LEFTOVER_GRACE_S)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if proc.returncode == -signal.SIGKILL:
        pytest.fail(f"{what} did not finish within {SNIPPET_TIMEOUT_S}s\nstdout:\n{stdout}\nstderr:\n{stderr}")
    assert not alive, f"{what} left processes running: {[p.pid for p in alive]}"
    return subprocess.CompletedProcess(argv, proc.returncode, stdout, stderr)


def _prepare(block: Block, directory: Path) -> None:
    """Write the page's ``file`` blocks into the directory."""
    for other in blocks_of(block.page):
        if other.directive == "file":
            target = directory / other.argument
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(other.code, encoding="utf-8")


@pytest.mark.parametrize("block", RUNNABLE, ids=[block.name for block in RUNNABLE])
def test_snippet_runs_as_written(block: Block, tmp_path: Path) -> None:
    if block.directive == "skip":
        assert block.argument, f"{block.name}: a skipped block says why"
        pytest.skip(f"{block.name} not run: {block.argument}")
    _prepare(block, tmp_path)
    if block.directive == "run":
        assert block.language in SHELL, f"{block.name}: 'run' is for shell blocks"
        env = _environment(activated=True)
        for number, command in enumerate(block.code.splitlines(), start=block.line + 1):
            if not command.strip() or command.lstrip().startswith("#"):
                continue
            result = _run(["bash", "-c", f"set -eo pipefail; {command}"], tmp_path, env, f"{block.page.name}:{number}")
            assert result.returncode == 0, f"{block.page.name}:{number}: {command}\n{result.stdout}\n{result.stderr}"
        return
    env = _environment(activated=False)
    if block.directive == "pytest":
        script = tmp_path / block.argument
        script.write_text(block.code, encoding="utf-8")
        argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(tmp_path), script.name]
    else:
        script = tmp_path / f"snippet_{block.line}.py"
        script.write_text(block.code, encoding="utf-8")
        argv = [sys.executable, script.name]
    result = _run(argv, tmp_path, env, block.name)
    assert result.returncode == 0, f"{block.name} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}"


def test_the_readme_opens_with_the_two_set_up_commands() -> None:
    first = next(block for block in blocks_of(ROOT / "README.md"))
    commands = [line.split("#")[0].strip() for line in first.code.splitlines() if line.strip()]
    assert commands == ["make demo", "make test"]


def test_python_snippets_start_children_with_sys_executable() -> None:
    """A bare ``python`` in a Python snippet is whatever comes first on PATH: never in a snippet that runs."""
    for block in RUNNABLE:
        if block.language == "python" and block.directive != "skip":
            for token in ('"python"', "'python'", '"python3"', "'python3'"):
                assert token not in block.code, f"{block.name}: starts {token}; use sys.executable"


def test_directives_are_well_formed() -> None:
    for block in ALL_BLOCKS:
        if block.directive in ("file", "pytest"):
            assert block.argument and "/" not in shlex.split(block.argument)[0], block.name
        if block.directive == "run":
            assert block.language in SHELL, block.name
    assert any(block.directive == "run" for block in ALL_BLOCKS)
    assert sum(block.language == "python" and block.directive is None for block in ALL_BLOCKS) >= 10
