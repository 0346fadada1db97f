"""The fault matrix: one table of named faults, run against every transport each applies to.

Each row of ``MATRIX`` names a fault of the peer (a hang, a crash, garbage,
a wrong id, a hostile HTTP answer, ...), the transports it applies to, the
action that meets it, the exception that action must raise on each transport
(``None``: it returns normally), the longest the action may take, and what must
hold after it:

- ``usable``: the same client answers a fresh call;
- ``recovers``: the server (a real child process, or a closed port) comes back
  on the same port and the same client answers a fresh call;
- ``ended``: the client knows its transport is gone: ``closed`` is true and a
  new call fails at once with ``TransportClosed``;
- ``open``: the client is not broken (not closed) though this peer will never answer;
- ``closed``: the action closed the client itself (what is measured is ``close()``).

Then, for every row: ``close()`` returns within its bound, every process the
scenario started (the child, its grandchildren) is gone, no thread of that
transport is left, and the autouse ``no_leaks`` fixture checks threads,
children and file descriptors once more.

The peers are real: ``tests/peers/stdio_peer.py`` as a child process,
``tests/peers/http_peer.py`` in a thread on 127.0.0.1, or as a child process when
the scenario kills the server.  Transports: ``stdio``, ``http`` (JSON answers)
and ``http-sse`` (SSE answers).

``python -m tests.test_fault_matrix`` prints the docs page ``docs/failure-modes.md``,
generated from the table; ``test_readme_matches_the_matrix`` keeps the two equal.
"""

from __future__ import annotations

import functools
import os
import select
import signal
import socket
import sys
import threading
import time
from concurrent.futures import wait as futures_wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple, Type, Union

import psutil
import pytest

from jsonrpc_threads import (
    HttpConnectionError,
    HttpError,
    HttpTransport,
    JsonRpcClient,
    MessageTooLarge,
    RequestTimeout,
    StdioTransport,
    TransportClosed,
)
from jsonrpc_threads.errors import RemoteError
from jsonrpc_threads.transports import stdio as stdio_module

from .conftest import peer_command
from .peers.http_peer import HttpPeer, HttpPeerProcess

STDIO = "stdio"
HTTP = "http"
SSE = "http-sse"
ALL = (STDIO, HTTP, SSE)
HTTP_BOTH = (HTTP, SSE)

USABLE = "usable"
RECOVERS = "recovers"
ENDED = "ended"
OPEN = "open"
CLOSED = "closed"

#: Upper bound of any wait that is not what a scenario measures.
WAIT_S = 10.0
#: Default bound on ``close()`` after a scenario.
CLOSE_MAX_S = 3.0
#: How long a new call on an ended client may take to fail.
ENDED_FAIL_MAX_S = 0.5
#: A close() that has to escalate to SIGKILL: stdin grace, then SIGTERM grace, then the kill.
ESCALATION_S = stdio_module.STDIN_CLOSE_GRACE_S + stdio_module.TERMINATE_GRACE_S
#: Size limits set by the scenarios that exceed them.
LIMIT = 10_000
#: The stderr flood: more than any pipe buffer, many times over.
FLOOD_BYTES = 8 * 1024 * 1024
README = Path(__file__).resolve().parent.parent / "docs" / "failure-modes.md"


@dataclass
class Outcome:
    value: Any = None
    error: Optional[BaseException] = None
    elapsed: float = 0.0


