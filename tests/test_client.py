"""JsonRpcClient: its own logic against the in-memory peer; what a pipe adds against a real child.

The client's logic (ids, timeouts, handlers, cancellation, batches) runs against
the scripted peer of ``tests/helpers.py`` over ``jsonrpc_threads.testing.MemoryTransport``;
what only a process can show (its exit, garbage on stdout, ids it gets wrong,
one CPU shared with the child) against ``tests/peers/stdio_peer.py``.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
import time
from concurrent.futures import CancelledError, Future, wait
from pathlib import Path
from typing import Any, Dict, Iterator, List

import pytest

from jsonrpc_threads import (
    InternalError,
    InvalidParams,
    JsonRpcClient,
    JsonRpcError,
    MethodNotFound,
    RequestTimeout,
    StdioTransport,
    TransportClosed,
)

from .conftest import peer_command
from .helpers import scripted
from .strategies import CLIENT_CHOICES, CLIENT_IDS

WAIT_S = 10.0
REPO_ROOT = Path(__file__).resolve().parent.parent
#: The client's strategies this test runs with (``tests/strategies.py``).
CHOSEN: Dict[str, str] = {}


@pytest.fixture(autouse=True, params=CLIENT_CHOICES, ids=CLIENT_IDS)
def strategies(request: pytest.FixtureRequest) -> Iterator[None]:
    """Every test here, with the client's default strategies and with the plain ones."""
    CHOSEN.update(request.param)
    try:
        yield
    finally:
        CHOSEN.clear()


def client_of(transport: Any, **options: Any) -> JsonRpcClient:
    return JsonRpcClient(transport, **{**CHOSEN, **options})


def make_client(**options: Any) -> JsonRpcClient:
    return client_of(scripted(), **options)


@pytest.fixture
def client() -> Iterator[JsonRpcClient]:
    c = make_client()
    try:
        yield c
    finally:
        c.close()


@pytest.fixture
def stdio_client() -> Iterator[JsonRpcClient]:
    c = client_of(StdioTransport(peer_command("stdio_peer")))
    try:
        yield c
    finally:
        c.close()


def test_call_returns_result(client: JsonRpcClient) -> None:
    assert client.call("add", [2, 3]) == 5
    assert client.call("echo", {"a": [1, None, True]}) == {"a": [1, None, True]}
    assert client.call("echo") is None


def test_many_threads_many_calls_each_result_matched(client: JsonRpcClient) -> None:
    errors: List[BaseException] = []

    def worker(n: int) -> None:
        try:
            for i in range(150):
                payload = {"thread": n, "i": i}
                assert client.call("echo", payload) == payload
            futures = [client.request("add", [n, i]) for i in range(100)]
            assert [f.result(WAIT_S) for f in futures] == [n + i for i in range(100)]
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors
    assert not client.has_pending()


def test_timeout_frees_the_caller_and_the_client_still_works(client: JsonRpcClient) -> None:
    start = time.monotonic()
    with pytest.raises(RequestTimeout) as info:
        client.call("never", timeout=0.2)
    assert 0.15 < time.monotonic() - start < 3
    assert isinstance(info.value, TimeoutError)
    assert info.value.method == "never" and info.value.timeout == 0.2
    assert client.call("add", [1, 1]) == 2
    assert not client.has_pending()


def test_late_answer_after_timeout_is_dropped_quietly(client: JsonRpcClient, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="jsonrpc_threads")
    with pytest.raises(RequestTimeout):
        client.call("sleep", {"seconds": 0.3, "result": "late"}, timeout=0.05)
    # The late answer arrives while we wait for a later call that outlasts it.
    assert client.call("sleep", {"seconds": 0.5, "result": "on time"}) == "on time"
    assert any("late or unknown response" in r.getMessage() for r in caplog.records)
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_timeout_none_and_default_timeout() -> None:
    with make_client(default_timeout=0.1) as c:
        with pytest.raises(RequestTimeout):
            c.call("sleep", {"seconds": 1, "result": 1})
        assert c.call("sleep", {"seconds": 0.3, "result": 2}, timeout=None) == 2
        assert c.call("sleep", {"seconds": 0.3, "result": 3}, timeout=5) == 3
    with make_client(default_timeout=None) as c:
        assert c.call("sleep", {"seconds": 0.3, "result": 4}) == 4


