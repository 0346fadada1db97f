"""A small JSON-RPC server over HTTP, on 127.0.0.1: the peer of the HTTP quickstart.

Run it with ``python -m jsonrpc_threads.examples.http_server`` (``--port N``,
default 8000; ``0`` picks a free port); it prints its URL on stdout once it
listens, and serves until interrupted.  From Python, ``ExampleHttpServer``
runs it in a thread of the calling process::

    with ExampleHttpServer() as server:      # a free port on 127.0.0.1
        ...  # HttpTransport(server.url)

Each request is one POST of one JSON-RPC message (or batch) to ``/rpc``,
answered ``application/json``; a POST that holds only notifications is
answered ``202 Accepted`` with no body.  The methods are those of
``jsonrpc_threads.examples.tool_server`` that make sense without a stdio
stream: ``add``, ``echo`` and ``list_tools``.  Other paths answer 404, other
HTTP methods 405.  It listens on the loopback interface only, and it is an
example: no authentication, no TLS.
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Callable, Dict, List, Optional, Set, Type

from jsonrpc_threads.errors import InternalError, InvalidRequest, JsonRpcError, MethodNotFound, ParseError
from jsonrpc_threads.examples import tool_server

HOST = "127.0.0.1"
DEFAULT_PORT = 8000
PATH = "/rpc"
#: The largest request body accepted (bytes).
MAX_BODY_BYTES = 1024 * 1024
#: How long a connection may sit idle before the server drops it.
IDLE_TIMEOUT_S = 30.0
#: How long close() waits for the serving thread.
CLOSE_TIMEOUT_S = 5.0

#: The methods served: name -> function(params dict) -> result.
METHODS: Dict[str, Callable[[Dict[str, Any]], Any]] = {
    name: tool_server.TOOLS[name] for name in ("add", "echo", "list_tools")
}


def answer(message: Any) -> Optional[Dict[str, Any]]:
    """The response to one JSON-RPC message, or ``None`` for a notification."""
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0" or not isinstance(message.get("method"), str):
        error: JsonRpcError = InvalidRequest()
        request_id = message.get("id") if isinstance(message, dict) else None
        return {"jsonrpc": "2.0", "id": request_id, "error": error.to_error_object()}
    is_request = "id" in message
    try:
        method = METHODS.get(message["method"])
        if method is None:
            raise MethodNotFound(data={"method": message["method"]})
        params = message.get("params")
        result = method(params if isinstance(params, dict) else {})
    except JsonRpcError as exc:
        response = {"jsonrpc": "2.0", "id": message.get("id"), "error": exc.to_error_object()}
    except Exception as exc:
        error = InternalError(data={"exception": type(exc).__name__})
        response = {"jsonrpc": "2.0", "id": message.get("id"), "error": error.to_error_object()}
    else:
        response = {"jsonrpc": "2.0", "id": message.get("id"), "result": result}
    return response if is_request else None


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"  # keep-alive: a client reuses its connection
    timeout = IDLE_TIMEOUT_S

    def setup(self) -> None:
        super().setup()
        self.server.track(self.connection, True)

    def finish(self) -> None:
        self.server.track(self.connection, False)
        super().finish()

    def do_POST(self) -> None:
        if self.path.split("?", 1)[0] != PATH:
            self._send(HTTPStatus.NOT_FOUND, b"")
            return
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY_BYTES:
            self._send(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, b"")
            self.close_connection = True
            return
        body = self.rfile.read(length)
        try:
            message = json.loads(body)
        except ValueError:
            parse_error = {"jsonrpc": "2.0", "id": None, "error": ParseError().to_error_object()}
            self._send(HTTPStatus.OK, json.dumps(parse_error).encode())
            return
        if isinstance(message, list) and message:
            answers: Any = [a for a in (answer(item) for item in message) if a is not None]
        else:
            answers = answer(message) if not isinstance(message, list) else answer(None)
        if not answers:
            self._send(HTTPStatus.ACCEPTED, b"")
        else:
            self._send(HTTPStatus.OK, json.dumps(answers).encode())

    def _not_allowed(self) -> None:
        self._send(HTTPStatus.METHOD_NOT_ALLOWED, b"", {"Allow": "POST"})

    do_GET = do_PUT = do_DELETE = do_PATCH = _not_allowed

    def _send(self, status: HTTPStatus, body: bytes, headers: Optional[Dict[str, str]] = None) -> None:
        self.send_response(status)
        if body:
            self.send_header("Content-Type", "application/json")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # quiet: an example server should not write a line per request


class _Server(ThreadingHTTPServer):
    daemon_threads = False  # close() joins the connection threads
    block_on_close = True

    def __init__(self, port: int) -> None:
        super().__init__((HOST, port), _Handler)
        self._lock = threading.Lock()  # guards _connections
        self._connections: Set[socket.socket] = set()

    def track(self, connection: socket.socket, is_open: bool) -> None:
        with self._lock:
            if is_open:
                self._connections.add(connection)
            else:
                self._connections.discard(connection)

    def drop_connections(self) -> None:
        with self._lock:
            connections: List[socket.socket] = list(self._connections)
        for connection in connections:
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class ExampleHttpServer:
    """The example server on ``127.0.0.1:port`` (0: a free port), served by a thread of this process.

    A context manager: the ``with`` block starts nothing more than ``__init__``
    did and closes it at the end.  Thread-safe: ``close`` may be called from
    any thread, more than once.

    Args:
        port: the TCP port; 0 (the default) picks a free one.

    Raises:
        OSError: the port cannot be bound (already in use).
    """

    def __init__(self, port: int = 0) -> None:
        self._server = _Server(port)
        self.port: int = self._server.server_address[1]
        #: The JSON-RPC endpoint: ``http://127.0.0.1:<port>/rpc``.
        self.url = f"http://{HOST}:{self.port}{PATH}"
        self._thread = threading.Thread(
            target=self._server.serve_forever, name=f"example-http-server[{self.port}]", daemon=True
        )
        self._thread.start()
        self._closed = threading.Lock()

    def close(self) -> None:
        """Stop serving, drop open connections and wait (bounded) for every server thread."""
        if not self._closed.acquire(blocking=False):
            return
        self._server.shutdown()
        self._server.drop_connections()
        self._server.server_close()
        self._thread.join(CLOSE_TIMEOUT_S)

    def __enter__(self) -> ExampleHttpServer:
        return self

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> None:
        self.close()


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m jsonrpc_threads.examples.http_server", description=__doc__)
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help="TCP port on 127.0.0.1 (0: a free one)")
    args = parser.parse_args(argv)
    server = ExampleHttpServer(args.port)
    print(server.url, flush=True)
    try:
        threading.Event().wait()  # serve until interrupted
    except KeyboardInterrupt:
        pass
    finally:
        server.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
