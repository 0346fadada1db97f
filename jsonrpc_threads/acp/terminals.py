"""``terminal/*``: commands the agent runs on the client's machine, each reclaimed at release or close.

Theory of operation.  ``terminal/create`` starts the command as a child process
(``[command, *args]``, no shell; its own process group on POSIX) with stdin
closed and stdout and stderr merged into one pipe.  Its environment is the
agent's allowlist (``child_env``, as ``StdioTransport`` builds it: ``PATH``,
``HOME``, ... but no secrets), or this whole environment with
``inherit_env=True``, updated with the request's ``env``.  A reader thread
per terminal (``acp-terminal[...]``) moves what the command writes into an
``OutputBuffer`` that keeps only the last ``outputByteLimit`` bytes
(``DEFAULT_OUTPUT_BYTE_LIMIT`` when the agent names none, never more than
``MAX_OUTPUT_BYTE_LIMIT``: the output travels in one message), and closes
the pipe at its end.

``terminal/output`` answers at once; ``terminal/wait_for_exit`` waits for the
exit, bounded by the deadline of the session's running turn (else the
client's ``default_timeout``), then briefly (``OUTPUT_DRAIN_WAIT_S``) for
the last output.  ``terminal/kill`` ends the command's whole process tree
with the stdio transport's reclaim (``reclaim``: one reclaim for both), with
no stdin grace and no SIGTERM step: SIGKILL to the command, its descendants,
what is left in its process group, and every process that still holds its
output pipe (a daemon in a session of its own, even after the command
exited), then a bounded wait (``KILL_WAIT_S``).  ``terminal/release`` kills
what still runs, waits (bounded) for the reader to reach the end of the
output, and forgets the terminal.  ``TerminalService.close`` reclaims every
terminal at once, and refuses new ones, so nothing the agent started outlives
the client.
"""

from __future__ import annotations

import itertools
import logging
import os
import subprocess
import sys
import threading
import time
from typing import Any, Callable, Dict, FrozenSet, List, Optional, Sequence

from ..deadlines import Deadline
from ..errors import InternalError, InvalidParams, JsonRpcError
from ..transports.stdio import KILL_GRACE_S, child_env, reclaim
from .output import OutputBuffer
from .wire import REQUEST_CANCELLED, exit_status

logger = logging.getLogger(__name__)

#: The output kept when ``terminal/create`` names no ``outputByteLimit``.
DEFAULT_OUTPUT_BYTE_LIMIT = 1024 * 1024
#: The most output kept whatever the agent asks: it is sent back in one message.
MAX_OUTPUT_BYTE_LIMIT = 16 * 1024 * 1024
#: The most terminals alive at once (created and not released).
MAX_TERMINALS = 64
#: How long a kill waits for the killed process tree to be gone (the stdio transport's
#: ``KILL_GRACE_S``: the same reclaim), and a release for the reader to reach the end.
KILL_WAIT_S = KILL_GRACE_S
#: After the command exited, how long an answer waits for the output it wrote last.
OUTPUT_DRAIN_WAIT_S = 1.0
#: Bytes read from the pipe at a time.
READ_CHUNK_BYTES = 64 * 1024

_POSIX = sys.platform != "win32"
_numbers = itertools.count(1)


