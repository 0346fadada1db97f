"""The McpServer `make loadtest` serves (``--target server``): tools that answer, hang, crash and stream progress.

gunicorn imports this module once, in the master (``--preload``), before it
forks its workers: the app is made before the fork, as in a real deployment,
and each worker serves with a pool of its own.  The ``requestState`` secret
comes from ``LOADTEST_STATE_SECRET`` (the load test makes one per run), so
every worker opens the states of the others.

Tools: ``echo(text)``, ``add(a, b)``; ``progress(steps)`` (a progress
notification per step, then its result: the answer becomes an SSE stream);
``hang(seconds)`` (waits ``seconds`` and ignores its cancellation, holding a
thread as a stuck tool does); ``crash(how)`` (raises an ``Exception``, an
``isError`` result, or with ``how="base"`` a ``BaseException``, answered
``-32603``).
"""

from __future__ import annotations

import os
import threading

from jsonrpc_threads.mcp import Context, McpServer

server = McpServer("loadtest", state_secret=os.environ.get("LOADTEST_STATE_SECRET") or None)


class Crash(BaseException):
    """What ``crash(how="base")`` raises: not an ``Exception``."""


@server.tool()
def echo(text: str) -> str:
    """Echo the text back."""
    return text


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def progress(steps: int, ctx: Context) -> str:
    """Report progress ``steps`` times, then answer."""
    for step in range(1, steps + 1):
        ctx.progress(step, steps, f"step {step}")
    return f"counted {steps}"


@server.tool()
def hang(seconds: float) -> str:
    """Hold the thread ``seconds``, ignoring the request's cancellation."""
    threading.Event().wait(seconds)  # nobody sets it: a tool stuck in a call that does not look at cancelled
    return "too late"


@server.tool()
def crash(how: str = "exception") -> str:
    """Raise: an ``Exception`` (an ``isError`` result), or a ``BaseException`` with ``how="base"``."""
    if how == "base":
        raise Crash("a BaseException in a tool")
    raise RuntimeError("the tool crashed")


app = server.wsgi_app()

__all__ = ["app", "server"]
