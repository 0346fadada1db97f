"""StdioTransport alone, against tests/peers/stdio_peer.py run as a real child process."""

from __future__ import annotations

import errno
import gc
import json
import logging
import os
import queue
import select
import shlex
import signal
import stat
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import psutil
import pytest

from jsonrpc_threads import JsonRpcClient, MethodNotFound, RequestTimeout
from jsonrpc_threads.errors import MessageTooLarge, RequestId, TransportClosed
from jsonrpc_threads.transports._poll import POLL_SLICE_MS, poll_timeout_ms
from jsonrpc_threads.transports.base import Transport
from jsonrpc_threads.transports.stdio import (
    DEFAULT_ENV_ALLOWLIST,
    EXIT_AFTER_EOF_WAIT_S,
    STDERR_DRAIN_WAIT_S,
    StdioTransport,
)
from jsonrpc_threads.transports.stdio import _exit_watch as exit_watch_module

from .conftest import peer_command
from .strategies import READS

#: Upper bound for any single wait in these tests.
WAIT_S = 20.0
REPO_ROOT = Path(__file__).resolve().parent.parent


class RecordingSink:
    """Records what the transport reports; every wait has a timeout."""

    def __init__(self) -> None:
        self.messages: queue.Queue[bytes] = queue.Queue()
        self.failed: queue.Queue[Tuple[List[RequestId], Exception]] = queue.Queue()
        self.closed = threading.Event()
        self.lock = threading.Lock()
        self.closed_errors: List[TransportClosed] = []

    def message_received(self, data: bytes) -> None:
        self.messages.put(data)

    def requests_failed(self, request_ids: Sequence[RequestId], error: Exception) -> None:
        self.failed.put((list(request_ids), error))

    def has_pending(self) -> bool:
        return True  # the tests read every answer through the reader thread

    def transport_closed(self, error: TransportClosed) -> None:
        with self.lock:
            self.closed_errors.append(error)
        self.closed.set()

    def next_message(self, timeout: float = WAIT_S) -> bytes:
        return self.messages.get(timeout=timeout)

    def wait_closed(self, timeout: float = WAIT_S) -> TransportClosed:
        assert self.closed.wait(timeout), "transport_closed was not called"
        with self.lock:
            return self.closed_errors[0]


def request_bytes(request_id: RequestId, method: str, params: Any = None) -> bytes:
    message: Dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def notification_bytes(method: str, params: Any = None) -> bytes:
    message: Dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def call(transport: StdioTransport, sink: RecordingSink, request_id: RequestId, method: str, params: Any = None) -> Any:
    """Send a request and return the result of its response; other messages are skipped."""
    transport.send(request_bytes(request_id, method, params))
    deadline = time.monotonic() + WAIT_S
    while True:
        message = json.loads(sink.next_message(timeout=max(0.0, deadline - time.monotonic())))
        if isinstance(message, dict) and message.get("id") == request_id and "method" not in message:
            assert "result" in message, message
            return message["result"]


