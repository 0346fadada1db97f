"""Start an HTTP MCP server as a child process and learn its URL from what it prints.

Not a peer itself: the helper the MCP tests use to run the real servers
(``mcp_sdk_server.py --http``, the npm reference server) on 127.0.0.1.  The
child's stdout and stderr are one pipe, drained line by line by a thread (so a
chatty server never blocks on a full pipe) into a queue the test waits on with
a timeout; ``ServerProcess.close`` ends the child, the thread and the pipe.
"""

from __future__ import annotations

import collections
import os
import queue
import re
import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import Deque, List, Mapping, Optional, Pattern, Sequence, Union

import psutil

from ..locks import exclusive

#: How long a child may take to start listening.
START_TIMEOUT_S = 20.0
#: How long the child gets to exit after SIGTERM, then after SIGKILL.
STOP_GRACE_S = 5.0

TESTS_DIR = Path(__file__).resolve().parent.parent
NODE_DIR = TESTS_DIR / "node"
LOOPBACK_PRELOAD = NODE_DIR / "loopback.cjs"
EVERYTHING_JS = NODE_DIR / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
#: What the tests need of tests/node/node_modules (an install that lacks one is redone).
REQUIRED_PACKAGES = (
    EVERYTHING_JS,
    NODE_DIR / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js",
    NODE_DIR / "node_modules" / "conformance-next" / "dist" / "index.js",
)


class ServerProcess:
    """A child process whose output is drained into a queue of lines.  A context manager."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        env: Optional[Mapping[str, str]] = None,
        cwd: Optional[Union[str, Path]] = None,
        name: str = "server",
    ) -> None:
        self.argv = list(argv)
        self.lines: queue.Queue[Optional[str]] = queue.Queue()
        self.tail: Deque[str] = collections.deque(maxlen=200)
        self.proc = subprocess.Popen(
            self.argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=dict(env) if env is not None else None,
            cwd=cwd,
        )
        self._thread = threading.Thread(target=self._drain, name=f"test-drain[{name}]", daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            line = raw.decode("utf-8", errors="replace").rstrip("\n")
            self.tail.append(line)
            self.lines.put(line)
        self.lines.put(None)

    def wait_for(self, pattern: Union[str, Pattern[str]], timeout: float = START_TIMEOUT_S) -> re.Match[str]:
        """The first line (from now on) that matches ``pattern``.

        Raises:
            AssertionError: the child exited, or ``timeout`` passed, first.
        """
        regex = re.compile(pattern) if isinstance(pattern, str) else pattern
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            try:
                line = self.lines.get(timeout=max(0.0, remaining))
            except queue.Empty:
                raise AssertionError(f"{self.argv[:3]}: no line matching {regex.pattern!r}: {self.output()}") from None
            if line is None:
                self.proc.wait(STOP_GRACE_S)
                raise AssertionError(f"{self.argv[:3]} exited ({self.proc.returncode}) first: {self.output()}")
            match = regex.search(line)
            if match:
                return match

    def output(self) -> str:
        return "\n".join(self.tail)

    def listening_addresses(self) -> List[str]:
        """``ip:port`` of every TCP socket the child listens on."""
        connections = psutil.Process(self.proc.pid).net_connections(kind="inet")
        return sorted(f"{c.laddr.ip}:{c.laddr.port}" for c in connections if c.status == psutil.CONN_LISTEN)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(STOP_GRACE_S)
        self._thread.join(STOP_GRACE_S)
        if self.proc.stdout is not None:
            self.proc.stdout.close()

    def __enter__(self) -> ServerProcess:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def node_env(**extra: str) -> dict:  # type: ignore[type-arg]
    """The environment for a node child: ours, plus ``extra``."""
    env = dict(os.environ)
    env.update(extra)
    return env


#: Seconds ``npm ci`` may take to install tests/node (the reference server, the conformance suite, Node 22).
NPM_INSTALL_TIMEOUT_S = 600.0


def node_binary() -> Optional[str]:
    """The ``node`` to run the reference server with: the one on PATH, else the one npm installed."""
    found = shutil.which("node")
    if found:
        return found
    installed = NODE_DIR / "node_modules" / "node" / "bin" / "node"
    return str(installed) if installed.exists() else None


def node22_binary() -> Optional[str]:
    """The Node 22 that ``npm ci --prefix tests/node`` installed (the conformance suite needs it)."""
    installed = NODE_DIR / "node_modules" / "node" / "bin" / "node"
    return str(installed) if installed.exists() else None


class NpmMissing(Exception):
    """npm is not installed, and tests/node/node_modules is not there either."""


def ensure_node_modules(
    node_dir: Path = NODE_DIR,
    required: Sequence[Path] = REQUIRED_PACKAGES,
    *,
    npm: Optional[str] = None,
    lock: Optional[Path] = None,
) -> Optional[str]:
    """Install ``node_dir``/node_modules (as ``make node-deps`` does) if it is missing.

    Workers of one run (and runs side by side) install it one at a time: the
    first takes the lock beside it (``build/npm-ci.lock`` for tests/node) and
    runs ``npm ci``; the others wait for the lock, then find it installed.

    Args:
        node_dir: the directory holding package.json and package-lock.json.
        required: the files an install must have made (one missing: install again).
        npm: the npm to run (``None``: the one on ``PATH``).
        lock: the lock file (``None``: build/npm-ci.lock beside tests/).

    Returns:
        None when everything is there, else why it could not be installed.

    Raises:
        NpmMissing: when npm is needed and not installed.
    """
    stamp = node_dir / "node_modules" / ".installed"
    if stamp.exists() and all(path.exists() for path in required):
        return None
    npm = npm if npm is not None else shutil.which("npm")
    if npm is None:
        raise NpmMissing(f"npm is not installed, and {node_dir}/node_modules was not installed before")
    lock = lock if lock is not None else TESTS_DIR.parent / "build" / "npm-ci.lock"
    lock.parent.mkdir(exist_ok=True)
    with exclusive(lock, timeout=NPM_INSTALL_TIMEOUT_S, what=f"npm ci --prefix {node_dir}"):
        if stamp.exists() and all(path.exists() for path in required):
            return None
        return _npm_ci(npm, node_dir, stamp)


def _npm_ci(npm: str, node_dir: Path, stamp: Path) -> Optional[str]:
    try:
        done = subprocess.run(
            [npm, "ci", "--prefix", str(node_dir), "--no-audit", "--no-fund"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=NPM_INSTALL_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return f"npm ci --prefix {node_dir} did not finish in {NPM_INSTALL_TIMEOUT_S:.0f}s"
    if done.returncode != 0:
        return f"npm ci --prefix {node_dir} failed: {done.stderr.decode(errors='replace')[-2000:]}"
    stamp.touch()
    return None