@dataclass(frozen=True)
class Scenario:
    """One row of the matrix."""

    name: str
    #: What the peer does, for the README.
    fault: str
    transports: Tuple[str, ...]
    #: What the client does: ``action(harness) -> value``.
    action: Callable[[Harness], Any]
    #: The exception type the action raises (``None``: it returns), or one per transport.
    raises: Union[Type[BaseException], Mapping[str, Optional[Type[BaseException]]], None]
    #: The longest the action may take, in seconds.
    max_s: float
    #: What holds after the action (see the module docstring), or one per transport.
    after: Union[str, Mapping[str, str]]
    stdio_flags: Tuple[str, ...] = ()
    http_modes: Tuple[str, ...] = ()
    http_retry: Optional[int] = None
    #: "thread": HttpPeer in this process; "process": http_peer.py as a child; "none": a closed port.
    server: str = "thread"
    #: Transport options (``max_line_bytes`` goes to stdio, the rest to HTTP).
    options: Mapping[str, Any] = field(default_factory=dict)
    #: More assertions on the outcome.
    check: Optional[Callable[[Harness, Outcome], None]] = None
    #: Assertions once the client is closed (its threads joined: e.g. the whole stderr read).
    check_closed: Optional[Callable[[Harness], None]] = None
    close_max_s: float = CLOSE_MAX_S
    #: The call that shows the client usable afterwards: (method, params, expected result).
    after_call: Tuple[str, Any, Any] = ("echo", ["after"], ["after"])
    #: A known bug: the row is expected to fail (strict xfail) until it is fixed.
    known_gap: str = ""

    def raises_on(self, kind: str) -> Optional[Type[BaseException]]:
        return self.raises.get(kind) if isinstance(self.raises, Mapping) else self.raises

    def after_on(self, kind: str) -> str:
        return self.after if isinstance(self.after, str) else self.after[kind]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


# -- the harness -------------------------------------------------------------------------------


class Harness:
    """Builds the peer and the client of one scenario on one transport; cleans up whatever happens."""

    def __init__(self, scenario: Scenario, kind: str) -> None:
        self.scenario = scenario
        self.kind = kind
        self.peer: Optional[HttpPeer] = None
        self.server: Optional[HttpPeerProcess] = None
        self.port = 0
        #: Processes that must be gone once the client is closed.
        self.pids: List[int] = []
        self.client: Optional[JsonRpcClient] = None
        self.thread_tag = ""

    # building ---------------------------------------------------------------------------------

    def start(self) -> None:
        scenario = self.scenario
        options = dict(scenario.options)
        if self.kind == STDIO:
            stdio_options = {key: options[key] for key in ("max_line_bytes",) if key in options}
            transport: Any = StdioTransport(peer_command("stdio_peer", *scenario.stdio_flags), **stdio_options)
            self.pids.append(transport.pid)
            self.thread_tag = f"[{transport.pid}]"
        else:
            options.pop("max_line_bytes", None)
            self.start_server()
            transport = HttpTransport(self.url(), **options)
            self.thread_tag = f"[{transport.label}]"
        self.client = JsonRpcClient(transport, default_timeout=WAIT_S)

    def start_server(self) -> None:
        where = self.scenario.server
        if where == "thread":
            self.peer = HttpPeer(port=self.port).start()
            self.port = self.peer.port
        elif where == "process":
            self.server = HttpPeerProcess(self.port)
            self.port = self.server.port
        elif not self.port:  # "none": a port nobody listens on
            self.port = free_port()

    def url(self) -> str:
        modes = list(self.scenario.http_modes) + (["sse"] if self.kind == SSE else [])
        query = []
        if modes:
            query.append("mode=" + ",".join(modes))
        if self.scenario.http_retry is not None:
            query.append(f"retry={self.scenario.http_retry}")
        return f"http://127.0.0.1:{self.port}/mcp" + ("?" + "&".join(query) if query else "")

    def restart_server(self) -> None:
        """Bring the server back on the same port (after it died, or for a closed port)."""
        if self.server is not None:
            self.server.stop()
            self.server = HttpPeerProcess(self.port)
        elif self.peer is None:
            self.peer = HttpPeer(port=self.port).start()

    # what actions use --------------------------------------------------------------------------

    def call(self, method: str, params: Any = None, *, timeout: Optional[float] = WAIT_S) -> Any:
        assert self.client is not None
        return self.client.call(method, params, timeout=timeout)

    @property
    def stdio(self) -> StdioTransport:
        assert self.client is not None and isinstance(self.client.transport, StdioTransport)
        return self.client.transport

    def run(self) -> Outcome:
        outcome = Outcome()
        started = time.monotonic()
        try:
            outcome.value = self.scenario.action(self)
        except Exception as exc:
            outcome.error = exc
        outcome.elapsed = time.monotonic() - started
        return outcome

    # cleaning up ------------------------------------------------------------------------------

    def cleanup(self) -> None:
        """Close everything, even after a failed assertion; kill what a known gap left running."""
        try:
            if self.client is not None:
                self.client.close()
        finally:
            for pid in self.pids:
                if not gone(pid):
                    try:
                        psutil.Process(pid).kill()
                    except psutil.Error:
                        pass
            if self.peer is not None:
                self.peer.close()
            if self.server is not None:
                self.server.stop()


