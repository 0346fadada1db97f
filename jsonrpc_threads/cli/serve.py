"""``serve``: an ``McpServer`` of the user's module, over stdio or HTTP, until its client or a signal ends it.

Theory of operation: ``MODULE:SERVER`` names the server.  ``MODULE`` is a
dotted module name, found from the working directory first (as ``python -m``
finds it), or the path of a ``.py`` file (imported under its file name, its
directory first on ``sys.path`` so that it imports its neighbours);
``SERVER`` is an attribute of it, ``server`` by default, or else the one
``McpServer`` the module holds.  Everything about the name is checked before
anything is served, and a name that leads nowhere (no such module or file, a
module that fails to import, no such attribute, not an ``McpServer``) is one
line on stderr and exit code 2, as the other commands' usage errors.

Over stdio (the default) the server reads requests on stdin until end of
input (its client closed it), answering on stdout; while the module is
imported, ``sys.stdout`` points at stderr, so a ``print`` at import time
cannot corrupt the protocol.  With ``--http HOST:PORT`` it serves Streamable
HTTP with ``McpServer.run_http`` (a thread per request; loopback unless
another host is named) and prints the endpoint's URL, ``http://H:P/mcp``, on
stdout once it listens; port 0 is a free one.  Ctrl-C and SIGTERM stop it:
the socket and every session are closed, and the command exits with 0.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import logging
import os
import signal
import sys
from pathlib import Path
from types import FrameType, ModuleType
from typing import IO, Any, Iterator, List, Optional, Tuple

from ..mcp.server import McpServer
from .output import EXIT_OK, EXIT_USAGE, CommandFailure

#: The attribute ``MODULE`` alone names.
DEFAULT_SERVER_ATTRIBUTE = "server"
#: The port ``--http HOST`` (without one) listens on.
DEFAULT_HTTP_PORT = 8000

logger = logging.getLogger(__name__)


def add_command(commands: Any, common: argparse.ArgumentParser, epilog: str) -> None:
    """Add ``serve`` to the command line's subparsers."""
    serve = commands.add_parser(
        "serve", parents=[common], help="serve an McpServer of a module over stdio or HTTP", epilog=epilog
    )
    serve.add_argument(
        "target",
        metavar="MODULE[:SERVER]",
        help="a dotted module or a .py file, and the McpServer in it (default: 'server', or its only one)",
    )
    serve.add_argument(
        "--http",
        metavar="HOST:PORT",
        help="serve Streamable HTTP at http://HOST:PORT/mcp instead of stdio (port 0: a free one)",
    )


