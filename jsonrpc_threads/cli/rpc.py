"""``rpc``: one raw JSON-RPC request (or notification) to a server over stdio or HTTP.

Theory of operation: ``--stdio`` starts the server as ``StdioTransport`` does
(an allowlist of the environment, plus each ``--env``; ``--inherit-env``
passes it all), ``--url`` speaks to an HTTP JSON-RPC (MCP Streamable HTTP)
endpoint, the HTTP stack loaded only then.  Arguments are checked before
anything starts (a ``--url`` that is not an http(s) URL naming a host, a
``--header`` that is not ``Name: value``, options of the other target).  The
request is made with ``--timeout`` as its one deadline; its result, or the
error object of an error answer, is printed as JSON.
"""

from __future__ import annotations

import argparse
from typing import IO, Any, Dict, Sequence
from urllib.parse import urlsplit

from ..client import JsonRpcClient
from ..errors import HttpError, JsonRpcError, RequestTimeout, TransportClosed
from ..transports.base import Transport
from ..transports.stdio import StdioTransport
from .arguments import command_argv, environment, read_json
from .output import (
    EXIT_ERROR_RESULT,
    EXIT_OK,
    EXIT_TIMEOUT,
    EXIT_USAGE,
    CommandFailure,
    report_first,
    request_name,
    write_json,
)
from .progress import ProgressDisplay

#: Default seconds for ``rpc`` requests.
DEFAULT_RPC_TIMEOUT_S = 30.0


def add_command(commands: Any, common: argparse.ArgumentParser, epilog: str) -> None:
    """Add ``rpc`` to the command line's subparsers."""
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


def _url(text: str) -> str:
    """A ``--url`` checked as typed: an http(s) URL that names a host."""
    url = text.strip()
    if not url:
        raise CommandFailure(EXIT_USAGE, "--url is empty: give an http:// or https:// URL")
    scheme, sep, _ = url.partition("://")
    if not sep:
        raise CommandFailure(EXIT_USAGE, f"--url {text!r} has no scheme: did you mean 'http://{url}'?")
    if scheme.lower() not in ("http", "https"):
        raise CommandFailure(EXIT_USAGE, f"--url {text!r} is not an http:// or https:// URL")
    try:
        host = urlsplit(url).hostname
    except ValueError as exc:
        raise CommandFailure(EXIT_USAGE, f"--url {text!r} is not a valid URL: {exc}") from None
    if not host:
        raise CommandFailure(EXIT_USAGE, f"--url {text!r} names no host")
    return url


def _headers(values: Sequence[str]) -> Dict[str, str]:
    headers: Dict[str, str] = {}
    for value in values:
        name, sep, content = value.partition(":")
        if not sep or not name.strip():
            raise CommandFailure(EXIT_USAGE, f"a header is 'Name: value', not {value!r}")
        headers[name.strip()] = content.strip()
    return headers


def _transport(args: argparse.Namespace) -> Transport:
    if args.stdio is not None:
        command = command_argv(args.stdio)
        if args.header:
            raise CommandFailure(EXIT_USAGE, "--header goes with --url")
        return StdioTransport(command, env=environment(args.env), inherit_env=args.inherit_env)
    if args.env or args.inherit_env:
        raise CommandFailure(EXIT_USAGE, "--env and --inherit-env go with --stdio")
    url = _url(args.url)
    from ..transports.http import HttpTransport  # noqa: PLC0415  (only --url pays for the HTTP stack)

    try:
        return HttpTransport(url, headers=_headers(args.header))
    except ValueError as exc:
        raise CommandFailure(EXIT_USAGE, f"--url {args.url!r}: {exc}") from None


def cmd_rpc(args: argparse.Namespace, out: IO[str], err: IO[str], stdin: IO[str]) -> int:
    """``rpc``: one raw request; its result (or error object) as JSON on stdout."""
    params = read_json(args.params, "the params", stdin)
    if params is not None and not isinstance(params, (dict, list)):
        raise CommandFailure(EXIT_USAGE, f"the params must be a JSON object or array, not {type(params).__name__}")
    transport = _transport(args)
    timeout = args.timeout if args.timeout is not None else DEFAULT_RPC_TIMEOUT_S
    what = request_name(args.method, params)
    with report_first(JsonRpcClient(transport, default_timeout=timeout), err) as client:
        if args.notify:
            client.notify(args.method, params)
            return EXIT_OK
        display = ProgressDisplay(err, what=f"the answer to {what}")
        display.start()
        try:
            result = client.call(args.method, params)
        except RequestTimeout as exc:
            raise CommandFailure(EXIT_TIMEOUT, f"no answer to {what} within {exc.timeout}s") from None
        except (TransportClosed, HttpError):
            raise
        except JsonRpcError as exc:
            write_json(out, exc.to_error_object())
            return EXIT_ERROR_RESULT
        finally:
            display.finish()
    write_json(out, result)
    return EXIT_OK


__all__ = ["DEFAULT_RPC_TIMEOUT_S", "add_command", "cmd_rpc"]
