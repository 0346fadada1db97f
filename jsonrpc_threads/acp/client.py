"""AcpClient: a synchronous Agent Client Protocol client that works from any thread.

Theory of operation.  An ``AcpClient`` is the editor's side of ACP
(version 1): it starts a coding agent as a child process and drives it over
stdio, one JSON text per line, on a ``JsonRpcClient``.
The pieces, one module each:

- ``connection``: the process, the JSON-RPC client, the one handshake;
- ``sessions``: the sessions opened, their answers and directories;
- ``turns``: ``session/update`` notifications routed to the call that
  collects them (a prompt turn, a load's replay), delivered in order;
- ``permissions``: ``session/request_permission`` answered by the caller's
  ``on_permission`` (or refused), and answered ``cancelled`` on cancel;
- ``files``: ``fs/*`` confined to ``fs_root``;
- ``terminals``: ``terminal/*`` as child processes with bounded output;
- ``wire``: the JSON of it all (pure).

Deadlines.  Every method makes one deadline of its ``timeout`` where it
enters (``default_timeout``, and ``prompt_timeout`` for ``AcpClient.prompt``),
and every step it triggers spends what is left of it: the handshake (when it
has not run), the request.  A prompt that runs out of time is cancelled
(``session/cancel``, its pending permission requests answered ``cancelled``)
before ``RequestTimeout`` is raised.  The agent's own
waits on this side (a permission decision, ``terminal/wait_for_exit``) are
bounded by the deadline of their session's running turn.

Threads.  Updates go to ``on_update`` on the update thread of ``turns``,
one at a time, in arrival order; permission callbacks on a thread of
their own; file and terminal requests on the client's handler workers.  No
callback runs on a reader or timer thread or under a lock.  Every method may be
called from any thread; several sessions may run prompt turns at once.
"""

from __future__ import annotations

import logging
import os
import threading
from concurrent.futures import Future
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

from .. import JsonRpcClient, Transport, __version__
from ..deadlines import DEFAULT_TIMEOUT, Deadline, Timeout, check_timeout
from ..errors import JsonRpcError, MethodNotFound, ProtocolError, RequestTimeout
from .connection import AgentConnection, Command
from .files import FileService
from .permissions import PermissionCallback, PermissionDesk
from .sessions import SessionBook
from .terminals import TerminalService
from .turns import LINGER_S, SessionUpdateCallback, TurnBoard, UpdateCallback
from .wire import (
    AUTHENTICATE,
    FS_READ,
    FS_WRITE,
    PROTOCOL_VERSION,
    REQUEST_PERMISSION,
    SESSION_CANCEL,
    SESSION_LOAD,
    SESSION_NEW,
    SESSION_PROMPT,
    SESSION_SET_MODE,
    SESSION_UPDATE,
    TERMINAL_CREATE,
    TERMINAL_KILL,
    TERMINAL_OUTPUT,
    TERMINAL_RELEASE,
    TERMINAL_WAIT,
    McpServers,
    client_capabilities,
    mcp_server_list,
    prompt_blocks,
)

logger = logging.getLogger(__name__)

#: How long the ``session/cancel`` of a prompt that ran out of time may take to send
#: (its own deadline is spent by then).
CANCEL_SEND_TIMEOUT_S = 5.0

Prompt = Union[str, Sequence[Mapping[str, Any]]]


