"""fork() after a client was made (gunicorn --preload, uWSGI, multiprocessing's fork start method).

Each test runs in a fresh interpreter that forks: a forked process must not
use its parent's pipes, and its exit or close() must never reclaim processes
it did not start (the parent's server, its sibling workers).
"""

from __future__ import annotations

import os
from typing import List

import pytest

from .forking import run_script

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")

RUN_TIMEOUT_S = 60.0


def run(body: str) -> List[str]:
    return run_script(
        "from jsonrpc_threads import JsonRpcClient, StdioTransport, TransportClosed\n", body, RUN_TIMEOUT_S
    )


def test_a_forked_process_refuses_the_parents_client_and_its_exit_touches_nothing() -> None:
    lines = run(
        """
        client = JsonRpcClient(StdioTransport(PEER))
        server = client.transport.pid
        inflight = client.request("sleep", {"seconds": 0.5, "result": "for the parent"}, timeout=20)
        pid = os.fork()
        if pid == 0:
            started = time.monotonic()
            try:
                client.call("echo", ["from the child"], timeout=10)
                print("child: the call went through")
            except TransportClosed as exc:
                print("child: refused", "fork" in str(exc), time.monotonic() - started < 1.0)
            started = time.monotonic()
            client.close()
            print("child: closed", time.monotonic() - started < 1.0)
            sys.exit(0)  # a normal exit: the atexit hook runs too
        os.waitpid(pid, 0)
        print("parent:", inflight.result(20), client.call("echo", ["still here"]), alive(server))
        client.close()
        print("parent: reclaimed", not alive(server))
        """
    )
    assert "child: refused True True" in lines
    assert "child: closed True" in lines
    assert "parent: for the parent ['still here'] True" in lines
    assert "parent: reclaimed True" in lines


def test_a_forked_worker_exiting_without_close_leaves_the_server_and_its_siblings_alone() -> None:
    lines = run(
        """
        client = JsonRpcClient(StdioTransport(PEER))
        server = client.transport.pid
        client.call("echo", [0])
        go_r, go_w = os.pipe()
        sibling = os.fork()
        if sibling == 0:  # waits until its sibling is gone, then checks the server
            os.close(go_w)
            os.read(go_r, 1)
            print("sibling: server alive", alive(server))
            os._exit(0)
        worker = os.fork()
        if worker == 0:  # leaves without closing: the atexit hook, then the interpreter's exit
            sys.exit(0)
        os.waitpid(worker, 0)
        print("parent: sibling alive", alive(sibling), "server alive", alive(server))
        os.write(go_w, b"x")
        os.waitpid(sibling, 0)
        print("parent:", client.call("echo", ["after both"]))
        client.close()
        """
    )
    assert "parent: sibling alive True server alive True" in lines
    assert "sibling: server alive True" in lines
    assert "parent: ['after both']" in lines


def test_a_client_made_in_the_forked_process_works_there() -> None:
    lines = run(
        """
        parent_client = JsonRpcClient(StdioTransport(PEER))
        parent_client.call("echo", [0])
        pid = os.fork()
        if pid == 0:
            with JsonRpcClient(StdioTransport(PEER)) as own:
                print("child:", own.call("echo", ["own"]), own.request("never", timeout=0.2).exception(10).__class__.__name__)
            parent_client.close()
            os._exit(0)
        os.waitpid(pid, 0)
        print("parent:", parent_client.call("echo", ["mine"]))
        parent_client.close()
        """  # noqa: E501 - a line of the script run in the fork
    )
    assert "child: ['own'] RequestTimeout" in lines
    assert "parent: ['mine']" in lines


def test_an_http_client_in_a_forked_process_is_refused_and_leaves_the_connection_alone() -> None:
    lines = run(
        """
        from jsonrpc_threads import HttpTransport
        from jsonrpc_threads.examples.http_server import ExampleHttpServer
        with ExampleHttpServer() as server:
            client = JsonRpcClient(HttpTransport(server.url))
            print("parent:", client.call("add", {"a": 1, "b": 2}))  # a keep-alive connection now exists
            pid = os.fork()
            if pid == 0:
                try:
                    client.call("add", {"a": 1, "b": 1}, timeout=10)
                    print("child: the call went through")
                except TransportClosed as exc:
                    print("child: refused", "fork" in str(exc))
                client.close()
                os._exit(0)
            os.waitpid(pid, 0)
            print("parent again:", client.call("add", {"a": 2, "b": 2}))  # the same connection still works
            client.close()
        """
    )
    assert "parent: 3" in lines
    assert "child: refused True" in lines
    assert "parent again: 4" in lines
