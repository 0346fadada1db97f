"""Every code example of README.md and docs/ runs as written, with what its page says to install.

Each fenced block is found with the HTML comment (if any) on the line just
before it, which says what to do with it:

- a ``python`` block without a comment runs in a fresh interpreter of its
  virtual environment (below), with no virtual environment on ``PATH``: a
  snippet that starts a child must name its interpreter (``sys.executable``);
- ``<!-- test: file NAME -->``: the block is written to ``NAME`` in the page's
  directory, for the page's other blocks (a config, a server);
- ``<!-- test: run -->``: each line of a shell block runs in ``bash`` with the
  block's virtual environment first on ``PATH``, as if it were activated; each
  must exit 0;
- ``<!-- test: pytest NAME -->``: the block is written to ``NAME`` and run with
  pytest, which must pass;
- ``<!-- test: skip REASON -->``: not run (it needs what the suite cannot have:
  an API key, a remote server); reported as a skip with the reason.

Other blocks (JSON, plain shell lines, text) are prose.

What a block may import is what its page says to install, where it stands: a
shell block of ``pip install`` lines (``pip install '.[web]' waitress``) states
what every block after it in the same section needs (the section of its
heading, subsections included; one under the page's title, the whole page).
Each block runs in a virtual environment holding the package installed from
this working tree (editable, so it runs the code as it is now) plus exactly
those requirements: ``.`` and ``'.[extra]'`` (or a built wheel of the package)
name the package and its extras, anything else a requirement from PyPI.  The
environments are made on first use and kept under ``build/snippet-envs``, one
per set of requirements (and Python, and packaging metadata), so a second run
pays nothing; a snippet that needs something its page never names fails.

Each block runs in a temporary directory per test holding the page's ``file``
blocks, in a session of its own: every process it started must be gone when
it ends.  Only loopback peers are involved (the bundled example servers).
"""

from __future__ import annotations

import ast
import hashlib
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, FrozenSet, List, Optional, Tuple

import psutil
import pytest

from .locks import exclusive

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", ROOT / "LONG_DESCRIPTION.md", *sorted((ROOT / "docs").rglob("*.md"))]
#: Seconds one snippet may take (it starts Python and a server or two).
SNIPPET_TIMEOUT_S = 60.0
#: How long the processes a snippet left get to exit before the test fails.
LEFTOVER_GRACE_S = 5.0
#: Where the snippets' virtual environments are kept between runs.
ENVS_DIR = ROOT / "build" / "snippet-envs"
#: Seconds making one environment may take (pip installing from PyPI).
ENV_BUILD_TIMEOUT_S = 600.0
#: Builds the editable wheel into the directory given (PEP 660, the [build-system] table's backend).
BUILD_EDITABLE = "import sys, setuptools.build_meta as backend; backend.build_editable(sys.argv[1])"
#: What the package's own installation depends on: a change makes new environments.
PACKAGING_FILES = ("pyproject.toml", "setup.cfg")
#: Requirements (by name) that need a newer Python than the package's 3.9, as their pages say.
NEEDS_PYTHON = {"mcp": (3, 10), "agent-client-protocol": (3, 10), "a2a-sdk": (3, 10)}

_FENCE = re.compile(r"^```([\w+-]*)[^\n]*$")
_DIRECTIVE = re.compile(r"^<!--\s*test:\s*(\w+)\s*(.*?)\s*-->$")
_HEADING = re.compile(r"^(#{1,6})\s")
DIRECTIVES = {"file", "run", "pytest", "skip"}
SHELL = {"sh", "bash", "console", "shell"}
#: The commands that install, as a line of a shell block starts them.
_PIP = (
    ["pip", "install"],
    ["pip3", "install"],
    ["python", "-m", "pip", "install"],
    ["python3", "-m", "pip", "install"],
)
#: The package itself, as an install line names it: ".", ".[extras]", or a built wheel of it.
_THIS_PACKAGE = re.compile(r"^(?:\.|dist/jsonrpc_threads-[^\s\[]*\.whl)(?:\[([\w,\s-]*)\])?$")


