"""The command line: ``jsonrpc-threads`` (also ``python -m jsonrpc_threads``).

Commands::

    jsonrpc-threads tools --config mcp.json [--json]
    jsonrpc-threads call  --config mcp.json SERVER TOOL ['{"json": "arguments"}' | -] [--json] [--no-progress]
    jsonrpc-threads rpc   (--stdio "CMD ARGS" [--env NAME=VALUE] [--inherit-env] | --url URL [--header "Name: value"])
                          METHOD ['[params]' | -] [--notify]
    jsonrpc-threads lsp   --stdio "CMD ARGS" [--root DIR] [--env NAME=VALUE] [--inherit-env]
                          (definition | hover | references) FILE:LINE:COL | diagnostics FILE
    jsonrpc-threads acp   --stdio "CMD ARGS" [--cwd DIR] [--fs-root DIR [--fs-write]] [--terminal] [--allow]
                          (PROMPT | -)              (see jsonrpc_threads.acp.cli)
    jsonrpc-threads a2a   URL (MESSAGE | -) [--stream] [--task-id ID] [--header "Name: value"]
                                                    (see jsonrpc_threads.a2a.cli)
    jsonrpc-threads --version

Every command takes ``--timeout SECONDS`` and ``-v`` / ``-vv`` (log to
stderr).  The timeout is made once and spent by every step it covers:
``tools``, every server's start and listing, in all; ``call``, the whole call,
the wait for the server's start included; ``rpc``, the request; ``lsp``, the
whole query, from the handshake on; ``acp`` and ``a2a``, the whole command
(docs/timeouts.md has the table).
``tools`` prints every server's tools as a table (``--json``: the
registry's descriptors); a server that cannot start is reported on stderr and
the others are still listed.  ``call`` prints the tool's text result on stdout
(``--json``: the whole result) with a progress bar on stderr while the server
reports progress.  ``rpc`` sends one raw JSON-RPC request and prints its
result (or the error object) as JSON.  ``rpc --stdio`` starts the server as
``StdioTransport`` does: with an
allowlist of the environment (``PATH``, ``HOME``, ``LANG``, ...), plus each
``--env NAME=VALUE``; ``--inherit-env`` passes the whole environment instead.
``lsp`` starts a language server (framed with ``Content-Length``) on the
workspace ``--root`` (the working directory by default), opens ``FILE`` and
prints the answer as JSON: the server's ``definition``, ``hover`` or
``references`` result at ``LINE:COL`` (both from 1, ``COL`` counted in
characters, as editors and compilers show them), or the ``diagnostics`` it
publishes for ``FILE``; then shuts the server down.

On a terminal, a call that runs for more than ``ELAPSED_AFTER_S`` seconds
shows its elapsed time on stderr (and ``call`` a live progress bar while the
server reports progress); when stderr is not a terminal, only progress reports
are written, one line each.

Exit codes (``EXIT_CODES``):

====  =======================================================================
0     success
1     the tool returned ``isError: true``; ``rpc``, ``lsp``: the answer is an error
2     usage error: bad arguments, arguments that are not JSON, a ``--stdio``
      command line that cannot be split (an unbalanced quote), a ``--url``
      that is not an http(s) URL, a bad configuration file or server entry
      (a missing ``${VAR}``), a configuration with no server to start
      (``"mcpServers": {}``, or every entry disabled), a file that cannot be
      read or a position outside it
3     unknown server or tool
4     timeout (a request, or a server's start)
5     a server could not be started or reached, or stopped (crashed)
130   interrupted (Ctrl-C)
====  =======================================================================

Errors are one line on stderr, ``jsonrpc-threads: <what went wrong>``; no
traceback (``-vv`` logs them).  A server that stopped is reported with its exit
code and the last line it wrote on stderr; a timeout names the tool (``call``,
and ``rpc tools/call``) or the method; an unknown tool, the tools the server
has.  ``tools`` prints no table when no server gave any tool.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shlex
import sys
import threading
import time
from typing import IO, Any, Callable, Dict, List, NoReturn, Optional, Sequence, Tuple
from urllib.parse import urlsplit

from ._deadlines import DEFAULT_TIMEOUT, Deadline
from ._version import __version__
from .a2a.cli import add_command as add_a2a_command
from .a2a.cli import run as run_a2a
from .acp.cli import add_command as add_acp_command
from .acp.cli import run as run_acp
from .client import JsonRpcClient
from .errors import HttpError, JsonRpcError, RemoteError, RequestTimeout, TransportClosed
from .mcp.config import ConfigError, load_config
from .mcp.registry import (
    DEFAULT_CALL_TIMEOUT_S,
    DEFAULT_STARTUP_TIMEOUT_S,
    ServerUnavailable,
    ToolRegistry,
    UnknownServer,
    UnknownTool,
    result_text,
)
from .mcp.supervisor import describe_start_failure
from .transports.base import Transport
from .transports.stdio import StdioTransport

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

#: Default seconds for ``rpc`` requests.
DEFAULT_RPC_TIMEOUT_S = 30.0
#: Default seconds for the whole of ``lsp``: the handshake, the file's ``didOpen``, the query (or diagnostics).
DEFAULT_LSP_TIMEOUT_S = 30.0
#: The queries of ``lsp`` that take a FILE:LINE:COL, and the one that takes a FILE.
LSP_POSITION_QUERIES = ("definition", "hover", "references")
LSP_QUERIES = (*LSP_POSITION_QUERIES, "diagnostics")
#: Before a position query, how long ``lsp`` waits for the file's diagnostics: a
#: server answers from what it has analysed so far (pyright, asked at once, finds
#: no uses in files it has not read yet), and its diagnostics for the file say it
#: is done.  A server that publishes none costs this wait, then is asked anyway.
LSP_ANALYSIS_WAIT_S = 10.0
#: Characters of a description shown in the ``tools`` table.
DESCRIPTION_CHARS = 80
#: How many of a server's tools an "unknown tool" message names.
TOOLS_NAMED = 20
#: Width of the live progress bar.
BAR_WIDTH = 30
#: Seconds a call runs without progress before a terminal shows its elapsed time.
ELAPSED_AFTER_S = 1.0
#: Seconds between two redraws of the elapsed time.
ELAPSED_TICK_S = 1.0
#: How long finish() waits for the elapsed-time thread to stop.
ELAPSED_STOP_S = 2.0

logger = logging.getLogger(__name__)


class _Failure(Exception):
    """Ends the command with an exit code and a one-line message."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


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


