"""What every command shares on its way out: the exit codes, the one-line errors, JSON and tables.

Theory of operation: a command returns an exit code or raises.  It raises
``CommandFailure`` (an exit code and a one-line message) for what it finds
wrong itself (usage, a timeout it names), or lets an exception of the package
through: ``main`` writes ``jsonrpc-threads: <what went wrong>`` on stderr
(``one_line``) and exits with ``exit_code_for`` that exception.  Results go to
stdout as indented JSON (``write_json``) or as a plain table
(``write_table``).  Every code is in ``EXIT_CODES``.
"""

from __future__ import annotations

import json
import threading
from typing import IO, Any, Callable, Dict, Optional, Sequence, Set, Tuple

from ..errors import HttpError, JsonRpcError, RemoteError, RequestTimeout, TransportClosed
from ..mcp.config import ConfigError
from ..mcp.registry import ServerUnavailable, UnknownServer, UnknownTool
from ..mcp.supervisor import describe_start_failure
from ..runtime.closing import ReportThenClose

#: The name of the command, in usage lines and before every error.
PROG = "jsonrpc-threads"

EXIT_OK = 0
EXIT_ERROR_RESULT = 1
EXIT_USAGE = 2
EXIT_UNKNOWN = 3
EXIT_TIMEOUT = 4
EXIT_UNAVAILABLE = 5
EXIT_INTERRUPTED = 130

#: Every exit code and what it means.
EXIT_CODES: Dict[int, str] = {
    EXIT_OK: "success",
    EXIT_ERROR_RESULT: "the tool returned isError / the JSON-RPC answer is an error",
    EXIT_USAGE: "usage error, arguments that are not JSON, or a bad configuration",
    EXIT_UNKNOWN: "unknown server or tool",
    EXIT_TIMEOUT: "timeout",
    EXIT_UNAVAILABLE: "a server could not be started or reached, or stopped",
    EXIT_INTERRUPTED: "interrupted",
}


class CommandFailure(Exception):
    """Ends the command with an exit code and a one-line message (``main`` writes it on stderr).

    Args:
        code: the exit code, one of ``EXIT_CODES``.
        message: what went wrong, one line, without the ``jsonrpc-threads:`` prefix.
    """

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


#: The ids of the errors ``reporter`` wrote already (a command line's few: never cleared).
_reported: Set[int] = set()
#: Closing a client whose error was already shown: after this long, a line says it is still stopping.
SLOW_CLOSE_NOTICE_S = 3.0


def error_line(error: BaseException) -> Optional[str]:
    """The one line ``main`` writes for a failure (without the prefix); ``None`` for what it does not report."""
    if isinstance(error, CommandFailure):
        return error.message
    if isinstance(error, JsonRpcError):
        return one_line(error)
    return None


#: The line written when stopping the server outlasts ``SLOW_CLOSE_NOTICE_S`` after an error.
STILL_STOPPING = "stopping the server (it has not exited yet)..."


def already_reported(error: BaseException) -> bool:
    """True when ``report_first`` wrote this failure already (``main`` then writes nothing more)."""
    return id(error) in _reported


def reporter(err: IO[str]) -> Callable[[BaseException], Optional[Callable[[], None]]]:
    """What ``jsonrpc_threads.runtime.closing.ReportThenClose`` calls for a command's error: its line goes
    to ``err`` now (``main`` writes nothing more for it), and, when stopping the server then takes
    more than ``SLOW_CLOSE_NOTICE_S``, a line says so."""

    def report(error: BaseException) -> Optional[Callable[[], None]]:
        line = error_line(error)
        if line is None:
            return None
        err.write(f"{PROG}: {line}\n")
        err.flush()
        _reported.add(id(error))  # the error is alive until main() sees it: its id stays its own

        def still_stopping() -> None:
            err.write(f"{PROG}: {STILL_STOPPING}\n")
            err.flush()

        notice = threading.Timer(SLOW_CLOSE_NOTICE_S, still_stopping)
        notice.daemon = True
        notice.start()
        return notice.cancel

    return report


def report_first(client: Any, err: IO[str], *, enter: bool = True) -> ReportThenClose:
    """``with report_first(client, err) as c:``: an error leaving the block shows before ``client`` closes."""
    return ReportThenClose(client, reporter(err), enter=enter)


def exit_code_for(error: BaseException) -> int:
    """The exit code that goes with an exception of this package."""
    if isinstance(error, ConfigError):
        return EXIT_USAGE
    if isinstance(error, (UnknownServer, UnknownTool)):
        return EXIT_UNKNOWN
    if isinstance(error, RequestTimeout) or (isinstance(error, ServerUnavailable) and error.timed_out):
        return EXIT_TIMEOUT
    if isinstance(error, (ServerUnavailable, TransportClosed, HttpError, ConnectionError)):
        return EXIT_UNAVAILABLE
    return EXIT_ERROR_RESULT


def one_line(error: BaseException) -> str:
    """One line for a failure; a stopped server's exit code and last stderr line included.

    A peer's error keeps its code (the server's own words); an error of this
    library says what went wrong without its internal code.
    """
    if isinstance(error, TransportClosed):
        return describe_start_failure(error)  # as the registry reports a server that stopped
    if isinstance(error, RequestTimeout) and error.method:
        # The user's words: which call, within the timeout they gave; no request id, and of
        # the transport's hints only what the server said on stderr (a guess about framing
        # misleads on a command that chose its framing).
        line = f"no answer to {error.method!r} within {error.timeout}s"
        said = [part for part in (error.hint or "").split("; ") if part.startswith("its stderr ends with")]
        return f"{line}; the server's {said[0][4:]}" if said else line
    text = error.message if isinstance(error, JsonRpcError) and not isinstance(error, RemoteError) else str(error)
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[0] if lines else type(error).__name__


def request_name(method: str, params: Any) -> str:
    """What a request is, for a message: the tool (prompt, resource) it names, else its method."""
    if isinstance(params, dict):
        for prefix, key, what in (
            ("tools/", "name", "tool"),
            ("prompts/", "name", "prompt"),
            ("resources/", "uri", "resource"),
        ):
            value = params.get(key)
            if method.startswith(prefix) and isinstance(value, str):
                return f"{method!r} for {what} {value!r}"
    return repr(method)


def write_json(out: IO[str], value: Any) -> None:
    """Write ``value`` as indented JSON, non-ASCII kept, and a newline."""
    out.write(json.dumps(value, indent=2, ensure_ascii=False) + "\n")


def write_table(rows: Sequence[Tuple[str, ...]], out: IO[str]) -> None:
    """Write rows as columns two spaces apart; the last column is not padded."""
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row[:-1], widths[:-1])]
        out.write("  ".join([*cells, row[-1]]).rstrip() + "\n")


__all__ = [
    "EXIT_CODES",
    "EXIT_ERROR_RESULT",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_TIMEOUT",
    "EXIT_UNAVAILABLE",
    "EXIT_UNKNOWN",
    "EXIT_USAGE",
    "PROG",
    "SLOW_CLOSE_NOTICE_S",
    "STILL_STOPPING",
    "CommandFailure",
    "already_reported",
    "error_line",
    "exit_code_for",
    "one_line",
    "report_first",
    "reporter",
    "request_name",
    "write_json",
    "write_table",
]