def gone(pid: int) -> bool:
    """The process no longer runs (an orphaned zombie counts as gone: it is not ours to reap)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


Maker = Callable[..., Tuple[StdioTransport, RecordingSink]]


@pytest.fixture(params=READS)
def make(request: pytest.FixtureRequest) -> Iterator[Maker]:
    """Build started transports on the test peer; all are closed at teardown.

    Each test that uses it runs with both ``reads=`` choices (``tests/strategies.py``).
    """
    made: List[StdioTransport] = []

    def factory(*flags: str, start: bool = True, **kwargs: Any) -> Tuple[StdioTransport, RecordingSink]:
        kwargs.setdefault("reads", request.param)
        transport = StdioTransport(peer_command("stdio_peer", *flags), **kwargs)
        made.append(transport)
        sink = RecordingSink()
        if start:
            transport.start(sink)
        return transport, sink

    try:
        yield factory
    finally:
        for transport in made:
            transport.close()


# -- messages ------------------------------------------------------------------


def test_is_a_transport(make: Maker) -> None:
    transport, _ = make(start=False)
    assert isinstance(transport, Transport)
    assert transport.pid > 0
    assert transport.returncode is None
    assert "stdio_peer.py" in transport.label


def test_echo_round_trip_delivers_the_raw_line(make: Maker) -> None:
    transport, sink = make()
    transport.send(b'{"jsonrpc":"2.0","id":1,"method":"echo","params":{"a":"b"}}')
    assert sink.next_message() == b'{"jsonrpc":"2.0","id":1,"result":{"a":"b"}}'


def test_unicode_line_separators_do_not_split_lines(make: Maker) -> None:
    transport, sink = make()
    transport.send(request_bytes(1, "unicode", ["\u2028tail"]))
    raw = sink.next_message()
    assert "\u2028".encode() in raw and "\u2029".encode() in raw
    assert json.loads(raw)["result"] == "line\u2028sep\u2029para \U0001f600 é\u2028tail"
    # Nothing else came in: the next message is the answer to the next request.
    assert call(transport, sink, 2, "echo", ["a\u2028b"]) == ["a\u2028b"]


def test_concurrent_sends_are_not_interleaved(make: Maker) -> None:
    transport, sink = make()
    threads_count, per_thread = 8, 100
    payload = "y" * 5000

    def sender(base: int) -> None:
        for i in range(per_thread):
            transport.send(request_bytes(base + i, "echo", [payload]))

    threads = [threading.Thread(target=sender, args=(n * 1000,)) for n in range(threads_count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT_S)
    seen = set()
    for _ in range(threads_count * per_thread):
        message = json.loads(sink.next_message())
        assert message["result"] == [payload]
        seen.add(message["id"])
    assert len(seen) == threads_count * per_thread


def test_concurrent_requests_with_ids_are_not_interleaved_or_lost(make: Maker) -> None:
    # Requests (ids given) may be queued for the thread that holds the write lock.
    transport, sink = make()
    threads_count, per_thread = 8, 100
    payload = "z" * 5000

    def sender(base: int) -> None:
        for i in range(per_thread):
            transport.send(request_bytes(base + i, "echo", [payload]), [base + i])

    threads = [threading.Thread(target=sender, args=(n * 1000,)) for n in range(threads_count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT_S)
    seen = []
    for _ in range(threads_count * per_thread):
        message = json.loads(sink.next_message())
        assert message["result"] == [payload]
        seen.append(message["id"])
    assert sorted(seen) == sorted(n * 1000 + i for n in range(threads_count) for i in range(per_thread))
    assert sink.failed.empty()


def test_sends_to_a_child_that_does_not_read_return_at_once(make: Maker) -> None:
    # The peer stops reading stdin: far more than a pipe holds is queued, and no send blocks.
    transport, sink = make()
    assert call(transport, sink, 1, "echo", [1]) == [1]
    transport.send(request_bytes(2, "stall"), [2])
    started = time.monotonic()
    for i in range(3, 23):
        transport.send(request_bytes(i, "echo", ["q" * 100_000]), [i])
    assert time.monotonic() - started < 2.0
    writer = transport._child.writer
    assert writer is not None and writer.backlog_bytes > 1_000_000
    # Requests given up are dropped while queued; the rest fail when stdin is closed.
    transport.abandon([21, 22])
    assert writer.close_stdin(0.2)
    failed: List[Any] = []
    while len(failed) < 18:
        ids, error = sink.failed.get(timeout=WAIT_S)
        assert isinstance(error, TransportClosed)
        failed.extend(ids)
    assert sorted(failed)[0] >= 3 and 21 not in failed and 22 not in failed
    with pytest.raises(TransportClosed):
        transport.send(request_bytes(30, "echo"), [30])


def test_a_thread_pipelining_to_a_child_that_is_behind_gets_every_answer_in_order(make: Maker) -> None:
    # The child reads nothing for a second; one thread sends 300 small requests (19 KB), less than
    # the pipe holds: each is written at once, and every answer still comes, in order.
    transport, sink = make()
    transport.send(request_bytes(1, "pause_reading", {"seconds": 1.0}), [1])
    for i in range(2, 302):
        transport.send(request_bytes(i, "echo", [i, "p" * 40]), [i])
    answers = [json.loads(sink.next_message()) for _ in range(301)]
    echoed = sorted((a for a in answers if a["id"] != 1), key=lambda a: a["result"][0])
    assert [a["id"] for a in echoed] == list(range(2, 302))
    assert [a["result"][0] for a in echoed] == list(range(2, 302))
    assert {a["id"]: a["result"] for a in answers}[1] == "resumed"


def test_a_large_message_goes_out_whole_before_the_next(make: Maker) -> None:
    transport, sink = make()
    big = "b" * 3_000_000  # written by the writer thread, in pieces
    transport.send(notification_bytes("first", [big]))
    transport.send(notification_bytes("second", ["small"]))  # queued behind it
    log = call(transport, sink, 1, "notifications_log", {"wait_for": 2, "timeout": WAIT_S})
    assert [(n["method"], n["params"]) for n in log] == [("first", [big]), ("second", ["small"])]


def test_blank_and_non_json_lines_are_passed_or_skipped(make: Maker) -> None:
    transport, sink = make()
    transport.send(request_bytes(1, "garbage"))
    # Blank lines are dropped here; lines that are not JSON are the client's to judge.
    assert sink.next_message() == b"this is not json"
    assert sink.next_message() == b'{"jsonrpc": "2.0"}'
    assert json.loads(sink.next_message()) == {"jsonrpc": "2.0", "id": 1, "result": "ok"}


def test_send_refuses_a_newline(make: Maker) -> None:
    transport, _ = make()
    with pytest.raises(ValueError, match="newline"):
        transport.send(b'{"a":\n1}')


# -- construction ------------------------------------------------------------------


def test_missing_command_fails_at_construction() -> None:
    with pytest.raises(TransportClosed, match="no-such-command-xyz") as info:
        StdioTransport(["no-such-command-xyz", "--flag"])
    assert isinstance(info.value, ConnectionError)
    assert "No such file" in str(info.value)
    with pytest.raises(TransportClosed, match="no-such-command-xyz"):
        StdioTransport("no-such-command-xyz --flag")


def test_non_executable_command_fails_at_construction(tmp_path: Path) -> None:
    script = tmp_path / "script.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(stat.S_IRUSR | stat.S_IWUSR)
    with pytest.raises(TransportClosed, match=r"script\.sh") as info:
        StdioTransport([str(script)])
    assert "Permission denied" in str(info.value)


def test_empty_command_is_refused() -> None:
    with pytest.raises(ValueError):
        StdioTransport([])
    with pytest.raises(ValueError):
        StdioTransport("   ")


def test_str_command_is_split_not_run_by_a_shell(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    command = shlex.join(peer_command("stdio_peer")) + f" ; touch {shlex.quote(str(marker))}"
    # "; touch ..." are extra arguments the peer refuses (argparse exits 2): no shell ran them.
    transport = StdioTransport(command)
    try:
        sink = RecordingSink()
        transport.start(sink)
        error = sink.wait_closed()
        assert error.returncode == 2
        assert "unrecognized arguments" in error.stderr_tail
        assert not marker.exists()
    finally:
        transport.close()


def test_environment_is_an_allowlist(make: Maker, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JSONRPC_THREADS_TEST_SECRET", "s3cret")
    assert "PATH" in DEFAULT_ENV_ALLOWLIST and "JSONRPC_THREADS_TEST_SECRET" not in DEFAULT_ENV_ALLOWLIST

    transport, sink = make()
    env = call(transport, sink, 1, "env")
    assert "JSONRPC_THREADS_TEST_SECRET" not in env
    assert env["PATH"] == os.environ["PATH"]

    transport, sink = make(env={"JSONRPC_THREADS_TEST_EXTRA": "1", "PATH": None})
    env = call(transport, sink, 1, "env")
    assert env["JSONRPC_THREADS_TEST_EXTRA"] == "1"
    assert "PATH" not in env
    assert "JSONRPC_THREADS_TEST_SECRET" not in env

    transport, sink = make(inherit_env=True, env={"JSONRPC_THREADS_TEST_EXTRA": "2"})
    env = call(transport, sink, 1, "env")
    assert env["JSONRPC_THREADS_TEST_SECRET"] == "s3cret"
    assert env["JSONRPC_THREADS_TEST_EXTRA"] == "2"


def test_cwd(make: Maker, tmp_path: Path) -> None:
    transport, sink = make(cwd=tmp_path)
    assert os.path.realpath(call(transport, sink, 1, "cwd")) == os.path.realpath(tmp_path)


def test_bad_cwd_fails_at_construction(tmp_path: Path) -> None:
    with pytest.raises(TransportClosed, match="cannot start"):
        StdioTransport(peer_command("stdio_peer"), cwd=tmp_path / "missing")


def test_start_twice_and_after_close(make: Maker) -> None:
    transport, sink = make()
    with pytest.raises(RuntimeError):
        transport.start(sink)
    other, _ = make(start=False)
    other.close()
    with pytest.raises(TransportClosed):
        other.start(RecordingSink())


# -- size limit ----------------------------------------------------------------


def test_oversized_line_is_skipped_and_the_stream_goes_on(make: Maker, caplog: pytest.LogCaptureFixture) -> None:
    transport, sink = make(max_line_bytes=1000)
    with caplog.at_level(logging.ERROR, logger="jsonrpc_threads.transports.stdio"):
        assert call(transport, sink, 1, "oversized", {"bytes": 50_000}) == "ok"
    assert any("over the limit of 1000 bytes" in record.getMessage() for record in caplog.records)
    assert sink.messages.empty()
    assert call(transport, sink, 2, "echo", [1]) == [1]


def test_line_at_the_limit_passes_one_more_byte_does_not(make: Maker) -> None:
    limit = 200
    transport, sink = make(max_line_bytes=limit)
    overhead = len(b'{"jsonrpc":"2.0","id":1,"result":[""]}')
    transport.send(request_bytes(1, "echo", ["x" * (limit - overhead)]))
    assert len(sink.next_message()) == limit
    transport.send(request_bytes(1, "echo", ["x" * (limit - overhead + 1)]))
    request_ids, _error = sink.failed.get(timeout=WAIT_S)
    assert request_ids == [1]
    assert call(transport, sink, 2, "echo", []) == []


def test_oversized_response_fails_its_request(make: Maker) -> None:
    transport, sink = make(max_line_bytes=1000)
    transport.send(request_bytes("big-1", "oversized", {"bytes": 100_000, "response": True}))
    request_ids, error = sink.failed.get(timeout=WAIT_S)
    assert request_ids == ["big-1"]
    assert isinstance(error, MessageTooLarge) and error.limit == 1000
    assert call(transport, sink, 2, "echo", [2]) == [2]


# -- stderr ------------------------------------------------------------------------


def test_stderr_flood_does_not_block_messages(make: Maker) -> None:
    transport, sink = make(stderr_tail_bytes=4096)
    flood = 24 * 1024 * 1024
    transport.send(request_bytes(1, "stderr_flood", {"bytes": flood}))
    transport.send(request_bytes(2, "echo", ["during"]))
    results = {}
    for _ in range(2):
        message = json.loads(sink.next_message())
        results[message["id"]] = message["result"]
    assert results == {1: flood, 2: ["during"]}
    assert call(transport, sink, 3, "echo", ["after"]) == ["after"]
    transport.close()  # the drain is complete once close() returned
    tail = transport.stderr_tail()
    assert tail.endswith("stderr flood done\n")
    assert len(tail.encode()) <= 4096
    assert tail.startswith("stderr flood ")  # cut at a line boundary


def test_stderr_lines_are_logged(make: Maker, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="jsonrpc_threads.transports.stdio"):
        transport, sink = make(label="peer-x")
        transport.send(request_bytes(1, "exit", {"code": 0, "stderr": "hello on stderr"}))
        sink.wait_closed()
    lines = [r.getMessage() for r in caplog.records if "hello on stderr" in r.getMessage()]
    assert lines == [f"[peer-x pid {transport.pid}] stderr: hello on stderr"]


# -- end of the child ------------------------------------------------------------------


@pytest.mark.parametrize("attempt", range(5))
def test_child_exit_reports_returncode_and_last_words(make: Maker, attempt: int) -> None:
    transport, sink = make()
    words = f"last words {attempt}"
    # Much stderr just before the exit: the drain lags behind the end of stdout.
    chatter = "chatter\n" * 50_000
    transport.send(request_bytes(1, "exit", {"code": 3 + attempt, "stderr": chatter + words}))
    error = sink.wait_closed()
    assert isinstance(error, TransportClosed)
    assert error.returncode == 3 + attempt
    assert words in error.stderr_tail
    assert "exited" in error.message
    assert transport.returncode == 3 + attempt
    with pytest.raises(TransportClosed):
        transport.send(request_bytes(2, "echo"))
    transport.close()
    with sink.lock:
        assert len(sink.closed_errors) == 1


def test_exit_at_start(make: Maker) -> None:
    transport, sink = make("--exit-at-start", "7")
    error = sink.wait_closed()
    assert error.returncode == 7
    assert "dying at start" in error.stderr_tail
    assert "dying at start" in transport.stderr_tail()


def test_closed_stdout_reported_while_running_then_reclaimed(make: Maker) -> None:
    transport, sink = make("--close-stdout")
    started = time.monotonic()
    error = sink.wait_closed()
    assert time.monotonic() - started < EXIT_AFTER_EOF_WAIT_S + 5
    assert error.returncode is None
    assert transport.returncode is None
    assert not gone(transport.pid)
    with pytest.raises(TransportClosed):
        transport.send(request_bytes(1, "echo"))
    transport.close()
    assert transport.returncode == 0  # it exited at stdin EOF
    assert gone(transport.pid)


# -- close ------------------------------------------------------------------------


def test_send_after_close_raises(make: Maker) -> None:
    transport, sink = make()
    assert call(transport, sink, 1, "echo", [1]) == [1]
    transport.close()
    with pytest.raises(TransportClosed):
        transport.send(request_bytes(2, "echo"))
    error = sink.wait_closed(0)
    assert error.message == "Transport closed"
    assert error.returncode == 0


def test_close_is_idempotent_and_thread_safe(make: Maker) -> None:
    transport, sink = make()
    assert call(transport, sink, 1, "echo", [1]) == [1]
    barrier = threading.Barrier(8)
    returned: queue.Queue[Optional[int]] = queue.Queue()

    def closer() -> None:
        barrier.wait(WAIT_S)
        transport.close()
        returned.put(transport.returncode)

    threads = [threading.Thread(target=closer) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT_S)
    # Every close() returned only once the child was reaped.
    assert [returned.get_nowait() for _ in range(8)] == [0] * 8
    transport.close()
    with sink.lock:
        assert len(sink.closed_errors) == 1


def test_close_from_a_sink_callback() -> None:
    transport = StdioTransport(peer_command("stdio_peer"))

    class ClosingSink(RecordingSink):
        def message_received(self, data: bytes) -> None:
            transport.close()  # on the reader thread
            super().message_received(data)

    sink = ClosingSink()
    try:
        transport.start(sink)
        transport.send(request_bytes(1, "echo"))
        sink.wait_closed()
        assert sink.next_message()
        assert transport.returncode == 0
    finally:
        transport.close()


def test_close_of_a_child_ignoring_sigterm_and_eof(make: Maker) -> None:
    transport, sink = make("--ignore-sigterm")
    assert call(transport, sink, 1, "echo", [1]) == [1]  # the handler is in place
    started = time.monotonic()
    transport.close()
    assert time.monotonic() - started < 7
    assert transport.returncode == -signal.SIGKILL
    assert gone(transport.pid)


def test_close_while_a_write_is_blocked(make: Maker) -> None:
    transport, _sink = make()
    transport.send(request_bytes(1, "stall"))  # the peer stops reading stdin
    errors: queue.Queue[BaseException] = queue.Queue()

    def writer() -> None:
        try:
            for i in range(100):  # far more than a pipe holds
                transport.send(request_bytes(i, "echo", ["z" * 1_000_000]))
        except BaseException as exc:
            errors.put(exc)

    thread = threading.Thread(target=writer)
    thread.start()
    started = time.monotonic()
    transport.close()
    thread.join(WAIT_S)
    assert not thread.is_alive()
    assert time.monotonic() - started < 7
    assert isinstance(errors.get_nowait(), TransportClosed)
    assert transport.returncode == -signal.SIGTERM


@pytest.mark.parametrize("new_session", [False, True])
def test_close_reclaims_grandchildren(make: Maker, new_session: bool) -> None:
    transport, sink = make()
    grandchild = call(transport, sink, 1, "spawn_grandchild", {"new_session": new_session})
    assert not gone(grandchild)
    transport.close()
    assert gone(grandchild)
    assert gone(transport.pid)


def test_close_reclaims_grandchild_started_at_start(make: Maker) -> None:
    transport, sink = make("--spawn-grandchild-at-start")
    assert call(transport, sink, 1, "echo", []) == []  # the grandchild was started before
    (grandchild,) = psutil.Process(transport.pid).children()
    transport.close()
    assert f"grandchild={grandchild.pid}" in transport.stderr_tail()
    assert gone(grandchild.pid)


@pytest.fixture(params=["pidfd", "waiter-thread"])
def exit_watch(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """How the child's exit is watched: a pidfd, or (where pidfd_open fails) a thread in wait()."""
    if request.param == "waiter-thread":

        def no_pidfd(pid: int) -> int:
            raise OSError(errno.ENOSYS, "pidfd_open not available")

        monkeypatch.setattr(exit_watch_module, "PIDFD_OPEN", no_pidfd)
    elif exit_watch_module.PIDFD_OPEN is None:
        pytest.skip("no os.pidfd_open here")
    return str(request.param)