@dataclass(frozen=True)
class Requirements:
    """What a block's page says to install: extras of the package, and other requirements."""

    extras: FrozenSet[str] = frozenset()
    others: FrozenSet[str] = frozenset()

    def __or__(self, other: Requirements) -> Requirements:
        return Requirements(self.extras | other.extras, self.others | other.others)

    def describe(self) -> str:
        package = f".[{','.join(sorted(self.extras))}]" if self.extras else "."
        return " ".join([package, *sorted(self.others)])


def install_lines(code: str) -> Requirements:
    """The requirements of the ``pip install`` commands in a shell block (comments and other commands ignored)."""
    found = Requirements()
    for line in code.splitlines():
        try:
            words = shlex.split(line, comments=True)
        except ValueError:
            continue
        command: List[str] = []
        for word in [*words, "&&"]:
            if word not in ("&&", ";", "||"):
                command.append(word)
                continue
            for prefix in _PIP:
                if command[: len(prefix)] == prefix:
                    found = found | _requirements(command[len(prefix) :])
            command = []
    return found


def _requirements(arguments: List[str]) -> Requirements:
    extras: set[str] = set()
    others: set[str] = set()
    for argument in arguments:
        if argument.startswith("-"):
            continue  # -e, --upgrade, -q: how, not what
        package = _THIS_PACKAGE.match(argument)
        if package:
            extras.update(e.strip() for e in (package.group(1) or "").split(",") if e.strip())
        else:
            others.add(argument)
    return Requirements(frozenset(extras), frozenset(others))


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # 1-based line of the opening fence
    language: str
    code: str
    directive: Optional[str]
    argument: str
    requirements: Requirements = Requirements()

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks_of(page: Path) -> List[Block]:
    """The fenced blocks of a page, each with its directive and what its page says to install for it."""
    lines = page.read_text(encoding="utf-8").splitlines()
    found: List[Block] = []
    sections: List[Tuple[int, Requirements]] = [(0, Requirements())]  # the open headings and their install lines
    index = 0
    while index < len(lines):
        heading = _HEADING.match(lines[index])
        if heading:
            level = len(heading.group(1))
            while sections[-1][0] >= level:
                sections.pop()
            sections.append((level, Requirements()))
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
        language = match.group(1).lower()
        needs = Requirements()
        for _, stated in sections:
            needs = needs | stated
        found.append(Block(page, start + 1, language, code, directive, argument, needs))
        if language in SHELL and directive is None:
            level, stated = sections[-1]
            sections[-1] = (level, stated | install_lines(code))
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


def _skip_if_python_too_old(requirements: Requirements) -> None:
    for requirement in requirements.others:
        name = re.split(r"[\s<>=!~;\[]", requirement, maxsplit=1)[0].lower()
        needed = NEEDS_PYTHON.get(name)
        if needed is not None and sys.version_info[:2] < needed:
            pytest.skip(f"{requirement} needs Python {needed[0]}.{needed[1]}+")


def _packaging_key(requirements: str = "") -> str:
    """What names a build: this Python, the packaging files (a change makes new ones) and ``requirements``."""
    digest = hashlib.sha256(f"{sys.version_info[0]}.{sys.version_info[1]}\n{requirements}\n".encode())
    for name in PACKAGING_FILES:
        path = ROOT / name
        digest.update(path.read_bytes() if path.exists() else b"")
    return digest.hexdigest()[:16]


def made_once(target: Path, what: str, build: Callable[[Path], None]) -> Path:
    """``target``, made by ``build(target)`` on first use and kept for the runs after; ``target``.

    Made where it stays and marked complete last: one that a failed or
    interrupted run left unmarked is made again.  One process builds it at a
    time (a lock file beside it): the suite's workers, and runs side by side,
    wait for it, then use it.
    """
    complete = target / ".complete"
    if complete.exists():
        return target
    ENVS_DIR.mkdir(parents=True, exist_ok=True)
    with exclusive(target.with_name(target.name + ".lock"), timeout=ENV_BUILD_TIMEOUT_S, what=what):
        if not complete.exists():
            shutil.rmtree(target, ignore_errors=True)
            try:
                build(target)
                complete.touch()
            except BaseException:
                shutil.rmtree(target, ignore_errors=True)
                raise
    return target


