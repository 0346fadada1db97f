"""Watching clients: counters, a trace of every message on the wire, and OpenTelemetry spans.

Theory of operation.  A ``JsonRpcClient`` counts
its requests from birth (its ``stats()``: the protocol core counts timeouts,
cancels and errors as it decides them) and, only when someone asks, keeps an
``Observer`` (made here, attached through the client's
``attach_observer``).  Without an observer a client pays one ``is None`` test
at each hook point; with one, the hook hands the event over and returns:

- the wire trace (``trace_wire``): every message the client sends or
  receives, as the bytes went on the wire, is stamped with the time and queued
  on the observer's serial lane (``SerialLane``,
  one daemon thread per traced client, in order).  The lane decodes the text,
  redacts it as the transport's log lines are (a URL's query string and user
  info, ``Bearer ...`` credentials, the values of secret headers: see
  ``jsonrpc_threads.transports.redact``) and calls your function.
  Your function never runs on a reader thread, the timer thread or under a
  lock of the library, and a slow one delays only the trace.  When the
  transport ends, the lane delivers what it holds and its thread ends;
- close listeners (``add_close_listener``): library code (the tool
  registry's supervisor) told at once that a client's transport went away.
  They run where the end was seen (a reader thread) and must only record and
  schedule: never block, never call user code.

OpenTelemetry (``ToolTracing``) is for the MCP layer: a span per tool
call, started and ended on the caller's thread, whose W3C ``traceparent``
goes to the server in the request's ``_meta``.  ``opentelemetry-api`` (the
``otel`` extra) is imported only when tracing is asked for.

Thread-safety: every function and method here may be called from any thread.
"""

from __future__ import annotations

import sys
import threading
import time

from .runtime.logs import get_logger
from .runtime.workers import PoolClosed, SerialLane

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

    from .errors import TransportClosed

    #: ``listener(error)`` when a client's transport ended.
    CloseListener = Callable[[TransportClosed], None]

logger = get_logger(__name__)

#: The keys of ``JsonRpcClient.stats()``, in order.
STAT_KEYS = ("calls", "errors", "timeouts", "cancels", "pending")
#: The name of the tracer that ``ToolTracing`` asks OpenTelemetry for.
TRACER_NAME = "jsonrpc_threads"


def add_stats(total: Dict[str, int], more: Mapping[str, int]) -> None:
    """Add the counters of ``more`` into ``total`` (the keys of both)."""
    for key, value in more.items():
        total[key] = total.get(key, 0) + value


class WireMessage:
    """One message as it went on the wire, for the wire trace.

    Attributes:
        direction: ``"out"`` (sent by the client) or ``"in"`` (received).
        transport: the transport's label (a command, or a URL without its query).
        text: the JSON text (a message or a batch), redacted.
        time: when the client handed it over or got it (``time.time``).
    """

    __slots__ = ("direction", "text", "time", "transport")

    def __init__(self, direction: str, transport: str, text: str, when: float) -> None:
        self.direction = direction
        self.transport = transport
        self.text = text
        self.time = when

    def __repr__(self) -> str:
        return f"<WireMessage {self.direction} {self.transport} {self.text[:80]!r}>"


class _Redactor:
    """Redacts message text as the log lines of the transports are (made on the lane, on first use)."""

    __slots__ = ("_headers", "_secrets", "_url")

    def __init__(self, url: str, headers: Mapping[str, str]) -> None:
        self._url = url
        self._headers = dict(headers)
        self._secrets: Any = None

    def __call__(self, text: str) -> str:
        secrets = self._secrets
        if secrets is None:
            # The log redaction of the transports, loaded by a traced client only (on the trace's thread).
            from .transports.redact import Secrets  # noqa: PLC0415

            secrets = self._secrets = Secrets(self._url, self._headers)
        return str(secrets.redact(text))


class Observer:
    """What watches one client: close listeners and the wire trace.  Made by ``observer_of``.

    The client calls ``sent``, ``received`` and ``closed`` from
    its own hook points (any thread, a reader thread included): each returns
    at once.  Thread-safe.
    """

    def __init__(self, label: str) -> None:
        self._label = label
        # _lock guards _listeners, _trace, _lane and _ended.
        self._lock = threading.Lock()
        self._listeners: List[CloseListener] = []
        self._trace: Optional[Tuple[Callable[[WireMessage], object], _Redactor]] = None
        self._lane: Optional[SerialLane] = None
        self._ended = False

    # -- set up ----------------------------------------------------------------------------

    def add_close_listener(self, listener: CloseListener) -> None:
        with self._lock:
            self._listeners.append(listener)

    def set_trace(self, callback: Optional[Callable[[WireMessage], object]], redactor: _Redactor) -> None:
        with self._lock:
            if callback is None:
                self._trace = None
                return
            self._trace = (callback, redactor)
            if self._lane is None and not self._ended:
                self._lane = SerialLane(f"jsonrpc-wire-trace[{self._label}]")

    # -- the client's hook points ------------------------------------------------------------

    def sent(self, data: bytes) -> None:
        """The client handed ``data`` to its transport."""
        self._queue("out", data)

    def received(self, data: bytes) -> None:
        """The transport delivered ``data``."""
        self._queue("in", data)

    def closed(self, error: TransportClosed) -> None:
        """The transport ended: tell the listeners (here), then let the trace drain and end."""
        with self._lock:
            listeners = list(self._listeners)
            lane, self._lane = self._lane, None
            self._ended = True
        for listener in listeners:
            try:
                listener(error)
            except Exception:
                logger.exception("%s: a close listener failed", self._label)
        if lane is not None:
            try:
                lane.submit(lane.shutdown, 0.0)  # after everything queued: the thread ends itself
            except PoolClosed:
                pass

    def _queue(self, direction: str, data: bytes) -> None:
        trace, lane = self._trace, self._lane
        if trace is None or lane is None:
            return
        try:
            lane.submit(_deliver, trace, direction, self._label, data, time.time())
        except PoolClosed:
            pass


