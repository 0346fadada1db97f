"""Real WSGI servers on 127.0.0.1 for the tests: wsgiref's (threaded) and waitress, each in a thread.

Not a test module.  Each is a context manager giving the URL of the
application it serves; leaving the block stops the server and joins every
thread it started (the leak check of tests/conftest.py sees none left).
"""

from __future__ import annotations

import socketserver
import threading
from types import TracebackType
from typing import Any, Optional, Type
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

HOST = "127.0.0.1"
#: How long stopping a server may take.
STOP_TIMEOUT_S = 10.0


class _ThreadingWSGIServer(socketserver.ThreadingMixIn, WSGIServer):
    daemon_threads = False
    block_on_close = True  # server_close() joins the request threads


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


class WsgirefServer:
    """wsgiref's server with a thread per request."""

    name = "wsgiref"

    def __init__(self, app: Any) -> None:
        self._server = make_server(HOST, 0, app, server_class=_ThreadingWSGIServer, handler_class=_QuietHandler)
        self.url = f"http://{HOST}:{self._server.server_port}/mcp"
        self._thread = threading.Thread(target=self._server.serve_forever, name="test-wsgiref", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(STOP_TIMEOUT_S)

    def __enter__(self) -> WsgirefServer:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class WaitressServer:
    """waitress with a pool of threads."""

    name = "waitress"

    def __init__(self, app: Any, threads: int = 8) -> None:
        import waitress  # noqa: PLC0415 - a test extra

        self._server = waitress.create_server(app, host=HOST, port=0, threads=threads)
        self.url = f"http://{HOST}:{self._server.effective_port}/mcp"
        self._thread = threading.Thread(target=self._server.run, name="test-waitress", daemon=True)
        self._thread.start()

    def close(self) -> None:
        if self._thread.is_alive():
            # Closed on the server's own thread: a descriptor closed under its select() from
            # here is EBADF there, which ends its loop with the connections still open.
            try:
                self._server.trigger.pull_trigger(self._close_on_loop)
            except OSError:  # its trigger is gone already: close from here
                self._server.close()
            self._thread.join(STOP_TIMEOUT_S)
        self._server.task_dispatcher.shutdown(cancel_pending=True, timeout=STOP_TIMEOUT_S)

    def _close_on_loop(self) -> None:
        for channel in list(self._server._map.values()):
            if channel is not self._server and channel is not self._server.trigger:
                channel.close()
        self._server.close()  # the listener and the trigger: the loop ends with its map empty

    def __enter__(self) -> WaitressServer:
        return self

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        self.close()


SERVERS = (WsgirefServer, WaitressServer)
