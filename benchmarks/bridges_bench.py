"""The bridges: what mirroring a run into another tracker costs the training thread, side by side.

    python benchmarks/bridges_bench.py            # the full run (100,000 calls, 5 repetitions)
    python benchmarks/bridges_bench.py --quick    # CI smoke: 10,000 calls, 3 repetitions
    python benchmarks/bridges_bench.py --only mlflow,tensorboard

For each tracker tunetrack mirrors into (MLflow with a SQLite store, W&B offline, TensorBoard event
files, trackio local), the same loop as ``run_all.py``'s ``log10`` (``log()`` with 10 fresh float
metrics, a fresh process per repetition, repetitions interleaved) runs three ways:

- **direct**: the tracker's own logging call on the training thread, as its users write it;
- **through tunetrack**: ``Tracker(backends=[name])``; the backend drains on a thread of its own;
- **tunetrack alone**: no backend, the cost the bridge is held to (target: through ≤ 2× alone).

Through tunetrack, the backend has started (imported its library, opened its run) before the loop,
as a direct peer's ``init`` has; that once-per-run time is reported as "start". ``finish()`` through
tunetrack returns once the other tracker holds everything (``backend_timeout``
is raised for the benchmark), so its time is "seconds from ``finish()`` until the remote has it
all"; the points the other tracker then holds are counted with its own reader where it has one
(W&B's offline files have no local read API). Medians; nothing is asserted, missed targets print as
MISSED, the exit code stays 0. Results also go to benchmarks/results/bridges.json.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from peers import BRIDGED, READERS  # noqa: E402
from run_all import bench_log, fmt_ratio, installed, machine, progress, summary, table, version  # noqa: E402

#: through tunetrack / tunetrack alone, µs per log() on the training thread
TARGET_RATIO = 2.0


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="10,000 calls and 3 repetitions (CI smoke)")
    parser.add_argument("--only", help=f"comma-separated trackers (default: {','.join(BRIDGED)})")
    parser.add_argument("--reps", type=int, help="repetitions (default 5, 3 with --quick)")
    parser.add_argument(
        "--budget",
        type=float,
        help="seconds a direct loop may take per repetition (default 30, 5 with --quick)",
    )
    parser.add_argument("--out", type=Path, default=HERE / "results" / "bridges.json")
    opts = parser.parse_args()

    targets = [t.strip() for t in (opts.only or ",".join(BRIDGED)).split(",") if t.strip()]
    unknown = sorted(set(targets) - set(BRIDGED))
    if unknown:
        parser.error(f"unknown tracker {', '.join(unknown)} (choose from {', '.join(BRIDGED)})")
    calls = 10_000 if opts.quick else 100_000
    plan: dict[str, Any] = {
        "quick": opts.quick,
        "reps": opts.reps or (3 if opts.quick else 5),
        "budget": opts.budget or (5.0 if opts.quick else 30.0),
        "log10": {"fast": calls, "peer": calls},
        "readers": [lib for lib in READERS if lib.startswith("tunetrack+")],
    }
    libs = ["tunetrack"] + [lib for t in targets for lib in (t, f"tunetrack+{t}")]
    missing = [lib for lib in libs if not installed(lib)]
    if missing:
        sys.exit(
            f"not installed: {', '.join(missing)} (pip install 'tunetrack[{','.join(targets)}]' and the peers)"
        )
    started = time.strftime("%Y-%m-%d %H:%M:%S %z")
    base = Path(tempfile.mkdtemp(prefix="tunetrack-bridges-"))
    try:
        progress("log10, direct vs through tunetrack:")
        results = {"log10": bench_log("log10", libs, plan, base)}
    finally:
        shutil.rmtree(base, ignore_errors=True)

    alone = summary(results, "log10", "tunetrack")
    rows, verdicts = [], []
    for target in targets:
        direct, through = summary(results, "log10", target), summary(results, "log10", f"tunetrack+{target}")
        if alone is None or direct is None or through is None:
            failed = results["log10"].get(target if direct is None else f"tunetrack+{target}")
            rows.append([target, "-", "-", "-", "-", "-", "-", "-", str(failed)[:60]])
            continue
        ratio = through["per_call_us"] / alone["per_call_us"]
        met = ratio <= TARGET_RATIO
        stored = through.get("stored_points")
        held = "no local reader" if stored is None else f"{stored:,} of {through['expected_points']:,}"
        rows.append(
            [
                target,
                f"{direct['per_call_us']:.2f}",
                f"{through['per_call_us']:.2f}",
                f"{alone['per_call_us']:.2f}",
                f"{fmt_ratio(ratio)} ({'met' if met else 'MISSED'})",
                fmt_ratio(direct["per_call_us"] / through["per_call_us"]),
                f"{through['init_s']:.2f}",
                f"{through['finish_s']:.2f}",
                held,
            ]
        )
        verdicts.append({"target": target, "through_over_alone": ratio, "met": met})
    print(
        f"\ntunetrack bridges, {started}: medians of {plan['reps']} repetitions, {calls:,} log() calls of 10 "
        f"metrics each (a direct loop stops after {plan['budget']:.0f} s); "
        + ", ".join(f"{lib} {version(lib)}" for lib in ["tunetrack", *targets] if version(lib))
    )
    print(
        table(
            [
                "tracker",
                "direct µs/log",
                "through tunetrack µs/log",
                "tunetrack alone µs/log",
                f"through ÷ alone (≤ {TARGET_RATIO:g})",
                "direct ÷ through",
                "start, s",
                "finish() until it holds all, s",
                "points it holds",
            ],
            rows,
            "<>>>>>>>>",
        )
    )
    opts.out.parent.mkdir(parents=True, exist_ok=True)
    meta = {"started": started, "machine": machine(), "plan": plan}
    opts.out.write_text(json.dumps({"meta": meta, "results": results, "targets": verdicts}, indent=1) + "\n")
    print(f"results: {opts.out}")


if __name__ == "__main__":
    main()
