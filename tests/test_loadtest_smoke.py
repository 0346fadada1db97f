"""`make loadtest` in small: the example web app under gunicorn --preload --threads and under waitress.

A few seconds of load from a few clients, with its hung tools and its crash:
every check of benchmarks/loadtest.py must pass (deadlines kept, the crash
restarted, memory flat, nothing left after shutdown).  The full run is
`make loadtest`, outside the suite's time budget.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: Seconds one smoke run may take in all (start, load, shutdown).
RUN_TIMEOUT_S = 150.0

pytest.importorskip("flask")


@pytest.mark.timeout(RUN_TIMEOUT_S + 30)
@pytest.mark.parametrize("server", ["gunicorn", "waitress"])
def test_a_short_load_test_passes_every_check(server: str) -> None:
    if server == "gunicorn":
        pytest.importorskip("gunicorn")
    else:
        pytest.importorskip("waitress")
    argv = [sys.executable, "-m", "benchmarks.loadtest", "--server", server, "--duration", "4", "--clients", "6"]
    result = subprocess.run(argv, cwd=str(ROOT), capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    for check in (
        "no request waited past its deadline",
        "the crashed server was restarted",
        "nothing left after shutdown",
    ):
        assert f"PASS  {check}" in result.stdout, result.stdout
    assert "throughput" in result.stdout and "outcomes by kind" in result.stdout


@pytest.mark.timeout(RUN_TIMEOUT_S + 30)
def test_a_short_server_load_test_passes_every_check() -> None:
    """McpServer.wsgi_app() under gunicorn --preload (2 workers and a session era's own), both eras, every check."""
    pytest.importorskip("gunicorn")
    argv = [sys.executable, "-m", "benchmarks.loadtest", "--target", "server", "--duration", "4", "--clients", "6"]
    result = subprocess.run(argv, cwd=str(ROOT), capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    for check in (
        "no answer past its client's deadline",
        "no request lost",
        "every hung tool was given up at its deadline",
        "memory flat",
        "worker threads flat",
        "nothing left after shutdown",
    ):
        assert f"PASS  {check}" in result.stdout, result.stdout
    for era in ("stateless", "session"):  # both eras were driven, hung tools and crashes included
        assert re.search(rf"{era}\s+hang\s+timeout", result.stdout), result.stdout
        assert re.search(rf"{era}\s+crash \(internal_error\)\s+internal_error", result.stdout), result.stdout
        assert re.search(rf"{era}\s+progress\s+ok", result.stdout), result.stdout
