"""The official MCP conformance suite's server scenarios against McpServer (the conformance fixture).

What ``make conformance-server`` runs (tests/conformance/server_suite.py):
every server scenario of the 2025-11-25 and 2026-07-28 requirement sets and
the extension scenarios, against
``jsonrpc_threads.examples.conformance_server`` in a child process on
127.0.0.1.  A scenario passes when none of its checks fails and a check of the
server succeeded; ``PENDING`` lists what does not pass yet, and a pending
scenario that passes fails this test too (the list only shrinks).
"""

from __future__ import annotations

from pathlib import Path
from typing import Dict, List

import pytest

from .conformance.server_suite import PENDING, RUNS, report, run_all
from .peers.mcp_launch import NpmMissing, ensure_node_modules, node22_binary


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Dict[str, Dict[str, List[str]]]:
    try:
        problem = ensure_node_modules()
    except NpmMissing as exc:
        problem = str(exc)
    node = node22_binary()
    if problem is not None or node is None:
        pytest.skip(f"Node 22 and the conformance suite could not be installed: {problem}")
    return run_all(node, tmp_path_factory.mktemp("conformance-server"))


def test_every_run_ran_its_scenarios(results: Dict[str, Dict[str, List[str]]]) -> None:
    assert set(results) == {name for name, _ in RUNS}
    assert len(results["2025-11-25"]) >= 33
    assert len(results["2026-07-28"]) >= 50


@pytest.mark.parametrize("run", [name for name, _ in RUNS])
def test_every_scenario_of_the_run_passes(results: Dict[str, Dict[str, List[str]]], run: str) -> None:
    failures, surprises = report({run: results[run]})
    assert not failures, "\n".join(failures)
    assert not surprises, "\n".join(surprises)


def test_pending_lists_only_scenarios_that_exist(results: Dict[str, Dict[str, List[str]]]) -> None:
    seen = {scenario for scenarios in results.values() for scenario in scenarios}
    assert set(PENDING) <= seen


def test_the_fixture_is_written_with_the_public_api_only() -> None:
    source = (Path(__file__).resolve().parent.parent / "jsonrpc_threads" / "examples").glob("conformance_*.py")
    for path in source:
        text = path.read_text()
        assert "._" not in text.replace("__name__", "").replace("__main__", ""), path
