"""A team's store at scale (issue 36): build a folder of 100,000 ended runs once, then measure what
reading it costs. Nothing is asserted (the exit code stays 0).

    PYTHONPATH=src python benchmarks/big_store.py build DIR [--runs 100000] [--templates 200] [--steps 20]
    PYTHONPATH=src python benchmarks/big_store.py measure DIR [--reps 3] [--dashboard] [--compact]

``build`` records ``--templates`` real runs with ``tunetrack.Tracker`` (``--steps`` steps each: a loss every
step, an eval loss every fifth, a learning rate; a LoRA config; 10 projects), then fills the store up
to ``--runs`` with copies of them under new run ids and names, spread over a year of creation times:
each copy's records (``*.ttr``) are the template's bytes, its ``run.json``, process metadata and end
records say its own id, name, project and times, and its Parquet copies (``reader.parquet``) hold its
own id. Recording 100,000 runs through the writer takes hours on two cores (each start, fsync and
finish); copying them takes minutes, and a reader cannot tell a copy from a run (the copies are read
back by ``open_run`` in ``build``'s last step).

``measure`` times, each in a fresh process (medians of ``--reps``; the OS's file cache is left as it
is; ``build`` ends by indexing the copies, as their writers would have): ``tunetrack ls --limit 20``,
``ls --project P --where ... --sort loss:min``, ``tunetrack query "SELECT count(*) FROM metrics"`` and
a ``GROUP BY run`` minimum of the loss joined with ``params``. With ``--dashboard``, a fresh
``tunetrack ui`` and a fresh Chromium page until the first screen of the runs table is drawn
(``sweep_bench.dashboard_cold``): as the last dashboard left the store, and with its kept rows
deleted. With ``--compact``, it then runs
``tunetrack compact`` (its time, points per second, and the bytes per point of ``metrics`` in the
runs' own copies and in the compacted files) and times the two queries again.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
sys.path[:0] = [str(SRC), str(HERE)]

PROJECTS = 10
STEPS = 20
YEAR = 365 * 24 * 3600.0


def _templates(root: Path, n: int, steps: int) -> list[Path]:
    """``n`` runs recorded by the Tracker into ``root``, their folders."""
    from tunetrack import Tracker

    rng = random.Random(0)
    folders = []
    for i in range(n):
        lr, r = rng.choice([1e-5, 3e-5, 1e-4, 3e-4, 1e-3]), rng.choice([4, 8, 16, 32])
        config = {"lr": lr, "lora": {"r": r, "alpha": 2 * r}, "seed": i, "model": "tiny-llama"}
        with Tracker(
            dir=root,
            project=f"project-{i % PROJECTS}",
            name=f"t{i}",
            config=config,
            system=False,
            console=False,
        ) as t:
            for step in range(1, steps + 1):
                row = {"loss": 2.0 / step + rng.random() * 0.1, "learning_rate": lr}
                if step % 5 == 0:
                    row["eval/loss"] = 2.2 / step + rng.random() * 0.1
                t.log(row, step=step)
        folders.append(root / t.id)
    return folders


def _copy(template: Path, dest_root: Path, run_id: str, name: str, project: str, created: float) -> None:
    """A copy of ``template`` as run ``run_id``: its records as they are, its identity its own."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = dest_root / run_id
    out.mkdir()
    run = json.loads((template / "run.json").read_text())
    shift = created - run["created"]
    run.update(id=run_id, name=name, project=project, created=created)
    (out / "run.json").write_text(json.dumps(run))
    for path in template.iterdir():
        if path.name == "run.json":
            continue
        if path.suffix == ".parquet":
            table = pq.read_table(path)
            meta = dict(table.schema.metadata or {})
            tag = json.loads(meta[b"tunetrack"])
            tag["run"] = run_id
            meta[b"tunetrack"] = json.dumps(tag).encode()
            column = table.schema.get_field_index("run")
            if column >= 0:
                table = table.set_column(column, "run", pa.array([run_id] * len(table), pa.string()))
            pq.write_table(table.replace_schema_metadata(meta), out / path.name)
        elif path.suffix == ".json":  # a process's metadata (its run and start) or its end record
            meta = json.loads(path.read_text())
            if "run_id" in meta:
                meta["run_id"] = run_id
            for when in ("start", "time"):
                if isinstance(meta.get(when), (int, float)):
                    meta[when] += shift
            (out / path.name).write_text(json.dumps(meta))
        else:
            shutil.copyfile(path, out / path.name)


