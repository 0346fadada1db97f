"""Wire tests of jsonrpc_threads.server: in-process on BytesIO, and through real child processes."""

from __future__ import annotations

import io
import json
import logging
import queue
import sys
import textwrap
import threading
import time
from typing import Any, Dict, List, Optional, Tuple

import pytest

from jsonrpc_threads.errors import InvalidParams, JsonRpcError, MethodNotFound
from jsonrpc_threads.server import (
    DEFAULT_MAX_LINE_BYTES,
    EOF_DRAIN_TIMEOUT_S,
    current_connection,
    current_request_id,
    notify,
    serve,
)

from .pipe_child import WAIT_S, PipeChild

# ---------------------------------------------------------------- helpers


def frame(item: Any) -> bytes:
    """One input line: raw bytes are taken as they are, anything else is JSON-encoded plus newline."""
    if isinstance(item, bytes):
        return item
    return json.dumps(item, ensure_ascii=False).encode("utf-8") + b"\n"


def req(request_id: Any, method: str, params: Any = None) -> Dict[str, Any]:
    message: Dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def note(method: str, params: Any = None) -> Dict[str, Any]:
    message: Dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return message


def split_output(raw: bytes) -> List[Any]:
    """Parse the server's output: every message one line ending in b"\\n"."""
    if not raw:
        return []
    assert raw.endswith(b"\n")
    lines = raw[:-1].split(b"\n")
    assert all(line for line in lines), raw
    return [json.loads(line) for line in lines]


def run(handler: Any, *items: Any, **options: Any) -> List[Any]:
    """Run serve() to the end of the given input; return the parsed answers."""
    out = io.BytesIO()
    assert serve(handler, stdin=io.BytesIO(b"".join(frame(i) for i in items)), stdout=out, **options) is None
    return split_output(out.getvalue())


def basic_handler(method: str, params: Any) -> Any:
    if method == "echo":
        return params
    if method == "add":
        return params["a"] + params["b"]
    if method == "bad_params":
        raise InvalidParams("need a and b", data={"param": "a"})
    if method == "custom":
        raise JsonRpcError(-32050, "custom failure", {"x": 1})
    if method == "boom":
        raise ValueError("secret detail")
    if method == "unserializable":
        return {1, 2}
    raise MethodNotFound(data={"method": method})


def join_server_workers() -> None:
    for thread in threading.enumerate():
        if thread.name.startswith("jsonrpc-server-worker"):
            thread.join(WAIT_S)
            assert not thread.is_alive(), thread.name


def by_id(answers: List[Any]) -> Dict[Any, Any]:
    """Answers keyed by id: requests run concurrently, so their answers come in any order."""
    keyed = {a["id"]: a for a in answers}
    assert len(keyed) == len(answers)
    return keyed


def error_of(answer: Any) -> Tuple[Any, int]:
    assert set(answer) == {"jsonrpc", "id", "error"}, answer
    assert answer["jsonrpc"] == "2.0"
    return answer["id"], answer["error"]["code"]


# ---------------------------------------------------------------- requests and errors


def test_request_answered_with_result() -> None:
    assert by_id(run(basic_handler, req(1, "add", {"a": 2, "b": 3}), req("x", "echo", [1, None]))) == {
        1: {"jsonrpc": "2.0", "id": 1, "result": 5},
        "x": {"jsonrpc": "2.0", "id": "x", "result": [1, None]},
    }


def test_params_absent_reach_the_handler_as_none() -> None:
    assert run(basic_handler, req(1, "echo")) == [{"jsonrpc": "2.0", "id": 1, "result": None}]


@pytest.mark.parametrize("garbage", [b"{not json\n", b'{"jsonrpc": "2.0", "id": 1,\n', b"\xff\xfe\xfa\n", b"nul\n"])
def test_parse_error_answered_with_null_id_and_loop_goes_on(garbage: bytes) -> None:
    answers = run(basic_handler, garbage, req(2, "echo", {"k": "v"}))
    assert error_of(answers[0]) == (None, -32700)
    assert answers[1] == {"jsonrpc": "2.0", "id": 2, "result": {"k": "v"}}
    assert len(answers) == 2


