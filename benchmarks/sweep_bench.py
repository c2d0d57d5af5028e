"""The runs table at 10,000 runs with metric aggregates (issue 23): do best/min/max need every run's
data? Each timing is a fresh process (a cold reader), median of ``--reps``.

    PYTHONPATH=src python benchmarks/sweep_bench.py [--runs 10000] [--reps 3] [--before SRC]

``--before SRC``: another checkout's ``src`` (main), timed on the same store for the plain listing.
The store is ``ui_bench.fill_table``'s (copies of 12 real runs); then the same store with the stored
aggregates removed from every end record, which is what a reader meets without them (runs written
before they were stored): every aggregate is computed from the data.

Each listing is timed twice: with what readers keep of the runs (the store index's snapshot, and
the dashboard's ``.rows.msgpack``: any earlier listing wrote them) and with none (deleted before each
repetition: the first listing of runs never listed). The dashboard's runs table cold: a fresh
``tunetrack ui`` process each repetition, a fresh Chromium page, from navigation until the first
screen of rows is drawn (``--no-browser`` skips it): navigating as soon as the server answers (the
worst case: it is still building its table), and ``OPENED_AFTER`` seconds later, as a user opens the
link it printed.
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
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

CATALOG = "import sys; from tunetrack.reader import Catalog; rows = Catalog(sys.argv[1]).rows(keys=['loss', 'eval_loss']); print(len(rows))"


def timed(src: str, args: list[str], reps: int, before: Any = None) -> float:
    env = {**os.environ, "PYTHONPATH": src}
    times = []
    for _ in range(reps):
        if before is not None:
            before()
        start = time.perf_counter()
        subprocess.run([sys.executable, *args], env=env, check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def unlisted(root: Path) -> None:
    """What readers kept of the runs forgotten: the dashboard's rows, and what they handed back to the
    store's index (its snapshot; the writers' log stays, as it is on a store never listed)."""
    (root / ".rows.msgpack").unlink(missing_ok=True)
    (root / ".index" / "snapshot.msgpack").unlink(missing_ok=True)


#: seconds between a fresh ``tunetrack ui`` answering and a user's browser asking for the page: the
#: second way of measuring it (``tunetrack ui`` builds its table as it starts, ``ui.app.warm``)
OPENED_AFTER = 2.0


def dashboard_cold(root: Path, runs: int, reps: int, forget: bool, after: float = 0.0) -> float:
    """A fresh server and page each time; ``forget``: the store's listing deleted first; ``after``:
    seconds from the server's first answer to the navigation (0: at once, the worst case)."""
    from playwright.sync_api import sync_playwright
    from ui_bench import table_drawn, timed

    sys.path.insert(0, str(HERE.parent / "tests"))
    from support.helpers import Server

    times = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium")
        for _ in range(reps):
            if forget:
                unlisted(root)
            server = Server(root)
            try:
                page = browser.new_page(viewport={"width": 1400, "height": 900})
                time.sleep(after)  # a user opening the link the server printed
                times.append(timed(page, server.base + "/", table_drawn(page, runs)))
                page.close()
            finally:
                server.stop()
        browser.close()
    return statistics.median(times)


def strip(root: Path) -> None:
    for end in root.glob("*/*.end.json"):
        data = json.loads(end.read_text())
        data.pop("aggregates", None)
        end.write_text(json.dumps(data))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--before", default=None)
    parser.add_argument("--no-browser", action="store_true")
    parser.add_argument("--dir", default=None, help="a store built by an earlier run (kept)")
    opts = parser.parse_args()
    from ui_bench import fill_table

    src = str(HERE.parent / "src")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(opts.dir) if opts.dir else Path(tmp) / "runs"
        if not root.exists():
            start = time.perf_counter()
            fill_table(root, opts.runs)
            print(f"store of {opts.runs} runs built in {time.perf_counter() - start:.0f} s", flush=True)
            subprocess.run(
                [sys.executable, "-m", "tunetrack", "ls", "--dir", str(root), "--limit", "1"],
                env={**os.environ, "PYTHONPATH": src},
                check=True,
                capture_output=True,
            )
        ls = ["-m", "tunetrack", "ls", "--dir", str(root), "--limit", "20"]
        cases = {
            "ls --limit 20": ls,
            "ls --limit 20 --json": [*ls, "--json"],
            "ls --limit 20 --sort loss:min": [*ls, "--sort", "loss:min"],
            "ls --limit 20 --where 'loss:min < 0.02' --sort eval_loss:best": [
                *ls,
                "--where",
                "loss:min < 0.02",
                "--sort",
                "eval_loss:best",
            ],
            "dashboard table, cold (Catalog.rows)": ["-c", CATALOG, str(root)],
        }
        results: dict[str, dict[str, float]] = {}
        for label, args in cases.items():
            results[label] = {"stored": timed(src, args, opts.reps)}
            results[label]["never listed"] = timed(src, args, opts.reps, before=lambda: unlisted(root))
            if opts.before and "--sort" not in args and "--json" not in args:
                results[label]["before (main)"] = timed(opts.before, args, opts.reps)
            print(label, results[label], flush=True)
        if not opts.no_browser:
            label = "dashboard, fresh server: first screen of rows (Chromium)"
            results[label] = {"stored": dashboard_cold(root, opts.runs, opts.reps, forget=False)}
            results[label]["never listed"] = dashboard_cold(root, opts.runs, opts.reps, forget=True)
            results[label][f"stored, opened {OPENED_AFTER:g} s after start"] = dashboard_cold(
                root, opts.runs, opts.reps, forget=False, after=OPENED_AFTER
            )
            print(label, results[label], flush=True)
        if not opts.dir:  # the aggregates removed: only from a store this run made
            strip(root)
        for label, args in cases.items():
            if "--sort" in args and not opts.dir:
                results[label]["not stored (from the data)"] = timed(src, args, opts.reps)
                print(label, results[label], flush=True)
        print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
