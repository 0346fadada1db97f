"""``tools`` and ``call``: the MCP servers of an ``mcpServers`` file, through one ``ToolRegistry``.

Theory of operation: both commands load the configuration and start its
servers through a ``ToolRegistry`` whose timeouts are the command's
``--timeout``, made once: ``tools`` lists every server's tools (a server that
cannot start, or is not up in time, is reported on stderr and the others are
still listed); ``call`` makes one tool call under one deadline that covers the
server's start too, with a ``ProgressDisplay`` on stderr while it runs.  The
registry is closed (every server it started reclaimed) before the command
returns, whatever happened.
"""

from __future__ import annotations

import argparse
import logging
from typing import IO, Any, Optional

from ..deadlines.timeouts import DEFAULT_TIMEOUT
from ..errors import JsonRpcError, RequestTimeout, TransportClosed
from ..mcp.config import load_config
from ..mcp.registry import DEFAULT_CALL_TIMEOUT_S, DEFAULT_STARTUP_TIMEOUT_S, ToolRegistry, UnknownTool, result_text
from .arguments import read_json
from .output import (
    EXIT_ERROR_RESULT,
    EXIT_OK,
    EXIT_TIMEOUT,
    EXIT_UNAVAILABLE,
    EXIT_UNKNOWN,
    EXIT_USAGE,
    PROG,
    CommandFailure,
    exit_code_for,
    one_line,
    report_first,
    write_json,
    write_table,
)
from .progress import ProgressDisplay

#: Characters of a description shown in the ``tools`` table.
DESCRIPTION_CHARS = 80
#: How many of a server's tools an "unknown tool" message names.
TOOLS_NAMED = 20

logger = logging.getLogger(__name__)


def add_commands(commands: Any, common: argparse.ArgumentParser, epilog: str) -> None:
    """Add ``tools`` and ``call`` to the command line's subparsers."""
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


def _registry(args: argparse.Namespace) -> ToolRegistry:
    config = load_config(args.config)
    if not config.servers and not config.errors:
        raise CommandFailure(EXIT_USAGE, f"{args.config} configures no server to start")
    timeout: Optional[float] = args.timeout
    return ToolRegistry(
        config,
        default_timeout=timeout if timeout is not None else DEFAULT_CALL_TIMEOUT_S,
        startup_timeout=timeout if timeout is not None else DEFAULT_STARTUP_TIMEOUT_S,
        retry_failed_after=None,
    )


def cmd_tools(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    """``tools``: every server's tools; failures on stderr, the rest still listed."""
    with report_first(_registry(args), err) as registry:
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
        write_json(out, tools)
    elif tools:  # no header over an empty table: the failures on stderr say why
        rows = [("SERVER", "TOOL", "NAME", "DESCRIPTION")]
        for tool in tools:
            description = (tool["description"].strip().splitlines() or [""])[0]
            if len(description) > DESCRIPTION_CHARS:
                description = description[: DESCRIPTION_CHARS - 3] + "..."
            rows.append((tool["server"], tool["tool"], tool["name"], description))
        write_table(rows, out)
    for failure in failures.values():
        err.write(f"{PROG}: {one_line(failure)}\n")
    for name in late:
        err.write(f"{PROG}: server {name!r} was not up within {registry.startup_timeout}s\n")
    for failure in failures.values():
        return exit_code_for(failure)
    return EXIT_TIMEOUT if late else EXIT_OK


def cmd_call(args: argparse.Namespace, out: IO[str], err: IO[str], stdin: IO[str]) -> int:
    """``call``: one tool call; the text result on stdout, progress on stderr."""
    arguments = read_json(args.arguments, "the arguments", stdin)
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise CommandFailure(EXIT_USAGE, f"the arguments must be a JSON object, not {type(arguments).__name__}")
    what = f"tool {args.tool!r} on server {args.server!r}"
    display = None if args.no_progress else ProgressDisplay(err, what=what)
    with report_first(_registry(args), err) as registry:
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
            raise CommandFailure(EXIT_TIMEOUT, f"{what} did not finish within {exc.timeout}s") from None
        except TransportClosed as exc:
            raise CommandFailure(
                EXIT_UNAVAILABLE, f"server {args.server!r} stopped during the call: {one_line(exc)}"
            ) from None
        except UnknownTool as exc:
            raise CommandFailure(EXIT_UNKNOWN, exc.message + _tools_of(registry, args.server)) from None
        finally:
            if display is not None:
                display.finish()
    if args.json:
        write_json(out, result)
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


__all__ = ["DESCRIPTION_CHARS", "TOOLS_NAMED", "add_commands", "cmd_call", "cmd_tools"]