@pytest.mark.parametrize(
    ("message", "answer_id"),
    [
        (1, None),
        ("a string", None),
        (None, None),
        ({"id": 1, "method": "echo"}, 1),  # no jsonrpc
        ({"jsonrpc": "1.0", "id": 2, "method": "echo"}, 2),
        ({"jsonrpc": 2.0, "id": 3, "method": "echo"}, 3),
        ({"jsonrpc": "2.0", "id": 4, "method": 5}, 4),
        ({"jsonrpc": "2.0", "id": 5, "method": None}, 5),
        ({"jsonrpc": "2.0", "id": 6, "method": "echo", "params": 5}, 6),
        ({"jsonrpc": "2.0", "id": 7, "method": "echo", "params": "text"}, 7),
        ({"jsonrpc": "2.0", "id": 1.5, "method": "echo"}, None),
        ({"jsonrpc": "2.0", "id": True, "method": "echo"}, None),
        ({"jsonrpc": "2.0", "id": {"a": 1}, "method": "echo"}, None),
        ({"jsonrpc": "2.0", "id": [1], "method": "echo"}, None),
        ({"jsonrpc": "2.0", "id": None, "method": "echo"}, None),
        ({"jsonrpc": "2.0", "id": 8}, 8),  # neither method nor result/error
        ({"jsonrpc": "2.0"}, None),
    ],
)
def test_invalid_envelope_answered_with_32600(message: Any, answer_id: Any) -> None:
    answers = run(basic_handler, message, req("next", "echo", [1]))
    assert error_of(answers[0]) == (answer_id, -32600)
    assert answers[1] == {"jsonrpc": "2.0", "id": "next", "result": [1]}
    assert len(answers) == 2


def test_empty_batch_is_answered_with_one_error_object() -> None:
    answers = run(basic_handler, b"[]\n", b" [ ] \n")
    assert len(answers) == 2
    for answer in answers:
        assert isinstance(answer, dict)
        assert error_of(answer) == (None, -32600)


def test_method_not_found_and_invalid_params_from_handler() -> None:
    answers = by_id(run(basic_handler, req(1, "nope"), req(2, "bad_params", {})))
    assert answers[1]["error"] == {"code": -32601, "message": "Method not found", "data": {"method": "nope"}}
    assert answers[2]["error"] == {"code": -32602, "message": "need a and b", "data": {"param": "a"}}


def test_any_json_rpc_error_keeps_its_code_message_and_data() -> None:
    assert run(basic_handler, req(1, "custom")) == [
        {"jsonrpc": "2.0", "id": 1, "error": {"code": -32050, "message": "custom failure", "data": {"x": 1}}}
    ]


def test_other_exception_is_internal_error_without_traceback_on_the_wire(caplog: pytest.LogCaptureFixture) -> None:
    out = io.BytesIO()
    with caplog.at_level(logging.ERROR, logger="jsonrpc_threads.server"):
        serve(basic_handler, stdin=io.BytesIO(frame(req(7, "boom"))), stdout=out)
    raw = out.getvalue()
    assert split_output(raw) == [
        {
            "jsonrpc": "2.0",
            "id": 7,
            "error": {"code": -32603, "message": "Internal error", "data": {"exception": "ValueError"}},
        }
    ]
    assert b"Traceback" not in raw
    assert b"secret detail" not in raw
    failures = [r for r in caplog.records if r.exc_info and r.exc_info[0] is ValueError]
    assert len(failures) == 1


def test_unserializable_result_is_internal_error() -> None:
    answers = by_id(run(basic_handler, req(1, "unserializable"), req(2, "echo", [2])))
    assert answers[1]["error"] == {
        "code": -32603,
        "message": "Answer is not JSON-serializable",
        "data": {"exception": "TypeError"},
    }
    assert answers[2]["result"] == [2]


# ---------------------------------------------------------------- notifications and responses


def test_notifications_are_never_answered_even_when_the_handler_fails() -> None:
    calls: List[str] = []

    def handler(method: str, params: Any) -> Any:
        calls.append(method)
        return basic_handler(method, params)

    answers = run(handler, note("echo", [1]), note("boom"), note("nope"), note("bad_params", {}), req(1, "echo", [1]))
    assert answers == [{"jsonrpc": "2.0", "id": 1, "result": [1]}]
    assert sorted(calls) == ["bad_params", "boom", "echo", "echo", "nope"]


