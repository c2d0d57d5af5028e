"""The dashboard at scale, in Debian's Chromium driven by Playwright (issue: the live dashboard).

    python benchmarks/ui_bench.py [--quick] [--reps N]

Browser rows (seconds from navigation until everything is drawn, medians over repetitions):

1. Run page with 20 charts of 100,000 points each, cold: a fresh browser profile (empty cache), so
   uPlot is downloaded and compiled first; every repetition opens a run the server has not read
   yet (copies of one run).
2. The same, warm: the browser has shown a run page before (uPlot in its cache), the run is new to
   the server.
3. The runs table with 1,000 runs (all in the table, its first screen of rows drawn).
4. Compare: 50 runs of 4 metrics x 100,000 points overlaid (every chart has its 50 traces), and a
   zoom: a mouse drag on a chart until the chart is drawn again from the re-fetched range.
5. Live: seconds from a `log()` in another process until the point is on the chart.

Then where the time goes, through the API: requests and bytes per page, the server's time for the
runs listing and a run page's series (first read of the files, then cached), and a 1,000,000-point
series. Targets printed as met or MISSED, never asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
VIEWPORT = {"width": 1400, "height": 1000}


def seed_run(root: Path, name: str, keys: list[str], points: int, **kw: Any) -> Path:
    from tunetrack import Tracker

    t = Tracker(dir=root, name=name, system=False, **kw).start()
    for step in range(1, points + 1):
        t.log({k: float(step % 97) + i for i, k in enumerate(keys)}, step=step)
        if step % 50_000 == 0:
            t.flush(timeout=60)  # keep the writer's backlog bounded: no row dropped
    t.finish()
    return root / t.id


def clone(src: Path, name: str) -> str:
    """A copy of a run under a new id: the same data, a run the server has never read."""
    from tunetrack.store import layout

    run_id = layout.new_run_id()
    dst = src.parent / run_id
    shutil.copytree(src, dst)
    meta = json.loads((dst / layout.RUN_JSON).read_text())
    (dst / layout.RUN_JSON).write_text(json.dumps({**meta, "id": run_id, "name": name}))
    return run_id


def seed(root: Path, reps: int) -> dict[str, Any]:
    from tunetrack import Tracker

    big = seed_run(root, "big", [f"metric_{i:02d}" for i in range(20)], 100_000)
    pages = [clone(big, f"big-{i}") for i in range(2 * reps + 1)]
    shutil.rmtree(big)
    keys = ["loss", "lr", "grad_norm", "eval_loss"]
    bases = [seed_run(root, f"cmp-{lr}", keys, 100_000, config={"lr": lr}) for lr in (1e-4, 2e-4)]
    compare = [clone(bases[i % 2], f"cmp-{i}") for i in range(50)]
    for base in bases:
        shutil.rmtree(base)
    for i in range(1000 - len(pages) - len(compare)):  # the table holds exactly 1,000 runs
        t = Tracker(dir=root, name=f"run-{i}", project=f"p{i % 7}", system=False).start()
        t.log({"loss": 1.0 / (i + 1)}, step=1)
        t.finish()
    return {"pages": pages, "compare": compare}


def timed(page: Any, url: str, done: Any) -> float:
    from helpers import wait_until

    start = time.perf_counter()
    page.goto(url)
    wait_until(done, timeout=120, interval=0.01)
    return time.perf_counter() - start


def table_drawn(page: Any, runs: int) -> Any:
    """Whether the runs table holds all ``runs`` and has drawn its first screen of rows (only the rows
    on screen are drawn)."""
    return lambda: (
        page.inner_text("#status") == f"{runs} of {runs} runs" and page.locator("#runs tbody tr").count()
    )


def api_traffic(page: Any) -> tuple[int, int]:
    """(requests, bytes) the page sent to /api/ so far, from the browser's resource timing."""
    entries = page.evaluate(
        "performance.getEntriesByType('resource').filter(e => e.name.includes('/api/'))"
        ".map(e => e.encodedBodySize)"
    )
    return len(entries), sum(entries)


def zoom(page: Any, chart: Any) -> float:
    """Drag across ``chart``'s plot area; seconds from releasing the mouse until it is drawn again."""
    from helpers import drag_across, wait_until

    drawn = chart.get_attribute("data-drawn")
    drag_across(page, chart)
    start = time.perf_counter()
    page.mouse.up()
    wait_until(lambda: chart.get_attribute("data-drawn") != drawn, timeout=60, interval=0.01)
    return time.perf_counter() - start


