"""A small ACP agent written with the official Python SDK (PyPI ``agent-client-protocol``), as a real peer.

Run as a child process: ``python acp_agent.py [flags]``.  Each prompt is a
script: its text is either plain (answered with one chunk ``echo: <text>``) or
a JSON list of steps, run in order, each reporting what happened as an
``agent_message_chunk`` the test can read:

- ``{"say": TEXT}``: one chunk; ``{"chunks": N}``: N chunks ``"<i> "``;
- ``{"flood": N}``: N chunks ``"<i>,"`` as fast as the SDK sends them;
- ``{"tool": ID}``: a ``tool_call`` update, then a ``tool_call_update`` completed;
- ``{"permission": OPTIONS}``: asks ``session/request_permission`` with these
  options (``[[optionId, kind], ...]``) and says ``permission: <outcome JSON>``;
- ``{"read": PARAMS}`` / ``{"write": PARAMS}``: ``fs/*`` with these params (the
  session id added); says ``read: <content JSON>`` / ``write: ok`` or
  ``error <code>: <message>``;
- ``{"terminal": PARAMS, "then": [ACTIONS]}``: ``terminal/create``, then each of
  ``"output"``, ``"wait"``, ``"kill"``, ``"release"`` in order, saying each answer
  as ``<action>: <JSON>`` (``created: <id>`` first);
- ``{"sleep": S}``: waits S seconds, or until the session is cancelled;
- ``{"await_cancel": true}``: waits for ``session/cancel`` (never answers otherwise);
- ``{"hang": true}``: never answers, whatever comes (ignores cancel);
- ``{"exit": CODE}``: writes ``dying mid-turn`` on stderr and exits at once;
- ``{"log": TEXT}``: writes TEXT as a raw line on stdout (not JSON-RPC);
- ``{"stop": REASON}``: ends the turn with that stop reason.

A turn cancelled by ``session/cancel`` ends with ``cancelled`` at its next step;
the agent answers every ``session/cancel`` with a chunk ``cancel received``.
Flags: ``--version N`` answers ``initialize`` with protocol version N;
``--log-stdout`` writes log lines on stdout around every message it handles;
``--load`` offers ``session/load`` (replaying the session's history);
``--auth`` needs ``authenticate`` (method ``token``) before ``session/new``;
``--modes`` offers the modes ``ask`` and ``code``.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any, Dict, List, Optional
from uuid import uuid4

from acp import (
    PROTOCOL_VERSION,
    Agent,
    RequestError,
    run_agent,
    start_tool_call,
    update_agent_message_text,
    update_tool_call,
    update_user_message_text,
)
from acp.interfaces import Client
from acp.schema import PermissionOption, ToolCallUpdate

FLAGS = set(sys.argv[1:])


def _flag_value(name: str, default: int) -> int:
    args = sys.argv[1:]
    return int(args[args.index(name) + 1]) if name in args else default


def _raw_stdout(text: str) -> None:
    os.write(1, (text + "\n").encode())


class ScriptedAgent(Agent):
    _conn: Client

    def __init__(self) -> None:
        self.cancelled: Dict[str, asyncio.Event] = {}
        self.history: Dict[str, List[Dict[str, str]]] = {}
        self.authenticated = "--auth" not in FLAGS

    def on_connect(self, conn: Client) -> None:
        self._conn = conn

    def _log(self, what: str) -> None:
        if "--log-stdout" in FLAGS:
            _raw_stdout(f"[agent log] {what}")

    async def initialize(self, protocol_version: int, **kwargs: Any) -> Dict[str, Any]:
        self._log("initialize")
        answer: Dict[str, Any] = {
            "protocolVersion": _flag_value("--version", PROTOCOL_VERSION),
            "agentCapabilities": {"loadSession": "--load" in FLAGS},
            "agentInfo": {"name": "scripted-agent", "version": "1.0.0"},
            "authMethods": [{"id": "token", "name": "Token"}] if "--auth" in FLAGS else [],
        }
        capabilities = kwargs.get("client_capabilities")
        if capabilities is not None:  # what the client declared, for the test to check
            answer["clientSaw"] = capabilities.model_dump(by_alias=True, exclude_none=True)
        return answer

    async def authenticate(self, method_id: str, **kwargs: Any) -> Dict[str, Any]:
        if method_id != "token":
            raise RequestError.invalid_params({"methodId": method_id})
        self.authenticated = True
        return {}

    async def new_session(self, cwd: str, mcp_servers: Any = None, **kwargs: Any) -> Dict[str, Any]:
        self._log("new_session")
        if not self.authenticated:
            raise RequestError.auth_required()
        session_id = uuid4().hex
        self.cancelled[session_id] = asyncio.Event()
        self.history[session_id] = []
        answer: Dict[str, Any] = {"sessionId": session_id}
        if "--modes" in FLAGS:
            answer["modes"] = {
                "currentModeId": "ask",
                "availableModes": [{"id": "ask", "name": "Ask"}, {"id": "code", "name": "Code"}],
            }
        # what the client sent, for the test to check: the cwd and the MCP servers
        servers = [server.model_dump(by_alias=True, exclude_none=True) for server in mcp_servers or []]
        await self._conn.session_update(
            session_id=session_id, update=update_agent_message_text(json.dumps({"cwd": cwd, "mcpServers": servers}))
        )
        return answer

    async def load_session(self, cwd: str, session_id: str, **kwargs: Any) -> None:
        for entry in self.history.get(session_id, []):
            if entry["role"] == "user":
                await self._conn.session_update(session_id=session_id, update=update_user_message_text(entry["text"]))
            else:
                await self._conn.session_update(session_id=session_id, update=update_agent_message_text(entry["text"]))
        self.cancelled.setdefault(session_id, asyncio.Event())

    async def set_session_mode(self, session_id: str, mode_id: str, **kwargs: Any) -> Dict[str, Any]:
        await self._conn.session_update(
            session_id=session_id, update={"sessionUpdate": "current_mode_update", "currentModeId": mode_id}
        )
        return {}

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        self._log("cancel")
        self.cancelled.setdefault(session_id, asyncio.Event()).set()
        await self._conn.session_update(session_id=session_id, update=update_agent_message_text("cancel received"))

    async def prompt(self, prompt: List[Any], session_id: str, **kwargs: Any) -> Dict[str, Any]:
        self._log("prompt")
        cancelled = self.cancelled.setdefault(session_id, asyncio.Event())
        cancelled.clear()
        text = "".join(getattr(block, "text", "") for block in prompt)
        self.history.setdefault(session_id, []).append({"role": "user", "text": text})
        try:
            steps = json.loads(text)
        except ValueError:
            steps = None
        if not isinstance(steps, list):
            await self._say(session_id, f"echo: {text}")
            return {"stopReason": "end_turn"}
        for step in steps:
            if cancelled.is_set():
                return {"stopReason": "cancelled"}
            stop = await self._run(session_id, step, cancelled)
            if stop is not None:
                return {"stopReason": stop}
        return {"stopReason": "cancelled" if cancelled.is_set() else "end_turn"}

    async def _say(self, session_id: str, text: str) -> None:
        self.history[session_id].append({"role": "agent", "text": text})
        await self._conn.session_update(session_id=session_id, update=update_agent_message_text(text))

    async def _run(self, session_id: str, step: Dict[str, Any], cancelled: asyncio.Event) -> Optional[str]:
        conn = self._conn
        if "say" in step:
            await self._say(session_id, step["say"])
        elif "chunks" in step:
            for i in range(step["chunks"]):
                await self._say(session_id, f"{i} ")
        elif "flood" in step:
            for i in range(step["flood"]):
                await conn.session_update(session_id=session_id, update=update_agent_message_text(f"{i},"))
        elif "tool" in step:
            await conn.session_update(
                session_id=session_id, update=start_tool_call(step["tool"], "a tool", kind="read")
            )
            await conn.session_update(session_id=session_id, update=update_tool_call(step["tool"], status="completed"))
        elif "permission" in step:
            options = [PermissionOption(option_id=i, name=i, kind=kind) for i, kind in step["permission"]]
            answer = await conn.request_permission(
                session_id=session_id, tool_call=ToolCallUpdate(tool_call_id="call_1", title="edit"), options=options
            )
            await self._say(session_id, "permission: " + json.dumps(answer.outcome.model_dump(by_alias=True)))
        elif "read" in step:
            await self._attempt(session_id, "read", conn.read_text_file(session_id=session_id, **step["read"]))
        elif "write" in step:
            await self._attempt(session_id, "write", conn.write_text_file(session_id=session_id, **step["write"]))
        elif "terminal" in step:
            await self._terminal(session_id, step)
        elif "sleep" in step:
            try:
                await asyncio.wait_for(cancelled.wait(), step["sleep"])
            except asyncio.TimeoutError:
                pass
        elif "await_cancel" in step:
            await cancelled.wait()
        elif "hang" in step:
            await asyncio.Event().wait()
        elif "exit" in step:
            os.write(2, b"dying mid-turn\n")
            os._exit(step["exit"])
        elif "log" in step:
            _raw_stdout(step["log"])
        elif "stop" in step:
            return str(step["stop"])
        return None

    async def _attempt(self, session_id: str, what: str, call: Any) -> Any:
        try:
            answer = await call
        except RequestError as exc:
            await self._say(session_id, f"error {exc.code}: {exc}")
            return None
        content = getattr(answer, "content", None) if answer is not None else None
        await self._say(session_id, f"{what}: " + (json.dumps(content) if what == "read" else "ok"))
        return answer

    async def _terminal(self, session_id: str, step: Dict[str, Any]) -> None:
        conn = self._conn
        names = {"outputByteLimit": "output_byte_limit"}  # the SDK's keyword for the wire's name
        params = {names.get(key, key): value for key, value in step["terminal"].items()}
        created = await self._attempt(session_id, "create", conn.create_terminal(session_id=session_id, **params))
        if created is None:
            return
        terminal_id = created.terminal_id
        await self._say(session_id, f"created: {terminal_id}")
        calls = {
            "output": conn.terminal_output,
            "wait": conn.wait_for_terminal_exit,
            "kill": conn.kill_terminal,
            "release": conn.release_terminal,
        }
        for action in step.get("then", []):
            try:
                answer = await calls[action](session_id=session_id, terminal_id=terminal_id)
            except RequestError as exc:
                await self._say(session_id, f"{action} error {exc.code}: {exc}")
                continue
            dumped = answer.model_dump(by_alias=True, exclude_none=True) if answer is not None else None
            await self._say(session_id, f"{action}: {json.dumps(dumped)}")


async def main() -> None:
    await run_agent(ScriptedAgent())


if __name__ == "__main__":
    asyncio.run(main())
