"""A tiny A2A agent (v1.0, JSON-RPC binding) over HTTP on 127.0.0.1: the peer of the README's A2A example.

Theory of operation.  ``ExampleAgent`` listens on 127.0.0.1 (a free port by
default) and serves from threads of the calling process, one per connection
(the standard library's ``ThreadingHTTPServer``):

- ``GET /.well-known/agent-card.json``: its card: one JSON-RPC interface of
  A2A 1.0, at ``/rpc``, that streams (``capabilities.streaming``);
- ``POST /rpc``: one JSON-RPC 2.0 request per POST: ``SendMessage``,
  ``SendStreamingMessage``, ``GetTask``, ``ListTasks``, ``CancelTask`` and
  ``SubscribeToTask``, answered as A2A 1.0 spells them (results wrapped:
  ``{"task": ...}``, ``{"message": ...}``; states ``TASK_STATE_WORKING``).
  A streaming method is answered with an SSE stream (``text/event-stream``)
  of JSON-RPC responses, all with the request's id, one per event, which ends
  after the task's final status; every other answer is ``application/json``.

What it does with a message, by its text:

- ``report ...``: a task: ``submitted``, then ``working`` ("looking at the
  numbers"), then an artifact ``report`` written word by word (``Sales ``,
  ``grew ``, ``12%``, ``WORD_DELAY_S`` apart), then ``completed``;
- ``forever``: a task that stays ``working`` until it is canceled;
- anything else: a Message at once, ``you said: TEXT``.

Each task runs on a thread of its own; ``CancelTask`` cancels it at once (the
task answered is ``canceled``), and a task that ended cannot be canceled
(``TaskNotCancelable``).  ``SendMessage`` answers once the task is done
(unless ``configuration.returnImmediately``), waiting at most
``SEND_WAIT_S``.  A message that names a ``taskId`` is refused: this agent
takes no follow-up messages.  Tasks live in memory; there is no
authentication and no TLS: an example, so that the README's calls run as
written.  A real agent is reached by its own URL, with your credentials.

``with ExampleAgent() as url:`` serves while the block runs and gives the
agent's base URL (what ``A2aClient`` takes); leaving it cancels the tasks,
drops the connections and joins every thread, each step bounded.
``python -m jsonrpc_threads.examples.a2a_agent`` prints the URL and serves
until interrupted.

Thread-safety: ``ExampleAgent.close`` may be called from any thread, more
than once; the tasks' table is guarded by one condition.
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import threading
import uuid
from datetime import datetime, timezone
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Dict, Iterator, List, Optional, Set, Union

from jsonrpc_threads.a2a import TaskNotCancelable, TaskNotFound, UnsupportedOperation
from jsonrpc_threads.errors import InvalidParams, InvalidRequest, JsonRpcError, MethodNotFound, ParseError

HOST = "127.0.0.1"
#: Where the JSON-RPC interface is, under the agent's URL.
RPC_PATH = "/rpc"
#: Where the card is, under the agent's URL.
CARD_PATH = "/.well-known/agent-card.json"
#: The words of the report a ``report`` task writes, one artifact chunk each.
REPORT = ("Sales ", "grew ", "12%")
#: The pause before each step of a task (as a model takes its time; a cancel wakes it).
WORD_DELAY_S = 0.05
#: The longest ``SendMessage`` waits for its task to be done before answering it as it stands.
SEND_WAIT_S = 60.0
#: The largest request body accepted (bytes).
MAX_BODY_BYTES = 1024 * 1024
#: How long a connection may sit idle before the server drops it.
IDLE_TIMEOUT_S = 30.0
#: ``close()``: how long it waits for each thread (a task's, the server's).
CLOSE_JOIN_S = 5.0
#: How often the serving thread looks whether it should stop (``close()`` waits up to this long for it).
POLL_INTERVAL_S = 0.05

SUBMITTED, WORKING, COMPLETED, CANCELED = (
    "TASK_STATE_SUBMITTED",
    "TASK_STATE_WORKING",
    "TASK_STATE_COMPLETED",
    "TASK_STATE_CANCELED",
)
#: States after which a task changes no more, and its streams end.
FINAL_STATES = frozenset({COMPLETED, CANCELED, "TASK_STATE_FAILED", "TASK_STATE_REJECTED"})


def _now() -> str:
    return datetime.now(timezone.utc).isoformat().replace("+00:00", "Z")


def _agent_message(text: str, context_id: str, task_id: Optional[str] = None) -> Dict[str, Any]:
    message = {"messageId": str(uuid.uuid4()), "contextId": context_id, "role": "ROLE_AGENT", "parts": [{"text": text}]}
    if task_id is not None:
        message["taskId"] = task_id
    return message


class _Task:
    """One task: what ``GetTask`` shows of it, and the events its streams carry (under the agent's condition)."""

    def __init__(self, task_id: str, context_id: str, message: Dict[str, Any]) -> None:
        self.id = task_id
        self.context_id = context_id
        self.status: Dict[str, Any] = {"state": SUBMITTED, "timestamp": _now()}
        self.artifacts: List[Dict[str, Any]] = []
        self.history: List[Dict[str, Any]] = [message]
        self.events: List[Dict[str, Any]] = []  # each a stream's result, wrapped, in order
        self.canceled = threading.Event()  # wakes the task's thread
        self.thread: Optional[threading.Thread] = None

    @property
    def final(self) -> bool:
        return self.status["state"] in FINAL_STATES

    def snapshot(self, history_length: Optional[int] = None) -> Dict[str, Any]:
        task: Dict[str, Any] = {"id": self.id, "contextId": self.context_id, "status": dict(self.status)}
        if self.artifacts:
            task["artifacts"] = [dict(a, parts=list(a["parts"])) for a in self.artifacts]
        history = self.history if history_length is None else self.history[len(self.history) - history_length :]
        if history_length != 0:
            task["history"] = list(history)
        return task


class _Agent:
    """The agent's behaviour: its tasks, and the JSON-RPC methods over them (no HTTP here)."""

    def __init__(self) -> None:
        self._changed = threading.Condition()  # guards _tasks, every task's fields, _closed
        self._tasks: Dict[str, _Task] = {}
        self._closed = False

    # -- the methods --------------------------------------------------------------------------

    def send(self, params: Dict[str, Any]) -> Dict[str, Any]:
        """``SendMessage``: the Message, or the task (once done, unless ``returnImmediately``)."""
        started = self._start(params)
        if not isinstance(started, _Task):
            return started
        configuration = params.get("configuration")
        with self._changed:
            if not (isinstance(configuration, dict) and configuration.get("returnImmediately") is True):
                self._changed.wait_for(lambda: started.final or self._closed, SEND_WAIT_S)
            return {"task": started.snapshot()}

    def stream(self, params: Dict[str, Any]) -> Iterator[Dict[str, Any]]:
        """``SendStreamingMessage``: the Message alone, or the task's events from the start."""
        started = self._start(params)
        if not isinstance(started, _Task):
            return iter([started])
        return self._follow(started, 0, None)

    def _start(self, params: Dict[str, Any]) -> Union[Dict[str, Any], _Task]:
        """The Message that answers a plain message, or the task a ``report`` or ``forever`` starts."""
        message = params.get("message")
        if not isinstance(message, dict) or not isinstance(message.get("parts"), list):
            raise InvalidParams("'message' must be a Message with a list of parts")
        if message.get("taskId") is not None:
            raise UnsupportedOperation("this example agent takes no follow-up messages to a task")
        text = "".join(p["text"] for p in message["parts"] if isinstance(p, dict) and isinstance(p.get("text"), str))
        context_id = message.get("contextId") or str(uuid.uuid4())
        command = text.split()[:1]
        if command not in (["report"], ["forever"]):
            return {"message": _agent_message(f"you said: {text}", context_id)}
        task = _Task(str(uuid.uuid4()), context_id, dict(message, contextId=context_id))
        with self._changed:
            if self._closed:
                raise UnsupportedOperation("the agent is closing")
            self._tasks[task.id] = task
            task.events.append({"task": task.snapshot()})
            task.thread = threading.Thread(
                target=self._work, args=(task, command == ["forever"]), name=f"example-a2a-task[{task.id[:8]}]"
            )
            task.thread.start()
        return task

    def get(self, params: Dict[str, Any]) -> Dict[str, Any]:
        """``GetTask``: the task as it stands."""
        length = params.get("historyLength")
        if length is not None and (not isinstance(length, int) or isinstance(length, bool) or length < 0):
            raise InvalidParams("'historyLength' must be an int >= 0")
        with self._changed:
            return self._find(params).snapshot(length)

    def list(self, params: Dict[str, Any]) -> Dict[str, Any]:
        """``ListTasks``: every task (one page), of a context and a state when asked, the newest first."""
        with self._changed:
            tasks = [
                task.snapshot(0)
                for task in reversed(list(self._tasks.values()))
                if params.get("contextId") in (None, task.context_id)
                and params.get("status") in (None, task.status["state"])
            ]
        return {"tasks": tasks, "nextPageToken": "", "pageSize": len(tasks), "totalSize": len(tasks)}

    def cancel(self, params: Dict[str, Any]) -> Dict[str, Any]:
        """``CancelTask``: the task, canceled now.

        Raises:
            TaskNotFound: no such task.
            TaskNotCancelable: the task ended already.
        """
        with self._changed:
            task = self._find(params)
            if task.final:
                raise TaskNotCancelable(f"task {task.id} is {task.status['state']}: it cannot be canceled")
            self._set_status(task, CANCELED)
            return task.snapshot()

    def subscribe(self, params: Dict[str, Any]) -> Iterator[Dict[str, Any]]:
        """``SubscribeToTask``: the task as it stands, then its new events (refused once it ended).

        Raises:
            TaskNotFound: no such task.
            UnsupportedOperation: the task ended already.
        """
        with self._changed:
            task = self._find(params)
            if task.final:
                raise UnsupportedOperation(f"task {task.id} is {task.status['state']}: nothing to follow")
            return self._follow(task, len(task.events), {"task": task.snapshot()})

    def _follow(self, task: _Task, index: int, first: Optional[Dict[str, Any]]) -> Iterator[Dict[str, Any]]:
        """A stream: ``first`` (when given), then the task's events from ``index`` up to its final status."""
        if first is not None:
            yield first
        while True:
            with self._changed:
                while len(task.events) <= index and not self._closed:
                    self._changed.wait()
                if len(task.events) <= index:
                    return  # the agent is closing
                event = task.events[index]
            index += 1
            yield event
            if event.get("statusUpdate", {}).get("status", {}).get("state") in FINAL_STATES:
                return

    # -- the tasks ----------------------------------------------------------------------------

    def _work(self, task: _Task, forever: bool) -> None:
        """A task's thread: work, then complete; every step ends at once when the task is canceled."""
        if task.canceled.wait(WORD_DELAY_S):
            return
        with self._changed:
            self._set_status(task, WORKING, "looking at the numbers")
        if forever:
            task.canceled.wait()  # set by CancelTask, or by close()
            return
        for number, word in enumerate(REPORT):
            if task.canceled.wait(WORD_DELAY_S):
                return
            with self._changed:
                self._add_chunk(task, word, append=number > 0, last=number == len(REPORT) - 1)
        with self._changed:
            self._set_status(task, COMPLETED)

    def _set_status(self, task: _Task, state: str, text: Optional[str] = None) -> None:
        """(Under the condition.) A new status for a task that has not ended, and its event."""
        if task.final:
            return
        task.status = {"state": state, "timestamp": _now()}
        if text is not None:
            task.status["message"] = _agent_message(text, task.context_id, task.id)
        if task.final:
            task.canceled.set()
        update = {"taskId": task.id, "contextId": task.context_id, "status": dict(task.status)}
        task.events.append({"statusUpdate": update})
        self._changed.notify_all()

    def _add_chunk(self, task: _Task, text: str, *, append: bool, last: bool) -> None:
        """(Under the condition.) One more chunk of the report, and its event."""
        if task.final:
            return
        if not append or not task.artifacts:
            task.artifacts = [{"artifactId": "report", "name": "report", "parts": []}]
        task.artifacts[0]["parts"].append({"text": text})
        artifact = {"artifactId": "report", "name": "report", "parts": [{"text": text}]}
        update = {"taskId": task.id, "contextId": task.context_id, "artifact": artifact, "append": append}
        task.events.append({"artifactUpdate": dict(update, lastChunk=last)})
        self._changed.notify_all()

    def _find(self, params: Dict[str, Any]) -> _Task:
        """(Under the condition.) The task ``params["id"]`` names."""
        task_id = params.get("id")
        task = self._tasks.get(task_id) if isinstance(task_id, str) else None
        if task is None:
            raise TaskNotFound(f"no task {params.get('id')!r}")
        return task

    def close(self) -> None:
        """Cancel every task still running, wake every stream, and join the tasks' threads (bounded)."""
        with self._changed:
            self._closed = True
            tasks = list(self._tasks.values())
            for task in tasks:
                self._set_status(task, CANCELED)
            self._changed.notify_all()
        for task in tasks:
            if task.thread is not None:
                task.thread.join(CLOSE_JOIN_S)


def _response(request_id: Any, result: Any) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}).encode()


