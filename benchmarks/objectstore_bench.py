"""tunetrack with its run store in object storage, against a real S3-compatible server (moto's, started
here on 127.0.0.1) through the same client that talks to AWS.

    python benchmarks/objectstore_bench.py [--quick] [--reps N] [--runs N]

Rows (medians over repetitions; targets printed as met or MISSED, never asserted):

1. ``log()``: µs per call of run_all's log10 loop (10 fresh floats a call, 300,000 calls), a local
   folder against ``s3://``, each repetition in a fresh process, the two interleaved, 9 repetitions
   (target: s3 within 10%).
2. ``log()`` to readable: seconds from a ``log()`` in one process until a reader in another sees the
   point in the bucket (target: median <= the upload interval + 1 s).
3. ``tunetrack ls`` over N runs in the bucket (1,000; 100 with --quick), the command as a user runs
   it: the first listing ever (no compact object yet), cold (another machine: empty cache), warm
   (targets: cold <= 3 s, warm <= 0.5 s), and the requests each makes (counted by a proxy).
4. The dashboard's runs table (``GET /api/runs`` of ``tunetrack ui --dir s3://...``) over the same
   bucket, warm (target <= 1 s).
5. TensorBoard loading the same number of runs (one scalar each) from the same bucket
   (``EventMultiplexer.AddRunsFromDirectory`` + ``Reload``), where tensorboard and boto3 are installed.
6. ``--only newest``: what a user opening a big bucket sees first: ``tunetrack ls --limit 20`` cold
   (another machine: an empty cache) and warm (targets: <= 1 s), and a fresh dashboard's first screen
   (``GET /api/runs?newest=100`` on a fresh ``tunetrack ui`` with an empty cache: target <= 2 s), with
   the requests each makes. Seeding 100,000 runs into moto takes about half an hour, so ``--server URL
   --prefix P`` measures a bucket seeded once and kept (``--seed-only`` seeds it and leaves the server
   running).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import urllib.request
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SRC = ROOT / "src"
BUCKET = "bench"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Moto:
    """moto's S3 server in a subprocess, with one bucket."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"{self.url}/moto-api/", timeout=1)
                break
            except OSError:
                if time.monotonic() > deadline or self.proc.poll() is not None:  # type: ignore[union-attr]
                    raise RuntimeError("moto's server did not start") from None
                time.sleep(0.05)
        urllib.request.urlopen(urllib.request.Request(f"{self.url}/{BUCKET}", method="PUT"), timeout=10)

    def env(self, endpoint: str | None = None) -> dict[str, str]:
        return {
            "AWS_ENDPOINT_URL": endpoint or self.url,
            "AWS_ACCESS_KEY_ID": "bench",
            "AWS_SECRET_ACCESS_KEY": "bench",
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_ALLOW_HTTP": "true",
            "AWS_EC2_METADATA_DISABLED": "true",
            "AWS_METADATA_ENDPOINT": "http://127.0.0.1:9",
            "AWS_CONFIG_FILE": os.devnull,
            "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
        }

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(timeout=10)

    @classmethod
    def running(cls, url: str) -> Moto:
        """A server already running (``--server``): used, never stopped."""
        moto = cls.__new__(cls)
        moto.url, moto.port, moto.proc = url.rstrip("/"), int(url.rstrip("/").rsplit(":", 1)[1]), None
        return moto


def python(code: str, *args: str, env: dict[str, str], timeout: float = 600) -> str:
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        env={**os.environ, "PYTHONPATH": f"{SRC}{os.pathsep}{HERE}", **env},
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "failed")
    return proc.stdout


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"


# -- 1. log() -----------------------------------------------------------------------------------------
LOG_WORKER = """
    import sys, time
    from run_all import loop10, rows10
    from tunetrack import Tracker
    rows = rows10(int(sys.argv[2]))
    t = Tracker(dir=sys.argv[1], system=False).start()
    seconds, done = loop10(t.log, rows, 600)
    began = time.perf_counter()
    t.finish()
    print(seconds / done * 1e6, time.perf_counter() - began)
"""


