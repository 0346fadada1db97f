"""Test-wide fixtures: every test must leave no thread, child process or file behind."""

from __future__ import annotations

import gc
import importlib.util
import os
import sys
import threading
import time
from pathlib import Path
from typing import Iterator, List, Set

import psutil
import pytest

from jsonrpc_threads._scheduler import Scheduler

TESTS_DIR = Path(__file__).resolve().parent
PEERS_DIR = TESTS_DIR / "peers"

#: Threads that live for the whole process by design.
PROCESS_WIDE_THREADS = {"jsonrpc-timer"}
#: How long a test's threads and children get to finish after it returned.
LEAK_GRACE_S = 5.0


#: Tests that run the official MCP SDK as a peer (it needs Python 3.10+).
needs_sdk = pytest.mark.skipif(
    importlib.util.find_spec("mcp") is None, reason="the official MCP SDK (mcp, Python 3.10+) is not installed"
)


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
        problems.append(f"child processes left running: {[(p.pid, p.cmdline()) for p in new_children]}")
        for p in new_children:
            try:
                p.kill()
            except psutil.Error:
                pass
    if fds > before_fds:
        problems.append(f"file descriptors leaked: {before_fds} -> {fds}: {_fd_targets()}")
    if problems:
        pytest.fail("; ".join(problems), pytrace=False)


def _fd_targets() -> List[str]:
    targets = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            targets.append(f"{fd}:{os.readlink('/proc/self/fd/' + fd)}")
        except OSError:
            pass
    return targets
