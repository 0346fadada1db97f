"""The stdio fast path (``reads="caller"``, ``_fast_path.py``) and the plain design (``reads="reader_thread"``)."""

from __future__ import annotations

import threading
from typing import Any, Iterator, List

import pytest

from jsonrpc_threads import JsonRpcClient, StdioTransport, TransportClosed
from jsonrpc_threads.observe import trace_wire

from .conftest import peer_command
from .forking import run_script

WAIT_S = 10.0


@pytest.fixture
def plain() -> Iterator[JsonRpcClient]:
    """A client whose transport reads the plain way: the reader thread alone, no fast path."""
    transport = StdioTransport(peer_command("stdio_peer"), reads="reader_thread")
    with JsonRpcClient(transport) as client:
        yield client


def test_the_plain_design_does_everything_the_fast_path_does(plain: JsonRpcClient) -> None:
    assert plain.transport.reads == "reader_thread"  # type: ignore[attr-defined]
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
        assert transport.reads == "caller"


def test_an_unknown_reads_is_refused_before_anything_starts() -> None:
    with pytest.raises(ValueError, match=r"reads must be one of .*'reader_thread'"):
        StdioTransport(peer_command("stdio_peer"), reads="callers")


@pytest.mark.parametrize("reads", ["caller", "reader_thread"])
def test_only_the_fast_path_reads_on_the_callers_thread(reads: str) -> None:
    # What tells the strategies apart from outside: the thread that reads the answer.  Under
    # "caller" a lone call() reads its own; under "reader_thread" the reader thread reads it.
    readers: List[str] = []

    class Observer:  # what the client calls where a message comes in (attach_observer)
        def sent(self, data: bytes) -> None:
            pass

        def received(self, data: bytes) -> None:
            readers.append(threading.current_thread().name)

        def closed(self, error: BaseException) -> None:
            pass

    transport = StdioTransport(peer_command("stdio_peer"), reads=reads)
    with JsonRpcClient(transport) as client:
        client.attach_observer(lambda label: Observer())
        for index in range(20):
            assert client.call("echo", [index]) == [index]
    mine = threading.current_thread().name
    if reads == "caller":
        assert readers.count(mine) > len(readers) // 2, readers  # the reader thread may take a few (it parks 5 ms)
    else:
        assert mine not in readers and all(name.startswith("jsonrpc-stdio-reader") for name in readers), readers


def test_a_call_the_transport_declines_to_drive_is_traced_once() -> None:
    transport = StdioTransport(peer_command("stdio_peer"), reads="reader_thread")  # as send() does
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


# The hold and the yield (issue 46's guard kept them: without them the thread rows lost 22-54%).
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