@pytest.mark.parametrize("bad", [-1, "1", True, float("nan")])
def test_bad_timeouts_are_refused(client: JsonRpcClient, bad: Any) -> None:
    with pytest.raises((TypeError, ValueError)):
        client.request("echo", timeout=bad)


def test_errors_from_the_peer_are_raised_with_their_class(client: JsonRpcClient) -> None:
    with pytest.raises(MethodNotFound) as info:
        client.call("no_such_method")
    assert info.value.code == -32601


def test_crash_mid_request_fails_pending_with_exit_code_and_stderr(stdio_client: JsonRpcClient) -> None:
    client = stdio_client
    slow = client.request("never", timeout=None)
    with pytest.raises(TransportClosed) as info:
        client.call("exit", {"code": 7, "stderr": "fatal: out of coffee"})
    assert isinstance(info.value, ConnectionError)
    assert info.value.returncode == 7
    assert "out of coffee" in info.value.stderr_tail
    with pytest.raises(TransportClosed):
        slow.result(WAIT_S)
    # A request on the dead client fails at once, with the same facts.
    with pytest.raises(TransportClosed) as again:
        client.request("echo")
    assert again.value.returncode == 7


def test_close_with_hundreds_pending_fails_them_all_at_once() -> None:
    c = make_client()
    futures = [c.request("never", timeout=None) for _ in range(300)]
    futures += [c.request("sleep", {"seconds": 30, "result": 1}) for _ in range(50)]
    start = time.monotonic()
    c.close()
    assert time.monotonic() - start < 5
    _done, not_done = wait(futures, timeout=WAIT_S)
    assert not not_done
    assert all(isinstance(f.exception(), TransportClosed) for f in futures)
    c.close()  # idempotent
    with pytest.raises(TransportClosed):
        c.call("echo")
    with pytest.raises(TransportClosed):
        c.notify("x")


