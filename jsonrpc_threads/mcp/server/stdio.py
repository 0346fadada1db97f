"""An McpServer over one line-framed connection: stdio (``run_stdio``) or memory (``test_client``).

Theory of operation.  The connection is ``jsonrpc_threads.server.serve``'s
loop: it reads lines, answers what is malformed, and runs each request and
notification on a worker (at most ``max_workers`` at once; a hung tool holds
only its own).  ``LineConnection.handle`` is the loop's handler: it makes an
``Incoming`` for the engine, whose notifications (progress, logs) go out on
the same output, and whose questions to the client (elicitation, sampling,
roots) are requests written there too; the client's answers come back on the
input and reach ``Session.questions`` from the loop's reader
(``LineConnection.response``), never through a worker, so a question waits
for its answer even when every worker is busy.

The connection is one session of the 2025 era (after ``initialize``), and
serves stateless-era requests (2026-07-28) alike, request by request.

Thread-safety: ``handle`` runs on many workers at once; ``response`` on the
reader; the session guards its own state.
"""

from __future__ import annotations

import threading
from typing import IO, Any, Dict, List, Optional

from ...messages import encode
from ...serving.context import current_connection, current_request_id
from .engine import Engine, Incoming
from .sessions import Session

__all__ = ["LineConnection", "LineConnections"]


class LineConnection:
    """One client's connection to an engine, over ``serve``'s line loop.  Thread-safe.

    Args:
        engine: the server's engine.
    """

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self.session = Session()

    def handle(self, method: str, params: Any) -> Any:
        """``serve``'s handler: one request or notification, on a worker."""
        connection = current_connection()
        request_id = current_request_id()
        self.session.set_announcer(connection.notify)
        if request_id is None:
            self._engine.notification(method, params, self.session)
            return None

        def send(message: Dict[str, Any]) -> None:
            if not connection.write_line(encode(message)):
                raise ConnectionError("the client's input is closed: the question was not sent")

        def ask(question: str, question_params: Dict[str, Any], timeout: Optional[float]) -> Any:
            return self.session.questions.ask(question, question_params, timeout, send)

        incoming = Incoming(
            request_id,
            method,
            params if isinstance(params, dict) else None,
            session=self.session,
            notify=connection.notify,
            ask=ask,
        )
        self.session.running(request_id, incoming.cancelled)
        try:
            return self._engine.request(incoming)
        finally:
            self.session.finished(request_id)

    def response(self, message: Any) -> None:
        """``serve``'s ``on_response``: the client answered one of the server's questions (on the reader)."""
        if isinstance(message, dict):
            self.session.questions.answer(message)

    def close(self) -> None:
        """The connection ended: cancel what runs, fail the questions waiting."""
        self.session.end()


class LineConnections:
    """The line connections of one server (stdio, memory): made, counted, ended.  Thread-safe.

    Each connection is a session of the 2025 era; the server's change
    notifications reach it (``sessions``).  The engine's task workers are kept
    while any way of serving is open (``TaskTable.attach`` / ``detach``).
    """

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._lock = threading.Lock()  # guards _open
        self._open: List[LineConnection] = []

    def sessions(self) -> List[Session]:
        """The session of every open connection."""
        with self._lock:
            return [connection.session for connection in self._open]

    def connect(self) -> LineConnection:
        """A new connection (the caller ends it with ``disconnect``)."""
        connection = LineConnection(self._engine)
        with self._lock:
            self._open.append(connection)
        self._engine.tasks.attach()
        return connection

    def disconnect(self, connection: LineConnection) -> None:
        """End a connection: its session ends; idempotent."""
        with self._lock:
            known = connection in self._open
            if known:
                self._open.remove(connection)
        connection.close()
        if known:
            self._engine.tasks.detach()

    def serve_stdio(self, stdin: Optional[IO[bytes]], stdout: Optional[IO[bytes]], max_workers: int) -> None:
        """One connection over ``jsonrpc_threads.server.serve`` until end of input."""
        from ...server import serve  # noqa: PLC0415 - the loop loads only when serving

        connection = self.connect()
        try:
            serve(
                connection.handle, stdin=stdin, stdout=stdout, max_workers=max_workers, on_response=connection.response
            )
        finally:
            self.disconnect(connection)

    def memory_transport(self, label: str, max_workers: int) -> Any:
        """One connection served in memory: the client's end of a ``MemoryTransport`` pair."""
        from ...testing import MemoryTransport  # noqa: PLC0415

        connection = self.connect()
        return MemoryTransport.serving(
            connection.handle,
            max_workers=max_workers,
            label=label,
            on_response=connection.response,
            on_exit=lambda: self.disconnect(connection),
        )
