"""The dashboard at scale, in Debian's Chromium driven by Playwright (issue: the live dashboard).

    python benchmarks/ui_bench.py [--quick] [--reps N] [--many-keys]

``--many-keys``: only the run page of a mixture-of-experts run, 10,240 keys × 1,000 steps
(``ui_many_keys.py``: first chart and family heatmap drawn, the page's requests and bytes).

Browser rows (seconds from navigation until everything is drawn, medians over repetitions):

1. Run page with 20 charts of 100,000 points each, cold: a fresh browser profile (empty cache), so
   uPlot is downloaded and compiled first; every repetition opens a run the server has not read
   yet (copies of one run). Until every chart on the first screen is drawn: the page draws a chart
   once it comes near the view, so the ones below are drawn as the user scrolls.
2. The same, warm: the browser has shown a run page before (uPlot in its cache), the run is new to
   the server.
3. The runs table with 1,000 runs (all in the table, its first screen of rows drawn).
4. Compare: 50 runs of 4 metrics x 100,000 points overlaid (every chart has its 50 traces), and a
   zoom: a mouse drag on a chart until the chart is drawn again from the re-fetched range.
5. Live: seconds from a `log()` in another process until the point is on the chart.
6. The runs table with 10,000 runs (copies of a few real runs, each with its framework's keys):
   navigation until its first screen of rows is drawn, the server's cache warm; then, on that page,
   a filter typed (1,000 runs match) and cleared, a click on a column to sort by it, and a scroll
   of thousands of rows, each timed in the page until the frame after the table shows the result.

Then where the time goes, through the API: requests and bytes per page, the server's time for the
runs listing (1,000 and 10,000 runs; and a poll of the 10,000 while nothing changed) and a run
page's series (first read of the files, then cached), and a 1,000,000-point series. Targets
printed as met or MISSED, never asserted.
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
#: the big run's keys: names without numbers, so that no two make a family (the run page folds a
#: family of keys into one card)
METRICS = [
    *("loss", "grad_norm", "learning_rate", "epoch", "eval_loss", "accuracy", "perplexity", "entropy"),
    *("reward", "kl", "tokens_per_second", "step_time", "memory", "clip_ratio", "advantage"),
    *("value_loss", "policy_loss", "throughput", "samples_per_second", "loss_scale"),
]


def seed_run(root: Path, name: str, keys: list[str], points: int, **kw: Any) -> Path:
    from tunetrack import Tracker

    t = Tracker(dir=root, name=name, system=False, **kw).start()
    for step in range(1, points + 1):
        t.log({k: float(step % 97) + i for i, k in enumerate(keys)}, step=step)
        if step % 50_000 == 0:
            t.flush(timeout=60)  # keep the writer's backlog bounded: no row dropped
    t.finish()
    return root / t.id


def clone(src: Path, name: str, **fields: Any) -> str:
    """A copy of a run under a new id (and ``fields`` of its run.json): the same data, a run the
    server has never read."""
    from tunetrack.store import layout

    run_id = layout.new_run_id()
    dst = src.parent / run_id
    shutil.copytree(src, dst)
    meta = json.loads((dst / layout.RUN_JSON).read_text())
    (dst / layout.RUN_JSON).write_text(json.dumps({**meta, "id": run_id, "name": name, **fields}))
    return run_id


def seed(root: Path, reps: int) -> dict[str, Any]:
    from tunetrack import Tracker

    big = seed_run(root, "big", METRICS, 100_000)
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


def fill_table(root: Path, runs: int) -> None:
    """Copies of a few real runs, each logging its framework's keys (Transformers', TRL's, a loop of
    its own), under new ids, names, projects, tags and start times, until the store holds ``runs``."""
    from tunetrack import Tracker
    from tunetrack.store import layout

    keysets = (
        ["loss", "eval_loss", "learning_rate", "grad_norm"],
        ["train/loss", "eval/loss", "train/reward", "train/kl"],
        ["loss", "reward"],
    )
    bases = []
    for i in range(12):
        keys = keysets[i % len(keysets)]
        t = Tracker(dir=root, name=f"base-{i}", project="bases", system=False, config={"lr": 1e-4 * (i + 1)})
        t.start()
        for step in range(1, 101):
            t.log({k: (j + 1) / (step + i) for j, k in enumerate(keys)}, step=step)
        t.finish()
        bases.append((root / t.id, json.loads((root / t.id / layout.RUN_JSON).read_text())["created"]))
    held = sum((folder / layout.RUN_JSON).is_file() for folder in root.iterdir())
    for i in range(runs - held):
        base, created = bases[i % len(bases)]
        tags = [f"lr{i % 7}", "sweep"]
        clone(base, f"sweep-{i:05d}", project=f"sweep-{i % 20}", tags=tags, created=created - i)


def timed(page: Any, url: str, done: Any) -> float:
    from support.helpers import wait_until

    start = time.perf_counter()
    page.goto(url)
    wait_until(done, timeout=120, interval=0.01)
    return time.perf_counter() - start


#: In the page, milliseconds from an action on the runs table until the frame after the table shows
#: its result: the script's work, layout and paint, without the driver's round trips (tens of ms on a
#: loaded 2-core machine, more than the page's own time). The actions: a filter typed (its input
#: event), a click on the name column, a scroll of the window.
IN_PAGE = """async ([action, arg]) => {
  const search = document.getElementById("search");
  const act = {
    filter: () => { search.value = arg; search.dispatchEvent(new Event("input")); },
    sort: () => document.querySelector("th[data-sort='name']").click(),
    scroll: () => scrollBy(0, arg),
  }[action];
  const shows = () => document.getElementById("status").textContent + document.querySelector("#runs tbody tr")?.dataset.run;
  const frame = () => new Promise(resolve => requestAnimationFrame(() => setTimeout(resolve)));
  const before = shows(), start = performance.now();
  act();
  for (let frames = 0; frames < 30; frames++) {  // a scroll is drawn in the next frame
    await frame();
    if (shows() !== before) break;
  }
  return performance.now() - start;
}"""


def use_table(page: Any, prefix: str) -> dict[str, list[float]]:
    """Seconds (``IN_PAGE``) a drawn table of 10,000 runs takes to show a filter that 1,000 of them
    match (``prefix``) and to show all again, a sort by name, and a scroll of thousands of rows."""

    def seconds(action: str, arg: Any = None) -> float:
        return float(page.evaluate(IN_PAGE, [action, arg])) / 1e3

    return {
        "filter": [seconds("filter", prefix), seconds("filter", "")],
        "sort": [seconds("sort")],
        "scroll": [seconds("scroll", 100_000)],
    }


def table_drawn(page: Any, runs: int) -> Any:
    """Whether the runs table holds all ``runs`` and has drawn its first screen of rows (only the rows
    on screen are drawn)."""
    status = f"{runs:,} of {runs:,} runs"  # as the page writes numbers (toLocaleString, en-US)
    return lambda: page.inner_text("#status") == status and page.locator("#runs tbody tr").count()


def api_traffic(page: Any) -> tuple[int, int]:
    """(requests, bytes) the page sent to /api/ so far, from the browser's resource timing."""
    entries = page.evaluate(
        "performance.getEntriesByType('resource').filter(e => e.name.includes('/api/'))"
        ".map(e => e.encodedBodySize)"
    )
    return len(entries), sum(entries)