class AcpClient:
    """A synchronous client of one ACP agent.  Thread-safe; a context manager.

    ``with AcpClient(...) as agent:`` runs the handshake (``initialize``,
    protocol version 1) and, at the end, closes the client, reclaiming the
    agent's whole process tree and every terminal it started.  Results are the
    wire JSON as plain dicts and lists.

    Args:
        command_or_transport: the agent's command line (a ``str``, split with
            ``shlex.split``, or an argv list), started as a child process;
            or a transport (the client owns it).
        cwd: the agent's working directory, and every session's default
            ``cwd`` (made absolute); by default this process's.
        env: variables for the agent, as ``StdioTransport``
            takes them: an allowlist of this environment (``PATH``, ``HOME``,
            ...) updated with these; ``inherit_env=True`` starts from all of it.
        on_permission: ``callback(params) -> optionId``, or ``None`` for
            ``cancelled``, for ``session/request_permission`` (``params`` as the
            agent sent them: ``sessionId``, ``toolCall``, ``options``).  Without
            it every request is refused (its ``reject_once`` or ``reject_always``
            option, else ``cancelled``).  A callback that raises or names an
            option not offered answers ``cancelled`` (logged).
        fs_root: serve ``fs/read_text_file`` confined to this directory (its
            real path; no ``..``, absolute path or link leads out of it).
            ``None``: no file access, and none declared.
        fs_write: serve ``fs/write_text_file`` too (needs ``fs_root``).
        terminal: serve ``terminal/*``: the agent runs commands here, each a
            child process with bounded output, reclaimed at release or close
            (its whole process tree).  A command's environment is the same
            allowlist the agent starts from (not ``env``), updated with the
            ``env`` of the agent's request; ``inherit_env=True`` starts it from
            this whole environment instead.
        client_info: ``{"name", "version"}`` sent as ``clientInfo``.
        default_timeout: seconds a method waits unless its call says otherwise;
            ``None`` waits forever.
        prompt_timeout: the default timeout of ``prompt``.
        on_update: ``callback(session_id, update)`` for updates that arrive
            outside a prompt turn or a load (on the library's update thread,
            in arrival order with the turns' updates).
        inherit_env: give the agent this whole environment (and ``env``), and
            start terminals' commands from it too.  Off by default: secrets
            (API keys, tokens) of this process reach neither.

    Raises:
        TransportClosed: the command cannot be started.
        ValueError: ``fs_write`` without ``fs_root``, an ``fs_root`` that is not
            a directory, a bad timeout, ``env``/``inherit_env`` with a transport.
        TypeError: a bad timeout, a callback that is not callable.
    """

    def __init__(
        self,
        command_or_transport: Union[Command, Transport],
        *,
        cwd: Optional[Union[str, os.PathLike[str]]] = None,
        env: Optional[Mapping[str, Optional[str]]] = None,
        on_permission: Optional[PermissionCallback] = None,
        fs_root: Optional[Union[str, os.PathLike[str]]] = None,
        fs_write: bool = False,
        terminal: bool = False,
        client_info: Optional[Mapping[str, Any]] = None,
        default_timeout: Optional[float] = 30.0,
        prompt_timeout: Optional[float] = 600.0,
        on_update: Optional[SessionUpdateCallback] = None,
        inherit_env: bool = False,
    ) -> None:
        self._default_timeout = check_timeout(default_timeout, "default_timeout")
        self._prompt_timeout = check_timeout(prompt_timeout, "prompt_timeout")
        if fs_write and fs_root is None:
            raise ValueError("fs_write=True needs an fs_root")
        if on_update is not None and not callable(on_update):
            raise TypeError(f"on_update must be callable, not {type(on_update).__name__}")
        self._sessions = SessionBook(cwd)
        self._files = FileService(fs_root, write=fs_write) if fs_root is not None else None
        self._turns = TurnBoard(on_update)
        self._permissions = PermissionDesk(on_permission, self._turns, self._default_timeout)
        self._terminals = (
            TerminalService(
                default_cwd=self._sessions.cwd_of, wait_deadline=self._wait_deadline, inherit_env=inherit_env
            )
            if terminal
            else None
        )
        self.client_capabilities = client_capabilities(
            read_files=self._files is not None, write_files=fs_write, terminal=terminal
        )
        info = dict(client_info) if client_info is not None else {"name": "jsonrpc_threads", "version": __version__}
        # _lock guards _close_started.
        self._lock = threading.Lock()
        self._close_started = False
        self._connection = AgentConnection(
            command_or_transport,
            initialize_params={
                "protocolVersion": PROTOCOL_VERSION,
                "clientCapabilities": self.client_capabilities,
                "clientInfo": info,
            },
            cwd=self._sessions.default_cwd,
            env=env,
            inherit_env=inherit_env,
            default_timeout=self._default_timeout,
        )
        _serve(self._connection, self._turns, self._permissions, self._files, self._terminals)

    # -- lifecycle ----------------------------------------------------------------------------

    def initialize(self, *, timeout: Timeout = DEFAULT_TIMEOUT) -> Dict[str, Any]:
        """Run the handshake once and return the agent's answer.

        Later calls (and calls from other threads meanwhile) return the first
        answer or raise the first failure: ACP allows one ``initialize`` per
        connection, so a failed handshake is not retried (close the client and
        start a new one).  Every other method runs it first when it has not run.

        Returns:
            The agent's ``initialize`` result (``protocolVersion``,
            ``agentCapabilities``, ``agentInfo``, ``authMethods``).

        Raises:
            RequestTimeout: no answer within ``timeout``.
            ProtocolError: the agent speaks another protocol version than 1.
            TransportClosed: the agent is gone (its exit code and the end of its
                stderr in the error), or the client closed.
            JsonRpcError: the agent refused ``initialize``.
        """
        return self._connection.initialize(self._deadline(timeout))

    def __enter__(self) -> AcpClient:
        try:
            self.initialize()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def close(self) -> None:
        """Close the client: the agent's process tree and every terminal are reclaimed.

        Pending permission requests are answered ``cancelled``; pending calls
        fail with ``TransportClosed``, and so does a prompt whose updates are
        still being delivered (those not delivered yet are dropped).  Bounded in time (the
        transport's escalation, then each terminal's kill); idempotent and
        thread-safe.
        """
        with self._lock:
            if self._close_started:
                first = False
            else:
                first = self._close_started = True
        self._permissions.close()
        if not first:
            self._connection.close()  # waits (bounded) for the first close
            return
        try:
            self._connection.close()
        finally:
            self._turns.close()
            if self._terminals is not None:
                self._terminals.close()

    @property
    def closed(self) -> bool:
        """True once ``close`` started or the agent went away."""
        return self._connection.closed

    # -- what the handshake said --------------------------------------------------------------

    @property
    def rpc(self) -> JsonRpcClient:
        """The underlying ``JsonRpcClient`` (for methods this class does not wrap)."""
        return self._connection.rpc

    @property
    def initialize_result(self) -> Dict[str, Any]:
        """The agent's ``initialize`` answer (``{}`` before the handshake)."""
        return self._connection.initialize_result

    @property
    def protocol_version(self) -> Optional[int]:
        """The protocol version agreed on (``1``), or ``None`` before the handshake."""
        version = self.initialize_result.get("protocolVersion")
        return version if isinstance(version, int) else None

    @property
    def agent_info(self) -> Dict[str, Any]:
        """``agentInfo`` (``name``, ``title``, ``version``), or ``{}``."""
        return _dict(self.initialize_result.get("agentInfo"))

    @property
    def agent_capabilities(self) -> Dict[str, Any]:
        """``agentCapabilities`` (``loadSession``, ``promptCapabilities``, ...), or ``{}``."""
        return _dict(self.initialize_result.get("agentCapabilities"))

    @property
    def auth_methods(self) -> List[Dict[str, Any]]:
        """``authMethods``: the ways the agent can authenticate (``[]`` when none)."""
        methods = self.initialize_result.get("authMethods")
        return [method for method in methods if isinstance(method, dict)] if isinstance(methods, list) else []

    @property
    def sessions(self) -> Dict[str, Dict[str, Any]]:
        """Every session this client created or loaded -> the agent's answer (``modes``, ...)."""
        return self._sessions.snapshot()

    # -- the agent's methods ------------------------------------------------------------------

    def authenticate(self, method_id: str, *, timeout: Timeout = DEFAULT_TIMEOUT) -> Dict[str, Any]:
        """``authenticate`` with one of ``auth_methods`` (its ``id``); the agent's answer.

        Raises:
            RequestTimeout, TransportClosed, JsonRpcError: as ``initialize``.
        """
        answer = self._connection.call(
            AUTHENTICATE, {"methodId": _text(method_id, "method_id")}, self._deadline(timeout)
        )
        return _dict(answer)

    def new_session(
        self,
        cwd: Optional[Union[str, os.PathLike[str]]] = None,
        *,
        mcp_servers: McpServers = (),
        timeout: Timeout = DEFAULT_TIMEOUT,
    ) -> str:
        """``session/new``: start a conversation; returns its session id.

        Args:
            cwd: the session's working directory (made absolute); by default the client's.
            mcp_servers: MCP servers for the agent to use: ACP server dicts, or an
                ``mcpServers`` mapping ``{name: {"command", "args", "env"} | {"url", "headers"}}``.
            timeout: as every method.

        Raises:
            RequestTimeout, TransportClosed, JsonRpcError: as ``initialize``.
            ProtocolError: an answer without a ``sessionId``.
        """
        deadline = self._deadline(timeout)
        directory = self._sessions.directory(cwd)
        params = {"cwd": directory, "mcpServers": mcp_server_list(mcp_servers)}
        answer = _dict(self._connection.call(SESSION_NEW, params, deadline))
        session_id = answer.get("sessionId")
        if not isinstance(session_id, str) or not session_id:
            raise ProtocolError(f"session/new answered without a sessionId: {answer!r:.200}")
        self._sessions.remember(session_id, answer, directory)
        return session_id

    def load_session(
        self,
        session_id: str,
        cwd: Optional[Union[str, os.PathLike[str]]] = None,
        *,
        mcp_servers: McpServers = (),
        timeout: Timeout = DEFAULT_TIMEOUT,
    ) -> List[Dict[str, Any]]:
        """``session/load``: resume a conversation; returns the updates the agent replayed, in order.

        Raises:
            MethodNotFound: the agent does not offer ``session/load``
                (``agentCapabilities.loadSession``); nothing is sent.
            RuntimeError: the session has a turn running.
            RequestTimeout, TransportClosed, JsonRpcError: as ``initialize``.
        """
        session_id = _text(session_id, "session_id")
        deadline = self._deadline(timeout)
        directory = self._sessions.directory(cwd)
        params = {"sessionId": session_id, "cwd": directory, "mcpServers": mcp_server_list(mcp_servers)}
        self._connection.ready(deadline)
        if self.agent_capabilities.get("loadSession") is not True:
            raise MethodNotFound("the agent does not offer session/load (agentCapabilities.loadSession)")
        turn = self._turns.begin(session_id, SESSION_LOAD, deadline)
        try:
            answer = self._connection.call(SESSION_LOAD, params, deadline)
        finally:
            updates = self._turns.end(turn)
        self._sessions.remember(session_id, _dict(answer), directory)
        return updates

    def prompt(
        self,
        session_id: str,
        prompt: Prompt,
        *,
        on_update: Optional[UpdateCallback] = None,
        timeout: Timeout = DEFAULT_TIMEOUT,
    ) -> Dict[str, Any]:
        """``session/prompt``: one turn of the conversation; returns once the agent ends it.

        Every ``session/update`` the agent sends during the turn is delivered to
        ``on_update(update)`` (on the library's update thread, in arrival order)
        and collected; all of them before this returns.  When the deadline
        passes first (a slow ``on_update``), the turn is cancelled and
        ``RequestTimeout`` raised; the updates not yet delivered still go to
        this ``on_update``, in order, and to no other callback.

        Args:
            session_id: from ``new_session`` or ``load_session``.
            prompt: a ``str`` (one text block) or a list of content blocks.
            on_update: ``callback(update)`` for each update of the turn (the
                ``update`` object of the notification; ``update["sessionUpdate"]``
                names its kind, e.g. ``"agent_message_chunk"``).
            timeout: seconds the whole turn may take; by default ``prompt_timeout``.

        Returns:
            The agent's answer (``stopReason``: ``"end_turn"``, ``"cancelled"``,
            ``"max_tokens"``, ``"max_turn_requests"``, ``"refusal"``) with
            ``"updates"``: every update of the turn, in arrival order.

        Raises:
            RequestTimeout: the turn (its answer, or the delivery of its updates)
                outlasted ``timeout``: it was cancelled (``session/cancel``
                sent) before this was raised.
            RuntimeError: the session has a turn running already.
            TransportClosed: the agent is gone (its exit code and the end of its
                stderr in the error), or the client closed.
            JsonRpcError: the agent's error; ProtocolError for an answer
                without a ``stopReason``.
            TypeError: a prompt that is neither a ``str`` nor content blocks.
        """
        session_id = _text(session_id, "session_id")
        blocks = prompt_blocks(prompt)
        if on_update is not None and not callable(on_update):
            raise TypeError(f"on_update must be callable, not {type(on_update).__name__}")
        deadline = Deadline.after(timeout, self._prompt_timeout)
        self._connection.ready(deadline)
        turn = self._turns.begin(session_id, SESSION_PROMPT, deadline, on_update)
        pending: Optional[Future[Any]] = None
        try:
            pending = self._connection.send(
                SESSION_PROMPT, {"sessionId": session_id, "prompt": blocks}, deadline, linger=LINGER_S
            )
            answer = self._connection.wait(pending, SESSION_PROMPT, deadline)
            if not self._turns.delivered(turn, deadline):
                hint = "the agent answered; the turn's updates were still being delivered"
                raise RequestTimeout(SESSION_PROMPT, None, deadline.timeout, hint)
        except (RequestTimeout, KeyboardInterrupt):
            self._abandon(session_id)
            if pending is not None and not pending.done():
                self._turns.linger(turn, pending)  # what the agent still sends for it stays this turn's
            raise
        finally:
            updates = self._turns.end(turn)
            self._permissions.cancel(session_id)  # none should be left; if some are, they wait no more
        result = _dict(answer)
        if not isinstance(result.get("stopReason"), str):
            raise ProtocolError(f"session/prompt answered without a stopReason: {answer!r:.200}")
        result["updates"] = updates
        return result

    def cancel(self, session_id: str, *, timeout: Timeout = DEFAULT_TIMEOUT) -> None:
        """``session/cancel``: end the session's running turn; its ``prompt`` returns the agent's stopReason.

        The session's pending permission requests are answered ``cancelled``,
        and so is any the agent sends until the turn ends.  Nothing is sent
        before the handshake (there is no session to cancel then).

        Raises:
            TransportClosed: the agent is gone, or the client closed.
        """
        session_id = _text(session_id, "session_id")
        deadline = self._deadline(timeout)
        self._turns.cancel(session_id)
        try:
            if self._connection.initialized:
                self._connection.notify(SESSION_CANCEL, {"sessionId": session_id}, deadline.remaining())
        finally:
            self._permissions.cancel(session_id)

    def set_mode(self, session_id: str, mode_id: str, *, timeout: Timeout = DEFAULT_TIMEOUT) -> Dict[str, Any]:
        """``session/set_mode``: switch the session to one of its ``availableModes``; the agent's answer.

        Raises:
            RequestTimeout, TransportClosed, JsonRpcError: as ``initialize``.
        """
        params = {"sessionId": _text(session_id, "session_id"), "modeId": _text(mode_id, "mode_id")}
        return _dict(self._connection.call(SESSION_SET_MODE, params, self._deadline(timeout)))

    # -- internals ----------------------------------------------------------------------------

    def _deadline(self, timeout: Timeout) -> Deadline:
        return Deadline.after(timeout, self._default_timeout)

    def _wait_deadline(self, session_id: str) -> Deadline:
        return self._turns.deadline_for(session_id) or Deadline.after(self._default_timeout)

    def _abandon(self, session_id: str) -> None:
        """A prompt gave up: cancel its turn on the agent's side too (bounded; never raises)."""
        self._turns.cancel(session_id)
        self._permissions.cancel(session_id)
        try:
            self._connection.notify(SESSION_CANCEL, {"sessionId": session_id}, CANCEL_SEND_TIMEOUT_S)
        except JsonRpcError as exc:
            logger.debug("session %r: session/cancel could not be sent: %s", session_id, exc)

    def __repr__(self) -> str:
        state = "closed" if self.closed else "initialized" if self._connection.initialized else "new"
        return f"<AcpClient {self._connection.rpc.transport!r} {state}>"


