"""A small MCP server over stdio, written on ``jsonrpc_threads.server.serve`` (no MCP SDK).

Run it with ``python -m jsonrpc_threads.examples.mcp_tool_server``, or name it
in an ``mcpServers`` configuration::

    {"mcpServers": {"example": {"command": "python", "args": ["-m", "jsonrpc_threads.examples.mcp_tool_server"]}}}

(``python`` there is the first on ``PATH``: activate the virtual environment
that has the package, or write the interpreter's full path; from Python, use
``sys.executable``.)

It answers ``initialize``, ``ping``, ``tools/list`` and ``tools/call``, and shows
what an MCP server owes its client: protocol version negotiation, tool results
as content blocks, ``isError`` results for failures the model should see,
progress notifications when the call carries ``_meta.progressToken``,
cancellation (``notifications/cancelled``), and
``notifications/tools/list_changed``.  Tools:

- ``add {a, b}``: the sum of two numbers;
- ``echo {text}``: the text back;
- ``slow {seconds, steps}``: waits ``seconds`` (up to ``MAX_SLOW_SECONDS``)
  in ``steps`` steps (up to ``MAX_SLOW_STEPS``), reporting progress after
  each; a cancelled call stops waiting;
- ``fail {message}``: an ``isError`` result carrying ``message``;
- ``crash {code}``: the process exits at once with ``code``, answering nothing;
- ``rendezvous {key, parties}``: returns once ``parties`` calls with the same
  ``key`` are running at the same time (or fails after ``timeout`` seconds):
  proof that calls run concurrently;
- ``define_tool {name, text}``: adds a tool ``name`` that returns ``text``, and
  tells the client its tool list changed.

Arguments of the wrong type or out of range (a ``seconds`` no thread can wait,
an exit code beyond 255, a sum that is no longer a finite number) are the
model's mistake: an ``isError`` result that says what was wrong, never a
JSON-RPC error.

Logs go to stderr; stdout carries nothing but protocol lines.
"""

from __future__ import annotations

import math
import os
import sys
import threading
from typing import Any, Callable, Dict, List, Optional, Tuple, Type

from jsonrpc_threads import __version__
from jsonrpc_threads.errors import InvalidParams, MethodNotFound
from jsonrpc_threads.server import current_request_id, notify, serve

#: Protocol revisions this server speaks, newest first.
PROTOCOL_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
SERVER_INFO = {"name": "jsonrpc-threads-example", "version": __version__}
#: How long ``rendezvous`` waits for its partners by default.
RENDEZVOUS_TIMEOUT_S = 10.0
#: The longest ``rendezvous`` may be asked to wait.
MAX_RENDEZVOUS_TIMEOUT_S = 3600.0
#: The longest ``slow`` may be asked to wait (an hour), and in how many steps at most.
MAX_SLOW_SECONDS = 3600.0
MAX_SLOW_STEPS = 10_000
#: The exit codes ``crash`` may be asked for (what a process can report).
MAX_EXIT_CODE = 255
#: The threads that run tool calls at once: no more ``rendezvous`` parties can ever meet.
MAX_WORKERS = 32

ToolFunction = Callable[[Dict[str, Any], Optional[Any]], Dict[str, Any]]


class ToolError(Exception):
    """A failure the model should see: becomes an ``isError`` result."""


def text_result(text: str, *, is_error: bool = False) -> Dict[str, Any]:
    """A ``tools/call`` result with one text block."""
    result: Dict[str, Any] = {"content": [{"type": "text", "text": text}]}
    if is_error:
        result["isError"] = True
    return result


_TYPE_NAMES = {int: "an integer", float: "a number", str: "a string"}


def _argument(arguments: Dict[str, Any], name: str, types: Tuple[Type[Any], ...], default: Any = None) -> Any:
    """``arguments[name]`` (or ``default``), of one of ``types``; a float must be finite."""
    value = arguments.get(name, default)
    if (
        not isinstance(value, types)
        or isinstance(value, bool)
        or (isinstance(value, float) and not math.isfinite(value))
    ):
        kind = "a number" if float in types else " or ".join(_TYPE_NAMES.get(t, t.__name__) for t in types)
        raise ToolError(f"argument {name!r} must be {kind}")
    return value


