"""The stdio writer (StdinWriter), on a real pipe: in order, whole, failures reported; its hold (release_hold)."""

from __future__ import annotations

import os
import select
import threading
import time
from typing import Iterator, List, Sequence, Tuple

import pytest

from jsonrpc_threads.errors import JsonRpcError, RequestId, TransportClosed
from jsonrpc_threads.transports.stdio._writer import ATOMIC_WRITE_BYTES, StdinWriter

WAIT_S = 10.0


class Pipe:
    """A pipe whose write end a StdinWriter writes; the test reads the other end."""

    def __init__(self) -> None:
        read_fd, write_fd = os.pipe()
        self.read_fd = read_fd
        self.failed: List[Tuple[List[RequestId], JsonRpcError]] = []
        self.writer = StdinWriter(
            open(write_fd, "wb", buffering=0),  # noqa: SIM115 - the writer closes it
            "test",
            0,
            self.fail_requests,
            TransportClosed,
            TransportClosed,
            lambda reason: None,
        )

    def fail_requests(self, request_ids: Sequence[RequestId], error: JsonRpcError) -> None:
        self.failed.append((list(request_ids), error))

    def read_now(self) -> bytes:
        """What the pipe holds now (one read), or b"" when it is empty."""
        if not select.select([self.read_fd], [], [], 0)[0]:
            return b""
        return os.read(self.read_fd, 1 << 20)

    def read_exactly(self, size: int) -> bytes:
        data = b""
        deadline = time.monotonic() + WAIT_S
        while len(data) < size and time.monotonic() < deadline:
            if select.select([self.read_fd], [], [], 0.1)[0]:
                data += os.read(self.read_fd, size - len(data))
        return data

    def close(self) -> None:
        self.writer.close_stdin(1.0)
        self.writer.join(WAIT_S)
        if self.read_fd >= 0:
            os.close(self.read_fd)


@pytest.fixture
def pipe() -> Iterator[Pipe]:
    p = Pipe()
    try:
        yield p
    finally:
        p.close()


def test_frames_written_during_a_hold_go_out_together_when_it_ends(pipe: Pipe) -> None:
    assert pipe.writer.hold()
    frames = [b'{"id":%d}\n' % i for i in range(3)]
    for index, frame in enumerate(frames):
        pipe.writer.write(frame, (index,), None)
    assert pipe.read_now() == b""  # queued while held
    assert not pipe.writer.hold()  # one hold at a time
    pipe.writer.release_hold()
    assert pipe.read_now() == b"".join(frames)  # one write
    pipe.writer.write(b"after\n", (), None)  # written directly again
    assert pipe.read_now() == b"after\n"
    assert not pipe.failed


def test_an_empty_hold_ends_without_a_write(pipe: Pipe) -> None:
    assert pipe.writer.hold()
    pipe.writer.release_hold()
    pipe.writer.release_hold()  # once more: nothing held, nothing done
    assert pipe.read_now() == b""
    assert pipe.writer.hold()
    pipe.writer.release_hold()


