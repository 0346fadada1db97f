"""The benchmark cases.  Each runs its variants interleaved, round after round.

Every case measures wall time per call (microseconds) for each variant: our
client, the baseline it is compared with (a raw loop on the same pipe or
socket, the official MCP SDK, the single-thread run) and sometimes a floor.
The variants of a case run one after the other inside each round, the order
rotating from round to round, so a noisy neighbour slows all of them alike;
the case reports the median, min and max over the rounds.

A case returns rows (plain dicts, JSON-ready); :mod:`benchmarks.run` adds the
comparisons and prints them.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import http.client
import importlib.util
import io
import itertools
import json
import os
import platform
import select
import statistics
import subprocess
import sys
import threading
import time
import tracemalloc
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Awaitable, Callable, Dict, List, Sequence, Tuple, Union, cast

import requests

from jsonrpc_threads import JsonRpcClient, StdioTransport
from jsonrpc_threads.mcp import McpClient
from jsonrpc_threads.runtime.scheduler import default_scheduler
from jsonrpc_threads.transports.http import HttpTransport

ROOT = Path(__file__).resolve().parent.parent
ECHO_SERVER = Path(__file__).resolve().with_name("echo_server.py")
ECHO_COMMAND = [sys.executable, str(ECHO_SERVER)]
#: The params of every ``echo`` call: a small object, as a typical tool call's.
ECHO_PARAMS: Dict[str, Any] = {"text": "hello", "n": 1}
#: The raw pipelined baseline keeps this many lines in flight.
RAW_WINDOW = 64
#: The bound of one wait of the bounded raw loop and the bounded yardstick (as our WAIT_SLICE_MS).
BOUNDED_WAIT_MS = 1000
#: How long the bounded raw loop waits for one answer before it gives up.
BOUNDED_ANSWER_WAIT_S = 30
THREAD_COUNTS = (1, 4, 16, 64)
SDK_CONCURRENCY = 16
HTTP_THREADS = 16
#: How long a worker's HTTP echo server gets to print its port.
SERVER_START_S = 10.0

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
_loads = json.loads


@dataclass
class Sample:
    """One round of one variant."""

    us_per_call: float
    latencies_us: List[float] = field(default_factory=list)


Variant = Callable[[], Union[Sample, Awaitable[Sample]]]


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    index = min(len(ordered) - 1, max(0, round(q / 100.0 * (len(ordered) - 1))))
    return ordered[index]


def make_row(case: str, sched: str, variant: str, role: str, samples: List[Sample], **extra: Any) -> Dict[str, Any]:
    """A result row: median, min and max of the rounds' microseconds per call."""
    values = [s.us_per_call for s in samples]
    latencies = [x for s in samples for x in s.latencies_us]
    median = statistics.median(values)
    row: Dict[str, Any] = {
        "case": case,
        "sched": sched,
        "variant": variant,
        "role": role,
        "unit": "us/call",
        "median": median,
        "min": min(values),
        "max": max(values),
        "rounds": len(values),
        "samples": values,
        "calls_per_s": 1e6 / median if median > 0 else None,
    }
    if latencies:
        row["p50_us"] = percentile(latencies, 50)
        row["p99_us"] = percentile(latencies, 99)
    row.update(extra)
    return row


async def interleave(variants: Dict[str, Variant], rounds: int, warmup: bool = True) -> Dict[str, List[Sample]]:
    """Run each variant once per round, rotating the order; a warm-up round first."""
    names = list(variants)
    results: Dict[str, List[Sample]] = {name: [] for name in names}

    async def run(name: str) -> Sample:
        outcome = variants[name]()
        if asyncio.iscoroutine(outcome) or isinstance(outcome, asyncio.Future):
            sample: Sample = await outcome
            return sample
        assert isinstance(outcome, Sample)
        return outcome

    if warmup:
        for name in names:
            await run(name)
    for index in range(rounds):
        shift = index % len(names)
        for name in names[shift:] + names[:shift]:
            gc.collect()
            results[name].append(await run(name))
    return results


def run_interleaved(variants: Dict[str, Variant], rounds: int) -> Dict[str, List[Sample]]:
    return asyncio.run(interleave(variants, rounds))


# -- the raw limit: a bare pipe, no futures, no threads --------------------------------