# -- actions and checks ------------------------------------------------------------------------


def call(method: str, params: Any = None, *, timeout: Optional[float] = WAIT_S) -> Callable[[Harness], Any]:
    def action(h: Harness) -> Any:
        return h.call(method, params, timeout=timeout)

    action.__name__ = f"call_{method}"
    return action


def raw(params: Mapping[str, Any], *, timeout: Optional[float] = WAIT_S) -> Callable[[Harness], Any]:
    """Call ``raw_answer``: JSON chunks over ``http``, SSE events over ``http-sse``."""

    def action(h: Harness) -> Any:
        chosen = dict(params)
        if h.kind == SSE:
            chosen["content_type"] = "text/event-stream"
            chosen["chunks"] = chosen.pop("sse_chunks")
        else:
            chosen.pop("sse_chunks", None)
        return h.call("raw_answer", chosen, timeout=timeout)

    return action


def echo_then_close(h: Harness) -> Any:
    assert h.call("echo", [1]) == [1]
    assert h.client is not None
    h.client.close()


def grandchild_then_close(new_session: bool) -> Callable[[Harness], Any]:
    def action(h: Harness) -> Any:
        grandchild = h.call("spawn_grandchild", {"new_session": new_session})
        h.pids.append(grandchild)
        assert not gone(grandchild)
        assert h.client is not None
        h.client.close()

    return action


def grandchild_then_exit(new_session: bool) -> Callable[[Harness], Any]:
    def action(h: Harness) -> Any:
        h.pids.append(h.call("spawn_grandchild", {"new_session": new_session}))
        return h.call("exit", {"code": 4, "stderr": "leaving a grandchild behind"}, timeout=3.0)

    return action


def grandchild_outlives_child(h: Harness) -> Any:
    h.pids.append(h.call("spawn_grandchild", {"new_session": True}))
    assert h.client is not None
    pending = h.client.request("exit", {"code": 4}, timeout=None)
    pidfd = os.pidfd_open(h.stdio.pid)
    try:  # wait for the child's exit without reaping it (the transport does that)
        assert select.select([pidfd], [], [], WAIT_S)[0], "the child did not exit"
    finally:
        os.close(pidfd)
    # No timeout, and the grandchild holds stdout: the call fails at the child's exit.
    error = pending.exception(timeout=stdio_module.EXIT_AFTER_EOF_WAIT_S + stdio_module.STDERR_DRAIN_WAIT_S)
    assert isinstance(error, TransportClosed) and error.returncode == 4, repr(error)
    h.client.close()


def value_is(expected: Any) -> Callable[[Harness, Outcome], None]:
    def check(h: Harness, outcome: Outcome) -> None:
        assert outcome.value == expected

    return check


def error_has(**attributes: Any) -> Callable[[Harness, Outcome], None]:
    """The error's attributes equal these; ``message__contains`` checks a substring of the message."""

    def check(h: Harness, outcome: Outcome) -> None:
        for name, expected in attributes.items():
            if name.endswith("__contains"):
                actual = getattr(outcome.error, name[: -len("__contains")])
                assert expected in actual, (name, actual)
            else:
                assert getattr(outcome.error, name) == expected, (name, getattr(outcome.error, name))

    return check


