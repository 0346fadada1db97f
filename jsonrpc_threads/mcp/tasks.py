"""The tasks extension (``io.modelcontextprotocol/tasks``): long-running requests as tasks, seen as futures.

Theory of operation.  A client that declares the extension (in
``_meta["io.modelcontextprotocol/clientCapabilities"].extensions``) lets the
server answer a request such as ``tools/call`` with a *task* instead of the
result: ``resultType: "task"``, a ``taskId``, a ``status`` and a suggested
``pollIntervalMs``.  The client then polls ``tasks/get`` until the status is
terminal: ``completed`` (the original request's result is inlined under
``result``), ``failed`` (a JSON-RPC ``error``) or ``cancelled``.  A task in
``input_required`` carries ``inputRequests``, answered with the client's
handlers (``mrtr``) and sent with ``tasks/update``.  ``tasks/cancel``
asks the server to stop (cooperatively).

``TaskRunner`` does the polling.  ``TaskRunner.wait`` polls on the
calling thread (a blocking ``call_tool``); ``TaskRunner.submit`` returns
a ``TaskFuture``, a ``concurrent.futures.Future`` polled on the
runner's own workers (``jsonrpc-mcp-tasks[<label>]-N``).  Every wait is
bounded by the call's one deadline (each poll by what is left of it, and
``TASK_REQUEST_TIMEOUT_S``) and wakes at once when the future is
cancelled or the runner closes; a submitted call's deadline is also kept by
a timer, so its future settles on time even while every worker is busy.

Cancelling.  ``future.cancel()`` before the server made a task withdraws the
request in flight (the server gets ``notifications/cancelled``); once the
task exists, from ``cancel()`` or as soon as its id arrives, ``tasks/cancel``
is sent, once.

User code never runs on the polling workers: a ``TaskFuture``'s
done-callbacks run where a request future's do, on the caller's thread when
the caller settles it (its own ``cancel()``) and on the runner's callback
workers (``jsonrpc-mcp-task-callback[<label>]-N``) when the library settles it,
so callbacks that block hold up other callbacks at worst, never a poll or a
deadline.  Input handlers run on the thread that polls, never on a reader or
timer thread.

Thread-safety: every method may be called from any thread.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from concurrent.futures import Future, InvalidStateError
from typing import Any, Callable, Dict, Optional, Set, Tuple

from ..deadlines.timeouts import Deadline, wait_slice
from ..errors import INTERNAL_ERROR, JsonRpcError, RemoteError, RequestTimeout, TransportClosed, error_from_response
from ..runtime.scheduler import default_scheduler
from ..runtime.workers import PoolClosed, WorkerPool
from .client_features import ClientFeatures
from .errors import ProtocolError
from .mrtr import answer_input_requests
from .protocol import RESULT_TASK

logger = logging.getLogger(__name__)

#: The poll interval when the server suggests none.
DEFAULT_POLL_INTERVAL_S = 1.0
#: Bounds on the poll interval, whatever the server suggests.
MIN_POLL_INTERVAL_S = 0.05
MAX_POLL_INTERVAL_S = 30.0
#: Threads polling the tasks of ``TaskRunner.submit`` (more tasks queue; their deadlines still hold).
TASK_WORKERS = 8
#: Threads running the done-callbacks of the futures the runner settles.
CALLBACK_WORKERS = 4
#: The most one ``tasks/get``, ``tasks/update`` or ``tasks/cancel`` may take (within the call's deadline).
TASK_REQUEST_TIMEOUT_S = 30.0
#: How long ``close()`` waits for the polling threads (their waits are woken at once), and for callbacks due.
CLOSE_WAIT_S = 2.0

TERMINAL = frozenset({"completed", "failed", "cancelled"})

#: ``request(method, params, deadline) -> result``: one request of the session, blocking.
Requester = Callable[[str, Dict[str, Any], Deadline], Any]
#: Withdraws a request future (``JsonRpcClient.cancel``), with a reason.
Withdraw = Callable[["Future[Any]", str], bool]


class _Settling(threading.local):
    """Per thread: True while the library settles a ``TaskFuture`` (its user callbacks go to a worker)."""

    active = False


_settling = _Settling()


def is_task(result: Any) -> bool:
    """True when ``result`` is a ``CreateTaskResult`` (the server made a task of the request)."""
    return isinstance(result, dict) and result.get("resultType") == RESULT_TASK


class TaskFuture(Future):  # type: ignore[type-arg]
    """The future of a request that the server may run as a task.

    Its result is the request's result (a task's inlined ``result``);
    ``cancel()`` withdraws the request in flight or, once a task exists,
    sends ``tasks/cancel`` (in the background: ``cancel()`` never blocks).
    Done-callbacks run on the caller's thread when the caller cancels it,
    on a callback worker of the client when the library settles it.
    Thread-safe, as any ``concurrent.futures.Future``.

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
        # _track_lock guards _request and _cancel_sent.
        self._track_lock = threading.Lock()
        self._request: Optional[Tuple[Future[Any], Withdraw]] = None  # the request in flight, before a task
        self._cancel_sent = False
        self.add_library_callback(lambda _: self._known.set())

    def add_done_callback(self, fn: Callable[[Future[Any]], object]) -> None:
        """Call ``fn(future)`` once it is done: see the class docstring for the thread it runs on."""
        super().add_done_callback(functools.partial(_deliver, self._runner, fn))

    def add_library_callback(self, fn: Callable[[Future[Any]], object]) -> None:
        """A done-callback of the library's own (short, never blocking): it runs on the settling thread."""
        super().add_done_callback(fn)

    def wait_for_task(self, timeout: Optional[float] = None) -> Optional[str]:
        """Wait until the server made a task of the call (or the call ended); its id, or ``None``.

        ``None`` also when ``timeout`` passed first, or the server answered at once.
        """
        self._known.wait(timeout)
        return self.task_id

    def track(self, request: Future[Any], withdraw: Withdraw) -> None:
        """The call sent ``request``: a ``cancel()`` before there is a task withdraws it (a ``Tracker``)."""
        with self._track_lock:
            self._request = (request, withdraw)
        if self.cancelled():
            withdraw(request, "Cancelled by the caller")

    def cancel(self) -> bool:
        """Withdraw the request in flight, or ask the server to cancel its task (when there is one)."""
        cancelled = super().cancel()
        if cancelled:
            self.wake.set()
            with self._track_lock:
                request = self._request if self.task_id is None else None
            if request is not None:
                request[1](request[0], "Cancelled by the caller")
            self._cancel_task()
        return cancelled

    def _task_made(self, task_id: str) -> None:
        self.task_id = task_id
        self._known.set()
        if self.cancelled():  # cancelled while the answer that made the task was on its way
            self._cancel_task()

    def _cancel_task(self) -> None:
        with self._track_lock:
            task_id = self.task_id
            if task_id is None or self._cancel_sent:
                return
            self._cancel_sent = True
        self._runner.cancel_later(task_id)


