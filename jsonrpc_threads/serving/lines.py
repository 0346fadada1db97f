"""The server's input read line by line with a limit, and its broken stdout silenced.

Theory of operation: ``read_lines`` reads one line at a time with
``readline(limit + 1)``, so a line longer than the limit is never held whole:
its rest is read and discarded in chunks of ``DISCARD_CHUNK_BYTES`` and the
line comes out as ``None`` (answered -32600 by the dispatcher).  A read that
fails (the input closed under it) is taken as the end of input.  Lines are split
on ``b"\\n"`` only; the last line may lack its newline.  ``silence_stdout``
is Python's advice for a stdout whose reader went away.
"""

from __future__ import annotations

import os
import sys

from .logs import logger

TYPE_CHECKING = False  # typing is not imported at run time: a tool server starts faster
if TYPE_CHECKING:
    from typing import IO, Iterator, Optional

#: How much of an over-long line is read (and discarded) at a time.
DISCARD_CHUNK_BYTES = 64 * 1024


def read_lines(stream: IO[bytes], limit: int) -> Iterator[Optional[bytes]]:
    """Yield each line without its newline, or ``None`` for a line over ``limit`` (discarded)."""
    while True:
        try:
            line = stream.readline(limit + 1)
        except (OSError, ValueError) as exc:
            logger.info("input is gone (%s: %s); treated as end of input", type(exc).__name__, exc)
            return
        if not line:
            return
        if line.endswith(b"\n"):
            yield line[:-1]
        elif len(line) <= limit:
            yield line  # the last line, without a newline
        else:
            while True:
                try:
                    chunk = stream.readline(DISCARD_CHUNK_BYTES)
                except (OSError, ValueError):
                    chunk = b""
                if not chunk or chunk.endswith(b"\n"):
                    break
            yield None


def silence_stdout() -> None:
    """Point the process's stdout at devnull once it broke under ``serve``."""
    # Python's advice for a broken stdout: point the fd at devnull, so the flush at
    # interpreter exit does not print "Exception ignored ... BrokenPipeError".
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, sys.stdout.fileno())
        finally:
            os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


__all__ = ["DISCARD_CHUNK_BYTES", "read_lines", "silence_stdout"]