def bench_log(moto: Moto, work: Path, reps: int, calls: int) -> dict[str, Any]:
    out: dict[str, list[float]] = {"local": [], "s3": []}
    finish: dict[str, list[float]] = {"local": [], "s3": []}
    for rep in range(reps):
        order = ["local", "s3"] if rep % 2 == 0 else ["s3", "local"]
        for where in order:
            target = str(work / f"local-{rep}") if where == "local" else f"s3://{BUCKET}/log-{rep}"
            env = {
                **moto.env(),
                "TUNETRACK_SPOOL": str(work / "spool"),
                "TUNETRACK_CACHE": str(work / "cache"),
            }
            per_call, fin = map(float, python(LOG_WORKER, target, str(calls), env=env).split())
            out[where].append(per_call)
            finish[where].append(fin)
            print(
                f"  [log {rep + 1}/{reps}] {where:<6} {per_call:6.2f} µs/call  finish {fin:.2f} s",
                file=sys.stderr,
            )
    ratio = median(out["s3"]) / median(out["local"])
    return {
        "local_us": median(out["local"]),
        "s3_us": median(out["s3"]),
        "ratio": ratio,
        "local_finish_s": median(finish["local"]),
        "s3_finish_s": median(finish["s3"]),
        "target_met": ratio <= 1.10,
    }


# -- 2. log() to readable --------------------------------------------------------------------------------
LIVE_WRITER = """
    import sys, time
    from tunetrack import Tracker
    t = Tracker(dir=sys.argv[1], name="live", system=False).start()
    print(t.id, flush=True)
    for step in range(1, int(sys.argv[2]) + 1):
        t.log({"loss": 1.0 / step}, step=step)
        print(step, time.time(), flush=True)
        time.sleep(0.25)
    t.finish()
"""


def bench_live(moto: Moto, work: Path, steps: int) -> dict[str, Any]:
    url = f"s3://{BUCKET}/live-{uuid.uuid4().hex[:6]}"
    env = {**os.environ, **moto.env(), "PYTHONPATH": str(SRC), "TUNETRACK_SPOOL": str(work / "spool-live")}
    writer = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(LIVE_WRITER), url, str(steps)],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert writer.stdout is not None
    run_id = writer.stdout.readline().strip()
    logged: dict[int, float] = {}
    seen: dict[int, float] = {}
    os.environ.update(moto.env())
    os.environ["TUNETRACK_CACHE"] = str(work / "cache-live")
    import threading

    from tunetrack.reader import open_run

    def read_stdout() -> None:
        for line in writer.stdout:  # type: ignore[union-attr]
            step, when = line.split()
            logged[int(step)] = float(when)

    threading.Thread(target=read_stdout, daemon=True).start()
    deadline = time.monotonic() + steps * 0.25 + 60
    while time.monotonic() < deadline and len(seen) < steps:
        try:
            run = open_run(run_id, dir=url)
            now = time.time()
            for step in run.series("loss").steps.tolist():
                seen.setdefault(int(step), now)
        except Exception:
            pass
        time.sleep(0.1)
    writer.wait(timeout=60)
    delays = [seen[s] - logged[s] for s in seen if s in logged]
    interval = float(os.environ.get("TUNETRACK_UPLOAD_INTERVAL", "10"))
    return {
        "median_s": median(delays),
        "max_s": max(delays) if delays else float("nan"),
        "points": len(delays),
        "upload_interval_s": interval,
        "target_met": median(delays) <= interval + 1.0,
    }