def build(root: Path, runs: int, templates: int, steps: int) -> None:
    from tunetrack.reader import list_runs, open_run
    from tunetrack.store.layout import new_run_id
    from tunetrack.store.local import LocalStore

    root.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    made = _templates(root, templates, steps)
    print(f"{templates} runs recorded in {time.perf_counter() - started:.1f} s", flush=True)
    rng = random.Random(1)
    now = time.time()
    started = time.perf_counter()
    for i in range(templates, runs):
        template = made[i % templates]
        _copy(template, root, new_run_id(), f"run-{i}", f"project-{i % PROJECTS}", now - rng.random() * YEAR)
        if i % 10_000 == 0:
            print(f"{i:,} runs ({time.perf_counter() - started:.0f} s)", flush=True)
    print(f"{runs:,} runs in {root} ({time.perf_counter() - started:.0f} s copying)", flush=True)
    started = time.perf_counter()  # the copies were made behind the writers' backs: index them
    print(f"{LocalStore(root).reindex():,} runs indexed ({time.perf_counter() - started:.0f} s)", flush=True)
    sample = open_run(
        f"run-{runs - 1}" if runs > templates else f"t{templates - 1}", root
    )  # a copy reads back as a run: its own id, its points
    assert sample.series("loss").steps.tolist() == list(range(1, steps + 1)), sample.id
    print(f"{len(list_runs(root)):,} runs listed", flush=True)


QUERIES = {
    "query count(*) FROM metrics": "SELECT count(*) FROM metrics",
    "query min loss by run, with lr": (
        "SELECT m.run, p.number AS lr, min(m.value) AS lo FROM metrics m JOIN params p "
        "ON p.run = m.run AND p.key = 'lr' WHERE m.key = 'loss' GROUP BY ALL"
    ),
}


def _timed(args: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "tunetrack", *args],
        check=True,
        capture_output=True,
        env={**os.environ, "PYTHONPATH": str(SRC)},
    )
    return time.perf_counter() - started


def _rows(root: Path, rows: dict[str, list[str]], reps: int) -> None:
    for label, args in rows.items():
        times = [_timed(args) for _ in range(reps)]
        rest = statistics.median(times[1:]) if len(times) > 1 else float("nan")
        shown = ", ".join(f"{t:.2f}" for t in times)
        print(f"{label:32} first {times[0]:6.2f} s   then median {rest:6.2f} s   ({shown})", flush=True)


def _bytes(paths: list[Path]) -> int:
    return sum(p.stat().st_size for p in paths)


def measure(root: Path, reps: int, compacting: bool, dashboard: bool) -> None:
    from tunetrack.manage.compact import compact

    listing = {
        "ls --limit 20": ["ls", "--limit", "20"],
        "ls --project --where --sort": [
            *("ls", "--project", "project-3", "--where", "config.lr >= 1e-4", "--sort", "loss:min"),
            *("--limit", "20"),
        ],
    }
    queries = {label: ["query", sql, "--format", "csv"] for label, sql in QUERIES.items()}
    print(f"{root}: load average {os.getloadavg()[0]:.2f}", flush=True)
    _rows(root, {k: [*v, "--dir", str(root)] for k, v in {**listing, **queries}.items()}, reps)
    if dashboard:
        from sweep_bench import dashboard_cold

        runs = sum(1 for e in os.scandir(root) if not e.name.startswith(".") and e.is_dir())
        for label, forget in (("as the last dashboard left it", False), ("no rows kept", True)):
            seconds = dashboard_cold(root, runs, reps, forget=forget)
            print(f"dashboard first screen, {label:30} median {seconds:6.2f} s", flush=True)
    if not compacting:
        return
    import pyarrow.parquet as pq

    copies = list(root.glob("*/metrics.parquet"))
    points = sum(pq.ParquetFile(p).metadata.num_rows for p in copies)
    done = compact(root)
    compacted = list((root / ".warehouse" / "metrics").rglob("*.parquet"))
    print(
        f"compaction: {done.runs:,} runs, {done.files} files, {done.seconds:.0f} s, {points / done.seconds:,.0f} points/s"
    )
    print(
        f"metrics bytes per point: copies {_bytes(copies) / points:.1f}, compacted {_bytes(compacted) / points:.1f}"
    )
    print(f"after compaction: load average {os.getloadavg()[0]:.2f}", flush=True)
    _rows(root, {k: [*v, "--dir", str(root)] for k, v in queries.items()}, reps)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("what", choices=["build", "measure"])
    parser.add_argument("dir", type=Path)
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--templates", type=int, default=200)
    parser.add_argument(
        "--steps",
        type=int,
        default=STEPS,
        help="build: steps a run (2.2 points a step: 45455 for 10^9 at 10,000 runs)",
    )
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--compact", action="store_true", help="measure: compact, then query again")
    parser.add_argument(
        "--dashboard", action="store_true", help="measure: a fresh tunetrack ui's first screen in Chromium"
    )
    args = parser.parse_args()
    if args.what == "build":
        build(args.dir, args.runs, args.templates, args.steps)
    else:
        measure(args.dir, args.reps, args.compact, args.dashboard)


if __name__ == "__main__":
    main()
