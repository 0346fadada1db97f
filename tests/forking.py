"""Running a fork test's script in a fresh interpreter (the test process itself never forks).

``run_script`` gives the script what every fork test needs first (the
warning filter for fork() with threads alive, ``PEER``: the argv of the stdio
test peer, and ``alive(pid)``), then the test module's own prelude and the
test's body; it returns the script's stdout lines and fails the test when the
script exits non-zero, with its output.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from typing import List

from .conftest import peer_command

_COMMON = f"""
import os, sys, threading, time, warnings
warnings.simplefilter("ignore", DeprecationWarning)  # 3.12+: fork() with threads alive
PEER = {peer_command("stdio_peer")!r}

def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
"""


def run_script(prelude: str, body: str, timeout: float) -> List[str]:
    """Run the common part, ``prelude`` and ``body`` (each dedented) in a new interpreter, within ``timeout``."""
    script = _COMMON + textwrap.dedent(prelude) + textwrap.dedent(body)
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=timeout, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout.split("\n")
