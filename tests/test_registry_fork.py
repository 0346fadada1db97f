"""fork() after a ToolRegistry was made (gunicorn --preload, uWSGI, multiprocessing's fork start method).

Each test runs in a fresh interpreter that forks, over real child processes:
in the forked process the registry starts its own servers on first use (the
inherited sessions refuse, and are let go of without touching the parent's
servers), its timers and background workers work (a crash there is restarted
after its backoff), and the parent's call in flight at the fork still gets
its answer.  A parent that closes while a forked worker still runs must not
take that worker for part of its server's process tree.
"""

from __future__ import annotations

import os
from typing import List

import pytest

from .forking import run_script

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")

RUN_TIMEOUT_S = 90.0


_PRELUDE = """
from jsonrpc_threads.mcp import ToolRegistry
EXAMPLE = {"command": sys.executable, "args": ["-m", "jsonrpc_threads.examples.mcp_tool_server"]}

def call(name, arguments):
    message = registry.execute(
        {"id": "c", "type": "function", "function": {"name": name, "arguments": __import__("json").dumps(arguments)}}
    )
    return message["content"]
"""


def run(body: str) -> List[str]:
    return run_script(_PRELUDE, body, RUN_TIMEOUT_S)


def test_a_forked_process_starts_its_own_servers_and_the_parents_call_in_flight_is_answered() -> None:
    lines = run(
        """
        sent = threading.Event()

        def trace(server, message):
            if message.direction == "out" and '"slow"' in message.text:
                sent.set()

        registry = ToolRegistry.from_config({"mcpServers": {"example": EXAMPLE}}, restart_backoff=0.2, wire_trace=trace)
        registry.start()
        server = registry.status()["example"]["pid"]
        answers = []
        inflight = threading.Thread(target=lambda: answers.append(call("mcp__example__slow", {"seconds": 1.5})))
        inflight.start()
        assert sent.wait(20)
        pid = os.fork()
        if pid == 0:
            status = registry.status()["example"]
            print("child: inherited", status["state"], status["pid"])
            print("child: add", call("mcp__example__add", {"a": 1, "b": 2}))
            own = registry.status()["example"]["pid"]
            print("child: own server", own not in (None, server), "parent's alive", alive(server))
            print("child: crash", "exit code 5" in call("mcp__example__crash", {"code": 5}))
            print("child: after the restart", call("mcp__example__add", {"a": 2, "b": 2}), registry.status()["example"]["restarts"])
            registry.close()
            print("child: closed; own gone", not alive(own), "parent's alive", alive(server))
            sys.exit(0)  # a normal exit: atexit hooks run too
        os.waitpid(pid, 0)
        inflight.join(20)
        print("parent: in flight", answers)
        print("parent: server alive", alive(server), registry.status()["example"]["pid"] == server)
        print("parent: add", call("mcp__example__add", {"a": 3, "b": 4}))
        registry.close()
        print("parent: reclaimed", not alive(server))
        """  # noqa: E501 - a line of the script run in the fork
    )
    assert "child: inherited idle None" in lines
    assert "child: add 3" in lines
    assert "child: own server True parent's alive True" in lines
    assert "child: crash True" in lines
    assert "child: after the restart 4 1" in lines
    assert "child: closed; own gone True parent's alive True" in lines
    assert "parent: in flight ['waited 1.5s in 1 steps']" in lines
    assert "parent: server alive True True" in lines
    assert "parent: add 7" in lines
    assert "parent: reclaimed True" in lines


def test_a_forked_worker_leaving_without_close_leaves_the_parents_servers_alone() -> None:
    lines = run(
        """
        registry = ToolRegistry.from_config({"mcpServers": {"example": EXAMPLE}})
        registry.start()
        server = registry.status()["example"]["pid"]
        worker = os.fork()
        if worker == 0:
            sys.exit(0)  # never used the registry: only the atexit hooks and the interpreter's exit
        os.waitpid(worker, 0)
        print("parent:", alive(server), call("mcp__example__add", {"a": 1, "b": 1}))
        registry.close()
        """
    )
    assert "parent: True 2" in lines


def test_closing_in_the_parent_spares_a_forked_worker_that_holds_the_servers_pipes() -> None:
    # A worker forked after the server started holds copies of its pipes; the
    # parent's close() must reclaim the server's tree, not its own worker.
    lines = run(
        """
        from jsonrpc_threads import JsonRpcClient, StdioTransport
        client = JsonRpcClient(StdioTransport(PEER))
        server = client.transport.pid
        client.call("echo", [0])
        release_r, release_w = os.pipe()
        worker = os.fork()
        if worker == 0:
            os.close(release_w)
            os.read(release_r, 1)  # holds every inherited fd until the parent lets it go
            os._exit(0)
        os.close(release_r)
        client.close()
        print("parent: server gone", not alive(server), "worker alive", alive(worker))
        os.write(release_w, b"x")
        os.waitpid(worker, 0)
        """
    )
    assert "parent: server gone True worker alive True" in lines
