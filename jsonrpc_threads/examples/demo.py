"""The main job of ``make demo``: drive the bundled tool server from several threads.

Run it with ``python -m jsonrpc_threads.examples.demo``.  It starts
``python -m jsonrpc_threads.examples.tool_server`` as a child process and shows,
in order:

1. calls from several threads at once, each answer matched to its caller;
2. progress notifications arriving while a call is still waiting;
3. a tool that hangs: the call times out, the calling thread goes on, and the
   same client keeps working;
4. ``close()`` reclaiming the process that still runs the hung tool;
5. a tool that crashes: every pending call fails at once with the exit code and
   the last words the process wrote on stderr.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any, List

import psutil

from jsonrpc_threads import JsonRpcClient, RequestTimeout, StdioTransport, TransportClosed

TOOL_SERVER = [sys.executable, "-m", "jsonrpc_threads.examples.tool_server"]


def say(text: str = "") -> None:
    print(text, flush=True)


def section(title: str) -> None:
    say()
    say(f"== {title}")


def many_threads(client: JsonRpcClient) -> None:
    section("1. Eight threads call the same server at once")
    lines: List[str] = []
    lock = threading.Lock()

    def worker(n: int) -> None:
        total = client.call("add", {"a": n, "b": 100})
        echoed = client.call("echo", {"text": f"hello from thread {n}"})
        with lock:
            lines.append(f"   thread {n}: add({n}, 100) = {total}, echo -> {echoed!r}")

    threads = [threading.Thread(target=worker, args=(n,), name=f"caller-{n}") for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for line in sorted(lines):
        say(line)
    say("   every answer reached the thread that asked for it.")


def progress(client: JsonRpcClient) -> None:
    section("2. Progress notifications while a call is running")

    def on_progress(params: Any) -> None:
        done, total = params["progress"], params["total"]
        say(f"   progress {done}/{total} " + "#" * done)

    client.on_notification("progress", on_progress)
    result = client.call("slow_count", {"to": 5, "delay": 0.1})
    say(f"   slow_count returned {result} (after all of its progress reports)")


def hung_tool(client: JsonRpcClient) -> None:
    section("3. A tool that never answers")
    start = time.monotonic()
    try:
        client.call("hang", {}, timeout=1.0)
    except RequestTimeout as exc:
        say(f"   RequestTimeout after {time.monotonic() - start:.1f}s: {exc}")
    say("   the calling thread is free again, and the same client still works:")
    say(f"   add(2, 2) = {client.call('add', {'a': 2, 'b': 2})}")


def reclaim(client: JsonRpcClient, transport: StdioTransport) -> None:
    section("4. close() reclaims the process that is still running the hung tool")
    pid = transport.pid
    say(f"   tool server pid {pid} alive: {psutil.pid_exists(pid)}")
    start = time.monotonic()
    client.close()
    say(f"   close() took {time.monotonic() - start:.2f}s; exit code {transport.returncode}")
    say("   (stdin was closed first; the hung tool kept the process alive through the")
    say("   grace period, so the whole process tree was terminated)")
    say(f"   pid {pid} alive after close(): {_alive(pid)}")


def crash() -> None:
    section("5. A tool that crashes while other calls are waiting")
    with JsonRpcClient(StdioTransport(TOOL_SERVER)) as client:
        waiting = [client.request("hang", {}, timeout=None) for _ in range(3)]
        try:
            client.call("crash", {"code": 3})
        except TransportClosed as exc:
            say(f"   the crashing call: TransportClosed, exit code {exc.returncode}")
            say(f"   stderr tail: {exc.stderr_tail.strip().splitlines()[-1]!r}")
        for n, future in enumerate(waiting, 1):
            error = future.exception(timeout=5)
            say(f"   waiting call {n}: {type(error).__name__}")
        try:
            client.call("add", {"a": 1, "b": 1})
        except TransportClosed:
            say("   a new call on the dead client fails at once with TransportClosed.")


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def main() -> int:
    say("jsonrpc_threads demo: a JSON-RPC client that never hangs the calling thread")
    say(f"tool server: {' '.join(TOOL_SERVER)}")
    transport = StdioTransport(TOOL_SERVER)
    client = JsonRpcClient(transport, default_timeout=10.0)
    try:
        many_threads(client)
        progress(client)
        hung_tool(client)
        reclaim(client, transport)
    finally:
        client.close()
    crash()
    say()
    say("done: no thread was left waiting and no process was left running.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
