"""An A2A agent served by the official Python SDK (``a2a-sdk``: its request handler, task store and routes).

Run as a real child process::

    python tests/peers/a2a_agent.py [--version 1.0|0.3] [--legacy-card] [--no-streaming] [--split]

It listens on 127.0.0.1 on a free port and prints one line once it accepts
connections (the test reads it; no port is guessed)::

    listening on http://127.0.0.1:PORT

The card is at ``/.well-known/agent-card.json``; the JSON-RPC endpoint at
``/rpc`` speaks v1.0 and, with the SDK's compatibility layer, v0.3 (slash
method names); the card offers the interface of ``--version`` (1.0 by
default).  ``--legacy-card`` serves a card as v0.3 agents write it (``url``,
``preferredTransport``, ``protocolVersion: "0.3.0"``; no ``supportedInterfaces``).
``--no-streaming`` declares ``capabilities.streaming: false``.  ``--split``
listens on a second port too, and prints ``interface on http://127.0.0.1:PORT2``:
the card (on the first port) puts the JSON-RPC interface there, on another origin.

Every port records the headers of each request it gets; ``GET /_seen`` (or ``/_seen.json``) answers
them as JSON (``[{"method", "path", "headers"}]``, names in lower case).

What the agent does, by the first word of the message's text:

- ``task WORDS``: a task: ``working`` (status message "working on it"), an
  artifact ``answer`` whose text is ``done: WORDS``, then ``completed``;
- ``steps N``: a task with N status updates (``step 1`` .. ``step N``, 10 ms
  apart), the artifact, then ``completed``;
- ``forever``: a task that stays ``working`` until it is canceled;
- ``ask``: a task that goes to ``input-required`` ("which one?"); the next
  message to that task completes it with the artifact ``you chose: TEXT``;
- ``fail``: a task that ends ``failed`` ("it went wrong");
- ``die``: a task that goes ``working``, then the whole server exits (code 3)
  mid-stream;
- anything else: a Message (no task): ``echo: TEXT``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import socket
import sys
from typing import Any, Dict, Iterator, List

import uvicorn
from a2a.helpers import new_task_from_user_message, new_text_message
from a2a.server.agent_execution.agent_executor import AgentExecutor
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks.inmemory_task_store import InMemoryTaskStore
from a2a.server.tasks.task_updater import TaskUpdater
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill, Part, TaskState
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

#: How long ``die`` lets its first event reach the client before the process exits.
DIE_AFTER_S = 0.2


class WordAgent(AgentExecutor):
    """The agent's behaviour (see the module docstring)."""

    async def execute(self, context: Any, event_queue: Any) -> None:
        text = context.get_user_input()
        command, _, rest = text.partition(" ")
        task = context.current_task
        if task is None and command not in ("task", "steps", "forever", "ask", "fail", "die"):
            await event_queue.enqueue_event(new_text_message(f"echo: {text}", context_id=context.context_id))
            return
        if task is None:
            task = new_task_from_user_message(context.message)
            await event_queue.enqueue_event(task)
        else:
            command, rest = "answer", text
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        if command == "ask":
            await updater.requires_input(updater.new_agent_message([Part(text="which one?")]))
            return
        if command == "answer":
            await updater.add_artifact([Part(text=f"you chose: {rest}")], name="answer")
            await updater.complete()
            return
        await updater.start_work(updater.new_agent_message([Part(text="working on it")]))
        if command == "forever":
            await asyncio.Event().wait()  # until canceled
        if command == "die":
            await asyncio.sleep(DIE_AFTER_S)
            os._exit(3)
        if command == "fail":
            await updater.failed(updater.new_agent_message([Part(text="it went wrong")]))
            return
        if command == "steps":
            for step in range(1, int(rest or "1") + 1):
                message = updater.new_agent_message([Part(text=f"step {step}")])
                await updater.update_status(TaskState.TASK_STATE_WORKING, message)
                await asyncio.sleep(0.01)
        await updater.add_artifact([Part(text=f"done: {rest}")], name="answer")
        await updater.complete()

    async def cancel(self, context: Any, event_queue: Any) -> None:
        updater = TaskUpdater(event_queue, context.task_id or "", context.context_id or "")
        await updater.cancel()


