"""Test-wide fixtures: every test must leave no thread, child process or file behind.

Also the suite's tiers and its parallel runs.  A test that needs more than
Python, this package and its memory transport is marked here, by file, test or
fixture (``NEEDS``), with what it needs: ``peer`` (a child process or a socket
of its own: the peers in ``tests/peers/``, a server on 127.0.0.1, a fresh
interpreter), ``node`` (the npm peers in ``tests/node``), ``browser``
(Chromium) or ``thirdparty`` (a third-party package the library never imports:
the official MCP, ACP and A2A SDKs, pylsp, waitress, gunicorn, the snippets'
virtual environments).  The rest is the pure tier, ``make test-fast``: a guard
(tests/tiers.py) fails a test of it that starts a process or opens a socket,
in every run.  Under pytest-xdist
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

from . import tiers

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

# Node 22 keeps what it compiled of a script (the conformance suite's bundle is 860 kB) for its next
# start: the suite starts Node a hundred times. Older Nodes ignore the variable.
os.environ.setdefault("NODE_COMPILE_CACHE", str(TESTS_DIR / "node" / "node_modules" / ".compile-cache"))


#: What a test needs beyond Python, this package and its memory transport: a marker each (pyproject.toml
#: registers them; tests/tiers.py holds the pure tier to it). Keys: a file (``test_x.py``), tests of a
#: file (``test_x.py::test_glob*``, with ``[param_glob]`` for some parameters only: ``test_x.py::*[stdio]``),
#: or a fixture (``fixture:name_glob*``, or ``test_x.py::fixture:name``) that starts such a peer.
#: ``peer`` is a child process or a socket of this package's own (tests/peers/, a server on 127.0.0.1,
#: a fresh interpreter); ``thirdparty`` a package the library never imports (an official SDK, pylsp,
#: waitress, gunicorn, OpenTelemetry's SDK, Django): the library's own extras (oauth, skills, web) are not.
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
    "test_a2a.py": ("peer", "thirdparty"),  # the agent is served by the official A2A SDK under uvicorn
    "test_a2a_cli.py": ("peer", "thirdparty"),
    "test_snippets.py": ("thirdparty",),  # a virtual environment per page, from PyPI
    "test_loadtest_smoke.py": ("thirdparty",),  # gunicorn and waitress, in processes of their own
    "test_benchmarks_smoke.py": ("thirdparty",),  # every case, the official SDKs' baselines among them
    "test_webapp.py": ("peer", "thirdparty"),  # the example app under waitress
    "test_wsgi.py::*[waitress]": ("thirdparty",),
    "test_mcp_server_http.py::*[waitress*]": ("thirdparty",),
    # OpenTelemetry's SDK, and an MCP server in a child process
    "test_observe.py::test_each_tool_call_is_a_span_whose_traceparent_reaches_the_server": ("peer", "thirdparty"),
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
    # -- peer: the real child processes and sockets of the suite's own peers (the full tier) --------
    "test_a2a_edges.py": ("peer",),  # a card and an agent on wsgiref
    "test_acp_handshake.py": ("peer",),
    "test_auth.py": ("peer",),  # the authorization servers on 127.0.0.1
    "test_cli.py": ("peer",),
    "test_cli_serve.py": ("peer",),
    "test_example_agents.py::test_a2a_*": ("peer",),  # the example agents, served on 127.0.0.1 or run as processes
    "test_example_agents.py::test_acp_*": ("peer",),
    "test_fault_matrix.py": ("peer",),
    "test_fork.py": ("peer",),
    "test_http_deadlines.py": ("peer",),
    "test_http_fetch.py": ("peer",),
    "test_http_streams.py": ("peer",),
    "test_http_transport.py": ("peer",),
    "test_imports.py": ("peer",),  # fresh interpreters
    "test_leaks.py": ("peer",),
    "test_lifecycle.py": ("peer",),
    "test_lsp_client.py": ("peer",),  # the real-peer half; tests/test_pure_lsp.py is the pure one
    "test_lsp_deadlines.py": ("peer",),
    "test_mcp_client_edges.py": ("peer",),
    "test_mcp_deadlines.py": ("peer",),
    "test_mcp_listing.py": ("peer",),  # the real-peer half; tests/test_pure_mcp.py is the pure one
    "test_mcp_server_http.py": ("peer",),
    "test_mcp_server_stdio.py": ("peer",),
    "test_mcp_sse.py": ("peer",),
    "test_mcp_stateless_wire.py": ("peer",),
    "test_mcp_supervisor.py": ("peer",),
    "test_node_setup.py": ("peer",),  # workers racing to install the npm peers, as processes
    "test_registry.py": ("peer",),
    "test_registry_fork.py": ("peer",),
    "test_security.py": ("peer",),
    "test_stdio_fast_path.py": ("peer",),
    "test_stdio_transport.py": ("peer",),
    "test_supervision.py": ("peer",),
    "test_tool_server.py": ("peer",),
    "test_wsgi.py": ("peer",),
    "test_acp_terminals.py::test_a_command_that_cannot_start_is_an_internal_error": ("peer",),
    "test_acp_terminals.py::test_a_daemon_in_its_own_session_that_ignores_sigterm_is_reclaimed": ("peer",),
    "test_acp_terminals.py::test_a_terminal_belongs_to_its_session": ("peer",),
    "test_acp_terminals.py::test_release_kills_the_whole_process_tree": ("peer",),
    "test_acp_terminals.py::test_the_service_gives_a_command_the_allowlist_and_the_requests_env": ("peer",),
    "test_chunk_delivery.py::test_a_burst_of_answers_goes_over_in_chunks_each_to_its_own_request": ("peer",),
    "test_chunk_delivery.py::test_an_interrupted_chunk_settles_what_it_took_and_leaves_the_rest": ("peer",),
    "test_chunk_delivery.py::test_answers_and_a_notification_in_one_read_are_delivered_in_arrival_order": ("peer",),
    "test_chunk_delivery.py::test_chunks_that_end_with_a_response_split_mid_run_lose_nothing": ("peer",),
    "test_client.py::test_callers_sharing_one_cpu_each_get_their_answer_and_leave_no_descriptor": ("peer",),
    "test_client.py::test_calls_in_a_row_on_one_cpu_do_not_keep_waking_the_reader_thread": ("peer",),
    "test_client.py::test_crash_mid_request_fails_pending_with_exit_code_and_stderr": ("peer",),
    "test_client.py::test_garbage_and_invalid_lines_are_skipped": ("peer",),
    "test_client.py::test_missing_command_fails_at_construction": ("peer",),
    "test_client.py::test_oversized_line_is_skipped_and_the_stream_goes_on": ("peer",),
    "test_client.py::test_unicode_round_trip_including_line_separators": ("peer",),
    "test_client.py::test_wrong_and_duplicate_ids_are_dropped": ("peer",),
    "test_contract.py::*[stdio*]": ("peer",),  # the contract over every transport: memory is the pure one
    "test_contract.py::*[http-*]": ("peer",),
    "test_contract.py::*[legacy-sse]": ("peer",),
    "test_core_futures.py::test_ctrl_c_interrupts_a_call_asleep_on_its_waiter_and_nothing_stays_open": ("peer",),
    "test_core_regressions.py::test_a_call_answered_behind_a_notification_returns_as_soon_as_its_handler_does": (
        "peer",
    ),
    "test_core_regressions.py::test_a_call_whose_peer_dies_fails_only_after_the_notifications_it_sent_were_handled": (
        "peer",
    ),
    "test_core_regressions.py::test_a_peer_that_never_reads_stdin_cannot_hold_a_caller_past_its_deadline": ("peer",),
    "test_core_regressions.py::test_keyboard_interrupt_during_a_large_write_never_leaves_half_a_message": ("peer",),
    "test_mcp_server_skills.py::test_our_client_loads_a_skill_over_http": ("peer",),
    "test_mcp_server_tasks.py::test_our_client_over_http_answers_a_tasks_question": ("peer",),
    "test_observe.py::test_stats_count_the_requests_lost_with_the_transport": ("peer",),
    "test_observe.py::test_without_tracing_nothing_of_opentelemetry_is_imported": ("peer",),
    "test_properties.py::test_stdio_framing_of_any_bytes_through_a_real_pipe": ("peer",),
    "test_server.py::test_child_*": ("peer",),
    "test_stress.py::test_calls_settle_once_over_a_real_child": ("peer",),
    "test_transports_config.py::test_build_transport_labels_a_named_stdio_server": ("peer",),
    "test_transports_config.py::test_mcp_client_expands_variables_in_its_entry": ("peer",),
    "test_transports_config.py::test_mcp_client_takes_a_parsed_entry_and_refuses_an_unset_variable": ("peer",),
    "test_transports_config.py::test_transport_from_config_expands_variables": ("peer",),
    "test_wake_pipes.py::test_clients_share_the_process_pool_and_closing_the_last_leaves_no_pipe": ("peer",),
}
#: Tests of a file marked ``peer`` above that need no peer: the pure tier runs them (``test_x.py::name_glob``).
PURE: Tuple[str, ...] = (
    "test_auth.py::test_bad_arguments",
    "test_auth.py::test_memory_store_copies",
    "test_auth.py::test_metadata_locations",
    "test_auth.py::test_redirect_listener_refuses_non_loopback_uris",
    "test_auth.py::test_resource_matching",
    "test_auth.py::test_scope_selection",
    "test_auth.py::test_www_authenticate_challenges",
    "test_cli.py::test_every_exit_code_is_documented",
    "test_cli.py::test_progress_bar_on_a_terminal_redraws_one_line",
    "test_fault_matrix.py::test_readme_matches_the_matrix",
    "test_fault_matrix.py::test_the_matrix_is_well_formed",
    "test_http_transport.py::test_bad_url_is_value_error",
    "test_http_transport.py::test_config_bad_entries",
    "test_http_transport.py::test_label_hides_credentials_and_query",
    "test_http_transport.py::test_redact_headers",
    "test_http_transport.py::test_the_direct_path_is_chosen_in_one_place",
    "test_imports.py::test_an_unknown_name_is_an_attribute_error",
    "test_imports.py::test_every_public_name_is_importable_and_listed",
    "test_mcp_listing.py::test_the_tool_cache_goes_stale_when_its_ttl_passes",
    "test_mcp_sse.py::test_a_legacy_transport_is_made_with_the_settings_of_a_streamable_one",
    "test_mcp_sse.py::test_bad_arguments_are_refused_where_they_enter",
    "test_registry.py::test_from_config_takes_the_classes_keywords_explicitly",
    "test_security.py::test_a2a_trust_is_decided_on_the_origin_requests_connects_to",
    "test_security.py::test_allowlist_holds_no_secret_and_nothing_that_changes_what_runs",
    "test_security.py::test_no_repr_or_str_of_a_library_object_shows_a_secret",
    "test_security.py::test_no_shell_anywhere_in_the_package",
    "test_security.py::test_oauth_metadata_on_a_url_that_parsers_read_differently_is_refused",
    "test_security.py::test_the_shell_detector_detects",
    "test_security.py::test_the_traceback_and_the_stack_of_a_record_are_redacted",
    "test_stdio_transport.py::test_an_unknown_framing_is_refused",
    "test_stdio_transport.py::test_empty_command_is_refused",
    "test_stdio_transport.py::test_poll_timeouts_are_sliced_and_never_end_before_the_deadline",
    "test_supervision.py::test_backoff_doubles_up_to_its_limit_and_the_bound_gives_up",
    "test_wsgi.py::test_a_handler_outside_of_a_request_has_no_context",
    "test_wsgi.py::test_a_request_from_another_machine_is_held_to_its_own_host_only",
)
TIERS = ("node", "browser", "thirdparty", "peer")

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


def _matches(item: pytest.Item, file: str, key: str) -> bool:
    """Whether a key of ``NEEDS`` or ``PURE`` names this test (of ``file``)."""
    where, _, what = key.rpartition("::") if "::" in key else ("", "", key)
    if where and where != file:
        return False
    if what.startswith("fixture:"):
        return any(fnmatch.fnmatchcase(fixture, what[len("fixture:") :]) for fixture in item.fixturenames)
    if not where:
        return what == file
    name, bracket, params = what.partition("[")
    if not fnmatch.fnmatchcase(getattr(item, "originalname", item.name), name):
        return False
    if not bracket:
        return True
    callspec = getattr(item, "callspec", None)
    return callspec is not None and fnmatch.fnmatchcase(callspec.id, params[:-1])


def _needs(item: pytest.Item) -> Set[str]:
    """What ``NEEDS`` says one test needs (``PURE`` takes ``peer`` away again)."""
    file = item.path.name
    needed: Set[str] = set()
    for key, markers in NEEDS.items():
        if _matches(item, file, key):
            needed.update(markers)
    if "peer" in needed and any(_matches(item, file, key) for key in PURE):
        needed.discard("peer")
    return needed


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    """A pure test's fixtures are made under the guard (tests/tiers.py), those shared with later tests too."""
    return (yield from tiers.guarding(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """A pure test runs under the guard: no child process, no socket."""
    return (yield from tiers.guarding(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: Optional[pytest.Item]) -> Iterator[None]:
    """A pure test's fixtures are torn down under the guard."""
    return (yield from tiers.guarding(item))


#: The files whose tests take longest (a site build, virtual environments, the conformance suite, the
#: benchmark groups): handed out first, so the run does not end waiting for one of them.
SLOWEST_FILES = frozenset(
    {"test_docs.py", "test_snippets.py", "test_mcp_server_conformance.py", "test_benchmarks_smoke.py"}
)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: List[pytest.Item]) -> None:
    needing = set()
    for index, item in enumerate(items):
        for tier in sorted(_needs(item)):
            item.add_marker(getattr(pytest.mark, tier))
            needing.add(index)
    if hasattr(config, "workerinput"):  # an xdist worker: the slow tests (their peers) are handed out first
        first = [item for index, item in enumerate(items) if index in needing]
        first.sort(key=lambda item: item.path.name not in SLOWEST_FILES)  # stable: the slowest of all lead
        items[:] = first + [item for index, item in enumerate(items) if index not in needing]


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> Optional[bool]:
    """Leave out, unread, a file whose every test ``-m`` deselects for what it needs (the fast tier starts sooner)."""
    tiers = NEEDS.get(collection_path.name)
    expression = config.getoption("markexpr", "")
    if not tiers or not expression or any(key.startswith(collection_path.name + "::") for key in PURE):
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
