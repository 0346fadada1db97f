"""Loggers that cost nothing until something is logged.

Importing ``logging`` takes longer than the rest of a tool server's start-up
(it pulls in ``re``, ``traceback``, ``string`` and more), and a process that
never imported it cannot have configured a handler or a level: a record of
ours would only reach the package's ``NullHandler``.  So each module of the
library takes a ``LazyLogger``, which imports ``logging`` the first
time it is asked to log while ``logging`` is loaded, or as soon as it is
asked to log at WARNING or above.  Once loaded, it hands every call to the
real ``logging.Logger`` of the same name; the package logger gets its
``NullHandler`` then, as ``import logging`` at the top of the package would.

Thread-safe, as ``logging`` is.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    import logging
    from typing import Any, Optional

#: The levels of ``logging``, without importing it.
DEBUG = 10
INFO = 20
WARNING = 30
ERROR = 40
CRITICAL = 50

_PACKAGE = "jsonrpc_threads"
_modules = sys.modules


def _real_logger(name: str) -> logging.Logger:
    import logging  # noqa: PLC0415 - the point of this module

    package = logging.getLogger(_PACKAGE)
    if not any(isinstance(handler, logging.NullHandler) for handler in package.handlers):
        package.addHandler(logging.NullHandler())
    return logging.getLogger(name)


class LazyLogger:
    """A stand-in for ``logging.getLogger(name)``; see the module docstring."""

    __slots__ = ("_logger", "name")

    def __init__(self, name: str) -> None:
        self.name = name
        self._logger: Optional[logging.Logger] = None

    @property
    def loaded(self) -> bool:
        """Whether the real logger was made already (``logger`` was asked for)."""
        return self._logger is not None

    @property
    def logger(self) -> logging.Logger:
        """The real ``logging.Logger`` (imports ``logging``)."""
        logger = self._logger
        if logger is None:
            logger = self._logger = _real_logger(self.name)
        return logger

    def _quiet(self, level: int) -> bool:
        """True when nothing could come of a record at ``level``: logging was never imported."""
        return self._logger is None and level < WARNING and "logging" not in _modules

    def isEnabledFor(self, level: int) -> bool:
        if self._quiet(level):
            return False
        return bool(self.logger.isEnabledFor(level))

    def log(self, level: int, msg: object, *args: object, **kwargs: Any) -> None:
        if not self._quiet(level):
            self.logger.log(level, msg, *args, **kwargs)

    def debug(self, msg: object, *args: object, **kwargs: Any) -> None:
        if not self._quiet(DEBUG):
            self.logger.debug(msg, *args, **kwargs)

    def info(self, msg: object, *args: object, **kwargs: Any) -> None:
        if not self._quiet(INFO):
            self.logger.info(msg, *args, **kwargs)

    def warning(self, msg: object, *args: object, **kwargs: Any) -> None:
        self.logger.warning(msg, *args, **kwargs)

    def error(self, msg: object, *args: object, **kwargs: Any) -> None:
        self.logger.error(msg, *args, **kwargs)

    def exception(self, msg: object, *args: object, **kwargs: Any) -> None:
        self.logger.exception(msg, *args, **kwargs)

    def critical(self, msg: object, *args: object, **kwargs: Any) -> None:
        self.logger.critical(msg, *args, **kwargs)


def get_logger(name: str) -> LazyLogger:
    """The lazy logger of module ``name`` (use ``__name__``)."""
    return LazyLogger(name)


__all__ = ["CRITICAL", "DEBUG", "ERROR", "INFO", "WARNING", "LazyLogger", "get_logger"]
