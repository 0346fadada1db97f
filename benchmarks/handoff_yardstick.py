"""The hand-offs of sixteen callers on one CPU, alone: a yardstick for case 3 pinned.

Usage: ``python -m benchmarks.handoff_yardstick [ROUNDS]`` (default 7).

A client of a few dozen lines makes the hand-offs that ``JsonRpcClient`` makes
for sixteen threads on one CPU, and nothing else: one reader thread reads the
echo server's answers and wakes each caller through a pipe of the caller's
own; while it delivers a chunk, the callers it woke queue their next requests,
which it writes in one ``write()`` after one ``sched_yield()``.  No deadlines,
no pending map beyond a dict, no pool of wake pipes, no ordered delivery, no
safety against interrupts or a dead child: only what the kernel and the
interpreter cost.  Its sixteen threads and ``JsonRpcClient`` at one and sixteen
threads run interleaved in this process, pinned to one CPU; the medians and the
ratios of our one thread to each sixteen-thread row are printed.  The
difference between the yardstick's and our sixteen-thread rows is the Python
of our call path; see "What holds back the targets still missed" in
``benchmarks/README.md``.

Two more rows change one thing each:

- the yardstick with its wait bounded (``poll()`` with a timeout before the
  read, as every wait of ours is bounded): what the bound alone costs;
- our one thread with every answer handed over by the reader thread (its
  transport wrapped so that it offers no ``drive_call``): the one-thread row as
  it was before a caller read its own answer.  Against it, the sixteen-thread
  ratio is what the same sixteen threads would score had the one thread not
  become faster.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import statistics
import subprocess
import sys
import threading
import time
from json import encoder as json_encoder
from typing import Any, Callable, Dict, List, Optional, Sequence

from benchmarks.cases import BOUNDED_WAIT_MS, ECHO_COMMAND, ECHO_PARAMS
from jsonrpc_threads import JsonRpcClient, StdioTransport

THREADS = 16
CALLS_PER_ROUND = 16_000
#: How long closing the yardstick's child may take.
CLOSE_WAIT_S = 10.0

_encode = json_encoder.c_make_encoder(  # type: ignore[attr-defined]
    None, None, json_encoder.encode_basestring, None, ":", ",", False, False, False
)
_scan = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


class Yardstick:
    """The hand-offs alone (see the module docstring).  ``call()`` may be used from many threads.

    ``bounded``: each caller polls its pipe with a timeout before reading it,
    instead of a blocking read alone.
    """

    def __init__(self, bounded: bool = False) -> None:
        self._bounded = bounded
        self._child = subprocess.Popen(ECHO_COMMAND, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
        assert self._child.stdin is not None and self._child.stdout is not None
        self._stdin = self._child.stdin.fileno()
        self._stdout = self._child.stdout.fileno()
        self._lock = threading.Lock()
        self._held: List[bytes] = []  # requests queued while the reader delivers a chunk
        self._holding = False
        self._waiters: Dict[int, Any] = {}
        self._ids = iter(range(1, 1 << 62))
        self._local = threading.local()
        self._pipes: List[int] = []  # descriptors
        self._reader = threading.Thread(target=self._read, name="yardstick-reader", daemon=True)
        self._reader.start()

    def call(self, method: str, params: Any) -> Any:
        request_id = next(self._ids)
        head = f'{{"jsonrpc":"2.0","id":{request_id},"method":"{method}","params":'
        data = (head + "".join(_encode(params, 0)) + "}\n").encode()
        mine = getattr(self._local, "mine", None)
        if mine is None:
            sleeper, waker = os.pipe()
            poller = select.poll()
            poller.register(sleeper, select.POLLIN)
            mine = self._local.mine = [waker, sleeper, None, poller]  # [waker, sleeper, answer, poller]
            self._pipes += (waker, sleeper)
        with self._lock:
            self._waiters[request_id] = mine
            if self._holding:
                self._held.append(data)
                data = b""
        if data:
            os.write(self._stdin, data)
        if self._bounded:
            while not mine[3].poll(BOUNDED_WAIT_MS):
                pass
        os.read(mine[1], 1)
        return mine[2]["result"]

    def _read(self) -> None:
        rest = b""
        while True:
            data = os.read(self._stdout, 1 << 18)
            if not data:
                return
            *lines, rest = (rest + data).split(b"\n")
            with self._lock:
                self._holding = True
            for line in lines:
                message, _ = _scan(line.decode(), 0)
                with self._lock:
                    mine = self._waiters.pop(message["id"])
                mine[2] = message
                os.write(mine[0], b"\x01")
            os.sched_yield()
            with self._lock:
                self._holding = False
                out, self._held = b"".join(self._held), []
            if out:
                os.write(self._stdin, out)

    def close(self) -> None:
        assert self._child.stdin is not None and self._child.stdout is not None
        self._child.stdin.close()
        self._child.wait(CLOSE_WAIT_S)
        self._reader.join(CLOSE_WAIT_S)
        self._child.stdout.close()
        for fd in self._pipes:
            os.close(fd)


class HandedOver:
    """A transport with everything but ``drive_call``: the reader thread hands every answer over."""

    def __init__(self, transport: StdioTransport) -> None:
        self._transport = transport
        self.label = transport.label

    def start(self, sink: Any) -> None:
        self._transport.start(sink)

    def send(
        self,
        data: bytes,
        request_ids: Sequence[Any] = (),
        *,
        deadline: Optional[float] = None,
        headers: Any = None,
    ) -> None:
        self._transport.send(data, request_ids, deadline=deadline, headers=headers)

    def close(self) -> None:
        self._transport.close()


def threaded(call: Callable[[str, Any], Any], threads: int, total: int) -> float:
    """``threads`` threads calling ``echo`` in a loop, ``total`` calls in all: us a call."""

    def work(count: int) -> None:
        for _ in range(count):
            call("echo", ECHO_PARAMS)

    pool = [threading.Thread(target=work, args=(total // threads,)) for _ in range(threads)]
    start = time.perf_counter()
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    return (time.perf_counter() - start) / total * 1e6


def main(rounds: int) -> None:
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # before any thread: all of them, and the children
    with contextlib.ExitStack() as made:  # whatever was made is closed, whatever fails
        yardstick = Yardstick()
        made.callback(yardstick.close)
        bounded = Yardstick(bounded=True)
        made.callback(bounded.close)
        client = JsonRpcClient(StdioTransport(ECHO_COMMAND))
        made.callback(client.close)
        handed_over = JsonRpcClient(HandedOver(StdioTransport(ECHO_COMMAND)))
        made.callback(handed_over.close)
        variants: Dict[str, Callable[[], float]] = {
            "yardstick, 16 threads": lambda: threaded(yardstick.call, THREADS, CALLS_PER_ROUND),
            "yardstick bounded, 16": lambda: threaded(bounded.call, THREADS, CALLS_PER_ROUND),
            "ours, 16 threads": lambda: threaded(client.call, THREADS, CALLS_PER_ROUND),
            "ours, 1 thread": lambda: threaded(client.call, 1, CALLS_PER_ROUND // 2),
            "ours, 1 thread handed": lambda: threaded(handed_over.call, 1, CALLS_PER_ROUND // 2),
        }
        for run in variants.values():  # warm up
            run()
        times: Dict[str, List[float]] = {name: [] for name in variants}
        for _ in range(rounds):
            for name, run in variants.items():
                times[name].append(run())
    median = {name: statistics.median(values) for name, values in times.items()}
    for name, value in median.items():
        print(f"{name:24s} {value:6.1f} us a call")
    one = median["ours, 1 thread"]
    print(f"ours 1 thread / yardstick 16 threads: {one / median['yardstick, 16 threads']:.2f}x")
    print(f"ours 1 thread / yardstick bounded 16: {one / median['yardstick bounded, 16']:.2f}x")
    print(f"ours 1 thread / ours 16 threads:      {one / median['ours, 16 threads']:.2f}x")
    handed = median["ours, 1 thread handed"]
    print(f"ours 1 thread handed / ours 16:       {handed / median['ours, 16 threads']:.2f}x")
    print(f"the bound, a call: {median['yardstick bounded, 16'] - median['yardstick, 16 threads']:+.1f} us")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 7)