def wait_for_exit_unreaped(pid: int) -> None:
    """Wait (bounded) for the child's exit without reaping it (the transport does that).

    With the waiter-thread exit watch the transport reaps the child the moment
    it exits, so a pid that is gone already has exited.
    """
    try:
        pidfd = os.pidfd_open(pid)
    except ProcessLookupError:  # exited, and reaped already by the transport's waiter thread
        return
    try:
        assert select.select([pidfd], [], [], WAIT_S)[0], "the child did not exit"
    finally:
        os.close(pidfd)


@pytest.mark.parametrize("new_session", [False, True], ids=["same-group", "own-session"])
def test_exit_behind_a_grandchild_holding_stdout_is_reported_at_once(
    make: Maker, exit_watch: str, new_session: bool
) -> None:
    transport, sink = make()
    if exit_watch == "waiter-thread":
        assert f"jsonrpc-stdio-exit[{transport.pid}]" in [t.name for t in threading.enumerate()]
    grandchild = call(transport, sink, 1, "spawn_grandchild", {"new_session": new_session})
    started = time.monotonic()
    transport.send(request_bytes(2, "exit", {"code": 5, "stderr": "my last words"}))
    # The grandchild holds stdout and stderr open: no EOF; the exit alone ends the stream.
    error = sink.wait_closed()
    assert time.monotonic() - started < STDERR_DRAIN_WAIT_S  # no bound was waited out
    assert error.returncode == 5
    assert "my last words" in error.stderr_tail
    assert "exited; a process it started still holds its stdout" in error.message
    assert not gone(grandchild)
    with pytest.raises(TransportClosed):
        transport.send(request_bytes(3, "echo"))
    started = time.monotonic()
    transport.close()  # finds the grandchild by its pipes, even in its own session with its parent gone
    assert time.monotonic() - started < 2.0
    assert gone(grandchild)
    assert [t.name for t in threading.enumerate() if f"[{transport.pid}]" in t.name] == []
    with sink.lock:
        assert len(sink.closed_errors) == 1


