"""The tasks extension (``io.modelcontextprotocol/tasks``): long-running requests as tasks, seen as futures.

Theory of operation.  A client that declares the extension (in
``_meta["io.modelcontextprotocol/clientCapabilities"].extensions``) lets the
server answer a request such as ``tools/call`` with a *task* instead of the
result: ``resultType: "task"``, a ``taskId``, a ``status`` and a suggested
``pollIntervalMs``.  The client then polls ``tasks/get`` until the status is
terminal: ``completed`` (the original request's result is inlined under
``result``), ``failed`` (a JSON-RPC ``error``) or ``cancelled``.  A task in
``input_required`` carries ``inputRequests``, answered with the client's
handlers (:mod:`.mrtr`) and sent with ``tasks/update``.  ``tasks/cancel``
asks the server to stop (cooperatively).

:class:`TaskRunner` does the polling.  :meth:`TaskRunner.wait` polls on the
calling thread (a blocking ``call_tool``); :meth:`TaskRunner.submit` returns
a :class:`TaskFuture`, a ``concurrent.futures.Future`` polled on the
runner's own workers (``jsonrpc-mcp-tasks[<label>]-N``): its result is the
request's result, ``future.cancel()`` sends ``tasks/cancel``, and
``future.task_id`` names the task once the server made one.  Input handlers
run on the thread that polls, never on a reader or timer thread.  Every wait
between polls is bounded by the request's deadline and wakes at once when the
future is cancelled or the runner closes.

Thread-safety: every method may be called from any thread.
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import Future, InvalidStateError
from typing import Any, Callable, Dict, Optional, Set

from .._deadlines import wait_slice
from .._workers import PoolClosed, WorkerPool
from ..errors import (
    INTERNAL_ERROR,
    JsonRpcError,
    ProtocolError,
    RemoteError,
    RequestTimeout,
    TransportClosed,
    error_from_response,
)
from .client_features import ClientFeatures
from .mrtr import answer_input_requests
from .protocol import RESULT_TASK

logger = logging.getLogger(__name__)

#: The poll interval when the server suggests none.
DEFAULT_POLL_INTERVAL_S = 1.0
#: Bounds on the poll interval, whatever the server suggests.
MIN_POLL_INTERVAL_S = 0.05
MAX_POLL_INTERVAL_S = 30.0
#: Threads polling the tasks of :meth:`TaskRunner.submit` (more tasks queue).
TASK_WORKERS = 8
#: Deadline of one ``tasks/get``, ``tasks/update`` or ``tasks/cancel`` request.
TASK_REQUEST_TIMEOUT_S = 30.0
#: How long ``close()`` waits for the polling threads (their waits are woken at once).
CLOSE_WAIT_S = 2.0

TERMINAL = frozenset({"completed", "failed", "cancelled"})

#: ``request(method, params, timeout) -> result``: one request of the session, blocking.
Requester = Callable[[str, Dict[str, Any], Optional[float]], Any]


def is_task(result: Any) -> bool:
    """True when ``result`` is a ``CreateTaskResult`` (the server made a task of the request)."""
    return isinstance(result, dict) and result.get("resultType") == RESULT_TASK


class TaskFuture(Future):  # type: ignore[type-arg]
    """The future of a request that the server may run as a task.

    Its result is the request's result (a task's inlined ``result``);
    ``cancel()`` withdraws it and, once a task exists, sends ``tasks/cancel``
    (in the background: ``cancel()`` never blocks).  Thread-safe, as any
    ``concurrent.futures.Future``.

    Attributes:
        task_id: the task's id, once the server made one (``None`` before,
            and for a request the server answered at once).
        status: the task's last known status (``None`` before there is a task).
    """

    def __init__(self, runner: TaskRunner) -> None:
        super().__init__()
        self._runner = runner
        self.task_id: Optional[str] = None
        self.status: Optional[str] = None
        self.wake = threading.Event()  # set by cancel(): a poll in progress stops waiting
        self._known = threading.Event()  # set once there is a task, or the future is done
        self.add_done_callback(lambda _: self._known.set())

    def wait_for_task(self, timeout: Optional[float] = None) -> Optional[str]:
        """Wait until the server made a task of the call (or the call ended); its id, or ``None``.

        ``None`` also when ``timeout`` passed first, or the server answered at once.
        """
        self._known.wait(timeout)
        return self.task_id

    def _task_made(self, task_id: str) -> None:
        self.task_id = task_id
        self._known.set()

    def cancel(self) -> bool:
        """Withdraw the request; ask the server to cancel its task (when there is one)."""
        cancelled = super().cancel()
        if cancelled:
            self.wake.set()
            task_id = self.task_id
            if task_id is not None:
                self._runner.cancel_later(task_id)
        return cancelled


class TaskRunner:
    """Polls the tasks of one client.

    Args:
        request: sends one request of the session (with its ``_meta`` and
            headers) and returns its result.
        features: the client's handlers, for ``input_required`` tasks.
        label: for thread names and logs.
    """

    def __init__(self, request: Requester, features: ClientFeatures, label: str) -> None:
        self._request = request
        self._features = features
        self._label = label
        self._closing = threading.Event()
        self._pool = WorkerPool(TASK_WORKERS, f"jsonrpc-mcp-tasks[{label}]")
        # _lock guards _running (the futures being polled, woken by close()).
        self._lock = threading.Lock()
        self._running: Set[TaskFuture] = set()

    def submit(self, start: Callable[[], Any], deadline: Optional[float]) -> TaskFuture:
        """Run ``start()`` (the original request) and poll its task, if it becomes one, in the background.

        Raises:
            TransportClosed: the runner is closed.
        """
        future = TaskFuture(self)
        with self._lock:
            if self._closing.is_set():
                raise TransportClosed("MCP client closed")
            self._running.add(future)
        future.add_done_callback(self._forget)
        try:
            self._pool.submit(self._run, future, start, deadline)
        except PoolClosed:
            raise TransportClosed("MCP client closed") from None
        return future

    def _forget(self, future: Future[Any]) -> None:
        with self._lock:
            self._running.discard(future)

    def wait(self, created: Dict[str, Any], deadline: Optional[float], future: Optional[TaskFuture] = None) -> Any:
        """Poll the task ``created`` describes until it ends; return its result.

        Raises:
            RequestTimeout: ``deadline`` passed first (``tasks/cancel`` is sent).
            RemoteError: the task failed (its error), or the server cancelled it.
            ProtocolError: the server's answers do not make sense.
        """
        task_id = created.get("taskId")
        if not isinstance(task_id, str) or not task_id:
            raise ProtocolError("the server made a task without a taskId", created)
        if future is not None:
            future._task_made(task_id)
        try:
            return self._follow(task_id, created, deadline, future)
        except RequestTimeout:
            self.cancel_later(task_id)  # nobody waits for it any more
            raise

    def _follow(
        self, task_id: str, created: Dict[str, Any], deadline: Optional[float], future: Optional[TaskFuture]
    ) -> Any:
        task: Dict[str, Any] = created
        while True:
            status = task.get("status")
            if future is not None:
                future.status = status if isinstance(status, str) else None
                if future.cancelled():
                    return None
            if status in ("completed", "failed") and "result" not in task and "error" not in task:
                # A CreateTaskResult never inlines the outcome: tasks/get has it.
                task = self._get(task_id, deadline)
                if task.get("status") == status and "result" not in task and "error" not in task:
                    raise ProtocolError(f"task {task_id} is {status} without a result or an error", task)
                continue
            if status == "completed":
                return task.get("result")
            if status == "failed":
                error = task.get("error")
                if error is not None:
                    raise error_from_response(error)
                raise RemoteError(INTERNAL_ERROR, f"task {task_id} failed", task)
            if status == "cancelled":
                raise RemoteError(INTERNAL_ERROR, f"the server cancelled task {task_id}", task)
            if status == "input_required" and task.get("inputRequests"):
                responses = answer_input_requests(self._features, task.get("inputRequests"))
                self._request("tasks/update", {"taskId": task_id, "inputResponses": responses}, self._bound(deadline))
            elif status not in ("working", "input_required"):
                raise ProtocolError(f"task {task_id} has an unknown status {status!r}", task)
            else:
                self._pause(task, deadline, future, task_id)
            task = self._get(task_id, deadline)

    def cancel_later(self, task_id: str) -> None:
        """Send ``tasks/cancel`` on a worker (never blocks); failures are logged."""
        try:
            self._pool.submit(self._cancel_quietly, task_id)
        except PoolClosed:
            logger.debug("%s: tasks/cancel of %s not sent: closed", self._label, task_id)

    def close(self) -> None:
        """Stop polling: every waiting future fails with ``TransportClosed`` (bounded).  Idempotent."""
        with self._lock:
            self._closing.set()
            running = list(self._running)
        for future in running:
            future.wake.set()  # a poll waiting for its interval stops now
        self._pool.shutdown(CLOSE_WAIT_S)
        for future in running:
            _settle(future, exc=TransportClosed("MCP client closed"))

    # -- internals ----------------------------------------------------------------------

    def _run(self, future: TaskFuture, start: Callable[[], Any], deadline: Optional[float]) -> None:
        # The future stays PENDING while the task runs (never RUNNING), so that
        # cancel() works until the very end; whoever settles it second loses quietly.
        if future.cancelled():
            return
        try:
            result = start()
            if is_task(result):
                result = self.wait(result, deadline, future)
        except BaseException as exc:
            _settle(future, exc=exc)
            return
        _settle(future, result=result)

    def _get(self, task_id: str, deadline: Optional[float]) -> Dict[str, Any]:
        task = self._request("tasks/get", {"taskId": task_id}, self._bound(deadline))
        if not isinstance(task, dict):
            raise ProtocolError(f"tasks/get of {task_id} answered with something that is not an object", task)
        return task

    def _pause(
        self, task: Dict[str, Any], deadline: Optional[float], future: Optional[TaskFuture], task_id: str
    ) -> None:
        interval = task.get("pollIntervalMs")
        seconds = (
            float(interval) / 1000.0
            if isinstance(interval, (int, float)) and not isinstance(interval, bool)
            else DEFAULT_POLL_INTERVAL_S
        )
        seconds = min(max(seconds, MIN_POLL_INTERVAL_S), MAX_POLL_INTERVAL_S)
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise RequestTimeout("tools/call", None, None)
            seconds = min(seconds, left)
        wake = future.wake if future is not None else self._closing
        wake.wait(wait_slice(time.monotonic() + seconds))
        if self._closing.is_set():
            raise TransportClosed("MCP client closed")
        if future is not None and future.cancelled():
            return

    def _bound(self, deadline: Optional[float]) -> float:
        if deadline is None:
            return TASK_REQUEST_TIMEOUT_S
        left = deadline - time.monotonic()
        if left <= 0:
            raise RequestTimeout("tools/call", None, None)
        return min(TASK_REQUEST_TIMEOUT_S, left)

    def _cancel_quietly(self, task_id: str) -> None:
        try:
            self._request("tasks/cancel", {"taskId": task_id}, TASK_REQUEST_TIMEOUT_S)
        except JsonRpcError as exc:
            logger.debug("%s: tasks/cancel of %s failed: %s", self._label, task_id, exc)


def _settle(future: TaskFuture, result: Any = None, exc: Optional[BaseException] = None) -> None:
    try:
        if exc is not None:
            future.set_exception(exc)
        else:
            future.set_result(result)
    except InvalidStateError:  # cancelled meanwhile
        pass


__all__ = [
    "DEFAULT_POLL_INTERVAL_S",
    "MAX_POLL_INTERVAL_S",
    "MIN_POLL_INTERVAL_S",
    "CLOSE_WAIT_S",
    "TASK_REQUEST_TIMEOUT_S",
    "TASK_WORKERS",
    "TERMINAL",
    "TaskFuture",
    "TaskRunner",
    "is_task",
]