def both(*checks: Callable[[Harness, Outcome], None]) -> Callable[[Harness, Outcome], None]:
    def check(h: Harness, outcome: Outcome) -> None:
        for one in checks:
            one(h, outcome)

    return check


def check_died_mid_call(h: Harness, outcome: Outcome) -> None:
    if h.kind == STDIO:
        error_has(returncode=3, stderr_tail__contains="dying mid-call")(h, outcome)


def check_closed_stdout(h: Harness, outcome: Outcome) -> None:
    assert isinstance(outcome.error, TransportClosed)
    assert outcome.error.returncode is None  # still running: reported without waiting for an exit
    assert not gone(h.stdio.pid)


def check_exit_behind_grandchild(h: Harness, outcome: Outcome) -> None:
    error_has(
        returncode=4,
        stderr_tail__contains="leaving a grandchild behind",
        message__contains="a process it started still holds its stdout",
    )(h, outcome)
    assert not gone(h.pids[-1])  # the grandchild runs until close()


def check_flood(h: Harness, outcome: Outcome) -> None:
    assert outcome.value == FLOOD_BYTES


def check_flood_tail(h: Harness) -> None:
    # After close(): the drain thread has read all of stderr (while the client is
    # open, the answer on stdout may overtake the last stderr line).
    assert h.stdio.stderr_tail().endswith("stderr flood done\n")
    assert len(h.stdio.stderr_tail()) <= stdio_module.DEFAULT_STDERR_TAIL_BYTES


def check_killed(h: Harness, outcome: Outcome) -> None:
    assert h.stdio.returncode == -signal.SIGKILL


def check_resumed(h: Harness, outcome: Outcome) -> None:
    assert outcome.value == ["resumed"]
    assert h.peer is not None and h.peer.resume_gets


def check_redirect(h: Harness, outcome: Outcome) -> None:
    error_has(status_code=307, message__contains="127.0.0.2")(h, outcome)
    assert h.peer is not None
    assert len(h.peer.records_for("fault")) == 1  # one POST: nothing followed, nothing retried
    assert all(record.path == "/mcp" for record in h.peer.records)


# -- the matrix ----------------------------------------------------------------------------------

_STALL_JSON = '{"jsonrpc": "2.0", "id": {id}, "result": '
_STALL_SSE = 'data: {"jsonrpc": "2.0", "id": {id}, "result": "never dispatched"}\n'  # no blank line: never ends
_BIG_CHUNK = "x" * 4096
#: A plain JSON answer, for the rows whose URL mode spoils every SSE answer (``cut``).
_JSON_AFTER = ("raw_answer", {"chunks": ['{"jsonrpc": "2.0", "id": {id}, "result": "after"}']}, "after")

