"""``lsp``: one question to a language server about a file, and its answer as JSON.

Theory of operation: the server is started on the workspace ``--root`` (with
``Content-Length`` framing, the environment as ``rpc --stdio`` gives it), the
file is opened, and one deadline made of ``--timeout`` covers the whole query:
the handshake, the ``didOpen``, a wait for the file's diagnostics before a
position query (a server answers from what it has analysed so far; its
diagnostics for the file say it is done; ``LSP_ANALYSIS_WAIT_S`` at most), and
the query itself.  ``LINE:COL`` count from 1, ``COL`` in characters, as editors
and compilers show them.  The server is shut down before the command returns.
"""

from __future__ import annotations

import argparse
import logging
import os
from typing import IO, Any, Optional, Tuple

from ..deadlines.timeouts import Deadline
from ..errors import HttpError, JsonRpcError, RequestTimeout, TransportClosed
from .arguments import command_argv, environment
from .output import EXIT_ERROR_RESULT, EXIT_OK, EXIT_TIMEOUT, EXIT_USAGE, CommandFailure, report_first, write_json
from .progress import ProgressDisplay

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

logger = logging.getLogger(__name__)


def add_command(commands: Any, common: argparse.ArgumentParser, epilog: str) -> None:
    """Add ``lsp`` to the command line's subparsers."""
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


def _location(query: str, text: str) -> Tuple[str, Optional[Tuple[int, int]]]:
    """FILE, and for a position query (LINE, COL) from 1, out of ``FILE[:LINE:COL]``."""
    if query not in LSP_POSITION_QUERIES:
        return text, None
    path, sep, rest = text.rpartition(":")
    path, sep2, line = path.rpartition(":")
    if not sep or not sep2 or not path or not line.isdigit() or not rest.isdigit() or "0" in (line, rest):
        raise CommandFailure(EXIT_USAGE, f"{query} needs FILE:LINE:COL (LINE and COL from 1), not {text!r}")
    return path, (int(line), int(rest))


def cmd_lsp(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    """``lsp``: one query to a language server; its answer as JSON on stdout."""
    from ..lsp import LspClient, offset_from_position  # noqa: PLC0415  (only lsp pays for it)

    command = command_argv(args.stdio)
    path, position = _location(args.query, args.location)
    try:
        with open(path, encoding="utf-8") as file:
            text = file.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise CommandFailure(EXIT_USAGE, f"cannot read {path}: {exc}") from None
    offset = 0
    if position is not None:
        line, column = position
        lines = text.splitlines() or [""]
        if line > len(lines):
            raise CommandFailure(EXIT_USAGE, f"{path} has {len(lines)} lines, not {line}")
        offset = offset_from_position(text, line - 1, column - 1, "utf-32")
    if not os.path.isdir(args.root):
        raise CommandFailure(EXIT_USAGE, f"--root is not a directory: {args.root}")
    timeout = args.timeout if args.timeout is not None else DEFAULT_LSP_TIMEOUT_S
    deadline = Deadline.after(timeout)  # one deadline for the whole query: every step spends what is left
    what = f"{args.query} of {args.location}"
    env = environment(args.env)
    lsp = LspClient(command, root_uri=args.root, default_timeout=timeout, env=env, inherit_env=args.inherit_env)
    display = ProgressDisplay(err, what=f"the {what}")
    display.start()
    with report_first(lsp, err, enter=False):  # an error shows at once; the server stops after
        try:
            lsp.initialize(timeout=deadline.remaining())
            uri = lsp.open(path, text, timeout=deadline.remaining())
            if args.query == "diagnostics":
                result: Any = lsp.diagnostics(uri, timeout=deadline.remaining())
            else:
                left = deadline.remaining()
                try:
                    lsp.diagnostics(
                        uri, timeout=LSP_ANALYSIS_WAIT_S if left is None else min(left, LSP_ANALYSIS_WAIT_S)
                    )
                except RequestTimeout:
                    if deadline.expired:
                        raise
                    logger.info("no diagnostics for %s within %ss: asking anyway", path, LSP_ANALYSIS_WAIT_S)
                line, character = lsp.position_at(uri, offset)
                ask = {"definition": lsp.definition, "hover": lsp.hover, "references": lsp.references}[args.query]
                result = ask(uri, line, character, timeout=deadline.remaining())
        except RequestTimeout:
            if not lsp.initialize_result:  # it never got past the handshake: say so, not "no hover"
                raise CommandFailure(EXIT_TIMEOUT, f"the server did not answer initialize within {timeout}s") from None
            raise CommandFailure(EXIT_TIMEOUT, f"no {what} within {timeout}s") from None
        except (TransportClosed, HttpError):
            raise
        except JsonRpcError as exc:
            write_json(out, exc.to_error_object())
            return EXIT_ERROR_RESULT
        finally:
            display.finish()
    write_json(out, result)
    return EXIT_OK


__all__ = [
    "DEFAULT_LSP_TIMEOUT_S",
    "LSP_ANALYSIS_WAIT_S",
    "LSP_POSITION_QUERIES",
    "LSP_QUERIES",
    "add_command",
    "cmd_lsp",
]
