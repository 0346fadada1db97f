"""The official MCP conformance suite's SERVER scenarios against jsonrpc_threads.examples.conformance_server.

Used by ``make conformance-server`` (``python tests/conformance/server_suite.py``)
and by tests/test_mcp_server_conformance.py.  It starts the fixture (a real
child process on 127.0.0.1, its URL read from its stdout), runs the pinned
suite (0.2.0-alpha.12, on Node 22 with the loopback preload) once per
requirement set (2025-11-25, 2026-07-28) and once for the extension scenarios,
and reads each scenario's checks.json: a scenario passes when none of its
checks is a FAILURE and at least one is a SUCCESS, besides the checks every
scenario makes whatever the server does (``GENERIC_CHECKS``): a scenario whose
checks were all skipped has not passed (the suite's exit status does not tell).

``PENDING`` names the scenarios not passed yet, each with why; a pending
scenario that passes is reported too (take it off the list).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

REPO_ROOT = Path(__file__).resolve().parent.parent.parent
NODE_DIR = REPO_ROOT / "tests" / "node"
NODE22 = NODE_DIR / "node_modules" / "node" / "bin" / "node"
SUITE = NODE_DIR / "node_modules" / "conformance-next" / "dist" / "index.js"
LOOPBACK_PRELOAD = NODE_DIR / "loopback.cjs"
#: The runs: their name, and the suite's arguments that choose their scenarios.
RUNS: Tuple[Tuple[str, Tuple[str, ...]], ...] = (
    ("2025-11-25", ("--requirements", "2025-11-25")),
    ("2026-07-28", ("--requirements", "2026-07-28")),
    ("skills", ("--suite", "all", "--scenario", "sep-2640-skills-enumeration")),
    ("skills-manifest", ("--suite", "all", "--scenario", "sep-2640-skills-manifest")),
    ("skills-directory", ("--suite", "all", "--scenario", "sep-2640-skills-directory")),
)
#: Scenarios not passed yet, and why (issue 45 tracks them).
PENDING: Dict[str, str] = {
    "tasks-status-notifications": (
        "the pinned suite's scenario only skips (its subscriptions/listen rewrite is pending upstream);"
        " the server sends notifications/tasks to listeners naming the task in taskIds"
    ),
}
#: Checks every scenario runs whatever the server does: a success of these alone says nothing.
GENERIC_CHECKS = frozenset({"wire-schema-valid"})
#: How long the fixture may take to print its URL, and one run of the suite.
START_TIMEOUT_S = 30.0
RUN_TIMEOUT_S = 600.0


class Fixture:
    """The conformance fixture as a child process; its URL once it listens."""

    def __init__(self, python: str = sys.executable) -> None:
        self.process = subprocess.Popen(
            [python, "-m", "jsonrpc_threads.examples.conformance_server", "--port", "0"],
            cwd=REPO_ROOT,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()  # the fixture prints its URL first, flushed
        if not line.startswith("http://127.0.0.1:"):
            self.close()
            raise RuntimeError(f"the fixture did not start: {line!r}")
        self.url = line.strip()

    def close(self) -> str:
        """Stop it; returns what it wrote on stderr."""
        self.process.terminate()
        try:
            _, errors = self.process.communicate(timeout=START_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            _, errors = self.process.communicate()
        return errors or ""


def run_suite(node: str, url: str, arguments: Sequence[str], output_dir: Path) -> subprocess.CompletedProcess[str]:
    """One run of the suite against ``url``; checks go under ``output_dir``."""
    argv = [node, "--require", str(LOOPBACK_PRELOAD), str(SUITE), "server", "--url", url, *arguments]
    return subprocess.run(
        [*argv, "-o", str(output_dir)],
        cwd=REPO_ROOT,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        check=False,
    )


def verdicts(output_dir: Path) -> Dict[str, List[str]]:
    """Every scenario run under ``output_dir`` -> what is wrong with it (``[]``: it passed)."""
    found: Dict[str, List[str]] = {}
    for checks_file in sorted(output_dir.glob("*/checks.json")):
        scenario = json.loads((checks_file.parent / "checks.json").read_text())
        name = re.sub(r"-\d{4}-\d\d-\d\dT[\d-]+Z?$", "", checks_file.parent.name.split("server-", 1)[-1])
        problems = [
            f"{check['id']}: {check.get('errorMessage', '')}" for check in scenario if check["status"] == "FAILURE"
        ]
        if not any(check["status"] == "SUCCESS" and check["id"] not in GENERIC_CHECKS for check in scenario):
            problems.append("no check of the server succeeded (all skipped?)")
        found[name] = problems
    return found


def run_all(node: str, output_root: Path, python: str = sys.executable) -> Dict[str, Dict[str, List[str]]]:
    """Every run of ``RUNS`` against a fresh fixture: run name -> scenario -> problems."""
    fixture = Fixture(python)
    results: Dict[str, Dict[str, List[str]]] = {}
    try:
        for name, arguments in RUNS:
            out = output_root / name
            run_suite(node, fixture.url, arguments, out)
            results[name] = verdicts(out)
    finally:
        fixture.close()
    return results


def report(results: Dict[str, Dict[str, List[str]]]) -> Tuple[List[str], List[str]]:
    """``(failures, pending that passed)`` over every run."""
    failures: List[str] = []
    surprises: List[str] = []
    for run, scenarios in results.items():
        for scenario, problems in scenarios.items():
            if scenario in PENDING:
                if not problems:
                    surprises.append(f"{run}: {scenario} passes: take it off PENDING")
            elif problems:
                failures.append(f"{run}: {scenario}: " + "; ".join(problems))
    return failures, surprises


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``python tests/conformance/server_suite.py [OUTPUT_DIR]``: run everything, print a table."""
    args = list(sys.argv[1:] if argv is None else argv)
    output_root = Path(args[0]) if args else Path(tempfile.mkdtemp(prefix="conformance-server-"))
    results = run_all(str(NODE22), output_root)
    for run, scenarios in results.items():
        passed = sum(1 for name, problems in scenarios.items() if not problems)
        print(f"== {run}: {passed}/{len(scenarios)} scenarios passed")
        for scenario, problems in sorted(scenarios.items()):
            mark = "ok" if not problems else ("pending" if scenario in PENDING else "FAILED")
            print(f"   {mark:8} {scenario}" + ("" if not problems else f"  ({problems[0][:150]})"))
    failures, surprises = report(results)
    for line in failures + surprises:
        print(line)
    print(f"checks written under {output_root}")
    return 1 if failures or surprises else 0


if __name__ == "__main__":
    sys.exit(main())
