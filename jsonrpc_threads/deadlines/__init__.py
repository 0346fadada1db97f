"""Deadlines, for code built on the client: one made where a call enters, spent by every step.

The library's own rule, offered to code that builds a protocol or a tool
layer on top of it: a public call turns its ``timeout`` into one
``Deadline`` where it enters (``Deadline.after(timeout, default)``), and
every step that call triggers (a handshake that has not run, the request, a
cancellation, a poll) waits for what is left of it (``remaining()``), never
for a timeout of its own.  ``timeout`` keeps the seconds the caller gave, so
an error can name the whole call ("timed out after 4.0s").

Timeouts follow the rules of the whole library (``check_timeout``): ``None``
or ``inf`` means no deadline, a negative number or NaN is a ``ValueError``,
a bool or a string a ``TypeError``, ``0`` expires at once, and
``DEFAULT_TIMEOUT`` (or ``...``) takes the default the caller's object was
given.  ``Deadline`` is immutable and thread-safe.

A step that several calls need at once (a handshake, a renewal, a fetch)
is a ``SingleFlight``: it runs once, on a thread of its own, and each caller
waits for it no longer than its own deadline; the step spends a ``Budget``,
the latest of the deadlines of the callers that joined it.  A step that had
only what was left of a call's deadline times out with those seconds:
``as_call_timeout`` re-names such a ``RequestTimeout`` with the whole call's.

A caller whose deadline passed leaves at once; what its step left stuck (a
hook that blocks, a stream whose thread is in it) is handed to
``close_in_background``, never waited for past the deadline.

Example::

    from jsonrpc_threads.deadlines import DEFAULT_TIMEOUT, Deadline

    deadline = Deadline.after(2.5)
    assert 0 < deadline.remaining() <= 2.5 and not deadline.expired
    assert Deadline.after(DEFAULT_TIMEOUT, 10.0).timeout == 10.0
    assert Deadline.after(None).remaining() is None
"""

from __future__ import annotations

from .timeouts import DEFAULT_TIMEOUT, Deadline, UseDefault, check_timeout

TYPE_CHECKING = False  # typing is not imported at run time: every layer imports this package
if TYPE_CHECKING:
    from typing import Any

    from ..runtime.closing import close_in_background
    from .flight import STEP_JOIN_S, Budget, SingleFlight, as_call_timeout
    from .timeouts import Timeout


def __getattr__(name: str) -> Any:
    """The single flight, ``close_in_background`` and ``Timeout``, loaded on first use.

    Every module of the library imports ``deadlines.timeouts``, and so this
    package: a tool server's start-up does not pay for threads and futures
    it may never use.
    """
    if name in ("STEP_JOIN_S", "Budget", "SingleFlight", "as_call_timeout"):
        from . import flight  # noqa: PLC0415

        return getattr(flight, name)
    if name == "close_in_background":
        from ..runtime import closing  # noqa: PLC0415

        return closing.close_in_background
    if name == "Timeout":
        from . import timeouts  # noqa: PLC0415

        return timeouts.Timeout
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DEFAULT_TIMEOUT",
    "STEP_JOIN_S",
    "Budget",
    "Deadline",
    "SingleFlight",
    "Timeout",
    "UseDefault",
    "as_call_timeout",
    "check_timeout",
    "close_in_background",
]