def _error(request_id: Any, error: JsonRpcError) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "error": error.to_error_object()}).encode()


class _Handler(BaseHTTPRequestHandler):
    """One connection: the card on GET, JSON-RPC on POST (see the module docstring)."""

    server: _Server
    protocol_version = "HTTP/1.1"  # keep-alive: a client reuses its connection
    timeout = IDLE_TIMEOUT_S

    def setup(self) -> None:
        super().setup()
        self.server.track(self.connection, True)

    def finish(self) -> None:
        self.server.track(self.connection, False)
        super().finish()

    def do_GET(self) -> None:
        if self.path.split("?", 1)[0] != CARD_PATH:
            self._send(HTTPStatus.NOT_FOUND, b"")
            return
        self._send(HTTPStatus.OK, json.dumps(self.server.card).encode())

    def do_POST(self) -> None:
        if self.path.split("?", 1)[0] != RPC_PATH:
            self._send(HTTPStatus.NOT_FOUND, b"")
            return
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY_BYTES:
            self.close_connection = True
            self._send(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, b"")
            return
        request: Any = None
        try:
            try:
                request = json.loads(self.rfile.read(length))
            except ValueError:
                raise ParseError() from None
            if not isinstance(request, dict) or not isinstance(request.get("method"), str) or "id" not in request:
                raise InvalidRequest("this agent takes one JSON-RPC request per POST")
            params = request.get("params")
            params = params if isinstance(params, dict) else {}
            method: str = request["method"]
            streams = self.server.agent_streams
            if method in streams:
                self._stream(request["id"], streams[method](params))
                return
            answer = self.server.agent_methods.get(method)
            if answer is None:
                raise MethodNotFound(data={"method": method})
            body = _response(request["id"], answer(params))
        except JsonRpcError as exc:
            body = _error(request.get("id") if isinstance(request, dict) else None, exc)
        self._send(HTTPStatus.OK, body)

    def _stream(self, request_id: Any, events: Iterator[Dict[str, Any]]) -> None:
        """An SSE answer: each event one JSON-RPC response with the request's id; the connection ends with it."""
        self.close_connection = True
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        try:
            for event in events:
                self.wfile.write(b"data: " + _response(request_id, event) + b"\n\n")
                self.wfile.flush()
        except OSError:
            pass  # the client stopped reading (it closes a stream once it has the final event)

    def _send(self, status: HTTPStatus, body: bytes) -> None:
        self.send_response(status)
        if body:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # quiet: an example should not write a line per request


