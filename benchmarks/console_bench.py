"""The console: what recording fds 1 and 2 costs a script that prints a lot.

    python benchmarks/console_bench.py            # 1,000,000 lines and 500 bar redraws, 5 repetitions
    python benchmarks/console_bench.py --quick    # 100,000 lines and 200 redraws, 3 repetitions

Two loops, each in a fresh process whose stdout and stderr go to a file (as a job's log does), with
the console recorded (``console=True``) and not (``console=False``), repetitions interleaved:

- **lines**: ``print(f"step {i} loss {x:.4f}")``, a million times (Python's buffered stdout, as a
  training script's prints to a file are);
- **bar**: a tqdm-style progress bar redrawn at 100 Hz on stderr (``\\r``, then the bar, flushed), with
  a few lines of output between.

Reported: the loop's time (printing, as the training thread sees it), the time to the end of
``finish()`` (the recorder has recorded everything), their ratio with capture to without (target:
loop ≤ 1.2×), and the bytes the console file holds per line printed. Medians; nothing is asserted,
the exit code stays 0. Results also go to benchmarks/results/console.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"

CHILD = """
import json, os, sys, time
from tunetrack import Tracker

kind, count, console = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
t = Tracker(dir=sys.argv[4], system=False, console=console).start()
begin = time.perf_counter()
if kind == "lines":
    for i in range(count):
        print(f"step {i} loss {1.0 / (i + 1):.4f}")
    sys.stdout.flush()
else:  # a progress bar at 100 Hz
    next_at = time.perf_counter()
    for i in range(count):
        done = int(40 * i / count)
        sys.stderr.write(f"\\r{100 * i // count:3d}%|{'#' * done}{' ' * (40 - done)}| {i}/{count}")
        sys.stderr.flush()
        if i % 50 == 0:
            print(f"eval at {i}", flush=True)
        next_at += 0.01
        time.sleep(max(next_at - time.perf_counter(), 0))
    sys.stderr.write("\\n")
loop = time.perf_counter() - begin
t.finish()
total = time.perf_counter() - begin
files = [os.path.join(t.run_dir, f) for f in os.listdir(t.run_dir) if f.endswith(".console")]
print(json.dumps({"loop": loop, "total": total, "bytes": sum(os.path.getsize(f) for f in files)}), file=sys.__stderr__)
"""


def once(kind: str, count: int, console: bool, work: Path) -> dict[str, float]:
    out = work / f"{kind}-{int(console)}.log"
    with open(out, "w") as log:
        proc = subprocess.run(
            [sys.executable, "-c", CHILD, kind, str(count), str(int(console)), str(work / "runs")],
            stdout=log,
            stderr=log,
            env={**os.environ, "PYTHONPATH": str(SRC)},
            check=True,
        )
    assert proc.returncode == 0
    last = out.read_text().rstrip().splitlines()[-1]
    return json.loads(last)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    reps = 3 if args.quick else 5
    workloads = {"lines": 100_000 if args.quick else 1_000_000, "bar": 200 if args.quick else 500}
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for kind, count in workloads.items():
            runs: dict[bool, list[dict[str, float]]] = {False: [], True: []}
            for _ in range(reps):
                for console in (False, True):
                    runs[console].append(once(kind, count, console, Path(tmp)))
            med = {
                c: {k: statistics.median(r[k] for r in rs) for k in ("loop", "total", "bytes")}
                for c, rs in runs.items()
            }
            lines = count if kind == "lines" else count // 50 + 2
            results[kind] = {
                "count": count,
                "loop_s": {"off": med[False]["loop"], "on": med[True]["loop"]},
                "total_s": {"off": med[False]["total"], "on": med[True]["total"]},
                "loop_ratio": med[True]["loop"] / med[False]["loop"],
                "total_ratio": med[True]["total"] / med[False]["total"],
                "bytes_per_line": med[True]["bytes"] / lines,
            }
    print(f"{'loop':<6} {'count':>9} {'off s':>8} {'on s':>8} {'ratio':>7} {'to finish':>10} {'B/line':>7}")
    for kind, r in results.items():
        mark = "" if r["loop_ratio"] <= 1.2 else "  MISSED (target 1.2x)"
        print(
            f"{kind:<6} {r['count']:>9,} {r['loop_s']['off']:>8.3f} {r['loop_s']['on']:>8.3f} "
            f"{r['loop_ratio']:>6.2f}x {r['total_ratio']:>9.2f}x {r['bytes_per_line']:>7.1f}{mark}"
        )
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / "console.json").write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