class Terminal:
    """One command, its output and its end.  Thread-safe.

    A ``Reclaimable`` of the stdio transport's reclaim: ``popen``, ``pid``,
    ``pipe_inodes`` and the rest are what ``reclaim`` needs to find the
    command's whole process tree.

    Raises:
        OSError: the command cannot be started.
    """

    def __init__(
        self,
        terminal_id: str,
        session_id: str,
        argv: List[str],
        *,
        env: Dict[str, str],
        cwd: Optional[str],
        limit: int,
    ) -> None:
        self.terminal_id = terminal_id
        self.session_id = session_id
        self.argv = argv
        self.label = f"acp terminal {terminal_id}"
        self.owner_pid = os.getpid()
        self.new_session = _POSIX
        # _lock guards _buffer, _eof and _drain_waited.
        self._lock = threading.Lock()
        self._buffer = OutputBuffer(limit)
        self._eof = False
        self._drain_waited = False
        self.started_at = time.time()
        self.popen = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=cwd,
            start_new_session=_POSIX,
        )
        self.pid = self.popen.pid
        self.pipe_inodes: FrozenSet[int] = frozenset()
        self._reader = threading.Thread(target=self._read, name=f"acp-terminal[{terminal_id}]", daemon=True)
        pipe = self.popen.stdout
        assert pipe is not None
        try:
            # Whoever else holds this pipe at a kill is part of the command's tree.
            self.pipe_inodes = frozenset({os.fstat(pipe.fileno()).st_ino})
            self._reader.start()
        except BaseException:
            self.kill()
            pipe.close()
            raise

    def _read(self) -> None:
        pipe = self.popen.stdout
        assert pipe is not None
        try:
            fd = pipe.fileno()
            while True:
                chunk = os.read(fd, READ_CHUNK_BYTES)
                with self._lock:
                    if not chunk:
                        self._eof = True
                        return
                    self._buffer.append(chunk)
        except OSError as exc:
            logger.debug("terminal %s: reading its output failed: %s", self.terminal_id, exc)
        finally:
            pipe.close()

    def _drain(self) -> None:
        """Once the command exited: let the reader take the last output (bounded, and waited for once)."""
        with self._lock:
            if self._drain_waited:
                return
            self._drain_waited = True
        self._reader.join(OUTPUT_DRAIN_WAIT_S)

    def output(self) -> Dict[str, Any]:
        """``{"output", "truncated", "exitStatus"?}``: what the command wrote so far, and its end if it ended."""
        returncode = self.popen.poll()
        if returncode is not None:
            self._drain()
        with self._lock:
            answer: Dict[str, Any] = {"output": self._buffer.text(), "truncated": self._buffer.truncated}
        if returncode is not None:
            answer["exitStatus"] = exit_status(returncode)
        return answer

    def wait(self, timeout: Optional[float]) -> Optional[Dict[str, Any]]:
        """The exit status once the command exited, or ``None`` when ``timeout`` passed first."""
        try:
            returncode = self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            return None
        self._drain()
        return exit_status(returncode)

    def kill(self) -> None:
        """Kill the command's whole process tree and reap it (``reclaim``, within ``KILL_WAIT_S``).

        The tree is found as the stdio transport finds a child's: descendants,
        the process group, and whoever holds the output pipe, so a daemon in a
        session of its own dies too, even after the command exited.
        """
        reclaim([self], stdin_grace=0.0, terminate_grace=0.0)

    def release(self) -> None:
        """Kill what still runs and let the reader finish (bounded); the pipe closes with it."""
        self.kill()
        self.join_reader(time.monotonic() + KILL_WAIT_S)

    def join_reader(self, deadline: float) -> None:
        """Wait until ``deadline`` (``time.monotonic()``) for the reader to end; log when it did not."""
        self._reader.join(max(0.0, deadline - time.monotonic()))
        if self._reader.is_alive():
            logger.warning("terminal %s: something still holds its output open", self.terminal_id)

    # -- Reclaimable ----------------------------------------------------------------

    def close_stdin(self, timeout: float) -> bool:
        """Nothing to close: the command's stdin is ``/dev/null``."""
        return True

    def streams_closed(self, timeout: float) -> bool:
        """Wait (bounded) for the output pipe to reach end of file: True when nobody holds it any more."""
        reader = self._reader
        if reader.ident is None or reader is threading.current_thread():
            return False
        reader.join(timeout)
        with self._lock:
            return self._eof and not reader.is_alive()

    def reclaim_done(self) -> None:
        """The reader stops by itself at the end of the output (``release`` waits for it, bounded)."""


def reclaim_all(terminals: Sequence[Terminal]) -> None:
    """Kill every terminal's process tree at once, then wait (bounded) for their readers.

    One reclaim for them all, so a close takes one ``KILL_WAIT_S``, not one each.
    """
    reclaim(terminals, stdin_grace=0.0, terminate_grace=0.0)
    deadline = time.monotonic() + KILL_WAIT_S
    for terminal in terminals:
        terminal.join_reader(deadline)


