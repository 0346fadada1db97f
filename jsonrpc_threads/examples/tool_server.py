"""A tiny tool server: the example of writing a tool with ``jsonrpc_threads.server.serve``.

Run it with ``python -m jsonrpc_threads.examples.tool_server`` and write one
JSON-RPC 2.0 request per line on its stdin::

    {"jsonrpc": "2.0", "id": 1, "method": "add", "params": {"a": 1, "b": 2}}

Each tool is a plain function taking the request's params (a dict) and returning
a JSON value.  Bad params raise ``InvalidParams``;
an unknown method raises ``MethodNotFound``.  The
server runs requests concurrently, so ``hang`` blocks only itself.  Logs go to
stderr; stdout carries nothing but protocol lines.
"""

from __future__ import annotations

import os
import sys
import threading
import time

from jsonrpc_threads.errors import InvalidParams, MethodNotFound
from jsonrpc_threads.server import current_request_id, notify, serve

TYPE_CHECKING = False  # typing is not imported at run time: the server starts faster without it
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, List, Tuple, Type, Union

    Number = Union[int, float]


def _param(params: Dict[str, Any], name: str, types: Tuple[Type[Any], ...], default: Any = None) -> Any:
    """``params[name]`` (or ``default``), checked against ``types``; a bool is never a number."""
    value = params.get(name, default)
    if not isinstance(value, types) or isinstance(value, bool):
        expected = " or ".join(t.__name__ for t in types)
        raise InvalidParams(f"{name!r} must be {expected}", data={"param": name})
    return value


def add(params: Dict[str, Any]) -> Number:
    """Add two numbers: {"a": number, "b": number} -> number."""
    a: Number = _param(params, "a", (int, float))
    b: Number = _param(params, "b", (int, float))
    return a + b


def echo(params: Dict[str, Any]) -> str:
    """Return the text it was given: {"text": string} -> string."""
    text: str = _param(params, "text", (str,))
    return text


def slow_count(params: Dict[str, Any]) -> int:
    """Count to "to", sending a `progress` notification every "delay" seconds; returns "to"."""
    to: int = _param(params, "to", (int,))
    delay: Number = _param(params, "delay", (int, float), default=0.0)
    if to < 0 or delay < 0:
        raise InvalidParams("'to' and 'delay' must not be negative")
    for i in range(1, to + 1):
        time.sleep(delay)  # stands for a step of real work
        notify("progress", {"progress": i, "total": to, "request_id": current_request_id()})
    return to


_NEVER = threading.Event()


def say(text: str) -> None:
    """One line on stderr, in one write: lines from handlers running at once never run into each other.

    (``print`` writes the text and its newline separately: a crash on another
    thread between the two ran two lines into one.)
    """
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


def hang(params: Dict[str, Any]) -> None:
    """Never return (to try timeouts and cancellation); says so on stderr first."""
    say(f"tool_server: request {current_request_id()!r} will never be answered (hang)")
    _NEVER.wait()


def crash(params: Dict[str, Any]) -> None:
    """Exit the whole process at once with {"code": int} (default 1), without answering."""
    code: int = _param(params, "code", (int,), default=1)
    say(f"tool_server: crashing on purpose with exit code {code}")
    os._exit(code)  # no cleanup, no answer: what a real crash looks like to the client


def list_tools(params: Dict[str, Any]) -> List[Dict[str, str]]:
    """Describe every tool: [{"name", "description"}]."""
    return [{"name": name, "description": (tool.__doc__ or "").strip()} for name, tool in TOOLS.items()]


TOOLS: Dict[str, Callable[[Dict[str, Any]], Any]] = {
    "add": add,
    "echo": echo,
    "slow_count": slow_count,
    "hang": hang,
    "crash": crash,
    "list_tools": list_tools,
}


def handle(method: str, params: Any) -> Any:
    """The handler given to serve(): find the tool, check the params' shape, call it."""
    tool = TOOLS.get(method)
    if tool is None:
        raise MethodNotFound(data={"method": method})
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise InvalidParams("params must be an object")
    return tool(params)


def main() -> None:
    say(f"tool_server ready (pid {os.getpid()})")
    serve(handle)


if __name__ == "__main__":
    main()
