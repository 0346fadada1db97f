"""Run the benchmarks and print one table; write results.md, results.json and results.png.

Usage::

    python -m benchmarks.run            # everything (make bench): a few minutes
    python -m benchmarks.run --quick    # reduced sizes (make bench-quick): well under a minute

Options: ``--out DIR`` (default ``benchmarks/results``),
``--only stdio,sdk,http,timers,startup,lsp,tools,acp,a2a,server``, ``--no-pin`` (skip the
runs pinned to one CPU), ``--no-chart``, ``--scale F`` (multiply every size by F: the smoke test runs with a tiny one).

Each group of cases runs in a fresh worker process (``--worker GROUP``), so one
case's threads and garbage do not weigh on the next, and so the pinned runs can
pin the worker and, through inheritance, the server it starts to one CPU
(``os.sched_setaffinity``, what ``taskset -c N`` does).  Inside a worker each
case interleaves its variants round by round (see :mod:`benchmarks.cases`).
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = Path(__file__).resolve().parent / "results"

SIZES: Dict[str, Dict[str, Any]] = {
    "full": {
        "rounds": 9,
        "seq": 3000,
        "pipe": 5000,
        "threads_total": 3000,
        "sdk_seq": 1000,
        "sdk_conc": 1600,
        "http_seq": 600,
        "http_conc": 1600,
        "timers": 100_000,
        "timer_timeout": 3.0,
        "startup_runs": 5,
        "lsp_seq": 300,
        "lsp_cold_runs": 2,
        "tools_total": 3200,
        "acp_total": 800,
        "a2a_total": 800,
        "server_http_total": 960,
        "server_session_total": 480,
        "server_stdio_seq": 1000,
        "server_stdio_total": 1600,
        "server_first_runs": 2,
    },
    "quick": {
        "rounds": 3,
        "seq": 800,
        "pipe": 1500,
        "threads_total": 640,
        "sdk_seq": 200,
        "sdk_conc": 320,
        "http_seq": 60,
        "http_conc": 192,
        "timers": 100_000,
        "timer_timeout": 2.0,
        "startup_runs": 3,
        "lsp_seq": 60,
        "lsp_cold_runs": 1,
        "tools_total": 960,
        "acp_total": 160,
        "a2a_total": 160,
        "server_http_total": 320,
        "server_session_total": 160,
        "server_stdio_seq": 200,
        "server_stdio_total": 320,
        "server_first_runs": 1,
    },
}
#: Sizes that --scale never takes below these.
MINIMUM_SIZES = {"rounds": 1, "timers": 64, "startup_runs": 1, "lsp_cold_runs": 1, "server_first_runs": 1}
#: Longest a worker may run before it is stopped (and reported as failed).
WORKER_TIMEOUT_S = {"full": 900.0, "quick": 240.0}

#: (group, scheduling) in the order they run.
JOBS: Tuple[Tuple[str, str], ...] = (
    ("stdio", "os"),
    ("stdio", "pinned"),
    ("sdk", "os"),
    ("sdk", "pinned"),
    ("http", "os"),
    ("timers", "os"),
    ("startup", "os"),
    ("lsp", "os"),
    ("tools", "os"),
    ("tools", "pinned"),
    ("acp", "os"),
    ("a2a", "os"),
    ("server", "os"),
)

# Targets of issue 15 (tighter than issue 6's: 1.15x / 1.6x, 2x, 1.5x, <= 1.0x requests, 2 KB).
TARGETS = {
    "seq_os": 1.10,
    "seq_pinned": 1.35,
    "pipelined_os": 2.0,
    "pipelined_pinned": 1.5,
    "threads16_os": 1.8,
    "threads16_pinned": 1.5,
    "sdk": 2.0,
    "sdk_pinned": 5.0,
    "http_seq_floor": 2.0,
    "timer_threads": 1,
    "timer_bytes": 500,
    "timer_late_ms": 50.0,
    # Issue 14: start-up.
    "cold_start": 1.6,
    "cold_start_mib": 20.0,
    "first_answer": 1.3,
    # Issue 13: language servers, against multilspy's SyncLanguageServer on the same server.
    "lsp_vs_multilspy": 1.0,
    # Issue 16: tool calls from 16 and 64 threads, against the SDK used from threads.
    "tools_throughput": 3.0,
    # Issue 45: McpServer against the SDK's MCPServer and FastMCP (throughput over HTTP and stdio).
    "server_http": 2.0,
    "server_stdio": 3.0,
}


def scaled_sizes(mode: str, scale: float) -> Dict[str, Any]:
    sizes = dict(SIZES[mode])
    if scale != 1.0:
        for key, value in sizes.items():
            if isinstance(value, int) and key != "rounds":
                sizes[key] = max(MINIMUM_SIZES.get(key, 16), int(value * scale))
        if scale < 1.0:
            sizes["rounds"] = max(MINIMUM_SIZES["rounds"], min(sizes["rounds"], 2))
            sizes["timer_timeout"] = 0.5
    return sizes


# -- worker ------------------------------------------------------------------------------------


def run_worker(group: str, sched: str, sizes: Dict[str, Any], result_path: str) -> int:
    if sched == "pinned":
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    from benchmarks.cases import GROUPS  # noqa: PLC0415  (after pinning: it starts nothing, but keep it first)

    rows = GROUPS[group](sizes, sched)
    with open(result_path, "w", encoding="utf-8") as handle:
        json.dump(rows, handle)
    return 0


def spawn_worker(group: str, sched: str, sizes: Dict[str, Any], timeout: float) -> List[Dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="jsonrpc-bench-") as tmp:
        result = os.path.join(tmp, "rows.json")
        command = [
            sys.executable,
            "-m",
            "benchmarks.run",
            "--worker",
            group,
            "--sched",
            sched,
            "--sizes",
            json.dumps(sizes),
            "--result",
            result,
        ]
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
        try:
            proc = subprocess.run(command, cwd=str(ROOT), env=env, capture_output=True, timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            return [_error_row(group, sched, f"worker still running after {timeout:.0f}s: stopped")]
        if proc.returncode != 0 or not os.path.exists(result):
            tail = proc.stderr.decode("utf-8", "replace").strip().splitlines()[-12:]
            return [_error_row(group, sched, f"worker failed ({proc.returncode}): " + " | ".join(tail))]
        with open(result, encoding="utf-8") as handle:
            rows: List[Dict[str, Any]] = json.load(handle)
        return rows


def _error_row(group: str, sched: str, message: str) -> Dict[str, Any]:
    return {"case": f"{group} (error)", "sched": sched, "variant": message, "role": "error", "unit": "", "median": None}


# -- comparisons -------------------------------------------------------------------------------


def annotate(rows: List[Dict[str, Any]]) -> None:
    """Add to each subject row its ratio to the baseline, the target and whether it is met."""
    by_case: Dict[Tuple[str, str], List[Dict[str, Any]]] = {}
    for row in rows:
        by_case.setdefault((row["case"], row["sched"]), []).append(row)
    for (case, sched), group in by_case.items():
        baseline = next((r for r in group if r["role"] == "baseline"), None)
        floor = next((r for r in group if r["role"] == "floor"), None)
        for row in group:
            if row["role"] == "metric":
                _annotate_metric(row)
                continue
            if row["role"] != "subject" or baseline is None or not baseline.get("median") or not row.get("median"):
                continue
            ratio = row["median"] / baseline["median"]
            if case.startswith("1 "):
                limit = TARGETS["seq_pinned"] if sched == "pinned" else TARGETS["seq_os"]
                text = f"{ratio:.2f}x raw" + _against_floor(row, floor, "bounded")
                _set(row, ratio, text, f"<= {limit}x", ratio <= limit)
            elif case.startswith("2 "):
                limit = TARGETS["pipelined_pinned"] if sched == "pinned" else TARGETS["pipelined_os"]
                _set(row, ratio, f"{ratio:.2f}x raw", f"<= {limit}x", ratio <= limit)
            elif case.startswith("3 "):
                gain = 1.0 / ratio
                is16 = row["variant"].startswith("16 ")
                limit = TARGETS["threads16_pinned"] if sched == "pinned" else TARGETS["threads16_os"]
                _set(
                    row,
                    gain,
                    f"{gain:.2f}x 1-thread throughput",
                    f">= {limit}x" if is16 else "",
                    gain >= limit if is16 else None,
                )
            elif case.startswith("4 "):
                speedup = 1.0 / ratio
                text = f"{speedup:.2f}x faster than SDK" + _against_floor(row, floor, "raw")
                limit = TARGETS["sdk_pinned"] if sched == "pinned" else TARGETS["sdk"]
                _set(row, speedup, text, f">= {limit:g}x faster", speedup >= limit)
            elif case.startswith("9 "):
                gain = 1.0 / ratio
                ours_p99, sdk_p99 = row.get("p99_us"), baseline.get("p99_us")
                text = f"{gain:.2f}x SDK throughput"
                lower = ours_p99 is not None and sdk_p99 is not None and ours_p99 < sdk_p99
                if ours_p99 is not None and sdk_p99 is not None:
                    text += f"; p99 {ours_p99 / 1000:.1f} vs {sdk_p99 / 1000:.1f} ms"
                limit = TARGETS["tools_throughput"]
                _set(row, gain, text, f">= {limit:g}x, lower p99", gain >= limit and lower)
            elif case.startswith(("10 ", "11 ")):
                gain = 1.0 / ratio
                text = f"{gain:.2f}x SDK throughput"
                ours_p99, sdk_p99 = row.get("p99_us"), baseline.get("p99_us")
                if ours_p99 is not None and sdk_p99 is not None:
                    text += f"; p99 {ours_p99 / 1000:.1f} vs {sdk_p99 / 1000:.1f} ms"
                text += _against_floor(row, floor, "the bare floor")
                _set(row, gain, text, "", None)  # measured, no target (issue 38)
            elif case.startswith("12 "):
                _annotate_server(row, [r for r in group if r["role"] == "baseline"], case)
            elif case.startswith("7 "):
                limit = TARGETS["cold_start"] if "cold start" in case else TARGETS["first_answer"]
                _set(row, ratio, f"{ratio:.2f}x the bare baseline", f"<= {limit}x", ratio <= limit)
            elif case.startswith("8 "):
                if baseline["variant"].startswith("multilspy"):
                    speedup = 1.0 / ratio
                    text = f"{speedup:.2f}x faster than multilspy" + _against_floor(row, floor, "bare")
                    limit = TARGETS["lsp_vs_multilspy"]
                    if "close included" in case:  # a policy, not a speed: see benchmarks/README.md
                        _set(row, speedup, text, "", None)
                    else:
                        _set(row, speedup, text, f">= {limit}x faster", speedup >= limit)
                else:
                    _set(row, ratio, f"{ratio:.2f}x bare (multilspy not installed)", "", None)
            elif case.startswith("5 "):
                text = f"{ratio:.2f}x requests"
                to_floor = None
                if floor is not None and floor.get("median"):
                    to_floor = row["median"] / floor["median"]
                    text += f"; {to_floor:.2f}x http.client"
                sequential = case.endswith("sequential") and to_floor is not None
                limit = TARGETS["http_seq_floor"]
                _set(
                    row,
                    to_floor if sequential and to_floor is not None else ratio,
                    text,
                    f"<= {limit}x http.client" if sequential else "",
                    to_floor <= limit if sequential and to_floor is not None else None,
                )


def _annotate_server(row: Dict[str, Any], baselines: List[Dict[str, Any]], case: str) -> None:
    """Case 12: the server against each baseline (the SDK's, FastMCP's); the goal must hold against all."""
    if "first answer" in case:
        speedups = [b["median"] / row["median"] for b in baselines if b.get("median")]
        text = "; ".join(f"{s:.2f}x faster than {_short(b)}" for s, b in zip(speedups, baselines))
        _set(row, min(speedups), text, "faster", all(s > 1.0 for s in speedups))
        return
    gains = [b["median"] / row["median"] for b in baselines if b.get("median")]
    parts, lower = [], True
    for gain, baseline in zip(gains, baselines):
        part = f"{gain:.2f}x {_short(baseline)}"
        ours_p99, their_p99 = row.get("p99_us"), baseline.get("p99_us")
        if ours_p99 is not None and their_p99 is not None:
            part += f" (p99 {ours_p99 / 1000:.1f} vs {their_p99 / 1000:.1f} ms)"
            lower = lower and ours_p99 < their_p99
        parts.append(part)
    if "HTTP" in case:
        limit = TARGETS["server_http"]
        _set(row, min(gains), "; ".join(parts), f">= {limit:g}x, lower p99", min(gains) >= limit and lower)
    else:
        limit = TARGETS["server_stdio"]
        _set(row, min(gains), "; ".join(parts), f">= {limit:g}x", min(gains) >= limit)


def _short(row: Dict[str, Any]) -> str:
    return "FastMCP" if row["variant"].startswith("FastMCP") else "SDK"


def _against_floor(row: Dict[str, Any], floor: Optional[Dict[str, Any]], name: str) -> str:
    """``"; 1.23x <name>"``: the row against its case's floor, or ``""`` when the case has none measured."""
    if floor is None or not floor.get("median"):
        return ""
    return f"; {row['median'] / floor['median']:.2f}x {name}"