MATRIX: List[Scenario] = [
    Scenario("hangs", "never answers", ALL, call("never", timeout=0.3), RequestTimeout, 1.5, USABLE),
    Scenario(
        "answers-late",
        "answers after the deadline",
        ALL,
        call("sleep", {"seconds": 1.0, "result": "late"}, timeout=0.3),
        RequestTimeout,
        1.5,
        USABLE,
    ),
    Scenario(
        "dies-mid-call",
        "the process exits while a call is pending",
        ALL,
        call("exit", {"code": 3, "stderr": "dying mid-call"}),
        {STDIO: TransportClosed, HTTP: HttpConnectionError, SSE: HttpConnectionError},
        3.0,
        {STDIO: ENDED, HTTP: RECOVERS, SSE: RECOVERS},
        server="process",
        check=check_died_mid_call,
    ),
    Scenario(
        "dies-at-start",
        "exits (code 7) before reading anything",
        (STDIO,),
        call("echo", [1]),
        TransportClosed,
        3.0,
        ENDED,
        stdio_flags=("--exit-at-start", "7"),
        check=error_has(returncode=7, stderr_tail__contains="dying at start"),
    ),
    Scenario(
        "refuses",
        "nothing listens on the port (the server is not up yet)",
        (HTTP,),
        call("echo", [1]),
        HttpConnectionError,
        2.0,
        RECOVERS,
        server="none",
        check=error_has(message__contains="refused"),
    ),
    Scenario(
        "closes-stdout",
        "closes its stdout but keeps running",
        (STDIO,),
        call("echo", [1]),
        TransportClosed,
        stdio_module.EXIT_AFTER_EOF_WAIT_S + 2.0,
        ENDED,
        stdio_flags=("--close-stdout",),
        check=check_closed_stdout,
    ),
    Scenario(
        "garbage",
        "writes text that is not JSON-RPC before the answer",
        ALL,
        call("garbage"),
        {STDIO: None, HTTP: HttpError, SSE: None},
        2.0,
        USABLE,
        check=lambda h, o: h.kind == HTTP or value_is("ok")(h, o),
    ),
    Scenario(
        "oversized-answer",
        f"answers with a message over the limit ({LIMIT} bytes here)",
        ALL,
        call("oversized", {"bytes": 5 * LIMIT, "response": True}),
        MessageTooLarge,
        2.0,
        USABLE,
        options={"max_line_bytes": LIMIT, "max_message_bytes": LIMIT},
        check=error_has(limit=LIMIT),
    ),
    Scenario(
        "oversized-notification",
        "sends a notification over the limit before the answer",
        (STDIO, SSE),
        call("oversized", {"bytes": 5 * LIMIT}),
        {STDIO: None, SSE: MessageTooLarge},
        2.0,
        USABLE,
        options={"max_line_bytes": LIMIT, "max_message_bytes": LIMIT},
    ),
    Scenario(
        "oversized-chunked-body",
        "streams an endless body without Content-Length (chunked)",
        HTTP_BOTH,
        raw({"chunks": [_BIG_CHUNK], "sse_chunks": ["data: " + _BIG_CHUNK + "\n"], "repeat": 100}),
        MessageTooLarge,
        2.0,
        USABLE,
        options={"max_message_bytes": LIMIT},
    ),
    Scenario(
        "no-newline",
        "never writes a newline (its answers never end)",
        (STDIO,),
        call("echo", [1], timeout=0.5),
        RequestTimeout,
        1.5,
        OPEN,
        stdio_flags=("--no-newline",),
    ),
    Scenario(
        "stderr-flood",
        f"writes {FLOOD_BYTES // 2**20} MiB to stderr during a call",
        (STDIO,),
        call("stderr_flood", {"bytes": FLOOD_BYTES}),
        None,
        10.0,
        USABLE,
        check=check_flood,
        check_closed=check_flood_tail,
    ),
    Scenario(
        "wrong-id",
        "answers with another id first",
        ALL,
        call("wrong_id"),
        {STDIO: None, HTTP: HttpError, SSE: None},
        2.0,
        USABLE,
        check=lambda h, o: (
            error_has(message__contains="no response for request id")(h, o) if h.kind == HTTP else value_is("ok")(h, o)
        ),
    ),
    Scenario(
        "duplicate-id",
        "answers the same id twice",
        ALL,
        call("duplicate"),
        None,
        2.0,
        USABLE,
        check=value_is("first"),
    ),
    *[
        Scenario(
            f"id-type-{kind}",
            f"answers first with the id as {shown}",
            ALL,
            call("wrong_id_type", {"as": kind}),
            {STDIO: None, HTTP: HttpError, SSE: None},
            2.0,
            USABLE,
            check=lambda h, o: h.kind == HTTP or value_is("ok")(h, o),
        )
        for kind, shown in (("string", '"1" for 1'), ("true", "true for 1"), ("float", "1.0 for 1"))
    ],
    Scenario(
        "ignores-sigterm",
        "ignores stdin EOF and SIGTERM: close() has to kill it",
        (STDIO,),
        echo_then_close,
        None,
        ESCALATION_S + 2.5,
        CLOSED,
        stdio_flags=("--ignore-sigterm",),
        check=check_killed,
    ),
    Scenario(
        "grandchild",
        "spawns a grandchild in its process group that holds stdout",
        (STDIO,),
        grandchild_then_close(False),
        None,
        CLOSE_MAX_S,
        CLOSED,
    ),
    Scenario(
        "grandchild-own-session",
        "spawns a grandchild in a new session (setsid) that holds stdout",
        (STDIO,),
        grandchild_then_close(True),
        None,
        CLOSE_MAX_S,
        CLOSED,
    ),
    Scenario(
        "grandchild-then-exit",
        "spawns a grandchild (holding stdout), then exits mid-call",
        (STDIO,),
        grandchild_then_exit(False),
        TransportClosed,
        1.0,
        ENDED,
        check=check_exit_behind_grandchild,
    ),
    Scenario(
        "grandchild-own-session-then-exit",
        "spawns a grandchild in a new session (holding stdout), then exits mid-call",
        (STDIO,),
        grandchild_then_exit(True),
        TransportClosed,
        1.0,
        ENDED,
        check=check_exit_behind_grandchild,
    ),
    Scenario(
        "grandchild-own-session-outlives-child",
        "spawns a grandchild in a new session (holding stdout), exits; then close()",
        (STDIO,),
        grandchild_outlives_child,
        None,
        CLOSE_MAX_S,
        CLOSED,
    ),
    Scenario(
        "resets",
        "drops the connection instead of answering",
        HTTP_BOTH,
        call("fault", {"kind": "reset"}),
        HttpConnectionError,
        2.0,
        USABLE,
    ),
    Scenario(
        "stalls-mid-body",
        "sends the headers and part of the body, then nothing (read_timeout=0.5)",
        HTTP_BOTH,
        raw({"chunks": [_STALL_JSON], "sse_chunks": [_STALL_SSE], "then": "stall"}),
        HttpConnectionError,
        2.0,
        USABLE,
        options={"read_timeout": 0.5},
        check=error_has(message__contains="timed out"),
    ),
    Scenario(
        "stalls-mid-body-call-timeout",
        "as stalls-mid-body, with the call's timeout (0.3 s) shorter than read_timeout",
        HTTP_BOTH,
        raw({"chunks": [_STALL_JSON], "sse_chunks": [_STALL_SSE], "then": "stall"}, timeout=0.3),
        RequestTimeout,
        1.5,
        USABLE,
    ),
    Scenario(
        "sse-cut-resumed",
        "ends the SSE stream before the answer; events have ids (retry: 100 ms)",
        (SSE,),
        call("echo", ["resumed"]),
        None,
        2.0,
        USABLE,
        http_modes=("priming", "cut"),
        http_retry=100,
        check=check_resumed,
    ),
    Scenario(
        "sse-cut-no-ids",
        "ends the SSE stream before the answer; events have no ids",
        (SSE,),
        call("echo", [1]),
        HttpConnectionError,
        2.0,
        USABLE,
        http_modes=("cut", "noids"),
        after_call=_JSON_AFTER,
        check=error_has(message__contains="cannot be resumed"),
    ),
    Scenario(
        "sse-cut-resume-refused",
        "ends the SSE stream before the answer; the resuming GET gets 405",
        (SSE,),
        call("echo", [1]),
        HttpConnectionError,
        2.0,
        USABLE,
        http_modes=("priming", "cut", "noresume"),
        http_retry=50,
        after_call=_JSON_AFTER,
        check=error_has(message__contains="405"),
    ),
    Scenario(
        "http-4xx",
        "answers 400 with a text body",
        HTTP_BOTH,
        call("fault", {"kind": "400"}),
        HttpError,
        2.0,
        USABLE,
        check=error_has(status_code=400),
    ),
    Scenario(
        "http-5xx",
        "answers 500 with a text body",
        HTTP_BOTH,
        call("fault", {"kind": "500"}),
        HttpError,
        2.0,
        USABLE,
        check=error_has(status_code=500, body_excerpt__contains="boom"),
    ),
    Scenario(
        "http-5xx-jsonrpc",
        "answers 500 with a JSON-RPC error body (code -32050)",
        HTTP_BOTH,
        call("fault", {"kind": "500-rpc"}),
        RemoteError,
        2.0,
        USABLE,
        check=error_has(code=-32050, data={"detail": "kaboom"}),
    ),
    Scenario(
        "wrong-content-type",
        "answers 200 text/html",
        HTTP_BOTH,
        call("fault", {"kind": "html"}),
        HttpError,
        2.0,
        USABLE,
        check=error_has(message__contains="text/html"),
    ),
    Scenario(
        "accepted-unanswered",
        "answers 202 Accepted to a request",
        HTTP_BOTH,
        call("fault", {"kind": "202"}),
        HttpError,
        2.0,
        USABLE,
        check=error_has(status_code=202),
    ),
    Scenario(
        "redirect",
        "answers 307 to another host",
        HTTP_BOTH,
        call("fault", {"kind": "redirect"}),
        HttpError,
        2.0,
        USABLE,
        check=check_redirect,
    ),
]


