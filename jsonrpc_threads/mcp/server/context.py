"""What a tool, resource or prompt function sees of its request: ``Context``, synchronous.

Theory of operation.  Each request that runs user code gets an ``Exchange``,
made by the way the server runs (stdio, WSGI, memory): the request's ids, its
era, the client's declared identity and capabilities, the HTTP headers, a
``cancelled`` event, the request's deadline, and two ways back to the client
(a notification tied to the request, and, in the session era only, a request
to the client that waits for its answer).  ``Context`` is the face a user's
function gets of it: progress, logs, and the questions a tool asks the client
(``elicit``, ``sample``, ``list_roots``, or several at once with ``ask``).

The same tool code runs in both eras.  Over a 2025-era session a question is a
request sent to the client, answered before ``ask`` returns.  In the stateless
era (2026-07-28) the server never sends a request: a question nobody has
answered yet ends the run with ``InputRequired``, the engine answers
``input_required`` with the questions and a signed ``requestState``, and the
client's retry runs the function again from the start, with the answers in
hand: the same question (same key) now returns its answer.  Functions are run
again, so they should ask their questions before doing what must not happen
twice.

A tool run as a task (the tasks extension, see ``tasks``) asks otherwise: a
question parks the task in ``input_required`` and waits, on the task's worker,
for the client's ``tasks/update``; nothing is run again.

Thread-safety: a ``Context`` belongs to one request; its methods may be called
from the thread that runs the function or from threads it starts.
"""

from __future__ import annotations

import itertools
import threading
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence

from ...deadlines.timeouts import Deadline
from ...errors import InvalidParams, JsonRpcError, RequestTimeout

__all__ = [
    "DEFAULT_QUESTION_TIMEOUT_S",
    "LOG_LEVELS",
    "Context",
    "Exchange",
    "InputRequired",
    "MissingClientCapability",
]

#: How long a question to the client (over a session) waits when the tool names no ``timeout``.
DEFAULT_QUESTION_TIMEOUT_S = 300.0
#: The log levels of MCP, least severe first (syslog's).
LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")

#: What each question needs the client to have declared.
_CAPABILITY_OF = {"elicitation/create": "elicitation", "sampling/createMessage": "sampling", "roots/list": "roots"}


class InputRequired(Exception):
    """Raised inside a stateless-era run: the function asked what the client has not answered yet.

    Not an error: the engine turns it into an ``input_required`` result.
    User code should let it pass (an ``except Exception`` around a question
    that swallows it makes the tool answer without its input).

    Attributes:
        requests: ``{key: {"method": ..., "params": ...}}``, the questions to ask.
    """

    def __init__(self, requests: Dict[str, Dict[str, Any]]) -> None:
        super().__init__(f"input required: {sorted(requests)}")
        self.requests = requests


class MissingClientCapability(JsonRpcError):
    """The request needs a capability the client did not declare (``-32021``; ``data.requiredCapabilities``)."""

    def __init__(self, capability: str) -> None:
        super().__init__(
            -32021,
            f"the client did not declare the {capability!r} capability this request needs",
            {"requiredCapabilities": {capability: {}}},
        )