class TaskRunner:
    """Polls the tasks of one client.

    Args:
        request: sends one request of the session (with its ``_meta`` and
            headers) within a deadline and returns its result.
        features: the client's handlers, for ``input_required`` tasks.
        label: for thread names and logs.
    """

    def __init__(self, request: Requester, features: ClientFeatures, label: str) -> None:
        self._request = request
        self._features = features
        self._label = label
        self._closing = threading.Event()
        self._pool = WorkerPool(TASK_WORKERS, f"jsonrpc-mcp-tasks[{label}]")
        self._callbacks = WorkerPool(CALLBACK_WORKERS, f"jsonrpc-mcp-task-callback[{label}]")
        # _lock guards _running (the futures being polled, woken by close()).
        self._lock = threading.Lock()
        self._running: Set[TaskFuture] = set()

    def submit(self, start: Callable[[TaskFuture], Any], deadline: Deadline) -> TaskFuture:
        """Run ``start(future)`` (the original request) and poll its task, if it becomes one, in the background.

        Raises:
            TransportClosed: the runner is closed.
        """
        future = TaskFuture(self)
        with self._lock:
            if self._closing.is_set():
                raise TransportClosed("MCP client closed")
            self._running.add(future)
        future.add_library_callback(self._forget)
        if deadline.at is not None:
            timer = default_scheduler().call_later(deadline.remaining() or 0.0, self._expire, future, deadline)
            future.add_library_callback(lambda _: timer.cancel())
        try:
            self._pool.submit(self._run, future, start, deadline)
        except PoolClosed:
            raise TransportClosed("MCP client closed") from None
        return future

    def _forget(self, future: Future[Any]) -> None:
        with self._lock:
            self._running.discard(future)

    def wait(self, created: Dict[str, Any], deadline: Deadline, future: Optional[TaskFuture] = None) -> Any:
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

    def _follow(self, task_id: str, created: Dict[str, Any], deadline: Deadline, future: Optional[TaskFuture]) -> Any:
        task: Dict[str, Any] = created
        while True:
            status = task.get("status")
            if future is not None:
                future.status = status if isinstance(status, str) else None
                if future.done():  # cancelled, or past its deadline: nobody waits for the task any more
                    future._cancel_task()
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
                self._request("tasks/update", {"taskId": task_id, "inputResponses": responses}, _poll(deadline))
            elif status not in ("working", "input_required"):
                raise ProtocolError(f"task {task_id} has an unknown status {status!r}", task)
            else:
                self._pause(task, deadline, future)
            task = self._get(task_id, deadline)

    def cancel_later(self, task_id: str) -> None:
        """Send ``tasks/cancel`` on a worker (never blocks); failures are logged."""
        try:
            self._pool.submit(self._cancel_quietly, task_id)
        except PoolClosed:
            logger.debug("%s: tasks/cancel of %s not sent: closed", self._label, task_id)

    def run_callback(self, fn: Callable[[Future[Any]], object], future: Future[Any]) -> None:
        """Run a done-callback of a future the library settled, on a callback worker (what it raises is logged)."""
        try:
            self._callbacks.submit(fn, future)
        except PoolClosed:  # settled after close (rare): a thread of its own
            name = f"jsonrpc-mcp-task-callback[{self._label}]"
            threading.Thread(target=fn, args=(future,), name=name, daemon=True).start()

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
        self._callbacks.shutdown(CLOSE_WAIT_S, drain=True)

    # -- internals ----------------------------------------------------------------------

    def _run(self, future: TaskFuture, start: Callable[[TaskFuture], Any], deadline: Deadline) -> None:
        # The future stays PENDING while the task runs (never RUNNING), so that
        # cancel() works until the very end; whoever settles it second loses quietly.
        if future.done():
            return
        try:
            result = start(future)
            if is_task(result):
                result = self.wait(result, deadline, future)
        except BaseException as exc:
            _settle(future, exc=exc)
            return
        _settle(future, result=result)

    def _expire(self, future: TaskFuture, deadline: Deadline) -> None:
        # On the timer thread: settle, nothing more (user callbacks go to a callback worker).
        _settle(future, exc=RequestTimeout("tools/call", None, deadline.timeout))
        future.wake.set()

    def _get(self, task_id: str, deadline: Deadline) -> Dict[str, Any]:
        task = self._request("tasks/get", {"taskId": task_id}, _poll(deadline))
        if not isinstance(task, dict):
            raise ProtocolError(f"tasks/get of {task_id} answered with something that is not an object", task)
        return task

    def _pause(self, task: Dict[str, Any], deadline: Deadline, future: Optional[TaskFuture]) -> None:
        interval = task.get("pollIntervalMs")
        seconds = (
            float(interval) / 1000.0
            if isinstance(interval, (int, float)) and not isinstance(interval, bool)
            else DEFAULT_POLL_INTERVAL_S
        )
        seconds = min(max(seconds, MIN_POLL_INTERVAL_S), MAX_POLL_INTERVAL_S)
        left = deadline.remaining()
        if left is not None:
            if left <= 0:
                raise RequestTimeout("tools/call", None, deadline.timeout)
            seconds = min(seconds, left)
        wake = future.wake if future is not None else self._closing
        wake.wait(wait_slice(time.monotonic() + seconds))
        if self._closing.is_set():
            raise TransportClosed("MCP client closed")

    def _cancel_quietly(self, task_id: str) -> None:
        try:
            self._request("tasks/cancel", {"taskId": task_id}, Deadline.after(TASK_REQUEST_TIMEOUT_S))
        except JsonRpcError as exc:
            logger.debug("%s: tasks/cancel of %s failed: %s", self._label, task_id, exc)


