"""The console: what recording fds 1 and 2 costs a script that prints a lot.

    python benchmarks/console_bench.py            # 1,000,000 lines and 500 bar redraws, 5 repetitions
    python benchmarks/console_bench.py --quick    # 100,000 lines and 200 redraws, 3 repetitions
    python benchmarks/console_bench.py --peers wandb,swanlab   # the peers' console capture beside it

Two loops, each in a fresh process whose stdout and stderr go to a file (as a job's log does), with
the console recorded (``console=True``) and not (``console=False``), repetitions interleaved. With
``--peers``, the same loops under each peer's own console capture, on (its default) and off, in the
same repetitions: W&B offline (``settings.console``: its default, ``"auto"``, against ``"off"``) and
SwanLab offline (``settings.terminal.proxy_type``: ``"all"``, its default, against ``"none"``).
W&B keeps the console in its offline run file (``.wandb``) and SwanLab in its record log, beside the
metrics: their bytes per line are the growth of the run's folder with capture on over off.

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
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"

#: how each tracker starts a run with its console capture on or off, and ends it (in the child)
START = {
    "tunetrack": """
from tunetrack import Tracker
t = Tracker(dir=out, system=False, console=console).start()
def end():
    t.finish()
def stored():
    return sum(os.path.getsize(os.path.join(t.run_dir, f)) for f in os.listdir(t.run_dir) if f.endswith(".console"))
""",
    "wandb": """
import wandb
run = wandb.init(project="bench", dir=out, mode="offline", settings=wandb.Settings(console="auto" if console else "off", x_disable_stats=True))
def end():
    run.finish()
""",
    "swanlab": """
import swanlab
from swanlab.sdk.internal.settings import Settings, TerminalSettings
swanlab.init(project="bench", mode="offline", log_dir=os.path.join(out, "swanlog"),
             settings=Settings(terminal=TerminalSettings(proxy_type="all" if console else "none")))
def end():
    swanlab.finish()
""",
}

CHILD = """
import json, os, sys, time
kind, count, console, out = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1", sys.argv[4]
def folder_bytes():
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(out) for f in fs)
stored = folder_bytes
{start}
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
end()
total = time.perf_counter() - begin
print(json.dumps({"loop": loop, "total": total, "bytes": stored()}), file=sys.__stderr__)
"""


def once(tracker: str, kind: str, count: int, console: bool, work: Path) -> dict[str, float]:
    """One loop in a fresh process, its run in a folder of its own (a peer's bytes: its folder's)."""
    out = work / f"{tracker}-{kind}-{int(console)}.log"
    runs = Path(tempfile.mkdtemp(dir=work))
    child = CHILD.replace("{start}", START[tracker])
    with open(out, "w") as log:
        subprocess.run(
            [sys.executable, "-c", child, kind, str(count), str(int(console)), str(runs)],
            stdout=log,
            stderr=log,
            env={**os.environ, "PYTHONPATH": str(SRC), "WANDB_SILENT": "true", "WANDB_MODE": "offline"},
            check=True,
        )
    shutil.rmtree(runs, ignore_errors=True)
    last = out.read_text().rstrip().splitlines()[-1]
    return json.loads(last)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--peers", default="", help="comma-separated: wandb, swanlab")
    args = parser.parse_args()
    reps = 3 if args.quick else 5
    workloads = {"lines": 100_000 if args.quick else 1_000_000, "bar": 200 if args.quick else 500}
    trackers = ["tunetrack", *[p for p in args.peers.split(",") if p]]
    for peer in trackers[1:]:
        if peer not in START:
            parser.error(f"--peers: unknown peer {peer!r}; known: {', '.join(list(START)[1:])}")
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for kind, count in workloads.items():
            runs: dict[tuple[str, bool], list[dict[str, float]]] = {}
            for _ in range(reps):  # every tracker and setting once per repetition: the noise is shared
                for tracker in trackers:
                    for console in (False, True):
                        runs.setdefault((tracker, console), []).append(
                            once(tracker, kind, count, console, Path(tmp))
                        )
            lines = count if kind == "lines" else count // 50 + 2
            for tracker in trackers:
                med = {
                    c: {
                        k: statistics.median(r[k] for r in runs[(tracker, c)])
                        for k in ("loop", "total", "bytes")
                    }
                    for c in (False, True)
                }
                # tunetrack's console file holds only the console; a peer's folder holds its run too
                stored = med[True]["bytes"] - (0 if tracker == "tunetrack" else med[False]["bytes"])
                results.setdefault(kind, {})[tracker] = {
                    "count": count,
                    "loop_s": {"off": med[False]["loop"], "on": med[True]["loop"]},
                    "total_s": {"off": med[False]["total"], "on": med[True]["total"]},
                    "loop_ratio": med[True]["loop"] / med[False]["loop"],
                    "total_ratio": med[True]["total"] / med[False]["total"],
                    "bytes_per_line": stored / lines,
                }
    header = f"{'loop':<6} {'tracker':<10} {'count':>9} {'off s':>8} {'on s':>8} {'ratio':>7} {'to finish':>10} {'B/line':>7}"
    print(header)
    for kind, by_tracker in results.items():
        for tracker, r in by_tracker.items():
            mark = "" if tracker != "tunetrack" or r["loop_ratio"] <= 1.2 else "  MISSED (target 1.2x)"
            print(
                f"{kind:<6} {tracker:<10} {r['count']:>9,} {r['loop_s']['off']:>8.3f} {r['loop_s']['on']:>8.3f} "
                f"{r['loop_ratio']:>6.2f}x {r['total_ratio']:>9.2f}x {r['bytes_per_line']:>7.1f}{mark}"
            )
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / "console.json").write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
