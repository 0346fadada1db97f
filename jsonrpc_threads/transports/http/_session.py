"""The MCP session of one transport: its id, the negotiated protocol version, and the DELETE that ends it.

The ``Mcp-Session-Id`` of any successful answer is sent on every later
request, and ``MCP-Protocol-Version`` once it is set (the MCP layer does that
after ``initialize``).  In the stateless revision (2026-07-28, ``stateless``
set by the MCP layer) there is no session: a ``Mcp-Session-Id`` a server
still sends is ignored, none is ever sent, and nothing is DELETEd.  A 404 to a
request that carried a session id means the session expired (``status_error`` makes that
``SessionExpired``); ``SessionState.reset``
forgets it, so the next request starts a new one.  ``close()`` ends a session
with a DELETE (405: the server does not let clients end sessions; fine).

Thread-safety: every method may be called from any thread.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Dict, Mapping, Optional

from ...errors import JsonRpcError
from .._httpbase.exchange import Exchange
from .._httpbase.wire import ACCEPT_POST, DELETE_TIMEOUT_S, PROTOCOL_VERSION_HEADER, SESSION_HEADER

if TYPE_CHECKING:
    from .._httpbase.endpoint import Endpoint

logger = logging.getLogger(__name__)


class SessionState:
    """The session id and protocol version sent with every request.

    Args:
        label: the transport's label, for log lines.
    """

    def __init__(self, label: str) -> None:
        self._label = label
        # _lock guards session_id and _ended.
        self._lock = threading.Lock()
        self.session_id: Optional[str] = None
        self.protocol_version: Optional[str] = None
        self.stateless = False
        self._ended = False

    def add_headers(self, headers: Dict[str, str]) -> None:
        """Put the session's headers into ``headers`` (a request's)."""
        session_id = self.session_id
        if session_id is not None:
            headers[SESSION_HEADER] = session_id
        protocol_version = self.protocol_version
        if protocol_version is not None:
            headers[PROTOCOL_VERSION_HEADER] = protocol_version

    def capture(self, headers: Mapping[str, str]) -> None:
        """Take the session id of a successful answer (a malformed one is ignored)."""
        session_id = headers.get(SESSION_HEADER)
        if session_id is None or session_id == self.session_id or self.stateless:
            return
        if not session_id or not all(0x21 <= ord(ch) <= 0x7E for ch in session_id):
            logger.warning("%s: ignoring a malformed %s header", self._label, SESSION_HEADER)
            return
        with self._lock:
            if not self._ended:
                self.session_id = session_id
        logger.debug("%s: session established", self._label)

    def reset(self) -> None:
        """Forget the session id: the next request goes out without one."""
        with self._lock:
            self.session_id = None

    def end(self) -> Optional[str]:
        """The transport closes: no new session from now on.  Returns the one to DELETE, if any."""
        with self._lock:
            self._ended = True
            return self.session_id


def delete_session(endpoint: Endpoint, session_id: str) -> None:
    """End the session on the server (DELETE, bounded by ``DELETE_TIMEOUT_S``); never raises."""
    exchange = Exchange((), None, DELETE_TIMEOUT_S)
    try:
        headers = endpoint.headers(ACCEPT_POST)
        headers[SESSION_HEADER] = session_id
        response = endpoint.request(
            "DELETE", headers, exchange, timeout=(DELETE_TIMEOUT_S, DELETE_TIMEOUT_S), while_closing=True
        )
    except JsonRpcError as exc:
        logger.debug("%s: DELETE of the session failed: %s", endpoint.label, exc)
        return
    with response:
        # 405: the server does not let clients end sessions; nothing to do.
        logger.debug("%s: DELETE of the session answered %d", endpoint.label, response.status_code)


__all__ = ["SessionState", "delete_session"]
