"""A registry's settings: what every supervisor of it reads at each start and call (timeouts, policies, workers).

Theory of operation.  ``Settings`` is the registry's configuration, checked
as it enters (``Settings.checked``) and read by every
``ServerSupervisor`` of the registry at each start and call, so that a
change the registry makes (its ``default_timeout`` setter, say) applies to
the next start or call of every server.  ``background`` is where the slow
work of every supervisor runs (``background``); a forked process gets a new one.

Thread-safety: ``Settings`` is read without a lock (the registry changes a
field at a time, each one a single assignment).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional

from ..deadlines.timeouts import check_timeout
from ..observe import ToolTracing, WireMessage
from ..transports.base import Transport
from ..transports.config import ServerConfig
from .background import Background
from .restarts import RestartPolicy

#: Builds the transport of a server from its entry.
TransportFactory = Callable[[ServerConfig], Transport]
#: Default seconds a health ping may take before the server is taken for hung.
DEFAULT_HEALTH_TIMEOUT_S = 10.0


@dataclass
class Settings:
    """What every supervisor of one registry reads when it starts or calls (shared; the registry may change it).

    Attributes:
        default_timeout: seconds a call may take unless the call or the server's
            ``timeout`` says otherwise.
        startup_timeout: seconds for a start in all: spawn or connect,
            ``initialize`` and the first ``tools/list``.
        retry_failed_after: seconds before a failed server is tried again (``None``: never).
        client_info: ``{"name", "version"}`` sent in ``initialize``.
        policy: how stopped servers are restarted.
        idle_timeout: seconds a session may go without a lease before it is closed (``None``: never).
        health_interval: seconds between health pings of a running session (``None``: none).
        health_timeout: seconds a health ping may take.
        tracing: OpenTelemetry spans for tool calls, or ``None``.
        wire_trace: ``callback(server, message)`` for every message of every
            session (see ``jsonrpc_threads.observe.trace_wire``), or ``None``.
        background: where starts, closes and pings run (replaced after a fork).
    """

    default_timeout: Optional[float]
    startup_timeout: Optional[float]
    retry_failed_after: Optional[float]
    client_info: Optional[Mapping[str, Any]] = None
    policy: RestartPolicy = field(default_factory=RestartPolicy)
    idle_timeout: Optional[float] = None
    health_interval: Optional[float] = None
    health_timeout: float = DEFAULT_HEALTH_TIMEOUT_S
    tracing: Optional[ToolTracing] = None
    wire_trace: Optional[Callable[[str, WireMessage], object]] = None
    background: Background = field(default_factory=lambda: Background(4))

    @classmethod
    def checked(
        cls,
        *,
        default_timeout: Optional[float],
        startup_timeout: Optional[float],
        retry_failed_after: Optional[float],
        client_info: Optional[Mapping[str, Any]],
        policy: RestartPolicy,
        idle_timeout: Optional[float],
        health_interval: Optional[float],
        health_timeout: float,
        tracing: Any,
        wire_trace: Optional[Callable[[str, WireMessage], object]],
        workers: int,
    ) -> Settings:
        """The registry's settings, each checked as it enters; ``workers`` background threads.

        ``tracing``: ``True`` (the global tracer provider), a ``TracerProvider``, or false.

        Raises:
            ValueError, TypeError: for a bad timeout or interval.
            ImportError: ``tracing`` without ``opentelemetry-api``.
        """
        return cls(
            check_timeout(default_timeout, "default_timeout"),
            check_timeout(startup_timeout, "startup_timeout"),
            retry_failed_after,
            client_info,
            policy=policy,
            idle_timeout=_positive_or_none(idle_timeout, "idle_timeout"),
            health_interval=_positive_or_none(health_interval, "health_interval"),
            health_timeout=check_timeout(health_timeout, "health_timeout") or DEFAULT_HEALTH_TIMEOUT_S,
            tracing=None if tracing is False or tracing is None else ToolTracing(None if tracing is True else tracing),
            wire_trace=wire_trace,
            background=Background(workers, "jsonrpc-registry"),
        )


def _positive_or_none(value: Optional[float], name: str) -> Optional[float]:
    seconds = check_timeout(value, name)
    if seconds is not None and seconds <= 0:
        raise ValueError(f"{name} must be > 0 (or None), not {value!r}")
    return seconds


__all__ = ["DEFAULT_HEALTH_TIMEOUT_S", "Settings", "TransportFactory"]