def test_incoming_responses_are_ignored_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    responses = [
        {"jsonrpc": "2.0", "id": 1, "result": "x"},
        {"jsonrpc": "2.0", "id": 2, "error": {"code": -1, "message": "no"}},
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}},
        {"jsonrpc": "2.0", "result": "no id"},  # malformed: still not answered
        {"jsonrpc": "2.0", "id": 3, "result": 1, "error": {}},
    ]
    with caplog.at_level(logging.WARNING, logger="jsonrpc_threads.server"):
        answers = run(basic_handler, *responses, req(9, "echo", [9]))
    assert answers == [{"jsonrpc": "2.0", "id": 9, "result": [9]}]
    assert sum("ignored" in r.getMessage() for r in caplog.records) == len(responses)


# ---------------------------------------------------------------- batches


def test_mixed_batch_is_answered_with_one_array_in_item_order() -> None:
    batch = [
        req(1, "add", {"a": 1, "b": 1}),
        note("echo", [0]),
        5,
        req(2, "nope"),
        {"jsonrpc": "2.0", "id": 77, "result": "a response"},
        {"jsonrpc": "2.0", "id": 9, "method": 1},
        req(3, "boom"),
    ]
    answers = run(basic_handler, batch)
    assert len(answers) == 1
    array = answers[0]
    assert isinstance(array, list)
    assert array[0] == {"jsonrpc": "2.0", "id": 1, "result": 2}
    assert error_of(array[1]) == (None, -32600)
    assert error_of(array[2]) == (2, -32601)
    assert error_of(array[3]) == (9, -32600)
    assert error_of(array[4]) == (3, -32603)
    assert len(array) == 5


def test_batch_of_only_invalid_items() -> None:
    assert [error_of(a) for a in run(basic_handler, [1, [], "x"])[0]] == [(None, -32600)] * 3


def test_all_notification_batch_writes_nothing() -> None:
    calls: queue.Queue[str] = queue.Queue()

    def handler(method: str, params: Any) -> Any:
        calls.put(method)
        return None

    assert run(handler, [note("a"), note("b"), note("c")]) == []
    assert sorted(calls.get_nowait() for _ in range(3)) == ["a", "b", "c"]


def test_batch_of_responses_writes_nothing() -> None:
    assert run(basic_handler, [{"jsonrpc": "2.0", "id": 1, "result": 1}]) == []


def test_batch_items_run_concurrently_and_the_array_is_written_once() -> None:
    released = threading.Event()

    def handler(method: str, params: Any) -> Any:
        if method == "slow":
            return released.wait(WAIT_S)  # True only if "fast" ran while "slow" waited
        released.set()
        notify("fast-done")
        return "fast"

    try:
        answers = run(handler, [req(1, "slow"), req(2, "fast")])
    finally:
        released.set()
    assert answers[0] == {"jsonrpc": "2.0", "method": "fast-done"}
    assert answers[1] == [{"jsonrpc": "2.0", "id": 1, "result": True}, {"jsonrpc": "2.0", "id": 2, "result": "fast"}]
    assert len(answers) == 2


# ---------------------------------------------------------------- notify() and context


def test_notify_from_a_handler_arrives_before_the_response() -> None:
    def handler(method: str, params: Any) -> Any:
        for i in (1, 2, 3):
            notify("progress", {"progress": i, "request_id": current_request_id()})
        return "done"

    answers = run(handler, req("r1", "work"))
    assert answers == [
        {"jsonrpc": "2.0", "method": "progress", "params": {"progress": 1, "request_id": "r1"}},
        {"jsonrpc": "2.0", "method": "progress", "params": {"progress": 2, "request_id": "r1"}},
        {"jsonrpc": "2.0", "method": "progress", "params": {"progress": 3, "request_id": "r1"}},
        {"jsonrpc": "2.0", "id": "r1", "result": "done"},
    ]


def test_current_request_id_is_none_in_a_notification_handler() -> None:
    def handler(method: str, params: Any) -> Any:
        notify("seen", [current_request_id()])

    assert run(handler, note("x")) == [{"jsonrpc": "2.0", "method": "seen", "params": [None]}]


def test_connection_can_be_handed_to_another_thread() -> None:
    def handler(method: str, params: Any) -> Any:
        connection = current_connection()
        helper = threading.Thread(target=connection.notify, args=("from-helper", {"n": 1}))
        helper.start()
        helper.join(WAIT_S)
        return "ok"

    assert run(handler, req(1, "x")) == [
        {"jsonrpc": "2.0", "method": "from-helper", "params": {"n": 1}},
        {"jsonrpc": "2.0", "id": 1, "result": "ok"},
    ]


