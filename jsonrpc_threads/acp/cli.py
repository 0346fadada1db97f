"""``jsonrpc-threads acp``: one prompt to a coding agent, its reply streamed as it comes.

Usage::

    jsonrpc-threads acp --stdio "CMD ARGS" [--cwd DIR] [--env NAME=VALUE] [--inherit-env]
                        [--fs-root DIR [--fs-write]] [--terminal] [--allow] [--mode MODE]
                        (PROMPT | -)

Starts the agent (the allowlisted environment plus each ``--env``, as
``StdioTransport`` does; ``--inherit-env`` passes it all, to the agent and to the
commands it runs with ``--terminal``),
runs the handshake, opens a session in ``--cwd`` (the working directory by
default), sends the prompt (``-``: read it from stdin) and writes the agent's
message chunks to stdout as they arrive; tool calls are reported on stderr,
one line each, and with ``-v`` its thoughts too.  Permission requests are
refused unless ``--allow`` grants them (the agent's first ``allow_once`` or
``allow_always`` option).  The agent reads files only under ``--fs-root``
(writes with ``--fs-write`` too) and runs commands only with ``--terminal``.

Exit status: 0 when the agent ended its turn (``end_turn``), 1 for any other
stop reason (named on stderr) or an error answer, 4 for a timeout, 5 when the
agent could not be started or stopped mid-turn (its exit code and the last line
of its stderr on stderr), 130 on Ctrl-C (the turn is cancelled first).
``--timeout`` is one deadline for the whole command, made when it starts and
spent by every step (the handshake, the session, the prompt); without it the
handshake and the session get ``DEFAULT_STEP_TIMEOUT_S`` each and the
prompt ``DEFAULT_PROMPT_TIMEOUT_S``.

This module registers the command (``add_command``) and runs it
(``run``); ``jsonrpc_threads.cli`` dispatches to it.
"""

from __future__ import annotations

import argparse
import logging
import time
from typing import IO, Any, Callable, Dict, Optional, Sequence

from ..deadlines import as_call_timeout
from ..errors import RequestTimeout
from .client import AcpClient

#: Seconds the handshake and ``session/new`` may take without ``--timeout`` (an agent may start slowly).
DEFAULT_STEP_TIMEOUT_S = 60.0
#: Seconds the prompt turn may take without ``--timeout``.
DEFAULT_PROMPT_TIMEOUT_S = 600.0
#: Kinds of permission options ``--allow`` picks, in this order.
ALLOW_KINDS = ("allow_once", "allow_always")

EXIT_OK = 0
EXIT_STOPPED = 1
EXIT_USAGE = 2
#: Shows an error before the client is closed (the command line's, given by ``main``); it may
#: return what to call once the client closed.
Reporter = Callable[[BaseException], Optional[Callable[[], None]]]

logger = logging.getLogger(__name__)


def add_command(commands: Any, common: argparse.ArgumentParser, epilog: str) -> None:
    """Add the ``acp`` sub-command to ``commands`` (the sub-parsers of the command line)."""
    acp = commands.add_parser(
        "acp", parents=[common], help="send one prompt to a coding agent (ACP) and stream its reply", epilog=epilog
    )
    acp.add_argument("--stdio", required=True, metavar="COMMAND", help='the agent command line, e.g. "my-agent --acp"')
    acp.add_argument("--cwd", metavar="DIR", default=".", help="the session's working directory (default: here)")
    acp.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a variable for the agent (repeatable), beside the allowlist of this environment",
    )
    acp.add_argument(
        "--inherit-env",
        action="store_true",
        help="pass the agent, and its --terminal commands, this whole environment (and --env)",
    )
    acp.add_argument("--fs-root", metavar="DIR", help="let the agent read files under DIR")
    acp.add_argument("--fs-write", action="store_true", help="and write them (with --fs-root)")
    acp.add_argument("--terminal", action="store_true", help="let the agent run commands here")
    acp.add_argument("--allow", action="store_true", help="grant the agent's permission requests (default: refuse)")
    acp.add_argument("--mode", metavar="MODE", help="switch the session to this mode before the prompt")
    acp.add_argument("prompt", metavar="PROMPT", help="the prompt, or - to read it from stdin")


