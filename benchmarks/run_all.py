"""tunetrack against the real peer trackers, side by side in one run.

    python benchmarks/run_all.py            # full: 100k-call loops, 5 repetitions
    python benchmarks/run_all.py --quick    # CI smoke: smaller loops, 3 repetitions

Every (library, workload, repetition) runs in a fresh subprocess, so imports, threads and caches
never leak between libraries. Medians are reported (the machine is noisy); nothing is asserted:
targets are printed as met or MISSED. Results also go to benchmarks/results/latest.json.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
FAST = ("floor", "tunetrack")
PEER_NAMES = ("trackio", "wandb", "swanlab", "tensorboard", "mlflow")
NO_READ_API = ("floor", "wandb", "swanlab")  # W&B offline and SwanLab local have no Python read API
KEYS500 = [f"layer_{i}/grad_norm" for i in range(500)]


# -- worker side: one workload in this process ----------------------------------------------------
def worker(name: str, workload: str, calls: int) -> dict[str, float]:
    sys.path.insert(0, str(HERE))
    from peers import PEERS

    with tempfile.TemporaryDirectory() as tmp:
        tracker = PEERS[name](Path(tmp))
        values = [float(i) * 0.001 for i in range(calls)]
        base_rss = _reset_peak_rss()
        if workload == "log500":
            row = dict.fromkeys(KEYS500, 0.5)
            start = time.perf_counter()
            for i in range(calls):
                row["layer_0/grad_norm"] = values[i]
                tracker.log(row, i)
        elif workload == "read":
            start = time.perf_counter()
            if hasattr(tracker, "bulk"):
                tracker.bulk("loss", values)
            else:
                for i in range(calls):
                    tracker.log({"loss": values[i]}, i)
        else:  # log10 and durable: ten fresh floats per call, the dict built at the call as users do
            start = time.perf_counter()
            for i in range(calls):
                v = values[i]
                tracker.log(
                    {
                        "metric_0": v,
                        "metric_1": v + 1,
                        "metric_2": v + 2,
                        "metric_3": v + 3,
                        "metric_4": v + 4,
                        "metric_5": v + 5,
                        "metric_6": v + 6,
                        "metric_7": v + 7,
                        "metric_8": v + 8,
                        "metric_9": v + 9,
                    },
                    i,
                )
        loop = time.perf_counter() - start
        peak_mb = (_peak_rss() - base_rss) / 2**20
        start = time.perf_counter()
        tracker.finish()
        finish = time.perf_counter() - start
        out = {
            "per_call_us": loop / calls * 1e6,
            "finish_s": finish,
            "loop_s": loop,
            "peak_mb": peak_mb,
            "total_us": (loop + finish) / calls * 1e6,
        }
        if workload in ("read", "durable") and getattr(tracker, "read", None):
            key = "loss" if workload == "read" else "metric_9"
            start = time.perf_counter()
            got = tracker.read(key)
            out["read_ms"] = (time.perf_counter() - start) * 1e3
            out["read_points"] = float(len(got))
        return out


def _status_kb(field: str) -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(field + ":"))


def _reset_peak_rss() -> int:
    """Reset the kernel's high-water mark (VmHWM) and return the current RSS in bytes: the baseline
    is the interpreter with the tracker started, right before the logging loop."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    return _status_kb("VmRSS") * 1024


def _peak_rss() -> int:
    return _status_kb("VmHWM") * 1024


# -- orchestrator side ----------------------------------------------------------------------------
def installed(name: str) -> bool:
    module = {"floor": None, "tensorboard": "tensorboard"}.get(name, name)
    return module is None or importlib.util.find_spec(module) is not None