def _cases() -> List[Any]:
    cases = []
    for scenario in MATRIX:
        marks = (
            [pytest.mark.xfail(reason=f"known gap: {scenario.known_gap}", strict=True)] if scenario.known_gap else []
        )
        for kind in scenario.transports:
            cases.append(pytest.param(scenario, kind, id=f"{scenario.name}[{kind}]", marks=marks))
    return cases


def test_the_matrix_is_well_formed() -> None:
    names = [scenario.name for scenario in MATRIX]
    assert len(names) == len(set(names))
    for scenario in MATRIX:
        assert scenario.transports and set(scenario.transports) <= set(ALL), scenario.name
        for part in (scenario.raises, scenario.after):
            if isinstance(part, Mapping):
                assert set(part) == set(scenario.transports), scenario.name
        for kind in scenario.transports:
            assert scenario.after_on(kind) in (USABLE, RECOVERS, ENDED, OPEN, CLOSED), scenario.name


@pytest.mark.parametrize(("scenario", "kind"), _cases())
def test_fault(scenario: Scenario, kind: str) -> None:
    h = Harness(scenario, kind)
    try:
        h.start()
        assert h.client is not None
        outcome = h.run()

        expected = scenario.raises_on(kind)
        after = scenario.after_on(kind)
        if expected is None:
            assert outcome.error is None, f"raised {outcome.error!r}"
        else:
            assert type(outcome.error) is expected, f"expected {expected.__name__}, got {outcome.error!r}"
        assert outcome.elapsed <= scenario.max_s, f"took {outcome.elapsed:.2f}s > {scenario.max_s}s"
        if scenario.check is not None:
            scenario.check(h, outcome)

        if after == RECOVERS:
            h.restart_server()
        if after in (USABLE, RECOVERS):
            assert not h.client.closed
            method, params, result = scenario.after_call
            assert h.call(method, params) == result
        elif after == ENDED:
            assert h.client.closed
            started = time.monotonic()
            with pytest.raises(TransportClosed):
                h.call("echo", ["after"])
            assert time.monotonic() - started <= ENDED_FAIL_MAX_S
        elif after == OPEN:
            assert not h.client.closed
        else:
            assert h.client.closed

        started = time.monotonic()
        h.client.close()
        closing = time.monotonic() - started
        assert closing <= scenario.close_max_s, f"close() took {closing:.2f}s > {scenario.close_max_s}s"
        assert [pid for pid in h.pids if not gone(pid)] == []
        left = [t.name for t in threading.enumerate() if h.thread_tag in t.name]
        assert left == [], f"threads of this transport left running: {left}"
        if scenario.check_closed is not None:
            scenario.check_closed(h)
    finally:
        h.cleanup()