def _serve(
    connection: AgentConnection,
    turns: TurnBoard,
    permissions: PermissionDesk,
    files: Optional[FileService],
    terminals: Optional[TerminalService],
) -> None:
    """Register the handlers of what the client serves (and only that)."""
    connection.on_notification(SESSION_UPDATE, turns.route)
    connection.on_request(REQUEST_PERMISSION, permissions.answer)
    if files is not None:
        connection.on_request(FS_READ, files.read_text_file)
        if files.write:
            connection.on_request(FS_WRITE, files.write_text_file)
    if terminals is not None:
        connection.on_request(TERMINAL_CREATE, terminals.create)
        connection.on_request(TERMINAL_OUTPUT, terminals.output)
        connection.on_request(TERMINAL_WAIT, terminals.wait_for_exit)
        connection.on_request(TERMINAL_KILL, terminals.kill)
        connection.on_request(TERMINAL_RELEASE, terminals.release)


def _dict(value: Any) -> Dict[str, Any]:
    return dict(value) if isinstance(value, dict) else {}


def _text(value: Any, name: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, not {type(value).__name__}")
    if not value:
        raise ValueError(f"{name} must not be empty")
    return value


__all__ = ["CANCEL_SEND_TIMEOUT_S", "AcpClient", "Prompt"]