def test_notify_outside_a_handler_raises_runtime_error() -> None:
    with pytest.raises(RuntimeError, match="inside a handler"):
        notify("progress", {"progress": 1})
    with pytest.raises(RuntimeError):
        current_request_id()
    with pytest.raises(RuntimeError):
        current_connection()


def test_notify_with_unencodable_params_raises_type_error_in_the_handler() -> None:
    def handler(method: str, params: Any) -> Any:
        with pytest.raises(TypeError):
            notify("x", {"bad": {1, 2}})
        return "still fine"

    assert run(handler, req(1, "x")) == [{"jsonrpc": "2.0", "id": 1, "result": "still fine"}]


# ---------------------------------------------------------------- framing


def test_line_separators_and_emoji_round_trip_on_one_line() -> None:
    text = "a\u2028b\u2029c \U0001f600 \u00e9 \x85 end"
    out = io.BytesIO()
    serve(basic_handler, stdin=io.BytesIO(frame(req(1, "echo", {"text": text}))), stdout=out)
    raw = out.getvalue()
    assert raw.count(b"\n") == 1
    assert "\u2028".encode() in raw  # sent raw (ensure_ascii=False), not escaped
    assert "\U0001f600".encode() in raw
    assert split_output(raw) == [{"jsonrpc": "2.0", "id": 1, "result": {"text": text}}]


def test_blank_lines_crlf_and_a_last_line_without_newline() -> None:
    data = b"\n\n   \n\r\n" + frame(req(1, "echo", [1]))[:-1] + b"\r\n" + frame(req(2, "echo", [2]))[:-1]
    assert by_id(run(basic_handler, data)) == {
        1: {"jsonrpc": "2.0", "id": 1, "result": [1]},
        2: {"jsonrpc": "2.0", "id": 2, "result": [2]},
    }


def padded_request(request_id: int, size: int) -> bytes:
    """A request line of exactly ``size`` bytes, newline excluded."""
    line = frame(req(request_id, "echo", {"pad": ""}))[:-1]
    padded = frame(req(request_id, "echo", {"pad": "x" * (size - len(line))}))[:-1]
    assert len(padded) == size
    return padded


def test_oversized_line_is_discarded_and_answered_with_32600_null() -> None:
    limit = 100
    answers = run(
        basic_handler,
        padded_request(1, limit) + b"\n",  # exactly at the limit: accepted
        padded_request(2, limit + 1) + b"\n",  # one byte over
        padded_request(3, 5000) + b"\n",
        req(4, "echo", [4]),
        padded_request(5, 300),  # oversized last line without newline
        max_line_bytes=limit,
    )
    # Refusals are written by the reader at once, answers by workers: compare without order.
    errors = [a for a in answers if "error" in a]
    assert sorted(a["id"] for a in answers if "result" in a) == [1, 4]
    assert len(errors) == 3
    for answer in errors:
        assert error_of(answer) == (None, -32600)
        assert answer["error"]["data"]["limit"] == limit
    assert len(answers) == 5


def test_default_line_limit_is_16_mib() -> None:
    assert DEFAULT_MAX_LINE_BYTES == 16 * 1024 * 1024


# ---------------------------------------------------------------- concurrency and end of input


def test_a_slow_request_does_not_delay_a_fast_one() -> None:
    fast_answered: queue.Queue[bytes] = queue.Queue()

    class Out(io.BytesIO):
        def write(self, data: Any) -> int:
            if b'"id":2' in bytes(data):
                fast_answered.put(bytes(data))
            return super().write(data)

    def handler(method: str, params: Any) -> Any:
        if method == "slow":
            # Finishes only after the fast answer was written: it was not queued behind us.
            return fast_answered.get(timeout=WAIT_S).startswith(b"{")
        return "fast"

    out = Out()
    serve(handler, stdin=io.BytesIO(frame(req(1, "slow")) + frame(req(2, "fast"))), stdout=out)
    assert split_output(out.getvalue()) == [
        {"jsonrpc": "2.0", "id": 2, "result": "fast"},
        {"jsonrpc": "2.0", "id": 1, "result": True},
    ]


