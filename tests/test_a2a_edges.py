"""A2A against a raw agent on 127.0.0.1 that misbehaves on purpose (issue 47, items 10 and 11).

The agent is a small WSGI app on wsgiref (no SDK): it serves a card, and
answers JSON-RPC the way each test needs: a stream that hands over another
task's final event, a 404 whose JSON body has an ``"error"`` member.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any, Dict, List, Optional

import pytest

from jsonrpc_threads.a2a import A2aClient
from jsonrpc_threads.errors import HttpError, ProtocolError, RemoteError, RequestTimeout

from .wsgi_support import WsgirefServer

WAIT_S = 10.0


def _task(task_id: str, state: str) -> Dict[str, Any]:
    return {"id": task_id, "contextId": "ctx-1", "status": {"state": state}}


class RawAgent:
    """A WSGI A2A agent whose answers each test sets; it records the methods called."""

    def __init__(self) -> None:
        self.card: Dict[str, Any] = {}
        self.subscribe_events: List[Dict[str, Any]] = []
        self.get_task: Optional[Dict[str, Any]] = None
        self.status = "200 OK"
        self.body: Optional[bytes] = None
        self._lock = threading.Lock()  # guards methods
        self.methods: List[str] = []

    def __call__(self, environ: Dict[str, Any], start_response: Any) -> List[bytes]:
        if environ["REQUEST_METHOD"] == "GET":
            if self.body is not None:
                start_response(self.status, [("Content-Type", "application/json")])
                return [self.body]
            body = json.dumps(self.card).encode()
            start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
            return [body]
        length = int(environ.get("CONTENT_LENGTH") or 0)
        request = json.loads(environ["wsgi.input"].read(length))
        with self._lock:
            self.methods.append(request["method"])
        if request["method"] == "SubscribeToTask":
            start_response("200 OK", [("Content-Type", "text/event-stream")])
            return [
                b"data: " + json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": event}).encode() + b"\n\n"
                for event in self.subscribe_events
            ]
        answer = {"jsonrpc": "2.0", "id": request["id"], "result": {"task": self.get_task}}
        body = json.dumps(answer).encode()
        start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
        return [body]


@pytest.fixture
def agent() -> Any:
    app = RawAgent()
    with WsgirefServer(app) as server:
        base = server.url.rsplit("/mcp", 1)[0]
        app.card = {
            "name": "raw",
            "capabilities": {"streaming": True},
            "supportedInterfaces": [{"url": f"{base}/rpc", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
        }
        yield app, base


def test_wait_never_returns_another_tasks_final_event(agent: Any) -> None:
    app, base = agent
    app.subscribe_events = [{"task": _task("other-task", "TASK_STATE_COMPLETED")}]
    app.get_task = _task("task-1", "TASK_STATE_WORKING")
    with A2aClient(base, default_timeout=WAIT_S) as client, pytest.raises(ProtocolError, match="other-task"):
        client.wait("task-1")


def test_a_subscription_refuses_events_of_another_task(agent: Any) -> None:
    app, base = agent
    app.subscribe_events = [
        {"task": _task("task-1", "TASK_STATE_WORKING")},
        {"statusUpdate": {"taskId": "other-task", "contextId": "ctx-1", "status": {"state": "TASK_STATE_COMPLETED"}}},
    ]
    with A2aClient(base, default_timeout=WAIT_S) as client:
        events = client.subscribe("task-1")
        first = next(events)
        assert first["id"] == "task-1"
        with pytest.raises(ProtocolError, match="other-task"):
            next(events)


def test_a_404_with_an_error_member_is_an_http_error_not_the_agents_refusal(agent: Any) -> None:
    app, base = agent
    app.status = "404 Not Found"
    app.body = json.dumps({"error": {"code": -32603, "message": "no such thing"}}).encode()
    with A2aClient(base, default_timeout=WAIT_S) as client, pytest.raises(HttpError) as caught:
        client.send_message("hi")
    assert not isinstance(caught.value, RemoteError)
    assert caught.value.status_code == 404


# -- issue 47, item 9: a blocking hook never holds the caller past its deadline -----------------------------

#: How far past its deadline a call may return (scheduling, on a loaded machine).
LATE_S = 0.8


@pytest.mark.parametrize("call", ["send_message", "stream_message"])
def test_a_blocking_header_provider_does_not_hold_the_caller_past_its_deadline(agent: Any, call: str) -> None:
    app, base = agent
    app.get_task = _task("task-1", "TASK_STATE_COMPLETED")
    release = threading.Event()

    def provider() -> Dict[str, str]:
        release.wait(WAIT_S)
        return {}

    client = A2aClient(base, header_provider=provider)
    try:
        started = time.monotonic()
        with pytest.raises(RequestTimeout):
            if call == "send_message":
                client.send_message("hi", timeout=1.0)
            else:
                for _ in client.stream_message("hi", timeout=1.0):
                    pass
        assert time.monotonic() - started < 1.0 + LATE_S
    finally:
        release.set()
        client.close()
