"""`make loadtest`: the example web app under a threaded WSGI server, many clients, a hung tool and a crash.

Usage::

    python -m benchmarks.loadtest                     # gunicorn, 2 workers x 16 threads, 32 clients, 20 s
    python -m benchmarks.loadtest --server waitress --duration 10 --clients 16
    python -m benchmarks.loadtest --target server      # McpServer itself: benchmarks/loadtest_server.py

What it does, on 127.0.0.1 only, bounded in time (``--duration``) and in
requests (``--max-requests``):

1. starts the app (:mod:`benchmarks.loadtest_app`: the example web app
   ``jsonrpc_threads.examples.webapp``, two stdio MCP servers ``example`` and
   ``chaos``) under gunicorn with ``--preload --threads`` (the registry is
   made in the master, before the fork) or under waitress, in a session of its
   own, and asks each worker for its tools until every worker has started
   its servers (a worker starts them on first use);
2. runs ``--clients`` threads, each a keep-alive ``requests.Session`` posting
   tool calls to ``/call`` with a deadline (``?timeout=``) in a loop: mostly
   ``add`` and ``echo``, some short ``slow`` calls, on both servers;
3. meanwhile, a quarter of the way in, tools hang (``rendezvous`` calls that
   nobody meets and that ignore their cancellation: each holds a thread of the
   server); half way, the ``chaos`` server crashes (``crash``) and is
   restarted by the registry; three quarters in, more hung tools;
4. samples every worker's memory (RSS) and, through ``/health``, its threads
   and file descriptors; then stops the server (SIGTERM) and checks that
   nothing of it is left: no process of its session, no thread or file
   descriptor of this process.

It prints throughput, p50/p99 latency, the outcome of every request by kind,
and then checks: no request waited past its deadline (plus
``DEADLINE_SLACK_S`` of HTTP and queueing), the ordinary calls succeeded
(``MIN_OK_RATIO``), each hung call timed out and each crash was reported and
restarted, memory stayed flat (``MEMORY_GROWTH_LIMIT_MIB`` between the first
and the last quarter of the run), and nothing leaked.  Exit code 0 when every
check passes, 1 otherwise.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable, Deque, Dict, List, Optional, Sequence, Set, Tuple

import psutil
import requests

ROOT = Path(__file__).resolve().parent.parent
HOST = "127.0.0.1"

#: Seconds the server gets to listen (gunicorn with --preload starts the MCP servers first).
SERVER_START_S = 60.0
#: Seconds the server gets to stop after SIGTERM (workers finish, registries close their servers).
SHUTDOWN_S = 30.0
#: Seconds what the server started gets to be gone after the server exited: its registries closed their
#: servers before it exited; less than a tool server's end-of-input drain (5 s for a hung tool), so one
#: left to notice its closed input on its own is caught.
LEFT_WAIT_S = 3.0
#: Seconds the warm-up may take to see every worker with all its servers running.
WARM_UP_S = 60.0
#: Seconds every ordinary tool call may take (its ?timeout=).
CALL_TIMEOUT_S = 2.0
#: Seconds a hung tool's call may take before it times out.
HANG_TIMEOUT_S = 1.0
#: How long a hung tool holds its server's thread (it ignores its cancellation).
HANG_HOLD_S = 15.0
#: What a request may take beyond its deadline (HTTP, the WSGI server's queue) and still count as on time.
DEADLINE_SLACK_S = 1.0
#: The HTTP client's own read timeout beyond the deadline (a request that hits it is a failure).
HTTP_READ_SLACK_S = 10.0
#: The least share of ordinary calls that must succeed.
MIN_OK_RATIO = 0.97
#: The most a worker's RSS may grow between the first and the last quarter of the run.
MEMORY_GROWTH_LIMIT_MIB = 16.0
#: How often memory is sampled.
SAMPLE_EVERY_S = 0.5
#: Threads and file descriptors a worker may hold more at the end than a quarter in.
WORKER_THREAD_SLACK = 16
WORKER_FD_SLACK = 8
#: How many hung tools are started at each of the two moments, and crashes at half way.
HANGS_PER_BURST = 4
CRASHES = 2

EXAMPLE_SERVER = {"command": sys.executable, "args": ["-m", "jsonrpc_threads.examples.mcp_tool_server"]}
#: The servers of the app's configuration (both run EXAMPLE_SERVER), each called once per worker before the clock.
WARM_UP_SERVERS = ("example", "chaos")

#: Ordinary calls: (weight, server, tool, arguments).
MIX: Sequence[Tuple[int, str, str, Dict[str, Any]]] = (
    (50, "example", "add", {"a": 2, "b": 3}),
    (20, "example", "echo", {"text": "hello"}),
    (20, "chaos", "echo", {"text": "from chaos"}),
    (10, "example", "slow", {"seconds": 0.02, "steps": 1}),
)


def tool_call(server: str, tool: str, arguments: Dict[str, Any], call_id: str) -> Dict[str, Any]:
    name = f"mcp__{server}__{tool}"
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


def classify(answer: requests.Response) -> str:
    """The kind of one /call outcome: ok, or why not."""
    if answer.status_code != 200:
        return f"http_{answer.status_code}"
    try:
        content = str(answer.json().get("content", ""))
    except ValueError:
        return "bad_body"
    if not content.startswith("Error:"):
        return "ok"
    if "did not finish within" in content:
        return "timeout"
    if "stopped while running" in content:
        return "crashed"
    if "is restarting" in content or "is unavailable" in content or "is failed" in content:
        return "unavailable"
    return "tool_error"


class Outcome:
    __slots__ = ("deadline", "kind", "latency", "started")

    def __init__(self, started: float, latency: float, kind: str, deadline: float) -> None:
        self.started = started
        self.latency = latency
        self.kind = kind
        self.deadline = deadline


class Budget:
    """The requests left to send (``--max-requests``).  Thread-safe."""

    def __init__(self, total: int) -> None:
        self._lock = threading.Lock()  # guards _left
        self._left = total

    def take(self) -> bool:
        with self._lock:
            if self._left <= 0:
                return False
            self._left -= 1
            return True


# -- the server -----------------------------------------------------------------------------------


class AppServer:
    """The app under gunicorn or waitress, in a session of its own; its stderr drained into a tail."""

    def __init__(self, kind: str, config: Path, workers: int, threads: int) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
        env["JSONRPC_THREADS_MCP_CONFIG"] = str(config)
        if kind == "gunicorn":
            argv = [
                sys.executable, "-m", "gunicorn",
                "--workers", str(workers), "--threads", str(threads),
                "--bind", f"{HOST}:0", "--preload", "--graceful-timeout", "10",
                "--log-level", "info", "benchmarks.loadtest_app:app",
            ]  # fmt: skip
            pattern = re.compile(r"Listening at: http://[\d.]+:(\d+)")
        else:
            argv = [
                sys.executable, "-m", "waitress",
                f"--threads={threads}", f"--listen={HOST}:0",
                "jsonrpc_threads.examples.webapp:app",
            ]  # fmt: skip
            pattern = re.compile(r"Serving on http://[\d.]+:(\d+)")
        self.kind = kind
        self.proc = subprocess.Popen(
            argv, cwd=str(ROOT), env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE, start_new_session=True,
        )  # fmt: skip
        self.tail: Deque[str] = collections.deque(maxlen=200)
        self._port: Optional[int] = None
        self._listening = threading.Event()
        self._pattern = pattern
        self._drain = threading.Thread(target=self._read_stderr, name="loadtest-stderr", daemon=True)
        self._drain.start()
        if not self._listening.wait(SERVER_START_S) or self._port is None:
            self.stop()
            raise RuntimeError(f"{kind} did not start listening:\n" + "\n".join(self.tail))
        self.url: str = f"http://{HOST}:{self._port}"

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            line = raw.decode("utf-8", "replace").rstrip()
            self.tail.append(line)
            found = self._pattern.search(line)
            if found and self._port is None:
                self._port = int(found.group(1))
                self._listening.set()
        self._listening.set()

    def workers(self) -> List[psutil.Process]:
        """The processes serving requests: gunicorn's workers, or waitress itself."""
        try:
            master = psutil.Process(self.proc.pid)
            if self.kind != "gunicorn":
                return [master]
            return [child for child in master.children() if "gunicorn" in " ".join(child.cmdline())]
        except psutil.Error:
            return []

    def session_processes(self) -> List[psutil.Process]:
        return session_processes(self.proc.pid)

    def stop(self) -> Tuple[float, List[str]]:
        """SIGTERM, wait; returns the seconds it took and what was left (then killed)."""
        return stop_session(self.proc, self._drain)


