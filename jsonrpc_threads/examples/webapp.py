"""A Flask app that calls MCP tools from its request threads: one ToolRegistry per process.

Needs the ``web`` extra (Flask): ``pip install '.[web]'``.  Run it under a
threaded WSGI server, on the loopback interface::

    gunicorn --workers 2 --threads 8 --bind 127.0.0.1:8000 jsonrpc_threads.examples.webapp:app
    waitress-serve --threads=8 --listen=127.0.0.1:8000 jsonrpc_threads.examples.webapp:app
    python -m jsonrpc_threads.examples.webapp --port 8000     # Flask's own server, for a quick look

Routes:

- ``GET /tools``: the registry's tools (``?format=openai`` or ``anthropic``
  for the model APIs' formats);
- ``POST /call``: one tool call as a model emits it (OpenAI chat, Anthropic
  ``tool_use``, OpenAI Responses), or ``{"tool_calls": [...]}`` for several;
  answered with the tool message(s) for the model's next turn, never an HTTP
  error for a failed tool (``?timeout=SECONDS`` bounds each call);
- ``GET /health``: ``registry.status()``, ``registry.stats()`` and this
  worker's pid, thread and file descriptor counts; ``503`` while a server is
  failed;
- ``POST /mcp``: the same tools served back as an MCP server (Streamable
  HTTP, JSON answers) by ``jsonrpc_threads.wsgi.JsonRpcApp``: the app
  exposes tools as well as calls them.

The registry is made on first use in each process, from the ``mcpServers``
file named by ``JSONRPC_THREADS_MCP_CONFIG`` (by default, the bundled example
MCP server), and closed when the process exits (a SIGTERM included, see
``exit_on_sigterm``).  Every request thread shares
it: calls to one server are pipelined on its one session.  Made before a fork
(gunicorn ``--preload`` imports this module in the master), it is let go of in
each worker and started afresh there on first use.
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import signal
import sys
import threading
from typing import Any, Dict, List, Mapping, Optional, Tuple

try:
    from flask import Flask, Response, jsonify, request
except ImportError as exc:  # pragma: no cover - the message is the point
    raise ImportError("jsonrpc_threads.examples.webapp needs Flask: pip install 'jsonrpc_threads[web]'") from exc

from jsonrpc_threads import __version__
from jsonrpc_threads.errors import JsonRpcError, MethodNotFound
from jsonrpc_threads.mcp import ToolRegistry
from jsonrpc_threads.mcp.types import LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS
from jsonrpc_threads.wsgi import JsonRpcApp

#: The environment variable naming the ``mcpServers`` file.
CONFIG_VARIABLE = "JSONRPC_THREADS_MCP_CONFIG"
#: Seconds a tool call may take unless ``?timeout=`` says otherwise.
DEFAULT_CALL_TIMEOUT_S = 30.0
#: The most tool calls one ``POST /call`` may carry.
MAX_CALLS_PER_REQUEST = 64
HOST = "127.0.0.1"
DEFAULT_PORT = 8000

_registry_lock = threading.Lock()  # guards _registry
_registry: Optional[ToolRegistry] = None


def default_config() -> Dict[str, Any]:
    """The bundled example MCP server, run by this interpreter."""
    server = {"command": sys.executable, "args": ["-m", "jsonrpc_threads.examples.mcp_tool_server"]}
    return {"mcpServers": {"example": server}}


def registry() -> ToolRegistry:
    """The process-wide registry: made on first use, closed at exit.  Thread-safe."""
    global _registry
    current = _registry
    if current is not None:
        return current
    with _registry_lock:
        if _registry is None:
            source: Any = os.environ.get(CONFIG_VARIABLE) or default_config()
            _registry = ToolRegistry.from_config(source, default_timeout=DEFAULT_CALL_TIMEOUT_S)
            atexit.register(_registry.close)
        return _registry


def create_app(tool_registry: Optional[ToolRegistry] = None) -> Flask:
    """The Flask app, over ``tool_registry`` (default: the process-wide ``registry``)."""

    def tools_of() -> ToolRegistry:
        return tool_registry if tool_registry is not None else registry()

    app = Flask(__name__)
    mcp_app = JsonRpcApp(lambda method, params: _mcp_handler(tools_of(), method, params))

    @app.get("/tools")
    def tools() -> Response:
        chosen = request.args.get("format", "")
        current = tools_of()
        if chosen == "openai":
            listed: List[Any] = current.openai_tools()
        elif chosen == "anthropic":
            listed = current.anthropic_tools()
        else:
            listed = [dict(tool) for tool in current.tools()]
        return jsonify({"tools": listed, "errors": current.errors})

    @app.post("/call")
    def call() -> Tuple[Response, int]:
        body = request.get_json(silent=True)
        timeout, problem = _timeout_arg(request.args.get("timeout"))
        if problem is not None:
            return jsonify({"error": problem}), 400
        calls = body.get("tool_calls") if isinstance(body, dict) and "tool_calls" in body else None
        if calls is not None:
            if not isinstance(calls, list) or len(calls) > MAX_CALLS_PER_REQUEST:
                return jsonify({"error": f"tool_calls must be a list of at most {MAX_CALLS_PER_REQUEST}"}), 400
            return jsonify({"messages": tools_of().execute_all(calls, timeout=timeout)}), 200
        if not isinstance(body, dict):
            return jsonify({"error": "the body must be a JSON object: a tool call"}), 400
        return jsonify(tools_of().execute(body, timeout=timeout)), 200

    @app.get("/health")
    def health() -> Tuple[Response, int]:
        current = tools_of()
        status = current.status()
        failed = sorted(name for name, entry in status.items() if entry["state"] == "failed")
        answer = {
            "ok": not failed,
            "failed": failed,
            "servers": status,
            "stats": current.stats(),
            "process": _process_facts(),
        }
        return jsonify(answer), 503 if failed else 200

    @app.route("/mcp", methods=["GET", "POST", "DELETE"])
    def mcp() -> Any:
        return mcp_app  # a WSGI application: Flask runs it on this request's environ

    return app


def _process_facts() -> Dict[str, Any]:
    """This worker process: its pid, threads and open file descriptors (Linux), for a health page."""
    try:
        fds: Optional[int] = len(os.listdir("/proc/self/fd"))
    except OSError:
        fds = None
    return {"pid": os.getpid(), "threads": threading.active_count(), "fds": fds}


def _timeout_arg(text: Optional[str]) -> Tuple[Optional[float], Optional[str]]:
    if text is None:
        return DEFAULT_CALL_TIMEOUT_S, None
    try:
        seconds = float(text)
    except ValueError:
        return None, f"timeout must be a number of seconds, not {text!r}"
    if not 0 < seconds <= 3600:
        return None, "timeout must be between 0 and 3600 seconds"
    return seconds, None


def _mcp_handler(tools: ToolRegistry, method: str, params: Any) -> Any:
    """The MCP server the app is at ``/mcp``: the registry's tools under their namespaced names."""
    params = params if isinstance(params, Mapping) else {}
    if method == "initialize":
        requested = params.get("protocolVersion")
        version = requested if requested in SUPPORTED_PROTOCOL_VERSIONS else LATEST_PROTOCOL_VERSION
        return {
            "protocolVersion": version,
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "jsonrpc-threads-webapp", "version": __version__},
        }
    if method == "ping":
        return {}
    if method == "tools/list":
        listed = []
        for tool in tools.tools():
            entry = {key: value for key, value in dict(tool).items() if key not in ("server", "tool")}
            listed.append(entry)
        return {"tools": listed}
    if method == "tools/call":
        name = params.get("name")
        arguments = params.get("arguments") or {}
        call = {"type": "function_call", "call_id": "mcp", "name": name, "arguments": json.dumps(arguments)}
        message = tools.execute(call)
        text = str(message.get("output", ""))
        return {"content": [{"type": "text", "text": text}], "isError": text.startswith("Error:")}
    if method.startswith("notifications/"):
        return None
    raise MethodNotFound(f"Method not found: {method}", data={"method": method})


def exit_on_sigterm() -> bool:
    """Make SIGTERM a normal exit, so the registry closes its servers, where nothing else handles it.

    waitress-serve (and Flask's own server) leave SIGTERM to its default,
    which ends the process without running ``atexit``: the MCP servers the
    registry started would be left to notice their closed input and finish
    on their own (a hung tool keeps one up to its end-of-input drain).
    gunicorn handles SIGTERM itself (its workers exit normally, ``atexit``
    runs): its handler is left alone.  Call it on the main thread (the only
    one that can set a handler); returns whether it set one.
    """
    if threading.current_thread() is not threading.main_thread():
        return False
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return False
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    return True


exit_on_sigterm()

#: The WSGI application for gunicorn and waitress (``jsonrpc_threads.examples.webapp:app``).
app = create_app()


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m jsonrpc_threads.examples.webapp", description=__doc__)
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help="TCP port on 127.0.0.1")
    args = parser.parse_args(argv)
    try:
        app.run(host=HOST, port=args.port, threaded=True)
    except JsonRpcError as exc:  # pragma: no cover
        print(f"webapp: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
