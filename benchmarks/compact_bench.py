"""``tunetrack compact`` (issue 36): a folder of many small ended runs, queried before and after.
Medians of ``--reps``, each query a fresh ``tunetrack query`` process; nothing asserted.

    PYTHONPATH=src python benchmarks/compact_bench.py [--runs 2000] [--steps 20] [--reps 3] [--dir DIR]

Measured: ``SELECT count(*) FROM metrics`` and a ``GROUP BY run`` minimum of one metric joined with
``params``, with each run's own Parquet copy (before) and with the compacted files (after); the
compaction's time, its points per second, and bytes per point before (the runs' copies) and after
(the compacted files). The store is built once by the real Tracker (``--dir`` reuses one).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
sys.path[:0] = [str(SRC)]

QUERIES = {
    "count": "SELECT count(*) FROM metrics",
    "min loss by run, with lr": (
        "SELECT m.run, p.number AS lr, min(m.value) AS lo FROM metrics m JOIN params p "
        "ON p.run = m.run AND p.key = 'lr' WHERE m.key = 'loss' GROUP BY ALL"
    ),
}


def build(root: Path, runs: int, steps: int) -> None:
    """``runs`` runs in 4 projects, ``steps`` steps of 2 metrics each, with their Parquet copies."""
    os.environ.update(TUNETRACK_PARQUET="1", TUNETRACK_CONSOLE="0")
    import pyarrow  # noqa: F401 - loaded: each run's copy is written in this process, not a child

    from tunetrack import Tracker

    for i in range(runs):
        with Tracker(dir=root, project=f"p{i % 4}", config={"lr": 1e-4 * (1 + i % 7)}, system=False) as t:
            for step in range(1, steps + 1):
                t.log({"loss": 1.0 / step + i % 7, "acc": step / steps}, step=step)


def timed_query(root: Path, sql: str, reps: int) -> float:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    times = []
    for _ in range(reps):
        started = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "tunetrack", "query", sql, "--dir", str(root), "--format", "csv"],
            check=True,
            capture_output=True,
            env=env,
        )
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def size(paths: list[Path]) -> int:
    return sum(p.stat().st_size for p in paths)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--dir", default=None, help="an existing store made by an earlier run of this")
    args = parser.parse_args()
    root = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="compact-bench-")) / "runs"
    if not root.exists():
        started = time.perf_counter()
        build(root, args.runs, args.steps)
        print(f"built {args.runs} runs in {time.perf_counter() - started:.0f} s: {root}")
    from tunetrack.manage.compact import compact

    points = args.runs * args.steps * 2
    before = {name: timed_query(root, sql, args.reps) for name, sql in QUERIES.items()}
    copies = size(list(root.glob("*/metrics.parquet")))
    done = compact(root)
    compacted = size(list((root / ".warehouse" / "metrics").glob("*/*/*.parquet")))
    after = {name: timed_query(root, sql, args.reps) for name, sql in QUERIES.items()}
    print(f"load average: {os.getloadavg()[0]:.2f}")
    print(
        f"compaction: {done.runs} runs, {done.files} files, {done.seconds:.1f} s, {points / done.seconds:,.0f} points/s"
    )
    print(f"metrics bytes per point: copies {copies / points:.1f}, compacted {compacted / points:.1f}")
    for name in QUERIES:
        print(f"{name}: before {before[name]:.2f} s, after {after[name]:.2f} s (median of {args.reps})")


if __name__ == "__main__":
    main()