class Exchange:
    """One request's link to its client, made by the way the server runs.

    Attributes:
        request_id: the JSON-RPC id (``None`` for a notification).
        method: the request's method.
        stateless: True in the 2026-07-28 era (questions become ``input_required``).
        protocol_version: the era's revision (the session's, or the request's ``_meta``).
        client_info: what the client said it is (``{}`` when it said nothing).
        client_capabilities: what the client declared.
        session_id: the session's id (HTTP, 2025 era), else ``None``.
        http_headers: the request's HTTP headers, lower-case names (``{}`` over stdio).
        progress_token: the request's ``_meta.progressToken``, or ``None``.
        log_level: the least severe level the client wants (``None``: no log notifications).
        cancelled: set when the client cancels the request (or goes away).
        deadline: when the answer is no longer wanted (a tool's ``timeout``), or never.
        input_responses: the answers the client sent with this round (stateless era).
        task_id: the task this run is (the tasks extension), else ``None``.
        park: in a task, asks the client questions through the task and waits
            for the answers (``park(questions, timeout) -> answers``), else ``None``.
        start_task: for a tool whose task begins when it says so, begins it
            (``start_task() -> bool``), else ``None``.
    """

    def __init__(
        self,
        *,
        request_id: Any,
        method: str,
        stateless: bool,
        protocol_version: str,
        client_info: Optional[Mapping[str, Any]] = None,
        client_capabilities: Optional[Mapping[str, Any]] = None,
        session_id: Optional[str] = None,
        http_headers: Optional[Mapping[str, str]] = None,
        progress_token: Any = None,
        log_level: Optional[str] = None,
        notify: Optional[Callable[[str, Dict[str, Any]], None]] = None,
        ask: Optional[Callable[[str, Dict[str, Any], Optional[float]], Any]] = None,
        cancelled: Optional[threading.Event] = None,
        end_stream: Optional[Callable[[], None]] = None,
    ) -> None:
        self.request_id = request_id
        self.method = method
        self.stateless = stateless
        self.protocol_version = protocol_version
        self.client_info: Dict[str, Any] = dict(client_info or {})
        self.client_capabilities: Dict[str, Any] = dict(client_capabilities or {})
        self.session_id = session_id
        self.http_headers: Dict[str, str] = dict(http_headers or {})
        self.progress_token = progress_token
        self.log_level = log_level
        self.cancelled = cancelled if cancelled is not None else threading.Event()
        self.deadline = Deadline.never()
        self.input_responses: Dict[str, Any] = {}
        self.task_id: Optional[str] = None
        self.park: Optional[Callable[[Dict[str, Dict[str, Any]], Optional[float]], Dict[str, Any]]] = None
        self.start_task: Optional[Callable[[], bool]] = None
        self._notify = notify
        self._ask = ask
        self.end_stream = end_stream

    def for_task(self) -> Exchange:
        """A twin of this exchange for a run that outlives its request: its own ``cancelled``, no way back."""
        twin = Exchange(
            request_id=self.request_id,
            method=self.method,
            stateless=self.stateless,
            protocol_version=self.protocol_version,
            client_info=self.client_info,
            client_capabilities=self.client_capabilities,
            session_id=self.session_id,
            http_headers=self.http_headers,
        )
        twin.input_responses = dict(self.input_responses)
        return twin

    def notify(self, method: str, params: Dict[str, Any]) -> None:
        """Send a notification tied to this request (dropped when the way back is gone)."""
        if self._notify is not None and not self.cancelled.is_set():
            self._notify(method, params)

    def ask(self, method: str, params: Dict[str, Any], timeout: Optional[float]) -> Any:
        """Send the client a request and wait for its result (session era).

        Raises:
            RequestTimeout: no answer within ``timeout``.
            JsonRpcError: the client answered with an error, or there is no way to ask.
        """
        if self._ask is None:
            raise JsonRpcError(-32603, f"this connection cannot send the client a {method!r} request")
        return self._ask(method, params, timeout)


