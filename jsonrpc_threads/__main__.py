"""``python -m jsonrpc_threads``: the command line of ``jsonrpc_threads.cli``."""

from __future__ import annotations

import sys
from typing import Optional, Sequence

from .cli import main as _cli_main


def main(argv: Optional[Sequence[str]] = None) -> int:
    """The ``jsonrpc-threads`` console script; returns the exit code."""
    return _cli_main(argv)


if __name__ == "__main__":
    sys.exit(main())