def test_close_from_many_threads_at_once() -> None:
    c = make_client()
    pending = c.request("never", timeout=None)
    threads = [threading.Thread(target=c.close) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(WAIT_S)
    assert isinstance(pending.exception(WAIT_S), TransportClosed)


def test_garbage_and_invalid_lines_are_skipped(stdio_client: JsonRpcClient, caplog: pytest.LogCaptureFixture) -> None:
    client = stdio_client
    assert client.call("garbage") == "ok"
    assert client.call("add", [1, 2]) == 3
    assert any("not JSON" in r.getMessage() for r in caplog.records)


def test_oversized_line_is_skipped_and_the_stream_goes_on() -> None:
    transport = StdioTransport(peer_command("stdio_peer"), max_line_bytes=64 * 1024)
    with client_of(transport) as c:
        assert c.call("oversized", {"bytes": 1024 * 1024}) == "ok"
        assert c.call("echo", ["after"]) == ["after"]


def test_wrong_and_duplicate_ids_are_dropped(stdio_client: JsonRpcClient) -> None:
    client = stdio_client
    assert client.call("wrong_id") == "ok"
    assert client.call("duplicate") == "first"
    assert client.call("echo", [1]) == [1]


def test_unicode_round_trip_including_line_separators(stdio_client: JsonRpcClient) -> None:
    client = stdio_client
    text = "a\u2028b\u2029c\n\U0001f600 é \x00"
    assert client.call("echo", [text]) == [text]
    result = client.call("unicode")
    assert "\u2028" in result and "\u2029" in result and "\U0001f600" in result


def test_notifications_reach_their_handler_before_the_call_returns(client: JsonRpcClient) -> None:
    seen: List[Any] = []
    client.on_notification("progress", seen.append)
    assert client.call("notify", {"method": "progress", "params": {"n": 1}, "count": 200}) == 200
    assert len(seen) == 200


def test_notification_handler_may_call_back_into_the_client(client: JsonRpcClient) -> None:
    answers: List[Any] = []
    client.on_notification("progress", lambda params: answers.append(client.call("add", [1, 1], timeout=5)))
    assert client.call("notify", {"method": "progress", "params": {}, "count": 3}) == 3
    assert answers == [2, 2, 2]


def test_failing_notification_handler_is_logged(client: JsonRpcClient, caplog: pytest.LogCaptureFixture) -> None:
    def boom(params: Any) -> None:
        raise RuntimeError("handler bug")

    client.on_notification("progress", boom)
    assert client.call("notify", {"method": "progress", "params": {}, "count": 2}) == 2
    assert client.call("echo", [1]) == [1]
    assert any("handler" in r.getMessage() and r.exc_info for r in caplog.records)


def test_server_to_client_request_handler_that_calls_back(client: JsonRpcClient) -> None:
    def handler(params: Any) -> Any:
        # Re-entrant: this runs on a worker while the peer waits for our answer.
        return {"sum": client.call("add", params["pair"], timeout=5)}

    client.on_request("client/compute", handler)
    answer = client.call("reverse_call", {"method": "client/compute", "params": {"pair": [20, 22]}}, timeout=10)
    assert answer == {"result": {"sum": 42}}


def test_server_to_client_errors(client: JsonRpcClient) -> None:
    def invalid(params: Any) -> Any:
        raise InvalidParams("need x", data={"field": "x"})

    def broken(params: Any) -> Any:
        raise KeyError("secret detail")

    client.on_request("client/invalid", invalid)
    client.on_request("client/broken", broken)
    missing = client.call("reverse_call", {"method": "client/missing", "params": {}})
    assert missing["error"]["code"] == -32601
    bad = client.call("reverse_call", {"method": "client/invalid", "params": {}})
    assert bad["error"] == {"code": -32602, "message": "need x", "data": {"field": "x"}}
    failed = client.call("reverse_call", {"method": "client/broken", "params": {}})
    assert failed["error"]["code"] == InternalError().code
    assert failed["error"]["data"] == {"exception": "KeyError"}
    assert "secret detail" not in str(failed)


@pytest.mark.parametrize(
    ("style", "expected"),
    [
        (
            "mcp",
            {"method": "notifications/cancelled", "params": {"requestId": None, "reason": "Cancelled by the client"}},
        ),
        ("lsp", {"method": "$/cancelRequest", "params": {"id": None}}),
        (None, None),
    ],
)
def test_future_cancel_withdraws_and_notifies_the_peer(style: Any, expected: Any) -> None:
    with make_client(cancellation=style) as c:
        future = c.request("never", timeout=None)
        assert future.cancel()
        assert future.cancelled()
        with pytest.raises(CancelledError):
            future.result()
        assert not c.has_pending()
        log = _wait_for_notifications(c, 1, timeout=5.0 if expected else 0.3)
        if expected is None:
            assert log == []
        else:
            request_id = future.request_id  # type: ignore[attr-defined]
            key = "requestId" if style == "mcp" else "id"
            expected["params"][key] = request_id
            assert log == [expected]
        assert c.call("echo", [5]) == [5]


def test_timeout_sends_cancellation_with_reason() -> None:
    with make_client(cancellation="mcp") as c:
        with pytest.raises(RequestTimeout):
            c.call("never", timeout=0.1)
        (entry,) = _wait_for_notifications(c, 1)
        assert entry["method"] == "notifications/cancelled"
        assert "timed out" in entry["params"]["reason"]


def test_a_cancellation_callable_runs_on_a_handler_worker_never_the_timer_thread() -> None:
    threads: List[str] = []

    def build(request_id: Any, reason: str) -> Any:
        threads.append(threading.current_thread().name)
        return "custom/cancelled", {"id": request_id, "reason": reason}

    with make_client(cancellation=build) as c:
        timed_out = c.request("never", timeout=0.05)
        assert isinstance(timed_out.exception(5.0), RequestTimeout)
        (entry,) = _wait_for_notifications(c, 1)
        assert entry == {
            "method": "custom/cancelled",
            "params": {"id": timed_out.request_id, "reason": "Request timed out after 0.05s"},  # type: ignore[attr-defined]
        }
    assert len(threads) == 1 and threads[0].startswith("jsonrpc-handler["), threads


def _wait_for_notifications(c: JsonRpcClient, count: int, timeout: float = 5.0) -> List[Any]:
    # Cancellations are sent in the background; the peer waits (bounded) for them.
    log: List[Any] = c.call("notifications_log", {"wait_for": count, "timeout": timeout})
    return log


def test_batch_sends_one_array_and_settles_each_future(client: JsonRpcClient) -> None:
    with client.batch() as b:
        total = b.request("add", [1, 2])
        echoed = b.request("echo", ["x"])
        missing = b.request("no_such")
        b.notify("note", {"k": 1})
    assert total.result(WAIT_S) == 3
    assert echoed.result(WAIT_S) == ["x"]
    assert isinstance(missing.exception(WAIT_S), MethodNotFound)
    log = _wait_for_notifications(client, 1)
    assert log == [{"method": "note", "params": {"k": 1}}]
    with pytest.raises(RuntimeError):
        b.request("late")


def test_batch_with_an_exception_sends_nothing(client: JsonRpcClient) -> None:
    future: Future[Any]
    with pytest.raises(ZeroDivisionError), client.batch() as b:
        future = b.request("add", [1, 2])
        1 / 0  # noqa: B018
    assert future.cancelled()
    assert client.call("notifications_log", {"wait_for": 1, "timeout": 0.3}) == []


def test_unencodable_params_raise_before_anything_is_sent(client: JsonRpcClient) -> None:
    with pytest.raises(TypeError):
        client.request("echo", {"x": object()})
    with pytest.raises(TypeError):
        client.notify("echo", "not structured")  # type: ignore[arg-type]
    assert not client.has_pending()


def test_missing_command_fails_at_construction() -> None:
    with pytest.raises(TransportClosed) as info:
        StdioTransport(["/nonexistent/definitely-not-here", "--flag"])
    assert "definitely-not-here" in str(info.value)


@pytest.mark.parametrize("keyword", ["waiter", "futures"])
def test_an_unknown_strategy_is_refused_naming_the_choices(keyword: str) -> None:
    transport = scripted()
    with pytest.raises(ValueError, match=f"{keyword} must be one of .*'plain'"):
        JsonRpcClient(transport, **{keyword: "fast"})
    transport.close()


def test_the_chosen_strategies_are_the_ones_used() -> None:
    with make_client() as c:
        future = c.request("echo", [1])
        assert future.result(WAIT_S) == [1]
        assert type(future).__name__ == ("PlainRequestFuture" if CHOSEN["futures"] == "plain" else "RequestFuture")


def test_errors_are_json_rpc_errors() -> None:
    assert issubclass(RequestTimeout, JsonRpcError) and issubclass(TransportClosed, JsonRpcError)


_ONE_CPU_SCRIPT = """
import json, os, subprocess, sys, threading, time
sys.path.insert(0, sys.argv[1])
os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # this thread, and all it starts, on one CPU
from jsonrpc_threads import JsonRpcClient, StdioTransport
from jsonrpc_threads.transports.stdio import READER_PARK_S

ROUNDS, CALLS, OTHER_CALLS = (int(arg) for arg in os.environ["SHAPE"].split())
peer = sys.argv[2:]

def switches(thread):
    with open(f"/proc/self/task/{thread.native_id}/status") as status:
        fields = dict(line.split(":", 1) for line in status if ":" in line)
    return int(fields["voluntary_ctxt_switches"]) + int(fields["nonvoluntary_ctxt_switches"])

other = subprocess.Popen(peer, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
with JsonRpcClient(StdioTransport(peer), **json.loads(os.environ["CHOICES"])) as client:
    client.call("echo", [0], timeout=10)
    [reader] = [t for t in threading.enumerate() if t.name.startswith("jsonrpc-stdio-reader")]
    for _ in range(ROUNDS):
        # Meanwhile this thread talks to another process by hand, and the client's
        # reader thread sleeps in poll() (watching stdout again once the calls paused).
        for index in range(OTHER_CALLS):
            other.stdin.write(b'{"jsonrpc":"2.0","id":%d,"method":"echo"}\\n' % index)
            other.stdin.flush()
            other.stdout.readline()
        before, start = switches(reader), time.monotonic()
        for index in range(CALLS):
            assert client.call("echo", [index], timeout=10) == [index]
        print(switches(reader) - before, (time.monotonic() - start) / READER_PARK_S)
other.stdin.close()
other.wait(10)
other.stdout.close()
"""


@pytest.mark.skipif(not (hasattr(os, "sched_setaffinity") and os.path.isdir("/proc/self/task")), reason="needs Linux")
def test_calls_in_a_row_on_one_cpu_do_not_keep_waking_the_reader_thread() -> None:
    # The reader thread once waited for the read baton whenever it saw stdout readable while
    # a caller read: every call's release woke it, and with calls back to back on one CPU it
    # never found the baton free, so it woke two or three times a call until the calls
    # paused.  It happened in some rounds only (how the threads were scheduled), so: many rounds.
    rounds, calls = 30, 300
    result = subprocess.run(
        [sys.executable, "-c", _ONE_CPU_SCRIPT, str(REPO_ROOT), *peer_command("stdio_peer")],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "SHAPE": f"{rounds} {calls} 1000", "CHOICES": json.dumps(CHOSEN)},
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    rows = [line.split() for line in result.stdout.splitlines()]
    assert len(rows) == rounds, result.stdout
    for wakeups, parks in rows:
        # Stepped aside while a caller reads, it looks around once per READER_PARK_S.
        assert int(wakeups) <= calls // 10 + 3 * float(parks) + 5, result.stdout


_CALLERS_ON_ONE_CPU_SCRIPT = """
import json, os, sys, threading
sys.path.insert(0, sys.argv[1])
os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
from jsonrpc_threads import JsonRpcClient, StdioTransport

THREADS, CALLS = 16, 200
fds = len(os.listdir("/proc/self/fd"))
answered = []
with JsonRpcClient(StdioTransport(sys.argv[2:]), **json.loads(os.environ["CHOICES"])) as client:
    start = threading.Barrier(THREADS)

    def caller(index):
        start.wait(10)
        for n in range(CALLS):
            assert client.call("echo", [index, n], timeout=10) == [index, n]
        answered.append(index)

    threads = [threading.Thread(target=caller, args=(i,)) for i in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
print(len(answered), len(os.listdir("/proc/self/fd")) - fds)
"""


@pytest.mark.skipif(not (hasattr(os, "sched_setaffinity") and sys.platform.startswith("linux")), reason="needs Linux")
def test_callers_sharing_one_cpu_each_get_their_answer_and_leave_no_descriptor() -> None:
    # On one CPU the callers wait for their answers while the reader delivers them: every
    # interleaving there still gives each call its own answer, and close() leaves no
    # descriptor open.
    result = subprocess.run(
        [sys.executable, "-c", _CALLERS_ON_ONE_CPU_SCRIPT, str(REPO_ROOT), *peer_command("stdio_peer")],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "CHOICES": json.dumps(CHOSEN)},
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    finished, fds_left = result.stdout.split()
    assert finished == "16"
    assert fds_left == "0"
