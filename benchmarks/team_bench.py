"""A team's dashboard under load (issue 37): 50 readers at once against 10,000 runs, with the access
checks on (``tunetrack ui --team``: every request a person by personal token, every run through
their view) and off (``tunetrack ui``), the same requests in both. Nothing is asserted.

    PYTHONPATH=src python benchmarks/big_store.py build DIR --runs 10000 --templates 100
    PYTHONPATH=src python benchmarks/team_bench.py DIR [--readers 50] [--requests 40] [--reps 3]

Each reader is one person (half of them denied one of the ten projects) sending, one after another,
what a page sends: the runs table (``/api/runs?format=table``, one in ten), a run's metadata
(``/api/runs/{id}?fold=1``) and a run's loss series, for runs they may read, in an order fixed by a
seed. Both servers run in turns (off, on, off, on, ...), each answering every reader's requests once
after one warming look; the figures are the medians over ``--reps`` turns of each turn's p50 and p99
request latency, as the readers' clients measured them (client and server share the machine's cores,
as they would on a small team's box).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
sys.path[:0] = [str(SRC)]
DENIED = "project-9"  # what half of the readers may not read


def _team(folder: Path, readers: int) -> tuple[Path, list[tuple[str, str]]]:
    """A team file for ``readers`` people and each one's (address, token)."""
    from tunetrack.team.file import load_team
    from tunetrack.team.tokens import Tokens

    people = [f"reader{i}@example.test" for i in range(readers)]
    half = json.dumps(people[::2])
    path = folder / "team.toml"
    path.write_text(
        f'[groups]\nteam = {json.dumps(people)}\n\n[[access]]\nprojects = "*"\nread = ["@team"]\n\n'
        f'[[access]]\nprojects = "{DENIED}"\ndeny = {half}\n'
    )
    tokens = Tokens(load_team(path).tokens)
    return path, [(p, tokens.create(p, days=1)[1]) for p in people]


def _runs(root: Path) -> dict[str, str]:
    """Every run's project, by id (the folder store's own files: the benchmark built it)."""
    out = {}
    for d in root.iterdir():
        run_json = d / "run.json"
        if run_json.is_file():
            out[d.name] = json.loads(run_json.read_text()).get("project")
    return out


def _plan(runs: dict[str, str], person: int, requests: int) -> list[str]:
    """One reader's requests: what a page asks, for runs they may read."""
    rng = random.Random(person)
    readable = sorted(r for r, p in runs.items() if not (person % 2 == 0 and p == DENIED))
    out = []
    for i in range(requests):
        run = rng.choice(readable)
        if i % 10 == 0:
            out.append("/api/runs?format=table")
        elif i % 2:
            out.append(f"/api/runs/{run}?fold=1")
        else:
            out.append(f"/api/runs/{run}/series?key=loss&width=600")
    return out


def _start(root: Path, team: Path | None) -> tuple[subprocess.Popen[str], str]:
    """``tunetrack ui`` over ``root`` (``--team``: with the checks on) on a free port."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = [sys.executable, "-m", "tunetrack", "ui", "--dir", str(root), "--port", str(port)]
    if team is not None:
        cmd += ["--team", str(team)]
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, text=True)
    return proc, f"http://127.0.0.1:{port}"


async def _turn(base: str, plans: list[list[str]], tokens: list[str] | None) -> list[float]:
    import httpx

    latencies: list[float] = []

    async def reader(i: int) -> None:
        headers = {"Authorization": f"Bearer {tokens[i]}"} if tokens else {}
        async with httpx.AsyncClient(base_url=base, headers=headers, timeout=120) as client:
            for url in plans[i]:
                t0 = time.perf_counter()
                r = await client.get(url)
                latencies.append(time.perf_counter() - t0)
                if r.status_code != 200:
                    raise RuntimeError(f"{url}: {r.status_code} {r.text[:200]}")

    await asyncio.gather(*(reader(i) for i in range(len(plans))))
    return latencies


def _ready(base: str, token: str | None) -> None:
    import httpx

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{base}/api/runs?format=table", headers=headers, timeout=60).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"{base} did not answer")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dir", type=Path)
    parser.add_argument("--readers", type=int, default=50)
    parser.add_argument("--requests", type=int, default=40, help="per reader and turn")
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    runs = _runs(args.dir)
    plans = [_plan(runs, i, args.requests) for i in range(args.readers)]
    figures: dict[str, list[tuple[float, float]]] = {"off": [], "on": []}
    with tempfile.TemporaryDirectory() as tmp:
        team, people = _team(Path(tmp), args.readers)
        tokens = [t for _, t in people]
        for rep in range(args.reps):
            for mode in ("off", "on"):
                proc, base = _start(args.dir, team if mode == "on" else None)
                try:
                    _ready(base, tokens[0] if mode == "on" else None)
                    got = sorted(asyncio.run(_turn(base, plans, tokens if mode == "on" else None)))
                finally:
                    proc.terminate()
                    proc.wait(timeout=30)
                p50, p99 = got[len(got) // 2], got[int(len(got) * 0.99)]
                figures[mode].append((p50, p99))
                print(
                    f"turn {rep + 1} checks {mode}: {len(got)} requests, p50 {p50 * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms"
                )
    med = {
        m: (statistics.median(f[0] for f in v), statistics.median(f[1] for f in v))
        for m, v in figures.items()
    }
    print(
        f"{len(runs):,} runs, {args.readers} readers × {args.requests} requests, medians of {args.reps} turns"
    )
    for mode, (p50, p99) in med.items():
        print(f"  checks {mode:>3}: p50 {p50 * 1000:7.1f} ms   p99 {p99 * 1000:7.1f} ms")
    print(
        f"  on/off: p50 ×{med['on'][0] / med['off'][0]:.2f}, p99 ×{med['on'][1] / med['off'][1]:.2f} (target p99 ≤ ×1.2)"
    )
    print(f"  load average: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