def _annotate_metric(row: Dict[str, Any]) -> None:
    variant, value = row["variant"], row.get("median")
    if value is None:
        return
    if variant.startswith("threads added"):
        names = ", ".join(row.get("threads", [])) or "none"
        _set(row, value, names, f"<= {TARGETS['timer_threads']} (the timer)", value <= TARGETS["timer_threads"])
    elif variant.startswith("memory"):
        _set(row, value, "", f"< {TARGETS['timer_bytes']} B", value < TARGETS["timer_bytes"])
    elif variant.startswith("lateness"):
        text = f"max {row['max_late_ms']:.1f} ms, p99 {row['p99_late_ms']:.1f} ms over all"
        _set(row, value, text, f"< {TARGETS['timer_late_ms']:.0f} ms", value < TARGETS["timer_late_ms"])
    elif variant.startswith("peak memory"):
        limit = TARGETS["cold_start_mib"]
        _set(row, value, f"max {row['max_mib']:.1f} MiB", f"<= {limit:.0f} MiB", value <= limit)
    elif variant.startswith("time to register"):
        _set(row, value, f"{row['total_s']:.2f} s in all; {row['pending_at_end']:,} pending at the end", "", None)


def _set(row: Dict[str, Any], ratio: float, text: str, target: str, met: Optional[bool]) -> None:
    row["ratio"] = ratio
    row["vs"] = text
    row["target"] = target
    row["met"] = met


