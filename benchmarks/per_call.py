"""What one call costs, in checkouts side by side: wall and CPU time per call from many threads.

Usage::

    python -m benchmarks.per_call --checkouts ../base,. --what tools,ping,http,sse
    python -m benchmarks.per_call --checkouts ../base,. --what tools --threads 16 --calls 8000 --rounds 5

``benchmarks.ab`` compares each case's ratio to its own baseline (the SDK,
``requests``, the raw loop); where that baseline is another library in the
same process, a change of ours moves the ratio less than it moves our own
cost, and the baseline's noise comes with it.  This script measures only us:
each measurement is a fresh process whose working directory is one checkout
(its package, its ``benchmarks.cases`` for the echo server), ``--threads``
threads making ``--calls`` calls in all, three times; it prints the median
wall time and the median CPU time of the whole process per call
(``time.process_time``: every thread of ours, not the server's).  The
checkouts, the cases and the scheduling (``os``: as the system places the
threads; ``pinned``: this process and its server on one CPU) run in a random
order in each round, so that all of them see the same machine.

What it measures, per ``--what``:

- ``tools``: ``ToolRegistry.call_tool`` on the echo server's ``echo`` tool;
- ``ping``: ``McpClient.ping``;
- ``call``: ``JsonRpcClient.call`` over stdio (the core alone);
- ``http``, ``sse``: ``JsonRpcClient.call`` over ``HttpTransport`` to the echo
  server's JSON and SSE endpoints.

The figures of the guard's second look (``benchmarks/README.md``) come from it.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Tuple

#: The cases one measurement can be of.
WHAT = ("tools", "ping", "call", "http", "sse")
#: Longest one measurement (a fresh process) may take.
MEASURE_TIMEOUT_S = 600.0
#: How long a caller thread may wait at the starting line.
START_TIMEOUT_S = 60.0


def threaded(call: Callable[[], Any], threads: int, total: int) -> Tuple[float, float]:
    """``threads`` threads calling in a loop, ``total`` calls in all: (wall, process CPU) microseconds per call."""
    per_thread = max(1, total // threads)
    barrier = threading.Barrier(threads + 1)
    errors: List[BaseException] = []

    def worker() -> None:
        barrier.wait(START_TIMEOUT_S)
        try:
            for _ in range(per_thread):
                call()
        except BaseException as exc:  # reported below
            errors.append(exc)

    pool = [threading.Thread(target=worker, name=f"per-call-{n}") for n in range(threads)]
    for thread in pool:
        thread.start()
    barrier.wait(START_TIMEOUT_S)
    cpu, wall = time.process_time(), time.perf_counter()
    for thread in pool:
        thread.join()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    if errors:
        raise errors[0]
    calls = per_thread * threads
    return wall / calls * 1e6, cpu / calls * 1e6


def measure(what: str, threads: int, calls: int) -> List[Tuple[float, float]]:
    """In this process (working directory: a checkout): three measurements of ``what``."""
    sys.path.insert(0, os.getcwd())  # the checkout's package and benchmarks, not this file's
    from benchmarks.cases import ECHO_COMMAND, HttpEchoServer  # noqa: PLC0415
    from jsonrpc_threads import JsonRpcClient  # noqa: PLC0415
    from jsonrpc_threads.transports.stdio import StdioTransport  # noqa: PLC0415

    closers: List[Callable[[], Any]] = []
    call: Callable[[], Any]
    if what == "tools":
        from jsonrpc_threads.mcp import ToolRegistry  # noqa: PLC0415

        config = {"mcpServers": {"echo": {"command": ECHO_COMMAND[0], "args": ECHO_COMMAND[1:]}}}
        registry = ToolRegistry.from_config(config, default_timeout=30.0)
        closers.append(registry.close)
        registry.start()

        def call() -> Any:
            return registry.call_tool("echo", "echo", {"text": "hello"})

    elif what == "ping":
        from jsonrpc_threads.mcp import McpClient  # noqa: PLC0415

        session = McpClient(StdioTransport(ECHO_COMMAND))
        closers.append(session.close)

        def call() -> Any:
            return session.ping(timeout=30.0)

    else:
        if what == "call":
            client = JsonRpcClient(StdioTransport(ECHO_COMMAND))
        else:
            from jsonrpc_threads.transports.http import HttpTransport  # noqa: PLC0415

            server = HttpEchoServer()
            closers.append(server.close)
            client = JsonRpcClient(HttpTransport(server.url("/json" if what == "http" else "/sse"), max_workers=16))
        closers.insert(0, client.close)

        def call() -> Any:
            return client.call("echo", {"text": "hello"}, timeout=30.0)

    try:
        call()
        threaded(call, threads, calls // 4)  # warm
        return [threaded(call, threads, calls) for _ in range(3)]
    finally:
        for close in closers:
            close()


def drive(checkouts: List[Path], whats: List[str], threads: int, calls: int, rounds: int, pin: bool) -> str:
    """Every (checkout, case, scheduling) once per round, in a random order; the table of medians."""
    scheds = ["os", "pinned"] if pin else ["os"]
    found: Dict[Tuple[str, str, str], List[Tuple[float, float]]] = {}
    cpu = min(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    for number in range(rounds):
        order = [(c, w, s) for c in checkouts for w in whats for s in scheds]
        random.shuffle(order)
        for checkout, what, sched in order:
            sys.stderr.write(f"[per_call] round {number + 1}/{rounds}: {checkout} {what} {sched}\n")
            command = [sys.executable, str(Path(__file__).resolve()), "--measure", what]
            command += ["--threads", str(threads), "--calls", str(calls)]
            if sched == "pinned" and cpu is not None:
                command += ["--pin", str(cpu)]
            proc = subprocess.run(
                command, cwd=str(checkout), capture_output=True, text=True, timeout=MEASURE_TIMEOUT_S, check=False
            )
            if proc.returncode != 0:
                raise SystemExit(f"{checkout} {what}: exit {proc.returncode}\n{proc.stderr[-2000:]}")
            found.setdefault((str(checkout), what, sched), []).extend(json.loads(proc.stdout.splitlines()[-1]))
    lines = [f"{threads} threads, {calls} calls per measurement, {rounds} rounds (medians, us per call)", ""]
    lines.append(f"{'case':6} {'sched':7} {'checkout':40} {'wall':>8} {'cpu':>8}")
    for what in whats:
        for sched in scheds:
            for checkout in checkouts:
                samples = found[(str(checkout), what, sched)]
                wall = statistics.median(sample[0] for sample in samples)
                cpu_time = statistics.median(sample[1] for sample in samples)
                lines.append(f"{what:6} {sched:7} {checkout!s:40} {wall:8.1f} {cpu_time:8.1f}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--checkouts", default=".", help="comma-separated checkouts (the first is the baseline)")
    parser.add_argument("--what", default="tools,ping,http,sse", help=f"comma-separated: {','.join(WHAT)}")
    parser.add_argument("--threads", type=int, default=16)
    parser.add_argument("--calls", type=int, default=8000, help="calls per measurement, all threads together")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-pin", action="store_true", help="skip the runs pinned to one CPU")
    parser.add_argument("--measure", choices=WHAT, help=argparse.SUPPRESS)  # one measurement, in a child
    parser.add_argument("--pin", type=int, help=argparse.SUPPRESS)  # the child and its server on this CPU
    args = parser.parse_args()
    if args.pin is not None:
        os.sched_setaffinity(0, {args.pin})
    if args.measure:
        print(json.dumps(measure(args.measure, args.threads, args.calls)))
        return
    whats = [w.strip() for w in args.what.split(",") if w.strip()]
    unknown = set(whats) - set(WHAT)
    if unknown:
        raise SystemExit(f"unknown --what: {', '.join(sorted(unknown))}")
    checkouts = [Path(c).resolve() for c in args.checkouts.split(",") if c.strip()]
    print(drive(checkouts, whats, args.threads, args.calls, args.rounds, not args.no_pin))


if __name__ == "__main__":
    main()
