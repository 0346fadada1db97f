"""Test-wide fixtures: every test must leave no thread, child process or file behind.

Also the suite's tiers and its parallel runs.  A test that needs more than
Python, this package and its own peers (``tests/peers/``) is marked here, by
file, test or fixture (`NEEDS`), with what it needs: ``node`` (the npm peers in
``tests/node``), ``browser`` (Chromium) or ``thirdparty`` (a third-party server
or tool: the official MCP and ACP SDKs, pylsp, gunicorn, the snippets' virtual
environments).  ``make test-fast`` deselects the three.  Under pytest-xdist
(``make test`` runs ``-n``, ``--dist loadgroup``), the tests of a file that
share a fixture made once per module or session run on one worker, so it is
made once; every other test goes to whichever worker is free.

On Linux the test process makes itself a child subreaper
(``prctl(PR_SET_CHILD_SUBREAPER)``): a grandchild orphaned by its parent's end is
adopted by the test process, not by init, so the leak fixture sees it (and kills
and reaps it) instead of letting it run on after the suite.
"""

from __future__ import annotations

import ctypes
import fnmatch
import functools
import gc
import importlib.util
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Set, Tuple, TypeVar

import psutil
import pytest

from jsonrpc_threads.runtime.scheduler import Scheduler

TESTS_DIR = Path(__file__).resolve().parent
PEERS_DIR = TESTS_DIR / "peers"

#: Threads that live for the whole process by design.
PROCESS_WIDE_THREADS = {"jsonrpc-timer"}
#: How long a test's threads and children get to finish after it returned.
LEAK_GRACE_S = 5.0
#: How long the leak fixture waits for what it killed to be gone (and reaped).
REAP_S = 5.0
#: prctl(2)'s option that makes the caller adopt its orphaned descendants (Linux 3.4+).
PR_SET_CHILD_SUBREAPER = 36


def _become_subreaper() -> bool:
    """Adopt orphaned descendants, so the leak fixture sees a grandchild whose parent ended (Linux only)."""
    if not sys.platform.startswith("linux"):
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    return bool(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)


SUBREAPER = _become_subreaper()


#: What a test needs beyond Python, this package and tests/peers/: a marker each (pyproject.toml
#: registers them). Keys: a file (``test_x.py``), tests of a file (``test_x.py::test_glob*``), or a
#: fixture (``fixture:name_glob*``, or ``test_x.py::fixture:name``) that starts such a peer.
NEEDS: Dict[str, Tuple[str, ...]] = {
    "test_docs.py": ("browser",),
    "test_mcp_conformance.py": ("node",),
    "test_mcp_server_conformance.py": ("node",),
    "test_mcp_everything.py": ("node",),
    "test_acp_typescript.py": ("node",),
    "test_lsp_servers.py": ("node", "thirdparty"),  # pyright (npm) and pylsp
    "test_mcp_sdk.py": ("thirdparty",),
    "test_mcp_extensions.py": ("thirdparty",),
    "test_acp.py": ("thirdparty",),  # the agent is written on the official ACP SDK
    "test_acp_cli.py": ("thirdparty",),
    "test_acp_files.py": ("thirdparty",),
    "test_snippets.py": ("thirdparty",),  # a virtual environment per page, from PyPI
    "test_loadtest_smoke.py": ("thirdparty",),  # gunicorn and waitress, in processes of their own
    "test_benchmarks_smoke.py": ("thirdparty",),  # every case, the official SDKs' baselines among them
    "test_cli.py::test_lsp_*": ("node", "thirdparty"),
    "test_cli.py::test_rpc_over_http": ("thirdparty",),
    "test_cli.py::fixture:config": ("thirdparty",),  # its configuration starts the SDK's server
    "test_mcp_server_schema.py::test_pydantic_*": ("thirdparty",),  # pydantic comes with the official SDKs
    "test_mcp_server_interop.py::test_sdk_*": ("thirdparty",),  # the official SDK's client
    "test_mcp_server_interop.py::test_fastmcp_*": ("thirdparty",),
    "test_mcp_server_interop.py::test_gunicorn_*": ("thirdparty",),
    "test_mcp_server_interop.py::test_typescript_*": ("node",),  # the TypeScript SDK's client
    "fixture:sdk_*": ("thirdparty",),  # the official MCP SDK's servers
    "fixture:everything_*": ("node",),  # the npm reference server
}
TIERS = ("node", "browser", "thirdparty")

