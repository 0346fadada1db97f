"""An McpServer for the real-client tests (tests/test_mcp_server_interop.py): stdio, or a WSGI module for gunicorn.

Run as a script it serves stdio (``McpServer.run_stdio``).  Imported, it is
the module gunicorn serves (``mcp_interop_server:app``, ``app`` made when the
module loads, so ``--preload`` makes it before the fork), and ``make_server()``
gives the tests a fresh one in their own process with the events its tools set.
With ``MCP_INTEROP_WARM_UP=1`` the module's app serves one call before
gunicorn forks (its pool then has threads the forked workers do not).

Its tools: ``echo``, ``counts`` (progress), ``asks`` (elicitation),
``samples`` (sampling), ``hangs`` (never returns on its own: it waits for its
``cancelled``, then records it), ``hang_started``, ``was_cancelled`` (how many ``hangs``
runs saw it), ``pid``, ``ends_badly`` (raises a ``BaseException``); a resource, a template
with a completion, and a prompt.
"""

from __future__ import annotations

import io
import json
import os
import sys
import threading
from pathlib import Path
from typing import Any, Dict, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from jsonrpc_threads.mcp import Context, McpServer

#: How long ``hangs`` waits for its cancellation (the tests end sooner).
HANG_S = 60.0
NAME_FORM = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


class Stop(BaseException):
    """What ``ends_badly`` raises: no ``Exception``, as ``SystemExit`` is not."""


def make_server() -> Tuple[McpServer, Dict[str, threading.Event]]:
    """A fresh server and the events its tools set (``hang_started``, ``hang_cancelled``)."""
    server = McpServer("interop", version="1.2.3", instructions="Tools for the interop tests.")
    events = {"hang_started": threading.Event(), "hang_cancelled": threading.Event()}
    cancelled_runs = [0]
    lock = threading.Lock()

    @server.tool()
    def echo(text: str) -> str:
        """Say it back.

        Args:
            text: what to say.
        """
        return text

    @server.tool()
    def counts(ctx: Context, steps: int = 3) -> str:
        """Count, reporting progress at each step."""
        for step in range(steps):
            ctx.progress(step + 1, steps, f"step {step + 1}")
        return f"counted {steps}"

    @server.tool()
    def asks(ctx: Context) -> str:
        """Ask the user's name."""
        answer = ctx.elicit("Your name?", NAME_FORM, key="name")
        if answer.get("action") != "accept":
            return f"no name ({answer.get('action')})"
        return f"hello {answer['content']['name']}"

    @server.tool()
    def samples(ctx: Context, question: str) -> str:
        """Ask the client's model."""
        reply = ctx.sample([{"role": "user", "content": question}], max_tokens=50, key="llm")
        content = reply.get("content") or {}
        return f"model says {content.get('text')}"

    @server.tool()
    def hangs(ctx: Context) -> str:
        """Never return on its own: wait to be cancelled."""
        events["hang_started"].set()
        if ctx.cancelled.wait(HANG_S):
            with lock:
                cancelled_runs[0] += 1
            events["hang_cancelled"].set()
            return "cancelled"
        return "not cancelled"

    @server.tool()
    def was_cancelled(wait: float = 10.0) -> int:
        """How many runs of ``hangs`` saw their cancellation (waiting up to ``wait`` seconds for the first)."""
        events["hang_cancelled"].wait(min(wait, HANG_S))
        with lock:
            return cancelled_runs[0]

    @server.tool()
    def hang_started(wait: float = 10.0) -> bool:
        """Whether a run of ``hangs`` began (waiting up to ``wait`` seconds for it)."""
        return events["hang_started"].wait(min(wait, HANG_S))

    @server.tool()
    def pid() -> int:
        """The serving process's id."""
        return os.getpid()

    @server.tool()
    def ends_badly() -> str:
        """Raise a BaseException."""
        raise Stop("stop here")

    @server.resource("test://greeting", mime_type="text/plain", description="A greeting.")
    def greeting() -> str:
        return "hello from a resource"

    @server.resource("test://items/{item}", mime_type="text/plain")
    def item(item: str) -> str:
        return f"item {item}"

    @server.completion("test://items/{item}")
    def complete_item(argument: str, value: str, context: Dict[str, str]) -> list:  # type: ignore[type-arg]
        return [name for name in ("apple", "apricot", "banana") if name.startswith(value)]

    @server.prompt()
    def greet(name: str) -> str:
        """A greeting prompt."""
        return f"Please greet {name}."

    return server, events


def warm_up(application: Any) -> None:
    """Serve one ``tools/call`` in this process (before gunicorn's fork, with ``MCP_INTEROP_WARM_UP=1``)."""
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
    body = json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "pid", "arguments": {}, "_meta": meta}}
    ).encode()
    environ = {
        "REQUEST_METHOD": "POST",
        "PATH_INFO": "/mcp",
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "80",
        "HTTP_HOST": "127.0.0.1",
        "CONTENT_TYPE": "application/json",
        "CONTENT_LENGTH": str(len(body)),
        "wsgi.input": io.BytesIO(body),
        "HTTP_ACCEPT": "application/json, text/event-stream",
        "HTTP_MCP_PROTOCOL_VERSION": "2026-07-28",
        "HTTP_MCP_METHOD": "tools/call",
        "HTTP_MCP_NAME": "pid",
    }
    answer = b"".join(application(environ, lambda status, headers, exc_info=None: None))
    assert json.loads(answer)["result"]["structuredContent"] == {"result": os.getpid()}


server, _ = make_server()
#: What gunicorn serves: heartbeat short, so a client that goes away is noticed soon.
app = server.wsgi_app(heartbeat=0.2)
if os.environ.get("MCP_INTEROP_WARM_UP") == "1":
    warm_up(app)

if __name__ == "__main__":
    server.run_stdio()
