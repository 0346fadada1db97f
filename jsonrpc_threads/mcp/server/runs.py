"""Running a tool, prompt or resource function for one request, in either era (the engine's user-code half).

Theory of operation.  ``Runs.run`` answers the three requests that run user
code and may ask the client for input (``tools/call``, ``prompts/get``,
``resources/read``): it finds the definition, checks the arguments against
its signature, runs the function on the calling thread (a tool with a
``timeout`` on a thread of its own, answered at the deadline), and turns what
happened into the answer.  In the stateless era it first gathers the answers
of the rounds before (the signed ``requestState`` and the new
``inputResponses``), and a run that asks something not answered yet ends
with ``input_required``: its questions and a new signed state.  A call of a tool
with ``task_support``, from a client that declared the tasks extension, goes
to the server's ``TaskTable`` instead (see ``tasks``): answered with its task.

What user code raises: in a tool, an ``isError`` result with the exception's
message (the traceback logged, never sent); in a resource or prompt function,
``-32603`` with the message.  A ``BaseException`` that is not an
``Exception`` is ``-32603`` naming its type, in any function: it never leaves
the request, whose thread may be a WSGI server's own.  The engine's own signals pass through
(``InputRequired``, ``MissingClientCapability``).

Thread-safety: ``Runs`` holds no mutable state; many requests run at once.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Callable, Dict, List, Optional

from ...deadlines.timeouts import Deadline
from ...errors import InvalidParams, JsonRpcError
from .content import error_result
from .context import Context, Exchange, InputRequired, MissingClientCapability
from .definitions import Catalog, ToolDefinition
from .request_state import StateSeal, arguments_digest
from .schema import ArgumentError
from .tasks import TaskTable, declares_tasks, missing_tasks_extension

__all__ = ["RESOURCE_NOT_FOUND_SESSION", "Runs", "run_user"]

logger = logging.getLogger("jsonrpc_threads.mcp.server")

#: The code of a resource that does not exist, in the session era (-32002, as the 2025 revisions say).
RESOURCE_NOT_FOUND_SESSION = -32002


class Runs:
    """Runs user functions for requests.  Thread-safe.

    Args:
        catalog: the server's definitions.
        seal: signs and checks ``requestState``.
        tasks: the server's tasks (the tasks extension).
    """

    def __init__(self, catalog: Catalog, seal: StateSeal, tasks: TaskTable, require: Callable[[str], None]) -> None:
        self._catalog = catalog
        self._require = require  # the engine's: MethodNotFound when the server offers nothing of a kind
        self._seal = seal
        self._tasks = tasks

    def run(self, method: str, params: Dict[str, Any], exchange: Exchange) -> Dict[str, Any]:
        """Answer ``tools/call``, ``prompts/get`` or ``resources/read``: find, bind, run, and say what came of it.

        Raises:
            JsonRpcError: an unknown name (``-32602``; a resource not found
                ``-32002`` in the session era), bad params, a bad or tampered
                ``requestState``, a question needing an undeclared capability
                (``-32021``), a tool that needs the tasks extension the client
                did not declare (``-32021``).
        """
        name = params.get("uri") if method == "resources/read" else params.get("name")
        if not isinstance(name, str):
            raise InvalidParams(f"{method} needs a {'uri' if method == 'resources/read' else 'name'} (a string)")
        arguments = params.get("arguments")
        if arguments is not None and not isinstance(arguments, dict):
            raise InvalidParams(f"{method}: arguments must be an object")
        binding = arguments_digest(method, name, arguments or {})
        if exchange.stateless:
            exchange.input_responses = self._answers_so_far(params, binding)
        tool = self._catalog.tool(name) if method == "tools/call" else None
        try:
            if tool is not None and tool.task_support is not None:
                return self._as_task(tool, arguments, exchange)
            return self._runner(method, name, arguments, exchange)()
        except InputRequired as asked:
            if not exchange.stateless:  # cannot happen: a session's questions are requests
                raise JsonRpcError(-32603, "a question was not sent to the client") from None
            answers = {key: value for key, value in exchange.input_responses.items()}
            return {
                "resultType": "input_required",
                "inputRequests": asked.requests,
                "requestState": self._seal.seal(binding, answers, asked.requests),
            }

    def _as_task(self, tool: ToolDefinition, arguments: Optional[Dict[str, Any]], exchange: Exchange) -> Dict[str, Any]:
        """A call of a tool with task support: a task when the client declared the extension, else a plain call."""
        if not declares_tasks(exchange):
            if tool.task_support == "required":
                raise missing_tasks_extension(f"the tool {tool.name!r}")
            return self._runner("tools/call", tool.name, arguments, exchange)()
        twin = exchange.for_task()
        run = self._runner("tools/call", tool.name, arguments, twin)
        return self._tasks.call(run, twin, exchange.cancelled, explicit=tool.task_start == "explicit")

    def _answers_so_far(self, params: Dict[str, Any], binding: str) -> Dict[str, Any]:
        responses = params.get("inputResponses")
        state = params.get("requestState")
        if responses is not None and not isinstance(responses, dict):
            raise InvalidParams("inputResponses must be an object of answers, by key")
        answers: Dict[str, Any] = {}
        asked: Optional[List[Any]] = None
        if state is not None:
            opened = self._seal.open(state, binding)
            answers.update(opened["a"])
            asked = opened["q"]
        for key, value in (responses or {}).items():
            if asked is not None and key not in asked:
                continue  # an answer to nothing this server asked: ignored
            if not isinstance(value, dict):
                raise InvalidParams(f"inputResponses[{key!r}] must be an object (the client's result)")
            answers[key] = value
        return answers

    def _runner(
        self, method: str, name: str, arguments: Optional[Dict[str, Any]], exchange: Exchange
    ) -> Callable[[], Dict[str, Any]]:
        context = Context(exchange)
        if method == "tools/call":
            tool = self._catalog.tool(name)
            if tool is None:
                self._require("tools")
                raise InvalidParams(f"Unknown tool: {name}", {"name": name})
            if tool.timeout is not None:
                exchange.deadline = Deadline.after(tool.timeout)

            def call_tool() -> Dict[str, Any]:
                try:
                    kwargs = tool.bind(arguments)
                except ArgumentError as exc:
                    return error_result(f"Invalid arguments for tool {name!r}: {exc}")
                return self._tool_outcome(name, lambda: tool.run(kwargs, context), exchange)

            return call_tool
        if method == "prompts/get":
            prompt = self._catalog.prompt(name)
            if prompt is None:
                self._require("prompts")
                raise InvalidParams(f"Unknown prompt: {name}", {"name": name})

            def get_prompt() -> Dict[str, Any]:
                try:
                    got: Dict[str, Any] = run_user(lambda: prompt.get(arguments, context))
                    return got
                except ArgumentError as exc:
                    raise InvalidParams(f"Invalid arguments for prompt {name!r}: {exc}") from None

            return get_prompt
        found = self._catalog.find_resource(name)
        if found is None:
            code = -32602 if exchange.stateless else RESOURCE_NOT_FOUND_SESSION
            raise JsonRpcError(code, f"Resource not found: {name}", {"uri": name})
        resource, variables = found

        def read_resource() -> Dict[str, Any]:
            try:
                read: Dict[str, Any] = run_user(lambda: resource.read(name, variables, context))
                return read
            except ArgumentError as exc:
                raise InvalidParams(f"Resource {name!r}: {exc}", {"uri": name}) from None

        return read_resource

    def _tool_outcome(self, name: str, call: Callable[[], Dict[str, Any]], exchange: Exchange) -> Dict[str, Any]:
        """Run a tool; what it raises becomes an ``isError`` result (or passes, for the engine's own signals)."""
        left = exchange.deadline.remaining()
        try:
            if left is None:
                return call()
            return _with_deadline(name, call, left, exchange.cancelled)
        except (InputRequired, MissingClientCapability):
            raise
        except Exception as exc:  # the tool failed: its message goes back, its traceback to the log
            if isinstance(exc, JsonRpcError) and exchange.task_id is not None:
                raise  # in a task, a protocol error: the task fails with it
            logger.warning("tool %r failed: %s: %s", name, type(exc).__name__, exc, exc_info=True)
            return error_result(str(exc) or type(exc).__name__)
        except BaseException as exc:
            logger.error("tool %r raised %s", name, type(exc).__name__, exc_info=True)
            raise JsonRpcError(-32603, f"tool {name!r} ended with {type(exc).__name__}") from exc


def run_user(call: Callable[[], Any]) -> Any:
    """Run a resource, prompt or completion function: what it raises becomes ``-32603``.

    An ``Exception`` is answered with its message; a ``BaseException`` that
    is not one (``SystemExit``, ``KeyboardInterrupt``, a user's own) with its
    type's name, as in a tool, and its traceback is logged: it never leaves
    the request, so the thread that ran it (a WSGI server's own, under
    ``json_response=True``) answers and goes on.

    Raises:
        JsonRpcError: what the function raised, as the answer's error.
        InputRequired, ArgumentError: passed on for the engine.
    """
    try:
        return call()
    except (JsonRpcError, InputRequired, ArgumentError):
        raise
    except Exception as exc:
        logger.warning("a server function failed: %s: %s", type(exc).__name__, exc, exc_info=True)
        raise JsonRpcError(-32603, str(exc) or type(exc).__name__) from None
    except BaseException as exc:
        logger.error("a server function raised %s", type(exc).__name__, exc_info=True)
        raise JsonRpcError(-32603, f"the server function ended with {type(exc).__name__}") from exc


def _with_deadline(
    name: str, call: Callable[[], Dict[str, Any]], seconds: float, cancelled: threading.Event
) -> Dict[str, Any]:
    """Run ``call`` on a thread of its own; at the deadline, set ``cancelled`` and answer a timeout."""
    box: Dict[str, Any] = {}
    done = threading.Event()

    def run() -> None:
        try:
            box["result"] = call()
        except BaseException as exc:  # carried back to the request's thread
            box["error"] = exc
        finally:
            done.set()

    thread = threading.Thread(target=run, name=f"mcp-tool[{name}]", daemon=True)
    thread.start()
    if not done.wait(seconds):
        cancelled.set()
        logger.warning("tool %r did not finish within its timeout of %ss; answered as timed out", name, seconds)
        return error_result(f"tool {name!r} timed out after {seconds:g}s")
    if "error" in box:
        raise box["error"]
    result: Dict[str, Any] = box["result"]
    return result
