"""The trivial echo server every benchmark client talks to.  Standard library only.

Run it as a child process::

    [sys.executable, "benchmarks/echo_server.py"]                 # stdio
    [sys.executable, "benchmarks/echo_server.py", "--http", "0"]  # HTTP on 127.0.0.1

Methods: ``initialize`` (MCP handshake; echoes the client's protocol revision
when it is one this server knows), ``ping`` (``{}``), ``echo`` (the params as
given), and one MCP tool: ``tools/list`` offers ``echo``, ``tools/call`` of
``echo`` answers its ``text`` argument as a text block; anything else is
answered -32601.  Notifications are read and dropped.
Batches (JSON arrays) are answered with one array.

stdio: one JSON text per line.  The loop reads whatever the pipe holds
(``os.read``), answers every complete line in it and writes all the answers in
one ``os.write``: one read and one write per request when the client waits for
each answer, fewer when it pipelines.  Every client of a benchmark run talks to
the same code, so the server's own cost is the same for all of them.

HTTP (``--http PORT``, ``0`` picks a free port; the port is printed on stdout
as one line once listening): a minimal HTTP/1.1 keep-alive server, one thread
per connection, on 127.0.0.1 only.  ``POST /json`` answers ``application/json``;
``POST /sse`` answers ``text/event-stream`` (one ``message`` event per answer);
both with a ``Content-Length``, so every connection is reused.  A POST holding
only notifications is answered ``202``.  ``GET`` and ``DELETE`` are answered
``405`` (no listen stream, no sessions).  ``GET /stats`` answers the number of
connections accepted so far (to see whether a client reuses its connections).
The server exits when its stdin closes (so a parent that dies takes it along).
"""

from __future__ import annotations

import io
import json
import os
import socket
import socketserver
import sys
import threading
from typing import Any, List, Optional

KNOWN_PROTOCOL_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
SERVER_INFO = {"name": "jsonrpc-threads-bench-echo", "version": "1.0"}
#: The one tool, as ``tools/list`` gives it.
ECHO_TOOL = {
    "name": "echo",
    "description": "Answer the text it is given.",
    "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
}
READ_CHUNK_BYTES = 256 * 1024
#: The largest HTTP request head or body accepted.
MAX_HTTP_BYTES = 16 * 1024 * 1024

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
_loads = json.loads


def answer(message: Any) -> Optional[Any]:
    """The answer to one decoded message (or batch); None when nothing is owed."""
    if isinstance(message, list):
        answers = [a for a in (answer(item) for item in message) if a is not None]
        return answers or None
    if not isinstance(message, dict) or "method" not in message:
        return None  # a response from the client, or garbage: nothing to say
    if "id" not in message:
        return None  # a notification
    method = message["method"]
    request_id = message["id"]
    if method == "ping":
        return {"jsonrpc": "2.0", "id": request_id, "result": {}}
    if method == "echo":
        return {"jsonrpc": "2.0", "id": request_id, "result": message.get("params")}
    if method == "tools/call":
        params = message.get("params") or {}
        arguments = params.get("arguments") if isinstance(params, dict) else None
        text = str(arguments.get("text", "")) if isinstance(arguments, dict) else ""
        result = {"content": [{"type": "text", "text": text}], "isError": False}
        return {"jsonrpc": "2.0", "id": request_id, "result": result}
    if method == "tools/list":
        return {"jsonrpc": "2.0", "id": request_id, "result": {"tools": [ECHO_TOOL]}}
    if method == "initialize":
        params = message.get("params") or {}
        requested = params.get("protocolVersion") if isinstance(params, dict) else None
        version = requested if requested in KNOWN_PROTOCOL_VERSIONS else KNOWN_PROTOCOL_VERSIONS[0]
        result = {"protocolVersion": version, "capabilities": {"tools": {}}, "serverInfo": SERVER_INFO}
        return {"jsonrpc": "2.0", "id": request_id, "result": result}
    error = {"code": -32601, "message": f"Method not found: {method}"}
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


