"""The server's logger, and the stderr handler ``serve`` attaches while it runs.

Theory of operation: every module of the serving side logs to one logger,
``jsonrpc_threads.server`` (``LOGGER_NAME``), through a ``LazyLogger`` so a
tool server that logs nothing never imports ``logging``.  When the process has
not configured logging (the root logger has no handler), ``serve`` attaches a
stderr handler to that logger for its duration (``attach_stderr_logging`` /
``detach_stderr_logging``, counted, so nested and concurrent loops share one),
so the tracebacks of failing handlers reach stderr.  When ``logging`` was never
imported, nobody configured it: the handler goes in when the logger is first
made (``ServerLogger``), so a server that logs nothing never loads logging.
Thread-safe: one lock guards the count and the handler.
"""

from __future__ import annotations

import sys
import threading

from ..runtime.logs import LazyLogger

TYPE_CHECKING = False  # typing and logging are not imported at run time: a tool server starts faster
if TYPE_CHECKING:
    import logging
    from typing import Optional

#: The logger of the whole serving side (the stdio loop and the WSGI app's shared parts).
LOGGER_NAME = "jsonrpc_threads.server"


class ServerLogger(LazyLogger):
    """The server's logger: when it first loads logging, the stderr handler of serve() goes in."""

    __slots__ = ()

    @property
    def logger(self) -> logging.Logger:
        first = not self.loaded
        real: logging.Logger = LazyLogger.logger.fget(self)  # type: ignore[attr-defined]
        if first:
            _stderr_logging_loaded()
        return real


logger = ServerLogger(LOGGER_NAME)

# _stderr_lock guards _stderr_users, _stderr_pending and _stderr_handler.
_stderr_lock = threading.RLock()
_stderr_users = 0
_stderr_pending = False  # serve() wants the handler, but logging was not loaded yet
_stderr_handler: Optional[logging.Handler] = None


def attach_stderr_logging() -> bool:
    """serve() begins: log to stderr while it runs, unless the process configured logging.

    Returns:
        True when counted (call ``detach_stderr_logging`` when the loop ends);
        False when logging is configured already and nothing was done.
    """
    global _stderr_users, _stderr_pending
    with _stderr_lock:
        if _stderr_users == 0:
            if "logging" in sys.modules:
                import logging  # noqa: PLC0415 - loaded already

                if logging.getLogger().handlers:
                    return False
                _install_stderr_handler_locked()
            else:
                _stderr_pending = True
        _stderr_users += 1
        return True


def _install_stderr_handler_locked() -> None:
    global _stderr_handler
    import logging  # noqa: PLC0415

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(name)s: %(levelname)s: %(message)s"))
    logging.getLogger(LOGGER_NAME).addHandler(handler)  # the Logger that ``logger`` stands for
    _stderr_handler = handler


def _stderr_logging_loaded() -> None:
    """The server's logger was just made: put in the handler serve() is waiting for."""
    global _stderr_pending
    with _stderr_lock:
        if not _stderr_pending:
            return
        _stderr_pending = False
        import logging  # noqa: PLC0415

        if _stderr_users and not logging.getLogger().handlers:
            _install_stderr_handler_locked()


def detach_stderr_logging() -> None:
    """serve() ends: the last loop to end takes the stderr handler out again."""
    global _stderr_users, _stderr_handler, _stderr_pending
    with _stderr_lock:
        _stderr_users -= 1
        if _stderr_users == 0:
            _stderr_pending = False
            if _stderr_handler is not None:
                import logging  # noqa: PLC0415 - loaded: the handler is one of its

                logging.getLogger(LOGGER_NAME).removeHandler(_stderr_handler)
                _stderr_handler = None


__all__ = ["LOGGER_NAME", "ServerLogger", "attach_stderr_logging", "detach_stderr_logging", "logger"]