class _Stream:
    """Writes the agent's updates as they come: its message to ``out``, the rest to ``err`` (notification worker)."""

    def __init__(self, out: IO[str], err: IO[str], *, thoughts: bool) -> None:
        self.out = out
        self.err = err
        self.thoughts = thoughts
        self.ends_with_newline = True
        self.tools: Dict[str, str] = {}

    def __call__(self, update: Dict[str, Any]) -> None:
        kind = update.get("sessionUpdate")
        if kind == "agent_message_chunk":
            text = _text_of(update)
            if text:
                self.out.write(text)
                self.out.flush()
                self.ends_with_newline = text.endswith("\n")
        elif kind == "agent_thought_chunk" and self.thoughts:
            self.err.write(_text_of(update))
            self.err.flush()
        elif kind in ("tool_call", "tool_call_update"):
            tool_id = str(update.get("toolCallId", ""))
            title = update.get("title") or self.tools.get(tool_id) or tool_id
            self.tools[tool_id] = str(title)
            status = update.get("status")
            if kind == "tool_call" or status in ("completed", "failed"):
                self.err.write(f"[tool] {title}{f' ({status})' if status else ''}\n")
                self.err.flush()


def _text_of(update: Dict[str, Any]) -> str:
    content = update.get("content")
    if isinstance(content, dict) and content.get("type") == "text" and isinstance(content.get("text"), str):
        return str(content["text"])
    return ""


def _allow(params: Dict[str, Any]) -> Optional[str]:
    """``--allow``: the first option that allows (once before always), else ``None`` (cancelled)."""
    options = [option for option in params.get("options") or () if isinstance(option, dict)]
    for kind in ALLOW_KINDS:
        for option in options:
            if option.get("kind") == kind and isinstance(option.get("optionId"), str):
                return str(option["optionId"])
    return None


def _environment(values: Sequence[str]) -> Dict[str, Optional[str]]:
    env: Dict[str, Optional[str]] = {}
    for value in values:
        name, sep, text = value.partition("=")
        if not sep or not name:
            raise ValueError(f"--env wants NAME=VALUE, not {value!r}")
        env[name] = text
    return env


def run(args: argparse.Namespace, out: IO[str], err: IO[str], stdin: IO[str], report: Optional[Reporter] = None) -> int:
    """Run ``acp`` with parsed ``args``; returns the exit status (errors of the package are raised).

    A bad ``--env``, ``--fs-write`` without ``--fs-root``, an ``--fs-root`` that
    is no directory or an empty prompt is a usage error (exit status 2).

    ``report`` is given an error that ends the turn before the agent is
    stopped (the command line shows it at once; stopping may take seconds).

    Raises:
        JsonRpcError: the agent could not be started, timed out, failed or answered an error.
    """
    try:
        return _run(args, out, err, stdin, report)
    except ValueError as exc:
        err.write(f"jsonrpc-threads: {exc}\n")
        return EXIT_USAGE


def _run(args: argparse.Namespace, out: IO[str], err: IO[str], stdin: IO[str], report: Optional[Reporter]) -> int:
    text = stdin.read() if args.prompt == "-" else args.prompt
    if not text.strip():
        raise ValueError("the prompt is empty")
    started = time.monotonic()
    limit: Optional[float] = args.timeout

    def left(default: float) -> float:
        """What is left of ``--timeout`` for the next step (``default`` without one)."""
        return default if limit is None else max(0.0, limit - (time.monotonic() - started))

    stream = _Stream(out, err, thoughts=args.verbose > 0)
    after: Optional[Callable[[], None]] = None
    try:
        with AcpClient(
            args.stdio,
            cwd=args.cwd,
            env=_environment(args.env),
            inherit_env=args.inherit_env,
            on_permission=_allow if args.allow else None,
            fs_root=args.fs_root,
            fs_write=args.fs_write,
            terminal=args.terminal,
            default_timeout=left(DEFAULT_STEP_TIMEOUT_S),
            prompt_timeout=left(DEFAULT_PROMPT_TIMEOUT_S),
        ) as agent:
            try:
                session = agent.new_session(timeout=left(DEFAULT_STEP_TIMEOUT_S))
                if args.mode:
                    agent.set_mode(session, args.mode, timeout=left(DEFAULT_STEP_TIMEOUT_S))
                result = agent.prompt(session, text, on_update=stream, timeout=left(DEFAULT_PROMPT_TIMEOUT_S))
            except RequestTimeout as exc:  # the --timeout the user gave, not what was left for the last step
                timed_out = as_call_timeout(exc, limit if limit is not None else exc.timeout)
                after = report(timed_out) if report is not None else None
                raise timed_out from None
            except BaseException as exc:
                after = report(exc) if report is not None else None  # shown now: stopping the agent comes after
                raise
    finally:
        if after is not None:
            after()
        if not stream.ends_with_newline:  # the reply ends its line, whatever ended the turn
            out.write("\n")
            out.flush()
    reason = result["stopReason"]
    if reason == "end_turn":
        return EXIT_OK
    err.write(f"jsonrpc-threads: the agent stopped: {reason}\n")
    return EXIT_STOPPED


__all__ = ["ALLOW_KINDS", "DEFAULT_PROMPT_TIMEOUT_S", "DEFAULT_STEP_TIMEOUT_S", "add_command", "run"]
