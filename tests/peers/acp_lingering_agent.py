"""An ACP agent that goes on with a turn after ``session/cancel`` reached it, as ACP allows.

The example agent (``jsonrpc_threads.examples.acp_agent``) answers everything but a
prompt whose text is ``linger``: that turn sends a word every 10 ms until the
client's ``session/cancel`` arrives, then three ``late`` words (what a real agent
flushes while it stops), and only then answers ``cancelled``.  Turns run one at a
time, as a real agent's do: a prompt that comes meanwhile waits for that answer.
"""

from __future__ import annotations

import threading
from typing import Any, Dict

from jsonrpc_threads.examples import acp_agent
from jsonrpc_threads.server import notify, serve

#: The most words the lingering turn sends while it waits for the cancel (30 s of them).
MAX_WORDS = 3000

cancelled = threading.Event()
one_turn = threading.Lock()


def _say(session_id: Any, word: str) -> None:
    update = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": word + " "}}
    notify("session/update", {"sessionId": session_id, "update": update})


def _linger(params: Dict[str, Any]) -> Dict[str, Any]:
    for _ in range(MAX_WORDS):
        if cancelled.wait(0.01):
            break
        _say(params["sessionId"], "word")
    for _ in range(3):
        _say(params["sessionId"], "late")
    cancelled.clear()
    return {"stopReason": "cancelled"}


def handle(method: str, params: Any) -> Any:
    if method == "session/cancel":
        cancelled.set()
        return acp_agent.handle(method, params)
    if method == "session/prompt":
        with one_turn:
            blocks = params.get("prompt") if isinstance(params, dict) else None
            if blocks == [{"type": "text", "text": "linger"}]:
                return _linger(params)
            return acp_agent.handle(method, params)
    return acp_agent.handle(method, params)


if __name__ == "__main__":
    serve(handle)
