"""The official MCP client conformance suite (npm ``@modelcontextprotocol/conformance``) against McpClient.

Runs what ``make conformance`` runs, one scenario at a time, for the two
pinned versions of the suite: 0.1.16 (the 2025-11-25 scenarios) and
0.2.0-alpha.12 (installed as the npm alias ``conformance-next``: both eras,
2025-11-25 and 2026-07-28, and the extensions).  The suite (on the Node 22
that ``npm ci --prefix tests/node`` installs, with the loopback preload so its
scenario servers listen on 127.0.0.1 only) plays the server and starts
tests/conformance/client.py with the server's URL.  A scenario passes when
the suite exits 0 and its checks.json holds successes and no failure or
warning.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List

import pytest

from .peers.mcp_launch import LOOPBACK_PRELOAD, NODE_DIR, NpmMissing, ensure_node_modules, node22_binary

REPO_ROOT = Path(__file__).resolve().parent.parent
CONFORMANCE_DIR = Path(__file__).resolve().parent / "conformance"
#: Each pinned suite: its version -> (its entry point, the file listing its client scenarios).
#: (The Makefile's `conformance` target reads the same files.)
SUITES = {
    "0.1.16": (NODE_DIR / "node_modules" / "@modelcontextprotocol" / "conformance", "scenarios.txt"),
    "0.2.0-alpha.12": (NODE_DIR / "node_modules" / "conformance-next", "scenarios-next.txt"),
}
CLIENT = "tests/conformance/client.py"
#: Every (suite, scenario) pair: every client scenario of both suites.
SCENARIOS = [
    (version, scenario)
    for version, (_, listing) in SUITES.items()
    for scenario in (CONFORMANCE_DIR / listing).read_text().split()
]
#: How long one scenario may take in all (the suite gives the client 30 s).
SCENARIO_TIMEOUT_S = 90.0


@pytest.fixture(scope="module")
def node22() -> str:
    try:
        problem = ensure_node_modules()
    except NpmMissing as exc:
        problem = str(exc)
    if problem is not None:
        pytest.skip(f"Node 22 and the conformance suite could not be installed: {problem}")
    binary = node22_binary()
    if binary is None:
        pytest.skip("Node 22 could not be installed (npm package node@22 gave no binary)")
    version = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=30, check=False)
    if not version.stdout.startswith("v22."):
        pytest.skip(f"the installed node is {version.stdout.strip() or version.stderr.strip()!r}, not Node 22")
    return binary


def conformance_command(node: str, version: str, scenario: str, output_dir: Path) -> List[str]:
    """The argv ``make conformance`` runs for one scenario of one suite (with this interpreter)."""
    package, _ = SUITES[version]
    return [
        node,
        "--require",
        str(LOOPBACK_PRELOAD),
        str(package / "dist" / "index.js"),
        "client",
        "--command",
        f"{sys.executable} {CLIENT}",
        "--scenario",
        scenario,
        "-o",
        str(output_dir),
    ]


def test_the_suites_are_the_pinned_versions() -> None:
    for version, (package, _) in SUITES.items():
        metadata = json.loads((package / "package.json").read_text()) if package.exists() else {}
        if metadata:
            assert metadata["version"] == version
    assert len([pair for pair in SCENARIOS if pair[0] == "0.1.16"]) == 26
    assert len([pair for pair in SCENARIOS if pair[0] == "0.2.0-alpha.12"]) == 48


@pytest.mark.parametrize(("version", "scenario"), SCENARIOS, ids=[f"{v}:{s}" for v, s in SCENARIOS])
def test_conformance_scenario(version: str, scenario: str, node22: str, tmp_path: Path) -> None:
    done = subprocess.run(
        conformance_command(node22, version, scenario, tmp_path),
        cwd=REPO_ROOT,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=SCENARIO_TIMEOUT_S,
        check=False,
    )
    output = f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    results = list(tmp_path.glob(f"{scenario}-*/checks.json"))
    assert len(results) == 1, output
    checks: List[Dict[str, Any]] = json.loads(results[0].read_text())
    client_stderr = (results[0].parent / "stderr.txt").read_text()
    problems = [check for check in checks if check["status"] in ("FAILURE", "WARNING")]
    assert not problems, json.dumps(problems, indent=2) + "\nclient stderr:\n" + client_stderr
    assert any(check["status"] == "SUCCESS" for check in checks), json.dumps(checks, indent=2)
    assert done.returncode == 0, output
    assert "OVERALL: PASSED" in done.stderr, output
    # The scenario servers listened on 127.0.0.1 only.
    assert "loopback: listening on 127.0.0.1:" in done.stderr, output