def _one_line(error: BaseException) -> str:
    """One line for a failure; a stopped server's exit code and last stderr line included.

    A peer's error keeps its code (the server's own words); an error of this
    library says what went wrong without its internal code.
    """
    if isinstance(error, TransportClosed):
        return describe_start_failure(error)  # as the registry reports a server that stopped
    text = error.message if isinstance(error, JsonRpcError) and not isinstance(error, RemoteError) else str(error)
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[0] if lines else type(error).__name__


def _request_name(method: str, params: Any) -> str:
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


# -- argument parsing ---------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{PROG}: {message}\n")


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0 seconds: {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the command line."""
    common = _Parser(add_help=False)
    common.add_argument(
        "--timeout", type=_positive, metavar="SECONDS", help="how long the command's calls may take (start included)"
    )
    common.add_argument("-v", "--verbose", action="count", default=0, help="log to stderr (-vv: debug)")
    epilog = "exit codes: " + "; ".join(f"{code} {meaning}" for code, meaning in EXIT_CODES.items())
    parser = _Parser(
        prog=PROG,
        description="Call MCP tools and JSON-RPC servers from the command line.",
        epilog=epilog,
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    commands.required = True

    tools = commands.add_parser("tools", parents=[common], help="list every server's tools", epilog=epilog)
    tools.add_argument("--config", required=True, metavar="FILE", help="an mcpServers JSON file")
    tools.add_argument("--json", action="store_true", help="print the descriptors as JSON")

    call = commands.add_parser("call", parents=[common], help="call one tool", epilog=epilog)
    call.add_argument("--config", required=True, metavar="FILE", help="an mcpServers JSON file")
    call.add_argument("server", metavar="SERVER", help="the server's name in the configuration")
    call.add_argument("tool", metavar="TOOL", help="the tool's name as the server spells it")
    call.add_argument("arguments", metavar="JSON", nargs="?", help="the arguments: a JSON object, or - for stdin")
    call.add_argument("--json", action="store_true", help="print the whole result as JSON")
    call.add_argument("--no-progress", action="store_true", help="no progress display on stderr")

    rpc = commands.add_parser("rpc", parents=[common], help="send one raw JSON-RPC request", epilog=epilog)
    target = rpc.add_mutually_exclusive_group(required=True)
    target.add_argument("--stdio", metavar="COMMAND", help='the server\'s command line, e.g. "python server.py"')
    target.add_argument("--url", metavar="URL", help="an HTTP JSON-RPC (MCP Streamable HTTP) endpoint")
    rpc.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="--stdio: a variable for the server (repeatable); it gets only an allowlist of this environment "
        "(PATH, HOME, LANG, ...) and these",
    )
    rpc.add_argument(
        "--inherit-env", action="store_true", help="--stdio: pass the server this whole environment (and --env)"
    )
    rpc.add_argument(
        "--header", action="append", default=[], metavar="'NAME: VALUE'", help="an HTTP header (repeatable)"
    )
    rpc.add_argument("method", metavar="METHOD")
    rpc.add_argument("params", metavar="JSON", nargs="?", help="the params: a JSON object or array, or - for stdin")
    rpc.add_argument("--notify", action="store_true", help="send a notification (no answer is awaited)")

    lsp = commands.add_parser(
        "lsp", parents=[common], help="ask a language server about a file and print its answer", epilog=epilog
    )
    lsp.add_argument(
        "--stdio", required=True, metavar="COMMAND", help='the language server\'s command line, e.g. "pylsp"'
    )
    lsp.add_argument("--root", metavar="DIR", default=".", help="the workspace root (default: the working directory)")
    lsp.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a variable for the server (repeatable), beside the allowlist of this environment",
    )
    lsp.add_argument("--inherit-env", action="store_true", help="pass the server this whole environment (and --env)")
    lsp.add_argument("query", choices=LSP_QUERIES, metavar="QUERY", help=f"one of: {', '.join(LSP_QUERIES)}")
    lsp.add_argument(
        "location", metavar="FILE[:LINE:COL]", help="FILE:LINE:COL (from 1) for a position query, FILE for diagnostics"
    )
    add_acp_command(commands, common, epilog)
    add_a2a_command(commands, common, epilog)
    return parser


def _read_json(text: Optional[str], what: str, stdin: IO[str]) -> Any:
    if text is None:
        return None
    if text == "-":
        text = stdin.read()
    try:
        return json.loads(text)
    except ValueError as exc:
        raise _Failure(EXIT_USAGE, f"{what} are not valid JSON: {exc}") from None


# -- progress -----------------------------------------------------------------------


class ProgressDisplay:
    """Shows progress notifications on a stream: a live bar on a terminal, else one line each.

    On a terminal (``live``), ``start`` also starts a thread that shows the
    elapsed time once the call has run ``ELAPSED_AFTER_S`` seconds
    (``waiting for <what>... 3s``, or after the bar once progress arrived);
    ``finish`` stops it and clears the line.  Nothing but progress lines is
    written to a stream that is not a terminal.

    Thread-safe (progress callbacks run on worker threads).
    """

    def __init__(self, stream: IO[str], *, live: Optional[bool] = None, what: str = "the answer") -> None:
        self._stream = stream
        if live is None:
            isatty = getattr(stream, "isatty", None)
            live = bool(isatty()) if callable(isatty) else False
        self._live = live
        self._what = what
        self._lock = threading.Lock()  # guards _shown, _line, _started and writes to the stream
        self._shown = 0  # characters of the live line now on screen
        self._line = ""  # the last progress line drawn (without the elapsed time)
        self._started: Optional[float] = None  # time.monotonic() of start()
        self._stop = threading.Event()
        self._ticker: Optional[threading.Thread] = None

    def start(self) -> None:
        """Start timing the call; on a terminal, show its elapsed time while it runs long."""
        with self._lock:
            self._started = time.monotonic()
        if self._live and self._ticker is None:
            self._ticker = threading.Thread(target=self._tick, name="jsonrpc-threads-cli-elapsed", daemon=True)
            self._ticker.start()

    def _tick(self) -> None:
        while not self._stop.wait(ELAPSED_TICK_S):
            with self._lock:
                if self._started is None:
                    continue
                elapsed = time.monotonic() - self._started
                if elapsed < ELAPSED_AFTER_S:
                    continue
                base = self._line or f"waiting for {self._what}..."
                self._draw(f"{base} {elapsed:.0f}s")

    def _draw(self, line: str) -> None:
        # Called with _lock held.
        padding = " " * max(0, self._shown - len(line))
        self._stream.write(f"\r{line}{padding}")
        self._stream.flush()
        self._shown = len(line)

    def update(self, params: Dict[str, Any]) -> None:
        """Show one ``notifications/progress`` (``progress``, ``total``, ``message``)."""
        progress = params.get("progress")
        total = params.get("total")
        message = params.get("message")
        if not isinstance(progress, (int, float)):
            return
        counts = f"{_number(progress)}/{_number(total)}" if isinstance(total, (int, float)) else f"{_number(progress)}"
        suffix = f" {message}" if isinstance(message, str) and message else ""
        with self._lock:
            if not self._live:
                self._stream.write(f"progress: {counts}{suffix}\n")
                self._stream.flush()
                return
            if isinstance(total, (int, float)) and total > 0:
                fraction = min(max(progress / total, 0.0), 1.0)
                filled = round(fraction * BAR_WIDTH)
                line = f"[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {counts} {fraction:4.0%}{suffix}"
            else:
                line = f"[{'?' * BAR_WIDTH}] {counts}{suffix}"
            self._line = line
            self._draw(line)

    def finish(self) -> None:
        """Stop the elapsed time and clear the live line (nothing to do for line output)."""
        self._stop.set()
        ticker, self._ticker = self._ticker, None
        if ticker is not None:
            ticker.join(ELAPSED_STOP_S)
        with self._lock:
            if self._live and self._shown:
                self._stream.write("\r" + " " * self._shown + "\r")
                self._stream.flush()
                self._shown = 0


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


# -- commands -----------------------------------------------------------------------


def _registry(args: argparse.Namespace) -> ToolRegistry:
    config = load_config(args.config)
    if not config.servers and not config.errors:
        raise _Failure(EXIT_USAGE, f"{args.config} configures no server to start")
    timeout: Optional[float] = args.timeout
    return ToolRegistry(
        config,
        default_timeout=timeout if timeout is not None else DEFAULT_CALL_TIMEOUT_S,
        startup_timeout=timeout if timeout is not None else DEFAULT_STARTUP_TIMEOUT_S,
        retry_failed_after=None,
    )


def cmd_tools(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    """``tools``: every server's tools; failures on stderr, the rest still listed."""
    with _registry(args) as registry:
        names = ", ".join(repr(name) for name in registry.servers)
        display = ProgressDisplay(err, what=f"server{'s' if len(registry.servers) > 1 else ''} {names} to start")
        display.start()  # on a terminal: the servers' names and the time they take, while they start
        try:
            tools = registry.tools()
        finally:
            display.finish()
        # A start that ran out of time with the command may not have failed yet: still starting is not up.
        states = {name: status["state"] for name, status in registry.status().items()}
        failures = registry.failures
        late = [name for name, state in states.items() if state in ("starting", "restarting") and name not in failures]
    if args.json:
        _write_json(out, tools)
    elif tools:  # no header over an empty table: the failures on stderr say why
        rows = [("SERVER", "TOOL", "NAME", "DESCRIPTION")]
        for tool in tools:
            description = (tool["description"].strip().splitlines() or [""])[0]
            if len(description) > DESCRIPTION_CHARS:
                description = description[: DESCRIPTION_CHARS - 3] + "..."
            rows.append((tool["server"], tool["tool"], tool["name"], description))
        _write_table(rows, out)
    for failure in failures.values():
        err.write(f"{PROG}: {_one_line(failure)}\n")
    for name in late:
        err.write(f"{PROG}: server {name!r} was not up within {registry.startup_timeout}s\n")
    for failure in failures.values():
        return exit_code_for(failure)
    return EXIT_TIMEOUT if late else EXIT_OK


def _write_table(rows: Sequence[Tuple[str, ...]], out: IO[str]) -> None:
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row[:-1], widths[:-1])]
        out.write("  ".join([*cells, row[-1]]).rstrip() + "\n")