def test_output_written_before_the_exit_is_delivered_first(make: Maker, exit_watch: str) -> None:
    transport, sink = make("--spawn-grandchild-at-start", start=False)
    transport.send(request_bytes(1, "echo", ["before the exit"]))
    # Nobody reads stdout yet: wait until the answer is in the pipe, then let the child exit.
    assert select.select([transport._child.popen.stdout], [], [], WAIT_S)[0]
    transport.send(request_bytes(2, "exit", {"code": 6}))
    wait_for_exit_unreaped(transport.pid)
    # The exit and the answer are both there when reading starts; the answer comes first.
    transport.start(sink)
    assert json.loads(sink.next_message()) == {"jsonrpc": "2.0", "id": 1, "result": ["before the exit"]}
    error = sink.wait_closed()
    assert error.returncode == 6
    assert "still holds its stdout" in error.message
    assert sink.messages.empty()
    grandchild = int(error.stderr_tail.split("grandchild=")[1].split()[0])
    assert not gone(grandchild)
    transport.close()
    assert gone(grandchild)


def test_direct_reader_sees_the_exit_behind_a_grandchild(make: Maker, exit_watch: str) -> None:
    transport, sink = make("--spawn-grandchild-at-start", start=False)
    # A caller reading its own answer (no reader thread yet): it returns at the exit, not at its deadline.
    started = time.monotonic()
    deadline = started + WAIT_S
    assert transport.drive_call(request_bytes(1, "exit", {"code": 7}), 1, lambda: time.monotonic() > deadline, deadline)
    assert time.monotonic() - started < WAIT_S / 2
    # The reader thread reports the end the direct reader saw.
    transport.start(sink)
    error = sink.wait_closed()
    assert error.returncode == 7
    assert "still holds its stdout" in error.message
    grandchild = int(error.stderr_tail.split("grandchild=")[1].split()[0])
    transport.close()
    assert gone(grandchild)


