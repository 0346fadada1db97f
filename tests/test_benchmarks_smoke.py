"""The benchmark machinery works: every case runs (on tiny sizes) and the outputs are written.

No timing is asserted: these machines are shared and noisy; `make bench` measures.
"""

from __future__ import annotations

import importlib.util
import json
import threading
from pathlib import Path
from typing import Any, Dict, List

import pytest

from benchmarks import echo_server, run

#: The longest a caller thread of the yardstick may take.
WAIT_S = 30.0


def test_echo_server_answers_what_every_client_needs() -> None:
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18"}}
    assert echo_server.answer(initialize)["result"]["protocolVersion"] == "2025-06-18"
    ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
    assert echo_server.answer(ping) == {"jsonrpc": "2.0", "id": 2, "result": {}}
    echo = {"jsonrpc": "2.0", "id": "x", "method": "echo", "params": [1, "a"]}
    assert echo_server.answer(echo)["result"] == [1, "a"]
    assert echo_server.answer({"jsonrpc": "2.0", "method": "notifications/initialized"}) is None
    assert echo_server.answer({"jsonrpc": "2.0", "id": 3, "method": "nope"})["error"]["code"] == -32601
    batch = [{"jsonrpc": "2.0", "id": 4, "method": "ping"}, {"jsonrpc": "2.0", "method": "n"}]
    assert echo_server.answer(batch) == [{"jsonrpc": "2.0", "id": 4, "result": {}}]
    listed = echo_server.answer({"jsonrpc": "2.0", "id": 5, "method": "tools/list"})["result"]["tools"]
    assert [tool["name"] for tool in listed] == ["echo"]
    call = {"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "t"}}}
    assert echo_server.answer(call)["result"]["content"] == [{"type": "text", "text": "t"}]


#: The cases each group of ``benchmarks.run --only`` runs (10-12 and 4, 9 are "skipped" rows without their SDKs).
CASES_OF_GROUP = {
    "stdio": {"1", "2", "3"},
    "sdk": {"4"},
    "http": {"5"},
    "timers": {"6"},
    "startup": {"7"},
    "lsp": {"8"},
    "tools": {"9"},
    "acp": {"10"},
    "a2a": {"11"},
    "server": {"12"},
}


def test_every_group_is_run_below() -> None:
    from benchmarks.cases import GROUPS  # noqa: PLC0415  (the groups' table, not a fixture)

    assert set(CASES_OF_GROUP) == set(GROUPS)
    assert set().union(*CASES_OF_GROUP.values()) == {str(number) for number in range(1, 13)}


# One test per group, so the workers of the suite run them side by side (all of them took a minute in one).
@pytest.mark.timeout(240)
@pytest.mark.parametrize("group", sorted(CASES_OF_GROUP))
def test_quick_mode_runs_each_group_on_tiny_sizes(tmp_path: Path, group: str) -> None:
    chart = [] if group == "stdio" else ["--no-chart"]  # the chart is drawn once
    code = run.main(["--quick", "--scale", "0.01", "--only", group, *chart, "--out", str(tmp_path)])
    assert code == 0
    data = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    rows = data["rows"]
    assert not [r for r in rows if r["role"] == "error"]
    assert {r["case"].split()[0] for r in rows} == CASES_OF_GROUP[group]
    assert {r["sched"] for r in rows} >= {"os"}
    for row in rows:
        if row["unit"] == "us/call":
            assert row["min"] <= row["median"] <= row["max"]
    subjects = [r for r in rows if r["role"] in ("subject", "metric") and "target" in r and r["target"]]
    assert all(isinstance(r["met"], bool) for r in subjects)
    markdown = (tmp_path / "results.md").read_text(encoding="utf-8")
    assert "| Case |" in markdown and "Targets met:" in markdown
    if group == "stdio":
        assert subjects
        sequential = [r for r in rows if r["case"].startswith("1 ") and r["sched"] == "os"]
        assert [r["role"] for r in sequential] == ["baseline", "floor", "subject"]
        assert sequential[2]["vs"].endswith("x bounded")  # call() against the raw loop whose wait is bounded
    if group == "server" and importlib.util.find_spec("mcp") is not None:
        check_server_rows(rows)


def check_server_rows(rows: List[Dict[str, Any]]) -> None:
    """Case 12 compared every server: ours under gunicorn and waitress, the SDK's (and FastMCP), stdio, first answer."""
    by_case: Dict[str, List[Dict[str, Any]]] = {}
    for row in rows:
        by_case.setdefault(row["case"], []).append(row)
    stateless = by_case["12 MCP server, HTTP tools/call, stateless, 32 threads"]
    assert [r["role"] for r in stateless].count("subject") == 3  # gunicorn gthread (twice) and waitress
    assert any(r["variant"].startswith("SDK MCPServer") for r in stateless)
    for case in (
        "12 MCP server, HTTP tools/call, session, 32 threads",
        "12 MCP server, stdio tools/call, sequential",
        "12 MCP server, stdio tools/call, 16 threads",
        "12 MCP server, stdio first answer",
    ):
        assert [r["role"] for r in by_case[case]] == ["baseline", "subject"], case
    subjects = [r for r in rows if r["case"].startswith("12 ") and r["role"] == "subject"]
    assert subjects and all(isinstance(r["met"], bool) and "SDK" in r["vs"] for r in subjects)


@pytest.mark.parametrize("bounded", [False, True], ids=["blocking-read", "bounded-wait"])
def test_the_handoff_yardstick_answers_each_caller_with_its_own_result(bounded: bool) -> None:
    from benchmarks import handoff_yardstick  # noqa: PLC0415  (its module pins nothing until main())

    yardstick = handoff_yardstick.Yardstick(bounded=bounded)
    results: dict = {}
    try:

        def work(caller: int) -> None:
            results[caller] = [yardstick.call("echo", {"caller": caller, "i": i}) for i in range(50)]

        threads = [threading.Thread(target=work, args=(caller,)) for caller in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(WAIT_S)
    finally:
        yardstick.close()
    assert results == {caller: [{"caller": caller, "i": i} for i in range(50)] for caller in range(4)}


def test_the_bounded_raw_loop_reads_each_answer_for_its_own_request() -> None:
    from benchmarks.cases import BoundedRawPipe  # noqa: PLC0415

    pipe = BoundedRawPipe()
    try:
        first = pipe.sequential(200)
        pipe.stdin.write(b'{"jsonrpc":"2.0","id":"stray","method":"ping"}\n')  # an answer nobody asked for
        with pytest.raises(RuntimeError, match="got id stray"):
            pipe.sequential(1)
    finally:
        pipe.close()
    assert first.us_per_call > 0
    assert pipe.proc.returncode is not None  # the child is reaped


def test_the_yardsticks_handed_over_transport_offers_no_direct_read_and_still_answers() -> None:
    from benchmarks import handoff_yardstick  # noqa: PLC0415
    from benchmarks.cases import ECHO_COMMAND  # noqa: PLC0415
    from jsonrpc_threads import JsonRpcClient, StdioTransport  # noqa: PLC0415
    from jsonrpc_threads.transports.base import DrivesCalls  # noqa: PLC0415

    transport = handoff_yardstick.HandedOver(StdioTransport(ECHO_COMMAND))
    assert not isinstance(transport, DrivesCalls)
    client = JsonRpcClient(transport)
    try:
        assert [client.call("echo", {"i": i}, timeout=WAIT_S) for i in range(20)] == [{"i": i} for i in range(20)]
    finally:
        client.close()
