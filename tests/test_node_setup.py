"""Workers that need the npm peers at the same moment install them once (tests/peers/mcp_launch.py).

``pytest -n`` without ``make node-deps`` first: every worker whose test needs
tests/node/node_modules calls ``ensure_node_modules``; two ``npm ci`` runs
into one directory at once leave it broken.  Here two real processes call it
for a scratch directory, with an ``npm`` that reports each run on a pipe and
then waits to be let go: while the first run is held, the second process must
not start another (it waits for the lock, then finds the install done).
"""

from __future__ import annotations

import os
import select
import subprocess
import sys
from pathlib import Path
from typing import List

REPO = Path(__file__).resolve().parent.parent
#: How long the test waits for a run that should start, and for the processes to end.
WAIT_S = 30.0
#: How long the second process gets to show that it would run npm again (it waits for the lock instead).
SECOND_RUN_S = 2.0

FAKE_NPM = """\
import os, sys
node_dir = sys.argv[sys.argv.index("--prefix") + 1]
with open({log!r}, "a") as log:
    log.write(f"{{os.getpid()}}\\n")
with open({started!r}, "w") as started:
    started.write("started\\n")
with open({release!r}) as release:
    release.readline()  # held until the test lets this run go (or goes away: end of file)
os.makedirs(os.path.join(node_dir, "node_modules"), exist_ok=True)
"""

CALLER = """\
import sys
from pathlib import Path
from tests.peers.mcp_launch import ensure_node_modules
print(repr(ensure_node_modules(Path(sys.argv[1]), (), npm=sys.argv[2], lock=Path(sys.argv[3]))))
"""


def _lines(fd: int, timeout: float) -> str:
    """What arrives on ``fd`` within ``timeout`` seconds ("" for nothing)."""
    ready, _, _ = select.select([fd], [], [], timeout)
    return os.read(fd, 4096).decode() if ready else ""


def test_two_workers_run_npm_ci_once(tmp_path: Path) -> None:
    node_dir = tmp_path / "node"
    node_dir.mkdir()
    log, started, release = tmp_path / "npm-runs.log", tmp_path / "started", tmp_path / "release"
    os.mkfifo(started)
    os.mkfifo(release)
    npm = tmp_path / "npm"
    npm.write_text(f"#!{sys.executable}\n" + FAKE_NPM.format(log=str(log), started=str(started), release=str(release)))
    npm.chmod(0o755)
    # Both ends of each pipe stay open here, so a run's open never blocks and a read never sees its end.
    started_reader = os.open(started, os.O_RDONLY | os.O_NONBLOCK)
    started_writer = os.open(started, os.O_WRONLY | os.O_NONBLOCK)
    release_end = os.open(release, os.O_RDWR)
    callers: List[subprocess.Popen[str]] = []
    try:

        def start_caller() -> None:
            command = [sys.executable, "-c", CALLER, str(node_dir), str(npm), str(tmp_path / "npm-ci.lock")]
            callers.append(subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, text=True))

        start_caller()
        assert _lines(started_reader, WAIT_S) == "started\n"  # the first install is running, held
        start_caller()
        assert _lines(started_reader, SECOND_RUN_S) == "", "a second npm ci ran while the first was running"
        os.write(release_end, b"go\n")
        outputs = [caller.communicate(timeout=WAIT_S)[0] for caller in callers]
        assert outputs == ["None\n", "None\n"]
        assert len(log.read_text().splitlines()) == 1
        assert (node_dir / "node_modules" / ".installed").exists()
    finally:
        os.write(release_end, b"go\ngo\ngo\n")  # lets any run still held go
        for caller in callers:
            if caller.poll() is None:
                caller.kill()
            caller.communicate(timeout=WAIT_S)
        for fd in (started_reader, started_writer, release_end):
            os.close(fd)
