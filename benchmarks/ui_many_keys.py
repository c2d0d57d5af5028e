"""The run page of a mixture-of-experts run (issue 35): 40 layers × 256 experts of
``moe/layer{l}/expert{e}/load`` (10,240 keys a step) and a loss, over 1,000 steps, in Debian's Chromium
driven by Playwright. ``python benchmarks/ui_bench.py --many-keys`` runs it (``ui_bench`` runs the
other workloads).

Rows (seconds from navigation, medians over the repetitions, timed in the page: a MutationObserver
added before the page's scripts notes ``performance.now()`` when each is drawn, so the driver's round
trips on a loaded machine are not counted):

- first chart: the first card of the training charts drawn (the loss, or the family's);
- family heatmap: the family's card drawn, band and heatmap;

each for a cold browser (a fresh profile: uPlot downloaded and compiled) and a warm one (a profile
that has shown a run page), every repetition a copy of the run the server has never read (the first
read of its records, 83 MB, is in the figure), and for a reload of a run the server has read.
Then what the page asked for: its API requests and their bytes, and none per key (no ``/api/series``
of a family's key); and the server's own time for the run's metadata (folded, as the page asks, and
whole) and the family's card.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import time
from pathlib import Path
from typing import Any

import httpx

LAYERS, EXPERTS, STEPS = 40, 256, 1000
GLOB = "moe/layer*/expert*/load"
TARGET = 1.0  # seconds, each row

#: before the page's scripts: when the first card of #charts and the family card are drawn
#: (``data-drawn``, common.js's markDrawn), in ms since navigation began
OBSERVE = """
window.__drawn = {};
new MutationObserver(() => {
  const d = window.__drawn, now = performance.now();
  if (d.first === undefined && document.querySelector("#charts > .chart[data-drawn]")) d.first = now;
  if (d.family === undefined && document.querySelector("#charts > .family[data-drawn]")) d.family = now;
}).observe(document, { subtree: true, childList: true, attributes: true, attributeFilter: ["data-drawn"] });
"""


def seed(root: Path) -> tuple[str, float]:
    """The run, written by the real Tracker: its id and the mean seconds of a ``log()`` call."""
    from tunetrack import Tracker

    names = [f"moe/layer{layer}/expert{expert}/load" for layer in range(LAYERS) for expert in range(EXPERTS)]
    t = Tracker(dir=root, name="moe-10240", system=False, console=False).start()
    spent = 0.0
    for step in range(1, STEPS + 1):
        row = {
            k: (i * 7 + step) % 13 / 10 + (4.0 if i == 4242 and step % 97 == 0 else 0.0)
            for i, k in enumerate(names)
        }
        row["loss"] = 2.0 / step
        start = time.perf_counter()
        t.log(row, step=step)
        spent += time.perf_counter() - start
        if step % 50 == 0:
            t.flush(timeout=60)  # the writer's backlog bounded: no row dropped
    t.finish()
    return t.id, spent / STEPS


def copy(root: Path, run_id: str, name: str) -> str:
    """A copy of the run under a new id, its data files hard links (the same bytes, no disk): a run
    the server has never read."""
    from tunetrack.store import layout

    new_id = layout.new_run_id()
    shutil.copytree(root / run_id, root / new_id, copy_function=os.link)
    meta_file = root / new_id / layout.RUN_JSON
    meta = json.loads(meta_file.read_text())
    meta_file.unlink()  # a link to the original's: written anew, not through it
    meta_file.write_text(json.dumps({**meta, "id": new_id, "name": name}))
    return new_id


def drawn(page: Any, url: str) -> dict[str, float]:
    """Navigate to ``url``; seconds from navigation until the first card and the family card were drawn."""
    from support.helpers import wait_until

    page.goto(url)
    wait_until(lambda: page.evaluate("window.__drawn.family !== undefined"), timeout=120, interval=0.02)
    marks = page.evaluate("window.__drawn")
    return {"first chart": marks["first"] / 1e3, "family heatmap": marks["family"] / 1e3}


def traffic(page: Any) -> list[tuple[str, int]]:
    """(path and query, bytes) of each request the page sent to /api/ (the browser's resource timing)."""
    return page.evaluate(
        "performance.getEntriesByType('resource').filter(e => e.name.includes('/api/'))"
        ".map(e => [e.name.slice(e.name.indexOf('/api/')), e.encodedBodySize])"
    )


def server_ms(base: str, path: str, params: Any = None) -> tuple[float, int]:
    start = time.perf_counter()
    response = httpx.get(base + path, params=params, timeout=120)
    response.raise_for_status()
    return (time.perf_counter() - start) * 1e3, len(response.content)


def run(reps: int, tmp: Path, chromium_args: list[str], viewport: dict[str, int]) -> None:
    from playwright.sync_api import sync_playwright

    from support.helpers import Server

    load_before = os.getloadavg()
    root = tmp / "runs"
    run_id, per_log = seed(root)
    copies = [copy(root, run_id, f"moe-{i}") for i in range(2 * reps + 2)]
    server = Server(root)
    base = server.base
    results: dict[str, list[float]] = {}
    records = sum(path.stat().st_size for path in (root / run_id).glob("*.ttr"))
    notes: list[str] = [
        f"log() of a 10,241-key dict: {per_log * 1e3:.2f} ms a call (mean of {STEPS})",
        f"records: {records / 1e6:.1f} MB, {records / ((LAYERS * EXPERTS + 1) * STEPS):.2f} bytes a point",
    ]

    def record(label: str, marks: dict[str, float]) -> None:
        for name, seconds in marks.items():
            results.setdefault(f"{name}, {label}", []).append(seconds)

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=chromium_args)
        for i in range(reps):  # cold: a fresh profile each time, a run the server has not read
            context = browser.new_context(viewport=viewport)
            context.add_init_script(OBSERVE)
            page = context.new_page()
            record("cold browser", drawn(page, f"{base}/run/{copies[i]}"))
            if i == 0:
                asked = traffic(page)
                per_key = [path for path, _ in asked if path.startswith("/api/series") and "key=moe" in path]
                notes.append(
                    f"run page, cold: {len(asked)} API requests, {sum(n for _, n in asked) / 1e3:.0f} kB; "
                    f"requests per key of the family: {len(per_key)}"
                )
                notes += [f"  {n / 1e3:7.1f} kB  {path[:110]}" for path, n in asked]
            context.close()
        context = browser.new_context(viewport=viewport)
        context.add_init_script(OBSERVE)
        page = context.new_page()
        drawn(page, f"{base}/run/{copies[-1]}")  # uPlot now in this profile's cache
        for i in range(reps):
            record("warm browser", drawn(page, f"{base}/run/{copies[reps + i]}"))
        for _ in range(reps):  # the same run again: the server has read it
            record("reload", drawn(page, f"{base}/run/{copies[-1]}"))
        context.close()
        browser.close()

    fresh = copies[-2]  # never opened by the page
    for label, path, params in (
        ("GET /api/runs/{id}?fold=1 (the page's)", f"/api/runs/{fresh}", {"fold": 1}),
        ("GET /api/runs/{id} (every key)", f"/api/runs/{fresh}", None),
        (
            "GET /api/runs/{id}/across, width 900",
            f"/api/runs/{fresh}/across",
            {"pattern": GLOB, "width": 900, "rows": 80},
        ),
        ("GET /api/runs/{id}/families?match=layer17/", f"/api/runs/{fresh}/families", {"match": "layer17/"}),
    ):
        first, size = server_ms(base, path, params)
        again = statistics.median(server_ms(base, path, params)[0] for _ in range(reps))
        notes.append(f"{label}: first {first:.0f} ms, then {again:.0f} ms; {size / 1e3:.1f} kB")
    server.stop()

    print(f"== run page of 10,240 keys x {STEPS:,} steps (median seconds over {reps}) ==")
    for label, values in results.items():
        value = statistics.median(values)
        verdict = "met   " if value <= TARGET else "MISSED"
        spread = ", ".join(f"{v:.2f}" for v in values)
        print(f"  {verdict} {label:30s} {value:6.2f} s   (target ≤ {TARGET} s; each: {spread})")
    print("== where the time goes ==")
    for note in notes:
        print(f"  {note}")
    after = os.getloadavg()
    print(
        f"  load average: {' '.join(f'{x:.2f}' for x in load_before)} before, {' '.join(f'{x:.2f}' for x in after)} after"
    )
