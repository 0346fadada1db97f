"""A2aClient: a synchronous Agent2Agent (A2A) client that works from any thread.

Theory of operation.  An ``A2aClient`` talks to one remote agent over
A2A's JSON-RPC binding (v1.0, and v0.3 agents, told apart by their card).  The
pieces, one module each:

- ``connection``: the card, fetched once, the JSON-RPC client on the
  interface it names, and who gets the credentials;
- ``events``: a streaming call's events as a bounded iterator;
- ``wire``: the JSON of both versions, and readers that take either (pure);
- ``card``: the card's interfaces and origins (pure);
- ``errors``: A2A's error codes as exceptions.

Deadlines.  Every method makes one deadline of its ``timeout`` (by default
``default_timeout``) where it enters, and every step it triggers spends what is
left of it: the card's fetch (on a first call), the request, the whole of a
stream, each poll and subscription of ``A2aClient.wait``.

Threads.  A call runs its request on the caller's thread (the HTTP exchange
too, unless ``auth`` or a ``header_provider`` may block: then on the
transport's pool, the caller waiting with its deadline); a stream is read on
one of the transport's pool threads, freed when the stream ends or is closed.  No user code
runs on a library thread: there are no callbacks.  Every method may be called
from any thread, any number at once.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Callable, Dict, Mapping, Optional, Sequence, Union

import requests.auth

from ..deadlines import DEFAULT_TIMEOUT, Deadline, Timeout, as_call_timeout, check_timeout
from ..errors import HttpConnectionError, MethodNotFound, ProtocolError, RequestTimeout, TransportClosed
from ..transports.http import DEFAULT_CONNECT_TIMEOUT_S, DEFAULT_READ_TIMEOUT_S, HttpSettings, url_label
from .connection import Agent, AgentConnection
from .errors import UnsupportedOperation
from .events import EventStream
from .wire import TASK, MessageLike, event_kind, is_done, list_params, state_of

logger = logging.getLogger(__name__)

#: The first pause between two polls of ``A2aClient.wait`` (an agent that cannot stream),
#: doubled after each poll up to ``POLL_MAX_S``.
POLL_FIRST_S = 0.1
#: The longest pause between two polls.
POLL_MAX_S = 2.0

#: Called before every request for more headers, as ``HttpTransport`` takes it.
HeaderProvider = Callable[[], Mapping[str, str]]


class A2aClient:
    """A synchronous client of one A2A agent.  Thread-safe; a context manager.

    Results are the wire JSON as plain dicts, as the agent spelled it (v1.0:
    ``"TASK_STATE_COMPLETED"``, v0.3: ``"completed"``): ``state_of``,
    ``event_kind`` and ``text_of`` (in ``jsonrpc_threads.a2a``)
    read either.

    Args:
        url: the agent's base URL (its card is at ``/.well-known/agent-card.json``
            under it), or the card's own URL (a path ending in ``.json``).
        auth: a ``requests.auth.AuthBase`` (``jsonrpc_threads.auth.OAuth``, ...)
            for every request to a trusted origin.
        headers: headers for every request to a trusted origin (an
            ``Authorization``, an API key).
        allow_origins: origins (``"https://host[:port]"``) besides the card's
            that may get ``auth``, ``headers`` and ``header_provider``.  The
            card's own origin (scheme, host, port) always does; any other,
            never: an interface the card puts elsewhere is spoken to without them.
        default_timeout: seconds a method may take unless its call says
            otherwise; ``None`` waits forever.
        header_provider: called before every request to a trusted origin for
            more headers (fresh tokens).
        connect_timeout: seconds to wait for a connection.
        read_timeout: seconds one socket read may wait (a stream silent this
            long is broken).
        verify: TLS verification, as in ``requests``.

    Raises:
        ValueError: a URL or an allowed origin that is not ``http(s)://host``,
            a bad timeout.
        TypeError: a bad timeout.
    """

    def __init__(
        self,
        url: str,
        *,
        auth: Optional[requests.auth.AuthBase] = None,
        headers: Optional[Mapping[str, str]] = None,
        allow_origins: Sequence[str] = (),
        default_timeout: Optional[float] = 30.0,
        header_provider: Optional[HeaderProvider] = None,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT_S,
        read_timeout: float = DEFAULT_READ_TIMEOUT_S,
        verify: Union[bool, str] = True,
    ) -> None:
        self._default_timeout = check_timeout(default_timeout, "default_timeout")
        settings = HttpSettings(
            headers=headers or {},
            auth=auth,
            header_provider=header_provider,
            connect_timeout=connect_timeout,
            read_timeout=read_timeout,
            verify=verify,
        )
        origins = (allow_origins,) if isinstance(allow_origins, str) else tuple(allow_origins)
        self._connection = AgentConnection(url, settings, origins)
        self._closed = threading.Event()  # wakes a wait() between polls

    # -- the card -----------------------------------------------------------------------------

    def fetch_card(self, *, timeout: Timeout = DEFAULT_TIMEOUT) -> Dict[str, Any]:
        """The agent card, fetched on the first call (by any method) and kept.

        Raises:
            RequestTimeout: the card did not come within ``timeout``.
            HttpError, HttpConnectionError: the card could not be fetched (a
                404, a refused connection, a redirect: never followed).
            ProtocolError: the card is not JSON, or offers no JSON-RPC
                interface of A2A 1.0 or 0.3.
            TransportClosed: the client is closed.
        """
        return self._agent(self._deadline(timeout), "agent card").card

    @property
    def card(self) -> Dict[str, Any]:
        """The agent card (a dict), fetched once (blocks for it, up to ``default_timeout``, on first use)."""
        return self.fetch_card()

    @property
    def protocol_version(self) -> Optional[str]:
        """``"1.0"`` or ``"0.3"``: the version spoken, from the card (``None`` before it came)."""
        agent = self._connection.agent
        return agent.dialect.version if agent is not None else None

    @property
    def interface_url(self) -> Optional[str]:
        """The JSON-RPC endpoint spoken to, from the card (``None`` before it came)."""
        agent = self._connection.agent
        return agent.interface.url if agent is not None else None

    @property
    def card_url(self) -> str:
        """Where the card is fetched from."""
        return self._connection.card_url

    # -- messages -----------------------------------------------------------------------------

    def send_message(
        self,
        message: MessageLike,
        *,
        context_id: Optional[str] = None,
        task_id: Optional[str] = None,
        return_immediately: bool = False,
        timeout: Timeout = DEFAULT_TIMEOUT,
    ) -> Dict[str, Any]:
        """``SendMessage`` (v0.3: ``message/send``): the agent's answer, a Task or a Message.

        The agent answers once the task is done or waits for the client
        (terminal or interrupted state), unless ``return_immediately``.

        Args:
            message: a ``str`` (one text part) or a Message dict (its
                ``messageId`` and ``role`` are filled in when missing).
            context_id: the conversation to continue (``contextId``).
            task_id: the task to continue (``taskId``): the answer to an
                ``input-required`` task, say.
            return_immediately: ask the agent to answer at once with the task
                still running (then ``wait``, ``subscribe`` or
                ``get_task`` follow it).
            timeout: as every method.

        Returns:
            The Task or the Message, out of its v1.0 wrapper, as the agent spelled it.

        Raises:
            RequestTimeout: no answer within ``timeout`` (the card's fetch included).
            TaskNotFound, UnsupportedOperation, ContentTypeNotSupported, A2aError:
                the agent refused (a ``task_id`` it does not know, a task that ended).
            ProtocolError: an answer that is neither a Task nor a Message.
            TransportClosed, HttpError, JsonRpcError: as ``fetch_card``, and
                the agent's other errors.
            TypeError, ValueError: a message that is neither a ``str`` nor a
                Message dict, or that names another task or context.
        """
        deadline = self._deadline(timeout)
        agent = self._agent(deadline, "SendMessage")
        dialect = agent.dialect
        body = dialect.message(message, context_id=context_id, task_id=task_id)
        params = dialect.send_params(body, return_immediately=return_immediately, tenant=agent.interface.tenant)
        return dialect.unwrap(self._connection.call(dialect.send, params, deadline))

    def stream_message(
        self,
        message: MessageLike,
        *,
        context_id: Optional[str] = None,
        task_id: Optional[str] = None,
        timeout: Timeout = DEFAULT_TIMEOUT,
    ) -> EventStream:
        """``SendStreamingMessage`` (v0.3: ``message/stream``): the agent's events, as they come.

        Returns an iterator of events (Task, Message, status-update and
        artifact-update dicts) that ends after a Message or once the task is
        terminal or interrupted; ``timeout`` bounds the whole stream.  Close it
        (``close()``, a ``with`` block, or leave a ``for`` early and drop it)
        to stop early: the HTTP answer is closed and its thread is free.

        Args: as ``send_message``.

        Raises:
            RequestTimeout, TransportClosed, HttpError, ProtocolError: the
                card's fetch, before anything is sent (see ``fetch_card``);
                the stream raises the rest as it is read (see
                ``EventStream``).
            TypeError, ValueError: as ``send_message``.
        """
        deadline = self._deadline(timeout)
        agent = self._agent(deadline, "SendStreamingMessage")
        dialect = agent.dialect
        body = dialect.message(message, context_id=context_id, task_id=task_id)
        params = dialect.send_params(body, return_immediately=False, tenant=agent.interface.tenant)
        return self._stream(agent, dialect.stream, params, deadline)

    # -- tasks --------------------------------------------------------------------------------

    def get_task(
        self, task_id: str, *, history_length: Optional[int] = None, timeout: Timeout = DEFAULT_TIMEOUT
    ) -> Dict[str, Any]:
        """``GetTask`` (v0.3: ``tasks/get``): the task as it stands (status, artifacts, history).

        Args:
            task_id: the task's ``id``.
            history_length: at most this many recent messages of its history
                (``0``: none); ``None``: the agent's default.
            timeout: as every method.

        Raises:
            TaskNotFound: the agent knows no such task.
            RequestTimeout, TransportClosed, HttpError, JsonRpcError: as ``send_message``.
        """
        deadline = self._deadline(timeout)
        return self._get_task(_text(task_id, "task_id"), history_length, deadline, "GetTask")

    def list_tasks(self, *, timeout: Timeout = DEFAULT_TIMEOUT, **filters: Any) -> Dict[str, Any]:
        """``ListTasks`` (v1.0): one page of the tasks this client may see, most recently updated first.

        Args:
            timeout: as every method.
            **filters: ListTasks' fields, in snake_case or camelCase:
                ``context_id``, ``status`` (``"working"`` or
                ``"TASK_STATE_WORKING"``), ``page_size``, ``page_token``,
                ``history_length``, ``status_timestamp_after``,
                ``include_artifacts``.

        Returns:
            The agent's answer: ``tasks``, ``nextPageToken`` (``""`` on the
            last page), ``pageSize``, ``totalSize``.

        Raises:
            MethodNotFound: a v0.3 agent (that version cannot list tasks); nothing is sent.
            ValueError: an unknown ``status``.
            RequestTimeout, TransportClosed, HttpError, JsonRpcError: as ``send_message``.
        """
        deadline = self._deadline(timeout)
        agent = self._agent(deadline, "ListTasks")
        dialect = agent.dialect
        if dialect.list_tasks is None:
            raise MethodNotFound(f"A2A {dialect.version} agents cannot list tasks (ListTasks came with 1.0)")
        params = list_params(dialect, filters, agent.interface.tenant)
        return _dict(self._connection.call(dialect.list_tasks, params, deadline), "ListTasks")

    def cancel_task(self, task_id: str, *, timeout: Timeout = DEFAULT_TIMEOUT) -> Dict[str, Any]:
        """``CancelTask`` (v0.3: ``tasks/cancel``): ask the agent to cancel the task; the task as it then stands.

        Raises:
            TaskNotCancelable: the task ended already (or cannot be canceled now).
            TaskNotFound: the agent knows no such task.
            RequestTimeout, TransportClosed, HttpError, JsonRpcError: as ``send_message``.
        """
        deadline = self._deadline(timeout)
        agent = self._agent(deadline, "CancelTask")
        dialect = agent.dialect
        params = dialect.with_tenant({"id": _text(task_id, "task_id")}, agent.interface.tenant)
        return _dict(self._connection.call(dialect.cancel_task, params, deadline), "CancelTask")

    def subscribe(self, task_id: str, *, timeout: Timeout = DEFAULT_TIMEOUT) -> EventStream:
        """``SubscribeToTask`` (v0.3: ``tasks/resubscribe``): a running task's events, as ``stream_message``.

        The first event is the task as it stands.

        Raises:
            RequestTimeout, TransportClosed, HttpError, ProtocolError: as
                ``stream_message``; the stream raises ``TaskNotFound``, or
                ``UnsupportedOperation`` for a task that ended already.
        """
        deadline = self._deadline(timeout)
        task_id = _text(task_id, "task_id")
        return self._subscribe(self._agent(deadline, "SubscribeToTask"), task_id, deadline)

    def wait(self, task_id: str, *, timeout: Timeout = DEFAULT_TIMEOUT) -> Dict[str, Any]:
        """Wait for the task to be terminal or interrupted; the task then (``GetTask``'s answer).

        Subscribes to it when the agent streams (``capabilities.streaming``),
        else polls ``GetTask`` (``POLL_FIRST_S``, doubling to
        ``POLL_MAX_S``); the timeout bounds it all.

        Raises:
            RequestTimeout: the task was still running at the deadline (it goes on).
            TaskNotFound: the agent knows no such task.
            RequestTimeout, TransportClosed, HttpError, JsonRpcError: as ``send_message``.
        """
        deadline = self._deadline(timeout)
        task_id = _text(task_id, "task_id")
        agent = self._agent(deadline, "wait")
        capabilities = agent.card.get("capabilities")
        if isinstance(capabilities, dict) and capabilities.get("streaming") is True:
            task = self._wait_streaming(agent, task_id, deadline)
            if task is not None:
                return task
        return self._wait_polling(task_id, deadline)

    # -- the end ------------------------------------------------------------------------------

    def close(self) -> None:
        """Close the client: open streams end (``TransportClosed``), later calls fail at once.

        Bounded (the transports' graces); idempotent; thread-safe.
        """
        self._closed.set()
        self._connection.close()

    @property
    def closed(self) -> bool:
        """True once ``close`` was called."""
        return self._closed.is_set()

    def __enter__(self) -> A2aClient:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        version = self.protocol_version
        state = "closed" if self.closed else f"A2A {version}" if version else "card not fetched"
        return f"<A2aClient {url_label(self._connection.card_url)} {state}>"  # no user info, no query

    # -- internals ----------------------------------------------------------------------------

    def _deadline(self, timeout: Timeout) -> Deadline:
        return Deadline.after(timeout, self._default_timeout)

    def _agent(self, deadline: Deadline, method: str) -> Agent:
        if self._closed.is_set():
            raise TransportClosed("A2aClient closed")
        return self._connection.ready(deadline, method)

    def _stream(
        self, agent: Agent, method: str, params: Dict[str, Any], deadline: Deadline, task_id: Optional[str] = None
    ) -> EventStream:
        return EventStream(self._connection.stream(method, params, deadline), agent.dialect, deadline, task_id)

    def _get_task(self, task_id: str, history_length: Optional[int], deadline: Deadline, method: str) -> Dict[str, Any]:
        agent = self._agent(deadline, method)
        dialect = agent.dialect
        params: Dict[str, Any] = {"id": task_id}
        if history_length is not None:
            if isinstance(history_length, bool) or not isinstance(history_length, int) or history_length < 0:
                raise ValueError(f"history_length must be an int >= 0, not {history_length!r}")
            params["historyLength"] = history_length
        params = dialect.with_tenant(params, agent.interface.tenant)
        return _dict(self._connection.call(dialect.get_task, params, deadline), dialect.get_task)

    def _subscribe(self, agent: Agent, task_id: str, deadline: Deadline) -> EventStream:
        dialect = agent.dialect
        params = dialect.with_tenant({"id": task_id}, agent.interface.tenant)
        return self._stream(agent, dialect.subscribe, params, deadline, task_id)

    def _wait_streaming(self, agent: Agent, task_id: str, deadline: Deadline) -> Optional[Dict[str, Any]]:
        """Follow the task's stream to its end; the task then, or ``None`` to poll instead."""
        try:
            with self._subscribe(agent, task_id, deadline) as events:
                for event in events:
                    if event_kind(event) == TASK and is_done(event):
                        return event  # the task as it stands (the first event) is done already
        except UnsupportedOperation:
            pass  # it ended already (or the agent does not stream after all): ask for it
        except HttpConnectionError as exc:
            logger.debug("wait for task %r: the stream broke (%s); polling", task_id, exc.message)
            return None
        except RequestTimeout as exc:
            raise as_call_timeout(exc, deadline, method="wait", hint=f"task {task_id!r} is not done") from None
        return self._get_task(task_id, None, deadline, "wait")

    def _wait_polling(self, task_id: str, deadline: Deadline) -> Dict[str, Any]:
        pause = POLL_FIRST_S
        while True:
            task = self._get_task(task_id, None, deadline, "wait")
            if is_done(task):
                return task
            left = deadline.remaining()
            if left is not None and left <= 0:
                raise RequestTimeout("wait", None, deadline.timeout, f"task {task_id!r} is still {state_of(task)}")
            if self._closed.wait(pause if left is None else min(pause, left)):
                raise TransportClosed("A2aClient closed")
            pause = min(pause * 2, POLL_MAX_S)


def _dict(value: Any, method: str) -> Dict[str, Any]:
    if not isinstance(value, dict):
        raise ProtocolError(f"{method} answered what is not an object: {value!r:.200}")
    return value


def _text(value: Any, name: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, not {type(value).__name__}")
    if not value:
        raise ValueError(f"{name} must not be empty")
    return value


__all__ = ["POLL_FIRST_S", "POLL_MAX_S", "A2aClient", "HeaderProvider"]