# -- output ------------------------------------------------------------------------------------

COLUMNS = (
    "Case",
    "Sched",
    "Variant",
    "Median",
    "Min",
    "Max",
    "Unit",
    "p50 us",
    "p99 us",
    "vs baseline",
    "Target",
    "Met",
)


def _fmt(value: Any, digits: int = 1) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        if math.isnan(value):
            return ""
        if abs(value) >= 1000:
            return f"{value:,.0f}"
        return f"{value:.{digits}f}"
    return str(value)


def table_rows(rows: Sequence[Dict[str, Any]]) -> List[List[str]]:
    out = []
    for row in rows:
        met = row.get("met")
        out.append(
            [
                row["case"],
                row["sched"],
                row["variant"],
                _fmt(row.get("median")),
                _fmt(row.get("min")),
                _fmt(row.get("max")),
                row.get("unit", ""),
                _fmt(row.get("p50_us")),
                _fmt(row.get("p99_us")),
                row.get("vs", ""),
                row.get("target", ""),
                "" if met is None else ("yes" if met else "NO"),
            ]
        )
    return out


def format_text(rows: Sequence[Dict[str, Any]]) -> str:
    body = table_rows(rows)
    widths = [
        max(len(COLUMNS[i]), *(len(r[i]) for r in body)) if body else len(COLUMNS[i]) for i in range(len(COLUMNS))
    ]
    numeric = {3, 4, 5, 7, 8}
    lines = []

    def render(cells: Sequence[str]) -> str:
        return "  ".join(c.rjust(widths[i]) if i in numeric else c.ljust(widths[i]) for i, c in enumerate(cells))

    lines.append(render(COLUMNS))
    lines.append("  ".join("-" * w for w in widths))
    previous = None
    for cells, row in zip(body, rows):
        key = (row["case"], row["sched"])
        if previous is not None and key != previous:
            lines.append("")
        previous = key
        lines.append(render(cells).rstrip())
    return "\n".join(lines)


