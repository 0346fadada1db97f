"""Case 12: McpServer against the official SDK's ``MCPServer`` and FastMCP, the same client driving each.

Every server offers the same tool, ``echo(text) -> str`` (ours:
``benchmarks/server_app.py``; the SDK's and FastMCP's:
``benchmarks/server_peers.py``), on 127.0.0.1 or over pipes, in the same run.

- **HTTP, stateless (2026-07-28), JSON answers, 32 client threads.** Ours is
  ``McpServer.wsgi_app()`` (its defaults) under gunicorn threads (``-k gthread``,
  1 worker x 32 threads) and under waitress (32 threads); the SDK's
  ``MCPServer`` and FastMCP are each under uvicorn (one process), made with
  ``stateless_http=True, json_response=True``; ours likewise with
  ``json_response=True`` (the run on the request's thread), and, beside them,
  with its defaults (the run on the app's pool, so that progress can turn the
  answer into a stream) under gunicorn.  The client is common to all:
  a keep-alive ``requests.Session`` per thread posting a ``tools/call`` with
  its ``_meta`` (protocol version, client info and capabilities) and the
  request-metadata headers (``MCP-Protocol-Version``, ``Mcp-Method``,
  ``Mcp-Name``); the answer's text is checked.  Throughput (us per call over
  all threads) and each call's latency (p99).
- **HTTP, a session (2025-11-25), 32 client threads.** Ours under gunicorn
  against the SDK's ``MCPServer`` with sessions and JSON answers
  (``stateless_http=False``): each client thread opens a session of its own
  (``initialize``, ``notifications/initialized``) before the clock, then calls
  with its ``Mcp-Session-Id``.
- **stdio round trip.** Our ``run_stdio`` server against the SDK's stdio
  server, driven by the same client, a ``JsonRpcClient`` over
  ``StdioTransport`` (``initialize``, then ``tools/call`` as plain requests):
  sequential from one thread, and from 16 threads.
- **First answer.** From spawning the server (``python -S``, the package and
  its dependencies on ``PYTHONPATH``, as case 7) to reading its answer to a
  ``tools/call`` sent after ``initialize``, over bare pipes.
"""

from __future__ import annotations

import collections
import functools
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Deque, Dict, List, Optional

import requests

from benchmarks.cases import (
    ROOT,
    Sample,
    _ms_row,
    _readline_within,
    _startup_env,
    make_row,
    run_interleaved,
    sequential,
    threaded,
)
from jsonrpc_threads import JsonRpcClient, StdioTransport

HERE = Path(__file__).resolve().parent
PEERS = str(HERE / "server_peers.py")
OUR_SCRIPT = str(HERE / "server_app.py")
#: The WSGI app of ours the HTTP servers load.
OUR_APP = "benchmarks.server_app:app"
#: Caller threads of the HTTP rows, and the threads of each WSGI server.
HTTP_CLIENTS = 32
#: Caller threads of the concurrent stdio row.
STDIO_THREADS = 16
#: The stateless era's protocol version, and the session era's.
STATELESS_VERSION = "2026-07-28"
SESSION_VERSION = "2025-11-25"
TEXT = "hello"
#: What one call may take; how long a server gets to listen, and to stop.
CALL_TIMEOUT_S = 30.0
START_S = 60.0
STOP_S = 15.0

_CLIENT_INFO = {"name": "bench-client", "version": "1"}


# -- the servers --------------------------------------------------------------------------------


