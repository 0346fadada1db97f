"""A client's session with the server (the 2025 era), and the questions the server asks its client.

Theory of operation.  In the session era a client opens with ``initialize``
and the server keeps what it said (its protocol version, identity and
capabilities), what it asked for since (a log level, resource
subscriptions), the requests of it that are running (so that
``notifications/cancelled`` reaches the right one), and the questions the
server sent it (``Questions``: a request id per question, a future each, the
answer settling it).  Over stdio the connection is the session; over HTTP a
``Session`` has an id (``Mcp-Session-Id``) and ``SessionTable`` holds them in
the process (several processes need sticky routing, or the stateless era).

The stateless era (2026-07-28) keeps none of this: everything a request needs
comes with it (see ``engine``).

Thread-safety: every object here is thread-safe; each has one lock, named
with the fields it guards, and nothing is sent or awaited under it.
"""

from __future__ import annotations

import itertools
import secrets
import threading
import time
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, Callable, Dict, List, Optional, Set

from ...errors import JsonRpcError, RequestTimeout, TransportClosed

__all__ = ["DEFAULT_SESSION_LOG_LEVEL", "SESSION_IDLE_S", "Questions", "Session", "SessionTable"]

#: The log level of a session whose client has not called ``logging/setLevel``.
DEFAULT_SESSION_LOG_LEVEL = "info"
#: An HTTP session unused this long is forgotten (its client starts a new one on the 404).
SESSION_IDLE_S = 3600.0
#: How many answers' event logs a session keeps for clients that resume a stream.
KEPT_LOGS = 32
#: The most HTTP sessions one process keeps; the least recently used goes first.
MAX_SESSIONS = 10_000


class Questions:
    """The requests the server sent its client, waiting for their answers.  Thread-safe."""

    def __init__(self, prefix: str = "server") -> None:
        self._lock = threading.Lock()  # guards _pending and _closed
        self._pending: Dict[Any, Future[Any]] = {}
        self._numbers = itertools.count(1)
        self._prefix = prefix
        self._closed = False

    def ask(
        self, method: str, params: Dict[str, Any], timeout: Optional[float], send: Callable[[Dict[str, Any]], None]
    ) -> Any:
        """Send the request through ``send`` and wait for its answer.

        Raises:
            RequestTimeout: no answer within ``timeout`` (``None``: wait for it).
            JsonRpcError: the client answered with an error.
            TransportClosed: the session ended first.
        """
        future: Future[Any] = Future()
        with self._lock:
            if self._closed:
                raise TransportClosed("the session is over: the client cannot be asked anything")
            request_id = f"{self._prefix}-{next(self._numbers)}"
            self._pending[request_id] = future
        try:
            send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
            return future.result(timeout)
        except FutureTimeout:
            if future.done():
                raise  # the answer itself was a timeout error
            raise RequestTimeout(
                method, request_id, timeout, "the client did not answer the server's request"
            ) from None
        finally:
            with self._lock:
                self._pending.pop(request_id, None)

    def answer(self, message: Dict[str, Any]) -> bool:
        """Settle the question a response answers; False when it answers none (late, or unknown)."""
        with self._lock:
            future = self._pending.pop(message.get("id"), None)
        if future is None or future.done():
            return False
        error = message.get("error")
        if isinstance(error, dict):
            code = error.get("code")
            future.set_exception(
                JsonRpcError(
                    code if isinstance(code, int) else -32603, str(error.get("message", "")), error.get("data")
                )
            )
        else:
            future.set_result(message.get("result"))
        return True

    def close(self) -> None:
        """Fail every question still waiting (the session or connection ended)."""
        with self._lock:
            self._closed = True
            pending = list(self._pending.values())
            self._pending.clear()
        for future in pending:
            if not future.done():
                future.set_exception(TransportClosed("the session ended before the client answered"))


