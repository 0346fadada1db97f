"""`make loadtest`, the server run: McpServer.wsgi_app() under gunicorn, both eras, tools that hang, crash and stream.

Usage::

    python -m benchmarks.loadtest --target server                 # 2 workers x 16 threads, 32 clients, 20 s
    python -m benchmarks.loadtest --target server --duration 4 --clients 8

What it does, on 127.0.0.1 only, bounded in time (``--duration``) and in
requests (``--max-requests``):

1. starts :mod:`benchmarks.loadtest_server_app` (an ``McpServer``) twice
   under gunicorn threads with ``--preload`` and one ``state_secret`` for all
   its workers: the stateless era's server with ``--workers`` processes
   (2 x 16 threads by default: any worker may answer any request), and the
   session era's with one worker of its own (16 threads).  Sessions live in
   one process, and gunicorn hands each new connection to any worker, so a
   session-era client behind two workers would need sticky routing: the
   load test gives those clients their own single-worker server instead;
2. runs ``--clients`` threads, half in each era (each a keep-alive
   ``requests.Session``; a session-era client opens its session first and
   ends it with ``DELETE``), calling in a loop: mostly ``echo`` and ``add``,
   some ``progress`` (an SSE answer with its three notifications) and
   ``crash`` (an ``Exception``, or a ``BaseException``), each with a deadline
   (``CALL_TIMEOUT_S``, the client's read timeout being the deadline plus
   ``DEADLINE_SLACK_S`` and more, so that a late answer is seen as late);
3. a quarter and three quarters in, tools hang in both eras (``hang``:
   they ignore their cancellation); their client gives up at its deadline
   (``HANG_TIMEOUT_S``): in the stateless era it closes the connection, in the
   session era it also sends ``notifications/cancelled``;
4. samples every worker's memory (RSS) and threads (psutil) through the run
   and once the load has stopped and the hung tools have let go; then stops
   both servers (SIGTERM) and checks that nothing of them is left.

Checks: no answer came past its client's deadline plus ``DEADLINE_SLACK_S``;
none was lost (every request sent has its answer, or its client's own
timeout for a hung tool); the ordinary calls succeeded; the crashes were
answered as errors; memory and threads stayed flat; nothing was left after
shutdown.  Exit code 0 when every check passes, 1 otherwise.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import re
import secrets
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Deque, Dict, List, Optional, Sequence, Tuple

import psutil
import requests

from benchmarks.loadtest import open_fds, percentile, quarter_medians, session_processes, stop_session

ROOT = Path(__file__).resolve().parent.parent
HOST = "127.0.0.1"
APP = "benchmarks.loadtest_server_app:app"

#: Seconds a server gets to listen (and its workers to boot), and to stop after SIGTERM.
SERVER_START_S = 60.0
SHUTDOWN_S = 30.0
#: Seconds gunicorn gives its workers to finish their requests after SIGTERM.
GRACEFUL_S = 10
#: The deadline of every ordinary call.
CALL_TIMEOUT_S = 2.0
#: The deadline of a hung tool's call (its client gives up then), and how long the tool holds its thread.
HANG_TIMEOUT_S = 1.0
HANG_HOLD_S = 5.0
#: What an answer may take beyond its deadline (HTTP, the WSGI server's queue) and still count as on time.
DEADLINE_SLACK_S = 1.0
#: The HTTP client's read timeout beyond the deadline and the slack (an answer later still is lost).
HTTP_READ_SLACK_S = 10.0
#: The least share of ordinary calls that must succeed.
MIN_OK_RATIO = 0.99
#: The most a worker's RSS may grow between the first and the last quarter of the run.
MEMORY_GROWTH_LIMIT_MIB = 16.0
#: Threads a worker may hold more at the end than a quarter in (a second burst of hung tools).
WORKER_THREAD_SLACK = 16
#: How often the workers are sampled.
SAMPLE_EVERY_S = 0.5
#: Hung tools per era at each of the two moments.
HANGS_PER_BURST = 2
#: The steps of a ``progress`` call (one notification each).
PROGRESS_STEPS = 3
STATELESS_VERSION = "2026-07-28"
SESSION_VERSION = "2025-11-25"
_CLIENT_INFO = {"name": "loadtest", "version": "1"}

#: Ordinary calls: (weight, tool, arguments, the outcome expected).
MIX: Sequence[Tuple[int, str, Dict[str, Any], str]] = (
    (45, "echo", {"text": "hello"}, "ok"),
    (35, "add", {"a": 2, "b": 3}, "ok"),
    (12, "progress", {"steps": PROGRESS_STEPS}, "ok"),
    (5, "crash", {"how": "exception"}, "tool_error"),
    (3, "crash", {"how": "base"}, "internal_error"),
)


class Outcome:
    __slots__ = ("deadline", "era", "expected", "kind", "latency", "started", "tool")

    def __init__(self, era: str, tool: str, expected: str, started: float, deadline: float) -> None:
        self.era, self.tool, self.expected = era, tool, expected
        self.started, self.deadline = started, deadline
        self.latency = 0.0
        self.kind = "unanswered"


class GunicornServer:
    """gunicorn serving the app in a session of its own; its stderr drained into a tail."""

    def __init__(self, workers: int, threads: int, secret: str) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
        env["LOADTEST_STATE_SECRET"] = secret
        argv = [
            sys.executable, "-m", "gunicorn", "-k", "gthread",
            "--workers", str(workers), "--threads", str(threads),
            "--bind", f"{HOST}:0", "--preload", "--graceful-timeout", str(GRACEFUL_S),
            "--log-level", "info", APP,
        ]  # fmt: skip
        self.workers_wanted = workers
        self.proc = subprocess.Popen(
            argv, cwd=str(ROOT), env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE, start_new_session=True,
        )  # fmt: skip
        self.tail: Deque[str] = collections.deque(maxlen=200)
        self._port: Optional[int] = None
        self._listening = threading.Event()
        self._drain = threading.Thread(target=self._read_stderr, name="loadtest-server-stderr", daemon=True)
        self._drain.start()
        deadline = time.monotonic() + SERVER_START_S
        if not self._listening.wait(SERVER_START_S) or self._port is None:
            self.stop()
            raise RuntimeError("gunicorn did not start listening:\n" + "\n".join(self.tail))
        while len(self.workers()) < workers and time.monotonic() < deadline:
            self._listening.wait(0.05)  # the event is set: a bounded pause between looks at the process table
        self.url: str = f"http://{HOST}:{self._port}/mcp"

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            line = raw.decode("utf-8", "replace").rstrip()
            self.tail.append(line)
            found = re.search(r"Listening at: http://[\d.]+:(\d+)", line)
            if found and self._port is None:
                self._port = int(found.group(1))
                self._listening.set()
        self._listening.set()

    def workers(self) -> List[psutil.Process]:
        try:
            return [c for c in psutil.Process(self.proc.pid).children() if "gunicorn" in " ".join(c.cmdline())]
        except psutil.Error:
            return []

    def session_processes(self) -> List[psutil.Process]:
        return session_processes(self.proc.pid)

    def stop(self) -> Tuple[float, List[str]]:
        """SIGTERM, wait; the seconds it took and what was left (then killed)."""
        return stop_session(self.proc, self._drain)


# -- one client ------------------------------------------------------------------------------------------


def _kind_of(answer: requests.Response) -> Tuple[str, int]:
    """The outcome of a tools/call answer (``ok``, ``tool_error``, ``internal_error``, ...) and its progress events."""
    if answer.status_code != 200:
        return f"http_{answer.status_code}", 0
    progress = 0
    if answer.headers.get("content-type", "").startswith("text/event-stream"):
        messages = [
            json.loads(line[5:]) for line in answer.text.splitlines() if line.startswith("data:") and line[5:].strip()
        ]
        progress = sum(1 for m in messages if m.get("method") == "notifications/progress")
        finals = [m for m in messages if "result" in m or "error" in m]
        if not finals:
            return "no_result", progress
        message = finals[-1]
    else:
        try:
            message = answer.json()
        except ValueError:
            return "bad_body", 0
    if "error" in message:
        return ("internal_error" if message["error"].get("code") == -32603 else "rpc_error"), progress
    return ("tool_error" if message["result"].get("isError") else "ok"), progress


class Client:
    """One client thread's connection: a keep-alive session, in one era."""

    def __init__(self, url: str, era: str) -> None:
        self.url = url
        self.era = era
        self.http = requests.Session()
        self.http.headers.update({"Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
        self.number = 0
        self.session_id: Optional[str] = None
        if era == "stateless":
            self.http.headers["MCP-Protocol-Version"] = STATELESS_VERSION
        else:
            params = {"protocolVersion": SESSION_VERSION, "capabilities": {}, "clientInfo": _CLIENT_INFO}
            body = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}
            answer = self.http.post(url, json=body, timeout=SERVER_START_S)
            answer.raise_for_status()
            self.session_id = answer.headers["mcp-session-id"]
            self.http.headers.update({"Mcp-Session-Id": self.session_id, "MCP-Protocol-Version": SESSION_VERSION})
            note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            self.http.post(url, json=note, timeout=SERVER_START_S).raise_for_status()

    def call(self, tool: str, arguments: Dict[str, Any], outcome: Outcome, clock_zero: float) -> None:
        """One tools/call; ``outcome`` gets its latency and kind.  A call past its deadline is given up (cancelled)."""
        self.number += 1
        request_id = self.number
        meta: Dict[str, Any] = {}
        headers: Dict[str, str] = {}
        if self.era == "stateless":
            meta = {
                "io.modelcontextprotocol/protocolVersion": STATELESS_VERSION,
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": _CLIENT_INFO,
            }
            headers = {"Mcp-Method": "tools/call", "Mcp-Name": tool}
        if tool == "progress":
            meta["progressToken"] = f"p{request_id}"
        params: Dict[str, Any] = {"name": tool, "arguments": arguments}
        if meta:
            params["_meta"] = meta
        body = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
        gives_up = outcome.expected == "timeout"  # a hung tool: its client leaves at the deadline
        read_timeout = outcome.deadline if gives_up else outcome.deadline + DEADLINE_SLACK_S + HTTP_READ_SLACK_S
        started = time.monotonic()
        outcome.started = started - clock_zero
        try:
            answer = self.http.post(self.url, json=body, headers=headers, timeout=(5.0, read_timeout))
            outcome.kind, steps = _kind_of(answer)
            if tool == "progress" and outcome.kind == "ok" and steps != PROGRESS_STEPS:
                outcome.kind = f"progress_{steps}_of_{PROGRESS_STEPS}"
        except requests.Timeout:
            outcome.kind = "timeout"
            self.http.close()  # the stream is closed: in the stateless era, that cancels the request
            if self.session_id is not None:
                self._cancel(request_id)
        except requests.RequestException as exc:
            outcome.kind = f"connection:{type(exc).__name__}"
        outcome.latency = time.monotonic() - started

    def _cancel(self, request_id: int) -> None:
        note = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": request_id}}
        try:
            self.http.post(self.url, json=note, timeout=CALL_TIMEOUT_S)
        except requests.RequestException:
            pass  # counted by the request itself

    def close(self) -> None:
        if self.session_id is not None:
            try:
                self.http.delete(self.url, timeout=CALL_TIMEOUT_S)
            except requests.RequestException:
                pass
        self.http.close()


# -- the run ----------------------------------------------------------------------------------------------


class Run:
    def __init__(self, servers: Dict[str, GunicornServer], args: argparse.Namespace) -> None:
        self.servers = servers
        self.args = args
        self.lock = threading.Lock()  # guards outcomes, samples and errors
        self.outcomes: List[Outcome] = []
        self.sent = 0
        self.samples: Dict[int, List[Tuple[float, float, int]]] = collections.defaultdict(list)
        self.errors: List[str] = []
        self.done = threading.Event()
        self.start = self.stop_at = 0.0
        self.budget = args.max_requests
        self.elapsed = 0.0

    def _take(self) -> bool:
        with self.lock:
            if self.sent >= self.budget:
                return False
            self.sent += 1
            return True

    def client(self, index: int, era: str) -> None:
        rng = random.Random(index)  # noqa: S311 (a repeatable mix, not a secret)
        weights = [weight for weight, *_ in MIX]
        try:
            client = Client(self.servers[era].url, era)
        except (requests.RequestException, KeyError) as exc:
            with self.lock:
                self.errors.append(f"client {index} ({era}) could not start: {exc!r}")
            return
        try:
            while time.monotonic() < self.stop_at and self._take():
                _, tool, arguments, expected = rng.choices(MIX, weights)[0]
                outcome = Outcome(era, tool, expected, 0.0, CALL_TIMEOUT_S)
                with self.lock:
                    self.outcomes.append(outcome)
                client.call(tool, arguments, outcome, self.start)
        finally:
            client.close()

    def hang(self, era: str) -> None:
        try:
            client = Client(self.servers[era].url, era)
        except requests.RequestException as exc:
            with self.lock:
                self.errors.append(f"a hanging client ({era}) could not start: {exc!r}")
            return
        outcome = Outcome(era, "hang", "timeout", 0.0, HANG_TIMEOUT_S)
        with self.lock:
            self.outcomes.append(outcome)
            self.sent += 1
        try:
            client.call("hang", {"seconds": HANG_HOLD_S}, outcome, self.start)
        finally:
            client.close()

    def chaos_plan(self) -> None:
        threads = []
        for at in (0.25, 0.75):
            if self.done.wait(max(0.0, self.start + at * self.args.duration - time.monotonic())):
                break
            for era in ("stateless", "session"):
                for _ in range(HANGS_PER_BURST):
                    thread = threading.Thread(target=self.hang, args=(era,), name="loadtest-hang")
                    thread.start()
                    threads.append(thread)
        for thread in threads:
            thread.join(HANG_TIMEOUT_S + SERVER_START_S)

    def sample(self) -> None:
        now = time.monotonic() - self.start
        for server in self.servers.values():
            for worker in server.workers():
                try:
                    rss, threads = worker.memory_info().rss / 1048576.0, worker.num_threads()
                except psutil.Error:
                    continue
                with self.lock:
                    self.samples[worker.pid].append((now, rss, threads))

    def sampler(self) -> None:
        while not self.done.wait(SAMPLE_EVERY_S):
            self.sample()

    def run(self) -> None:
        half = max(1, self.args.clients // 2)
        eras = ["stateless"] * (self.args.clients - half) + ["session"] * half
        self.start = time.monotonic()
        self.stop_at = self.start + self.args.duration
        self.sample()
        clients = [
            threading.Thread(target=self.client, args=(i, era), name=f"loadtest-client-{i}")
            for i, era in enumerate(eras)
        ]
        helpers = [
            threading.Thread(target=self.chaos_plan, name="loadtest-plan"),
            threading.Thread(target=self.sampler, name="loadtest-sampler"),
        ]
        for thread in clients + helpers:
            thread.start()
        bound = self.args.duration + CALL_TIMEOUT_S + DEADLINE_SLACK_S + HTTP_READ_SLACK_S + 5.0
        for thread in clients:
            thread.join(bound)
        self.elapsed = time.monotonic() - self.start
        self.done.set()
        for thread in helpers:
            thread.join(bound)
        # The end: once the hung tools have let go of their threads (they hold them HANG_HOLD_S).
        self.done.wait(max(0.0, self.start + self.args.duration * 0.75 + HANG_HOLD_S + 1.0 - time.monotonic()))
        self.sample()


# -- the report -----------------------------------------------------------------------------------------


def report(run: Run, shutdown: Dict[str, Tuple[float, List[str]]], leaks: List[str]) -> int:
    args = run.args
    ordinary = [o for o in run.outcomes if o.tool != "hang"]
    hangs = [o for o in run.outcomes if o.tool == "hang"]
    ms = [o.latency * 1000.0 for o in ordinary]
    shape = f"{args.workers} workers x {args.threads} threads"
    lines = [
        f"make loadtest --target server: McpServer.wsgi_app() under gunicorn gthread --preload, "
        f"{args.clients} clients, {run.elapsed:.1f} s, 127.0.0.1",
        f"  stateless era (2026-07-28): {shape}; session era (2025-11-25): 1 worker x {args.threads} threads",
        "",
        f"{'requests':<28}{len(run.outcomes):>10,}",
        f"{'throughput':<28}{len(ordinary) / max(run.elapsed, 1e-9):>10,.0f} req/s",
        f"{'latency p50 / p99 / max':<28}{percentile(ms, 50):>10.1f} / {percentile(ms, 99):.1f}"
        f" / {max(ms, default=0):.1f} ms",
        "",
        "outcomes by era, tool and kind:",
    ]
    table = collections.Counter(
        (o.era, o.tool if o.tool != "crash" else f"crash ({o.expected})", o.kind) for o in run.outcomes
    )
    for (era, tool, kind), count in sorted(table.items()):
        lines.append(f"  {era:<10}{tool:<26}{kind:<22}{count:>8,}")
    slowest_hang = max((o.latency for o in hangs), default=0.0)
    lines.append(f"  hung tools: {len(hangs)}, slowest given up after {slowest_hang:.2f} s")
    lines.append("workers (RSS first quarter -> last quarter median; threads a quarter in -> after the run):")
    growths: Dict[int, float] = {}
    thread_growth = 0
    for pid, samples in sorted(run.samples.items()):
        first, last = quarter_medians([(at, rss) for at, rss, _ in samples], run.elapsed)
        growths[pid] = last - first
        quarter = [threads for at, _, threads in samples if at >= run.elapsed / 4] or [samples[-1][2]]
        start_threads, end_threads = quarter[0], samples[-1][2]
        thread_growth = max(thread_growth, end_threads - start_threads)
        lines.append(
            f"  worker {pid:<10}{first:>8.1f} -> {last:.1f} MiB ({last - first:+.1f}); "
            f"{samples[0][2]} at start, {start_threads} -> {end_threads} threads"
        )
    left: List[str] = []
    for era, (seconds, names) in shutdown.items():
        lines.append(f"shutdown ({era}): {seconds:.1f} s; processes left: {len(names)}")
        left.extend(names)
    lines.append(f"leaks in this process: {leaks or 'none'}")
    late = [o for o in run.outcomes if o.kind != "timeout" and o.latency > o.deadline + DEADLINE_SLACK_S]
    worst_late = max((o.latency - o.deadline for o in late), default=0.0)
    lost = [o for o in run.outcomes if o.kind == "unanswered" or o.kind.startswith(("connection:", "http_", "bad_"))]
    lost += [o for o in ordinary if o.kind == "timeout"]
    ok_ratio = sum(1 for o in ordinary if o.kind == "ok") / max(1, sum(1 for o in ordinary if o.expected == "ok"))
    unexpected = collections.Counter(f"{o.tool}:{o.kind}" for o in ordinary if o.kind != o.expected)
    worst_growth = max(growths.values(), default=0.0)
    checks = [
        ("every client started", not run.errors, "; ".join(run.errors)),
        ("no answer past its client's deadline", not late, f"{len(late)} late; worst {worst_late:.2f} s over"),
        ("no request lost", not lost, f"{len(lost)}: {collections.Counter(o.kind for o in lost)}"),
        (f"ordinary calls succeeded (>= {MIN_OK_RATIO:.0%})", ok_ratio >= MIN_OK_RATIO, f"{ok_ratio:.2%}"),
        ("every call had the outcome its tool gives", not unexpected, str(dict(unexpected)) if unexpected else ""),
        (
            "every hung tool was given up at its deadline",
            bool(hangs) and all(o.kind == "timeout" and o.latency <= o.deadline + DEADLINE_SLACK_S for o in hangs),
            "",
        ),
        (
            f"memory flat (< {MEMORY_GROWTH_LIMIT_MIB:g} MiB growth)",
            bool(growths) and worst_growth < MEMORY_GROWTH_LIMIT_MIB,
            f"{worst_growth:+.1f} MiB",
        ),
        (f"worker threads flat (<= +{WORKER_THREAD_SLACK})", thread_growth <= WORKER_THREAD_SLACK, f"+{thread_growth}"),
        ("nothing left after shutdown", not left and not leaks, "; ".join(left + leaks)),
    ]
    lines.append("")
    for name, passed, detail in checks:
        lines.append(f"{'PASS' if passed else 'FAIL'}  {name}" + (f"  ({detail})" if detail else ""))
    print("\n".join(lines), flush=True)
    failed = [name for name, passed, _ in checks if not passed]
    if failed:
        print(f"\nloadtest FAILED: {len(failed)} check(s); last lines of the servers' stderr:", file=sys.stderr)
        for era, server in run.servers.items():
            print(f"-- {era}:\n" + "\n".join(list(server.tail)[-20:]), file=sys.stderr)
        return 1
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.loadtest --target server", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "--workers", type=int, default=2, help="gunicorn worker processes of the stateless era's server"
    )
    parser.add_argument("--threads", type=int, default=16, help="threads per worker")
    parser.add_argument("--clients", type=int, default=32, help="concurrent clients, half in each era")
    parser.add_argument("--duration", type=float, default=20.0, help="seconds of load")
    parser.add_argument("--max-requests", type=int, default=200_000, help="requests in all, at most")
    args = parser.parse_args(argv)
    if not 1 <= args.duration <= 600 or args.clients < 2 or args.max_requests < 1:
        parser.error("--duration must be 1..600 s, --clients at least 2, --max-requests at least 1")
    baseline_threads = {thread.ident for thread in threading.enumerate()}
    baseline_fds = open_fds()
    secret = secrets.token_hex(32)
    servers: Dict[str, GunicornServer] = {}
    shutdown: Dict[str, Tuple[float, List[str]]] = {}
    try:
        servers["stateless"] = GunicornServer(args.workers, args.threads, secret)
        servers["session"] = GunicornServer(1, args.threads, secret)
        run = Run(servers, args)
        run.run()
    finally:
        for era, server in servers.items():
            shutdown[era] = server.stop()
    left_threads = [t.name for t in threading.enumerate() if t.ident not in baseline_threads and t.is_alive()]
    leaks = [f"threads {left_threads}"] if left_threads else []
    if open_fds() > baseline_fds:
        leaks.append(f"fds {baseline_fds} -> {open_fds()}")
    return report(run, shutdown, leaks)


if __name__ == "__main__":
    sys.exit(main())
