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
    jsonrpc-threads serve MODULE[:SERVER] [--http HOST:PORT]
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
``serve`` is the other side: it serves an ``McpServer`` of a module (a
dotted name, or a ``.py`` file; ``SERVER`` defaults to ``server``, or the
module's only one) over stdio until end of input, or with ``--http`` over
Streamable HTTP (loopback by default), printing ``http://HOST:PORT/mcp`` on
stdout once it listens, until Ctrl-C or SIGTERM (exit code 0).

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
      read or a position outside it; ``serve``: a ``MODULE:SERVER`` that
      names no module, fails to import, or holds no such ``McpServer``, or an
      address it cannot listen on
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

Layout: this module builds the parser and runs a command (``main``); each
command family has its module: ``mcp.py`` (``tools``, ``call``), ``rpc.py``,
``lsp.py``, ``serve.py``, and ``jsonrpc_threads.acp.cli`` and ``jsonrpc_threads.a2a.cli``
beside their protocols; what they share is in ``output.py`` (exit codes, the
one-line errors, JSON and tables), ``arguments.py`` (the parser's usage
errors, checked arguments) and ``progress.py`` (``ProgressDisplay``).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import IO, Callable, Optional, Sequence

from .._version import __version__
from ..a2a.cli import add_command as add_a2a_command
from ..a2a.cli import run as run_a2a
from ..acp.cli import add_command as add_acp_command
from ..acp.cli import run as run_acp
from ..errors import JsonRpcError
from .arguments import UsageParser, positive_seconds
from .lsp import DEFAULT_LSP_TIMEOUT_S, LSP_ANALYSIS_WAIT_S, LSP_POSITION_QUERIES, LSP_QUERIES, cmd_lsp
from .lsp import add_command as add_lsp_command
from .mcp import DESCRIPTION_CHARS, TOOLS_NAMED, cmd_call, cmd_tools
from .mcp import add_commands as add_mcp_commands
from .output import (
    EXIT_CODES,
    EXIT_ERROR_RESULT,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_TIMEOUT,
    EXIT_UNAVAILABLE,
    EXIT_UNKNOWN,
    EXIT_USAGE,
    PROG,
    CommandFailure,
    already_reported,
    exit_code_for,
    one_line,
    reporter,
)
from .progress import BAR_WIDTH, ELAPSED_AFTER_S, ELAPSED_STOP_S, ELAPSED_TICK_S, ProgressDisplay
from .rpc import DEFAULT_RPC_TIMEOUT_S, cmd_rpc
from .rpc import add_command as add_rpc_command
from .serve import add_command as add_serve_command
from .serve import cmd_serve

logger = logging.getLogger(__name__)


#: What ``--help`` shows first: one line for each thing the command line does.
EXAMPLES = """examples:
  jsonrpc-threads tools --config mcp.json                     every server's tools
  jsonrpc-threads call --config mcp.json weather forecast '{"city": "Paris"}'
  jsonrpc-threads rpc --stdio "python server.py" ping         one raw JSON-RPC request
  jsonrpc-threads rpc --url http://127.0.0.1:8000/mcp tools/list
  jsonrpc-threads lsp --stdio pylsp hover app.py:10:5          ask a language server
  jsonrpc-threads acp --stdio "my-agent --acp" "Fix the tests"  prompt a coding agent
  jsonrpc-threads a2a http://127.0.0.1:9999 "hello" --stream   message an A2A agent
  jsonrpc-threads serve my_tools:server --http 127.0.0.1:8000  serve an McpServer
  jsonrpc-threads -v COMMAND ...                              log what happens (-vv: debug)"""


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the command line."""
    common = UsageParser(add_help=False)
    common.add_argument(
        "--timeout",
        type=positive_seconds,
        metavar="SECONDS",
        help="how long the command's calls may take (start included)",
    )
    # -v goes before or after the command; here its default is left out, so that the
    # command's parser (which argparse runs second) does not reset a -v given before it.
    common.add_argument("-v", "--verbose", action="count", default=argparse.SUPPRESS, help="log to stderr (-vv: debug)")
    epilog = "exit codes: " + "; ".join(f"{code} {meaning}" for code, meaning in EXIT_CODES.items())
    parser = UsageParser(
        prog=PROG,
        description="Call MCP tools and JSON-RPC servers from the command line.",
        epilog=EXAMPLES + "\n\n" + epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="log to stderr (-vv: debug)")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=UsageParser)
    commands.required = True

    add_mcp_commands(commands, common, epilog)
    add_rpc_command(commands, common, epilog)
    add_lsp_command(commands, common, epilog)
    add_acp_command(commands, common, epilog)
    add_a2a_command(commands, common, epilog)
    add_serve_command(commands, common, epilog)
    return parser


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
            return run_acp(args, out, err, stdin, reporter(err))
        if args.command == "a2a":
            return run_a2a(args, out, err, stdin, reporter(err))
        if args.command == "serve":
            return cmd_serve(args, out, err)
        return cmd_rpc(args, out, err, stdin)
    except CommandFailure as exc:
        if not already_reported(exc):
            err.write(f"{PROG}: {exc.message}\n")
        return exc.code
    except JsonRpcError as exc:
        logger.debug("command failed", exc_info=True)
        if not already_reported(exc):
            err.write(f"{PROG}: {one_line(exc)}\n")
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


__all__ = [
    "BAR_WIDTH",
    "DEFAULT_LSP_TIMEOUT_S",
    "DEFAULT_RPC_TIMEOUT_S",
    "DESCRIPTION_CHARS",
    "ELAPSED_AFTER_S",
    "ELAPSED_STOP_S",
    "ELAPSED_TICK_S",
    "EXIT_CODES",
    "EXIT_ERROR_RESULT",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_TIMEOUT",
    "EXIT_UNAVAILABLE",
    "EXIT_UNKNOWN",
    "EXIT_USAGE",
    "LSP_ANALYSIS_WAIT_S",
    "LSP_POSITION_QUERIES",
    "LSP_QUERIES",
    "PROG",
    "TOOLS_NAMED",
    "ProgressDisplay",
    "build_parser",
    "cmd_call",
    "cmd_lsp",
    "cmd_rpc",
    "cmd_serve",
    "cmd_tools",
    "exit_code_for",
    "main",
]
