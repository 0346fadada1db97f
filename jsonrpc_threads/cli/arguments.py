"""What every command shares on its way in: the parser that exits with 2, and the checked arguments.

Theory of operation: an argument is checked where it is read, before anything
starts: a ``--timeout`` that is not a positive number, arguments that are not
JSON, a ``--stdio`` command line that cannot be split (an unbalanced quote),
an ``--env`` that is not ``NAME=VALUE`` each end the command with exit code 2
(``EXIT_USAGE``) and one line saying which argument and why.  A ``--stdio``
command line is split with POSIX shell quoting and never run through a shell.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from typing import IO, Any, Dict, List, NoReturn, Optional, Sequence

from .output import EXIT_USAGE, PROG, CommandFailure


class UsageParser(argparse.ArgumentParser):
    """An ``argparse`` parser whose usage errors exit with ``EXIT_USAGE`` and the command's name."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{PROG}: {message}\n")


def positive_seconds(text: str) -> float:
    """A ``--timeout``: a number of seconds above 0 (``argparse`` type)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0 seconds: {text!r}")
    return value


def read_json(text: Optional[str], what: str, stdin: IO[str]) -> Any:
    """An argument as JSON: ``None`` when absent, stdin for ``-``.

    Raises:
        CommandFailure: ``EXIT_USAGE`` when it is not JSON.
    """
    if text is None:
        return None
    if text == "-":
        text = stdin.read()
    try:
        return json.loads(text)
    except ValueError as exc:
        raise CommandFailure(EXIT_USAGE, f"{what} are not valid JSON: {exc}") from None


def command_argv(text: str) -> List[str]:
    """The argv of a ``--stdio`` command line (POSIX shell quoting, never run through a shell).

    Raises:
        CommandFailure: ``EXIT_USAGE`` for a line that cannot be split, or an empty one.
    """
    try:
        argv = shlex.split(text)
    except ValueError as exc:
        raise CommandFailure(EXIT_USAGE, f"--stdio {text!r} is not a command line: {str(exc).lower()}") from None
    if not argv:
        raise CommandFailure(EXIT_USAGE, "--stdio needs a command")
    return argv


def environment(values: Sequence[str]) -> Dict[str, str]:
    """The ``--env NAME=VALUE`` arguments as a mapping.

    Raises:
        CommandFailure: ``EXIT_USAGE`` for one that is not ``NAME=VALUE``.
    """
    env: Dict[str, str] = {}
    for value in values:
        name, sep, content = value.partition("=")
        if not sep or not name or any(c.isspace() for c in name):
            raise CommandFailure(EXIT_USAGE, f"an environment variable is NAME=VALUE, not {value!r}")
        env[name] = content
    return env


__all__ = ["UsageParser", "command_argv", "environment", "positive_seconds", "read_json"]