def test_close_reclaims_a_grandchild_in_its_own_session_after_the_child_died(make: Maker) -> None:
    transport, sink = make()
    grandchild = call(transport, sink, 1, "spawn_grandchild", {"new_session": True})
    assert psutil.Process(grandchild).ppid() == transport.pid
    transport.send(request_bytes(2, "exit", {"code": 5}))
    assert sink.wait_closed().returncode == 5  # reaped: its children can no longer be listed
    assert psutil.Process(grandchild).ppid() != transport.pid
    assert os.getpgid(grandchild) != transport.pid  # nor is the grandchild in the child's group
    started = time.monotonic()
    transport.close()
    assert time.monotonic() - started < 2.0
    assert gone(grandchild)


# -- garbage collection and interpreter exit ----------------------------------------------


@pytest.mark.parametrize("cycle", [False, True], ids=["plain", "sink-holds-transport"])
def test_garbage_collected_transport_warns_and_reaps(cycle: bool) -> None:
    class Sink(RecordingSink):
        transport: Optional[StdioTransport] = None

    sink = Sink()
    transport: Optional[StdioTransport] = StdioTransport(peer_command("stdio_peer"))
    assert transport is not None
    transport.start(sink)
    assert call(transport, sink, 1, "echo", [1]) == [1]
    pid = transport.pid
    if cycle:
        sink.transport = transport
        del sink  # only the transport holds it now, and the reader holds neither
    with pytest.warns(ResourceWarning, match=r"StdioTransport\(.*\) was never closed"):
        transport = None
        gc.collect()
    assert not psutil.pid_exists(pid)