def run_one(name: str, workload: str, calls: int) -> dict[str, float] | str:
    env = {
        **os.environ,
        "WANDB_MODE": "offline",
        "WANDB_SILENT": "true",
        "TUNETRACK_SYSTEM": "1",
        "SWANLAB_MODE": "local",
        "MLFLOW_ENABLE_SYSTEM_METRICS_LOGGING": "false",
    }
    proc = subprocess.run(
        [sys.executable, __file__, "--worker", name, workload, str(calls)],
        capture_output=True,
        text=True,
        env=env,
        timeout=1800,
    )
    if proc.returncode != 0:
        return "error: " + (proc.stderr.strip().splitlines() or ["?"])[-1][:120]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def median_of(results: list[dict[str, float]], key: str) -> float | None:
    values = [r[key] for r in results if key in r]
    return statistics.median(values) if values else None


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="smaller loops and 3 repetitions (CI smoke)")
    parser.add_argument("--only", action="append", help="limit to these libraries (repeatable)")
    parser.add_argument("--reps", type=int, default=None)
    parser.add_argument(
        "--workload",
        action="append",
        choices=["log10", "log500", "durable", "read"],
        help="limit to these workloads (repeatable)",
    )
    parser.add_argument("--worker", nargs=3, metavar=("LIB", "WORKLOAD", "CALLS"), help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if opts.worker:
        name, workload, calls = opts.worker
        print(json.dumps(worker(name, workload, int(calls))))
        return

    reps = opts.reps or (3 if opts.quick else 5)
    n10 = 20_000 if opts.quick else 100_000
    libs = [n for n in (*FAST, *PEER_NAMES) if not opts.only or n in opts.only]
    plan = {
        # workload: (calls for floor/tunetrack, calls for peers)
        "log10": (n10, 1_000 if opts.quick else 5_000),
        "log500": (n10 // 10, 50 if opts.quick else 100),  # SwanLab takes ~100 ms per 500-metric call
        "durable": (100_000, 0),
        "read": (100_000, 0 if opts.quick else 100_000),
    }
    results: dict[str, dict[str, dict[str, float | None] | str]] = {}
    for workload, (fast_calls, peer_calls) in plan.items():
        if opts.workload and workload not in opts.workload:
            continue
        results[workload] = {}
        for name in libs:
            if workload == "read" and name in NO_READ_API:
                results[workload][name] = "n/a (no read API)"
                continue
            calls = fast_calls if name in FAST else peer_calls
            if name == "mlflow" and workload != "read":
                calls = max(calls // 10, 50)  # MLflow takes milliseconds per call
            if not calls:
                continue
            if not installed(name):
                results[workload][name] = "not installed"
                continue
            runs = [run_one(name, workload, calls) for _ in range(reps if workload != "read" else 1)]
            ok = [r for r in runs if isinstance(r, dict)]
            if not ok:
                results[workload][name] = str(runs[0])
                continue
            results[workload][name] = {k: median_of(ok, k) for k in ok[0]} | {"calls": calls, "reps": len(ok)}
            print(f"  {workload:8s} {name:12s} done", file=sys.stderr, flush=True)
    report(results)
    out = HERE / "results"
    out.mkdir(exist_ok=True)
    meta = {
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "quick": opts.quick,
        "reps": reps,
    }
    (out / "latest.json").write_text(json.dumps({"meta": meta, "results": results}, indent=2))


def report(results: dict) -> None:
    def get(workload: str, name: str, key: str) -> float | None:
        r = results.get(workload, {}).get(name)
        return r.get(key) if isinstance(r, dict) else None

    print("\n== log(): µs per call, median (10 float metrics; loop time, writer thread included) ==")
    for workload, title in (("log10", "10 metrics"), ("log500", "500 metrics")):
        if workload not in results:
            continue
        print(f"-- {title}")
        for name, r in results[workload].items():
            if isinstance(r, dict):
                print(
                    f"  {name:12s} {r['per_call_us']:10.2f} µs/call   until durable {r['total_us']:10.2f} µs/call"
                    f"   ({r['calls']} calls x {r['reps']})"
                )
            else:
                print(f"  {name:12s} {r}")
    tt, floor = get("log10", "tunetrack", "per_call_us"), get("log10", "floor", "per_call_us")
    verdicts = []
    if tt and floor:
        verdicts.append(
            ("log10: tunetrack / queue+thread floor (target ≤ 1.0)", tt / floor, tt / floor <= 1.0)
        )
    tio = get("log10", "trackio", "per_call_us")
    if tt and tio:
        verdicts.append(("log10: trackio / tunetrack (target ≥ 20)", tio / tt, tio / tt >= 20))
    tt500 = get("log500", "tunetrack", "per_call_us")
    peers500 = [v for n in PEER_NAMES if (v := get("log500", n, "per_call_us"))]
    if tt500 and peers500:
        verdicts.append(
            (
                "log500: fastest peer / tunetrack (aim ≥ 20)",
                min(peers500) / tt500,
                min(peers500) / tt500 >= 20,
            )
        )
    durable = results.get("durable", {}).get("tunetrack")
    if isinstance(durable, dict):
        verdicts.append(
            (
                "1M points: seconds from finish() to durable (target ≤ 2)",
                durable["finish_s"],
                durable["finish_s"] <= 2,
            )
        )
        verdicts.append(
            (
                "1M points: peak MB above baseline while logging (target ≤ 60)",
                durable["peak_mb"],
                durable["peak_mb"] <= 60,
            )
        )
        verdicts.append(
            (
                "1M points: points read back",
                durable.get("read_points", 0),
                durable.get("read_points") == 100_000,
            )
        )
    read_tt = get("read", "tunetrack", "read_ms")
    peer_reads = {n: v for n in PEER_NAMES if (v := get("read", n, "read_ms"))}
    print("\n== read one metric's 100,000-point series through the library's read API ==")
    for name, r in results.get("read", {}).items():
        print(
            f"  {name:12s} "
            + (
                f"{r['read_ms']:10.1f} ms"
                if isinstance(r, dict) and "read_ms" in r
                else str(r if not isinstance(r, dict) else "n/a (no read API)")
            )
        )
    if read_tt:
        verdicts.append(("read 100k points: ms (target ≤ 100)", read_tt, read_tt <= 100))
        if peer_reads:
            best = min(peer_reads.values())
            verdicts.append(
                ("read: fastest peer / tunetrack (target ≥ 5)", best / read_tt, best / read_tt >= 5)
            )
    print("\n== targets ==")
    for label, value, ok in verdicts:
        print(f"  {'met   ' if ok else 'MISSED'} {label}: {value:.2f}")


if __name__ == "__main__":
    main()