class RawPipe:
    """The echo server on a bare pipe, driven by plain loops (the physical limit)."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(ECHO_COMMAND, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.stdin = self.proc.stdin
        self.stdout = io.BufferedReader(cast(io.FileIO, self.proc.stdout), 256 * 1024)  # bufsize=0: a FileIO
        self.next_id = 1

    def sequential(self, n: int, method: str = "echo", params: Any = ECHO_PARAMS) -> Sample:
        """Write a line, read a line, parse it; n times."""
        write, readline = self.stdin.write, self.stdout.readline
        first = self.next_id
        self.next_id += n
        start = time.perf_counter()
        for request_id in range(first, first + n):
            message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
            write(_dumps(message).encode() + b"\n")  # unbuffered: one write() call, nothing to flush
            answer = _loads(readline())
            if answer["id"] != request_id:
                raise RuntimeError(f"raw loop: got id {answer['id']}, expected {request_id}")
        return Sample((time.perf_counter() - start) / n * 1e6)

    def pipelined(self, n: int, window: int = RAW_WINDOW) -> Sample:
        """Keep ``window`` lines in flight; n in all."""
        write, readline = self.stdin.write, self.stdout.readline
        first = self.next_id
        self.next_id += n
        sent = received = 0
        start = time.perf_counter()
        while received < n:
            while sent < n and sent - received < window:
                message = {"jsonrpc": "2.0", "id": first + sent, "method": "echo", "params": ECHO_PARAMS}
                write(_dumps(message).encode() + b"\n")
                sent += 1
            answer = _loads(readline())
            if answer["id"] != first + received:
                raise RuntimeError("raw pipelined loop: answers out of order")
            received += 1
        return Sample((time.perf_counter() - start) / n * 1e6)

    def close(self) -> None:
        self.stdin.close()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.stdout.close()


class BoundedRawPipe(RawPipe):
    """The raw loop with its wait bounded, as every wait of ours is: the floor of a bounded ``call()``.

    stdout is non-blocking; after each write the loop reads what the pipe
    holds, and only when it holds nothing polls it with a timeout
    (:data:`BOUNDED_WAIT_MS`) before reading again; an answer that has not
    come in :data:`BOUNDED_ANSWER_WAIT_S` raises.  Its own child: the
    blocking ``readline`` of :class:`RawPipe` cannot share a non-blocking pipe.
    """

    def __init__(self) -> None:
        super().__init__()
        self.pipe = self.proc.stdout  # the unbuffered FileIO (bufsize=0)
        assert self.pipe is not None
        try:
            os.set_blocking(self.pipe.fileno(), False)
        except OSError:
            self.close()
            raise
        self.poller = select.poll()
        self.poller.register(self.pipe.fileno(), select.POLLIN)
        self.view = memoryview(bytearray(256 * 1024))  # one kept buffer: a fresh one per read costs page faults

    def sequential(self, n: int, method: str = "echo", params: Any = ECHO_PARAMS) -> Sample:
        """Write a line; read, polling with a timeout only when nothing is there; parse it; n times."""
        write, poll, view = self.stdin.write, self.poller.poll, self.view
        readinto = self.pipe.readinto  # type: ignore[union-attr]
        first = self.next_id
        self.next_id += n
        held = b""
        start = time.perf_counter()
        for request_id in range(first, first + n):
            message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
            write(_dumps(message).encode() + b"\n")
            while b"\n" not in held:
                count = readinto(view)
                if count is None:  # nothing yet: wait for it, bounded
                    waited_ms = 0
                    while not poll(BOUNDED_WAIT_MS):
                        waited_ms += BOUNDED_WAIT_MS
                        if waited_ms >= BOUNDED_ANSWER_WAIT_S * 1000:
                            raise RuntimeError(
                                f"bounded raw loop: no answer to {request_id} in {BOUNDED_ANSWER_WAIT_S} s"
                            )
                elif count:
                    held += view[:count].tobytes()
                else:
                    raise RuntimeError("bounded raw loop: the echo server closed stdout")
            line, _, held = held.partition(b"\n")
            answer = _loads(line)
            if answer["id"] != request_id:
                raise RuntimeError(f"bounded raw loop: got id {answer['id']}, expected {request_id}")
        return Sample((time.perf_counter() - start) / n * 1e6)


# -- helpers for our client ----------------------------------------------------------------


def sequential(call: Callable[[], Any], n: int) -> Sample:
    start = time.perf_counter()
    for _ in range(n):
        call()
    return Sample((time.perf_counter() - start) / n * 1e6)


def pipelined(request: Callable[[], Any], n: int) -> Sample:
    start = time.perf_counter()
    futures = [request() for _ in range(n)]
    for future in futures:
        future.result()
    return Sample((time.perf_counter() - start) / n * 1e6)


def threaded(call: Callable[[], Any], threads: int, total: int) -> Sample:
    """``threads`` threads each calling in a loop (``total`` calls in all); wall time and latencies."""
    per_thread = max(1, total // threads)
    barrier = threading.Barrier(threads + 1)
    latencies: List[List[float]] = [[] for _ in range(threads)]
    errors: List[BaseException] = []

    def worker(out: List[float]) -> None:
        clock = time.perf_counter
        barrier.wait()
        try:
            for _ in range(per_thread):
                begin = clock()
                call()
                out.append((clock() - begin) * 1e6)
        except BaseException as exc:  # reported below
            errors.append(exc)

    pool = [threading.Thread(target=worker, args=(latencies[i],), name=f"bench-caller-{i}") for i in range(threads)]
    for thread in pool:
        thread.start()
    barrier.wait()
    start = time.perf_counter()
    for thread in pool:
        thread.join()
    elapsed = time.perf_counter() - start
    if errors:
        raise errors[0]
    return Sample(elapsed / (per_thread * threads) * 1e6, [x for part in latencies for x in part])


# -- cases 1, 2, 3: stdio ----------------------------------------------------------------


def stdio_cases(sizes: Dict[str, Any], sched: str) -> List[Dict[str, Any]]:
    rounds = sizes["rounds"]
    rows: List[Dict[str, Any]] = []
    with contextlib.ExitStack() as made:  # whatever was made is closed, even when a step fails
        raw = RawPipe()
        made.callback(raw.close)
        bounded = BoundedRawPipe()
        made.callback(bounded.close)
        client = JsonRpcClient(StdioTransport(ECHO_COMMAND))
        made.callback(client.close)
        call, request = client.call, client.request

        # 1. sequential call() vs the raw loop (and the same loop with its wait bounded, the floor)
        n = sizes["seq"]
        results = run_interleaved(
            {
                "raw loop": lambda: raw.sequential(n),
                "bounded raw loop": lambda: bounded.sequential(n),
                "JsonRpcClient.call()": lambda: sequential(lambda: call("echo", ECHO_PARAMS), n),
            },
            rounds,
        )
        case = "1 stdio sequential"
        rows.append(make_row(case, sched, "raw loop (write, readline, parse)", "baseline", results["raw loop"]))
        rows.append(
            make_row(case, sched, "raw loop, wait bounded (read, else poll)", "floor", results["bounded raw loop"])
        )
        rows.append(make_row(case, sched, "JsonRpcClient.call()", "subject", results["JsonRpcClient.call()"]))

        # 2. pipelined request() futures vs a window of 64 lines on the bare pipe
        n = sizes["pipe"]
        results = run_interleaved(
            {
                "raw": lambda: raw.pipelined(n),
                "ours": lambda: pipelined(lambda: request("echo", ECHO_PARAMS), n),
            },
            rounds,
        )
        case = "2 stdio pipelined"
        rows.append(make_row(case, sched, f"raw pipelined (window {RAW_WINDOW})", "baseline", results["raw"]))
        rows.append(make_row(case, sched, f"{n} x request(), then result()", "subject", results["ours"]))

        # 3. 1/4/16/64 caller threads, each calling in a loop
        total = sizes["threads_total"]
        variants: Dict[str, Variant] = {}
        for count in THREAD_COUNTS:
            variants[str(count)] = functools.partial(
                threaded, functools.partial(call, "echo", ECHO_PARAMS), count, total
            )
        results = run_interleaved(variants, rounds)
        case = "3 stdio threads"
        for count in THREAD_COUNTS:
            role = "baseline" if count == 1 else "subject"
            rows.append(
                make_row(case, sched, f"{count} thread{'s' if count > 1 else ''} x call()", role, results[str(count)])
            )
    return rows


# -- case 4: the official MCP Python SDK ---------------------------------------------------


def sdk_cases(sizes: Dict[str, Any], sched: str) -> List[Dict[str, Any]]:
    return asyncio.run(_sdk_cases(sizes, sched))


async def _sdk_cases(sizes: Dict[str, Any], sched: str) -> List[Dict[str, Any]]:
    from mcp import ClientSession, StdioServerParameters, stdio_client  # noqa: PLC0415  (only this case needs it)

    rounds = sizes["rounds"]
    rows: List[Dict[str, Any]] = []
    params = StdioServerParameters(command=ECHO_COMMAND[0], args=ECHO_COMMAND[1:])
    raw = RawPipe()
    ours = McpClient(StdioTransport(ECHO_COMMAND))
    try:
        ours.initialize()
        async with contextlib.AsyncExitStack() as stack:
            read_stream, write_stream = await stack.enter_async_context(stdio_client(params))
            session = await stack.enter_async_context(ClientSession(read_stream, write_stream))
            await session.initialize()

            async def sdk_sequential(n: int) -> Sample:
                start = time.perf_counter()
                for _ in range(n):
                    await session.send_ping()
                return Sample((time.perf_counter() - start) / n * 1e6)

            async def sdk_concurrent(tasks: int, total: int) -> Sample:
                per_task = max(1, total // tasks)
                latencies: List[float] = []
                clock = time.perf_counter

                async def worker() -> None:
                    for _ in range(per_task):
                        begin = clock()
                        await session.send_ping()
                        latencies.append((clock() - begin) * 1e6)

                start = clock()
                await asyncio.gather(*(worker() for _ in range(tasks)))
                return Sample((clock() - start) / (per_task * tasks) * 1e6, latencies)

            n = sizes["sdk_seq"]
            results = await interleave(
                {
                    "raw": lambda: raw.sequential(n, "ping", None),
                    "sdk": lambda: sdk_sequential(n),
                    "ours": lambda: sequential(ours.ping, n),
                },
                rounds,
            )
            case = "4 MCP ping sequential"
            rows.append(make_row(case, sched, "raw loop (floor)", "floor", results["raw"]))
            rows.append(make_row(case, sched, "official SDK ClientSession.send_ping", "baseline", results["sdk"]))
            rows.append(make_row(case, sched, "McpClient.ping()", "subject", results["ours"]))

            total = sizes["sdk_conc"]
            results = await interleave(
                {
                    "sdk": lambda: sdk_concurrent(SDK_CONCURRENCY, total),
                    "ours": lambda: threaded(ours.ping, SDK_CONCURRENCY, total),
                },
                rounds,
            )
            case = f"4 MCP ping x{SDK_CONCURRENCY} concurrent"
            rows.append(
                make_row(case, sched, f"official SDK, {SDK_CONCURRENCY} asyncio tasks", "baseline", results["sdk"])
            )
            rows.append(
                make_row(case, sched, f"McpClient.ping(), {SDK_CONCURRENCY} threads", "subject", results["ours"])
            )
    finally:
        ours.close()
        raw.close()
    return rows


# -- case 9: tool calls from many threads: the registry against the SDK used from threads -------

#: Caller threads of case 9.
TOOL_THREAD_COUNTS = (16, 64)
#: The arguments of every tool call of case 9.
TOOL_ARGUMENTS: Dict[str, Any] = {"text": "hello"}
#: What one call of the SDK from a thread may wait (``future.result(timeout)``).
SDK_CALL_TIMEOUT_S = 30.0


class SdkFromThreads:
    """The official SDK used from threads the way sync wrappers do it today.

    One background thread runs an event loop holding the ``ClientSession``;
    each calling thread submits ``session.call_tool(...)`` to it with
    ``asyncio.run_coroutine_threadsafe`` and blocks on ``.result(timeout)``.
    """

    def __init__(self) -> None:
        from concurrent.futures import FIRST_COMPLETED, Future  # noqa: PLC0415
        from concurrent.futures import wait as futures_wait  # noqa: PLC0415

        from mcp import ClientSession, StdioServerParameters, stdio_client  # noqa: PLC0415  (only this case)

        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="sdk-event-loop", daemon=True)
        self.thread.start()
        ready: Future[Any] = Future()
        self._stop: asyncio.Event = asyncio.Event()  # replaced on the loop: see hold()

        async def hold() -> None:
            self._stop = asyncio.Event()
            params = StdioServerParameters(command=ECHO_COMMAND[0], args=ECHO_COMMAND[1:])
            async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                ready.set_result(session)
                await self._stop.wait()

        self._held = asyncio.run_coroutine_threadsafe(hold(), self.loop)
        futures_wait([ready, self._held], timeout=SERVER_START_S, return_when=FIRST_COMPLETED)
        if not ready.done():
            self.close()
            raise RuntimeError("the SDK's session did not start")
        self.session = ready.result()

    def call(self) -> Any:
        coroutine = self.session.call_tool("echo", TOOL_ARGUMENTS)
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(SDK_CALL_TIMEOUT_S)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self._stop.set)
        try:
            self._held.result(SERVER_START_S)
        except Exception:  # noqa: S110 - a failed start was reported already
            pass
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(SERVER_START_S)
        self.loop.close()


def tool_cases(sizes: Dict[str, Any], sched: str) -> List[Dict[str, Any]]:
    """Case 8: 16 and 64 threads calling a tool through a ToolRegistry, and through the SDK from threads."""
    from jsonrpc_threads.mcp import ToolRegistry  # noqa: PLC0415

    rounds = sizes["rounds"]
    total = sizes["tools_total"]
    rows: List[Dict[str, Any]] = []
    config = {"mcpServers": {"echo": {"command": ECHO_COMMAND[0], "args": ECHO_COMMAND[1:]}}}
    registry = ToolRegistry.from_config(config, default_timeout=SDK_CALL_TIMEOUT_S)
    sdk = SdkFromThreads()
    try:
        registry.start()
        ours = functools.partial(registry.call_tool, "echo", "echo", TOOL_ARGUMENTS)
        if ours()["content"][0]["text"] != "hello" or sdk.call().content[0].text != "hello":
            raise RuntimeError("case 9: a tool call answered something else")
        for count in TOOL_THREAD_COUNTS:
            results = run_interleaved(
                {
                    "sdk": functools.partial(threaded, sdk.call, count, total),
                    "ours": functools.partial(threaded, ours, count, total),
                },
                rounds,
            )
            case = f"9 tool calls, {count} threads"
            label = "official SDK from threads (one event loop, run_coroutine_threadsafe)"
            rows.append(make_row(case, sched, label, "baseline", results["sdk"]))
            rows.append(make_row(case, sched, "ToolRegistry.call_tool()", "subject", results["ours"]))
    finally:
        registry.close()
        sdk.close()
    return rows


# -- case 5: HTTP --------------------------------------------------------------------------


class HttpEchoServer:
    """The echo server in HTTP mode, in its own process."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [*ECHO_COMMAND, "--http", "0"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0
        )
        assert self.proc.stdout is not None
        line = _readline_within(self.proc.stdout, SERVER_START_S)
        if not line.strip().isdigit():
            self.close()
            raise RuntimeError(f"the HTTP echo server did not start: {line!r}")
        self.port = int(line)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def connections(self) -> int:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            conn.request("GET", "/stats")
            return int(json.loads(conn.getresponse().read())["connections"])
        finally:
            conn.close()

    def close(self) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()