@pytest.mark.parametrize("flags", [(), ("--ignore-sigterm",)], ids=["plain", "ignore-sigterm"])
def test_interpreter_exit_closes_open_transports(flags: Tuple[str, ...]) -> None:
    script = textwrap.dedent(
        f"""
        import sys, threading
        from jsonrpc_threads.transports.stdio import StdioTransport

        class Sink:
            def __init__(self):
                self.got = threading.Event()
            def message_received(self, data):
                self.got.set()
            def requests_failed(self, ids, error):
                pass
            def has_pending(self):
                return True
            def transport_closed(self, error):
                pass

        transport = StdioTransport({peer_command("stdio_peer", *flags)!r})
        sink = Sink()
        transport.start(sink)
        transport.send(b'{{"jsonrpc":"2.0","id":1,"method":"echo"}}')
        assert sink.got.wait(20)
        print(transport.pid, flush=True)
        """
    )
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-X", "dev", "-c", script],
        capture_output=True,
        text=True,
        timeout=30,
        cwd=REPO_ROOT,
        check=False,
    )
    elapsed = time.monotonic() - started
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert elapsed < 10
    assert not psutil.pid_exists(int(result.stdout))


# -- framing --------------------------------------------------------------------------------


def test_content_length_framing_round_trip_with_a_language_server_style_peer() -> None:
    transport = StdioTransport(peer_command("content_length_peer"), framing="content-length")
    with JsonRpcClient(transport) as client:
        text = "caf\u00e9 \u2028 \U0001f600 " + "x" * 100_000
        assert client.call("echo", [text]) == [text]
        futures = [client.request("echo", {"n": n}) for n in range(50)]
        assert [f.result(WAIT_S) for f in futures] == [{"n": n} for n in range(50)]
        with pytest.raises(MethodNotFound):
            client.call("other")