def format_markdown(rows: Sequence[Dict[str, Any]], meta: Dict[str, Any]) -> str:
    machine = meta["machine"]
    lines = [
        "# jsonrpc_threads benchmarks",
        "",
        f"{meta['date']}, mode `{meta['mode']}`: {machine['nproc']} CPUs ({machine['cpu_model']}), "
        f"Python {machine['python']}, {machine['platform']}; orjson installed: {machine['orjson']}.",
        "",
        "Times are wall-clock microseconds per call: median, min and max over the rounds, each round "
        "running every variant of the case in turn. `pinned`: the benchmark and the server it talks to "
        "share one CPU. Sizes: `" + json.dumps(meta["sizes"]) + "`.",
        "",
        "| " + " | ".join(COLUMNS) + " |",
        "|" + "|".join("---:" if i in (3, 4, 5, 7, 8) else "---" for i in range(len(COLUMNS))) + "|",
    ]
    for cells in table_rows(rows):
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    lines.append("")
    lines.append(f"Targets met: {meta['met']} of {meta['targets']}.")
    return "\n".join(lines) + "\n"


def write_chart(rows: Sequence[Dict[str, Any]], path: Path, meta: Dict[str, Any]) -> Optional[str]:
    try:
        import matplotlib  # type: ignore[import-not-found,unused-ignore]  # noqa: PLC0415  (optional: the bench extra)

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # type: ignore[import-not-found,unused-ignore]  # noqa: PLC0415
    except ImportError:
        return "matplotlib is not installed (pip install -e '.[bench]'): no chart"
    timed = [r for r in rows if r.get("unit") == "us/call" and r.get("median")]
    threads = [r for r in rows if r["case"].startswith("3 ") and r.get("median")]
    height = max(4.0, 0.28 * len(timed) + 1.5)
    fig, (left, right) = plt.subplots(
        1, 2, figsize=(16, height), gridspec_kw={"width_ratios": [3, 2]}, constrained_layout=True
    )
    colours = {"subject": "#1f77b4", "baseline": "#ff7f0e", "floor": "#7f7f7f"}
    labels = [f"{r['case']} [{r['sched']}] {r['variant']}" for r in timed]
    medians = [r["median"] for r in timed]
    errors = [[r["median"] - r["min"] for r in timed], [r["max"] - r["median"] for r in timed]]
    positions = list(range(len(timed)))[::-1]
    left.barh(positions, medians, xerr=errors, color=[colours.get(r["role"], "#2ca02c") for r in timed], capsize=2)
    left.set_yticks(positions)
    left.set_yticklabels(labels, fontsize=7)
    left.set_xscale("log")
    left.set_xlabel("microseconds per call (median; whiskers: min..max), log scale")
    left.set_title("Latency per call: ours (blue), baseline (orange), floor (grey)")
    for pos, value in zip(positions, medians):
        left.text(value, pos, f" {value:.0f}", va="center", fontsize=6)
    for sched, style in (("os", "-o"), ("pinned", "--s")):
        points = [r for r in threads if r["sched"] == sched]
        if not points:
            continue
        counts = [int(r["variant"].split()[0]) for r in points]
        right.plot(counts, [r["calls_per_s"] for r in points], style, label=f"throughput ({sched})")
    right.set_xscale("log", base=2)
    right.set_xlabel("caller threads (case 3, stdio)")
    right.set_ylabel("calls per second")
    right.set_title("Throughput and latency by caller threads")
    twin = right.twinx()
    for sched, style in (("os", ":"), ("pinned", "-.")):
        points = [r for r in threads if r["sched"] == sched and r.get("p99_us")]
        if not points:
            continue
        counts = [int(r["variant"].split()[0]) for r in points]
        twin.plot(counts, [r["p50_us"] for r in points], style + "^", color="#2ca02c", label=f"p50 us ({sched})")
        twin.plot(counts, [r["p99_us"] for r in points], style + "v", color="#d62728", label=f"p99 us ({sched})")
    twin.set_ylabel("latency, microseconds")
    handles = right.get_legend_handles_labels()
    twin_handles = twin.get_legend_handles_labels()
    if handles[0] or twin_handles[0]:
        right.legend(handles[0] + twin_handles[0], handles[1] + twin_handles[1], fontsize=7, loc="upper left")
    machine = meta["machine"]
    fig.suptitle(f"jsonrpc_threads benchmarks ({meta['mode']}): {machine['nproc']} CPUs, {machine['cpu_model']}")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return None