def test_a_cancelled_request_wakes_concurrent_futures_wait() -> None:
    """A caller that waits on several requests with wait()/as_completed() must not hang on a cancelled one."""
    with JsonRpcClient(StdioTransport(peer_command("stdio_peer"))) as client:
        cancelled = client.request("never", timeout=None)
        assert cancelled.cancel() and cancelled.done()
        started = time.monotonic()
        done, _ = futures_wait([cancelled], timeout=0.5)
        assert done == {cancelled}
        assert time.monotonic() - started < 0.4


# -- the docs page (docs/failure-modes.md) ----------------------------------------------------

README_HEADING = "# Failure modes"
README_INTRO = """\
What a misbehaving server does to a client, as `tests/test_fault_matrix.py` checks it
on every transport the fault applies to (`stdio`: a child process; `http`: JSON
answers; `http-sse`: SSE answers). *Within* is the bound the test puts on the failing
call, with the short timeouts it sets (0.3 s for a call, 0.5 s for `read_timeout`, 3 s
for a call that a dying process must fail sooner); with your own timeouts, count yours instead.
*Then* says what holds after it: `usable` (the same client answers the next call), `recovers` (once
the server is back), `ended` (the client is closed; the next call fails at once with
`TransportClosed`), `open` (not broken, but this peer will never answer), `closed`
(the call was `close()`). In every row `close()` then ends within 3 s (the escalation
row: ~4 s), and no process, thread or file descriptor is left.

One bad server never takes the client down with it: a call fails with a
`JsonRpcError` naming what happened (a `TimeoutError` or a `ConnectionError` where
one applies), at the latest when its timeout passes, and the other calls and clients
carry on. A peer that only misbehaves (garbage, wrong or duplicate ids, oversized
messages, HTTP errors) costs the one call; a stdio peer that is gone ends its client,
since a new process is needed; an HTTP server that is gone fails each call with
`HttpConnectionError` until it is back. A call to a stalled HTTP server ends at the
call's timeout (a blocking `call()` reads on its own thread and stops there too), and a
`request()` future that times out or is cancelled frees the pool thread that was
reading its answer at once.
Rows marked *known gap* are bugs the matrix documents (strict xfail) until fixed."""