def answer_line(line: bytes) -> Optional[bytes]:
    try:
        message = _loads(line)
    except ValueError:
        error = {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}
        return _dumps(error).encode()
    reply = answer(message)
    return None if reply is None else _dumps(reply).encode()


# -- stdio ---------------------------------------------------------------------------


def serve_stdio() -> None:
    # Into one buffer: a fresh 256 KiB bytes per read would cost page faults.
    readinto = io.FileIO(0, "rb", closefd=False).readinto
    buffer = memoryview(bytearray(READ_CHUNK_BYTES))
    write = os.write
    pending = b""
    while True:
        count = readinto(buffer)
        if not count:
            return
        chunk = buffer[:count].tobytes()
        data = pending + chunk if pending else chunk
        lines = data.split(b"\n")
        pending = lines.pop()
        out: List[bytes] = []
        for line in lines:
            if line.strip():
                reply = answer_line(line)
                if reply is not None:
                    out.append(reply)
        if out:
            out.append(b"")
            view = memoryview(b"\n".join(out))
            while view:
                view = view[write(1, view) :]


# -- HTTP ----------------------------------------------------------------------------


class _Stats:
    connections = 0
    lock = threading.Lock()


def _response(status: str, content_type: Optional[str], body: bytes) -> bytes:
    head = f"HTTP/1.1 {status}\r\nContent-Length: {len(body)}\r\n"
    if content_type:
        head += f"Content-Type: {content_type}\r\n"
    return (head + "\r\n").encode("ascii") + body


class _Handler(socketserver.StreamRequestHandler):
    disable_nagle_algorithm = True

    def handle(self) -> None:
        with _Stats.lock:
            _Stats.connections += 1
        rfile, wfile = self.rfile, self.wfile
        while True:
            request_line = rfile.readline(65537)
            if not request_line:
                return
            if not request_line.strip():
                continue
            try:
                method, target, _version = request_line.decode("latin-1").split()
            except ValueError:
                wfile.write(_response("400 Bad Request", None, b""))
                return
            length = 0
            close = False
            size = 0
            while True:
                header = rfile.readline(65537)
                size += len(header)
                if not header or header in (b"\r\n", b"\n") or size > MAX_HTTP_BYTES:
                    break
                name, _, value = header.decode("latin-1").partition(":")
                name = name.strip().lower()
                if name == "content-length":
                    length = int(value.strip())
                elif name == "connection" and value.strip().lower() == "close":
                    close = True
            body = rfile.read(length) if 0 < length <= MAX_HTTP_BYTES else b""
            path = target.split("?", 1)[0]
            wfile.write(self._answer(method, path, body))
            if close:
                return

    def _answer(self, method: str, path: str, body: bytes) -> bytes:
        if method == "GET" and path == "/stats":
            return _response("200 OK", "application/json", _dumps({"connections": _Stats.connections}).encode())
        if method != "POST":
            return _response("405 Method Not Allowed", None, b"")
        if path not in ("/json", "/sse"):
            return _response("404 Not Found", None, b"")
        reply = answer_line(body)
        if reply is None:
            return _response("202 Accepted", None, b"")
        if path == "/json":
            return _response("200 OK", "application/json", reply)
        return _response("200 OK", "text/event-stream", b"event: message\r\ndata: " + reply + b"\r\n\r\n")


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128


def serve_http(port: int) -> None:
    server = _Server(("127.0.0.1", port), _Handler)
    server.socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    thread = threading.Thread(target=server.serve_forever, name="echo-http", daemon=True)
    thread.start()
    sys.stdout.write(f"{server.server_address[1]}\n")
    sys.stdout.flush()
    # Live as long as the parent: it holds our stdin.
    while sys.stdin.buffer.read(65536):
        pass
    server.shutdown()
    server.server_close()


def main(argv: Optional[List[str]] = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--http"]:
        serve_http(int(args[1]) if len(args) > 1 else 0)
    elif not args:
        serve_stdio()
    else:
        sys.stderr.write("usage: echo_server.py [--http PORT]\n")
        sys.exit(2)


if __name__ == "__main__":
    main()
