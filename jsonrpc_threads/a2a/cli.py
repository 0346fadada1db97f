"""``jsonrpc-threads a2a``: one message to an A2A agent, and its reply.

Usage::

    jsonrpc-threads a2a URL (MESSAGE | -) [--stream] [--task-id ID] [--context-id ID]
                        [--header "Name: value"] [--allow-origin ORIGIN] [--json]

Fetches the agent's card (under ``URL``, or ``URL`` itself when it ends in
``.json``), sends the message (``-``: read it from stdin) and prints the
agent's reply on stdout: the text of its Message, or of the task's artifacts
(else its status message).  With ``--stream`` the reply is printed as it comes
(``SendStreamingMessage``): the artifacts' text and the agent's messages on
stdout, the task's progress (its status messages while it works) on stderr.
``--task-id`` continues a task (one that asked for input), ``--context-id`` a
conversation.  ``--header`` (repeatable) is sent to the card's origin and to
each ``--allow-origin``, never elsewhere.  ``--json`` prints the result as JSON
(with ``--stream``, each event on a line of its own).

Exit status: 0 when the agent answered with a Message or the task completed;
1 when the task failed, was canceled or rejected, or waits for input (the
state and the task's id on stderr: answer with ``--task-id``), or the agent
refused the message; 2 for a usage error; 4 for a timeout; 5 when the agent
could not be reached or the stream broke.  ``--timeout`` is one deadline for
the whole command (the card's fetch, the message, the whole stream), by
default ``DEFAULT_TIMEOUT_S``.

This module registers the command (``add_command``) and runs it
(``run``); ``jsonrpc_threads.cli`` dispatches to it.
"""

from __future__ import annotations

import argparse
import json
from typing import IO, Any, Callable, Dict, Optional, Sequence

from .client import A2aClient
from .wire import ARTIFACT_UPDATE, INTERRUPTED_STATES, MESSAGE, TERMINAL_STATES, event_kind, state_of, text_of

#: Seconds the whole command may take without ``--timeout``.
DEFAULT_TIMEOUT_S = 120.0

EXIT_OK = 0
EXIT_NOT_DONE = 1
EXIT_USAGE = 2
#: Shows an error before the client is closed (the command line's, given by ``main``); it may
#: return what to call once the client closed.
Reporter = Callable[[BaseException], Optional[Callable[[], None]]]


def add_command(commands: Any, common: argparse.ArgumentParser, epilog: str) -> None:
    """Add the ``a2a`` sub-command to ``commands`` (the sub-parsers of the command line)."""
    a2a = commands.add_parser(
        "a2a", parents=[common], help="send one message to an A2A agent and print its reply", epilog=epilog
    )
    a2a.add_argument("url", metavar="URL", help="the agent's base URL, or its card's (ending in .json)")
    a2a.add_argument("message", metavar="MESSAGE", help="the message, or - to read it from stdin")
    a2a.add_argument("--stream", action="store_true", help="print the reply as it comes (SendStreamingMessage)")
    a2a.add_argument("--task-id", metavar="ID", help="continue this task (one that asked for input)")
    a2a.add_argument("--context-id", metavar="ID", help="continue this conversation")
    a2a.add_argument(
        "--header",
        action="append",
        default=[],
        metavar="'NAME: VALUE'",
        help="an HTTP header for the card's origin and the allowed ones (repeatable)",
    )
    a2a.add_argument(
        "--allow-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="an origin besides the card's that gets the headers, e.g. https://api.example (repeatable)",
    )
    a2a.add_argument("--json", action="store_true", help="print the result (each event, with --stream) as JSON")


def _headers(values: Sequence[str]) -> Dict[str, str]:
    headers: Dict[str, str] = {}
    for value in values:
        name, sep, text = value.partition(":")
        if not sep or not name.strip():
            raise ValueError(f"a header is 'Name: value', not {value!r}")
        headers[name.strip()] = text.strip()
    return headers


def run(args: argparse.Namespace, out: IO[str], err: IO[str], stdin: IO[str], report: Optional[Reporter] = None) -> int:
    """Run ``a2a`` with parsed ``args``; returns the exit status (errors of the package are raised).

    A bad URL, header or origin, or an empty message, is a usage error (exit status 2).
    ``report`` is given an error that ends the call before the client closes.

    Raises:
        JsonRpcError: the agent could not be reached, timed out, broke the stream or refused the message.
    """
    try:
        text = stdin.read() if args.message == "-" else args.message
        if not text.strip():
            raise ValueError("the message is empty")
        client = A2aClient(args.url, headers=_headers(args.header), allow_origins=args.allow_origin)
    except ValueError as exc:
        err.write(f"jsonrpc-threads: {exc}\n")
        return EXIT_USAGE
    timeout = args.timeout if args.timeout is not None else DEFAULT_TIMEOUT_S
    ids = {"task_id": args.task_id, "context_id": args.context_id}
    after: Optional[Callable[[], None]] = None
    try:
        with client:
            try:
                if args.stream:
                    return _stream(client, text, ids, timeout, out, err, as_json=args.json)
                result = client.send_message(text, timeout=timeout, **ids)
            except BaseException as exc:
                after = report(exc) if report is not None else None  # shown now, before the client closes
                raise
            if args.json:
                out.write(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
            else:
                _write_line(out, text_of(result))
            return _status(result, err)
    finally:
        if after is not None:
            after()


def _stream(
    client: A2aClient,
    text: str,
    ids: Dict[str, Optional[str]],
    timeout: float,
    out: IO[str],
    err: IO[str],
    *,
    as_json: bool,
) -> int:
    last: Optional[Dict[str, Any]] = None
    ends_with_newline = True
    with client.stream_message(text, timeout=timeout, **ids) as events:
        for event in events:
            last = event
            if as_json:
                out.write(json.dumps(event, ensure_ascii=False) + "\n")
                out.flush()
                continue
            words = text_of(event)
            if not words:
                continue
            kind = event_kind(event)
            state = state_of(event)
            if kind in (MESSAGE, ARTIFACT_UPDATE) or state in TERMINAL_STATES or state in INTERRUPTED_STATES:
                if not ends_with_newline and kind != ARTIFACT_UPDATE:
                    out.write("\n")
                out.write(words)
                out.flush()
                ends_with_newline = words.endswith("\n")
            else:
                err.write(f"[{state}] {words}\n")
                err.flush()
    if not ends_with_newline:
        out.write("\n")
    return EXIT_OK if last is None else _status(last, err)


def _status(result: Dict[str, Any], err: IO[str]) -> int:
    """The exit status for the last word of the agent (a Message, a task or its last update)."""
    state = state_of(result)
    if state is None or state == "completed":
        return EXIT_OK
    task = result.get("taskId") or result.get("id")
    if state in INTERRUPTED_STATES:
        err.write(f"jsonrpc-threads: the task waits for the client ({state}): answer with --task-id {task}\n")
    else:
        err.write(f"jsonrpc-threads: the task ended {state} (task {task})\n")
    return EXIT_NOT_DONE


def _write_line(out: IO[str], text: str) -> None:
    out.write(text if text.endswith("\n") else text + "\n")


__all__ = ["DEFAULT_TIMEOUT_S", "add_command", "run"]
