"""Start ``registry_sdk_peer.py --http`` for the registry and CLI tests.

Not a peer itself.  The peer binds 127.0.0.1 on a free port and prints
``PORT <n>`` once its socket listens, so nothing here guesses a port or polls;
``ServerProcess`` reads that line and ends the child.
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import Iterator

from .mcp_launch import ServerProcess

PEER = Path(__file__).resolve().parent / "registry_sdk_peer.py"


@contextlib.contextmanager
def sdk_http_peer() -> Iterator[str]:
    """Run the SDK peer over Streamable HTTP; yields its URL (``http://127.0.0.1:<port>/mcp``)."""
    with ServerProcess([sys.executable, str(PEER), "--http"], name="registry-sdk-http") as server:
        port = int(server.wait_for(r"^PORT (\d+)").group(1))
        yield f"http://127.0.0.1:{port}/mcp"
