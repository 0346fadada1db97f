"""Case 11: an A2A ``SendMessage`` round trip, ``A2aClient.send_message()`` against the SDK's client from threads.

Both clients talk to the same agent (``benchmarks/a2a_agent.py``, served by the
official A2A Python SDK under uvicorn on 127.0.0.1), which answers each message
at once with a Message: a round trip is one POST of ``SendMessage`` and its JSON
answer, the card fetched once before the timing starts.

The baseline is the SDK's client (``create_client``, ``ClientConfig(streaming=False)``)
used from threads the way sync wrappers do it: one background thread runs the
event loop; each calling thread submits ``client.send_message(...)`` (drained to
its one event) with ``asyncio.run_coroutine_threadsafe`` and blocks on
``.result(timeout)``.  With 1 and 16 caller threads.  The floor is a bare
``http.client`` connection per thread (kept alive) posting the same JSON-RPC
request and reading the answer's text: what the agent and HTTP cost, with no
client at all.
"""

from __future__ import annotations

import asyncio
import functools
import http.client
import json
import select
import subprocess
import sys
import threading
import uuid
from pathlib import Path
from typing import Any, Dict, List
from urllib.parse import urlsplit

from benchmarks.cases import make_row, run_interleaved, threaded
from jsonrpc_threads.a2a import A2aClient, text_of

AGENT_COMMAND = [sys.executable, str(Path(__file__).resolve().with_name("a2a_agent.py"))]
#: Caller threads of case 11.
A2A_THREAD_COUNTS = (1, 16)
#: The text of every message, and the answer the agent gives it.
MESSAGE = "a round trip of the benchmark"
ANSWER = f"echo: {MESSAGE}"
#: What one round trip may take.
CALL_TIMEOUT_S = 30.0
#: How long the agent gets to start listening, and to stop.
START_S = 30.0


class AgentServer:
    """The agent as a child process; its URL from the line it prints."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(AGENT_COMMAND, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], START_S)
        line = self.proc.stdout.readline() if ready else ""
        if not line.startswith("listening on "):
            self.close()
            raise RuntimeError(f"the A2A agent did not start: {line!r}")
        self.url = line.split()[-1]

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(START_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(START_S)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


class BareHttp:
    """The floor: an ``http.client`` connection per caller thread, the request built by hand, the answer's text read."""

    def __init__(self, url: str) -> None:
        self.address = urlsplit(url).netloc
        self._local = threading.local()
        self._connections: List[http.client.HTTPConnection] = []
        self._lock = threading.Lock()

    def send(self) -> str:
        connection = getattr(self._local, "connection", None)
        if connection is None:
            connection = self._local.connection = http.client.HTTPConnection(self.address, timeout=CALL_TIMEOUT_S)
            with self._lock:
                self._connections.append(connection)
        message = {"role": "ROLE_USER", "messageId": str(uuid.uuid4()), "parts": [{"text": MESSAGE}]}
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}})
        connection.request("POST", "/rpc", body.encode(), {"Content-Type": "application/json", "A2A-Version": "1.0"})
        answer = json.loads(connection.getresponse().read())
        return str(answer["result"]["message"]["parts"][0]["text"])

    def close(self) -> None:
        for connection in self._connections:
            connection.close()


class SdkClientFromThreads:
    """The official A2A SDK's client, driven from threads through one event-loop thread."""

    def __init__(self, url: str) -> None:
        from a2a.client import ClientConfig, create_client  # type: ignore[import-not-found,unused-ignore]  # noqa: PLC0415

        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="sdk-a2a-event-loop", daemon=True)
        self.thread.start()
        self.client = self._run(create_client(url, ClientConfig(streaming=False)))

    def _run(self, coroutine: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(CALL_TIMEOUT_S)

    def send(self) -> str:
        from a2a.types import Message, Part, Role, SendMessageRequest  # type: ignore[import-not-found,unused-ignore]  # noqa: PLC0415

        request = SendMessageRequest(
            message=Message(role=Role.ROLE_USER, message_id=str(uuid.uuid4()), parts=[Part(text=MESSAGE)])
        )

        async def one() -> Any:
            last = None
            async for event in self.client.send_message(request):
                last = event
            return last

        event = self._run(one())
        return str(event.message.parts[0].text)

    def close(self) -> None:
        try:
            self._run(self.client.close())
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(START_S)
            self.loop.close()


def a2a_cases(sizes: Dict[str, Any], sched: str) -> List[Dict[str, Any]]:
    """Case 11: a SendMessage round trip from 1 and 16 threads, A2aClient against the SDK's client from threads."""
    rounds = sizes["rounds"]
    total = sizes["a2a_total"]
    rows: List[Dict[str, Any]] = []
    agent = AgentServer()
    try:
        ours = A2aClient(agent.url, default_timeout=CALL_TIMEOUT_S)
        sdk = SdkClientFromThreads(agent.url)
        bare = BareHttp(agent.url)
        try:

            def our_send() -> str:
                return text_of(ours.send_message(MESSAGE))

            if {our_send(), sdk.send(), bare.send()} != {ANSWER}:
                raise RuntimeError("case 11: a round trip did not bring the agent's answer")
            for threads in A2A_THREAD_COUNTS:
                results = run_interleaved(
                    {
                        "sdk": functools.partial(threaded, sdk.send, threads, total),
                        "bare": functools.partial(threaded, bare.send, threads, total),
                        "ours": functools.partial(threaded, our_send, threads, total),
                    },
                    rounds,
                )
                case = f"11 A2A SendMessage, {threads} thread{'s' if threads > 1 else ''}"
                label = "official SDK's client from threads (one event loop, run_coroutine_threadsafe)"
                rows.append(make_row(case, sched, label, "baseline", results["sdk"]))
                rows.append(
                    make_row(case, sched, "http.client per thread, no client (floor)", "floor", results["bare"])
                )
                rows.append(make_row(case, sched, "A2aClient.send_message()", "subject", results["ours"]))
        finally:
            ours.close()
            sdk.close()
            bare.close()
    finally:
        agent.close()
    return rows


__all__ = ["A2A_THREAD_COUNTS", "MESSAGE", "AgentServer", "BareHttp", "SdkClientFromThreads", "a2a_cases"]