def _per_transport(scenario: Scenario, show: Callable[[str], str]) -> str:
    groups: Dict[str, List[str]] = {}  # text -> the transports it applies to, in table order
    for kind in scenario.transports:
        groups.setdefault(show(kind), []).append(kind)
    if len(groups) == 1:
        return next(iter(groups))
    return "; ".join(f"{', '.join(kinds)}: {text}" for text, kinds in groups.items())


def _exception_name(scenario: Scenario, kind: str) -> str:
    exc = scenario.raises_on(kind)
    return "none (returns)" if exc is None else f"`{exc.__name__}`"


def readme_section() -> str:
    lines = [README_HEADING, "", README_INTRO, ""]
    lines.append("| scenario | the server... | transport | the call raises | within | then |")
    lines.append("| --- | --- | --- | --- | --- | --- |")
    for scenario in MATRIX:
        name = f"`{scenario.name}`" + (" (*known gap*)" if scenario.known_gap else "")
        lines.append(
            f"| {name} | {scenario.fault} | {', '.join(scenario.transports)} "
            f"| {_per_transport(scenario, functools.partial(_exception_name, scenario))} "
            f"| {scenario.max_s:g} s | {_per_transport(scenario, scenario.after_on)} |"
        )
    return "\n".join(lines) + "\n"


def test_readme_matches_the_matrix() -> None:
    text = README.read_text(encoding="utf-8")
    if README_HEADING not in text:
        pytest.skip(
            "docs/failure-modes.md has no 'Failure modes' page yet (python -m tests.test_fault_matrix prints it)"
        )
    start = text.index(README_HEADING)
    following = text.find("\n## ", start + len(README_HEADING))
    section = text[start : following + 1 if following >= 0 else len(text)]
    assert section.strip() == readme_section().strip(), "regenerate it: python -m tests.test_fault_matrix"


if __name__ == "__main__":
    sys.stdout.write(readme_section())