_Decorated = TypeVar("_Decorated", bound=Callable[..., Any])


def _marks(*marks: pytest.MarkDecorator) -> Callable[[_Decorated], _Decorated]:
    """Several marks as one decorator."""

    def decorate(test: _Decorated) -> _Decorated:
        for mark in marks:
            test = mark(test)
        return test

    return decorate


#: Tests that run the official MCP SDK as a peer (it needs Python 3.10+).
needs_sdk = _marks(
    pytest.mark.thirdparty,
    pytest.mark.skipif(
        importlib.util.find_spec("mcp") is None, reason="the official MCP SDK (mcp, Python 3.10+) is not installed"
    ),
)
#: Tests whose agent is written on the official ACP SDK (Python 3.10+).
needs_acp_sdk = _marks(
    pytest.mark.thirdparty,
    pytest.mark.skipif(
        importlib.util.find_spec("acp") is None,
        reason="the official ACP SDK (agent-client-protocol, Python 3.10+) is not installed",
    ),
)


def _needs(item: pytest.Item) -> Set[str]:
    """What ``NEEDS`` says one test needs."""
    file = item.path.name
    name = getattr(item, "originalname", item.name)
    needed: Set[str] = set()
    for key, tiers in NEEDS.items():
        where, _, what = key.rpartition("::") if "::" in key else ("", "", key)
        if where and where != file:
            continue
        if what.startswith("fixture:"):
            hit = any(fnmatch.fnmatchcase(fixture, what[len("fixture:") :]) for fixture in item.fixturenames)
        else:
            hit = fnmatch.fnmatchcase(name, what) if where else what == file
        if hit:
            needed.update(tiers)
    return needed


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: List[pytest.Item]) -> None:
    needing = set()
    for index, item in enumerate(items):
        for tier in sorted(_needs(item)):
            item.add_marker(getattr(pytest.mark, tier))
            needing.add(index)
    if hasattr(config, "workerinput"):  # an xdist worker: the slow tests (their peers) are handed out first
        items[:] = [item for index, item in enumerate(items) if index in needing] + [
            item for index, item in enumerate(items) if index not in needing
        ]


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> Optional[bool]:
    """Leave out, unread, a file whose every test ``-m`` deselects for what it needs (the fast tier starts sooner)."""
    tiers = NEEDS.get(collection_path.name)
    expression = config.getoption("markexpr", "")
    if not tiers or not expression:
        return None
    try:
        from _pytest.mark.expression import Expression  # noqa: PLC0415 - pytest's own -m parser

        compiled = Expression.compile(expression)
    except Exception:  # another pytest: collect the file, -m still deselects its tests
        return None
    # Deselected however its tests are otherwise marked: with every other marker absent, and present.
    if not any(
        compiled.evaluate(lambda name, other=other, **_: name in tiers or (other and name not in TIERS))
        for other in (False, True)
    ):
        return True
    return None


#: Files whose shared fixture is cheap to make on every worker (it only finds Node 22): spread, not grouped.
SPREAD = {"test_mcp_conformance.py"}
#: How a fixture made once for many tests is declared: ``@pytest.fixture(scope="module")`` and wider.
_SHARED_SCOPE = re.compile(r"@pytest\.fixture\([^)]*scope=[\"'](module|package|session)[\"']")