# -- 3. and 4. listing a bucket ------------------------------------------------------------------------
def seed(moto: Moto, prefix: str, runs: int) -> None:
    """One real run, then ``runs`` copies of its objects under new ids (as many PUTs as real runs make)."""
    os.environ.update(moto.env())
    from obstore.store import from_url

    from tunetrack import Tracker

    url = f"s3://{BUCKET}/{prefix}"
    with Tracker(dir=url, name="template", system=False, config={"lr": 1e-4, "lora": {"r": 8}}) as t:
        for step in range(1, 101):
            t.log({"loss": 1.0 / step, "lr": 1e-4}, step=step)
    import obstore

    store = from_url(url)
    objects = {}
    for batch in obstore.list(store):
        for meta in batch:
            objects[meta["path"]] = bytes(obstore.get(store, meta["path"]).bytes())

    def clone(i: int) -> None:
        new = f"c{i:07d}"
        for key, data in objects.items():
            if "_compact" in key:
                continue
            body = data
            if key.endswith(".json"):
                text = data.decode().replace(t.id, new).replace('"template"', f'"run-{i}"')
                body = text.encode()
            obstore.put(store, key.replace(t.id, new), body)

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(clone, range(runs - 1)))


def delete_compacts(moto: Moto, prefix: str) -> None:
    import obstore
    from obstore.store import from_url

    os.environ.update(moto.env())
    store = from_url(f"s3://{BUCKET}/{prefix}")
    for batch in obstore.list(store, ".index-compact/"):
        for meta in batch:
            obstore.delete(store, meta["path"])


#: ``tunetrack ls --where`` as a sweep asks it: a config value and a metric aggregate of every run
WHERE = ("--where", "config.lora.r >= 8 and loss:min < 0.5")


def ls(url: str, env: dict[str, str], *extra: str) -> tuple[float, int]:
    began = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-m", "tunetrack", "ls", "--dir", url, "--json", *extra],
        env={**os.environ, "PYTHONPATH": str(SRC), **env},
        capture_output=True,
        text=True,
        timeout=600,
    )
    seconds = time.perf_counter() - began
    if out.returncode != 0:
        raise RuntimeError(out.stderr.strip())
    return seconds, len(json.loads(out.stdout))


def bench_list(moto: Moto, work: Path, runs: int, reps: int) -> dict[str, Any]:
    prefix = f"many-{uuid.uuid4().hex[:6]}"
    began = time.perf_counter()
    seed(moto, prefix, runs)
    print(f"  seeded {runs} runs in {time.perf_counter() - began:.0f} s", file=sys.stderr)
    url = f"s3://{BUCKET}/{prefix}"
    times: dict[str, list[float]] = {"first": [], "cold": [], "warm": [], "where": []}
    for rep in range(reps):
        delete_compacts(moto, prefix)
        cache = work / f"cache-ls-{rep}"
        env = {**moto.env(), "TUNETRACK_CACHE": str(cache)}
        seconds, count = ls(url, env)
        assert count == runs, count
        times["first"].append(seconds)
        times["cold"].append(ls(url, {**env, "TUNETRACK_CACHE": str(work / f"cache-ls-{rep}-other")})[0])
        times["warm"].append(ls(url, env)[0])
        seconds, count = ls(url, env, *WHERE)
        assert count == runs, count  # every copy has r = 8 and reached 0.01
        times["where"].append(seconds)
        print(
            f"  [ls {rep + 1}/{reps}] first {times['first'][-1]:.2f} s  cold {times['cold'][-1]:.2f} s  warm {times['warm'][-1]:.2f} s",
            file=sys.stderr,
        )
    requests = count_requests(moto, prefix, work)
    api = bench_api(moto, url, work)
    return {
        "runs": runs,
        **{f"{k}_s": median(v) for k, v in times.items()},
        "requests": requests,
        "api": api,
        "cold_met": median(times["cold"]) <= 3.0,
        "warm_met": median(times["warm"]) <= 0.5,
    }


def count_requests(moto: Moto, prefix: str, work: Path) -> dict[str, int]:
    """The requests each listing makes, counted by a proxy in front of the server (timed without it:
    the proxy opens a connection per request)."""
    sys.path.insert(0, str(ROOT / "tests"))
    from objectstore.proxy import FaultProxy

    url = f"s3://{BUCKET}/{prefix}"
    out = {}
    with FaultProxy("127.0.0.1", moto.port) as proxy:
        env = {**moto.env(proxy.url)}
        delete_compacts(moto, prefix)
        for name, cache, extra in (
            ("first", "count-a", ()),
            ("cold", "count-b", ()),
            ("warm", "count-b", ()),
            ("where", "count-b", WHERE),
        ):
            proxy.requests.clear()
            ls(url, {**env, "TUNETRACK_CACHE": str(work / cache)}, *extra)
            out[name] = proxy.count()
    return out


