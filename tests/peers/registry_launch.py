"""Start ``registry_sdk_peer.py --http`` for the registry and CLI tests.

Not a peer itself.  The peer binds 127.0.0.1 on a free port and prints
``PORT <n>`` once its socket listens, so nothing here guesses a port or polls.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import threading
from pathlib import Path
from typing import Iterator, List

PEER = Path(__file__).resolve().parent / "registry_sdk_peer.py"
#: How long the peer may take to start listening.
START_TIMEOUT_S = 30.0
#: How long it gets to exit after SIGTERM, then after SIGKILL.
STOP_GRACE_S = 5.0


@contextlib.contextmanager
def sdk_http_peer() -> Iterator[str]:
    """Run the SDK peer over Streamable HTTP; yields its URL (``http://127.0.0.1:<port>/mcp``)."""
    process = subprocess.Popen(
        [sys.executable, str(PEER), "--http"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    stdout = process.stdout
    assert stdout is not None
    try:
        lines: List[bytes] = []
        reader = threading.Thread(target=lambda: lines.append(stdout.readline()), name="test-sdk-http-port")
        reader.start()
        reader.join(START_TIMEOUT_S)
        if not lines or not lines[0].startswith(b"PORT "):
            raise AssertionError(f"the SDK HTTP peer did not start: {lines!r}")
        yield f"http://127.0.0.1:{int(lines[0].split()[1])}/mcp"
    finally:
        process.terminate()
        try:
            process.wait(STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(STOP_GRACE_S)
        stdout.close()