def cmd_call(args: argparse.Namespace, out: IO[str], err: IO[str], stdin: IO[str]) -> int:
    """``call``: one tool call; the text result on stdout, progress on stderr."""
    arguments = _read_json(args.arguments, "the arguments", stdin)
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise _Failure(EXIT_USAGE, f"the arguments must be a JSON object, not {type(arguments).__name__}")
    what = f"tool {args.tool!r} on server {args.server!r}"
    display = None if args.no_progress else ProgressDisplay(err, what=what)
    with _registry(args) as registry:
        if display is not None:
            display.start()
        try:
            result = registry.call_tool(
                args.server,
                args.tool,
                arguments,
                timeout=args.timeout if args.timeout is not None else DEFAULT_TIMEOUT,  # it bounds the whole call
                on_progress=display.update if display is not None else None,
            )
        except RequestTimeout as exc:
            raise _Failure(EXIT_TIMEOUT, f"{what} did not finish within {exc.timeout}s") from None
        except TransportClosed as exc:
            raise _Failure(
                EXIT_UNAVAILABLE, f"server {args.server!r} stopped during the call: {_one_line(exc)}"
            ) from None
        except UnknownTool as exc:
            raise _Failure(EXIT_UNKNOWN, exc.message + _tools_of(registry, args.server)) from None
        finally:
            if display is not None:
                display.finish()
    if args.json:
        _write_json(out, result)
    else:
        text = result_text(result)
        out.write(text + ("\n" if text and not text.endswith("\n") else ""))
    if result.get("isError") is True:
        err.write(f"{PROG}: {what} reported an error\n")
        return EXIT_ERROR_RESULT
    return EXIT_OK


