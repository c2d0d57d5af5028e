"""The hot path alone: µs per ``Tracker.log()`` of 10 floats in a plain loop, in one process.

    python benchmarks/hot_loop.py                  # medians of 7 repetitions of 50,000 calls
    PYTHONPATH=<other tree>/src python benchmarks/hot_loop.py   # the same on another tree

Alternate two trees in fresh processes to compare them on a noisy machine (docs/benchmarks.md);
run_all.py measures the same loop beside the peers and the floor.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

from tunetrack import Tracker


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=50_000)
    parser.add_argument("--reps", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        t = Tracker(dir=folder, system=False).start()
        row = {f"k{i}": float(i) for i in range(10)}
        per_call = []
        for _ in range(args.reps):
            began = time.perf_counter()
            for _ in range(args.calls):
                t.log(row)
            per_call.append((time.perf_counter() - began) / args.calls * 1e6)
            t.flush()
        t.finish()
    print(f"{statistics.median(per_call):.2f}")


if __name__ == "__main__":
    main()
