"""Asking across runs at a team's scale: N runs x S steps x K metrics (default 1,000 x 10,000 x 10 = 10^8
points), recorded with the real ``Tracker`` (each run's last process writes its Parquet copy as it
ends), then two questions: the lowest ``loss`` of each run (``GROUP BY run``), and the same joined
with ``params`` (its ``lr``).

    python benchmarks/query_bench.py                      # 10^8 points (minutes, and ~2 GB of disk)
    python benchmarks/query_bench.py --runs 100           # 10^7
    python benchmarks/query_bench.py --quick              # 20 x 1,000 x 10, seconds

Prints JSON: the time to record the store; ``tunetrack.query`` cold (a fresh process: imports, the
listing, each copy's footer, DuckDB's first scan) and warm (median of ``--reps`` in that process);
the same without the copies (every run's records read: what a store without pyarrow costs); a
Python loop of ``open_run(...).history()`` over the same runs (target: warm >= 20x faster than it, and
<= 2 s); Parquet and record bytes per point; and what the copy adds to ``finish()`` (median per run,
against runs recorded with ``TUNETRACK_PARQUET=0``): in a process that loaded pyarrow (the store's
runs are recorded so), and in one that did not (a child process writes the copy). Not a timed test:
docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LOWEST = "SELECT run, min(value) AS lowest FROM metrics WHERE key = 'loss' GROUP BY run"
JOINED = (
    "SELECT p.number AS lr, m.run, min(m.value) AS lowest FROM metrics m "
    "JOIN params p ON p.run = m.run AND p.key = 'lr' WHERE m.key = 'loss' GROUP BY ALL"
)


def record(root: Path, runs: int, steps: int, keys: int, parquet: bool) -> list[float]:
    """Record ``runs`` runs; return each one's ``finish()`` time."""
    from tunetrack import Tracker

    os.environ["TUNETRACK_PARQUET"] = "1" if parquet else "0"
    names = ["loss"] + [f"metric_{i}" for i in range(keys - 1)]
    finishes = []
    for r in range(runs):
        t = Tracker(
            dir=root,
            name=f"run-{r}",
            config={"lr": 10 ** -(3 + r % 3), "lora": {"r": 8 << (r % 3)}, "seed": r},
            system=False,
            console=False,
        ).start()
        base = 3.0 + (r % 17) / 10
        for step in range(steps):
            row = {k: base - step * 1e-4 + i for i, k in enumerate(names)}
            t.log(row, step=step)
        start = time.perf_counter()
        t.finish()
        finishes.append(time.perf_counter() - start)
    return finishes


CHILD = """
import json, statistics, sys
sys.path.insert(0, sys.argv[1])
import query_bench
print(json.dumps(query_bench.record(query_bench.Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), True)))
"""


def record_without_pyarrow_loaded(root: Path, runs: int, steps: int, keys: int) -> list[float]:
    """``record`` in a fresh process that never imports pyarrow: its writer has a child process write
    each copy (the start of a Python that imports pyarrow is then part of ``finish()``)."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
    args = [str(Path(__file__).parent), str(root), str(runs), str(steps), str(keys)]
    done = subprocess.run(
        [sys.executable, "-c", CHILD, *args], env=env, capture_output=True, text=True, check=True
    )
    times: list[float] = json.loads(done.stdout.strip().splitlines()[-1])
    return times


def loop(root: Path) -> dict[str, float]:
    """The Python loop a user writes today: the lowest loss and the lr of every run."""
    from tunetrack.reader import list_runs

    start = time.perf_counter()
    out = {}
    for run in list_runs(root):
        history = run.history(["loss"])
        out[run.id] = (run.config.get("lr"), float(history["loss"].min()))
    return {"seconds": time.perf_counter() - start, "runs": len(out)}


QUERIES = """
import json, statistics, sys, time
t0 = time.perf_counter()
import tunetrack
from tunetrack.reader import parquet
root, reps, copies = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
if not copies:  # every run's records read, as in a store without copies
    parquet.split = lambda runs, table: ([], list(runs))
out = {}
for name, q in (("lowest", sys.argv[4]), ("joined", sys.argv[5])):
    start = time.perf_counter()
    rows = len(tunetrack.query(q, dir=root))
    cold = time.perf_counter() - (t0 if name == "lowest" else start)
    warm = []
    for _ in range(reps):
        start = time.perf_counter()
        tunetrack.query(q, dir=root)
        warm.append(time.perf_counter() - start)
    out[name] = {"rows": rows, "cold_s": round(cold, 3), "warm_s": round(statistics.median(warm), 3)}
print(json.dumps(out))
"""


def queries(root: Path, reps: int, copies: bool) -> dict[str, object]:
    """Both questions in a fresh process (the first call is cold: imports included)."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
    args = [str(root), str(reps), "1" if copies else "0", LOWEST, JOINED]
    done = subprocess.run(
        [sys.executable, "-c", QUERIES, *args], env=env, capture_output=True, text=True, check=True
    )
    result: dict[str, object] = json.loads(done.stdout)
    return result


def sizes(root: Path, points: int) -> dict[str, float]:
    copies = sum(p.stat().st_size for p in root.glob("*/metrics.parquet"))
    records = sum(p.stat().st_size for p in root.glob("*/*.ttr"))
    return {
        "parquet_bytes_per_point": round(copies / points, 2),
        "record_bytes_per_point": round(records / points, 2),
        "parquet_mb": round(sum(p.stat().st_size for p in root.glob("*/*.parquet")) / 1e6, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--steps", type=int, default=10_000)
    parser.add_argument("--keys", type=int, default=10)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--baseline-runs", type=int, default=10, help="runs recorded without the copy")
    parser.add_argument("--quick", action="store_true", help="20 runs x 1,000 steps x 10 metrics")
    parser.add_argument("--dir", type=Path, default=None, help="where to record (default: a temp folder)")
    args = parser.parse_args()
    if args.quick:
        args.runs, args.steps, args.reps, args.baseline_runs = 20, 1000, 3, 5
    points = args.runs * args.steps * args.keys
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        root = Path(tmp) / "runs"
        import pyarrow  # noqa: F401 - loaded, as in a training process that uses `datasets`

        start = time.perf_counter()
        with_copy = record(root, args.runs, args.steps, args.keys, parquet=True)
        recorded = time.perf_counter() - start
        without = record(Path(tmp) / "plain", args.baseline_runs, args.steps, args.keys, parquet=False)
        in_child = record_without_pyarrow_loaded(
            Path(tmp) / "child", args.baseline_runs, args.steps, args.keys
        )
        found = queries(root, args.reps, copies=True)
        from_records = queries(root, max(args.reps // 2, 1), copies=False)
        python_loop = loop(root)
        warm = max(v["warm_s"] for v in found.values())  # type: ignore[index]
        out = {
            "runs": args.runs,
            "steps": args.steps,
            "keys": args.keys,
            "points": points,
            "record_s": round(recorded, 1),
            "query_from_parquet": found,
            "query_from_records": from_records,
            "python_loop_s": round(python_loop["seconds"], 2),
            "warm_speedup_vs_loop": round(python_loop["seconds"] / warm, 1),
            **sizes(root, points),
            "finish_ms_median": {
                "with_parquet": round(1000 * statistics.median(with_copy), 1),
                "with_parquet_in_a_child": round(1000 * statistics.median(in_child), 1),
                "without": round(1000 * statistics.median(without), 1),
            },
        }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