def test_a_timeout_says_when_a_line_framed_stream_carries_content_length_headers() -> None:
    # The mistake of a user who starts a language server with the default framing:
    # the server cannot read our lines, but its start-up output tells what it speaks.
    script = (
        "import sys; sys.stderr.write('server says hello\\n'); sys.stderr.flush(); "
        "sys.stdout.buffer.write(b'Content-Length: 2\\r\\n\\r\\n{}'); sys.stdout.flush(); sys.stdin.read()"
    )
    command = [sys.executable, "-c", script]
    with JsonRpcClient(StdioTransport(command)) as client, pytest.raises(RequestTimeout) as caught:
        client.call("initialize", {}, timeout=1.0)
    assert 'framing="content-length"' in str(caught.value)
    assert "server says hello" in caught.value.hint


def test_an_unknown_framing_is_refused() -> None:
    with pytest.raises(ValueError, match="framing"):
        StdioTransport(peer_command("stdio_peer"), framing="xml")


def test_poll_timeouts_are_sliced_and_never_end_before_the_deadline() -> None:
    now = time.monotonic()
    assert poll_timeout_ms(None) == POLL_SLICE_MS
    assert poll_timeout_ms(now + 3600) == POLL_SLICE_MS
    assert poll_timeout_ms(now + 3600, slice_ms=7) == 7
    assert poll_timeout_ms(now - 1) == 0
    for left_s in (0.0123, 0.0301):
        before = time.monotonic()
        deadline = before + left_s
        timeout = poll_timeout_ms(deadline)
        after = time.monotonic()
        # Rounded up to whole milliseconds: a poll that times out is never before the deadline.
        assert (deadline - after) * 1000 <= timeout <= (deadline - before) * 1000 + 1