def session_processes(leader: int) -> List[psutil.Process]:
    """The live processes of the session ``leader`` started (``start_new_session=True``)."""
    found = []
    for proc in psutil.process_iter():
        try:
            if os.getsid(proc.pid) == leader and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except (psutil.Error, OSError):
            pass
    return found


def stop_session(proc: subprocess.Popen[bytes], drain: threading.Thread) -> Tuple[float, List[str]]:
    """SIGTERM the server ``proc`` leads, wait; the seconds it took and what it had started that was left (then killed).

    What it had started is its session and every descendant, seen just
    before the signal: the MCP servers its registries run are in sessions of
    their own.  Each gets ``LEFT_WAIT_S`` after the server's exit to be gone.
    """
    started = time.monotonic()
    started_by_it = {p.pid: p for p in session_processes(proc.pid) + descendants(proc.pid) if p.pid != proc.pid}
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(SHUTDOWN_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(SHUTDOWN_S)
    for late in session_processes(proc.pid):  # started after the snapshot (a restart during the shutdown)
        started_by_it.setdefault(late.pid, late)
    _, alive = psutil.wait_procs(list(started_by_it.values()), timeout=LEFT_WAIT_S)
    names = [f"{p.pid} {' '.join(p.cmdline())[:80]}" for p in alive if _alive(p)]
    for left in alive:
        try:
            left.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(alive, timeout=5.0)  # reaped too, where they became ours (a subreaper adopts orphans)
    drain.join(5.0)
    if proc.stderr is not None:
        proc.stderr.close()
    return time.monotonic() - started, names


def descendants(pid: int) -> List[psutil.Process]:
    """The live descendants of ``pid`` (of any session)."""
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return []


def _alive(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


# -- the run ----------------------------------------------------------------------------------------


class Run:
    def __init__(self, server: AppServer, args: argparse.Namespace) -> None:
        self.server = server
        self.args = args
        self.outcomes: List[Outcome] = []
        self.chaos: List[Tuple[str, Outcome]] = []
        self.lock = threading.Lock()  # guards outcomes, chaos, memory, health
        self.memory: Dict[int, List[Tuple[float, float]]] = collections.defaultdict(list)
        self.health: Dict[int, List[Tuple[float, Dict[str, Any]]]] = collections.defaultdict(list)
        self.start = 0.0
        self.stop_at = 0.0
        self.done = threading.Event()

    def post_call(self, session: requests.Session, call: Dict[str, Any], timeout: float) -> Outcome:
        started = time.monotonic()
        try:
            answer = session.post(
                f"{self.server.url}/call",
                params={"timeout": timeout},
                json=call,
                timeout=(5.0, timeout + HTTP_READ_SLACK_S),
            )
            kind = classify(answer)
        except requests.Timeout:
            kind = "http_timeout"
        except requests.RequestException as exc:
            kind = f"connection:{type(exc).__name__}"
        return Outcome(started - self.start, time.monotonic() - started, kind, timeout)

    def client(self, index: int, budget: Budget) -> None:
        rng = random.Random(index)  # noqa: S311 (a repeatable mix of calls, not a secret)
        weights = [weight for weight, *_ in MIX]
        with requests.Session() as session:
            number = 0
            while time.monotonic() < self.stop_at and budget.take():
                _, server, tool, arguments = rng.choices(MIX, weights)[0]
                number += 1
                outcome = self.post_call(
                    session, tool_call(server, tool, arguments, f"c{index}-{number}"), CALL_TIMEOUT_S
                )
                with self.lock:
                    self.outcomes.append(outcome)

    def chaos_call(self, what: str, call: Dict[str, Any], timeout: float) -> None:
        with requests.Session() as session:
            outcome = self.post_call(session, call, timeout)
        with self.lock:
            self.chaos.append((what, outcome))

    def chaos_plan(self) -> None:
        duration = self.args.duration
        plan: List[Tuple[float, Callable[[], None]]] = []
        for burst, at in enumerate((0.25, 0.75)):
            for n in range(HANGS_PER_BURST):
                arguments = {"key": f"nobody-comes-{burst}-{n}", "parties": 2, "timeout": HANG_HOLD_S}
                call = tool_call("example", "rendezvous", arguments, f"hang-{burst}-{n}")
                plan.append((at * duration, lambda c=call: self.chaos_call("hang", c, HANG_TIMEOUT_S)))  # type: ignore[misc]
        for n in range(CRASHES):
            call = tool_call("chaos", "crash", {"code": 3}, f"crash-{n}")
            plan.append((0.5 * duration + n * 0.5, lambda c=call: self.chaos_call("crash", c, CALL_TIMEOUT_S)))  # type: ignore[misc]
        threads = []
        for at, action in sorted(plan, key=lambda item: item[0]):
            if self.done.wait(max(0.0, self.start + at - time.monotonic())):
                break
            thread = threading.Thread(target=action, name="loadtest-chaos")
            thread.start()
            threads.append(thread)
        for thread in threads:
            thread.join(HANG_TIMEOUT_S + CALL_TIMEOUT_S + HTTP_READ_SLACK_S)

    def sampler(self) -> None:
        with requests.Session() as session:
            while not self.done.wait(SAMPLE_EVERY_S):
                now = time.monotonic() - self.start
                for worker in self.server.workers():
                    try:
                        rss = worker.memory_info().rss / 1048576.0
                    except psutil.Error:
                        continue
                    with self.lock:
                        self.memory[worker.pid].append((now, rss))
                try:  # a fresh connection each time: any worker may answer
                    facts = session.get(
                        f"{self.server.url}/health", timeout=5.0, headers={"Connection": "close"}
                    ).json()
                except (requests.RequestException, ValueError):
                    continue
                with self.lock:
                    self.health[facts["process"]["pid"]].append((now, facts))

    def warm_up(self) -> None:
        """Bring every worker's servers up before the clock starts (bounded by ``WARM_UP_S``).

        A forked worker starts its servers on first use, so one that gets little
        traffic early would start a server after the baseline a quarter in, and
        its pipes would look like a leak.  A call to each server starts it in the
        worker that answers (``/tools`` would not: the tool lists the master
        made before the fork answer it); ``/health`` on the same connection says
        which worker that was and whether all of them run.
        """
        expected = self.args.workers if self.server.kind == "gunicorn" else 1
        ready: Set[int] = set()
        deadline = time.monotonic() + WARM_UP_S
        while time.monotonic() < deadline:
            wanted = {worker.pid for worker in self.server.workers()}  # gunicorn boots them after it listens
            if len(wanted) >= expected and wanted <= ready:
                break
            with requests.Session() as session:  # a new connection: gunicorn hands it to any worker
                try:
                    left = max(1.0, deadline - time.monotonic())
                    for name in WARM_UP_SERVERS:
                        call = tool_call(name, "echo", {"text": "warm-up"}, f"warm-up-{name}")
                        session.post(f"{self.server.url}/call", json=call, timeout=left).raise_for_status()
                    facts = session.get(f"{self.server.url}/health", timeout=5.0).json()
                except (requests.RequestException, ValueError):
                    continue
            if all(entry["state"] == "running" for entry in facts["servers"].values()):
                ready.add(facts["process"]["pid"])

    def run(self) -> None:
        budget = Budget(self.args.max_requests)
        self.warm_up()
        self.start = time.monotonic()
        self.stop_at = self.start + self.args.duration
        clients = [
            threading.Thread(target=self.client, args=(i, budget), name=f"loadtest-client-{i}")
            for i in range(self.args.clients)
        ]
        helpers = [threading.Thread(target=self.chaos_plan, name="loadtest-plan")]
        helpers.append(threading.Thread(target=self.sampler, name="loadtest-sampler"))
        for thread in clients + helpers:
            thread.start()
        for thread in clients:
            thread.join(self.args.duration + CALL_TIMEOUT_S + HTTP_READ_SLACK_S + 5.0)
        self.elapsed = time.monotonic() - self.start
        self.done.set()
        for thread in helpers:
            thread.join(HANG_TIMEOUT_S + CALL_TIMEOUT_S + HTTP_READ_SLACK_S + 5.0)

    def final_health(self) -> Dict[int, Dict[str, Any]]:
        """The /health of every worker after the load (asked until each was seen, bounded)."""
        wanted = {worker.pid for worker in self.server.workers()}
        seen: Dict[int, Dict[str, Any]] = {}
        with requests.Session() as session:
            for _ in range(20 * max(1, len(wanted))):
                try:
                    # A fresh connection each time: gunicorn hands it to any worker.
                    facts = session.get(
                        f"{self.server.url}/health", timeout=5.0, headers={"Connection": "close"}
                    ).json()
                except (requests.RequestException, ValueError):
                    continue
                seen[facts["process"]["pid"]] = facts
                if wanted <= set(seen):
                    break
        return seen


# -- the report -------------------------------------------------------------------------------------


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, max(0, round(q / 100.0 * (len(ordered) - 1))))]