def _tools_of(registry: ToolRegistry, server: str) -> str:
    """`` (its tools: a, b, ...)`` for an unknown tool's message; empty when they cannot be listed."""
    try:
        names = [tool["name"] for tool in registry.session(server).list_tools()]
    except JsonRpcError as exc:
        logger.debug("could not list the tools of %s: %s", server, exc)
        return ""
    if not names:
        return " (it has no tools)"
    shown = ", ".join(names[:TOOLS_NAMED])
    more = f", ... {len(names)} in all" if len(names) > TOOLS_NAMED else ""
    return f" (its tools: {shown}{more})"


def _command(text: str) -> List[str]:
    """The argv of a ``--stdio`` command line (POSIX shell quoting, never run through a shell)."""
    try:
        argv = shlex.split(text)
    except ValueError as exc:
        raise _Failure(EXIT_USAGE, f"--stdio {text!r} is not a command line: {str(exc).lower()}") from None
    if not argv:
        raise _Failure(EXIT_USAGE, "--stdio needs a command")
    return argv


def _url(text: str) -> str:
    """A ``--url`` checked as typed: an http(s) URL that names a host."""
    url = text.strip()
    if not url:
        raise _Failure(EXIT_USAGE, "--url is empty: give an http:// or https:// URL")
    scheme, sep, _ = url.partition("://")
    if not sep:
        raise _Failure(EXIT_USAGE, f"--url {text!r} has no scheme: did you mean 'http://{url}'?")
    if scheme.lower() not in ("http", "https"):
        raise _Failure(EXIT_USAGE, f"--url {text!r} is not an http:// or https:// URL")
    try:
        host = urlsplit(url).hostname
    except ValueError as exc:
        raise _Failure(EXIT_USAGE, f"--url {text!r} is not a valid URL: {exc}") from None
    if not host:
        raise _Failure(EXIT_USAGE, f"--url {text!r} names no host")
    return url


