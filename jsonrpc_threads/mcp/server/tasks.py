"""The tasks extension on the server side (``io.modelcontextprotocol/tasks``, SEP-2663): tool calls run as tasks.

Theory of operation.  A tool declared with ``task_support`` (``"optional"``
or ``"required"``) may run as a *task* when a stateless-era request's client
declared the extension (``_meta`` clientCapabilities ``extensions``): the
server answers ``tools/call`` with a ``CreateTaskResult`` (``resultType:
"task"``, ``taskId``, ``status``, ``createdAt``, ``lastUpdatedAt``,
``ttlMs``, ``pollIntervalMs``) and runs the function on a worker of
``TaskTable``'s pool (``TASK_WORKERS`` daemon threads at most; more tasks
queue).  The task is in the table before the answer leaves, so a
``tasks/get`` right after it finds it.  The client then:

- polls ``tasks/get``: the task's status (``working``, ``input_required``,
  ``completed``, ``failed``, ``cancelled``), the questions of a parked task
  (``inputRequests``), and, once terminal, the tool's result inlined under
  ``result`` (a tool's own error is ``completed`` with ``isError``) or, for a
  protocol error (a ``JsonRpcError`` the tool raised, a ``BaseException``),
  ``failed`` with the JSON-RPC ``error``;
- answers a parked task's questions with ``tasks/update`` (``inputResponses``
  by key; an empty ack; a task waits in ``input_required`` until every
  question it asked at once is answered, and answered keys leave
  ``inputRequests`` at once);
- ``tasks/cancel``: an empty ack; the task is ``cancelled`` at once and its
  function's ``Context.cancelled`` is set (a cooperative stop: what it
  returns later is dropped).  A terminal task's cancel is the same ack.

A question (``Context.elicit``, ``sample``, ``list_roots``, ``ask``) asked
inside a task parks it in ``input_required`` until ``tasks/update`` brings
the answers, within the question's ``timeout`` (``DEFAULT_QUESTION_TIMEOUT_S``
by default; ``RequestTimeout`` in the tool after it).

When the task begins.  By default (``task_start="call"``) before the
function runs.  A tool declared with ``task_start="explicit"`` starts as an
ordinary call on a task worker while the request waits: its questions are
multi-round requests (``input_required`` results, re-runs), and it becomes a
task when it calls ``Context.start_task()``: the request is answered with the
``CreateTaskResult`` then, and the function goes on as the task.  A function
that never calls it answers the request as a plain call.

A task stays readable for ``ttlMs`` after its last change; terminal tasks
older than that are dropped when the table is next used.  A task id is 128
random bits: whoever knows it may read, answer and cancel the task (the
stateless era has no sessions to tie it to).

Thread-safety: ``TaskTable`` is thread-safe; one lock (and its condition)
guards every task's state; user code never runs under it.
"""

from __future__ import annotations

import itertools
import logging
import secrets
import threading
import time
from datetime import datetime, timezone
from typing import Any, Callable, Dict, List, Optional, Tuple

from ...deadlines.timeouts import Deadline, wait_slice
from ...errors import InvalidParams, JsonRpcError, RequestTimeout
from ...runtime.workers import PoolClosed, WorkerPool
from ..protocol import RESULT_TASK, TASKS_EXTENSION
from .context import DEFAULT_QUESTION_TIMEOUT_S, Exchange, InputRequired

__all__ = [
    "CLOSE_WAIT_S",
    "DEFAULT_TTL_MS",
    "HANDOFF_SLICE_S",
    "POLL_INTERVAL_MS",
    "TASK_METHODS",
    "TASK_WORKERS",
    "TaskCancelled",
    "TaskTable",
    "declares_tasks",
    "missing_tasks_extension",
]

logger = logging.getLogger("jsonrpc_threads.mcp.server")

#: The most task functions running at once (more tasks queue for a worker).
TASK_WORKERS = 16
#: How long a task stays readable after its last change.
DEFAULT_TTL_MS = 3_600_000
#: The poll interval suggested to clients.
POLL_INTERVAL_MS = 250
#: ``close()``: how long to wait for the pool's threads (tasks still running are cancelled first).
CLOSE_WAIT_S = 2.0
#: A request waiting for an explicit-start tool's first outcome looks at its own cancellation this often.
HANDOFF_SLICE_S = 0.5
#: The methods of the extension a server answers.
TASK_METHODS = frozenset({"tasks/get", "tasks/update", "tasks/cancel"})
TERMINAL = frozenset({"completed", "failed", "cancelled"})