class _Server(ThreadingHTTPServer):
    daemon_threads = False  # close() joins the connection threads
    block_on_close = True

    def __init__(self, port: int, agent: _Agent) -> None:
        super().__init__((HOST, port), _Handler)
        self.url = f"http://{HOST}:{self.server_address[1]}"
        self.card = agent_card(self.url)
        self.agent_methods: Dict[str, Callable[[Dict[str, Any]], Any]] = {
            "SendMessage": agent.send,
            "GetTask": agent.get,
            "ListTasks": agent.list,
            "CancelTask": agent.cancel,
        }
        self.agent_streams: Dict[str, Callable[[Dict[str, Any]], Iterator[Dict[str, Any]]]] = {
            "SendStreamingMessage": agent.stream,
            "SubscribeToTask": agent.subscribe,
        }
        self._changed = threading.Condition()  # guards _connections
        self._connections: Set[socket.socket] = set()

    def track(self, connection: socket.socket, is_open: bool) -> None:
        with self._changed:
            if is_open:
                self._connections.add(connection)
            else:
                self._connections.discard(connection)
                self._changed.notify_all()

    def drop_connections(self, timeout: float) -> None:
        """End every connection: reads at once (answers being written still go out), then, after
        ``timeout``, writes too."""
        for how in (socket.SHUT_RD, socket.SHUT_RDWR):
            with self._changed:
                if how == socket.SHUT_RDWR:
                    self._changed.wait_for(lambda: not self._connections, timeout)
                connections = list(self._connections)
            for connection in connections:
                try:
                    connection.shutdown(how)
                except OSError:
                    pass


