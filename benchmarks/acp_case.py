"""Case 10: one ACP prompt turn, ``AcpClient.prompt()`` against the official SDK's client used from threads.

Both clients drive the same agent (``benchmarks/acp_agent.py``, written with the
official ACP Python SDK), which answers each prompt with one
``agent_message_chunk`` per word, then ``end_turn``: a turn is one
``session/prompt`` request, :data:`PROMPT_WORDS` notifications and the answer,
and each client collects the updates of the turn before the call returns.

The baseline is the SDK's ``ClientSideConnection`` (``spawn_agent_process``) used
from threads the way sync wrappers do it: one background thread runs the event
loop; each calling thread submits ``conn.prompt(...)`` with
``asyncio.run_coroutine_threadsafe`` and blocks on ``.result(timeout)``.  With 1
and 16 caller threads, each thread prompting a session of its own.
"""

from __future__ import annotations

import asyncio
import functools
import os
import sys
import threading
from concurrent.futures import FIRST_COMPLETED, Future
from concurrent.futures import wait as futures_wait
from pathlib import Path
from typing import Any, Callable, Dict, List, cast

from benchmarks.cases import make_row, run_interleaved, threaded
from jsonrpc_threads.acp import AcpClient

AGENT_COMMAND = [sys.executable, str(Path(__file__).resolve().with_name("acp_agent.py"))]
#: Caller threads of case 10, each with a session of its own.
ACP_THREAD_COUNTS = (1, 16)
#: The prompt of every turn: the agent answers it with one chunk per word.
PROMPT = "a prompt turn of the benchmark"
PROMPT_WORDS = len(PROMPT.split())
#: What one turn may take.
TURN_TIMEOUT_S = 30.0
#: How long the SDK's agent process gets to start and answer initialize.
START_S = 30.0


class SdkClientFromThreads:
    """The official ACP SDK's client, driven from threads through one event-loop thread."""

    def __init__(self) -> None:
        from acp import spawn_agent_process  # type: ignore[import-not-found,unused-ignore]  # noqa: PLC0415

        self.updates: Dict[str, List[Any]] = {}
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="sdk-acp-event-loop", daemon=True)
        self.thread.start()
        ready: Future[Any] = Future()
        self._stop = asyncio.Event()  # replaced on the loop: see hold()
        collector = self

        class Collector:
            async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
                collector.updates.setdefault(session_id, []).append(update)

            async def request_permission(self, *args: Any, **kwargs: Any) -> Any:
                raise RuntimeError("the benchmark's agent asks no permission")

            def on_connect(self, conn: Any) -> None:
                pass

        async def hold() -> None:
            self._stop = asyncio.Event()
            async with spawn_agent_process(cast(Any, Collector()), *AGENT_COMMAND) as (conn, _process):
                await conn.initialize(protocol_version=1)
                ready.set_result(conn)
                await self._stop.wait()

        self._held = asyncio.run_coroutine_threadsafe(hold(), self.loop)
        futures_wait([ready, self._held], timeout=START_S, return_when=FIRST_COMPLETED)
        if not ready.done():
            self.close()
            raise RuntimeError("the SDK's agent connection did not start")
        self.conn = ready.result()

    def _run(self, coroutine: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(TURN_TIMEOUT_S)

    def new_session(self) -> str:
        return str(self._run(self.conn.new_session(cwd=os.getcwd(), mcp_servers=[])).session_id)

    def prompt(self, session_id: str) -> List[Any]:
        from acp import text_block  # noqa: PLC0415

        answer = self._run(self.conn.prompt(session_id=session_id, prompt=[text_block(PROMPT)]))
        if answer.stop_reason != "end_turn":
            raise RuntimeError(f"the SDK's turn ended with {answer.stop_reason}")
        return self.updates.pop(session_id, [])

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self._stop.set)
        try:
            self._held.result(START_S)
        except Exception:  # noqa: S110 - a failed start was reported already
            pass
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(START_S)
        self.loop.close()


def _by_caller(sessions: List[str], turn: Callable[[str], Any]) -> Callable[[], Any]:
    """A call for ``threaded()``: each caller thread (``bench-caller-<i>``) prompts session ``i``."""

    def call() -> Any:
        return turn(sessions[int(threading.current_thread().name.rsplit("-", 1)[1])])

    return call


def acp_cases(sizes: Dict[str, Any], sched: str) -> List[Dict[str, Any]]:
    """Case 10: a prompt turn from 1 and 16 threads, AcpClient against the SDK's client from threads."""
    rounds = sizes["rounds"]
    total = sizes["acp_total"]
    rows: List[Dict[str, Any]] = []
    ours = AcpClient(AGENT_COMMAND, default_timeout=START_S, prompt_timeout=TURN_TIMEOUT_S)
    sdk = SdkClientFromThreads()
    try:
        count = max(ACP_THREAD_COUNTS)
        our_sessions = [ours.new_session() for _ in range(count)]
        sdk_sessions = [sdk.new_session() for _ in range(count)]

        def our_turn(session_id: str) -> Any:
            return ours.prompt(session_id, PROMPT)["updates"]

        if len(our_turn(our_sessions[0])) != PROMPT_WORDS or len(sdk.prompt(sdk_sessions[0])) != PROMPT_WORDS:
            raise RuntimeError("case 10: a turn did not deliver every update")
        for threads in ACP_THREAD_COUNTS:
            results = run_interleaved(
                {
                    "sdk": functools.partial(threaded, _by_caller(sdk_sessions, sdk.prompt), threads, total),
                    "ours": functools.partial(threaded, _by_caller(our_sessions, our_turn), threads, total),
                },
                rounds,
            )
            case = f"10 ACP prompt turn, {threads} thread{'s' if threads > 1 else ''}"
            label = "official SDK's client from threads (one event loop, run_coroutine_threadsafe)"
            rows.append(make_row(case, sched, label, "baseline", results["sdk"]))
            rows.append(make_row(case, sched, "AcpClient.prompt()", "subject", results["ours"]))
    finally:
        ours.close()
        sdk.close()
    return rows


__all__ = ["ACP_THREAD_COUNTS", "PROMPT", "SdkClientFromThreads", "acp_cases"]
