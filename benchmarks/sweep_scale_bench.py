"""A sweep at scale (issue 23): 1,000 runs x 5,000 steps x 5 metrics in one project, read as one
experiment. Medians of ``--reps``; nothing asserted (the exit code stays 0).

    PYTHONPATH=src python benchmarks/sweep_scale_bench.py [--runs 1000] [--steps 5000] [--reps 5]

Needs the dashboard's extras and Playwright with Debian's Chromium (the ui session's venv). Measured:

- ``tunetrack ls --where ... --limit 20`` over the 1,000 runs, each a fresh process: the first (cold:
  no listing kept yet) and the next ones (warm: the store's listing kept, the OS's file cache warm);
- the dashboard's API, in one server process, second call onwards (warm): ``/api/groups`` folding
  200 runs (``config.lora.r = 8``) by learning rate over 5 metric columns, ``/api/params`` (parallel
  coordinates and importance over the 1,000 runs);
- in Chromium, the runs page with the hyperparameters panel open, from navigation until the parallel
  coordinates hold one line per run (warm: the server has answered once).
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
SRC = HERE.parent / "src"
sys.path[:0] = [str(SRC), str(HERE.parent / "tests")]

LRS = (1e-5, 3e-5, 1e-4, 3e-4, 1e-3)
RANKS = (4, 8, 16, 32, 64)
KEYS = ("train/loss", "eval/loss", "train/reward", "train/kl", "grad_norm")
WHERE = "config.lr >= 1e-4 and eval/loss:min < 0.5"


def build(root: Path, runs: int, steps: int) -> None:
    """The sweep, written by the real Tracker: lr x rank x seed (40 seeds for 1,000 runs)."""
    os.environ.update(TUNETRACK_PARQUET="0", TUNETRACK_CONSOLE="0")
    import numpy as np

    from tunetrack import Tracker

    rng = np.random.default_rng(0)
    for i in range(runs):
        lr, r, seed = LRS[i % 5], RANKS[(i // 5) % 5], i // 25
        config = {"lr": lr, "lora": {"r": r, "alpha": 2 * r}, "seed": seed, "model": "tiny"}
        floor = 0.2 + 0.1 * abs(np.log10(lr) + 4) + 0.01 * (64 // r)
        with Tracker(
            dir=root, project="sweep", name=f"lr{lr:g}-r{r}-s{seed}", config=config, system=False
        ) as t:
            decay = np.exp(-np.arange(1, steps + 1) / (steps / 5))
            noise = rng.normal(0, 0.01, size=(steps, len(KEYS)))
            for step in range(steps):
                base = floor + decay[step]
                values = (base, base + 0.05, 1 - base, 0.1 * decay[step], 1 + decay[step])
                t.log({k: float(v + n) for k, v, n in zip(KEYS, values, noise[step])}, step=step + 1)


def cli(root: Path, reps: int) -> dict[str, float]:
    args = [sys.executable, "-m", "tunetrack", "ls", "--dir", str(root), "--where", WHERE, "--limit", "20"]
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    times = []
    for _ in range(reps + 1):
        start = time.perf_counter()
        subprocess.run(args, env=env, check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return {"ls --where, cold (first listing)": times[0], "ls --where, warm": statistics.median(times[1:])}


def api(root: Path, reps: int) -> dict[str, float]:
    from fastapi.testclient import TestClient

    from tunetrack.ui.app import create_app

    client = TestClient(create_app(str(root)))
    calls = {
        "/api/groups, 200 runs x 5 metrics": (
            "/api/groups",
            {"by": "lr", "where": "config.lora.r = 8", "key": [f"{k}:min" for k in KEYS]},
        ),
        "/api/params, 1,000 runs": ("/api/params", {"metric": "eval/loss:min"}),
    }
    out = {}
    for label, (path, params) in calls.items():
        times = []
        for _ in range(reps + 1):
            start = time.perf_counter()
            response = client.get(path, params=params)
            response.raise_for_status()
            times.append(time.perf_counter() - start)
        out[f"{label}, first"] = times[0]
        out[f"{label}, warm"] = statistics.median(times[1:])
    return out


def browser(root: Path, runs: int, reps: int) -> dict[str, float]:
    from playwright.sync_api import sync_playwright

    from support.helpers import Server

    out = {}
    server = Server(root)
    try:
        with sync_playwright() as p:
            out = _draw(p, f"{server.base}/?project=sweep&hp=eval/loss:min", runs, reps)
    finally:
        server.stop()
    return out


def _draw(p: Any, url: str, runs: int, reps: int) -> dict[str, float]:
    from support.helpers import wait_until

    chromium = p.chromium.launch(executable_path="/usr/bin/chromium")
    page = chromium.new_page(viewport={"width": 1600, "height": 1000})
    times = []
    for _ in range(reps + 1):
        start = time.perf_counter()
        page.goto(url)
        lines = page.locator(".parcoords path.line")
        wait_until(lambda: lines.count() >= runs, timeout=120, interval=0.01)  # noqa: B023
        times.append(time.perf_counter() - start)
    chromium.close()
    return {
        "parallel coordinates drawn (Chromium), first": times[0],
        "parallel coordinates drawn (Chromium), warm": statistics.median(times[1:]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--steps", type=int, default=5000)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--dir", default=None, help="an existing store made by an earlier run of this")
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(opts.dir) if opts.dir else Path(tmp) / "runs"
        if not root.exists():
            start = time.perf_counter()
            build(root, opts.runs, opts.steps)
            print(
                f"{opts.runs} runs x {opts.steps} steps written in {time.perf_counter() - start:.0f} s",
                flush=True,
            )
        results = {**cli(root, opts.reps), **api(root, opts.reps), **browser(root, opts.runs, opts.reps)}
    for label, seconds in results.items():
        print(f"{label:<55} {seconds:8.3f} s")
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / "sweep_scale.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
