"""The dashboard at scale, in Debian's Chromium driven by Playwright (issue: the live dashboard).

    python benchmarks/ui_bench.py [--quick]

1. First render of a run page with 20 charts of 100,000 points each (time until every chart is drawn).
2. The runs table with 1,000 runs (time until every row is in the table).
3. Live: seconds from a `log()` in another process until the point is on the chart.
4. One 1,000,000-point series through the API: points sent and milliseconds.
Medians over repetitions; targets printed as met or MISSED, never asserted.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))


def seed(root: Path, runs: int, charts: int, points: int) -> str:
    from tunetrack import Tracker

    big = Tracker(dir=root, name="big", system=False).start()
    names = [f"metric_{i:02d}" for i in range(charts)]
    for step in range(1, points + 1):
        big.log({n: float(step % 97) + i for i, n in enumerate(names)}, step=step)
    big.finish()
    for i in range(runs - 1):
        t = Tracker(dir=root, name=f"run-{i}", project=f"p{i % 7}", system=False).start()
        t.log({"loss": 1.0 / (i + 1)}, step=1)
        t.finish()
    return big.id


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    opts = parser.parse_args()
    from playwright.sync_api import sync_playwright

    from helpers import Server, wait_until  # the same server harness the browser tests use
    from tunetrack import Tracker

    reps = 2 if opts.quick else 3
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "runs"
        big = seed(root, runs=1000, charts=20, points=100_000)
        server = Server(root)
        results: dict[str, list[float]] = {"run page": [], "runs table": [], "live": []}
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True)
            for _ in range(reps):
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                start = time.perf_counter()
                page.goto(f"{server.base}/run/{big}")
                wait_until(
                    lambda page=page: len(page.query_selector_all("#charts .chart[data-points]")) == 20,
                    timeout=60,
                    interval=0.01,
                )
                results["run page"].append(time.perf_counter() - start)
                start = time.perf_counter()
                page.goto(server.base + "/")
                wait_until(
                    lambda page=page: len(page.query_selector_all("#runs tbody tr")) == 1000,
                    timeout=60,
                    interval=0.01,
                )
                results["runs table"].append(time.perf_counter() - start)
                page.close()
            live = Tracker(dir=root, name="live", system=False).start()
            live.log({"loss": 1.0}, step=1)
            live.flush()
            page = browser.new_page()
            page.goto(f"{server.base}/run/{live.id}")
            wait_until(lambda: page.get_attribute("#charts .chart", "data-points") == "1", timeout=30)
            for step in range(2, 2 + reps + 2):
                start = time.perf_counter()
                live.log({"loss": 1.0 / step}, step=step)
                wait_until(
                    lambda s=step: page.get_attribute("#charts .chart", "data-points") == str(s),
                    timeout=30,
                    interval=0.01,
                )
                results["live"].append(time.perf_counter() - start)
            live.finish()
            browser.close()
        million = Tracker(dir=root, name="million", system=False).start()
        for step in range(1, 1_000_001):
            million.log({"loss": float(step % 1000)}, step=step)
        million.finish()
        start = time.perf_counter()
        data = httpx.get(
            f"{server.base}/api/runs/{million.id}/series", params={"key": "loss", "width": 1500}, timeout=60
        ).json()
        api_ms = (time.perf_counter() - start) * 1e3
        server.stop()
    print("== dashboard (median seconds) ==")
    for label, target in (("run page", 1.0), ("runs table", 1.0), ("live", 2.0)):
        value = statistics.median(results[label])
        print(
            f"  {'met   ' if value <= target else 'MISSED'} {label:10s} {value:6.2f} s   (target ≤ {target} s)"
        )
    print(f"  1,000,000-point series: {len(data['x'])} points sent in {api_ms:.0f} ms")


if __name__ == "__main__":
    os.environ.setdefault("TUNETRACK_SYSTEM", "0")
    main()
