"""A server's life (jsonrpc_threads/mcp/server_life.py), driven directly: events in, decisions out.

The machine does no I/O, starts no thread and reads no clock: every test here
hands it the time (``now``) and plain objects for its sessions, and checks
what it decides.  The shell that acts on it (``supervisor.py``) is tested over
real servers in test_supervision.py and test_mcp_supervisor.py.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Set

import pytest

from jsonrpc_threads.errors import RequestTimeout, TransportClosed
from jsonrpc_threads.mcp import ServerUnavailable
from jsonrpc_threads.mcp.restarts import RestartPolicy
from jsonrpc_threads.mcp.server_life import (
    CLOSED,
    FAILED,
    IDLE,
    NOTHING,
    RESTARTING,
    RUNNING,
    STARTING,
    Ended,
    Refuse,
    ServerLife,
    Start,
    Use,
    Wait,
)

SOURCE = Path(__file__).resolve().parent.parent / "jsonrpc_threads" / "mcp" / "server_life.py"


@dataclass
class Rules:
    policy: RestartPolicy = field(default_factory=lambda: RestartPolicy(max_restarts=2, window=60.0, backoff=1.0))
    retry_failed_after: Optional[float] = 30.0


class Session:
    """A session, as the machine sees one: an opaque object."""


def life(rules: Optional[Rules] = None) -> ServerLife[Session]:
    return ServerLife("srv", rules or Rules())


def running(machine: ServerLife[Session], now: float = 0.0) -> Session:
    start = machine.need(now, None)
    assert isinstance(start, Start)
    session = Session()
    assert machine.adopt(start.flight, session)
    assert machine.start_succeeded(start.flight, session)
    return session


def test_the_first_caller_starts_the_others_wait_for_the_same_flight_then_all_use_it() -> None:
    machine = life()
    assert machine.state == IDLE
    first = machine.need(0.0, 5.0)
    assert isinstance(first, Start) and machine.state == STARTING
    assert machine.need(0.1, 5.0) == Wait(first.flight)
    assert machine.need(0.2, None) == Wait(first.flight)
    session = Session()
    assert machine.adopt(first.flight, session)
    assert machine.live() == [session]  # a close now would close it
    assert machine.start_succeeded(first.flight, session)
    assert machine.state == RUNNING and machine.running() is session
    assert machine.need(0.3, 5.0) == Use(session)
    assert machine.status() == (RUNNING, session, 0, None)


def test_a_first_start_that_fails_is_failed_and_refuses_with_a_copy_until_retry_after() -> None:
    machine = life()
    flight = machine.need(0.0, None)
    assert isinstance(flight, Start)
    error = TransportClosed("spawn failed", returncode=3, stderr_tail="boom\n")
    ended = machine.start_failed(flight.flight, error, "spawn failed (exit code 3)", 1.0)
    assert ended.flight == flight.flight and ended.restart_in is None
    assert isinstance(ended.failed, ServerUnavailable) and machine.state == FAILED
    assert ended.failed.returncode == 3 and ended.failed.stderr_tail == "boom\n"
    assert "failed to start" in ended.failed.message and machine.failure is ended.failed
    refused = machine.need(11.0, None)
    assert isinstance(refused, Refuse) and refused.error is not ended.failed
    assert isinstance(refused.error, ServerUnavailable) and refused.error.retry_after == pytest.approx(20.0)
    again = machine.need(31.0, None)  # retry_failed_after passed: a clean slate
    assert isinstance(again, Start) and again.flight != flight.flight
    assert machine.state == STARTING and machine.failure is None


def test_a_failed_server_is_never_retried_without_retry_failed_after() -> None:
    rules = Rules(retry_failed_after=None)
    machine = life(rules)
    start = machine.need(0.0, None)
    assert isinstance(start, Start)
    machine.start_failed(start.flight, RequestTimeout("initialize", 1, 2.0), "no answer", 0.0)
    refused = machine.need(1e9, None)
    assert isinstance(refused, Refuse) and isinstance(refused.error, ServerUnavailable)
    assert refused.error.retry_after is None and refused.error.timed_out
    rules.retry_failed_after = 5.0  # the registry changed it: read at the next event
    assert isinstance(machine.need(1e9, None), Start)


def test_a_stop_restarts_after_the_backoff_and_a_caller_whose_deadline_is_earlier_is_refused_at_once() -> None:
    machine = life()
    session = running(machine)
    ended = machine.stopped(session, TransportClosed("gone"), "the server stopped", 10.0)
    assert ended is not None and ended.restart_in == 1.0 and ended.failed is None
    assert machine.state == RESTARTING and machine.restarts == 1 and machine.last_error == "the server stopped"
    assert ended.flight is not None
    assert machine.restart_due(ended.flight, 10.25) == pytest.approx(0.75)
    early = machine.need(10.5, 10.9)  # the restart is due at 11.0, after this deadline
    assert isinstance(early, Refuse) and isinstance(early.error, ServerUnavailable)
    assert "is restarting" in early.error.message and early.error.retry_after == pytest.approx(0.5)
    assert machine.need(10.5, 12.0) == Wait(ended.flight)
    assert machine.need(10.5, None) == Wait(ended.flight)
    again = Session()
    assert machine.start_succeeded(ended.flight, again) and machine.running() is again


def test_a_failed_restart_tries_again_on_the_same_flight_with_a_doubled_backoff() -> None:
    machine = life()
    session = running(machine)
    ended = machine.stopped(session, TransportClosed("gone"), "stopped", 0.0)
    assert ended is not None and ended.flight is not None
    retry = machine.start_failed(ended.flight, TransportClosed("spawn"), "spawn failed", 1.0)
    assert retry == Ended(ended.flight, 2.0, None) and machine.state == RESTARTING and machine.restarts == 2
    last = machine.start_failed(ended.flight, TransportClosed("spawn"), "spawn failed", 3.0)
    assert last.restart_in is None and isinstance(last.failed, ServerUnavailable)
    assert "stopped more than 2 times within 60s" in last.failed.message and machine.state == FAILED


def test_too_many_stops_in_the_window_leave_it_failed_and_old_stops_no_longer_count() -> None:
    machine = life()
    session = running(machine)
    for now, backoff in ((0.0, 1.0), (1.0, 2.0)):
        ended = machine.stopped(session, TransportClosed("gone"), "gone", now)
        assert ended is not None and ended.restart_in == backoff and ended.flight is not None
        session = Session()
        assert machine.start_succeeded(ended.flight, session)
    final = machine.stopped(session, TransportClosed("gone", returncode=9), "exit 9", 2.0)
    assert final is not None and isinstance(final.failed, ServerUnavailable) and final.failed.returncode == 9
    assert machine.state == FAILED and "is failed" in final.failed.message
    fresh = life()
    session = running(fresh)
    for now in (0.0, 100.0, 200.0):  # each stop alone in its window: always the shortest backoff
        ended = fresh.stopped(session, TransportClosed("gone"), "gone", now)
        assert ended is not None and ended.restart_in == 1.0 and ended.flight is not None
        session = Session()
        assert fresh.start_succeeded(ended.flight, session)
    assert fresh.restarts == 3


def test_only_the_running_session_stops_or_goes_idle() -> None:
    machine = life()
    session = running(machine)
    assert machine.stopped(Session(), TransportClosed("x"), "x", 0.0) is None  # a stale one
    assert not machine.went_idle(Session())
    assert machine.went_idle(session) and machine.state == IDLE and machine.running() is None
    assert machine.stopped(session, TransportClosed("x"), "x", 0.0) is None  # our own idle close
    assert isinstance(machine.need(1.0, None), Start)


def test_close_hands_over_the_waiters_and_sessions_and_refuses_everything_after() -> None:
    machine = life()
    session = running(machine)
    ended = machine.stopped(session, TransportClosed("gone"), "gone", 0.0)
    assert ended is not None and ended.flight is not None
    making = Session()
    assert machine.adopt(ended.flight, making)
    flight, clients = machine.close()
    assert flight == ended.flight and clients == [making]
    assert machine.closed and machine.status()[0] == RESTARTING  # status goes on saying where it was
    refused = machine.need(1.0, None)
    assert isinstance(refused, Refuse) and isinstance(refused.error, TransportClosed)
    assert refused.error.message == CLOSED
    assert not machine.start_succeeded(ended.flight, making)
    late = machine.start_failed(ended.flight, TransportClosed("x"), "x", 1.0)
    assert isinstance(late.failed, TransportClosed) and late.restart_in is None
    assert machine.restart_due(ended.flight, 1.0) is None


def test_a_start_superseded_by_a_reset_is_not_wanted() -> None:
    machine = life()
    start = machine.need(0.0, None)
    assert isinstance(start, Start)
    machine.reset()  # a forked process forgets the parent's start
    assert not machine.adopt(start.flight, Session())
    assert machine.start_failed(start.flight, TransportClosed("x"), "x", 0.0) == NOTHING
    assert machine.state == IDLE and isinstance(machine.need(0.0, None), Start)


def test_a_caller_that_waited_too_long_is_told_what_the_server_was_doing() -> None:
    machine = life()
    running_session = running(machine)
    machine.stopped(running_session, TransportClosed("gone"), "exit 1", 0.0)
    error = machine.waited_too_long(0.5)
    assert error.timed_out and "is restarting" in error.message and "exit 1" in error.message


def test_the_machine_does_no_io_starts_no_thread_and_reads_no_clock() -> None:
    tree = ast.parse(SOURCE.read_text(encoding="utf-8"))
    imported: Set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level:
            imported.add((node.module or "").split(".")[0])
    assert imported <= {"__future__", "copy", "typing"}, imported