def _poll(deadline: Deadline) -> Deadline:
    """One request of a task's polling: what is left of the call's deadline, at most ``TASK_REQUEST_TIMEOUT_S``."""
    if deadline.expired:
        raise RequestTimeout("tools/call", None, deadline.timeout)
    return deadline.capped(TASK_REQUEST_TIMEOUT_S)


def _deliver(runner: TaskRunner, fn: Callable[[Future[Any]], object], future: Future[Any]) -> None:
    """A user's done-callback: on a callback worker when the library settles the future, else here."""
    if _settling.active:
        runner.run_callback(fn, future)
    else:
        fn(future)


def _settle(future: TaskFuture, result: Any = None, exc: Optional[BaseException] = None) -> None:
    _settling.active = True
    try:
        if exc is not None:
            future.set_exception(exc)
        else:
            future.set_result(result)
    except InvalidStateError:  # settled or cancelled meanwhile
        pass
    finally:
        _settling.active = False


__all__ = [
    "CALLBACK_WORKERS",
    "CLOSE_WAIT_S",
    "DEFAULT_POLL_INTERVAL_S",
    "MAX_POLL_INTERVAL_S",
    "MIN_POLL_INTERVAL_S",
    "TASK_REQUEST_TIMEOUT_S",
    "TASK_WORKERS",
    "TERMINAL",
    "TaskFuture",
    "TaskRunner",
    "is_task",
]