def _deliver(
    trace: Tuple[Callable[[WireMessage], object], _Redactor], direction: str, label: str, data: bytes, when: float
) -> None:
    callback, redact = trace
    text = redact(data.decode("utf-8", "replace"))
    callback(WireMessage(direction, label, text, when))


def observer_of(client: Any) -> Observer:
    """The observer of ``client`` (a ``JsonRpcClient``), made and attached on first use."""
    observer: Observer = client.attach_observer(Observer)
    return observer


def add_close_listener(client: Any, listener: CloseListener) -> None:
    """Call ``listener(error)`` when the transport of ``client`` ends (for library code only).

    The listener runs on the thread that saw the end (a reader thread, or the
    one in ``close()``): it must return at once, never block, never run user code.
    """
    observer_of(client).add_close_listener(listener)


def trace_wire(
    client: Any,
    callback: Optional[Callable[[WireMessage], object]],
    *,
    headers: Optional[Mapping[str, str]] = None,
) -> None:
    """Call ``callback(message)`` with every message ``client`` sends and receives, redacted.

    ``callback`` gets a ``WireMessage`` per message (a batch is one
    message), in the order the client handed them over or got them, on a
    thread of the trace's own (never a reader thread, the timer thread, or
    under a lock of the library); what it raises is logged.  The text is
    redacted as the library's log lines are: the transport's URL query and
    user info, ``Bearer``/``Basic``/``token`` credentials, and the values of the
    secret ones among ``headers`` (``Authorization``, names with ``token``,
    ``key``, ``secret``...).  Setting a trace loads the HTTP stack's redaction
    module (on the trace's thread, when the first message is delivered).

    Args:
        client: a ``JsonRpcClient`` (an
            ``McpClient``'s is its ``.rpc``).
        callback: the function, or ``None`` to stop tracing.
        headers: headers whose secret values must not appear (an HTTP
            transport's own URL is always known).
    """
    transport = getattr(client, "transport", None)
    url = getattr(transport, "url", "")
    observer_of(client).set_trace(callback, _Redactor(url if isinstance(url, str) else "", headers or {}))


# -- OpenTelemetry -------------------------------------------------------------------------------


class ToolTracing:
    """OpenTelemetry spans for tool calls, and the W3C trace context sent with them.  Thread-safe.

    Args:
        provider: a ``TracerProvider``; the global one (``opentelemetry.trace``) by default.

    Raises:
        ImportError: ``opentelemetry-api`` is not installed (the ``otel`` extra).
    """

    def __init__(self, provider: Any = None) -> None:
        from opentelemetry import propagate, trace  # noqa: PLC0415 - only when tracing is asked for

        from ._version import __version__  # noqa: PLC0415

        self._trace = trace
        self._propagate = propagate
        source = provider if provider is not None else trace
        self._tracer = source.get_tracer(TRACER_NAME, __version__)

    def start(self, server: str, tool: str, transport: str) -> Tuple[Any, Dict[str, str]]:
        """Start the span of one ``tools/call`` (a child of the caller's current span).

        Returns:
            The span, and the carrier to put in the request's ``_meta``
            (``traceparent``, and ``tracestate`` when there is one).
        """
        trace = self._trace
        span = self._tracer.start_span(
            f"tools/call {tool}",
            kind=trace.SpanKind.CLIENT,
            attributes={
                "mcp.method.name": "tools/call",
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": tool,
                "jsonrpc_threads.server": server,
                "network.transport": "pipe" if transport == "stdio" else "tcp",
            },
        )
        carrier: Dict[str, str] = {}
        self._propagate.inject(carrier, context=trace.set_span_in_context(span))
        return span, carrier

    def traced(self, server: str, tool: str, transport: str, call: Callable[[Dict[str, str]], Any]) -> Any:
        """Run ``call(carrier)`` inside the span of one ``tools/call``, and end the span with its outcome.

        ``carrier`` is what ``start`` returns, for the request's ``_meta``;
        ``call``'s result, or what it raises, is passed on.
        """
        from collections.abc import Mapping as AnyMapping  # noqa: PLC0415 - only when tracing is asked for

        span, carrier = self.start(server, tool, transport)
        try:
            result = call(carrier)
        except BaseException as exc:
            self.end(span, error=exc)
            raise
        self.end(span, tool_error=isinstance(result, AnyMapping) and result.get("isError") is True)
        return result

    def end(self, span: Any, *, error: Optional[BaseException] = None, tool_error: bool = False) -> None:
        """End the span: ``error`` (an exception of the call), or ``tool_error`` (an ``isError`` result)."""
        trace = self._trace
        if error is not None:
            span.set_attribute("error.type", type(error).__name__)
            span.set_status(trace.Status(trace.StatusCode.ERROR, str(error)[:200]))
        elif tool_error:
            span.set_attribute("error.type", "tool_error")
            span.set_status(trace.Status(trace.StatusCode.ERROR, "the tool's result has isError"))
        span.end()


def opentelemetry_available() -> bool:
    """True when ``opentelemetry-api`` can be imported (without importing it)."""
    if "opentelemetry" in sys.modules:
        return True
    from importlib.util import find_spec  # noqa: PLC0415

    return find_spec("opentelemetry") is not None


__all__ = [
    "STAT_KEYS",
    "TRACER_NAME",
    "Observer",
    "ToolTracing",
    "WireMessage",
    "add_close_listener",
    "add_stats",
    "observer_of",
    "opentelemetry_available",
    "trace_wire",
]