def test_more_than_pipe_buf_held_goes_to_the_writer_thread_in_order(pipe: Pipe) -> None:
    assert pipe.writer.hold()
    frames = [(b"%05d" % i) * 40 + b"\n" for i in range(2 * ATOMIC_WRITE_BYTES // 200 + 4)]
    for index, frame in enumerate(frames):
        pipe.writer.write(frame, (index,), None)
    pipe.writer.release_hold()
    expected = b"".join(frames)
    assert pipe.read_exactly(len(expected)) == expected
    assert pipe.writer.thread is not None


def test_a_failed_write_at_the_end_of_a_hold_fails_the_requests_it_carried(pipe: Pipe) -> None:
    assert pipe.writer.hold()
    pipe.writer.write(b"one\n", (1,), None)
    pipe.writer.write(b"two\n", (2, 3), None)
    os.close(pipe.read_fd)  # the child is gone: the write breaks the pipe
    pipe.read_fd = -1
    pipe.writer.release_hold()  # never raises
    assert [ids for ids, _ in pipe.failed] == [[1, 2, 3]]
    assert isinstance(pipe.failed[0][1], TransportClosed)
    with pytest.raises(TransportClosed):
        pipe.writer.write(b"later\n", (4,), None)


def test_close_from_the_thread_holding_the_writing_does_not_wait_for_itself(pipe: Pipe) -> None:
    assert pipe.writer.hold()
    pipe.writer.write(b"last words\n", (), None)
    start = time.monotonic()
    assert pipe.writer.close_stdin(1.0)  # the writer thread takes over the queue, then stdin is closed
    assert time.monotonic() - start < 0.5
    pipe.writer.release_hold()  # the hold is over already
    assert pipe.read_exactly(len(b"last words\n")) == b"last words\n"


def test_writes_from_other_threads_while_held_are_queued_then_written_in_order(pipe: Pipe) -> None:
    assert pipe.writer.hold()
    written = threading.Event()

    def others() -> None:
        for index in range(5):
            pipe.writer.write(b"%d\n" % index, (index,), None)
        written.set()

    thread = threading.Thread(target=others)
    thread.start()
    assert written.wait(WAIT_S)  # none of them waited for the hold
    thread.join(WAIT_S)
    assert pipe.read_now() == b""
    pipe.writer.release_hold()
    assert pipe.read_now() == b"0\n1\n2\n3\n4\n"


def test_a_small_frame_is_written_at_once_by_its_caller(pipe: Pipe) -> None:
    frames = [b'{"id":%d}\n' % i for i in range(3)]
    for index, frame in enumerate(frames):
        pipe.writer.write(frame, (index,), None)
    assert pipe.read_now() == b"".join(frames)
    assert pipe.writer.thread is None  # nothing was queued
    assert not pipe.failed


def test_frames_over_pipe_buf_go_to_the_writer_thread_in_order(pipe: Pipe) -> None:
    frames = [(b"%05d" % i) * 40 + b"\n" for i in range(2 * ATOMIC_WRITE_BYTES // 200 + 4)]
    big = b"".join(frames)
    pipe.writer.write(big, (1,), None)
    pipe.writer.write(b"after\n", (2,), None)  # queued behind it
    expected = big + b"after\n"
    assert pipe.read_exactly(len(expected)) == expected
    assert pipe.writer.thread is not None


def test_a_failed_write_fails_its_request_and_every_later_write(pipe: Pipe) -> None:
    os.close(pipe.read_fd)  # the child is gone: the write breaks the pipe
    pipe.read_fd = -1
    with pytest.raises(TransportClosed):
        pipe.writer.write(b"one\n", (1,), None)
    with pytest.raises(TransportClosed):
        pipe.writer.write(b"later\n", (4,), None)


def test_writes_from_many_threads_each_arrive_whole(pipe: Pipe) -> None:
    def others(n: int) -> None:
        for index in range(5):
            pipe.writer.write(b"%d-%d\n" % (n, index), (n * 10 + index,), None)

    threads = [threading.Thread(target=others, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT_S)
    lines = pipe.read_exactly(sum(len(b"%d-%d\n" % (n, i)) for n in range(4) for i in range(5))).split(b"\n")[:-1]
    assert sorted(lines) == sorted(b"%d-%d" % (n, i) for n in range(4) for i in range(5))
    for n in range(4):  # each thread's frames in its order
        assert [line for line in lines if line.startswith(b"%d-" % n)] == [b"%d-%d" % (n, i) for i in range(5)]


def test_close_stdin_lets_the_queue_drain_first(pipe: Pipe) -> None:
    big = b"x" * (2 * ATOMIC_WRITE_BYTES) + b"\n"
    pipe.writer.write(big, (), None)
    pipe.writer.write(b"last words\n", (), None)
    reader = threading.Thread(target=lambda: got.append(pipe.read_exactly(len(big) + len(b"last words\n"))))
    got: List[bytes] = []
    reader.start()
    assert pipe.writer.close_stdin(WAIT_S)
    reader.join(WAIT_S)
    assert got == [big + b"last words\n"]
