"""The sessions a client opened: the agent's answers, and the directory each one works in.

Theory of operation.  ``session/new`` and ``session/load`` answer with what the
session offers (``modes``, ``configOptions``, ...); a ``SessionBook`` keeps
that answer per session id, with the ``cwd`` the session was given, so that
callers can look them up (``AcpClient.sessions``) and a terminal the agent
starts runs in its session's directory by default.  Directories are made
absolute here, as ACP requires.
"""

from __future__ import annotations

import os
import threading
from typing import Any, Dict, Optional, Union


class SessionBook:
    """Sessions by id.  Thread-safe.

    Args:
        default_cwd: every session's directory unless it names its own (absolute);
            ``None``: this process's working directory at the time.
    """

    def __init__(self, default_cwd: Optional[Union[str, os.PathLike[str]]]) -> None:
        self.default_cwd = os.path.abspath(os.fspath(default_cwd)) if default_cwd is not None else None
        # _lock guards _answers.
        self._lock = threading.Lock()
        self._answers: Dict[str, Dict[str, Any]] = {}

    def directory(self, cwd: Optional[Union[str, os.PathLike[str]]]) -> str:
        """The absolute directory of a session asked to work in ``cwd`` (``None``: the default)."""
        if cwd is not None:
            return os.path.abspath(os.fspath(cwd))
        return self.default_cwd if self.default_cwd is not None else os.getcwd()

    def remember(self, session_id: str, answer: Dict[str, Any], directory: str) -> None:
        """Keep the agent's answer for ``session_id`` and the directory it was given."""
        with self._lock:
            self._answers[session_id] = {**answer, "cwd": directory}

    def cwd_of(self, session_id: str) -> Optional[str]:
        """The session's directory; the default for a session this client did not open."""
        with self._lock:
            answer = self._answers.get(session_id)
        return answer["cwd"] if answer is not None else self.default_cwd

    def snapshot(self) -> Dict[str, Dict[str, Any]]:
        """Every session -> a copy of its answer (with its ``cwd``)."""
        with self._lock:
            return {session_id: dict(answer) for session_id, answer in self._answers.items()}


__all__ = ["SessionBook"]
