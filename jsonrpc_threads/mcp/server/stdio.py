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

from typing import Any, Dict, Optional

from ...messages import encode
from ...serving.context import current_connection, current_request_id
from .engine import Engine, Incoming
from .sessions import Session

__all__ = ["LineConnection"]


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