def cmd_serve(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    """``serve``: load the server, then serve it until end of input (stdio) or Ctrl-C / SIGTERM (HTTP).

    Raises:
        CommandFailure: ``EXIT_USAGE`` for a target or ``--http`` address that leads nowhere.
    """
    address = http_address(args.http) if args.http is not None else None
    module_name, attribute = split_target(args.target)
    with _stdout_to(err):  # a print() at import time must not reach the protocol's stdout
        server = load_server(module_name, attribute)
    with _sigterm_interrupts():
        if address is None:
            try:
                server.run_stdio()
            except KeyboardInterrupt:
                pass
            return EXIT_OK
        host, port = address

        def announce(url: str) -> None:
            out.write(url + "\n")
            out.flush()

        try:
            server.run_http(host, port, on_listening=announce)
        except OSError as exc:
            raise CommandFailure(EXIT_USAGE, f"cannot listen on {args.http}: {exc.strerror or exc}") from None
    return EXIT_OK


def http_address(text: str) -> Tuple[str, int]:
    """``--http``'s ``HOST:PORT`` (``[::1]:PORT`` for IPv6; ``HOST`` alone: port ``DEFAULT_HTTP_PORT``).

    Raises:
        CommandFailure: ``EXIT_USAGE`` for a port that is not a number from 0 to 65535, or no host.
    """
    host, sep, port_text = text.rpartition(":")
    if not sep or (host.count(":") and not host.startswith("[")):
        host, port_text = text, str(DEFAULT_HTTP_PORT)  # no port, or a bare IPv6 address
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not host:
        raise CommandFailure(EXIT_USAGE, f"--http {text!r} names no host (127.0.0.1:8000, for one)")
    if not port_text.isdigit() or int(port_text) > 65535:
        raise CommandFailure(EXIT_USAGE, f"--http {text!r}: the port must be a number from 0 to 65535")
    return host, int(port_text)


def split_target(text: str) -> Tuple[str, str]:
    """``MODULE[:SERVER]`` as ``(module, attribute)``; a Windows drive's colon is the path's.

    Raises:
        CommandFailure: ``EXIT_USAGE`` for an empty module or attribute.
    """
    module, sep, attribute = text.rpartition(":")
    if not sep or (len(module) == 1 and module.isalpha() and attribute[:1] in ("\\", "/")):
        module, attribute = text, ""
    if not module or (sep and not attribute):
        raise CommandFailure(EXIT_USAGE, f"{text!r} is not MODULE:SERVER (my_tools:server, or tools.py:server)")
    return module, attribute


def load_server(module_name: str, attribute: str) -> McpServer:
    """The ``McpServer`` that ``module_name`` (dotted, or a ``.py`` path) holds as ``attribute``.

    ``attribute`` empty: ``server``, or else the module's only ``McpServer``.

    Raises:
        CommandFailure: ``EXIT_USAGE``: no such module or file, one that fails
            to import (its exception in one line; ``-vv`` logs the traceback),
            no such attribute, or not an ``McpServer``.
    """
    module = _import(module_name)
    if attribute:
        value = module
        for part in attribute.split("."):
            if not hasattr(value, part):
                raise CommandFailure(EXIT_USAGE, f"{module_name} has no attribute {attribute!r}")
            value = getattr(value, part)
        if not isinstance(value, McpServer):
            raise CommandFailure(EXIT_USAGE, f"{module_name}:{attribute} is a {type(value).__name__}, not an McpServer")
        return value
    found = getattr(module, DEFAULT_SERVER_ATTRIBUTE, None)
    if isinstance(found, McpServer):
        return found
    servers = [(name, value) for name, value in vars(module).items() if isinstance(value, McpServer)]
    if len(servers) == 1:
        return servers[0][1]
    if not servers:
        raise CommandFailure(EXIT_USAGE, f"{module_name} holds no McpServer (name one: {module_name}:NAME)")
    names = ", ".join(name for name, _ in servers)
    raise CommandFailure(EXIT_USAGE, f"{module_name} holds several McpServers ({names}): name one, {module_name}:NAME")


def _import(module_name: str) -> ModuleType:
    if module_name.endswith(".py") or os.sep in module_name or "/" in module_name:
        return _import_file(Path(module_name))
    if not all(part.isidentifier() for part in module_name.split(".")):
        raise CommandFailure(EXIT_USAGE, f"{module_name!r} is neither a dotted module name nor a .py file")
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # as `python -m` does: the working directory's modules first
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (module_name == exc.name or module_name.startswith(exc.name + ".")):
            raise CommandFailure(EXIT_USAGE, f"no module named {module_name!r} (from {os.getcwd()})") from None
        raise _import_failed(module_name, exc) from None
    except Exception as exc:  # the module's own code failed: its error, in one line
        raise _import_failed(module_name, exc) from None


def _import_file(path: Path) -> ModuleType:
    if path.suffix != ".py" or not path.is_file():
        raise CommandFailure(EXIT_USAGE, f"{str(path)!r} is not a .py file")
    name = path.stem
    directory = str(path.resolve().parent)
    if directory not in sys.path:
        sys.path.insert(0, directory)  # its neighbours import as they would when run as a script
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise CommandFailure(EXIT_USAGE, f"{str(path)!r} cannot be imported")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # what it defines pickles and imports under its name
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[name]
        raise _import_failed(str(path), exc) from None
    return module


def _import_failed(what: str, exc: BaseException) -> CommandFailure:
    logger.debug("importing %s failed", what, exc_info=exc)
    lines: List[str] = [line for line in str(exc).splitlines() if line.strip()]
    detail = f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__
    return CommandFailure(EXIT_USAGE, f"importing {what} failed: {detail}")


@contextlib.contextmanager
def _stdout_to(stream: IO[str]) -> Iterator[None]:
    saved = sys.stdout
    sys.stdout = stream
    try:
        yield
    finally:
        sys.stdout = saved


@contextlib.contextmanager
def _sigterm_interrupts() -> Iterator[None]:
    """SIGTERM raises ``KeyboardInterrupt`` in the main thread, as Ctrl-C does: both stop the server cleanly."""

    def interrupt(signum: int, frame: Optional[FrameType]) -> None:
        raise KeyboardInterrupt

    try:
        saved = signal.signal(signal.SIGTERM, interrupt)
    except ValueError:  # not the main thread (main() called from a thread): leave SIGTERM alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, saved)


__all__ = [
    "DEFAULT_HTTP_PORT",
    "DEFAULT_SERVER_ATTRIBUTE",
    "add_command",
    "cmd_serve",
    "http_address",
    "load_server",
    "split_target",
]
