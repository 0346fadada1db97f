"""The agent of case 10: written with the official ACP Python SDK; one chunk per word of each prompt.

``python benchmarks/acp_agent.py``: answers ``initialize`` and ``session/new``,
and each ``session/prompt`` with one ``agent_message_chunk`` per word of its
text, then ``end_turn``.  Both clients of the case talk to this same agent.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any, Dict, List, cast

from acp import PROTOCOL_VERSION, run_agent, update_agent_message_text  # type: ignore[import-not-found,unused-ignore]

_numbers = itertools.count(1)


class WordsAgent:
    """The SDK routes each method by name (its ``Agent`` protocol need not be subclassed)."""

    conn: Any

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def initialize(self, protocol_version: int, **kwargs: Any) -> Dict[str, Any]:
        return {"protocolVersion": PROTOCOL_VERSION, "agentInfo": {"name": "bench-agent", "version": "1"}}

    async def new_session(self, cwd: str, **kwargs: Any) -> Dict[str, Any]:
        return {"sessionId": f"session-{next(_numbers)}"}

    async def prompt(self, prompt: List[Any], session_id: str, **kwargs: Any) -> Dict[str, Any]:
        for block in prompt:
            for word in getattr(block, "text", "").split():
                await self.conn.session_update(session_id=session_id, update=update_agent_message_text(word))
        return {"stopReason": "end_turn"}


if __name__ == "__main__":
    asyncio.run(run_agent(cast(Any, WordsAgent())))