def card_for(rpc_url: str, version: str, streaming: bool) -> AgentCard:
    return AgentCard(
        name="word-agent",
        description="A small agent for the tests",
        version="1.0.0",
        capabilities=AgentCapabilities(streaming=streaming),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="words", name="words", description="Answers words", tags=["test"])],
        supported_interfaces=[AgentInterface(protocol_binding="JSONRPC", protocol_version=version, url=rpc_url)],
    )


def legacy_card(rpc_url: str, streaming: bool) -> Dict[str, Any]:
    """A card as v0.3 agents write it."""
    return {
        "name": "word-agent",
        "description": "A small agent for the tests",
        "url": rpc_url,
        "preferredTransport": "JSONRPC",
        "protocolVersion": "0.3.0",
        "version": "1.0.0",
        "capabilities": {"streaming": streaming},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "words", "name": "words", "description": "Answers words", "tags": ["test"]}],
    }


class Recorder:
    """ASGI middleware: the headers of every request, and ``GET /_seen`` to read them."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.seen: List[Dict[str, Any]] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            if scope["path"] in ("/_seen", "/_seen.json"):
                await JSONResponse(self.seen)(scope, receive, send)
                return
            headers = {key.decode("latin-1").lower(): value.decode("latin-1") for key, value in scope["headers"]}
            self.seen.append({"method": scope["method"], "path": scope["path"], "headers": headers})
        await self.app(scope, receive, send)


class QuietServer(uvicorn.Server):
    """A uvicorn server that leaves the signals alone (two of them share the process)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def bound_socket() -> socket.socket:
    # proto=IPPROTO_TCP: asyncio sets TCP_NODELAY on the connections it accepts only then
    # (else Nagle holds each answer on a kept-alive connection some 40 ms).
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    return sock


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--version", default="1.0", choices=["1.0", "0.3"])
    parser.add_argument("--legacy-card", action="store_true")
    parser.add_argument("--no-streaming", action="store_true")
    parser.add_argument("--split", action="store_true")
    args = parser.parse_args()
    for number in (signal.SIGTERM, signal.SIGINT):
        signal.signal(number, lambda *_: os._exit(0))

    main_socket = bound_socket()
    base = f"http://127.0.0.1:{main_socket.getsockname()[1]}"
    interface_socket = bound_socket() if args.split else None
    interface_base = f"http://127.0.0.1:{interface_socket.getsockname()[1]}" if interface_socket else base
    rpc_url = f"{interface_base}/rpc"
    streaming = not args.no_streaming
    card = card_for(rpc_url, args.version, streaming)
    handler = DefaultRequestHandler(agent_executor=WordAgent(), task_store=InMemoryTaskStore(), agent_card=card)
    rpc_routes = create_jsonrpc_routes(handler, "/rpc", enable_v0_3_compat=True)
    if args.legacy_card:
        served = legacy_card(rpc_url, streaming)

        async def card_endpoint(request: Request) -> JSONResponse:
            return JSONResponse(served)

        card_routes = [Route("/.well-known/agent-card.json", card_endpoint, methods=["GET"])]
    else:
        card_routes = create_agent_card_routes(card)

    servers = []
    if interface_socket is None:
        app = Recorder(Starlette(routes=[*card_routes, *rpc_routes]))
        servers.append((QuietServer(uvicorn.Config(app, log_level="warning")), main_socket))
    else:
        card_app = Recorder(Starlette(routes=card_routes))
        rpc_app = Recorder(Starlette(routes=[*card_routes, *rpc_routes]))
        servers.append((QuietServer(uvicorn.Config(card_app, log_level="warning")), main_socket))
        servers.append((QuietServer(uvicorn.Config(rpc_app, log_level="warning")), interface_socket))

    async def serve() -> None:
        await asyncio.gather(*(server.serve(sockets=[sock]) for server, sock in servers))

    # The sockets listen already: a client that connects now waits in the backlog until uvicorn accepts.
    if interface_socket is not None:
        print(f"interface on {interface_base}", flush=True)
    print(f"listening on {base}", flush=True)
    asyncio.run(serve())


if __name__ == "__main__":
    sys.exit(main())
