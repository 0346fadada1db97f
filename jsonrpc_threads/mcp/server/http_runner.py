"""A small threaded HTTP server for one WSGI app (the standard library's wsgiref, a thread per request).

Theory of operation.  ``HttpRunner`` binds ``host:port`` (port 0: a free
one), then serves in the calling thread (``serve_forever``) or in a thread
of its own (``start``), a thread per request, until ``stop``.  It is what
``McpServer.run_http``, ``jsonrpc-threads serve --http`` and the conformance
fixture use when no other WSGI server is at hand; production deployments
mount ``McpServer.wsgi_app()`` in gunicorn, waitress or a framework instead.
Loopback by default: listening on another address is the caller's choice.
``serve_until_interrupted`` is ``McpServer.run_http``: serve on the calling
thread until ``KeyboardInterrupt``, then close the socket and the app.

Thread-safety: ``stop`` may be called from any thread, any number of times.
"""

from __future__ import annotations

import logging
import socketserver
import threading
from typing import Any, Callable, Optional
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

__all__ = ["STOP_JOIN_S", "HttpRunner", "serve_until_interrupted"]

logger = logging.getLogger("jsonrpc_threads.mcp.server")

#: ``stop()``: how long to wait for the serving thread and the request threads.
STOP_JOIN_S = 5.0


class _ThreadingServer(socketserver.ThreadingMixIn, WSGIServer):
    daemon_threads = True  # a request stuck in a tool cannot keep the process alive
    block_on_close = False
    allow_reuse_address = True


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


class HttpRunner:
    """Serves one WSGI app over HTTP, a thread per request.

    Args:
        app: the WSGI application.
        host: the address to bind (default loopback).
        port: the port (0: a free one; see ``port`` once made).

    Raises:
        OSError: the address cannot be bound.
    """

    def __init__(self, app: Any, host: str = "127.0.0.1", port: int = 0) -> None:
        self._server = make_server(host, port, app, server_class=_ThreadingServer, handler_class=_QuietHandler)
        self.host = host
        self.port: int = self._server.server_port
        self._thread: Optional[threading.Thread] = None
        self._lock = threading.Lock()  # guards _stopped and _serving
        self._stopped = False
        self._serving = False

    @property
    def url(self) -> str:
        """``http://host:port`` (without a path)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def serve_forever(self) -> None:
        """Serve on the calling thread until ``stop()`` (or Ctrl-C, which stops it too)."""
        with self._lock:
            if self._stopped and not self._serving:
                return  # stopped before it began: the socket is closed
            self._serving = True
        try:
            self._server.serve_forever(poll_interval=0.2)
        finally:
            self._server.server_close()

    def start(self) -> None:
        """Serve on a daemon thread of its own (returns once it serves)."""
        with self._lock:
            self._serving = True  # stop() must wait for the loop, even one not yet entered
        self._thread = threading.Thread(target=self.serve_forever, name=f"mcp-http[{self.port}]", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop serving (bounded by ``STOP_JOIN_S``); requests still running end on their daemon threads."""
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
            serving = self._serving
        if serving:
            self._server.shutdown()  # returns once the loop noticed (within its poll interval)
        else:
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(STOP_JOIN_S)

    def __enter__(self) -> HttpRunner:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def serve_until_interrupted(
    app: Any, host: str, port: int, path: str, on_listening: Optional[Callable[[str], None]]
) -> None:
    """Serve ``app`` on the calling thread until ``KeyboardInterrupt``; then close the socket and ``app``.

    ``on_listening(url)`` is called once the socket listens (``None``: the
    URL is logged at INFO).  ``app`` is closed however this ends.

    Raises:
        OSError: the address cannot be bound.
    """
    try:
        runner = HttpRunner(app, host, port)
    except BaseException:
        app.close()
        raise
    url = runner.url + path
    try:
        if on_listening is None:
            logger.info("listening on %s", url)
        else:
            on_listening(url)
        runner.serve_forever()
    except KeyboardInterrupt:
        logger.info("stopped listening on %s", url)
    finally:
        runner.stop()  # closes the socket when serving never began; else returns at once
        app.close()
