"""Tables of samples at GRPO's scale: 500 steps of 64 completions of about 1.5 kB (a 500-character
prompt, repeated by its 8 generations and drawn again from a pool of 64 across steps, and a 1,000-
character completion of words), logged with ``Tracker.log_table`` and read back.

    python benchmarks/samples_bench.py             # the figures below, as JSON
    python benchmarks/samples_bench.py --steps 100 # smaller
    TUNETRACK_SYSTEM=0 WANDB_SILENT=true python benchmarks/samples_bench.py --peers wandb,trackio

Prints: the store's size against the raw text (target <= 0.5x), the time to open one step on a run
already read (target <= 200 ms), a regular expression over every step, the first time (decoding every
table) and again (target <= 1 s), and what the caller pays per row of ``log_table`` beside one
``log()`` of 10 floats. Not a timed test: run it by hand (docs/benchmarks.md).

``--peers``: W&B offline (``wandb.Table`` per step) and trackio (``trackio.Table``) write the same
tables in the same run, each in a fresh process with the environment ``run_all.py`` gives every
library (offline, no telemetry, everything in a temporary folder): their store on disk and their
caller's cost per row (building the table object and the ``log`` call: what a training loop pays),
beside tunetrack's. What a peer cannot do here is said in its ``cannot`` list.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tunetrack import Tracker
from tunetrack.reader import open_run
from tunetrack.reader.samples import select

WORDS = [f"w{i:x}" for i in range(3000)]


def text(rng: random.Random, chars: int) -> str:
    words: list[str] = []
    size = 0
    while size < chars:
        word = (
            WORDS[min(int(rng.paretovariate(1.2)) - 1, len(WORDS) - 1)]
            if rng.random() < 0.7
            else rng.choice(WORDS)
        )
        words.append(word)
        size += len(word) + 1
    return " ".join(words)[:chars]


def tables(steps: int, rows: int, generations: int, seed: int = 0) -> list[list[dict]]:
    rng = random.Random(seed)
    prompts = [f"Question {i}: " + text(rng, 490) for i in range(64)]
    out = []
    for step in range(1, steps + 1):
        table = []
        for _group in range(rows // generations):
            prompt = rng.choice(prompts)
            for _ in range(generations):
                table.append(
                    {
                        "step": step,
                        "prompt": prompt,
                        "completion": text(rng, 1000),
                        "accuracy_reward": float(rng.random() < 0.4),
                        "format_reward": rng.random(),
                        "advantage": rng.gauss(0, 1),
                    }
                )
        out.append(table)
    return out


#: what each peer cannot do that tunetrack's figures include (said in the output, not measured)
CANNOT = {
    "wandb": [
        "read a table back offline: no local read API (wandb.Api reads the server, after wandb sync)",
        "open a step or run a regex over every step: not measured (no local reader)",
    ],
    "trackio": [
        "open a step or run a regex over every step: not measured (tables are JSON in its SQLite "
        "log rows, read whole by its dashboard)",
    ],
}


def du(folder: Path) -> int:
    """Bytes of every file under ``folder``."""
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def peer_worker(name: str, steps: int, rows: int, generations: int, out: str) -> None:
    """In a fresh process (``--worker``): ``name`` writes the tables, one ``Table`` per step, beside a
    ``log()`` of 10 floats per step; its folder's size and the caller's costs go to ``out``."""
    data = tables(steps, rows, generations)
    columns = list(data[0][0])
    tmp = Path.cwd()
    row = {f"k{i}": float(i) for i in range(10)}
    log_costs, table_costs = [], []
    if name == "wandb":
        import wandb

        run = wandb.init(project="bench", name="samples", dir=str(tmp), mode="offline")
        log, make, finish, store = run.log, wandb.Table, run.finish, tmp / "wandb"
    elif name == "trackio":
        import trackio

        trackio.init(project="bench", name="samples", auto_log_gpu=False, auto_log_cpu=False)
        log, make, finish, store = trackio.log, trackio.Table, trackio.finish, Path(os.environ["TRACKIO_DIR"])
    else:
        raise SystemExit(f"unknown peer {name!r}")
    began = time.perf_counter()
    for step, table in enumerate(data, 1):
        t0 = time.perf_counter()
        log(row, step=step)
        t1 = time.perf_counter()
        log({"completions": make(columns=columns, data=[[r[c] for c in columns] for r in table])}, step=step)
        t2 = time.perf_counter()
        log_costs.append(t1 - t0)
        table_costs.append((t2 - t1) / len(table))
    logged = time.perf_counter() - began
    t0 = time.perf_counter()
    finish()
    finished = time.perf_counter() - t0
    result = {
        "store_bytes": du(store),
        "logging_s": logged,
        "finish_s": finished,
        "log_us_per_call": statistics.median(log_costs) * 1e6,
        "table_us_per_row": statistics.median(table_costs) * 1e6,
        "other_bytes": du(tmp) - du(store),  # caches and staging beside the store, if any
    }
    Path(out).write_text(json.dumps(result))


def peer(name: str, args: argparse.Namespace, raw: int) -> dict[str, Any]:
    """Run ``peer_worker`` for ``name`` in a fresh process and temporary folder; its figures, or why
    it could not run."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from run_all import library_env

    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        out = tmp / ".result.json"
        env = {**library_env(tmp), "TUNETRACK_SYSTEM": "0", "WANDB_SILENT": "true"}
        command = [sys.executable, str(Path(__file__).resolve()), "--worker", name, str(out)]
        command += [
            "--steps",
            str(args.steps),
            "--rows",
            str(args.rows),
            "--generations",
            str(args.generations),
        ]
        proc = subprocess.run(command, cwd=tmp, env=env, capture_output=True, text=True, timeout=3600)
        if proc.returncode != 0 or not out.exists():
            return {"error": (proc.stderr or proc.stdout).strip().splitlines()[-1:], "cannot": CANNOT[name]}
        got = json.loads(out.read_text())
    return {
        "store_mb": round(got["store_bytes"] / 1e6, 2),
        "store_vs_raw": round(got["store_bytes"] / raw, 3),
        "other_mb": round(got["other_bytes"] / 1e6, 2),
        "logging_s": round(got["logging_s"], 1),
        "finish_s": round(got["finish_s"], 1),
        "log_us_per_call": round(got["log_us_per_call"], 2),
        "table_us_per_row": round(got["table_us_per_row"], 3),
        "cannot": CANNOT[name],
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--rows", type=int, default=64)
    parser.add_argument("--generations", type=int, default=8)
    parser.add_argument("--peers", default="", help="wandb,trackio: write the same tables with them too")
    parser.add_argument("--worker", nargs=2, metavar=("PEER", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        peer_worker(args.worker[0], args.steps, args.rows, args.generations, args.worker[1])
        return
    data = tables(args.steps, args.rows, args.generations)
    raw = sum(len(r["prompt"].encode()) + len(r["completion"].encode()) for t in data for r in t)
    with tempfile.TemporaryDirectory() as folder:
        t = Tracker(dir=folder, system=False, health=False).start()
        row = {f"k{i}": float(i) for i in range(10)}
        log_costs, table_costs = [], []
        began = time.perf_counter()
        for step, table in enumerate(data, 1):
            t0 = time.perf_counter()
            t.log(row, step=step)
            t1 = time.perf_counter()
            t.log_table("completions", table)
            t2 = time.perf_counter()
            log_costs.append(t1 - t0)
            table_costs.append((t2 - t1) / len(table))
        t.finish()
        written = time.perf_counter() - began
        store = sum(p.stat().st_size for p in Path(t.run_dir).glob("*.ttr"))

        run = open_run(t.id, dir=folder)
        t0 = time.perf_counter()
        index = run.sample_index()
        first_read = time.perf_counter() - t0
        assert sum(index["completions"].values()) == args.steps * args.rows
        rng = random.Random(1)
        opened = []
        for step in rng.sample(range(1, args.steps + 1), min(20, args.steps)):
            t0 = time.perf_counter()
            got = run.samples("completions", step=step)
            opened.append(time.perf_counter() - t0)
            assert [s["row"] for s in got] == data[step - 1]
        greps = []
        for _ in range(2):
            t0 = time.perf_counter()
            hits = select(run.samples("completions"), grep=r"w1f \w+ w2a")
            greps.append(time.perf_counter() - t0)
    peers = {name: peer(name, args, raw) for name in filter(None, args.peers.split(","))}
    print(
        json.dumps(
            {
                "rows": args.steps * args.rows,
                "raw_text_mb": round(raw / 1e6, 1),
                "store_mb": round(store / 1e6, 2),
                "store_vs_raw": round(store / raw, 3),
                "writer_s": round(written, 1),
                "read_index_ms": round(first_read * 1e3, 1),
                "open_step_ms_median": round(statistics.median(opened) * 1e3, 2),
                "open_step_ms_max": round(max(opened) * 1e3, 2),
                "regex_all_steps_first_s": round(greps[0], 2),
                "regex_all_steps_again_s": round(greps[1], 2),
                "regex_hits": len(hits),
                "log_us_per_call": round(statistics.median(log_costs) * 1e6, 2),
                "log_table_us_per_row": round(statistics.median(table_costs) * 1e6, 3),
                **({"peers": peers} if peers else {}),
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
