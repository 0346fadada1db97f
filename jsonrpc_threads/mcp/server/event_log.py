"""What one request sends its client over HTTP before and with its result, kept so a lost stream can resume.

Theory of operation.  A request that runs on the HTTP app's pool writes what
it sends (notifications, questions to the client, then its result) into its
``EventLog``; the request's thread reads the log and answers: JSON when the
result is the first entry, else an SSE stream of the entries.  Each entry's
SSE id is ``<log key>:<position>``, so a client whose stream broke (or that
the server told to reconnect: ``Context.end_stream``) sends ``GET`` with
``Last-Event-ID`` and gets the rest of the same log, its result included
(logs of the 2025 era are kept by their session, a few at a time).

Thread-safety: every method may be called from any thread; one condition
guards the entries and the flags.
"""

from __future__ import annotations

import secrets
import threading
import time
from typing import Any, List, Optional, Tuple

__all__ = ["FINAL", "MESSAGE", "EventLog"]

#: An entry that is the request's answer: ``(status, encoded response)``.
FINAL = "final"
#: An entry that is a message sent before the answer (a dict).
MESSAGE = "message"

Entry = Tuple[str, Any]


class EventLog:
    """The entries of one request's answer, in order.  Thread-safe.

    Attributes:
        key: the log's name in SSE ids (unguessable).
    """

    def __init__(self) -> None:
        self.key = secrets.token_hex(8)
        self._cond = threading.Condition()  # guards _entries, _cut and _finished
        self._entries: List[Entry] = []
        self._cut = False
        self._finished = False

    def __repr__(self) -> str:
        return f"<EventLog {self.key} entries={len(self._entries)}>"

    def put(self, kind: str, payload: Any) -> None:
        """Add an entry (``FINAL`` ends the log)."""
        with self._cond:
            if self._finished:
                return
            self._entries.append((kind, payload))
            if kind == FINAL:
                self._finished = True
            self._cond.notify_all()

    def cut(self) -> None:
        """End the live stream now; the entries still to come wait for a client that resumes."""
        with self._cond:
            self._cut = True
            self._cond.notify_all()

    @property
    def finished(self) -> bool:
        """True once the answer is in."""
        with self._cond:
            return self._finished

    def next(self, position: int, timeout: float, *, live: bool) -> Optional[Entry]:
        """The entry after the first ``position`` ones, waiting up to ``timeout``.

        Returns:
            The entry; ``None`` when none came in time (a heartbeat is due);
            ``("cut", None)`` for a live reader once the log was cut.
        """
        deadline = time.monotonic() + timeout
        with self._cond:
            while len(self._entries) <= position:
                if live and self._cut:
                    return ("cut", None)
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self._cond.wait(left)
            return self._entries[position]