def _bounded(
    arguments: Dict[str, Any], name: str, types: Tuple[Type[Any], ...], default: Any, low: Any, high: Any
) -> Any:
    """As ``_argument``, from ``low`` to ``high`` (both included)."""
    value = _argument(arguments, name, types, default)
    if not low <= value <= high:
        raise ToolError(f"{name!r} must be from {low} to {high}, not {value}")
    return value


# -- cancellation -------------------------------------------------------------------

# _lock guards _cancelled (request id -> Event set when the client cancels it).
_lock = threading.Lock()
_cancelled: Dict[Any, threading.Event] = {}


def _cancel_event() -> threading.Event:
    event = threading.Event()
    with _lock:
        _cancelled[current_request_id()] = event
    return event


def _forget_cancel_event() -> None:
    with _lock:
        _cancelled.pop(current_request_id(), None)


# -- tools --------------------------------------------------------------------------


def add(arguments: Dict[str, Any], progress_token: Optional[Any]) -> Dict[str, Any]:
    a = _argument(arguments, "a", (int, float))
    b = _argument(arguments, "b", (int, float))
    try:
        total = a + b
    except OverflowError:  # an integer beyond any float, added to a float
        raise ToolError("the numbers are too large to add") from None
    if isinstance(total, float) and not math.isfinite(total):
        raise ToolError("the sum is too large for a number")
    return {"content": [{"type": "text", "text": str(total)}], "structuredContent": {"sum": total}}


def echo(arguments: Dict[str, Any], progress_token: Optional[Any]) -> Dict[str, Any]:
    return text_result(_argument(arguments, "text", (str,)))


def slow(arguments: Dict[str, Any], progress_token: Optional[Any]) -> Dict[str, Any]:
    seconds = _bounded(arguments, "seconds", (int, float), 1.0, 0, MAX_SLOW_SECONDS)
    steps = _bounded(arguments, "steps", (int,), 1, 1, MAX_SLOW_STEPS)
    cancelled = _cancel_event()
    try:
        for step in range(1, steps + 1):
            if cancelled.wait(seconds / steps):  # stands for a step of real work
                return text_result("cancelled", is_error=True)
            if progress_token is not None:
                params = {"progressToken": progress_token, "progress": step, "total": steps}
                params["message"] = f"step {step} of {steps}"
                notify("notifications/progress", params)
    finally:
        _forget_cancel_event()
    return text_result(f"waited {seconds}s in {steps} steps")


def fail(arguments: Dict[str, Any], progress_token: Optional[Any]) -> Dict[str, Any]:
    return text_result(str(arguments.get("message", "failed on purpose")), is_error=True)


def crash(arguments: Dict[str, Any], progress_token: Optional[Any]) -> Dict[str, Any]:
    code = _bounded(arguments, "code", (int,), 1, 0, MAX_EXIT_CODE)
    sys.stderr.write(f"mcp_tool_server: crashing on purpose with exit code {code}\n")  # one write: no line of
    sys.stderr.flush()  # another thread (serve()'s log) lands between the text and its newline, as with print
    os._exit(code)  # no cleanup, no answer: what a real crash looks like to the client


# _lock guards _meetings (key -> the Barrier its calls wait at).
_meetings: Dict[str, threading.Barrier] = {}


def rendezvous(arguments: Dict[str, Any], progress_token: Optional[Any]) -> Dict[str, Any]:
    key = _argument(arguments, "key", (str,))
    parties = _bounded(arguments, "parties", (int,), 2, 1, MAX_WORKERS)
    timeout = _bounded(arguments, "timeout", (int, float), RENDEZVOUS_TIMEOUT_S, 0, MAX_RENDEZVOUS_TIMEOUT_S)
    with _lock:
        barrier = _meetings.get(key)
        if barrier is None or barrier.parties != parties or barrier.broken:
            barrier = _meetings[key] = threading.Barrier(parties)
    try:
        barrier.wait(timeout)
    except threading.BrokenBarrierError:
        return text_result(f"only some of the {parties} parties of {key!r} came within {timeout}s", is_error=True)
    return text_result(f"{parties} parties met at {key!r}")


# _lock guards _defined (name -> text of the tools added by define_tool).
_defined: Dict[str, str] = {}


def define_tool(arguments: Dict[str, Any], progress_token: Optional[Any]) -> Dict[str, Any]:
    name = _argument(arguments, "name", (str,))
    text = _argument(arguments, "text", (str,), default="")
    if not name or name in TOOLS:
        raise ToolError(f"cannot define a tool named {name!r}")
    with _lock:
        _defined[name] = text
    notify("notifications/tools/list_changed")  # reaches the client before this answer
    return text_result(f"defined {name!r}")