@functools.cache
def _shares_a_fixture(path: Path) -> bool:
    """Whether a test file declares a fixture that its tests share (module scope or wider)."""
    try:
        return _SHARED_SCOPE.search(path.read_text(encoding="utf-8")) is not None
    except OSError:
        return False


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadgroup``: a file that shares a fixture among its tests is one group, on one worker.

    Every other test is a work unit of its own, sent to whichever worker is free.
    The controller sees only node ids, so the groups are read from the files' text.
    (xdist's own ``xdist_group`` marks still count.)
    """
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling  # noqa: PLC0415 - only under xdist

    root = config.rootpath

    class FileGroups(LoadGroupScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            if "@" in nodeid.rsplit("::", 1)[-1]:
                return str(super()._split_scope(nodeid))
            file = nodeid.split("::", 1)[0]
            grouped = Path(file).name not in SPREAD and _shares_a_fixture(root / file)
            return file if grouped else nodeid

    return FileGroups(config, log)


def peer_command(name: str, *flags: str) -> List[str]:
    """The argv of the test peer ``tests/peers/<name>.py``."""
    return [sys.executable, str(PEERS_DIR / f"{name}.py"), *flags]


def _live_threads(before: Set[threading.Thread]) -> List[threading.Thread]:
    return [t for t in threading.enumerate() if t not in before and t.is_alive() and t.name not in PROCESS_WIDE_THREADS]


def _children() -> List[psutil.Process]:
    try:
        return [p for p in psutil.Process().children(recursive=True) if p.status() != psutil.STATUS_ZOMBIE]
    except psutil.Error:
        return []


@pytest.fixture
def scheduler() -> Iterator[Scheduler]:
    """A timer scheduler of the test's own (not the process-wide one), stopped and joined afterwards."""
    s = Scheduler(name="jsonrpc-timer-test")
    try:
        yield s
    finally:
        s.stop(timeout=LEAK_GRACE_S)
        assert s.thread is None or not s.thread.is_alive()


@pytest.fixture(autouse=True)
def no_leaks(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fail a test that leaves threads, child processes or open file descriptors behind."""
    before_threads = set(threading.enumerate())
    before_children = {p.pid for p in _children()}
    me = psutil.Process()
    before_fds = me.num_fds()
    yield
    deadline = time.monotonic() + LEAK_GRACE_S
    leftover = _live_threads(before_threads)
    while leftover and time.monotonic() < deadline:
        leftover[0].join(max(0.0, deadline - time.monotonic()))
        leftover = _live_threads(before_threads)
    new_children = [p for p in _children() if p.pid not in before_children]
    if new_children:
        _, alive = psutil.wait_procs(new_children, timeout=max(0.1, deadline - time.monotonic()))
        new_children = [p for p in alive if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    fds = me.num_fds()
    if fds > before_fds:
        gc.collect()
        fds = me.num_fds()
    problems = []
    if leftover:
        problems.append(f"threads left running: {[t.name for t in leftover]}")
    if new_children:
        problems.append(f"child processes left running: {[_describe(p) for p in new_children]}")
        for p in new_children:
            try:
                p.kill()
            except psutil.Error:
                pass
        psutil.wait_procs(new_children, timeout=REAP_S)  # reaps those that are (or were adopted as) children
    _reap_adopted_zombies()
    if fds > before_fds:
        problems.append(f"file descriptors leaked: {before_fds} -> {fds}: {_fd_targets()}")
    if problems:
        pytest.fail("; ".join(problems), pytrace=False)


def _describe(process: psutil.Process) -> Tuple[int, List[str]]:
    try:
        return process.pid, process.cmdline()
    except psutil.Error:
        return process.pid, []


def _reap_adopted_zombies() -> None:
    """Reap the ended orphans this (subreaper) process adopted; never a child a ``Popen`` of a test owns."""
    try:
        zombies = {p.pid for p in psutil.Process().children() if p.status() == psutil.STATUS_ZOMBIE}
    except psutil.Error:
        return
    if not zombies:
        return
    owned = {obj.pid for obj in gc.get_objects() if isinstance(obj, subprocess.Popen)}
    for pid in zombies - owned:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass


def _fd_targets() -> List[str]:
    targets = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            targets.append(f"{fd}:{os.readlink('/proc/self/fd/' + fd)}")
        except OSError:
            pass
    return targets