def environment_for(requirements: Requirements) -> Path:
    """The virtual environment for a set of requirements (``made_once``); its directory.

    Holds the package, installed editable from this working tree with the
    extras asked for, and the other requirements, from PyPI.  It is made where
    it stays: a venv's scripts name their interpreter by its path.
    """
    target = ENVS_DIR / f"py{sys.version_info[0]}.{sys.version_info[1]}-{_packaging_key(requirements.describe())}"
    return made_once(target, "a snippet venv", lambda directory: _build_environment(directory, requirements))


def editable_wheel() -> Path:
    """The package as an editable wheel of this working tree, built once and installed into every environment.

    Built with the suite's own setuptools (the test extra has what the
    ``[build-system]`` table asks for): pip would otherwise set up a build
    environment and build the package again for each snippet environment.
    """
    directory = made_once(ENVS_DIR / f"wheel-{_packaging_key()}", "the wheel", _build_wheel)
    (wheel,) = directory.glob("*.whl")
    return wheel


def _build_wheel(directory: Path) -> None:
    directory.mkdir()
    completed = subprocess.run(
        [sys.executable, "-c", BUILD_EDITABLE, str(directory)],
        cwd=str(ROOT),
        timeout=ENV_BUILD_TIMEOUT_S,
        capture_output=True,
        text=True,
        check=False,
    )
    assert completed.returncode == 0, f"building the editable wheel failed:\n{completed.stderr}"


def _build_environment(target: Path, requirements: Requirements) -> None:
    # The suite's own pip installs into it (``--python``): no pip of its own to set up (ensurepip),
    # nothing byte-compiled that no snippet imports (a snippet compiles what it imports, once), and
    # the package from the one editable wheel, not built again for each environment.
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(target)],
        check=True,
        timeout=ENV_BUILD_TIMEOUT_S,
        capture_output=True,
    )
    wheel = str(editable_wheel())
    package = f"{wheel}[{','.join(sorted(requirements.extras))}]" if requirements.extras else wheel
    pip = [sys.executable, "-m", "pip", "--python", str(target / "bin" / "python")]
    install = [*pip, "install", "--quiet", "--disable-pip-version-check", "--no-compile"]
    completed = subprocess.run(
        [*install, package, *sorted(requirements.others)],
        timeout=ENV_BUILD_TIMEOUT_S,
        capture_output=True,
        text=True,
        check=False,
    )
    assert completed.returncode == 0, f"pip install {requirements.describe()} failed:\n{completed.stderr}"
    (target / "requirements.txt").write_text(requirements.describe() + "\n", encoding="utf-8")


def _environment(venv: Optional[Path]) -> Dict[str, str]:
    """The process environment of a snippet: ``venv`` activated (first on ``PATH``), or no venv at all."""
    env = dict(os.environ)
    hidden = {_venv_bin(), *((venv / "bin",) if venv is not None else ())}
    path = [p for p in env.get("PATH", "").split(os.pathsep) if p and Path(p) not in hidden]
    env.pop("VIRTUAL_ENV", None)
    env.pop("PYTHONPATH", None)
    if venv is not None:
        path.insert(0, str(venv / "bin"))
        env["VIRTUAL_ENV"] = str(venv)
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


