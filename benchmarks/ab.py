"""A/B: the same benchmark cases on two checkouts, run alternately, and their ratios side by side.

Usage::

    python -m benchmarks.ab --base ../base                      # A = ../base, B = this checkout
    python -m benchmarks.ab --base ../base --only stdio,timers --quick --runs 3

Each run is ``python -m benchmarks.run`` with its working directory in one
checkout, so that checkout's package and its benchmark code are the ones
measured (``-m`` puts the working directory first on ``sys.path``); the runs go
A, B, A, B... so both see the same machine, minute by minute.  Every row is
compared by what the table already reports: a case's ratio to its own
baseline (the raw loop, the SDK, the floor), or a metric's value (lateness,
bytes, threads).  Ratios of one run are comparable, absolute times across runs
are not (see ``benchmarks/README.md``).

The last column is how much worse B is than A, from the median over the runs
of each side: ``+12%`` means B's ratio is 12% worse (a higher cost, or a lower
gain), ``-5%`` that it is 5% better.  Rows worse than ``--guard`` (10% by
default) are marked, and the exit status is 1 when there is one.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

ROOT = Path(__file__).resolve().parent.parent
#: Cases whose ratio is a gain (higher is better): throughput against one thread, speed against the SDK.
GAIN_CASES = ("3 ", "4 ", "8 ", "9 ")
#: Metrics where higher is better (none yet): every other metric is a cost.
GAIN_METRICS: Tuple[str, ...] = ()
#: Longest a single run of ``benchmarks.run`` may take.
RUN_TIMEOUT_S = 3600.0

Key = Tuple[str, str, str]


def run_once(checkout: Path, args: Sequence[str], python: str) -> Dict[Key, float]:
    """One ``benchmarks.run`` in ``checkout``: each row's ratio (or metric value), by (case, sched, variant)."""
    with tempfile.TemporaryDirectory(prefix="jsonrpc-ab-") as out:
        command = [python, "-m", "benchmarks.run", "--no-chart", "--out", out, *args]
        proc = subprocess.run(
            command, cwd=str(checkout), capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=False
        )
        results = Path(out) / "results.json"
        if not results.exists():
            sys.stderr.write(proc.stdout[-2000:] + proc.stderr[-2000:])
            raise SystemExit(f"benchmarks.run failed in {checkout} (exit {proc.returncode})")
        rows = json.loads(results.read_text(encoding="utf-8"))["rows"]
    found: Dict[Key, float] = {}
    for row in rows:
        if row.get("ratio") is not None:
            found[(row["case"], row["sched"], row["variant"])] = float(row["ratio"])
    return found


def higher_is_better(key: Key) -> bool:
    case, _, variant = key
    return case.startswith(GAIN_CASES) or variant.startswith(GAIN_METRICS)


def worse_by(key: Key, a: float, b: float) -> Optional[float]:
    """How much worse ``b`` is than ``a`` (0.12: 12% worse; negative: better); None when undefined."""
    if a <= 0 or b <= 0:
        return None
    return a / b - 1.0 if higher_is_better(key) else b / a - 1.0


def table(a_runs: List[Dict[Key, float]], b_runs: List[Dict[Key, float]], guard: float) -> Tuple[str, int]:
    """The side-by-side table, and how many rows are worse than ``guard``."""
    keys: List[Key] = []
    for run in a_runs + b_runs:
        keys += [key for key in run if key not in keys]
    header = ("case", "sched", "variant", "A (base) per run", "B (new) per run", "B vs A")
    lines: List[Tuple[str, ...]] = [header]
    flagged = 0
    for key in keys:
        a = [run[key] for run in a_runs if key in run]
        b = [run[key] for run in b_runs if key in run]
        change = worse_by(key, statistics.median(a), statistics.median(b)) if a and b else None
        mark = ""
        if change is not None:
            mark = f"{change:+.0%}"
            if change > guard:
                mark += "  WORSE"
                flagged += 1
        lines.append((*key, " ".join(_fmt(v) for v in a), " ".join(_fmt(v) for v in b), mark))
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    text = "\n".join("  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip() for line in lines)
    return text, flagged


def _fmt(value: float) -> str:
    return f"{value:.3g}" if abs(value) < 100 else f"{value:,.0f}"


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.ab", description=__doc__.split("\n")[0])
    parser.add_argument("--base", required=True, help="the checkout to compare against (A)")
    parser.add_argument("--new", default=str(ROOT), help="the checkout measured (B); this one by default")
    parser.add_argument("--runs", type=int, default=2, help="runs of each, alternating A, B, A, B...")
    parser.add_argument("--only", default="stdio,timers", help="the groups, as benchmarks.run --only")
    parser.add_argument("--quick", action="store_true", help="reduced sizes (benchmarks.run --quick)")
    parser.add_argument("--no-pin", action="store_true", help="skip the pinned runs")
    parser.add_argument("--guard", type=float, default=0.10, help="mark rows worse than this (0.10: 10%%)")
    parser.add_argument("--python", default=sys.executable, help="the interpreter for both")
    args = parser.parse_args(argv)
    extra = ["--only", args.only] + (["--quick"] if args.quick else []) + (["--no-pin"] if args.no_pin else [])
    base, new = Path(args.base).resolve(), Path(args.new).resolve()
    a_runs: List[Dict[Key, float]] = []
    b_runs: List[Dict[Key, float]] = []
    for index in range(args.runs):
        for label, checkout, runs in (("A", base, a_runs), ("B", new, b_runs)):
            print(f"[ab] run {index + 1}/{args.runs} {label}: {checkout}", file=sys.stderr, flush=True)
            runs.append(run_once(checkout, extra, args.python))
    text, flagged = table(a_runs, b_runs, args.guard)
    print(f"A = {base}\nB = {new}\n{args.runs} alternating runs each ({' '.join(extra)})\n")
    print(text)
    print(f"\n{flagged} row(s) worse than {args.guard:.0%}.")
    return 1 if flagged else 0


if __name__ == "__main__":
    sys.exit(main())