def quarter_medians(samples: Sequence[Tuple[float, float]], duration: float) -> Tuple[float, float]:
    first = [value for at, value in samples if at <= duration / 4]
    last = [value for at, value in samples if at >= duration * 3 / 4]
    if not first or not last:
        return float("nan"), float("nan")
    return statistics.median(first), statistics.median(last)


def report(run: Run, finals: Dict[int, Dict[str, Any]], shutdown: Tuple[float, List[str]], leaks: List[str]) -> int:
    args = run.args
    outcomes = run.outcomes
    ms = [o.latency * 1000.0 for o in outcomes]
    kinds = collections.Counter(o.kind for o in outcomes)
    ok = [o.latency * 1000.0 for o in outcomes if o.kind == "ok"]
    shape = (
        f"{args.workers} workers x {args.threads} threads" if args.server == "gunicorn" else f"{args.threads} threads"
    )
    lines = [
        f"make loadtest: {args.server} ({shape}), {args.clients} clients, {run.elapsed:.1f} s, 127.0.0.1",
        "",
        f"{'requests':<28}{len(outcomes):>10,}",
        f"{'throughput':<28}{len(outcomes) / run.elapsed:>10,.0f} req/s",
        f"{'latency p50 / p99 / max':<28}{percentile(ms, 50):>10.1f} / {percentile(ms, 99):.1f}"
        f" / {max(ms, default=0):.1f} ms",
        f"{'ok calls p50 / p99':<28}{percentile(ok, 50):>10.1f} / {percentile(ok, 99):.1f} ms",
        "",
        "outcomes by kind (ordinary calls):",
    ]
    for kind, count in kinds.most_common():
        lines.append(f"  {kind:<26}{count:>10,}  {count / max(1, len(outcomes)):7.2%}")
    lines.append("chaos:")
    for what in ("hang", "crash"):
        done = [o for w, o in run.chaos if w == what]
        counted = collections.Counter(o.kind for o in done)
        worst = max((o.latency for o in done), default=0.0)
        summary = ", ".join(f"{kind} x{count}" for kind, count in counted.items())
        lines.append(f"  {what:<26}{len(done):>4} sent -> {summary}; slowest {worst:.2f} s")
    restarts = {pid: facts["servers"]["chaos"]["restarts"] for pid, facts in finals.items()}
    states = {pid: {name: entry["state"] for name, entry in facts["servers"].items()} for pid, facts in finals.items()}
    lines.append(f"  restarts of 'chaos' per worker: {restarts}")
    lines.append(f"  servers after the run: {states}")
    lines.append("memory (RSS, first quarter -> last quarter median):")
    growths = {}
    for pid, samples in sorted(run.memory.items()):
        first, last = quarter_medians(samples, run.elapsed)
        growths[pid] = last - first
        lines.append(f"  worker {pid:<19}{first:>8.1f} -> {last:.1f} MiB ({last - first:+.1f})")
    lines.append("worker threads / fds (a quarter in, every server up -> after the run):")
    thread_growth = fd_growth = 0
    for pid, reports in sorted(run.health.items()):
        # The baseline: a quarter in, once every server of the worker runs (a server
        # first started later brings its pipes and threads, which are not a leak).
        later = [facts for at, facts in reports if at >= run.elapsed / 4] or [facts for _, facts in reports]
        early = [facts for facts in later if all(s["state"] == "running" for s in facts["servers"].values())] or later
        final = finals.get(pid)
        if not early or final is None:
            continue
        start_threads, start_fds = early[0]["process"]["threads"], early[0]["process"]["fds"]
        end_threads, end_fds = final["process"]["threads"], final["process"]["fds"]
        thread_growth = max(thread_growth, end_threads - start_threads)
        fd_growth = max(fd_growth, (end_fds or 0) - (start_fds or 0))
        lines.append(f"  worker {pid:<19}{start_threads:>4} -> {end_threads} threads, {start_fds} -> {end_fds} fds")
    seconds, left = shutdown
    lines.append(f"shutdown: {seconds:.1f} s; processes left: {len(left)}; leaks in this process: {leaks or 'none'}")

    late = [o for o in outcomes + [o for _, o in run.chaos] if o.latency > o.deadline + DEADLINE_SLACK_S]
    ordinary_ok = kinds.get("ok", 0) / max(1, len(outcomes))
    hangs = [o for w, o in run.chaos if w == "hang"]
    crashes = [o for w, o in run.chaos if w == "crash"]
    unexpected = {k: v for k, v in kinds.items() if k not in ("ok", "crashed", "unavailable")}
    worst_late = max((o.latency - o.deadline for o in late), default=0.0)
    server_states = [state for worker in states.values() for state in worker.values()]
    worst_growth = max(growths.values(), default=0.0)
    checks = [
        ("no request waited past its deadline", not late, f"{len(late)} late; worst {worst_late:.2f} s over"),
        (f"ordinary calls succeeded (>= {MIN_OK_RATIO:.0%})", ordinary_ok >= MIN_OK_RATIO, f"{ordinary_ok:.2%}"),
        ("ordinary calls failed only by the crash", not unexpected, str(unexpected or "")),
        ("every hung tool timed out at its deadline", bool(hangs) and all(o.kind == "timeout" for o in hangs), ""),
        ("every crash was reported", bool(crashes) and all(o.kind == "crashed" for o in crashes), ""),
        ("the crashed server was restarted", sum(restarts.values()) >= 1, f"{sum(restarts.values())} restarts"),
        ("no server failed or restarting after the run", all(s in ("running", "idle") for s in server_states), ""),
        (
            f"memory flat (< {MEMORY_GROWTH_LIMIT_MIB:g} MiB growth)",
            bool(growths) and worst_growth < MEMORY_GROWTH_LIMIT_MIB,
            f"{worst_growth:+.1f} MiB",
        ),
        (
            "worker threads and fds flat",
            thread_growth <= WORKER_THREAD_SLACK and fd_growth <= WORKER_FD_SLACK,
            f"+{thread_growth} threads, +{fd_growth} fds",
        ),
        ("nothing left after shutdown", not left and not leaks, "; ".join(left + leaks)),
    ]
    lines.append("")
    for name, passed, detail in checks:
        lines.append(f"{'PASS' if passed else 'FAIL'}  {name}" + (f"  ({detail})" if detail else ""))
    print("\n".join(lines), flush=True)
    failed = [name for name, passed, _ in checks if not passed]
    if failed:
        print(f"\nloadtest FAILED: {len(failed)} check(s); last lines of the server's stderr:", file=sys.stderr)
        print("\n".join(list(run.server.tail)[-30:]), file=sys.stderr)
        return 1
    return 0


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    target = argparse.ArgumentParser(add_help=False)
    target.add_argument("--target", choices=("app", "server"), default="app")
    chosen, rest = target.parse_known_args(argv)
    if chosen.target == "server":  # McpServer.wsgi_app() under gunicorn (benchmarks/loadtest_server.py)
        from benchmarks.loadtest_server import main as server_main  # noqa: PLC0415

        return server_main(rest)
    parser = argparse.ArgumentParser(prog="python -m benchmarks.loadtest", description=__doc__.split("\n")[0])
    parser.add_argument(
        "--target", choices=("app", "server"), default="app", help="the example web app, or McpServer (server)"
    )
    parser.add_argument("--server", choices=("gunicorn", "waitress"), default="gunicorn")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn worker processes")
    parser.add_argument("--threads", type=int, default=16, help="threads per worker")
    parser.add_argument("--clients", type=int, default=32, help="concurrent clients")
    parser.add_argument("--duration", type=float, default=20.0, help="seconds of load")
    parser.add_argument("--max-requests", type=int, default=200_000, help="requests in all, at most")
    args = parser.parse_args(argv)
    if not 1 <= args.duration <= 600 or args.clients < 1 or args.max_requests < 1:
        parser.error("--duration must be 1..600 s, --clients and --max-requests at least 1")
    baseline_threads = {thread.ident for thread in threading.enumerate()}
    baseline_fds = open_fds()
    with tempfile.TemporaryDirectory(prefix="jsonrpc-loadtest-") as tmp:
        config = Path(tmp) / "mcp.json"
        config.write_text(json.dumps({"mcpServers": {"example": EXAMPLE_SERVER, "chaos": EXAMPLE_SERVER}}))
        server = AppServer(args.server, config, args.workers, args.threads)
        run = Run(server, args)
        try:
            run.run()
            finals = run.final_health()
        finally:
            shutdown = server.stop()
    left_threads = [t.name for t in threading.enumerate() if t.ident not in baseline_threads and t.is_alive()]
    leaks = [f"threads {left_threads}"] if left_threads else []
    if open_fds() > baseline_fds:
        leaks.append(f"fds {baseline_fds} -> {open_fds()}")
    return report(run, finals, shutdown, leaks)


if __name__ == "__main__":
    sys.exit(main())
