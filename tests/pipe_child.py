"""A child process driven over raw pipes, with line reads that time out (no client involved)."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import threading
from pathlib import Path
from typing import List, Optional, Sequence

REPO = Path(__file__).resolve().parent.parent
#: Bound on every wait for something that should happen at once.
WAIT_S = 10.0


class PipeChild:
    """Runs ``argv`` with the repository on ``PYTHONPATH``; stdout is read line by line, stderr in full."""

    def __init__(self, argv: Sequence[str], *, read_stdout: bool = True) -> None:
        self.proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=str(REPO),
            env=dict(os.environ, PYTHONPATH=str(REPO)),
        )
        self.lines: queue.Queue[Optional[bytes]] = queue.Queue()
        self.stderr_data = b""
        self.stdout_raw: List[bytes] = []
        self._threads = [threading.Thread(target=self._pump_stderr, name="test-child-stderr", daemon=True)]
        if read_stdout:
            self._threads.append(threading.Thread(target=self._pump_stdout, name="test-child-stdout", daemon=True))
        for thread in self._threads:
            thread.start()

    def _pump_stdout(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.stdout_raw.append(line)
            self.lines.put(line)
        self.lines.put(None)

    def _pump_stderr(self) -> None:
        assert self.proc.stderr is not None
        self.stderr_data = self.proc.stderr.read()

    def write(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def read(self) -> object:
        """The next line, parsed; fails the test when none comes within WAIT_S."""
        line = self.lines.get(timeout=WAIT_S)
        assert line is not None, "the child closed its stdout"
        return json.loads(line)

    def wait(self, timeout: float = WAIT_S) -> int:
        """Wait for the exit (stdin stays as it is) and collect stderr."""
        returncode = self.proc.wait(timeout)
        for thread in self._threads:
            thread.join(WAIT_S)
        return returncode

    def finish(self, timeout: float = WAIT_S) -> int:
        """Close stdin, wait for the exit, and collect stderr."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        return self.wait(timeout)

    @property
    def stderr(self) -> str:
        return self.stderr_data.decode("utf-8", "replace")

    def cleanup(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(WAIT_S)
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None:
                try:
                    stream.close()
                except OSError:
                    pass
        for thread in self._threads:
            thread.join(WAIT_S)