def agent_card(url: str) -> Dict[str, Any]:
    """The card of the agent at ``url`` (A2A 1.0): its one JSON-RPC interface, its skill, and that it streams."""
    return {
        "name": "example-agent",
        "description": "Answers a message at once; a message that starts with 'report' starts a task",
        "version": "1.0",
        "supportedInterfaces": [{"url": url + RPC_PATH, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
        "capabilities": {"streaming": True},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "report", "name": "report", "description": "Writes a short report", "tags": ["example"]}],
    }


class ExampleAgent:
    """The example agent on ``127.0.0.1:port`` (0: a free port), served by threads of this process.

    A context manager: ``with ExampleAgent() as url:`` gives the agent's base
    URL (``http://127.0.0.1:<port>``, what ``A2aClient`` takes) and closes it
    at the end.  Thread-safe: ``close`` may be called from any thread, more
    than once.

    Args:
        port: the TCP port; 0 (the default) picks a free one.

    Raises:
        OSError: the port cannot be bound (already in use).
    """

    def __init__(self, port: int = 0) -> None:
        self._agent = _Agent()
        self._server = _Server(port, self._agent)
        #: The agent's base URL: its card is at ``/.well-known/agent-card.json`` under it.
        self.url: str = self._server.url
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            args=(POLL_INTERVAL_S,),
            name=f"example-a2a-agent[{self.url}]",
            daemon=True,
        )
        self._thread.start()
        self._closed = threading.Lock()

    def close(self) -> None:
        """Stop serving: cancel the tasks, end the streams, drop the connections, join every thread (bounded)."""
        if not self._closed.acquire(blocking=False):
            return
        self._server.shutdown()
        self._agent.close()  # every stream gets its task's last event (canceled)
        self._server.drop_connections(CLOSE_JOIN_S)
        self._server.server_close()  # joins the connection threads (their sockets are shut down)
        self._thread.join(CLOSE_JOIN_S)

    def __enter__(self) -> str:
        return self.url

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m jsonrpc_threads.examples.a2a_agent", description=__doc__)
    parser.add_argument("--port", type=int, default=0, help="TCP port on 127.0.0.1 (0, the default: a free one)")
    args = parser.parse_args(argv)
    agent = ExampleAgent(args.port)
    print(agent.url, flush=True)
    try:
        threading.Event().wait()  # serve until interrupted
    except KeyboardInterrupt:
        pass
    finally:
        agent.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
