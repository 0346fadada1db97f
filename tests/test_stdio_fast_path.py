"""The stdio fast path (transports/stdio/_fast_path.py) against the plain design it is measured against."""

from __future__ import annotations

import threading
from typing import Any, Iterator, List

import pytest

from jsonrpc_threads import JsonRpcClient, StdioTransport, TransportClosed
from jsonrpc_threads.observe import trace_wire
from jsonrpc_threads.transports.stdio._fast_path import CallerReads
from jsonrpc_threads.transports.stdio._reader import ReadGate

from .conftest import peer_command
from .forking import run_script

WAIT_S = 10.0


@pytest.fixture
def plain() -> Iterator[JsonRpcClient]:
    """A client whose transport reads the plain way: the reader thread alone, no fast path."""
    transport = StdioTransport(peer_command("stdio_peer"))
    transport._child.reader.gate = ReadGate()  # before start(): nothing reads yet
    with JsonRpcClient(transport) as client:
        yield client


def test_the_plain_design_does_everything_the_fast_path_does(plain: JsonRpcClient) -> None:
    gate = plain.transport._child.reader.gate  # type: ignore[attr-defined]
    assert gate.drive(lambda: None, lambda: True, None) is False  # it declines: the reader thread reads
    seen: List[Any] = []
    plain.on_notification("progress", seen.append)
    assert plain.call("notify", {"method": "progress", "params": {"n": 1}, "count": 50}) == 50
    assert len(seen) == 50
    futures = [plain.request("echo", [i]) for i in range(500)]
    assert [f.result(WAIT_S) for f in futures] == [[i] for i in range(500)]
    answers: List[Any] = []
    threads = [threading.Thread(target=lambda n=n: answers.append(plain.call("echo", [n]))) for n in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT_S)
    assert sorted(answers) == [[n] for n in range(16)]
    with pytest.raises(TransportClosed) as info:
        plain.call("exit", {"code": 3})
    assert info.value.returncode == 3


def test_the_transport_reads_through_the_fast_path_by_default() -> None:
    with StdioTransport(peer_command("stdio_peer")) as transport:
        assert isinstance(transport._child.reader.gate, CallerReads)


_SIXTEEN_CALLERS_ON_ONE_CPU_SCRIPT = r"""
from jsonrpc_threads import JsonRpcClient, StdioTransport
from jsonrpc_threads.transports.stdio import _fast_path

os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # before any thread: all of them, and the child
# A peer that answers every request it read in one write: answers come in chunks.
ECHO = [sys.executable, "-c", (
    "import json, os\n"
    "rest = b''\n"
    "while True:\n"
    "    data = os.read(0, 65536)\n"
    "    if not data:\n"
    "        break\n"
    "    *lines, rest = (rest + data).split(b'\\n')\n"
    "    answers = [json.dumps({'jsonrpc': '2.0', 'id': m['id'], 'result': m['params']}) + '\\n'\n"
    "               for m in map(json.loads, lines)]\n"
    "    os.write(1, ''.join(answers).encode())\n"
)]
yields = []
real_yield = _fast_path._yield_cpu
def counting_yield():
    yields.append(1)
    real_yield()
_fast_path._yield_cpu = counting_yield

CALLERS, CALLS = 16, 40
answers = []
with JsonRpcClient(StdioTransport(ECHO)) as client:
    def caller(n):
        answers.extend(client.call("echo", [n, i], timeout=30) for i in range(CALLS))
    threads = [threading.Thread(target=caller, args=(n,)) for n in range(CALLERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
assert sorted(map(tuple, answers)) == [(n, i) for n in range(CALLERS) for i in range(CALLS)]
print("answers", len(answers), "yields", len(yields))
"""


def test_sixteen_callers_on_one_cpu_get_their_answers_with_a_yield_per_chunk_not_per_answer() -> None:
    lines = run_script("", _SIXTEEN_CALLERS_ON_ONE_CPU_SCRIPT, timeout=120)
    _, answers, _, yields = lines[0].split()
    # Answers read together are delivered with one yield at the chunk's end, not one each.
    assert int(answers) == 640 and 0 < int(yields) < int(answers) / 2, lines


def test_a_call_the_transport_declines_to_drive_is_traced_once() -> None:
    transport = StdioTransport(peer_command("stdio_peer"))
    transport._child.reader.gate = ReadGate()  # it declines every drive: the request goes out as send() does
    seen: List[str] = []
    done = threading.Event()

    def trace(message: Any) -> None:
        seen.append(message.direction)
        if len(seen) == 2:
            done.set()

    client = JsonRpcClient(transport)
    try:
        trace_wire(client, trace)
        assert client.call("echo", [1]) == [1]
        assert done.wait(WAIT_S)
    finally:
        client.close()
    assert seen == ["out", "in"]