class HttpServer:
    """A server as a child process in a session of its own; its URL from its output.  ``close()`` stops it."""

    def __init__(self, argv: List[str], pattern: str, from_stderr: bool, json_only: bool = False) -> None:
        env = dict(os.environ)
        env["BENCH_JSON_RESPONSE"] = "1" if json_only else "0"
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
        self.proc = subprocess.Popen(
            argv,
            cwd=str(ROOT),
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL if from_stderr else subprocess.PIPE,
            stderr=subprocess.PIPE if from_stderr else subprocess.DEVNULL,
            start_new_session=True,
        )
        stream = self.proc.stderr if from_stderr else self.proc.stdout
        assert stream is not None
        self._stream = stream
        self.tail: Deque[str] = collections.deque(maxlen=50)
        self._found: Optional[str] = None
        self._listening = threading.Event()
        self._pattern = re.compile(pattern)
        self._drain = threading.Thread(target=self._read, name="bench-server-output", daemon=True)
        self._drain.start()
        if not self._listening.wait(START_S) or self._found is None:
            self.close()
            raise RuntimeError(f"{argv[:4]} did not start listening:\n" + "\n".join(self.tail))
        self.url: str = self._found

    def _read(self) -> None:
        for raw in self._stream:
            line = raw.decode("utf-8", "replace").rstrip()
            self.tail.append(line)
            found = self._pattern.search(line)
            if found and self._found is None:
                self._found = found.group(1)
                self._listening.set()
        self._listening.set()

    def close(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(STOP_S)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(STOP_S)
        self._drain.join(STOP_S)
        self._stream.close()


def gunicorn_server(json_only: bool = False) -> HttpServer:
    argv = [
        sys.executable, "-m", "gunicorn", "-k", "gthread", "--workers", "1", "--threads", str(HTTP_CLIENTS),
        "--bind", "127.0.0.1:0", "--log-level", "info", OUR_APP,
    ]  # fmt: skip
    return HttpServer(argv, r"Listening at: (http://[\d.:]+)", from_stderr=True, json_only=json_only)


def waitress_server(json_only: bool = False) -> HttpServer:
    argv = [sys.executable, "-m", "waitress", f"--threads={HTTP_CLIENTS}", "--listen=127.0.0.1:0", OUR_APP]
    return HttpServer(argv, r"Serving on (http://[\d.:]+)", from_stderr=True, json_only=json_only)


def peer_server(kind: str, session: bool = False) -> HttpServer:
    argv = [sys.executable, PEERS, kind, "http"] + (["--session"] if session else [])
    return HttpServer(argv, r"listening on (http://[\d.:]+)/mcp", from_stderr=False)


# -- the common HTTP client -------------------------------------------------------------------------


def _text_of(answer: requests.Response) -> str:
    """The echoed text of a tools/call answer: a JSON body, or the last ``data:`` line of an SSE one."""
    answer.raise_for_status()
    if answer.headers.get("content-type", "").startswith("text/event-stream"):
        data = [line[5:].strip() for line in answer.text.splitlines() if line.startswith("data:")]
        message = json.loads([d for d in data if d][-1])
    else:
        message = answer.json()
    return str(message["result"]["content"][0]["text"])


class HttpCaller:
    """Posts ``tools/call`` of ``echo``: a keep-alive session per calling thread.  Thread-safe.

    In the stateless era every request carries its ``_meta`` and headers; in
    the session era each thread opens its own session on its first call.
    """

    def __init__(self, base_url: str, stateless: bool, name: str = "") -> None:
        self.name = name
        self.url = base_url + "/mcp"
        self.stateless = stateless
        self._lock = threading.Lock()  # guards _by_thread
        self._by_thread: Dict[str, requests.Session] = {}

    def _connection(self) -> requests.Session:
        # Keyed by the thread's name (threaded() names them bench-caller-N, new threads each
        # round): the same 32 connections (and sessions) serve every round.  One per thread
        # object would leave the connections of past rounds open, and waitress accepts no
        # more than 100 connections (its connection_limit): the fourth round's waited.
        key = threading.current_thread().name
        with self._lock:
            http = self._by_thread.get(key)
        if http is None:
            http = requests.Session()
            http.headers.update({"Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
            if self.stateless:
                http.headers.update({"MCP-Protocol-Version": STATELESS_VERSION})
            else:
                self._open_session(http)
            with self._lock:
                self._by_thread[key] = http
        return http

    def _open_session(self, http: requests.Session) -> None:
        params = {"protocolVersion": SESSION_VERSION, "capabilities": {}, "clientInfo": _CLIENT_INFO}
        body = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}
        answer = http.post(self.url, json=body, timeout=CALL_TIMEOUT_S)
        answer.raise_for_status()
        http.headers.update(
            {"Mcp-Session-Id": answer.headers["mcp-session-id"], "MCP-Protocol-Version": SESSION_VERSION}
        )
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        http.post(self.url, json=note, timeout=CALL_TIMEOUT_S).raise_for_status()

    def call(self) -> str:
        http = self._connection()
        params: Dict[str, Any] = {"name": "echo", "arguments": {"text": TEXT}}
        headers = None
        if self.stateless:
            params["_meta"] = {
                "io.modelcontextprotocol/protocolVersion": STATELESS_VERSION,
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": _CLIENT_INFO,
            }
            headers = {"Mcp-Method": "tools/call", "Mcp-Name": "echo"}
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
        try:
            text = _text_of(http.post(self.url, json=body, headers=headers, timeout=CALL_TIMEOUT_S))
        except requests.RequestException as exc:
            raise RuntimeError(f"{self.name or self.url}: {exc!r}") from exc
        if text != TEXT:
            raise RuntimeError(f"echo answered {text!r}")
        return text

    def close(self) -> None:
        with self._lock:
            sessions, self._by_thread = list(self._by_thread.values()), {}
        for http in sessions:
            http.close()


# -- stdio ----------------------------------------------------------------------------------------------


class StdioCaller:
    """A ``JsonRpcClient`` over ``StdioTransport`` to one server: ``initialize``, then ``tools/call`` requests."""

    def __init__(self, argv: List[str]) -> None:
        self.client = JsonRpcClient(StdioTransport(argv))
        params = {"protocolVersion": SESSION_VERSION, "capabilities": {}, "clientInfo": _CLIENT_INFO}
        self.client.call("initialize", params, timeout=START_S)
        self.client.notify("notifications/initialized")

    def call(self) -> str:
        result = self.client.call("tools/call", {"name": "echo", "arguments": {"text": TEXT}}, timeout=CALL_TIMEOUT_S)
        text = str(result["content"][0]["text"])
        if text != TEXT:
            raise RuntimeError(f"echo answered {text!r}")
        return text

    def close(self) -> None:
        self.client.close()


def _first_answer(argv: List[str], env: Dict[str, str]) -> float:
    """Seconds from spawning a server to reading its answer to a ``tools/call`` sent after ``initialize``."""
    params = {"protocolVersion": SESSION_VERSION, "capabilities": {}, "clientInfo": _CLIENT_INFO}
    initialize = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}).encode() + b"\n"
    initialized = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode() + b"\n"
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": TEXT}}}
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write(initialize)
        proc.stdin.flush()
        if "result" not in json.loads(_readline_within(proc.stdout, START_S)):
            raise RuntimeError(f"{argv}: initialize failed")
        proc.stdin.write(initialized + json.dumps(call).encode() + b"\n")
        proc.stdin.flush()
        answer = json.loads(_readline_within(proc.stdout, START_S))
        elapsed = time.perf_counter() - start
        if answer.get("id") != 2 or answer["result"]["content"][0]["text"] != TEXT:
            raise RuntimeError(f"{argv}: unexpected answer {answer!r}")
    finally:
        proc.stdin.close()
        try:
            proc.wait(STOP_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.stdout.close()
    return elapsed


# -- the case ----------------------------------------------------------------------------------------------


def _http_rows(sizes: Dict[str, Any], sched: str, have_fastmcp: bool) -> List[Dict[str, Any]]:
    rounds, total = sizes["rounds"], sizes["server_http_total"]
    rows: List[Dict[str, Any]] = []
    servers: Dict[str, HttpServer] = {}
    callers: Dict[str, HttpCaller] = {}
    try:
        servers["sdk"] = peer_server("sdk")
        if have_fastmcp:
            servers["fastmcp"] = peer_server("fastmcp")
        servers["gunicorn"] = gunicorn_server(json_only=True)
        servers["waitress"] = waitress_server(json_only=True)
        servers["default"] = gunicorn_server()
        for name, server in servers.items():
            callers[name] = HttpCaller(server.url, stateless=True, name=name)
            callers[name].call()
        variants: Dict[str, Callable[[], Sample]] = {
            name: functools.partial(threaded, caller.call, HTTP_CLIENTS, total) for name, caller in callers.items()
        }
        results = run_interleaved(variants, rounds)  # type: ignore[arg-type]
        case = f"12 MCP server, HTTP tools/call, stateless, {HTTP_CLIENTS} threads"
        rows.append(make_row(case, sched, "SDK MCPServer under uvicorn", "baseline", results["sdk"]))
        if have_fastmcp:
            rows.append(make_row(case, sched, "FastMCP under uvicorn", "baseline", results["fastmcp"]))
        label = f"McpServer.wsgi_app(json_response=True), gunicorn gthread 1x{HTTP_CLIENTS}"
        rows.append(make_row(case, sched, label, "subject", results["gunicorn"]))
        label = f"McpServer.wsgi_app(json_response=True), waitress {HTTP_CLIENTS} threads"
        rows.append(make_row(case, sched, label, "subject", results["waitress"]))
        label = f"McpServer.wsgi_app() (defaults: the run on the app's pool), gunicorn gthread 1x{HTTP_CLIENTS}"
        rows.append(make_row(case, sched, label, "subject", results["default"]))
    finally:
        for caller in callers.values():
            caller.close()
        for server in servers.values():
            server.close()
    servers.clear()
    callers.clear()
    try:  # the session era: ours and the SDK's, each client thread with a session of its own
        servers["sdk"] = peer_server("sdk", session=True)
        servers["gunicorn"] = gunicorn_server(json_only=True)
        for name, server in servers.items():
            callers[name] = HttpCaller(server.url, stateless=False, name=f"{name} (session)")
        total = sizes["server_session_total"]
        variants = {
            name: functools.partial(threaded, caller.call, HTTP_CLIENTS, total) for name, caller in callers.items()
        }
        results = run_interleaved(variants, rounds)  # type: ignore[arg-type]
        case = f"12 MCP server, HTTP tools/call, session, {HTTP_CLIENTS} threads"
        rows.append(make_row(case, sched, "SDK MCPServer under uvicorn (sessions)", "baseline", results["sdk"]))
        label = f"McpServer.wsgi_app(json_response=True), gunicorn gthread 1x{HTTP_CLIENTS}"
        rows.append(make_row(case, sched, label, "subject", results["gunicorn"]))
    finally:
        for caller in callers.values():
            caller.close()
        for server in servers.values():
            server.close()
    return rows


def _stdio_rows(sizes: Dict[str, Any], sched: str) -> List[Dict[str, Any]]:
    rounds = sizes["rounds"]
    rows: List[Dict[str, Any]] = []
    callers: Dict[str, StdioCaller] = {}
    try:
        callers["sdk"] = StdioCaller([sys.executable, PEERS, "sdk", "stdio"])
        callers["ours"] = StdioCaller([sys.executable, OUR_SCRIPT])
        for caller in callers.values():
            caller.call()
        for threads in (1, STDIO_THREADS):
            total = sizes["server_stdio_seq"] if threads == 1 else sizes["server_stdio_total"]
            if threads == 1:
                variants = {name: functools.partial(sequential, c.call, total) for name, c in callers.items()}
            else:
                variants = {name: functools.partial(threaded, c.call, threads, total) for name, c in callers.items()}
            results = run_interleaved(variants, rounds)  # type: ignore[arg-type]
            case = "12 MCP server, stdio tools/call, " + ("sequential" if threads == 1 else f"{threads} threads")
            rows.append(make_row(case, sched, "SDK MCPServer.run('stdio')", "baseline", results["sdk"]))
            rows.append(make_row(case, sched, "McpServer.run_stdio()", "subject", results["ours"]))
    finally:
        for caller in callers.values():
            caller.close()
    return rows


def _first_answer_rows(sizes: Dict[str, Any], sched: str) -> List[Dict[str, Any]]:
    runs = sizes["server_first_runs"]
    env = _startup_env()
    commands = {
        "sdk": [sys.executable, "-S", PEERS, "sdk", "stdio"],
        "ours": [sys.executable, "-S", OUR_SCRIPT],
    }

    def first(argv: List[str]) -> Sample:
        return Sample(sum(_first_answer(argv, env) for _ in range(runs)) / runs * 1e6)

    variants = {name: functools.partial(first, argv) for name, argv in commands.items()}
    results = run_interleaved(variants, sizes["rounds"])  # type: ignore[arg-type]
    case = "12 MCP server, stdio first answer"
    return [
        _ms_row(case, sched, "SDK MCPServer: spawn to tools/call answered", "baseline", results["sdk"]),
        _ms_row(case, sched, "McpServer: spawn to tools/call answered", "subject", results["ours"]),
    ]


def server_cases(sizes: Dict[str, Any], sched: str) -> List[Dict[str, Any]]:
    """Case 12: McpServer against the SDK's MCPServer (and FastMCP) over HTTP and stdio, and their first answer."""
    import importlib.util  # noqa: PLC0415

    have_fastmcp = importlib.util.find_spec("fastmcp") is not None
    rows = _http_rows(sizes, sched, have_fastmcp)
    rows.extend(_stdio_rows(sizes, sched))
    rows.extend(_first_answer_rows(sizes, sched))
    return rows


__all__ = ["HttpCaller", "StdioCaller", "server_cases"]