def zoom(page: Any, chart: Any) -> float:
    """Drag across ``chart``'s plot area; seconds from releasing the mouse until it is drawn again."""
    from support.helpers import drag_across, wait_until

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
    parser.add_argument(
        "--many-keys",
        action="store_true",
        help="only the run page of 10,240 keys x 1,000 steps (ui_many_keys.py)",
    )
    opts = parser.parse_args()
    if opts.many_keys:
        import ui_many_keys

        with tempfile.TemporaryDirectory() as tmp:
            ui_many_keys.run(opts.reps or (3 if opts.quick else 5), Path(tmp), CHROMIUM_ARGS, VIEWPORT)
        return
    from playwright.sync_api import sync_playwright

    from support.helpers import Server, wait_until  # the same server harness the browser tests use
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

            def charts_drawn(page: Any) -> Any:
                """Every chart on the first screen drawn (there is one at least)."""
                return lambda: page.evaluate(
                    """() => {
                      const near = [...document.querySelectorAll('#charts .chart')]
                        .filter(c => c.getBoundingClientRect().top < innerHeight);
                      return near.length > 0 && near.every(c => c.dataset.points !== undefined);
                    }"""
                )

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

            fill_table(root, 10_000)
            first, response = server_ms(base, "/api/runs")  # the runs the server has not read yet
            again = statistics.median(server_ms(base, "/api/runs")[0] for _ in range(reps))
            unchanged = []
            for _ in range(reps):  # the page's poll, with the ETag its browser has
                start = time.perf_counter()
                poll = httpx.get(base + "/api/runs", headers={"If-None-Match": response.headers["etag"]})
                unchanged.append((time.perf_counter() - start) * 1e3)
            notes.append(
                f"GET /api/runs (10,000 runs): first {first:.0f} ms, then {again:.0f} ms; "
                f"{len(response.content) / 1e3:.0f} kB; a poll while nothing changed: "
                f"{statistics.median(unchanged):.0f} ms ({poll.status_code}, {len(poll.content)} bytes)"
            )
            for i in range(reps):
                table = browser.new_context(viewport=VIEWPORT).new_page()
                record("runs table, 10,000 runs", timed(table, base + "/", table_drawn(table, 10_000)))
                for action, samples in use_table(table, f"sweep-0{i % 9 + 1}").items():
                    for seconds in samples:
                        record(f"10,000 runs: {action}", seconds)
                table.context.close()
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
        "runs table, 10,000 runs": 1.0,
        "10,000 runs: filter": 0.1,  # no visible delay
        "10,000 runs: sort": 0.1,
        "10,000 runs: scroll": 0.1,
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