@contextlib.contextmanager
def dashboard(moto: Moto, url: str, cache: Path) -> Iterator[str]:
    """A fresh ``tunetrack ui`` over ``url`` with the cache ``cache``: its base URL once it answers."""
    import httpx

    port = free_port()
    env = {**os.environ, **moto.env(), "PYTHONPATH": str(SRC), "TUNETRACK_CACHE": str(cache)}
    server = subprocess.Popen(
        [sys.executable, "-m", "tunetrack", "ui", "--dir", url, "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        while True:
            try:
                httpx.get(base + "/static/app.css", timeout=1)
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        yield base
    finally:
        server.terminate()
        server.wait(timeout=15)


def bench_api(moto: Moto, url: str, work: Path) -> dict[str, Any]:
    import httpx

    with dashboard(moto, url, work / "cache-ui") as base:
        began = time.perf_counter()
        rows = httpx.get(base + "/api/runs", timeout=600).json()
        first = time.perf_counter() - began
        warm = []
        for _ in range(5):
            began = time.perf_counter()
            httpx.get(base + "/api/runs", timeout=600).raise_for_status()
            warm.append(time.perf_counter() - began)
    return {
        "rows": len(rows),
        "first_s": first,
        "warm_s": median(warm),
        "target_met": median(warm) <= 1.0,
    }


# -- 6. the first screen of a big bucket -----------------------------------------------------------------
def bench_newest(moto: Moto, work: Path, prefix: str | None, runs: int, reps: int) -> dict[str, Any]:
    if prefix is None:
        prefix = f"newest-{uuid.uuid4().hex[:6]}"
        began = time.perf_counter()
        seed(moto, prefix, runs)
        print(f"  seeded {runs} runs in {time.perf_counter() - began:.0f} s", file=sys.stderr)
    url = f"s3://{BUCKET}/{prefix}"
    env = {**moto.env(), "TUNETRACK_CACHE": str(work / "cache-newest-warm")}
    began = time.perf_counter()
    ls(url, env, "--limit", "20")  # the first look ever writes the compact object, where none is yet
    out: dict[str, Any] = {"first_s": time.perf_counter() - began}
    times: dict[str, list[float]] = {"cold": [], "warm": [], "screen": [], "screen_from_start": []}
    for rep in range(reps):
        cold = {**env, "TUNETRACK_CACHE": str(work / f"cache-newest-{rep}")}
        times["cold"].append(ls(url, cold, "--limit", "20")[0])
        times["warm"].append(ls(url, env, "--limit", "20")[0])
        screen, from_start = first_screen(moto, url, work / f"cache-screen-{rep}")
        times["screen"].append(screen)
        times["screen_from_start"].append(from_start)
        print(
            f"  [newest {rep + 1}/{reps}] ls --limit 20 cold {times['cold'][-1]:.2f} s, warm {times['warm'][-1]:.2f} s;"
            f" first screen {times['screen'][-1]:.2f} s",
            file=sys.stderr,
        )
    sys.path.insert(0, str(ROOT / "tests"))
    from objectstore.proxy import FaultProxy

    with FaultProxy("127.0.0.1", moto.port) as proxy:
        counted = {**moto.env(proxy.url)}
        for name, cache in (("cold", "count-newest"), ("warm", "count-newest")):
            proxy.requests.clear()
            ls(url, {**counted, "TUNETRACK_CACHE": str(work / cache)}, "--limit", "20")
            out[f"{name}_requests"] = proxy.count()
    return {**out, "runs": runs, **{f"{k}_s": median(v) for k, v in times.items()}}


def first_screen(moto: Moto, url: str, cache: Path) -> tuple[float, float]:
    """Seconds from a fresh ``tunetrack ui`` answering (empty cache) to its first screen's rows, and
    from its start."""
    import httpx

    started = time.perf_counter()
    with dashboard(moto, url, cache) as base:
        began = time.perf_counter()
        rows = httpx.get(base + "/api/runs?newest=100", timeout=600).json()
        assert len(rows) == 100, len(rows)
        return time.perf_counter() - began, time.perf_counter() - started


# -- 5. TensorBoard ---------------------------------------------------------------------------------------
TB_READER = """
    import sys, time
    from tensorboard.backend.event_processing import plugin_event_multiplexer as pem
    began = time.perf_counter()
    m = pem.EventMultiplexer()
    m.AddRunsFromDirectory(sys.argv[1])
    m.Reload()
    print(len(m.Runs()), time.perf_counter() - began)
"""


def bench_tensorboard(moto: Moto, work: Path, runs: int) -> dict[str, Any] | str:
    try:
        import boto3  # noqa: F401  (TensorBoard reads s3:// through boto3)
        from tensorboard.compat.proto import event_pb2, summary_pb2
        from tensorboard.summary.writer.event_file_writer import EventFileWriter
    except ImportError as exc:
        return f"not installed ({exc.name})"
    import obstore
    from obstore.store import from_url

    os.environ.update(moto.env())
    local = work / "tb"
    for i in range(runs):
        writer = EventFileWriter(str(local / f"run-{i}"))
        summary = summary_pb2.Summary(
            value=[summary_pb2.Summary.Value(tag="loss", simple_value=1.0 / (i + 1))]
        )
        writer.add_event(event_pb2.Event(wall_time=time.time(), step=1, summary=summary))
        writer.close()
    prefix = f"tb-{uuid.uuid4().hex[:6]}"
    store = from_url(f"s3://{BUCKET}/{prefix}")
    files = [p for p in local.rglob("*") if p.is_file()]
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda p: obstore.put(store, p.relative_to(local).as_posix(), p.read_bytes()), files))
    env = {**moto.env(), "S3_ENDPOINT": moto.url, "S3_USE_HTTPS": "0", "S3_VERIFY_SSL": "0"}
    try:
        loaded, seconds = python(TB_READER, f"s3://{BUCKET}/{prefix}", env=env, timeout=900).split()
    except (RuntimeError, subprocess.TimeoutExpired) as exc:
        return f"error: {exc}"
    return {"runs": int(loaded), "seconds": float(seconds)}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="small sizes, 3 repetitions (CI smoke)")
    parser.add_argument("--reps", type=int, help="repetitions (default 5, 3 with --quick)")
    parser.add_argument("--runs", type=int, help="runs in the bucket for the listing rows (default 1,000)")
    parser.add_argument(
        "--only",
        choices=["log", "live", "list", "tensorboard", "newest"],
        action="append",
        help="these rows only (repeatable; newest runs only when named)",
    )
    parser.add_argument(
        "--server", help="an S3 server already running (its bucket 'bench'): not started here"
    )
    parser.add_argument(
        "--prefix", help="with --server: the --runs runs already seeded there (the newest row)"
    )
    parser.add_argument(
        "--seed-only",
        action="store_true",
        help="seed --runs runs, print the server and prefix, leave it running",
    )
    args = parser.parse_args()
    reps = args.reps or (3 if args.quick else 5)
    runs = args.runs or (100 if args.quick else 1000)
    # the log() row: a longer loop and more repetitions than the rest (µs differences are small)
    calls, log_reps = (20_000, 3) if args.quick else (300_000, 9)
    work = Path(tempfile.mkdtemp(prefix="tunetrack-objbench-"))
    os.environ.setdefault("TUNETRACK_UPLOAD_INTERVAL", "10")
    os.environ["TUNETRACK_SPOOL"] = str(work / "spool")
    moto = Moto.running(args.server) if args.server else Moto()
    if args.seed_only:
        prefix = f"seeded-{uuid.uuid4().hex[:6]}"
        seed(moto, prefix, runs)
        print(f"--server {moto.url} --prefix {prefix}")
        return
    results: dict[str, Any] = {}
    try:
        rows = {
            "log": ("1. log()", lambda: bench_log(moto, work, log_reps, calls)),
            "live": ("2. log() to readable", lambda: bench_live(moto, work, 40 if args.quick else 80)),
            "list": ("3./4. listing", lambda: bench_list(moto, work, runs, reps)),
            "tensorboard": ("5. TensorBoard", lambda: bench_tensorboard(moto, work, runs)),
            "newest": ("6. the first screen", lambda: bench_newest(moto, work, args.prefix, runs, reps)),
        }
        for name, (title, bench) in rows.items():
            if (not args.only and name != "newest") or (args.only and name in args.only):
                print(title, file=sys.stderr)
                results[name] = bench()
    finally:
        moto.stop()
        shutil.rmtree(work, ignore_errors=True)
    report(results)
    out = HERE / "results" / "objectstore.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(results, indent=2))