def draw_chart(out: Path) -> Optional[str]:
    """Draw results.png from results.json in a child process (matplotlib keeps font files open)."""
    command = [sys.executable, "-m", "benchmarks.run", "--draw", str(out / "results.json"), "--out", str(out)]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env.setdefault("MPLBACKEND", "Agg")
    proc = subprocess.run(command, cwd=str(ROOT), env=env, capture_output=True, timeout=120, check=False)
    if proc.returncode == 0:
        return None
    return proc.stderr.decode("utf-8", "replace").strip().splitlines()[-1:][0] if proc.stderr else "chart failed"


# -- main --------------------------------------------------------------------------------------


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.run", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="reduced sizes, well under a minute")
    parser.add_argument("--out", default=str(DEFAULT_OUT), help="directory for results.md/.json/.png")
    parser.add_argument(
        "--only", default="", help="comma-separated groups: stdio,sdk,http,timers,startup,lsp,tools,acp,a2a,server"
    )
    parser.add_argument("--no-pin", action="store_true", help="skip the runs pinned to one CPU")
    parser.add_argument("--no-chart", action="store_true", help="do not draw results.png")
    parser.add_argument("--scale", type=float, default=1.0, help="multiply every size by this")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--sched", default="os", help=argparse.SUPPRESS)
    parser.add_argument("--sizes", help=argparse.SUPPRESS)
    parser.add_argument("--result", help=argparse.SUPPRESS)
    parser.add_argument("--draw", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.worker:
        return run_worker(args.worker, args.sched, json.loads(args.sizes), args.result)
    if args.draw:
        data = json.loads(Path(args.draw).read_text(encoding="utf-8"))
        note = write_chart(data["rows"], Path(args.out) / "results.png", data["meta"])
        if note:
            print(note, file=sys.stderr)
            return 3
        return 0

    from benchmarks.cases import GROUPS, describe_machine  # noqa: PLC0415  (workers import it themselves)

    mode = "quick" if args.quick else "full"
    sizes = scaled_sizes(mode, args.scale)
    only = {g.strip() for g in args.only.split(",") if g.strip()}
    unknown = only - set(GROUPS)
    if unknown:
        parser.error(f"unknown groups: {sorted(unknown)}")
    can_pin = hasattr(os, "sched_setaffinity") and not args.no_pin
    jobs = [(g, s) for g, s in JOBS if (not only or g in only) and (s == "os" or can_pin)]
    started = time.monotonic()
    rows: List[Dict[str, Any]] = []
    for group, sched in jobs:
        if group == "acp" and importlib.util.find_spec("acp") is None:
            rows.append(
                {
                    "case": "10 ACP prompt turn (skipped)",
                    "sched": sched,
                    "variant": "the official ACP SDK is not installed (pip install -e '.[bench]', Python 3.10+)",
                    "role": "skipped",
                    "unit": "",
                    "median": None,
                }
            )
            continue
        if group == "a2a" and importlib.util.find_spec("a2a") is None:
            rows.append(
                {
                    "case": "11 A2A SendMessage (skipped)",
                    "sched": sched,
                    "variant": "the official A2A SDK is not installed (pip install -e '.[bench]', Python 3.10+)",
                    "role": "skipped",
                    "unit": "",
                    "median": None,
                }
            )
            continue
        if group == "server" and importlib.util.find_spec("mcp") is None:
            rows.append(
                {
                    "case": "12 MCP server (skipped)",
                    "sched": sched,
                    "variant": "the official SDK is not installed (pip install -e '.[bench]', Python 3.10+)",
                    "role": "skipped",
                    "unit": "",
                    "median": None,
                }
            )
            continue
        if group in ("sdk", "tools") and importlib.util.find_spec("mcp") is None:
            rows.append(
                {
                    "case": "4 MCP ping (skipped)" if group == "sdk" else "9 tool calls (skipped)",
                    "sched": sched,
                    "variant": "the official SDK is not installed (pip install -e '.[bench]', Python 3.10+)",
                    "role": "skipped",
                    "unit": "",
                    "median": None,
                }
            )
            continue
        print(f"[bench] {group} ({sched}) ...", file=sys.stderr, flush=True)
        begun = time.monotonic()
        rows.extend(spawn_worker(group, sched, sizes, WORKER_TIMEOUT_S[mode]))
        print(f"[bench] {group} ({sched}) done in {time.monotonic() - begun:.1f}s", file=sys.stderr, flush=True)
    annotate(rows)
    checked = [r for r in rows if r.get("met") is not None]
    meta = {
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "mode": mode,
        "scale": args.scale,
        "sizes": sizes,
        "machine": describe_machine(),
        "elapsed_s": round(time.monotonic() - started, 1),
        "targets": len(checked),
        "met": sum(1 for r in checked if r["met"]),
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    text = format_text(rows)
    machine = meta["machine"]
    print(
        f"\njsonrpc_threads benchmarks ({mode}): {machine['nproc']} CPUs, {machine['cpu_model']}, "
        f"Python {machine['python']}; {meta['elapsed_s']}s\n"
    )
    print(text)
    print(f"\nTargets met: {meta['met']} of {meta['targets']}.")
    (out / "results.md").write_text(format_markdown(rows, meta), encoding="utf-8")
    (out / "results.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1), encoding="utf-8")
    note = None if args.no_chart else draw_chart(out)
    written = "results.md, results.json" + ("" if args.no_chart or note else ", results.png")
    print(f"Wrote {written} to {out}" + (f" ({note})" if note else ""))
    errors = [r for r in rows if r["role"] == "error"]
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