def _headers(values: Sequence[str]) -> Dict[str, str]:
    headers: Dict[str, str] = {}
    for value in values:
        name, sep, content = value.partition(":")
        if not sep or not name.strip():
            raise _Failure(EXIT_USAGE, f"a header is 'Name: value', not {value!r}")
        headers[name.strip()] = content.strip()
    return headers


def _environment(values: Sequence[str]) -> Dict[str, str]:
    env: Dict[str, str] = {}
    for value in values:
        name, sep, content = value.partition("=")
        if not sep or not name or any(c.isspace() for c in name):
            raise _Failure(EXIT_USAGE, f"an environment variable is NAME=VALUE, not {value!r}")
        env[name] = content
    return env


def _transport(args: argparse.Namespace) -> Transport:
    if args.stdio is not None:
        command = _command(args.stdio)
        if args.header:
            raise _Failure(EXIT_USAGE, "--header goes with --url")
        return StdioTransport(command, env=_environment(args.env), inherit_env=args.inherit_env)
    if args.env or args.inherit_env:
        raise _Failure(EXIT_USAGE, "--env and --inherit-env go with --stdio")
    url = _url(args.url)
    from .transports.http import HttpTransport  # noqa: PLC0415  (only --url pays for the HTTP stack)

    try:
        return HttpTransport(url, headers=_headers(args.header))
    except ValueError as exc:
        raise _Failure(EXIT_USAGE, f"--url {args.url!r}: {exc}") from None


