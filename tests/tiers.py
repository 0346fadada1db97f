"""The suite's tiers: the pure tier's guard, and the budget of a property or race test in each tier.

Not a test module.  Theory of operation: the suite has two kinds of test.
A *pure* test runs this package in this process only: clients over
``jsonrpc_threads.testing.MemoryTransport``, servers called in memory, bytes
in and events out.  Every other test carries a marker that says what it
needs (tests/conftest.py sets them from its ``NEEDS`` table): ``peer`` (a
child process or a socket of this package's own: its test peers, its HTTP
servers on 127.0.0.1, a fresh interpreter), ``node``, ``browser``,
``thirdparty`` or ``soak``.  ``make test-fast`` runs the pure tests alone.

The guard makes "pure" checkable rather than a promise.  One audit hook
(``sys.addaudithook``, installed once per test process; a hook cannot be
removed, so it is switched on and off) sees every start of a process
(``subprocess.Popen``, ``os.fork``, ``os.posix_spawn``, ``os.exec``,
``os.system``), every socket made, bound or connected, and every first import
of a third-party peer's package.  While a pure test's setup, call or teardown
runs (on any thread: the library's own threads included), such an event is
refused: the hook raises ``ImpureTest`` where the step was attempted, and
the test fails at the end of that phase with what it tried.  A test that
needs a peer is therefore marked, or it fails in every run, ``make test``
included.

``PURITY_REPORT=<file>`` turns refusing into noting: each event of a pure
test is appended to the file as ``<node id>\t<event>\t<detail>`` and the
step goes ahead (how a new test file is sorted: run it once so, read the file).

A property or race test runs as many cases as ``budget(n)`` gives it: ``n``
in the full tier, a fifth in the fast one (``make test-fast`` sets
``JSONRPC_TESTS_TIER=fast``), so the fast tier stays fast on a shared machine
while the full tier keeps the whole search.

Thread-safety: the switch is one attribute assignment; the hook reads it on
whatever thread raises an event, and appends to a list under a lock.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Any, Iterator, List, Optional, Tuple

import pytest

#: The markers that take a test out of the pure tier (pyproject.toml registers them).
IMPURE_MARKERS = ("peer", "node", "browser", "thirdparty", "soak")

#: Audit events that start another process.
PROCESS_EVENTS = frozenset(
    {"subprocess.Popen", "os.fork", "os.forkpty", "os.posix_spawn", "os.spawn", "os.exec", "os.system", "pty.spawn"}
)
#: Audit events of a socket: made (``socket.socket()``), bound or connected.
SOCKET_EVENTS = frozenset({"socket.__new__", "socket.bind", "socket.connect", "socket.sendto", "socket.sendmsg"})
#: Third-party packages the suite uses only as peers or frameworks (``thirdparty``): their first import.
THIRD_PARTY_PACKAGES = (
    "mcp",
    "fastmcp",
    "acp",
    "a2a",
    "uvicorn",
    "pylsp",
    "waitress",
    "gunicorn",
    "django",
    "celery",
    "selenium",
    "pydantic",
    "mkdocs",
    "opentelemetry.sdk",
)

#: The environment variable that turns refusing into noting (see the module docstring).
REPORT_ENV = "PURITY_REPORT"
#: The environment variable ``make test-fast`` sets to ``fast``.
TIER_ENV = "JSONRPC_TESTS_TIER"
#: How much smaller a property or race test's budget is in the fast tier.
FAST_DIVISOR = 5


def budget(cases: int) -> int:
    """How many cases (examples, trials) a test of ``cases`` runs in this tier: all, or a fifth in the fast one."""
    if os.environ.get(TIER_ENV) == "fast":
        return max(1, cases // FAST_DIVISOR)
    return cases


class ImpureTest(RuntimeError):
    """A pure test (no ``peer`` marker) tried to start a process, open a socket or load a peer's package."""


class _Guard:
    """The process's one audit hook and its switch."""

    def __init__(self) -> None:
        self.active: Optional[str] = None  # the node id of the pure test running, or None
        self.report = os.environ.get(REPORT_ENV) or None
        self._lock = threading.Lock()
        self._seen: List[Tuple[str, str]] = []
        # urllib3 makes (and closes) an IPv6 socket when it is first imported, to learn whether the
        # host has IPv6: that import is made here, before any test, not in whichever test comes first.
        import urllib3  # noqa: F401, PLC0415

        sys.addaudithook(self._hook)

    def _hook(self, event: str, args: Tuple[Any, ...]) -> None:
        test = self.active
        if test is None:
            return
        if event in PROCESS_EVENTS or event in SOCKET_EVENTS:
            detail = _describe(event, args)
        elif event == "import" and args and _third_party(str(args[0])):
            detail = str(args[0])
        else:
            return
        with self._lock:
            self._seen.append((event, detail))
        if self.report is not None:
            with open(self.report, "a", encoding="utf-8") as out:
                out.write(f"{test}\t{event}\t{detail}\n")
            return
        raise ImpureTest(
            f"{event} ({detail}) in a pure test: mark it 'peer' (or what it needs) in tests/conftest.py NEEDS"
        )

    def take(self) -> List[Tuple[str, str]]:
        with self._lock:
            seen, self._seen = self._seen, []
        return seen


def _third_party(module: str) -> bool:
    return any(module == package or module.startswith(package + ".") for package in THIRD_PARTY_PACKAGES)


def _describe(event: str, args: Tuple[Any, ...]) -> str:
    if event == "subprocess.Popen" and len(args) > 1:
        return repr(args[1])[:200]
    if event.startswith("socket.") and len(args) > 1:
        return repr(args[1:])[:200]
    return repr(args)[:200]


_guard: Optional[_Guard] = None


def is_pure(item: pytest.Item) -> bool:
    """Whether a test is in the pure tier: none of ``IMPURE_MARKERS``."""
    return not any(item.get_closest_marker(name) for name in IMPURE_MARKERS)


def guarding(item: pytest.Item) -> Iterator[None]:
    """Run one phase of a test (a hook wrapper's body) with the guard on when the test is pure.

    Raises:
        pytest.fail.Exception: after the phase, when a pure test tried something the guard refuses.
    """
    global _guard
    if not is_pure(item):
        yield
        return
    if _guard is None:
        _guard = _Guard()
    _guard.take()
    _guard.active = item.nodeid
    try:
        yield
    finally:
        _guard.active = None
    seen = _guard.take()
    if seen and _guard.report is None:
        steps = "; ".join(sorted({f"{event} {detail}" for event, detail in seen}))
        pytest.fail(f"a pure test started a process or opened a socket (mark it in NEEDS): {steps}", pytrace=False)
