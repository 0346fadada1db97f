"""One stdio cold start in this fresh interpreter; prints its peak memory (KiB, ``VmHWM``) on stdout.

Usage: ``python -S benchmarks/cold_start.py ours|bare``, with the package on
``PYTHONPATH`` (see :func:`benchmarks.cases.startup_cases`).  Both variants
start the same child, ``benchmarks/echo_server.py``, send it ``initialize`` and
one ``echo``, and close it:

- ``ours``: ``JsonRpcClient(StdioTransport(...))``, two ``call()``, ``close()``
  (close stdin, wait for the exit, reap);
- ``bare``: ``subprocess.Popen``, a write and a readline per message, close
  stdin, ``wait()``.

The time is measured by the parent, from spawning this interpreter to its exit.
"""

from __future__ import annotations

import os
import sys

ECHO_SERVER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "echo_server.py")
#: The child, started the same way by both variants (no site: it needs nothing but the stdlib).
CHILD = [sys.executable, "-S", ECHO_SERVER]
INITIALIZE = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}
ECHO = {"text": "hello", "n": 1}
#: Seconds either variant may wait for an answer.
ANSWER_TIMEOUT_S = 30.0


def ours() -> None:
    from jsonrpc_threads import JsonRpcClient, StdioTransport  # noqa: PLC0415  (the import is what is measured)

    with JsonRpcClient(StdioTransport(CHILD), default_timeout=ANSWER_TIMEOUT_S) as client:
        client.call("initialize", INITIALIZE)
        client.call("echo", ECHO)


def bare() -> None:
    import json  # noqa: PLC0415
    import subprocess  # noqa: PLC0415

    proc = subprocess.Popen(CHILD, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    assert proc.stdin is not None and proc.stdout is not None
    for request_id, (method, params) in enumerate((("initialize", INITIALIZE), ("echo", ECHO)), 1):
        message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        proc.stdin.write(json.dumps(message).encode() + b"\n")
        answer = json.loads(proc.stdout.readline())
        if answer.get("id") != request_id:
            raise RuntimeError(f"bare cold start: unexpected answer {answer!r}")
    proc.stdin.close()
    proc.wait(ANSWER_TIMEOUT_S)
    proc.stdout.close()


def peak_rss_kib() -> int:
    """This process's peak resident set (``VmHWM``), in KiB.

    Not ``getrusage().ru_maxrss``: on Linux that survives ``execve`` and so
    carries the high-water mark of the process that forked this interpreter.
    """
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    raise RuntimeError("no VmHWM in /proc/self/status")


if __name__ == "__main__":
    {"ours": ours, "bare": bare}[sys.argv[1]]()
    print(peak_rss_kib(), flush=True)