def cmd_rpc(args: argparse.Namespace, out: IO[str], err: IO[str], stdin: IO[str]) -> int:
    """``rpc``: one raw request; its result (or error object) as JSON on stdout."""
    params = _read_json(args.params, "the params", stdin)
    if params is not None and not isinstance(params, (dict, list)):
        raise _Failure(EXIT_USAGE, f"the params must be a JSON object or array, not {type(params).__name__}")
    transport = _transport(args)
    timeout = args.timeout if args.timeout is not None else DEFAULT_RPC_TIMEOUT_S
    what = _request_name(args.method, params)
    with JsonRpcClient(transport, default_timeout=timeout) as client:
        if args.notify:
            client.notify(args.method, params)
            return EXIT_OK
        display = ProgressDisplay(err, what=f"the answer to {what}")
        display.start()
        try:
            result = client.call(args.method, params)
        except RequestTimeout as exc:
            raise _Failure(EXIT_TIMEOUT, f"no answer to {what} within {exc.timeout}s") from None
        except (TransportClosed, HttpError):
            raise
        except JsonRpcError as exc:
            _write_json(out, exc.to_error_object())
            return EXIT_ERROR_RESULT
        finally:
            display.finish()
    _write_json(out, result)
    return EXIT_OK


def _location(query: str, text: str) -> Tuple[str, Optional[Tuple[int, int]]]:
    """FILE, and for a position query (LINE, COL) from 1, out of ``FILE[:LINE:COL]``."""
    if query not in LSP_POSITION_QUERIES:
        return text, None
    path, sep, rest = text.rpartition(":")
    path, sep2, line = path.rpartition(":")
    if not sep or not sep2 or not path or not line.isdigit() or not rest.isdigit() or "0" in (line, rest):
        raise _Failure(EXIT_USAGE, f"{query} needs FILE:LINE:COL (LINE and COL from 1), not {text!r}")
    return path, (int(line), int(rest))


