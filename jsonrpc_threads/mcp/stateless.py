"""One request of the stateless era (MCP 2026-07-28): its ``_meta``, its headers, and the rounds it may take.

Theory of operation.  ``StatelessRequests`` turns one request of the
session's caller into what the stateless era puts on the wire, and its
answers into the result:

1. a fresh cached result answers at once (``cache``);
2. the request gets its ``_meta`` (``protocol.request_meta``: the
   protocol version, the client's capabilities and identity, the log level:
   the one ``set_logging_level()`` asked for, else, when the client has an
   ``on_log``, ``DEFAULT_LOG_LEVEL``)
   and, over Streamable HTTP, its headers (``http_headers``, with the
   ``Mcp-Param-*`` plan of the tool called, learnt from ``tools/list``);
3. the answer decides what comes next: ``complete`` is the result (kept when
   it carries caching hints); ``input_required`` is answered from the
   client's handlers and the request sent again (``mrtr``); ``task`` goes
   to the caller (``tasks``); an ``UnsupportedProtocolVersion`` is retried
   once with a version the server names (which the client then keeps); a
   ``HeaderMismatch`` on ``tools/call`` makes the client learn the tools
   again, then retry once; a broken answer stream (``StreamLost``) is
   sent again once, as a new request.

The sending itself (ids, deadlines, progress) is the session's, given as a
callable; this module adds no thread and holds no lock while a request runs.

Thread-safety: every method may be called from any thread (one lock guards
the version, the log level and the tools' header plans).
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from ..errors import RemoteError, StreamLost
from . import protocol
from .cache import ResultCache
from .client_features import DEFAULT_LOG_LEVEL, ClientFeatures
from .errors import HEADER_MISMATCH, ProtocolError, UnsupportedProtocolVersion, error_from_mcp
from .http_headers import NO_HEADERS, HeaderPlan, header_plan, message_headers
from .mrtr import MAX_INPUT_ROUNDS, answer_input_requests, retry_params
from .types import Tool

logger = logging.getLogger(__name__)

#: ``send(method, params, deadline, headers) -> result``: one request of the session, blocking, within
#: ``deadline`` (the ``Deadline`` of the call it belongs to).
Send = Callable[[str, Optional[Dict[str, Any]], Any, Optional[Mapping[str, str]]], Any]


class StatelessRequests:
    """The stateless era's requests of one client.

    Args:
        features: the client's handlers (its capabilities, and the answers to input requests).
        client_info: ``{"name", "version"}`` for every request's ``_meta``.
        tasks: declare the tasks extension (a ``task`` result goes to the caller).
        cache: where results with caching hints are kept (``None``: nothing is).
        over_http: tells whether the transport takes message headers (Streamable HTTP).
        refresh_tools: lists the tools again (``refresh_tools(deadline)``, after a ``HeaderMismatch``).
        label: for log lines.
    """

    def __init__(
        self,
        features: ClientFeatures,
        client_info: Mapping[str, Any],
        *,
        tasks: bool,
        cache: Optional[ResultCache],
        over_http: Callable[[], bool],
        refresh_tools: Callable[[Any], Any],
        label: str,
    ) -> None:
        self._features = features
        self._client_info = dict(client_info)
        self._tasks = tasks
        self._cache = cache
        self._over_http = over_http
        self._refresh_tools = refresh_tools
        self._label = label
        # _lock guards version, _log_level and _plans.
        self._lock = threading.Lock()
        self.version: str = protocol.STATELESS_PROTOCOL_VERSIONS[0]
        # With on_log the caller wants the server's logs: this era sends them only when asked.
        self._log_level: Optional[str] = DEFAULT_LOG_LEVEL if features.on_log is not None else None
        self._plans: Dict[str, HeaderPlan] = {}

    # -- settings ---------------------------------------------------------------------------

    def set_log_level(self, level: str) -> None:
        """Ask for log messages of ``level`` and above in every later request (``_meta`` ``logLevel``)."""
        with self._lock:
            self._log_level = level

    def capabilities(self) -> Dict[str, Any]:
        """The client capabilities of this era: the handlers', and the extensions."""
        extensions: Dict[str, Any] = {protocol.TASKS_EXTENSION: {}} if self._tasks else {}
        return protocol.stateless_capabilities(self._features.capabilities(), extensions)

    def learn_tools(self, tools: List[Tool]) -> List[Tool]:
        """Remember each tool's ``Mcp-Param-*`` plan; over HTTP, leave out those whose annotations are invalid."""
        kept: List[Tool] = []
        plans: Dict[str, HeaderPlan] = {}
        strict = self._over_http()
        for tool in tools:
            plan, problem = header_plan(tool.get("inputSchema") if isinstance(tool, dict) else None)
            if problem is not None and strict:
                logger.warning("%s: tool %r left out: %s", self._label, tool.get("name"), problem)
                continue
            if plan.params:
                plans[str(tool.get("name"))] = plan
            kept.append(tool)
        with self._lock:
            self._plans = plans
        return kept

    # -- requests ---------------------------------------------------------------------------

    def prepare(
        self, method: str, params: Optional[Mapping[str, Any]], version: Optional[str] = None
    ) -> Tuple[Dict[str, Any], Optional[Dict[str, str]]]:
        """``params`` with this era's ``_meta``, and the message's headers (``None`` off HTTP)."""
        with self._lock:
            version = version or self.version
            log_level = self._log_level
            plan = self._plans.get(str((params or {}).get("name"))) if method == "tools/call" else None
        meta = protocol.request_meta(version, self.capabilities(), self._client_info, log_level)
        full = protocol.with_meta(params, meta)
        headers = message_headers(version, method, full, plan or NO_HEADERS) if self._over_http() else None
        return full, headers

    def once(
        self, send: Send, method: str, params: Optional[Mapping[str, Any]], deadline: Any, version: Optional[str] = None
    ) -> Any:
        """One request, as it is, in ``version`` (default: this client's): no cache, no retry.

        For ``server/discover`` as the era's probe, and as ``ping``.

        Raises:
            JsonRpcError: as the send; MCP's codes as their classes.
        """
        full, headers = self.prepare(method, params, version)
        try:
            return send(method, full, deadline, headers)
        except RemoteError as exc:
            raise error_from_mcp(exc) from None

    def request(self, send: Send, method: str, params: Optional[Dict[str, Any]], deadline: Any) -> Any:
        """One request of the caller, through every round it takes (see the module docstring).

        Every round, and the tools' refresh after a ``HeaderMismatch``, spends
        what is left of the one ``deadline``.

        Raises:
            ProtocolError: an answer the protocol forbids (an unknown ``resultType``,
                input asked for where none may be, rounds without end).
            JsonRpcError: as the send; MCP's codes as their classes.
            Exception: what a handler raised while answering an input request.
        """
        cache = self._cache
        if cache is not None:
            cached = cache.get(method, params)
            if cached is not None:
                return cached
        with self._lock:
            version = self.version
        retried_version = retried_headers = resent = False
        round_params = params
        for _ in range(MAX_INPUT_ROUNDS):
            full, headers = self.prepare(method, round_params, version)
            try:
                result = send(method, full, deadline, headers)
            except StreamLost:
                if resent:
                    raise
                # The answer's stream broke and is not resumed: send the request again, once, as a new one.
                logger.info("%s: %s: the answer's stream broke; sending the request again", self._label, method)
                resent = True
                continue
            except RemoteError as exc:
                error = error_from_mcp(exc)
                if isinstance(error, UnsupportedProtocolVersion) and not retried_version:
                    again = protocol.retry_version(error)
                    if again is not None:
                        version, retried_version = again, True
                        with self._lock:
                            self.version = again  # what the server speaks, for later requests too
                        continue
                if error.code == HEADER_MISMATCH and method == "tools/call" and not retried_headers:
                    retried_headers = True  # the tool's schema may have changed: learn it again
                    if cache is not None:
                        cache.invalidate(("tools/list",))
                    self._refresh_tools(deadline)
                    continue
                raise error from None
            kind = protocol.result_type(result)
            if kind == protocol.RESULT_COMPLETE:
                if cache is not None and round_params is params:
                    cache.put(method, params, result)
                return result
            if kind == protocol.RESULT_TASK and self._tasks:
                return result
            if kind != protocol.RESULT_INPUT_REQUIRED:
                raise ProtocolError(f"{method}: the server answered with an unknown resultType {kind!r}", result)
            if method not in protocol.INPUT_REQUIRED_METHODS:
                raise ProtocolError(f"{method}: the server asked for input on a request that may not have any")
            responses = answer_input_requests(self._features, result.get("inputRequests"))
            round_params = retry_params(params, responses, result.get("requestState"))
        raise ProtocolError(f"{method}: the server still asked for input after {MAX_INPUT_ROUNDS} rounds")


__all__ = ["Send", "StatelessRequests"]