def _object(properties: Dict[str, Any], required: List[str]) -> Dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required}


_NUMBER = {"type": "number"}
_STRING = {"type": "string"}
_INTEGER = {"type": "integer"}

TOOLS: Dict[str, Tuple[ToolFunction, str, Dict[str, Any]]] = {
    "add": (add, "Add two numbers.", _object({"a": _NUMBER, "b": _NUMBER}, ["a", "b"])),
    "echo": (echo, "Return the text it was given.", _object({"text": _STRING}, ["text"])),
    "slow": (
        slow,
        "Wait 'seconds' in 'steps' steps, reporting progress after each step.",
        _object({"seconds": _NUMBER, "steps": _INTEGER}, []),
    ),
    "fail": (fail, "Fail with 'message' (an isError result).", _object({"message": _STRING}, [])),
    "crash": (
        crash,
        "Exit the server process at once with 'code', answering nothing.",
        _object({"code": _INTEGER}, []),
    ),
    "rendezvous": (
        rendezvous,
        "Return once 'parties' calls with the same 'key' are running at the same time.",
        _object({"key": _STRING, "parties": _INTEGER, "timeout": _NUMBER}, ["key"]),
    ),
    "define_tool": (
        define_tool,
        "Add a tool 'name' that returns 'text', and announce that the tool list changed.",
        _object({"name": _STRING, "text": _STRING}, ["name"]),
    ),
}


def list_tools() -> List[Dict[str, Any]]:
    """Every tool's descriptor, the built-in ones first."""
    tools = [
        {"name": name, "description": description, "inputSchema": schema}
        for name, (_, description, schema) in TOOLS.items()
    ]
    with _lock:
        defined = sorted(_defined)
    tools.extend(
        {"name": name, "description": "A tool added by define_tool.", "inputSchema": _object({}, [])}
        for name in defined
    )
    return tools


def call_tool(params: Dict[str, Any]) -> Dict[str, Any]:
    """``tools/call``: run the tool; failures the model should see become ``isError`` results."""
    name = params.get("name")
    arguments = params.get("arguments")
    if arguments is None:
        arguments = {}
    meta = params.get("_meta")
    progress_token = meta.get("progressToken") if isinstance(meta, dict) else None
    with _lock:
        defined = _defined.get(name) if isinstance(name, str) else None
    if defined is not None:
        return text_result(defined)
    entry = TOOLS.get(name) if isinstance(name, str) else None
    if entry is None:
        raise InvalidParams(f"Unknown tool: {name}", data={"name": name})
    if not isinstance(arguments, dict):
        return text_result("arguments must be an object", is_error=True)
    try:
        return entry[0](arguments, progress_token)
    except ToolError as exc:
        return text_result(str(exc), is_error=True)


def initialize(params: Dict[str, Any]) -> Dict[str, Any]:
    """``initialize``: the client's revision when this server speaks it, else the newest."""
    requested = params.get("protocolVersion")
    version = requested if requested in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[0]
    return {
        "protocolVersion": version,
        "capabilities": {"tools": {"listChanged": True}},
        "serverInfo": SERVER_INFO,
        "instructions": "Example tools of jsonrpc_threads: add, echo, slow, fail, crash, rendezvous, define_tool.",
    }


def handle(method: str, params: Any) -> Any:
    """The handler given to serve()."""
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise InvalidParams("params must be an object")
    if method == "initialize":
        return initialize(params)
    if method == "ping":
        return {}
    if method == "tools/list":
        return {"tools": list_tools()}
    if method == "tools/call":
        return call_tool(params)
    if method == "notifications/cancelled":
        with _lock:
            event = _cancelled.get(params.get("requestId"))
        if event is not None:
            event.set()
        return None
    if method.startswith("notifications/"):
        return None  # initialized, roots/list_changed, ...: nothing to do
    raise MethodNotFound(f"Method not found: {method}", data={"method": method})


def main() -> None:
    print(f"mcp_tool_server ready (pid {os.getpid()})", file=sys.stderr, flush=True)
    serve(handle, max_workers=MAX_WORKERS)


__all__ = ["PROTOCOL_VERSIONS", "TOOLS", "call_tool", "handle", "main", "text_result"]

if __name__ == "__main__":
    main()