def cmd_lsp(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    """``lsp``: one query to a language server; its answer as JSON on stdout."""
    from .lsp import LspClient, offset_from_position  # noqa: PLC0415  (only lsp pays for it)

    command = _command(args.stdio)
    path, position = _location(args.query, args.location)
    try:
        with open(path, encoding="utf-8") as file:
            text = file.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise _Failure(EXIT_USAGE, f"cannot read {path}: {exc}") from None
    offset = 0
    if position is not None:
        line, column = position
        lines = text.splitlines() or [""]
        if line > len(lines):
            raise _Failure(EXIT_USAGE, f"{path} has {len(lines)} lines, not {line}")
        offset = offset_from_position(text, line - 1, column - 1, "utf-32")
    if not os.path.isdir(args.root):
        raise _Failure(EXIT_USAGE, f"--root is not a directory: {args.root}")
    timeout = args.timeout if args.timeout is not None else DEFAULT_LSP_TIMEOUT_S
    deadline = Deadline.after(timeout)  # one deadline for the whole query: every step spends what is left
    what = f"{args.query} of {args.location}"
    env = _environment(args.env)
    lsp = LspClient(command, root_uri=args.root, default_timeout=timeout, env=env, inherit_env=args.inherit_env)
    display = ProgressDisplay(err, what=f"the {what}")
    display.start()
    try:
        lsp.initialize(timeout=deadline.remaining())
        uri = lsp.open(path, text, timeout=deadline.remaining())
        if args.query == "diagnostics":
            result: Any = lsp.diagnostics(uri, timeout=deadline.remaining())
        else:
            left = deadline.remaining()
            try:
                lsp.diagnostics(uri, timeout=LSP_ANALYSIS_WAIT_S if left is None else min(left, LSP_ANALYSIS_WAIT_S))
            except RequestTimeout:
                if deadline.expired:
                    raise
                logger.info("no diagnostics for %s within %ss: asking anyway", path, LSP_ANALYSIS_WAIT_S)
            line, character = lsp.position_at(uri, offset)
            ask = {"definition": lsp.definition, "hover": lsp.hover, "references": lsp.references}[args.query]
            result = ask(uri, line, character, timeout=deadline.remaining())
    except RequestTimeout:
        raise _Failure(EXIT_TIMEOUT, f"no {what} within {timeout}s") from None
    except (TransportClosed, HttpError):
        raise
    except JsonRpcError as exc:
        _write_json(out, exc.to_error_object())
        return EXIT_ERROR_RESULT
    finally:
        display.finish()
        lsp.close()
    _write_json(out, result)
    return EXIT_OK


def _write_json(out: IO[str], value: Any) -> None:
    """Write ``value`` as indented JSON, non-ASCII kept, and a newline."""
    out.write(json.dumps(value, indent=2, ensure_ascii=False) + "\n")


# -- main ---------------------------------------------------------------------------


def _configure_logging(verbosity: int, err: IO[str]) -> Callable[[], None]:
    level = logging.ERROR if verbosity <= 0 else logging.INFO if verbosity == 1 else logging.DEBUG
    handler = logging.StreamHandler(err)
    handler.setFormatter(logging.Formatter(f"{PROG}: %(levelname)s %(name)s: %(message)s"))
    handler.setLevel(level)
    package = logging.getLogger("jsonrpc_threads")
    saved = package.level
    package.addHandler(handler)
    package.setLevel(level)

    def restore() -> None:
        package.removeHandler(handler)
        package.setLevel(saved)

    return restore


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command line; returns the exit code (see ``EXIT_CODES``)."""
    out, err, stdin = sys.stdout, sys.stderr, sys.stdin
    args = build_parser().parse_args(list(argv) if argv is not None else None)
    restore = _configure_logging(args.verbose, err)
    try:
        if args.command == "tools":
            return cmd_tools(args, out, err)
        if args.command == "call":
            return cmd_call(args, out, err, stdin)
        if args.command == "lsp":
            return cmd_lsp(args, out, err)
        if args.command == "acp":
            return run_acp(args, out, err, stdin)
        if args.command == "a2a":
            return run_a2a(args, out, err, stdin)
        return cmd_rpc(args, out, err, stdin)
    except _Failure as exc:
        err.write(f"{PROG}: {exc.message}\n")
        return exc.code
    except JsonRpcError as exc:
        logger.debug("command failed", exc_info=True)
        err.write(f"{PROG}: {_one_line(exc)}\n")
        return exit_code_for(exc)
    except KeyboardInterrupt:
        err.write(f"{PROG}: interrupted\n")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # stdout went away (``| head``): say nothing more, and keep Python from
        # complaining about the flush at exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return EXIT_OK
    finally:
        restore()


__all__ = ["EXIT_CODES", "ProgressDisplay", "build_parser", "exit_code_for", "main"]
