"""A hand-written MCP server of the stateless era (2026-07-28) over Streamable HTTP, for the wire-level tests.

Standard library only.  Use it in-process::

    with StatelessPeer() as peer:    # 127.0.0.1, a free port, serving in threads
        peer.url                     # the MCP endpoint, /mcp
        peer.posts                   # every POST: (headers with names in lower case, body)

It checks what a 2026-07-28 server checks (the ``MCP-Protocol-Version``
header equal to the ``_meta`` version, the ``_meta`` keys; else 400 with the
matching error), serves ``server/discover``, and sends ``Mcp-Session-Id`` on
every answer (which a client of this era must ignore).  Behaviour:

- ``tools/list``: the tools below, with ``ttlMs`` (``list_ttl_ms``, 60000 by
  default) and ``cacheScope``;
- ``tools/call`` ``echo {text}``: the text, as an SSE answer;
- ``tools/call`` ``cut``: the first call's SSE stream ends before its
  response; every later call answers ``"second try"``;
- ``tools/call`` ``slow {seconds}``: answers after ``seconds`` (or when the
  client closes the stream);
- ``tools/call`` ``regional {region}``: requires ``Mcp-Param-Region`` equal to
  the argument (else 400, -32020); its schema marks ``region`` with
  ``x-mcp-header`` only once ``tools/list`` was called ``headers_after`` times;
- ``tools/list`` also lists ``bad_header`` (an invalid ``x-mcp-header``);
- the first request of a client whose version is not ``2026-07-28`` gets -32022.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, List, Tuple

VERSION = "2026-07-28"


class StatelessPeer:
    """The peer (a ThreadingHTTPServer on 127.0.0.1).  A context manager."""

    def __init__(self, *, list_ttl_ms: int = 60_000, headers_after: int = 0) -> None:
        self.list_ttl_ms = list_ttl_ms
        self.headers_after = headers_after
        self.posts: List[Tuple[Dict[str, str], Dict[str, Any]]] = []
        self.lists = 0
        self._cuts = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        peer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # format: the base class's name
                pass

            def do_POST(self) -> None:
                peer._post(self)

            def do_GET(self) -> None:
                self.send_response(405)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="test-stateless-peer", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/mcp"

    def methods(self) -> List[str]:
        return [body.get("method", "") for _, body in self.posts]

    def __enter__(self) -> StatelessPeer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)

    # -- requests ---------------------------------------------------------------------------

    def _post(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        body = json.loads(handler.rfile.read(length) or b"{}")
        headers = {name.lower(): value for name, value in handler.headers.items()}
        with self._lock:
            self.posts.append((headers, body))
        if "id" not in body:
            self._reply(handler, 202, None)
            return
        rid, method, params = body["id"], body.get("method"), body.get("params") or {}
        meta = params.get("_meta") or {}
        version = meta.get("io.modelcontextprotocol/protocolVersion")
        if headers.get("mcp-protocol-version") != version:
            self._error(handler, 400, rid, -32020, "MCP-Protocol-Version does not match _meta")
            return
        if "io.modelcontextprotocol/clientCapabilities" not in meta:
            self._error(handler, 400, rid, -32602, "missing _meta keys")
            return
        if version != VERSION:
            self._error(
                handler,
                400,
                rid,
                -32022,
                "Unsupported protocol version",
                {"supported": [VERSION], "requested": version},
            )
            return
        if headers.get("mcp-method") != method:
            self._error(handler, 400, rid, -32020, "Mcp-Method does not match")
            return
        if method == "server/discover":
            self._result(
                handler,
                rid,
                {
                    "supportedVersions": [VERSION],
                    "capabilities": {"tools": {}},
                    "ttlMs": 0,
                    "cacheScope": "public",
                    "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "stateless-peer", "version": "1"}},
                },
            )
        elif method == "tools/list":
            with self._lock:
                self.lists += 1
                annotate = self.lists > self.headers_after
            region: Dict[str, Any] = {"type": "string"}
            if annotate:
                region["x-mcp-header"] = "Region"
            tools = [
                {"name": "echo", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}},
                {"name": "cut", "inputSchema": {"type": "object"}},
                {"name": "slow", "inputSchema": {"type": "object", "properties": {"seconds": {"type": "number"}}}},
                {"name": "regional", "inputSchema": {"type": "object", "properties": {"region": region}}},
                {
                    "name": "bad_header",
                    "inputSchema": {"type": "object", "properties": {"v": {"type": "object", "x-mcp-header": "V"}}},
                },
            ]
            self._result(handler, rid, {"tools": tools, "ttlMs": self.list_ttl_ms, "cacheScope": "private"})
        elif method == "tools/call":
            self._call(handler, rid, params, headers)
        else:
            self._error(handler, 404, rid, -32601, f"Method not found: {method}")

    def _call(self, handler: BaseHTTPRequestHandler, rid: Any, params: Dict[str, Any], headers: Dict[str, str]) -> None:
        name, arguments = params.get("name"), params.get("arguments") or {}
        if headers.get("mcp-name") != name:
            self._error(handler, 400, rid, -32020, "Mcp-Name does not match")
            return
        if name == "echo":
            self._sse(handler, [{"jsonrpc": "2.0", "id": rid, "result": _text(arguments.get("text"))}])
        elif name == "cut":
            with self._lock:
                self._cuts += 1
                first = self._cuts == 1
            if first:
                self._sse(
                    handler,
                    [{"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "cut"}}],
                )
            else:
                self._sse(handler, [{"jsonrpc": "2.0", "id": rid, "result": _text("second try")}])
        elif name == "slow":
            self._stop.wait(float(arguments.get("seconds", 0)))
            self._sse(handler, [{"jsonrpc": "2.0", "id": rid, "result": _text("slow")}])
        elif name == "regional":
            if headers.get("mcp-param-region") != arguments.get("region"):
                self._error(handler, 400, rid, -32020, "Mcp-Param-Region is missing or does not match")
                return
            self._result(handler, rid, _text(f"in {arguments.get('region')}"))
        else:
            self._error(handler, 200, rid, -32602, f"Unknown tool: {name}")

    # -- answers ----------------------------------------------------------------------------

    def _result(self, handler: BaseHTTPRequestHandler, rid: Any, result: Dict[str, Any]) -> None:
        self._reply(handler, 200, {"jsonrpc": "2.0", "id": rid, "result": {"resultType": "complete", **result}})

    def _error(
        self, handler: BaseHTTPRequestHandler, status: int, rid: Any, code: int, message: str, data: Any = None
    ) -> None:
        error: Dict[str, Any] = {"code": code, "message": message}
        if data is not None:
            error["data"] = data
        self._reply(handler, status, {"jsonrpc": "2.0", "id": rid, "error": error})

    def _reply(self, handler: BaseHTTPRequestHandler, status: int, message: Any) -> None:
        data = json.dumps(message).encode() if message is not None else b""
        handler.send_response(status)
        if message is not None:
            handler.send_header("Content-Type", "application/json")
        handler.send_header("Mcp-Session-Id", "a-session-the-client-must-ignore")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)

    def _sse(self, handler: BaseHTTPRequestHandler, messages: List[Any]) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Mcp-Session-Id", "a-session-the-client-must-ignore")
        handler.send_header("Connection", "close")
        handler.end_headers()
        for message in messages:
            # Results of the stateless era carry resultType; notifications do not.
            if "result" in message:
                message["result"] = {"resultType": "complete", **message["result"]}
            handler.wfile.write(f"data: {json.dumps(message)}\n\n".encode())
            handler.wfile.flush()


def _text(text: Any) -> Dict[str, Any]:
    return {"content": [{"type": "text", "text": str(text)}]}