def test_max_workers_1_handles_one_message_at_a_time_in_order() -> None:
    events: List[Tuple[str, int]] = []
    threads = set()

    def handler(method: str, params: Any) -> Any:
        threads.add(threading.current_thread().name)
        events.append(("start", params[0]))
        events.append(("end", params[0]))
        return params[0]

    answers = run(handler, *[req(i, "x", [i]) for i in range(20)], max_workers=1)
    assert [a["result"] for a in answers] == list(range(20))
    assert events == [(kind, i) for i in range(20) for kind in ("start", "end")]
    assert len(threads) == 1


def test_end_of_input_waits_for_running_handlers() -> None:
    eof_seen = threading.Event()

    class In(io.BytesIO):
        def readline(self, size: Optional[int] = -1) -> bytes:
            line = super().readline(size)
            if not line:
                eof_seen.set()
            return line

    def handler(method: str, params: Any) -> Any:
        return eof_seen.wait(WAIT_S)  # still running when serve() reaches EOF

    out = io.BytesIO()
    serve(handler, stdin=In(frame(req(1, "x"))), stdout=out)
    assert split_output(out.getvalue()) == [{"jsonrpc": "2.0", "id": 1, "result": True}]


def test_end_of_input_with_a_hung_handler_returns_within_the_bound() -> None:
    release = threading.Event()
    started = threading.Event()

    def handler(method: str, params: Any) -> Any:
        if method == "hang":
            started.set()
            release.wait(60)
            return "late"
        return "fast"

    out = io.BytesIO()
    drain = 0.3
    try:
        t0 = time.monotonic()
        serve(handler, stdin=io.BytesIO(frame(req(1, "hang")) + frame(req(2, "fast"))), stdout=out, drain_timeout=drain)
        elapsed = time.monotonic() - t0
        assert started.is_set()
        assert drain <= elapsed < drain + 3.0
        assert split_output(out.getvalue()) == [{"jsonrpc": "2.0", "id": 2, "result": "fast"}]
    finally:
        release.set()
        join_server_workers()
    # The late answer is dropped: the loop is over.
    assert split_output(out.getvalue()) == [{"jsonrpc": "2.0", "id": 2, "result": "fast"}]


def test_default_drain_bound_is_named() -> None:
    assert 0 < EOF_DRAIN_TIMEOUT_S <= 30


def test_broken_stdout_ends_the_loop_quietly() -> None:
    calls: List[str] = []

    class Broken(io.BytesIO):
        def write(self, data: Any) -> int:
            raise BrokenPipeError(32, "Broken pipe")

    def handler(method: str, params: Any) -> Any:
        calls.append(method)
        return None

    data = b"".join(frame(req(i, "x")) for i in range(50))
    assert serve(handler, stdin=io.BytesIO(data), stdout=Broken(), max_workers=1) is None
    assert calls == ["x"]  # what was queued behind the failed write is dropped


def test_closed_stdout_and_unreadable_stdin_end_the_loop_quietly() -> None:
    closed = io.BytesIO()
    closed.close()
    assert serve(basic_handler, stdin=io.BytesIO(frame(req(1, "echo"))), stdout=closed) is None

    class Unreadable(io.BytesIO):
        def readline(self, size: Optional[int] = -1) -> bytes:
            raise OSError(9, "Bad file descriptor")

    out = io.BytesIO()
    assert serve(basic_handler, stdin=Unreadable(), stdout=out) is None
    assert out.getvalue() == b""


def test_bad_options_raise_value_error() -> None:
    with pytest.raises(ValueError):
        serve(basic_handler, stdin=io.BytesIO(), stdout=io.BytesIO(), max_workers=0)
    with pytest.raises(ValueError):
        serve(basic_handler, stdin=io.BytesIO(), stdout=io.BytesIO(), max_line_bytes=0)


# ---------------------------------------------------------------- real child processes

CHILD_PRELUDE = """
import sys, threading
from jsonrpc_threads.errors import MethodNotFound
from jsonrpc_threads.server import serve, notify, current_request_id

released = threading.Event()

def handler(method, params):
    if method == "echo":
        return params
    if method == "boom":
        raise ValueError("secret detail")
    if method == "print":
        print("hello from print")
        return "printed"
    if method == "slow":
        return released.wait(30)
    if method == "release":
        released.set()
        return "released"
    if method == "hang":
        threading.Event().wait()
    if method == "progress":
        notify("progress", {"request_id": current_request_id()})
        return "done"
    raise MethodNotFound()
"""