def server_ms(base: str, path: str, params: Any = None) -> tuple[float, httpx.Response]:
    start = time.perf_counter()
    response = httpx.get(base + path, params=params, timeout=120)
    response.raise_for_status()
    return (time.perf_counter() - start) * 1e3, response


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="two repetitions instead of five")
    parser.add_argument("--reps", type=int, default=None)
    opts = parser.parse_args()
    from playwright.sync_api import sync_playwright

    from helpers import Server, wait_until  # the same server harness the browser tests use
    from tunetrack import Tracker

    reps = opts.reps or (2 if opts.quick else 5)
    results: dict[str, list[float]] = {}
    notes: list[str] = []

    def record(label: str, value: float) -> None:
        results.setdefault(label, []).append(value)

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "runs"
        seeded = seed(root, reps)
        pages, compare = seeded["pages"], seeded["compare"]
        server = Server(root)
        base = server.base

        # -- the server alone, first on files it has never read, then from its cache ------------
        for label, path, params in (
            ("GET /api/runs (1,000 runs)", "/api/runs", None),
            (
                f"GET /api/series, 20 x 100k points, width 450 (run {pages[-1]})",
                "/api/series",
                {"run": pages[-1], "width": 450},
            ),
        ):
            first, response = server_ms(base, path, params)
            again = statistics.median(server_ms(base, path, params)[0] for _ in range(reps))
            notes.append(
                f"{label}: first {first:.0f} ms, then {again:.0f} ms; {len(response.content) / 1e3:.0f} kB"
            )

        with sync_playwright() as p:
            browser = p.chromium.launch(
                executable_path="/usr/bin/chromium", headless=True, args=CHROMIUM_ARGS
            )

            def charts_drawn(page: Any, n: int = 20) -> Any:
                return lambda: page.locator("#charts .chart[data-points]").count() == n

            for i in range(reps):  # cold: a fresh profile each time
                context = browser.new_context(viewport=VIEWPORT)
                page = context.new_page()
                record("run page, cold browser", timed(page, f"{base}/run/{pages[i]}", charts_drawn(page)))
                if i == 0:
                    ready = page.evaluate(
                        "performance.getEntriesByType('navigation')[0].domContentLoadedEventEnd"
                    )
                    uplot = page.evaluate(
                        "performance.getEntriesByType('resource').filter(e => e.name.includes('/uplot-'))"
                        ".reduce((n, e) => n + e.decodedBodySize, 0)"
                    )
                    requests, size = api_traffic(page)
                    notes.append(
                        f"run page, cold: {requests} API requests, {size / 1e3:.0f} kB of JSON; "
                        f"uPlot ({uplot / 1e3:.0f} kB, script and style) ready after {ready / 1e3:.2f} s"
                    )
                context.close()

            context = browser.new_context(viewport=VIEWPORT)
            page = context.new_page()
            timed(page, f"{base}/run/{pages[-1]}", charts_drawn(page))  # uPlot now in this profile's cache
            for i in range(reps):
                record(
                    "run page, warm browser", timed(page, f"{base}/run/{pages[reps + i]}", charts_drawn(page))
                )
            ready = page.evaluate("performance.getEntriesByType('navigation')[0].domContentLoadedEventEnd")
            notes.append(f"run page, warm: uPlot ready after {ready / 1e3:.2f} s")

            for _ in range(reps):
                table = browser.new_context(viewport=VIEWPORT).new_page()
                record("runs table", timed(table, base + "/", table_drawn(table, 1000)))
                table.context.close()

            url = f"{base}/compare?ids={','.join(compare)}"
            for i in range(reps):
                overlaid = lambda: page.locator("#charts .chart[data-traces='50']").count() == 4  # noqa: E731
                record("compare 50 runs", timed(page, url, overlaid))
                if i == 0:
                    requests, size = api_traffic(page)
                    notes.append(f"compare 50 runs: {requests} API requests, {size / 1e6:.1f} MB of JSON")
                record("compare zoom", zoom(page, page.query_selector("#charts .chart")))

            live = Tracker(dir=root, name="live", system=False).start()
            live.log({"loss": 1.0}, step=1)
            live.flush()
            page.goto(f"{base}/run/{live.id}")
            wait_until(lambda: page.get_attribute("#charts .chart", "data-points") == "1", timeout=30)
            for step in range(2, 2 + reps):
                start = time.perf_counter()
                live.log({"loss": 1.0 / step}, step=step)
                wait_until(
                    lambda s=step: page.get_attribute("#charts .chart", "data-points") == str(s),
                    timeout=30,
                    interval=0.01,
                )
                record("live", time.perf_counter() - start)
            live.finish()
            browser.close()

        million = seed_run(root, "million", ["loss"], 1_000_000)
        ms, response = server_ms(base, f"/api/runs/{million.name}/series", {"key": "loss", "width": 1500})
        notes.append(
            f"1,000,000-point series, width 1500: {len(response.json()['x'])} points "
            f"({len(response.content) / 1e3:.0f} kB) in {ms:.0f} ms (first read)"
        )
        server.stop()

    print(f"== dashboard (median seconds over {reps}) ==")
    targets = {
        "run page, cold browser": 1.0,
        "run page, warm browser": 1.0,
        "runs table": 1.0,
        "compare 50 runs": None,
        "compare zoom": 1.0,
        "live": 2.0,
    }
    for label, target in targets.items():
        value = statistics.median(results[label])
        verdict = "      " if target is None else ("met   " if value <= target else "MISSED")
        goal = "no target" if target is None else f"target ≤ {target} s"
        spread = ", ".join(f"{v:.2f}" for v in results[label])
        print(f"  {verdict} {label:24s} {value:6.2f} s   ({goal}; each: {spread})")
    print("== where the time goes ==")
    for note in notes:
        print(f"  {note}")


if __name__ == "__main__":
    os.environ.setdefault("TUNETRACK_SYSTEM", "0")
    main()
