"""The transport's calls into the client's sink, each guarded so that no failure of it kills a thread.

Thread-safety: every method may be called from any thread.
"""

from __future__ import annotations

import logging
import threading
from typing import Optional, Sequence

from ...errors import JsonRpcError, RequestId, TransportClosed
from ..base import MessageSink
from .errors import closed_error

logger = logging.getLogger(__name__)


class SinkCalls:
    """Delivers messages and failures to the sink set by ``start()``; tells it of the end once.

    Args:
        label: the transport's label, for log lines.
        closing: set once the transport closes (every failure is then ``TransportClosed``).
    """

    def __init__(self, label: str, closing: threading.Event) -> None:
        self._label = label
        self._closing = closing
        # _lock guards sink and _told_closed.
        self._lock = threading.Lock()
        self.sink: Optional[MessageSink] = None
        self._told_closed = False

    def deliver(self, payload: bytes) -> Sequence[RequestId]:
        """One complete message (or batch) arrived; returns the ids of the responses it carried (from the sink)."""
        sink = self.sink
        if sink is None:
            return ()
        try:
            answered = sink.message_received(payload)
        except Exception:
            logger.exception("%s: the sink failed on a received message", self._label)
            return ()
        return answered or ()  # a sink that returns None knows of no response

    def fail(self, request_ids: Sequence[RequestId], error: JsonRpcError) -> None:
        """These requests failed in transit."""
        sink = self.sink
        if sink is None or not request_ids:
            return
        if self._closing.is_set() and not isinstance(error, TransportClosed):
            error = closed_error()
        try:
            sink.requests_failed(request_ids, error)
        except Exception:
            logger.exception("%s: the sink failed on a request failure", self._label)

    def closed(self, error: Optional[TransportClosed] = None) -> None:
        """The transport is gone: tell the sink (with ``error``, or "closed"), the first time only."""
        with self._lock:
            sink = self.sink
            already = self._told_closed
            self._told_closed = True
        if sink is None or already:
            return
        try:
            sink.transport_closed(error if error is not None else closed_error())
        except Exception:
            logger.exception("%s: the sink failed on transport_closed", self._label)


__all__ = ["SinkCalls"]