def _readline_within(stream: Any, timeout: float) -> bytes:
    box: List[bytes] = []
    reader = threading.Thread(target=lambda: box.append(stream.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    return box[0] if box else b""


HTTP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


def _parse_answer(content_type: str, body: bytes) -> Any:
    if content_type.startswith("text/event-stream"):
        for line in body.splitlines():
            if line.startswith(b"data:"):
                return _loads(line[5:])
        raise RuntimeError("SSE answer without data")
    return _loads(body)


class _Counter:
    def __init__(self) -> None:
        self.value = 0
        self.lock = threading.Lock()

    def next(self) -> int:
        with self.lock:
            self.value += 1
            return self.value


def _requests_caller(url: str, ids: _Counter) -> Callable[[], Any]:
    local = threading.local()

    def call() -> Any:
        session = getattr(local, "session", None)
        if session is None:
            session = local.session = requests.Session()
        request_id = ids.next()
        body = _dumps({"jsonrpc": "2.0", "id": request_id, "method": "echo", "params": ECHO_PARAMS}).encode()
        response = session.post(url, data=body, headers=HTTP_HEADERS)
        answer = _parse_answer(response.headers.get("Content-Type", ""), response.content)
        if answer["id"] != request_id:
            raise RuntimeError("requests loop: wrong id")
        return answer["result"]

    return call


def _http_client_caller(port: int, path: str, ids: _Counter) -> Callable[[], Any]:
    local = threading.local()

    def call() -> Any:
        conn = getattr(local, "conn", None)
        if conn is None:
            conn = local.conn = http.client.HTTPConnection("127.0.0.1", port)
        request_id = ids.next()
        body = _dumps({"jsonrpc": "2.0", "id": request_id, "method": "echo", "params": ECHO_PARAMS}).encode()
        conn.request("POST", path, body, HTTP_HEADERS)
        response = conn.getresponse()
        answer = _parse_answer(response.getheader("Content-Type", ""), response.read())
        if answer["id"] != request_id:
            raise RuntimeError("http.client loop: wrong id")
        return answer["result"]

    return call


def http_cases(sizes: Dict[str, Any], sched: str) -> List[Dict[str, Any]]:
    rounds = sizes["rounds"]
    rows: List[Dict[str, Any]] = []
    server = HttpEchoServer()
    try:
        for answer_kind, path in (("JSON", "/json"), ("SSE", "/sse")):
            client = JsonRpcClient(HttpTransport(server.url(path), max_workers=HTTP_THREADS))
            try:
                ids = _Counter()
                callers: Dict[str, Callable[[], Any]] = {
                    "ours": lambda c=client: c.call("echo", ECHO_PARAMS),  # type: ignore[misc]
                    "requests": _requests_caller(server.url(path), ids),
                    "http.client": _http_client_caller(server.port, path, ids),
                }
                connections: Dict[str, List[int]] = {name: [] for name in callers}

                def counted(record: List[int], body: Callable[[], Sample]) -> Callable[[], Sample]:
                    def run() -> Sample:
                        before = server.connections()
                        sample = body()
                        record.append(server.connections() - before - 1)
                        return sample

                    return run

                for mode, threads, n in (
                    ("sequential", 1, sizes["http_seq"]),
                    ("16 threads", HTTP_THREADS, sizes["http_conc"]),
                ):
                    variants: Dict[str, Variant] = {}
                    for name, caller in callers.items():
                        if threads == 1:
                            body = functools.partial(sequential, caller, n)
                        else:
                            body = functools.partial(threaded, caller, threads, n)
                        variants[name] = counted(connections[name], body)
                    for record in connections.values():
                        record.clear()
                    results = run_interleaved(variants, rounds)
                    case = f"5 HTTP {answer_kind} {mode}"
                    labels = {
                        "requests": ("requests.Session().post loop", "baseline"),
                        "http.client": ("http.client loop (floor)", "floor"),
                        "ours": ("JsonRpcClient(HttpTransport).call()", "subject"),
                    }
                    for name in ("http.client", "requests", "ours"):
                        label, role = labels[name]
                        new = connections[name]
                        rows.append(
                            make_row(
                                case,
                                sched,
                                label,
                                role,
                                results[name],
                                new_connections_per_round=max(new) if new else None,
                            )
                        )
            finally:
                client.close()
    finally:
        server.close()
    return rows


# -- case 6: timers ---------------------------------------------------------------------------


class NullTransport:
    """Accepts every message and answers none: every request stays pending."""

    label = "null"

    def start(self, sink: Any) -> None:
        self.sink = sink

    def send(self, data: bytes, request_ids: Sequence[Any] = (), *, deadline: Any = None, headers: Any = None) -> None:
        pass

    def close(self) -> None:
        pass


def timer_cases(sizes: Dict[str, Any], sched: str) -> List[Dict[str, Any]]:
    n = sizes["timers"]
    timeout = sizes["timer_timeout"]
    case = f"6 timers: {n:,} pending"
    rows: List[Dict[str, Any]] = []

    # Threads used, time to register, and how late the timeouts fire (no tracemalloc: it slows allocation).
    default_scheduler()
    threads_before = {t.ident for t in threading.enumerate()}
    client = JsonRpcClient(NullTransport(), default_timeout=timeout)
    try:
        deadlines = array("d", bytes(8 * n))
        fired = array("d", bytes(8 * n))
        request = client.request
        futures = []
        start = time.perf_counter()
        for index in range(n):
            deadlines[index] = time.monotonic() + timeout
            futures.append(request("echo", ECHO_PARAMS))
        register_s = time.perf_counter() - start
        pending_after = client.stats()["pending"]
        new_threads = sorted(t.name for t in threading.enumerate() if t.ident not in threads_before)
        remaining = deadlines[0] - time.monotonic()
        ran, all_ran = itertools.count(1), threading.Event()

        def record(index: int) -> Callable[[Any], None]:
            def callback(_future: Any) -> None:
                fired[index] = time.monotonic()
                if next(ran) == n:  # atomic: the last callback to run, whichever it is
                    all_ran.set()

            return callback

        for index, future in enumerate(futures):
            future.add_done_callback(record(index))
        last_deadline = deadlines[n - 1]
        futures[-1].exception(timeout + 30.0)
        for future in futures:
            future.exception(30.0)
        all_ran.wait(30.0)  # done-callbacks run on workers, handed over once their batch is settled
        late_ms = [(fired[i] - deadlines[i]) * 1000.0 for i in range(n)]
    finally:
        client.close()
    rows.append(
        {
            "case": case,
            "sched": sched,
            "variant": "time to register (request() with a timeout)",
            "role": "metric",
            "unit": "us/request",
            "median": register_s / n * 1e6,
            "total_s": register_s,
            "pending_at_end": pending_after,
            "first_deadline_margin_s": remaining,
        }
    )
    rows.append(
        {
            "case": case,
            "sched": sched,
            "variant": "threads added while pending",
            "role": "metric",
            "unit": "threads",
            "median": len(new_threads),
            "threads": new_threads,
        }
    )
    rows.append(
        {
            "case": case,
            "sched": sched,
            "variant": "lateness of the last timeout",
            "role": "metric",
            "unit": "ms",
            "median": (fired[n - 1] - last_deadline) * 1000.0,
            "max_late_ms": max(late_ms),
            "p50_late_ms": percentile(late_ms, 50),
            "p99_late_ms": percentile(late_ms, 99),
        }
    )

    # Memory per pending request, with tracemalloc, in a client of its own.
    gc.collect()
    client = JsonRpcClient(NullTransport(), default_timeout=3600.0)
    try:
        request = client.request
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        futures = [request("echo", ECHO_PARAMS) for _ in range(n)]
        gc.collect()
        after = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        # The list holding the futures is the benchmark's, not the client's.
        held = sys.getsizeof(futures)
    finally:
        client.close()
    rows.append(
        {
            "case": case,
            "sched": sched,
            "variant": "memory per pending request (tracemalloc)",
            "role": "metric",
            "unit": "bytes",
            "median": (after - before - held) / n,
        }
    )
    del futures
    return rows


# -- case 7: start-up ------------------------------------------------------------------------

COLD_START = Path(__file__).resolve().with_name("cold_start.py")
BARE_ECHO_SERVER = Path(__file__).resolve().with_name("bare_echo_server.py")
TOOL_SERVER = ROOT / "jsonrpc_threads" / "examples" / "tool_server.py"
#: Seconds one cold start, or one server's first answer, may take.
STARTUP_TIMEOUT_S = 60.0


def _startup_env() -> Dict[str, str]:
    """The environment of every interpreter started here: the package and its dependencies on PYTHONPATH.

    They all run with ``-S`` (no ``site``), as a regular install would behave
    minus ``.pth`` processing: the editable install of a development venv adds
    a meta-path finder to every interpreter's start (about 14 ms), which would
    weigh on the baselines as much as on us and hide our own cost.
    """
    import compileall  # noqa: PLC0415
    import site  # noqa: PLC0415

    # What an installed package has: its bytecode compiled (PYTHONDONTWRITEBYTECODE
    # would otherwise make every start compile the package anew).
    compileall.compile_dir(str(ROOT / "jsonrpc_threads"), quiet=1)
    compileall.compile_dir(str(Path(__file__).resolve().parent), quiet=1)
    paths = [str(ROOT), *site.getsitepackages()]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(paths)
    return env


def _cold_start(variant: str, env: Dict[str, str]) -> Tuple[float, int]:
    start = time.perf_counter()
    completed = subprocess.run(
        [sys.executable, "-S", str(COLD_START), variant],
        env=env,
        capture_output=True,
        timeout=STARTUP_TIMEOUT_S,
        check=False,
    )
    elapsed = time.perf_counter() - start
    if completed.returncode != 0:
        raise RuntimeError(f"cold start ({variant}) failed: {completed.stderr.decode(errors='replace')[-500:]}")
    return elapsed, int(completed.stdout.split()[-1])


def _first_answer(argv: List[str], env: Dict[str, str]) -> float:
    """Seconds from spawning the server to reading its answer to one request; then it is closed."""
    request = _dumps({"jsonrpc": "2.0", "id": 1, "method": "echo", "params": {"text": "hello"}}).encode() + b"\n"
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write(request)
        proc.stdin.flush()
        line = _readline_within(proc.stdout, STARTUP_TIMEOUT_S)
        elapsed = time.perf_counter() - start
        if _loads(line).get("result") != "hello":
            raise RuntimeError(f"{argv}: unexpected answer {line!r}")
    finally:
        proc.stdin.close()
        try:
            proc.wait(STARTUP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.stdout.close()
    return elapsed


def startup_cases(sizes: Dict[str, Any], sched: str) -> List[Dict[str, Any]]:
    """Case 7: a stdio cold start against a bare subprocess round trip; a tool server's first answer."""
    rounds = sizes["rounds"]
    runs = sizes["startup_runs"]
    env = _startup_env()
    rows: List[Dict[str, Any]] = []
    peaks: Dict[str, List[int]] = {"ours": [], "bare": []}

    def cold(variant: str) -> Sample:
        total = 0.0
        for _ in range(runs):
            elapsed, peak_kib = _cold_start(variant, env)
            total += elapsed
            peaks[variant].append(peak_kib)
        return Sample(total / runs * 1e6)

    results = run_interleaved({"bare": lambda: cold("bare"), "ours": lambda: cold("ours")}, rounds)
    case = "7 stdio cold start"
    rows.append(_ms_row(case, sched, "bare subprocess round trip (Popen, 2 lines, wait)", "baseline", results["bare"]))
    rows.append(_ms_row(case, sched, "import, StdioTransport, initialize, call, close", "subject", results["ours"]))
    for variant, label in (("bare", "peak memory, bare subprocess"), ("ours", "peak memory, cold start")):
        rows.append(
            {
                "case": case,
                "sched": sched,
                "variant": label,
                "role": "metric" if variant == "ours" else "info",
                "unit": "MiB",
                "median": statistics.median(peaks[variant]) / 1024.0,
                "max_mib": max(peaks[variant]) / 1024.0,
            }
        )

    def first(argv: List[str]) -> Sample:
        return Sample(sum(_first_answer(argv, env) for _ in range(runs)) / runs * 1e6)

    bare_server = [sys.executable, "-S", str(BARE_ECHO_SERVER)]
    tool_server = [sys.executable, "-S", str(TOOL_SERVER)]
    results = run_interleaved({"bare": lambda: first(bare_server), "ours": lambda: first(tool_server)}, rounds)
    case = "7 tool server first answer"
    rows.append(_ms_row(case, sched, "bare-Python line echo server", "baseline", results["bare"]))
    rows.append(_ms_row(case, sched, "tool server on jsonrpc_threads.server", "subject", results["ours"]))
    return rows


def _ms_row(case: str, sched: str, variant: str, role: str, samples: List[Sample]) -> Dict[str, Any]:
    row = make_row(case, sched, variant, role, samples)
    for key in ("median", "min", "max"):
        row[key] = row[key] / 1000.0
    row["samples"] = [value / 1000.0 for value in row["samples"]]
    row["unit"] = "ms"
    row["calls_per_s"] = None
    return row


# -- case 8: language servers ----------------------------------------------------------------

LSP_DRIVER = Path(__file__).resolve().with_name("lsp_driver.py")
#: multilspy's own virtual environment (``make bench`` makes it): it pins ``requests`` and
#: ``jedi-language-server``, so it never goes into the development venv.
MULTILSPY_VENV = ROOT / "build" / "bench-multilspy"
#: The document and the name the requests ask about: this repository's own code.
LSP_FILE = ROOT / "jsonrpc_threads" / "core" / "shell.py"
LSP_NEEDLE = "Connection("
#: How long multilspy's process gets to say it is ready, or to answer a round.
MULTILSPY_WAIT_S = 120.0


@dataclass
class LspSetup:
    """The server every variant drives, and whether multilspy can drive it too."""

    server: List[str]
    name: str
    multilspy_python: Union[Path, None]


def lsp_setup() -> Union[LspSetup, str]:
    """jedi-language-server from multilspy's venv (the server multilspy drives for Python), else pylsp.

    Returns:
        The setup, or why the case cannot run.
    """
    python = MULTILSPY_VENV / "bin" / "python"
    jedi = MULTILSPY_VENV / "bin" / "jedi-language-server"
    if (MULTILSPY_VENV / ".installed").exists() and python.exists() and jedi.exists():
        return LspSetup([str(jedi)], "jedi-language-server", python)
    if importlib.util.find_spec("pylsp") is not None:
        return LspSetup([sys.executable, "-m", "pylsp"], "pylsp", None)
    return "neither multilspy's venv (make bench) nor python-lsp-server (the test extras) is installed"


def _lsp_position() -> Tuple[int, int]:
    from jsonrpc_threads.lsp import position_from_offset  # noqa: PLC0415

    text = LSP_FILE.read_text(encoding="utf-8")
    return position_from_offset(text, text.index(LSP_NEEDLE))


class MultilspyProcess:
    """multilspy's SyncLanguageServer in its own venv, told over a pipe to make N calls."""

    def __init__(self, setup: LspSetup, position: Tuple[int, int]) -> None:
        from benchmarks.lsp_driver import server_env  # noqa: PLC0415

        assert setup.multilspy_python is not None
        argv = [str(setup.multilspy_python), str(LSP_DRIVER), "multilspy-serve", str(ROOT), str(LSP_FILE)]
        argv += [str(position[0]), str(position[1]), "--", *setup.server]
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=server_env()
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.stdin, self.stdout = self.proc.stdin, self.proc.stdout
        if _readline_within(self.stdout, MULTILSPY_WAIT_S).strip() != b"ready":
            self.close()
            raise RuntimeError("multilspy did not start")

    def run(self, method: str, n: int) -> Sample:
        self.stdin.write(f"{method} {n}\n".encode())
        self.stdin.flush()
        return Sample(float(_readline_within(self.stdout, MULTILSPY_WAIT_S)))

    def close(self) -> None:
        try:
            self.stdin.write(b"quit\n")
            self.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(MULTILSPY_WAIT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.stdout.close()


def _lsp_cold(argv: List[str], env: Dict[str, str]) -> Tuple[float, float]:
    """Seconds from spawn to the first answer, and to the exit (the server shut down and reaped)."""
    spawned = time.time()
    start = time.perf_counter()
    completed = subprocess.run(argv, env=env, capture_output=True, timeout=STARTUP_TIMEOUT_S, check=False)
    elapsed = time.perf_counter() - start
    if completed.returncode != 0:
        raise RuntimeError(f"lsp cold start {argv[3]} failed: {completed.stderr.decode(errors='replace')[-500:]}")
    return float(completed.stdout.split()[-1]) - spawned, elapsed


def _site_packages(python: Path) -> str:
    code = "import site, sys; sys.stdout.write(__import__('os').pathsep.join(site.getsitepackages()))"
    return subprocess.run(
        [str(python), "-c", code], capture_output=True, check=True, timeout=STARTUP_TIMEOUT_S
    ).stdout.decode()


def lsp_cases(sizes: Dict[str, Any], sched: str) -> List[Dict[str, Any]]:
    """Case 8: sequential hover and definition, and a cold start, against multilspy (else the bare floor)."""
    from benchmarks.lsp_driver import CAPABILITIES_VARIABLE, SETTINGS, BareLsp, position_params  # noqa: PLC0415
    from jsonrpc_threads.lsp import LspClient  # noqa: PLC0415

    setup = lsp_setup()
    if isinstance(setup, str):
        return [
            {"case": "8 LSP (skipped)", "sched": sched, "variant": setup, "role": "skipped", "unit": "", "median": None}
        ]
    rounds, n, runs = sizes["rounds"], sizes["lsp_seq"], sizes["lsp_cold_runs"]
    line, character = _lsp_position()
    label = f" ({setup.name})"
    rows: List[Dict[str, Any]] = []
    lsp = LspClient(setup.server, root_uri=ROOT, settings=SETTINGS, default_timeout=MULTILSPY_WAIT_S)
    capabilities = lsp.client_capabilities
    bare = BareLsp(setup.server, str(ROOT), capabilities)
    multilspy = MultilspyProcess(setup, (line, character)) if setup.multilspy_python is not None else None
    try:
        bare.start()
        bare_uri = bare.open(str(LSP_FILE))
        uri = lsp.open(LSP_FILE)
        for method in ("hover", "definition"):
            params = position_params(bare_uri, line, character)
            helper = getattr(lsp, method)
            variants: Dict[str, Variant] = {
                "bare": functools.partial(
                    lambda m, p: Sample(bare.sequential(m, p, n)), f"textDocument/{method}", params
                ),
                "ours": functools.partial(lambda h: sequential(lambda: h(uri, line, character), n), helper),
            }
            if multilspy is not None:
                variants["multilspy"] = functools.partial(multilspy.run, method, n)
            results = run_interleaved(variants, rounds)
            case = f"8 LSP {method} sequential"
            bare_role = "floor" if multilspy is not None else "baseline"
            rows.append(make_row(case, sched, f"bare Content-Length loop{label}", bare_role, results["bare"]))
            if multilspy is not None:
                rows.append(
                    make_row(
                        case, sched, f"multilspy SyncLanguageServer.request_{method}", "baseline", results["multilspy"]
                    )
                )
            rows.append(make_row(case, sched, f"LspClient.{method}()", "subject", results["ours"]))
    finally:
        lsp.close()
        bare.close()
        if multilspy is not None:
            multilspy.close()

    env = {**_startup_env(), CAPABILITIES_VARIABLE: json.dumps(capabilities)}
    tail = [str(ROOT), str(LSP_FILE), str(line), str(character), "--", *setup.server]
    commands = {
        "bare": [sys.executable, "-S", str(LSP_DRIVER), "bare-cold", *tail],
        "ours": [sys.executable, "-S", str(LSP_DRIVER), "ours-cold", *tail],
    }
    envs = {"bare": env, "ours": env}
    if setup.multilspy_python is not None:
        commands["multilspy"] = [str(setup.multilspy_python), "-S", str(LSP_DRIVER), "multilspy-cold", *tail]
        envs["multilspy"] = {**env, "PYTHONPATH": _site_packages(setup.multilspy_python)}

    firsts: Dict[str, List[Sample]] = {variant: [] for variant in commands}

    def cold(variant: str) -> Sample:
        timings = [_lsp_cold(commands[variant], envs[variant]) for _ in range(runs)]
        firsts[variant].append(Sample(sum(first for first, _ in timings) / runs * 1e6))
        return Sample(sum(whole for _, whole in timings) / runs * 1e6)

    results = run_interleaved({variant: functools.partial(cold, variant) for variant in commands}, rounds)
    bare_role = "floor" if "multilspy" in commands else "baseline"
    for case, measured, what in (
        ("8 LSP cold start, first answer", firsts, "spawn, initialize, open, first hover answered"),
        ("8 LSP cold start, close included", results, "the same, then shutdown, exit and the server reaped"),
    ):
        samples = {variant: values[-len(results[variant]) :] for variant, values in measured.items()}  # no warm-up
        rows.append(_ms_row(case, sched, f"bare Content-Length loop: {what}{label}", bare_role, samples["bare"]))
        if "multilspy" in commands:
            rows.append(_ms_row(case, sched, f"multilspy SyncLanguageServer: {what}", "baseline", samples["multilspy"]))
        rows.append(_ms_row(case, sched, f"LspClient: {what}", "subject", samples["ours"]))
    return rows


def _acp_cases(sizes: Dict[str, Any], sched: str) -> List[Dict[str, Any]]:
    """Case 10 (benchmarks/acp_case.py, which imports this module)."""
    from benchmarks.acp_case import acp_cases  # noqa: PLC0415

    return acp_cases(sizes, sched)


def _a2a_cases(sizes: Dict[str, Any], sched: str) -> List[Dict[str, Any]]:
    """Case 11 (benchmarks/a2a_case.py, which imports this module)."""
    from benchmarks.a2a_case import a2a_cases  # noqa: PLC0415

    return a2a_cases(sizes, sched)


def _server_cases(sizes: Dict[str, Any], sched: str) -> List[Dict[str, Any]]:
    """Case 12 (benchmarks/server_case.py, which imports this module)."""
    from benchmarks.server_case import server_cases  # noqa: PLC0415

    return server_cases(sizes, sched)


GROUPS: Dict[str, Callable[[Dict[str, Any], str], List[Dict[str, Any]]]] = {
    "stdio": stdio_cases,
    "sdk": sdk_cases,
    "http": http_cases,
    "timers": timer_cases,
    "startup": startup_cases,
    "lsp": lsp_cases,
    "tools": tool_cases,
    "acp": _acp_cases,
    "a2a": _a2a_cases,
    "server": _server_cases,
}


def describe_machine() -> Dict[str, Any]:
    model = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    has_orjson = importlib.util.find_spec("orjson") is not None
    return {
        "nproc": os.cpu_count(),
        "cpu_model": model or platform.processor() or "unknown",
        "python": platform.python_version(),
        "platform": platform.platform(),
        "orjson": has_orjson,
    }


__all__ = ["GROUPS", "Sample", "describe_machine", "make_row", "percentile"]
