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