class Session:
    """What a 2025-era client said, and asked for, in its session.  Thread-safe.

    Attributes:
        id: the ``Mcp-Session-Id`` (HTTP), or ``None`` (stdio, memory).
        questions: the requests the server sent the client.
    """

    def __init__(self, session_id: Optional[str] = None) -> None:
        self.id = session_id
        self.questions = Questions()
        self._lock = threading.Lock()  # guards the fields below
        self.protocol_version: Optional[str] = None
        self.client_info: Dict[str, Any] = {}
        self.client_capabilities: Dict[str, Any] = {}
        self.initialized = False
        self.log_level: Optional[str] = DEFAULT_SESSION_LOG_LEVEL
        self._subscriptions: Set[str] = set()
        self._running: Dict[Any, threading.Event] = {}
        self._announce: Optional[Callable[[str, Dict[str, Any]], None]] = None
        self._on_end: Optional[Callable[[], None]] = None
        self._logs: Dict[str, Any] = {}  # the latest answers' event logs, by key (oldest first)
        self.last_used = time.monotonic()

    def __repr__(self) -> str:
        return f"<Session {self.id or 'connection'} {self.protocol_version or 'not initialized'}>"

    def begin(self, protocol_version: str, client_info: Dict[str, Any], capabilities: Dict[str, Any]) -> None:
        """Record what ``initialize`` said."""
        with self._lock:
            self.protocol_version = protocol_version
            self.client_info = client_info
            self.client_capabilities = capabilities

    def set_log_level(self, level: str) -> None:
        """Record ``logging/setLevel``."""
        with self._lock:
            self.log_level = level

    def subscribe(self, uri: str) -> None:
        """Record ``resources/subscribe``."""
        with self._lock:
            self._subscriptions.add(uri)

    def unsubscribe(self, uri: str) -> None:
        """Record ``resources/unsubscribe``."""
        with self._lock:
            self._subscriptions.discard(uri)

    def subscribed(self, uri: str) -> bool:
        """Whether the client subscribed to ``uri``."""
        with self._lock:
            return uri in self._subscriptions

    def running(self, request_id: Any, cancelled: threading.Event) -> None:
        """A request of the client's started: ``notifications/cancelled`` for it sets ``cancelled``."""
        with self._lock:
            self._running[request_id] = cancelled

    def finished(self, request_id: Any) -> None:
        """A request of the client's ended."""
        with self._lock:
            self._running.pop(request_id, None)

    def cancel(self, request_id: Any) -> bool:
        """The client cancelled a request: set its event; False when it is not running."""
        with self._lock:
            event = self._running.get(request_id)
        if event is None:
            return False
        event.set()
        return True

    def set_announcer(
        self,
        announce: Optional[Callable[[str, Dict[str, Any]], None]],
        on_end: Optional[Callable[[], None]] = None,
    ) -> None:
        """Where notifications not tied to a request go (stdio: the output; HTTP: the GET stream).

        ``on_end`` is called once if the session ends while that stream is open,
        or when another stream takes its place.
        """
        with self._lock:
            replaced = self._on_end if announce is not self._announce else None
            self._announce = announce
            self._on_end = on_end
        if replaced is not None:
            replaced()  # a new stream took the place of the old one: the old one ends

    def keep_log(self, key: str, log: Any) -> None:
        """Keep an answer's event log, so a client that lost its stream can resume it (the latest few)."""
        with self._lock:
            self._logs[key] = log
            while len(self._logs) > KEPT_LOGS:
                del self._logs[next(iter(self._logs))]

    def kept_log(self, key: str) -> Any:
        """The kept event log of that key, or ``None``."""
        with self._lock:
            return self._logs.get(key)

    def announcer_is(self, announce: Callable[[str, Dict[str, Any]], None]) -> bool:
        """Whether ``announce`` is where this session's notifications go now."""
        with self._lock:
            return self._announce is announce

    def announce(self, method: str, params: Dict[str, Any]) -> bool:
        """Send a notification not tied to a request; False when there is nowhere to send it."""
        with self._lock:
            announce = self._announce if self.initialized else None
        if announce is None:
            return False
        announce(method, params)
        return True

    def end(self) -> None:
        """The session is over: cancel what runs, fail the questions waiting."""
        with self._lock:
            running = list(self._running.values())
            self._announce = None
            on_end, self._on_end = self._on_end, None
        for event in running:
            event.set()
        self.questions.close()
        if on_end is not None:
            on_end()


class SessionTable:
    """The HTTP sessions of one server, by id, in this process.  Thread-safe."""

    def __init__(self, idle_s: float = SESSION_IDLE_S, max_sessions: int = MAX_SESSIONS) -> None:
        self._lock = threading.Lock()  # guards _sessions
        self._sessions: Dict[str, Session] = {}
        self._idle_s = idle_s
        self._max = max_sessions

    def __len__(self) -> int:
        with self._lock:
            return len(self._sessions)

    def open(self) -> Session:
        """A new session with a fresh id (visible ASCII, unguessable)."""
        session = Session(secrets.token_urlsafe(24))
        assert session.id is not None
        with self._lock:
            evicted = self._expire_locked()
            self._sessions[session.id] = session
        for old in evicted:
            old.end()
        return session

    def get(self, session_id: str) -> Optional[Session]:
        """The live session of that id, or ``None`` (never was, ended, or idle too long)."""
        with self._lock:
            session = self._sessions.get(session_id)
            if session is not None and time.monotonic() - session.last_used > self._idle_s:
                del self._sessions[session_id]
                expired: Optional[Session] = session
                session = None
            else:
                expired = None
                if session is not None:
                    session.last_used = time.monotonic()
        if expired is not None:
            expired.end()
        return session

    def close(self, session_id: str) -> bool:
        """End a session (``DELETE``); False when there was none."""
        with self._lock:
            session = self._sessions.pop(session_id, None)
        if session is None:
            return False
        session.end()
        return True

    def all(self) -> List[Session]:
        """Every live session."""
        with self._lock:
            return list(self._sessions.values())

    def close_all(self) -> None:
        """End every session."""
        with self._lock:
            sessions = list(self._sessions.values())
            self._sessions.clear()
        for session in sessions:
            session.end()

    def _expire_locked(self) -> List[Session]:
        now = time.monotonic()
        gone = [sid for sid, session in self._sessions.items() if now - session.last_used > self._idle_s]
        if len(self._sessions) - len(gone) >= self._max:
            oldest = sorted(self._sessions.items(), key=lambda item: item[1].last_used)
            gone += [sid for sid, _ in oldest[: len(self._sessions) - self._max + 1] if sid not in gone]
        return [self._sessions.pop(sid) for sid in gone]