class Child(PipeChild):
    """A child process running serve(), read line by line with timeouts."""

    def __init__(self, serve_call: str = "serve(handler)", *, read_stdout: bool = True) -> None:
        script = textwrap.dedent(CHILD_PRELUDE) + "\n" + serve_call + "\n"
        super().__init__([sys.executable, "-c", script], read_stdout=read_stdout)

    def send(self, *items: Any) -> None:
        self.write(b"".join(frame(i) for i in items))


def test_child_answers_and_logs_tracebacks_only_to_stderr() -> None:
    child = Child()
    try:
        child.send(req(1, "echo", {"text": "hi \u2028 \U0001f600"}), b"garbage\n", req(2, "boom"), req(3, "nope"))
        answers = by_id([child.read() for _ in range(4)])
        assert answers[1] == {"jsonrpc": "2.0", "id": 1, "result": {"text": "hi \u2028 \U0001f600"}}
        assert error_of(answers[None]) == (None, -32700)
        assert answers[2]["error"] == {"code": -32603, "message": "Internal error", "data": {"exception": "ValueError"}}
        assert answers[3]["error"]["code"] == -32601
        assert child.finish() == 0
        assert b"Traceback" not in b"".join(child.stdout_raw)
        assert "Traceback" in child.stderr
        assert "ValueError: secret detail" in child.stderr
    finally:
        child.cleanup()


def test_child_slow_request_does_not_delay_a_fast_one() -> None:
    child = Child()
    try:
        child.send(req(1, "slow"), req(2, "echo", ["fast"]))
        assert child.read() == {"jsonrpc": "2.0", "id": 2, "result": ["fast"]}
        child.send(req(3, "release"))
        answers = {a["id"]: a["result"] for a in (child.read(), child.read())}
        assert answers == {1: True, 3: "released"}
        assert child.finish() == 0
    finally:
        child.cleanup()


def test_child_progress_notification_precedes_the_response() -> None:
    child = Child()
    try:
        child.send(req("p", "progress"))
        assert child.read() == {"jsonrpc": "2.0", "method": "progress", "params": {"request_id": "p"}}
        assert child.read() == {"jsonrpc": "2.0", "id": "p", "result": "done"}
        assert child.finish() == 0
    finally:
        child.cleanup()


def test_child_print_in_a_handler_goes_to_stderr() -> None:
    child = Child()
    try:
        child.send(req(1, "print"))
        assert child.read() == {"jsonrpc": "2.0", "id": 1, "result": "printed"}
        assert child.finish() == 0
        assert b"hello from print" not in b"".join(child.stdout_raw)
        assert "hello from print" in child.stderr
    finally:
        child.cleanup()


def test_child_oversized_line_on_a_real_pipe() -> None:
    child = Child("serve(handler, max_line_bytes=1000)")
    try:
        child.send(padded_request(1, 200_000) + b"\n", req(2, "echo", [2]))
        first = child.read()
        assert error_of(first) == (None, -32600)
        assert child.read() == {"jsonrpc": "2.0", "id": 2, "result": [2]}
        assert child.finish() == 0
    finally:
        child.cleanup()


def test_child_exits_after_eof_despite_a_hung_handler() -> None:
    child = Child("serve(handler, drain_timeout=0.5)\nprint('serve returned', file=sys.stderr)")
    try:
        child.send(req(1, "hang"), req(2, "echo", [2]))
        assert child.read() == {"jsonrpc": "2.0", "id": 2, "result": [2]}
        t0 = time.monotonic()
        assert child.finish() == 0
        assert time.monotonic() - t0 < 0.5 + 5.0
        assert "serve returned" in child.stderr
        assert "still running" in child.stderr
    finally:
        child.cleanup()


def test_child_broken_stdout_ends_quietly() -> None:
    child = Child(read_stdout=False)
    try:
        assert child.proc.stdout is not None
        child.proc.stdout.close()  # the peer stops reading
        child.send(req(1, "echo", [1]), req(2, "echo", [2]))
        assert child.finish() == 0
        assert "Traceback" not in child.stderr
        assert "BrokenPipeError" not in child.stderr
        assert "Exception ignored" not in child.stderr
    finally:
        child.cleanup()