class TerminalService:
    """The agent's terminals.  Thread-safe.

    Args:
        default_cwd: ``default_cwd(session_id)`` -> where a command runs when
            ``terminal/create`` names no ``cwd`` (``None``: this process's).
        wait_deadline: ``wait_deadline(session_id)`` -> the deadline of a
            ``terminal/wait_for_exit`` of that session.
        inherit_env: start each command from this process's whole environment,
            not from the allowlist (``DEFAULT_ENV_ALLOWLIST``) an agent gets.
    """

    def __init__(
        self,
        *,
        default_cwd: Callable[[str], Optional[str]],
        wait_deadline: Callable[[str], Deadline],
        inherit_env: bool = False,
    ) -> None:
        self._default_cwd = default_cwd
        self._wait_deadline = wait_deadline
        self._inherit_env = inherit_env
        # _lock guards _terminals, _starting (terminals being started) and _closed.
        self._lock = threading.Lock()
        self._terminals: Dict[str, Terminal] = {}
        self._starting = 0
        self._closed = False

    def create(self, params: Any) -> Dict[str, Any]:
        """``terminal/create``: start the command; ``{"terminalId"}`` at once.

        Raises:
            InvalidParams: a bad request, or too many terminals alive.
            JsonRpcError: ``-32603`` when the command cannot be started.
        """
        params = _mapping(params, "terminal/create")
        session_id = _string(params, "sessionId")
        argv = [_string(params, "command"), *_strings(params.get("args"), "args")]
        env = child_env(_environment(params.get("env")), self._inherit_env)
        cwd = params.get("cwd")
        if cwd is not None and (not isinstance(cwd, str) or not os.path.isabs(cwd)):
            raise InvalidParams(f"cwd must be an absolute path, not {cwd!r:.100}")
        limit = params.get("outputByteLimit")
        if limit is None:
            limit = DEFAULT_OUTPUT_BYTE_LIMIT
        elif isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise InvalidParams(f"outputByteLimit must be an integer >= 0, not {limit!r:.50}")
        terminal_id = f"term_{next(_numbers)}"
        with self._lock:
            if self._closed:
                raise JsonRpcError(REQUEST_CANCELLED, "the client is closing: no new terminals")
            if len(self._terminals) + self._starting >= MAX_TERMINALS:
                raise InvalidParams(f"{MAX_TERMINALS} terminals are alive already: release some first")
            self._starting += 1
        try:
            terminal = Terminal(
                terminal_id,
                session_id,
                argv,
                env=env,
                cwd=cwd or self._default_cwd(session_id),
                limit=min(limit, MAX_OUTPUT_BYTE_LIMIT),
            )
        except OSError as exc:
            raise InternalError(f"cannot run {argv[0]!r}: {exc.strerror or exc}") from None
        finally:
            with self._lock:
                self._starting -= 1
        with self._lock:
            closed = self._closed
            if not closed:
                self._terminals[terminal_id] = terminal
        if closed:
            terminal.release()
            raise JsonRpcError(REQUEST_CANCELLED, "the client is closing: no new terminals")
        logger.debug("terminal %s: started %r (pid %d)", terminal_id, argv, terminal.pid)
        return {"terminalId": terminal_id}

    def output(self, params: Any) -> Dict[str, Any]:
        """``terminal/output``: what the command wrote so far (and its exit status once it exited)."""
        return self._find(params, "terminal/output").output()

    def wait_for_exit(self, params: Any) -> Dict[str, Any]:
        """``terminal/wait_for_exit``: ``{"exitCode", "signal"}`` once the command exited.

        Raises:
            JsonRpcError: ``-32800`` when the session's deadline passed first.
        """
        terminal = self._find(params, "terminal/wait_for_exit")
        status = terminal.wait(self._wait_deadline(terminal.session_id).remaining())
        if status is None:
            raise JsonRpcError(REQUEST_CANCELLED, f"terminal {terminal.terminal_id} did not exit before the deadline")
        return status

    def kill(self, params: Any) -> Dict[str, Any]:
        """``terminal/kill``: kill the command (the terminal stays, for its output and exit status)."""
        self._find(params, "terminal/kill").kill()
        return {}

    def release(self, params: Any) -> Dict[str, Any]:
        """``terminal/release``: kill what still runs and forget the terminal."""
        terminal = self._find(params, "terminal/release")
        with self._lock:
            self._terminals.pop(terminal.terminal_id, None)
        terminal.release()
        return {}

    def alive(self) -> List[Terminal]:
        """The terminals not released yet."""
        with self._lock:
            return list(self._terminals.values())

    def close(self) -> None:
        """Release every terminal and refuse new ones.

        Every terminal's process tree is killed in one reclaim (bounded by
        ``KILL_WAIT_S``), then each reader gets what is left of a second
        ``KILL_WAIT_S`` to reach the end of its output.  Idempotent.
        """
        with self._lock:
            self._closed = True
            terminals, self._terminals = list(self._terminals.values()), {}
        try:
            reclaim_all(terminals)
        except Exception:
            logger.exception("terminals %s: reclaim failed", [t.terminal_id for t in terminals])

    def _find(self, params: Any, method: str) -> Terminal:
        params = _mapping(params, method)
        session_id = _string(params, "sessionId")
        terminal_id = _string(params, "terminalId")
        with self._lock:
            terminal = self._terminals.get(terminal_id)
        if terminal is None or terminal.session_id != session_id:
            raise InvalidParams(f"no terminal {terminal_id!r} in session {session_id!r}")
        return terminal


def _mapping(params: Any, method: str) -> Dict[str, Any]:
    if not isinstance(params, dict):
        raise InvalidParams(f"{method} needs params")
    return params


def _string(params: Dict[str, Any], name: str) -> str:
    value = params.get(name)
    if not isinstance(value, str) or not value:
        raise InvalidParams(f"{name} must be a non-empty string, not {value!r:.100}")
    return value


def _strings(values: Any, name: str) -> List[str]:
    if values is None:
        return []
    if not isinstance(values, list) or not all(isinstance(value, str) for value in values):
        raise InvalidParams(f"{name} must be a list of strings")
    return list(values)


def _environment(values: Any) -> Dict[str, str]:
    if values is None:
        return {}
    if not isinstance(values, list):
        raise InvalidParams("env must be a list of {name, value}")
    env = {}
    for item in values:
        if (
            not isinstance(item, dict)
            or not isinstance(item.get("name"), str)
            or not isinstance(item.get("value"), str)
        ):
            raise InvalidParams("env must be a list of {name, value} strings")
        env[item["name"]] = item["value"]
    return env


__all__ = [
    "DEFAULT_OUTPUT_BYTE_LIMIT",
    "KILL_WAIT_S",
    "MAX_OUTPUT_BYTE_LIMIT",
    "MAX_TERMINALS",
    "OUTPUT_DRAIN_WAIT_S",
    "Terminal",
    "TerminalService",
]
