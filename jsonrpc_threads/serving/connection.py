"""The output side of one server loop: every message one flushed line, writes never interleaved.

Theory of operation: a ``ServerConnection`` owns the output stream of a
``jsonrpc_threads.server.serve`` loop.  One lock serializes the writes (the
lock *is* the framing: each answer, batch or notification goes out whole, as
``json + "\\n"``, flushed).  The first write that fails (the peer went away)
closes the connection, and from then on, as after ``close()``, every message
is dropped and logged at debug level: a handler never learns of a broken pipe
by an exception.
"""

from __future__ import annotations

import threading

from ..messages import encode, notification_message
from .logs import logger

TYPE_CHECKING = False  # typing is not imported at run time: a tool server starts faster
if TYPE_CHECKING:
    from typing import IO

    from ..messages import Params


class ServerConnection:
    """The output side of one ``serve`` loop: every message is one flushed line.

    Created by ``serve``; handlers reach it through ``current_connection``.
    Thread-safe: any thread may call ``notify`` at any time, and writes never
    interleave.  Once the output is broken or ``serve`` has returned, the
    connection is closed and messages are dropped (logged at debug level).
    """

    def __init__(self, stream: IO[bytes]) -> None:
        self._stream = stream
        # Serializes writes to _stream (its only job: the lock *is* the framing);
        # _closed and _broken are only changed while holding it.
        self._write_lock = threading.Lock()
        self._closed = False
        self._broken = False

    @property
    def closed(self) -> bool:
        """True once the output is broken or the loop has ended."""
        return self._closed

    @property
    def broken(self) -> bool:
        """True when a write failed (the peer went away)."""
        return self._broken

    def notify(self, method: str, params: Params = None) -> None:
        """Send a notification to the peer (best effort).

        Args:
            method: the notification's method.
            params: a mapping, a sequence or ``None``.

        Raises:
            TypeError: when the method or params have the wrong type or cannot be
                encoded as JSON (the caller's bug; nothing is sent).
        """
        self.write_line(encode(notification_message(method, params)))

    def write_line(self, data: bytes) -> bool:
        """Write one encoded message (or batch) and a newline, then flush.

        Returns:
            True when written; False when the connection is closed or the write
            failed (which closes it).
        """
        with self._write_lock:
            if self._closed:
                logger.debug("output closed; dropped %d bytes", len(data))
                return False
            try:
                self._stream.write(data + b"\n")
                self._stream.flush()
            except (OSError, ValueError) as exc:  # ValueError: write to a closed file
                self._closed = True
                self._broken = True
                logger.info("output is gone (%s: %s); stopping", type(exc).__name__, exc)
                return False
            return True

    def close(self) -> None:
        """Drop every later message.  Idempotent; does not close the stream."""
        with self._write_lock:
            self._closed = True


__all__ = ["ServerConnection"]