class Context:
    """The request a tool, resource or prompt function is serving; a parameter annotated ``Context`` gets it.

    Thread-safe: its methods may be called from the function's thread or from
    threads it starts, while the request runs.

    Attributes:
        cancelled: a ``threading.Event`` set when the client cancels the
            request (``notifications/cancelled``), goes away, or the tool's
            ``timeout`` passes: a long tool checks it and stops.
    """

    def __init__(self, exchange: Exchange) -> None:
        self._exchange = exchange
        self.cancelled: threading.Event = exchange.cancelled
        self._keys = itertools.count(1)
        self._lock = threading.Lock()  # guards _keys

    def __repr__(self) -> str:
        return f"<Context {self._exchange.method} id={self._exchange.request_id!r}>"

    # -- what the request is -------------------------------------------------------------

    @property
    def request_id(self) -> Any:
        """The JSON-RPC id of the request."""
        return self._exchange.request_id

    @property
    def session_id(self) -> Optional[str]:
        """The session's id (HTTP in the 2025 era), else ``None``."""
        return self._exchange.session_id

    @property
    def protocol_version(self) -> str:
        """The protocol revision of this request (its session's, or its ``_meta``'s)."""
        return self._exchange.protocol_version

    @property
    def client_info(self) -> Dict[str, Any]:
        """What the client said it is (``name``, ``version``, ...); ``{}`` when it said nothing."""
        return dict(self._exchange.client_info)

    @property
    def client_capabilities(self) -> Dict[str, Any]:
        """The capabilities the client declared."""
        return dict(self._exchange.client_capabilities)

    @property
    def http_headers(self) -> Dict[str, str]:
        """The request's HTTP headers, names in lower case (``{}`` over stdio)."""
        return dict(self._exchange.http_headers)

    @property
    def deadline(self) -> Deadline:
        """When the answer stops being wanted (the tool's ``timeout``); ``Deadline.never()`` without one."""
        return self._exchange.deadline

    # -- telling the client --------------------------------------------------------------

    def progress(self, progress: float, total: Optional[float] = None, message: Optional[str] = None) -> None:
        """Report progress, when the client asked for it (its request carried a ``progressToken``).

        Args:
            progress: how far along (should grow with each report).
            total: the total, when known.
            message: a short human-readable status.
        """
        token = self._exchange.progress_token
        if token is None:
            return
        params: Dict[str, Any] = {"progressToken": token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        self._exchange.notify("notifications/progress", params)

    def log(self, level: str, data: Any, logger: Optional[str] = None) -> None:
        """Send the client a log message, when its level is at least the one the client asked for.

        Args:
            level: one of ``LOG_LEVELS`` (``"info"``, ``"warning"``, ...).
            data: anything JSON-encodable (a string, usually).
            logger: the name of the logger, shown by the client.

        Raises:
            ValueError: ``level`` is not a level of MCP.
        """
        if level not in LOG_LEVELS:
            raise ValueError(f"not an MCP log level: {level!r} (one of {', '.join(LOG_LEVELS)})")
        wanted = self._exchange.log_level
        if wanted is None or LOG_LEVELS.index(level) < LOG_LEVELS.index(wanted):
            return
        params: Dict[str, Any] = {"level": level, "data": data}
        if logger is not None:
            params["logger"] = logger
        self._exchange.notify("notifications/message", params)

    def end_stream(self) -> bool:
        """Over HTTP in a session, end this request's SSE stream now: the client reconnects and gets the rest.

        What the run sends afterwards, its result included, waits for the
        client's ``GET`` with ``Last-Event-ID``.  For long runs behind proxies
        that cut idle connections.  Elsewhere (stdio, the stateless era, a JSON
        answer) it does nothing.

        Returns:
            True when a stream was ended.
        """
        end = self._exchange.end_stream
        if end is None:
            return False
        end()
        return True

    # -- asking the client ---------------------------------------------------------------

    def elicit(
        self, message: str, schema: Mapping[str, Any], *, key: Optional[str] = None, timeout: Optional[float] = None
    ) -> Dict[str, Any]:
        """Ask the user, through the client, to fill in a form.

        Args:
            message: what to ask.
            schema: the form: a flat object JSON Schema (``requestedSchema``).
            key: this question's name in the stateless era's ``inputRequests``
                (default: numbered in the order the run asks).
            timeout: over a session, how long to wait for the answer (default
                ``DEFAULT_QUESTION_TIMEOUT_S``).

        Returns:
            The client's answer: ``{"action": "accept" | "decline" | "cancel", "content": {...}}``.

        Raises:
            MissingClientCapability: the client did not declare ``elicitation``.
            RequestTimeout: no answer in time.
            InputRequired: (stateless era) not answered yet; let it pass.
        """
        params = {"message": message, "requestedSchema": dict(schema)}
        return self._ask_one("elicitation/create", params, key, timeout)  # type: ignore[no-any-return]

    def sample(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        max_tokens: int = 1000,
        key: Optional[str] = None,
        timeout: Optional[float] = None,
        **params: Any,
    ) -> Dict[str, Any]:
        """Ask the client's LLM for a completion (``sampling/createMessage``).

        Args:
            messages: the conversation (``{"role", "content"}`` dicts; a string content is made a text block).
            max_tokens: ``maxTokens``.
            key: as for ``elicit``.
            timeout: as for ``elicit``.
            params: more fields of the request as MCP spells them (``systemPrompt``, ``temperature``, ...).

        Returns:
            The client's result (``{"role", "content", "model", ...}``).

        Raises:
            MissingClientCapability, RequestTimeout, InputRequired: as for ``elicit``.
        """
        wire: List[Dict[str, Any]] = []
        for item in messages:
            entry = dict(item)
            if isinstance(entry.get("content"), str):
                entry["content"] = {"type": "text", "text": entry["content"]}
            wire.append(entry)
        request = {"messages": wire, "maxTokens": max_tokens, **params}
        return self._ask_one("sampling/createMessage", request, key, timeout)  # type: ignore[no-any-return]

    def list_roots(self, *, key: Optional[str] = None, timeout: Optional[float] = None) -> List[Dict[str, Any]]:
        """The client's roots (``roots/list``): ``[{"uri", "name"?}]``.

        Raises:
            MissingClientCapability, RequestTimeout, InputRequired: as for ``elicit``.
        """
        result = self._ask_one("roots/list", {}, key, timeout)
        roots = result.get("roots") if isinstance(result, dict) else None
        if not isinstance(roots, list):
            raise JsonRpcError(-32603, "the client's roots/list answer has no list of roots")
        return roots

    def ask(self, requests: Mapping[str, Mapping[str, Any]], *, timeout: Optional[float] = None) -> Dict[str, Any]:
        """Ask the client several questions at once: ``{key: {"method", "params"}}`` -> ``{key: result}``.

        In the stateless era the unanswered questions go out together in one
        ``input_required`` result (in a task: together in the task's
        ``inputRequests``, answered by ``tasks/update``); over a session they
        are sent one after another, within one ``timeout`` for all.

        Raises:
            MissingClientCapability: a question needs a capability the client did not declare.
            InvalidParams: a question that is not one of ``elicitation/create``,
                ``sampling/createMessage``, ``roots/list``.
            RequestTimeout, InputRequired: as for ``elicit``.
            TaskCancelled: (in a task) the task was cancelled while it waited; let it pass.
        """
        for key, request in requests.items():
            method = request.get("method")
            if method not in _CAPABILITY_OF:
                raise InvalidParams(f"question {key!r}: cannot ask the client {method!r}")
            capability = _CAPABILITY_OF[method]
            if capability not in self._exchange.client_capabilities:
                raise MissingClientCapability(capability)
        exchange = self._exchange
        if exchange.stateless:
            missing = {
                key: {"method": request["method"], "params": dict(request.get("params") or {})}
                for key, request in requests.items()
                if key not in exchange.input_responses
            }
            answered = {key: exchange.input_responses[key] for key in requests if key not in missing}
            if missing:
                if exchange.park is None:
                    raise InputRequired(missing)
                answered.update(exchange.park(missing, timeout))  # a task: parked until tasks/update answers
            return {key: answered[key] for key in requests}
        deadline = Deadline.after(timeout, DEFAULT_QUESTION_TIMEOUT_S)
        answers: Dict[str, Any] = {}
        for key, request in requests.items():
            left = deadline.remaining()
            if left is not None and left <= 0:
                raise RequestTimeout(str(request["method"]), None, timeout, "the client did not answer in time")
            answers[key] = exchange.ask(str(request["method"]), dict(request.get("params") or {}), left)
        return answers

    # -- tasks ---------------------------------------------------------------------------

    @property
    def task_id(self) -> Optional[str]:
        """The id of the task this run is (the tasks extension), else ``None``."""
        return self._exchange.task_id

    def start_task(self) -> bool:
        """Become a task now, for a tool declared with ``task_start="explicit"``.

        The request is answered with a ``CreateTaskResult`` and the function
        goes on as the task: its later questions park the task in
        ``input_required`` (answered by ``tasks/update``), and what it returns
        is the task's result.  The questions it asked before were multi-round
        requests (the function was run again with their answers).

        Returns:
            True when the task began; False when this call cannot be a task
            (the client did not declare the extension, the session era, a tool
            without ``task_start="explicit"``, or a task already).
        """
        begin = self._exchange.start_task
        return begin() if begin is not None else False

    def _ask_one(self, method: str, params: Dict[str, Any], key: Optional[str], timeout: Optional[float]) -> Any:
        if key is None:
            with self._lock:
                key = f"{_CAPABILITY_OF[method]}-{next(self._keys)}"
        return self.ask({key: {"method": method, "params": params}}, timeout=timeout)[key]