@pytest.mark.timeout(ENV_BUILD_TIMEOUT_S + SNIPPET_TIMEOUT_S * 4)
@pytest.mark.parametrize("block", RUNNABLE, ids=[block.name for block in RUNNABLE])
def test_snippet_runs_as_written(block: Block, tmp_path: Path) -> None:
    _skip_if_python_too_old(block.requirements)
    if block.directive == "skip":
        assert block.argument, f"{block.name}: a skipped block says why"
        if block.language == "python":
            missing = _unresolved_imports(block)
            assert not missing, f"{block.name} imports {missing}, which its page never says to install"
        pytest.skip(f"{block.name} not run: {block.argument}")
    venv = environment_for(block.requirements)
    python = str(venv / "bin" / "python")
    _prepare(block, tmp_path)
    if block.directive == "run":
        assert block.language in SHELL, f"{block.name}: 'run' is for shell blocks"
        env = _environment(venv)
        for number, command in enumerate(block.code.splitlines(), start=block.line + 1):
            if not command.strip() or command.lstrip().startswith("#"):
                continue
            result = _run(["bash", "-c", f"set -eo pipefail; {command}"], tmp_path, env, f"{block.page.name}:{number}")
            assert result.returncode == 0, (
                f"{block.page.name}:{number} (installed: {block.requirements.describe()}): {command}\n"
                f"{result.stdout}\n{result.stderr}"
            )
        return
    env = _environment(None)
    if block.directive == "pytest":
        script = tmp_path / block.argument
        script.write_text(block.code, encoding="utf-8")
        argv = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(tmp_path), script.name]
    else:
        script = tmp_path / f"snippet_{block.line}.py"
        script.write_text(block.code, encoding="utf-8")
        argv = [python, script.name]
    result = _run(argv, tmp_path, env, block.name)
    assert result.returncode == 0, (
        f"{block.name} failed ({result.returncode}) with only {block.requirements.describe()} installed:\n"
        f"{result.stdout}\n{result.stderr}"
    )


#: Run in a block's environment: which of the modules named on the command line cannot be imported.
_FIND_MODULES = (
    "import importlib.util, sys; print(' '.join(m for m in sys.argv[1:] if importlib.util.find_spec(m) is None))"
)


def _unresolved_imports(block: Block) -> List[str]:
    """The top-level modules a block that is not run imports and its environment lacks."""
    modules = set()
    for node in ast.walk(ast.parse(block.code)):
        if isinstance(node, ast.Import):
            modules.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            modules.add(node.module.split(".")[0])
    python = environment_for(block.requirements) / "bin" / "python"
    found = subprocess.run(
        [str(python), "-c", _FIND_MODULES, *sorted(modules)],
        capture_output=True,
        text=True,
        timeout=SNIPPET_TIMEOUT_S,
        check=True,
        env=_environment(None),
    )
    return found.stdout.split()


def test_install_lines_are_read_as_a_reader_would() -> None:
    assert install_lines("pip install .\n") == Requirements()
    stated = install_lines(
        "python3 -m venv .venv && . .venv/bin/activate\n"
        "pip install '.[web, otel]' waitress  # or gunicorn\n"
        "python -m pip install -q 'python-lsp-server[pyflakes]'\n"
        "pip install 'dist/jsonrpc_threads-0.1.0-py3-none-any.whl[oauth]'\n"
        "echo pip install not-this\n"
    )
    assert stated == Requirements(
        frozenset({"web", "otel", "oauth"}), frozenset({"waitress", "python-lsp-server[pyflakes]"})
    )


def test_a_block_that_is_not_run_still_imports_only_what_its_page_installs(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# Title\n\n```python\nimport json\nimport requests\nfrom flask import Flask\n```\n")
    (block,) = blocks_of(page)
    assert _unresolved_imports(block) == ["flask"]  # requests comes with the package, json with Python


def test_an_install_line_covers_its_section_only(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "# Title\n\n```sh\npip install a\n```\n\n## One\n\n```sh\npip install b\n```\n\n"
        "### Deeper\n\n```python\nprint(1)\n```\n\n## Two\n\n```python\nprint(2)\n```\n",
        encoding="utf-8",
    )
    python = [block for block in blocks_of(page) if block.language == "python"]
    assert [sorted(block.requirements.others) for block in python] == [["a", "b"], ["a"]]


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
