"""The agent of case 11: served by the official A2A Python SDK; answers each message with a Message.

``python benchmarks/a2a_agent.py`` listens on a free port of 127.0.0.1, prints
``listening on http://127.0.0.1:PORT`` and answers every ``SendMessage`` at once
with a Message (``echo: TEXT``): no task, no store to grow.  Both clients of
the case talk to this same agent (its card at ``/.well-known/agent-card.json``,
its JSON-RPC endpoint at ``/rpc``).
"""

from __future__ import annotations

import socket
from typing import Any

import uvicorn  # type: ignore[import-not-found,unused-ignore]
from a2a.helpers import new_text_message  # type: ignore[import-not-found,unused-ignore]
from a2a.server.agent_execution.agent_executor import AgentExecutor  # type: ignore[import-not-found,unused-ignore]
from a2a.server.request_handlers import DefaultRequestHandler  # type: ignore[import-not-found,unused-ignore]
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes  # type: ignore[import-not-found,unused-ignore]
from a2a.server.tasks.inmemory_task_store import InMemoryTaskStore  # type: ignore[import-not-found,unused-ignore]
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill  # type: ignore[import-not-found,unused-ignore]
from starlette.applications import Starlette  # type: ignore[import-not-found,unused-ignore]


class EchoAgent(AgentExecutor):  # type: ignore[misc,unused-ignore]
    async def execute(self, context: Any, event_queue: Any) -> None:
        await event_queue.enqueue_event(new_text_message(f"echo: {context.get_user_input()}"))

    async def cancel(self, context: Any, event_queue: Any) -> None:
        raise NotImplementedError("the benchmark's agent makes no task")


def main() -> None:
    server_socket = socket.create_server(("127.0.0.1", 0))
    # What uvicorn sets on the sockets it makes itself: asyncio leaves Nagle on for accepted
    # sockets of a socket made without proto=IPPROTO_TCP (each answer then waits ~40 ms).
    server_socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    url = f"http://127.0.0.1:{server_socket.getsockname()[1]}"
    card = AgentCard(
        name="bench-agent",
        description="Echoes each message",
        version="1",
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="echo", name="echo", description="Echoes", tags=["bench"])],
        supported_interfaces=[AgentInterface(protocol_binding="JSONRPC", protocol_version="1.0", url=f"{url}/rpc")],
    )
    handler = DefaultRequestHandler(agent_executor=EchoAgent(), task_store=InMemoryTaskStore(), agent_card=card)
    app = Starlette(routes=[*create_agent_card_routes(card), *create_jsonrpc_routes(handler, "/rpc")])
    print(f"listening on {url}", flush=True)
    uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False)).run(sockets=[server_socket])


if __name__ == "__main__":
    main()