#: What a task function's run came to: ("result", dict), ("error", JsonRpcError), ("asked", InputRequired).
Outcome = Tuple[str, Any]


class TaskCancelled(JsonRpcError):
    """Raised in a task's function that waits for an answer when the task is cancelled: let it pass."""

    def __init__(self, task_id: str) -> None:
        super().__init__(-32800, f"task {task_id} was cancelled")


def declares_tasks(exchange: Exchange) -> bool:
    """True when the request's client declared the tasks extension (stateless era only)."""
    extensions = exchange.client_capabilities.get("extensions")
    return exchange.stateless and isinstance(extensions, dict) and TASKS_EXTENSION in extensions


def missing_tasks_extension(what: str) -> JsonRpcError:
    """The ``-32021`` error of a request that needs the extension the client did not declare."""
    return JsonRpcError(
        -32021,
        f"{what} needs the {TASKS_EXTENSION} extension, which the client did not declare",
        {"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}},
    )


def _now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class _Task:
    """One task's state (guarded by its table's lock)."""

    def __init__(self, task_id: str, cancelled: threading.Event, ttl_ms: int) -> None:
        self.id = task_id
        self.status = "working"
        self.created_at = self.updated_at = _now_iso()
        self.touched = time.monotonic()
        self.ttl_ms = ttl_ms
        self.cancelled = cancelled
        self.pending: Dict[str, Dict[str, Any]] = {}  # questions not answered yet, by key
        self.answers: Dict[str, Any] = {}  # answers not taken by the function yet, by key
        self.result: Optional[Dict[str, Any]] = None
        self.error: Optional[Dict[str, Any]] = None

    def set_status(self, status: str) -> None:
        self.status = status
        self.updated_at = _now_iso()
        self.touched = time.monotonic()

    def envelope(self) -> Dict[str, Any]:
        return {
            "taskId": self.id,
            "status": self.status,
            "createdAt": self.created_at,
            "lastUpdatedAt": self.updated_at,
            "ttlMs": self.ttl_ms,
            "pollIntervalMs": POLL_INTERVAL_MS,
        }

    def detailed(self) -> Dict[str, Any]:
        wire = self.envelope()
        if self.status == "input_required":
            wire["inputRequests"] = {key: dict(request) for key, request in self.pending.items()}
        elif self.status == "completed" and self.result is not None:
            wire["result"] = self.result
        elif self.status == "failed" and self.error is not None:
            wire["error"] = self.error
        return wire


class _Handoff:
    """An explicit-start run's first outcome, for the request waiting on it: a task began, or the run ended."""

    def __init__(self) -> None:
        self.decided = threading.Event()
        self.outcome: Optional[Outcome] = None
        self._lock = threading.Lock()  # guards outcome

    def offer(self, outcome: Outcome) -> bool:
        """Decide ``outcome`` unless decided already; True when it was."""
        with self._lock:
            if self.outcome is not None:
                return False
            self.outcome = outcome
        self.decided.set()
        return True


class TaskTable:
    """The tasks of one server, and the pool that runs them.  Thread-safe.

    Args:
        ttl_ms: how long a task stays readable after its last change.
        notify: ``notify(task_wire)``, told of each change of a task's status
            (after the lock is released; what it raises is logged).
    """

    def __init__(self, ttl_ms: int = DEFAULT_TTL_MS, notify: Optional[Callable[[Dict[str, Any]], None]] = None) -> None:
        self.ttl_ms = ttl_ms
        self._notify = notify
        # _lock guards _tasks, every task's state, _pool and _users; _changed (on it) wakes parked functions.
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._tasks: Dict[str, _Task] = {}
        self._pool: Optional[WorkerPool] = None
        self._users = 0
        self._pools = itertools.count(1)

    # -- who keeps the pool open -----------------------------------------------------------

    def attach(self) -> None:
        """A way of serving the server opened (stdio, a test client, a WSGI app)."""
        with self._lock:
            self._users += 1

    def detach(self) -> None:
        """A way of serving closed: the last one out cancels the running tasks and stops the pool."""
        with self._lock:
            self._users = max(0, self._users - 1)
            last = self._users == 0
        if last:
            self.close()

    def close(self) -> None:
        """Cancel every running task and stop the pool (bounded join).  Idempotent; a later task starts a new pool."""
        with self._lock:
            pool, self._pool = self._pool, None
            live = [task for task in self._tasks.values() if task.status not in TERMINAL]
            for task in live:
                task.set_status("cancelled")
                task.pending.clear()
                task.cancelled.set()
            self._changed.notify_all()
        if pool is not None:
            pool.shutdown(CLOSE_WAIT_S)

    # -- tools/call as a task -------------------------------------------------------------

    def call(
        self,
        run: Callable[[], Dict[str, Any]],
        exchange: Exchange,
        request_cancelled: threading.Event,
        *,
        explicit: bool,
    ) -> Dict[str, Any]:
        """Run a tool call as a task: its ``CreateTaskResult`` (or, for an explicit start, maybe the plain result).

        Args:
            run: the call (the tool's function over ``exchange``'s context).
            exchange: the task's own exchange (its ``cancelled`` is the task's).
            request_cancelled: the request's cancellation (before an explicit start).
            explicit: the task begins at ``Context.start_task()``, not before the call.

        Raises:
            InputRequired: an explicit-start run asked a question before its task began.
            JsonRpcError: the server is closing (``-32603``), or the run's protocol error before its task began.
        """
        task = _Task(secrets.token_hex(16), exchange.cancelled, self.ttl_ms)
        if not explicit:
            exchange.task_id = task.id
            exchange.park = lambda questions, timeout: self._park(task, questions, timeout)
            self._register(task)
            self._submit(task, run, None)
            return {"resultType": RESULT_TASK, **self._envelope(task)}
        handoff = _Handoff()

        def begin() -> bool:
            if not handoff.offer(("task", None)):
                return False
            exchange.task_id = task.id
            exchange.park = lambda questions, timeout: self._park(task, questions, timeout)
            self._register(task)
            return True

        exchange.start_task = begin
        self._submit(task, run, handoff)
        while not handoff.decided.wait(HANDOFF_SLICE_S):
            if request_cancelled.is_set():
                exchange.cancelled.set()  # the run is the request's until it becomes a task
        outcome: Outcome = handoff.outcome or ("task", None)
        kind, value = outcome
        if kind == "task":
            return {"resultType": RESULT_TASK, **self._envelope(task)}
        if kind == "result":
            result: Dict[str, Any] = value
            return result
        error: BaseException = value  # InputRequired, or the run's protocol error
        raise error

    def _register(self, task: _Task) -> None:
        with self._lock:
            self._purge()
            self._tasks[task.id] = task
            wire = task.envelope()
        self._tell(wire)

    def _envelope(self, task: _Task) -> Dict[str, Any]:
        with self._lock:
            return task.envelope()

    def _submit(self, task: _Task, run: Callable[[], Dict[str, Any]], handoff: Optional[_Handoff]) -> None:
        with self._lock:
            if self._pool is None:
                self._pool = WorkerPool(TASK_WORKERS, f"mcp-task-worker-{next(self._pools)}")
            pool = self._pool
        try:
            pool.submit(self._execute, task, run, handoff)
        except PoolClosed:
            self._settle(task, ("error", JsonRpcError(-32603, "the server is closing")))
            raise JsonRpcError(-32603, "the server is closing: the task was not started") from None

    def _execute(self, task: _Task, run: Callable[[], Dict[str, Any]], handoff: Optional[_Handoff]) -> None:
        """On a task worker: run the call; its outcome settles the task (or answers the request, before a start)."""
        outcome: Outcome
        try:
            outcome = ("result", run())
        except InputRequired as asked:
            outcome = ("asked", asked)
        except JsonRpcError as exc:
            outcome = ("error", exc)
        except BaseException as exc:  # the task ends, whatever ended it
            logger.error("task %s ended with %s", task.id, type(exc).__name__, exc_info=True)
            outcome = ("error", JsonRpcError(-32603, f"the task ended with {type(exc).__name__}"))
        if handoff is not None and handoff.offer(outcome):
            return  # before its task began: the request answers it
        if outcome[0] == "asked":  # cannot happen: a task's questions park it
            outcome = ("error", JsonRpcError(-32603, "a question of the task was not asked"))
        self._settle(task, outcome)

    def _settle(self, task: _Task, outcome: Outcome) -> None:
        kind, value = outcome
        with self._lock:
            if task.status in TERMINAL:
                return  # cancelled meanwhile: what the function returned is dropped
            task.pending.clear()
            if kind == "result":
                task.result = value
                task.set_status("completed")
            else:
                error = value if isinstance(value, JsonRpcError) else JsonRpcError(-32603, str(value))
                task.error = {"code": error.code, "message": error.message}
                if error.data is not None:
                    task.error["data"] = error.data
                task.set_status("failed")
            self._changed.notify_all()
            wire = task.detailed()
        self._tell(wire)

    # -- a task's questions -------------------------------------------------------------

    def _park(self, task: _Task, questions: Dict[str, Dict[str, Any]], timeout: Optional[float]) -> Dict[str, Any]:
        """On the task's worker: ask ``questions`` (``input_required``) and wait for every answer.

        Raises:
            TaskCancelled: the task was cancelled meanwhile.
            RequestTimeout: not every answer came within ``timeout``.
        """
        deadline = Deadline.after(timeout, DEFAULT_QUESTION_TIMEOUT_S)
        with self._lock:
            if task.status in TERMINAL:
                raise TaskCancelled(task.id)
            task.pending.update({key: dict(question) for key, question in questions.items()})
            task.set_status("input_required")
            wire = task.detailed()
        self._tell(wire)
        with self._lock:
            while not all(key in task.answers for key in questions):
                if task.status in TERMINAL:
                    raise TaskCancelled(task.id)
                left = deadline.remaining()
                if left is not None and left <= 0:
                    for key in questions:
                        task.pending.pop(key, None)
                    if not task.pending:
                        task.set_status("working")
                    raise RequestTimeout("tasks/update", None, timeout, "the client did not answer the task in time")
                self._changed.wait(wait_slice(None if left is None else time.monotonic() + left))
            return {key: task.answers.pop(key) for key in questions}

    # -- the extension's methods --------------------------------------------------------

    def answer(self, method: str, params: Dict[str, Any], exchange: Exchange) -> Dict[str, Any]:
        """Answer ``tasks/get``, ``tasks/update`` or ``tasks/cancel``.

        Raises:
            JsonRpcError: ``-32021`` when the client did not declare the
                extension; ``InvalidParams`` for bad params or an unknown task.
        """
        if not declares_tasks(exchange):
            raise missing_tasks_extension(method)
        task_id = params.get("taskId")
        if not isinstance(task_id, str):
            raise InvalidParams(f"{method} needs a taskId (a string)")
        responses = params.get("inputResponses") if method == "tasks/update" else {}
        if not isinstance(responses, dict):
            raise InvalidParams("tasks/update needs inputResponses (an object of answers, by key)")
        told: Optional[Dict[str, Any]] = None
        with self._lock:
            self._purge()
            task = self._tasks.get(task_id)
            if task is None:
                raise InvalidParams(f"unknown task {task_id!r}", {"taskId": task_id})
            if method == "tasks/get":
                return task.detailed()
            if method == "tasks/cancel":
                if task.status not in TERMINAL:
                    task.pending.clear()
                    task.set_status("cancelled")
                    task.cancelled.set()
                    told = task.detailed()
            else:
                for key, value in responses.items():
                    if key in task.pending:  # an answer to nothing asked is ignored
                        del task.pending[key]
                        task.answers[key] = value
                if task.status == "input_required" and not task.pending:
                    task.set_status("working")
                    told = task.detailed()
            self._changed.notify_all()
        if told is not None:
            self._tell(told)
        return {}

    def _purge(self) -> None:
        """With the lock held: drop the terminal tasks past their time to live."""
        now = time.monotonic()
        expired = [
            task_id
            for task_id, task in self._tasks.items()
            if task.status in TERMINAL and now - task.touched > task.ttl_ms / 1000.0
        ]
        for task_id in expired:
            del self._tasks[task_id]

    def _tell(self, wire: Dict[str, Any]) -> None:
        if self._notify is None:
            return
        try:
            self._notify(wire)
        except Exception:  # a listener gone away must not stop a task
            logger.debug("a task notification was not sent", exc_info=True)

    def running(self) -> List[str]:
        """The ids of the tasks not terminal yet."""
        with self._lock:
            return [task.id for task in self._tasks.values() if task.status not in TERMINAL]