def report(r: dict[str, Any]) -> None:
    print()
    print("tunetrack on object storage (moto's S3 server on 127.0.0.1), medians")
    if (log := r.get("log")) is not None:
        print(
            f"1. log(): local {log['local_us']:.2f} µs/call, s3 {log['s3_us']:.2f} µs/call, ratio {log['ratio']:.3f}  (<= 1.10: {verdict(log['target_met'])})"
        )
        print(
            f"   finish(): local {log['local_finish_s']:.2f} s, s3 {log['s3_finish_s']:.2f} s (the last upload included)"
        )
    if (live := r.get("live")) is not None:
        print(
            f"2. log() to readable in the bucket: median {live['median_s']:.2f} s, max {live['max_s']:.2f} s over {live['points']} points  (<= {live['upload_interval_s']:.0f} s + 1 s: {verdict(live['target_met'])})"
        )
    if (lst := r.get("list")) is not None:
        req = lst["requests"]
        print(
            f"3. tunetrack ls, {lst['runs']:,} runs: first listing {lst['first_s']:.2f} s ({req['first']} requests), cold {lst['cold_s']:.2f} s ({req['cold']} requests; <= 3 s: {verdict(lst['cold_met'])}), warm {lst['warm_s']:.2f} s ({req['warm']} requests; <= 0.5 s: {verdict(lst['warm_met'])})"
        )
        print(
            f"   ls --where '{WHERE[1]}', warm: {lst['where_s']:.2f} s ({req['where']} requests; <= 1 s: {verdict(lst['where_s'] <= 1.0)})"
        )
        api = lst["api"]
        print(
            f"4. dashboard runs table (GET /api/runs, {api['rows']:,} rows): first {api['first_s']:.2f} s, warm {api['warm_s']:.3f} s  (<= 1 s: {verdict(api['target_met'])})"
        )
    if (tb := r.get("tensorboard")) is not None:
        if isinstance(tb, dict):
            cold = f" (tunetrack ls cold: {lst['cold_s']:.2f} s)" if lst is not None else ""
            print(
                f"5. TensorBoard, the same {tb['runs']:,} runs from the same bucket: {tb['seconds']:.2f} s to load{cold}"
            )
        else:
            print(f"5. TensorBoard: {tb}")
    if (new := r.get("newest")) is not None:
        print(
            f"6. {new['runs']:,} runs: ls --limit 20 cold {new['cold_s']:.2f} s ({new['cold_requests']} requests), warm {new['warm_s']:.2f} s ({new['warm_requests']} requests)  (<= 1 s: {verdict(max(new['cold_s'], new['warm_s']) <= 1.0)})"
        )
        print(
            f"   a fresh dashboard's first screen (newest=100): {new['screen_s']:.2f} s after it answers, {new['screen_from_start_s']:.2f} s from its start  (<= 2 s: {verdict(new['screen_s'] <= 2.0)}); the first look ever (no compact object): {new['first_s']:.1f} s"
        )


if __name__ == "__main__":
    main()
