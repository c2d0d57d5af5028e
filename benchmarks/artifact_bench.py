"""Artifacts: what ten runs that log the same base model cost in the store, tunetrack against the peers.

    python benchmarks/artifact_bench.py            # a 200 MB base model, 10 runs per tracker
    python benchmarks/artifact_bench.py --quick    # 20 MB

Each tracker, in a fresh folder of its own and a process of its own, runs 10 runs; each run logs the
same base-model folder (one weights file of random bytes and a config) as an artifact, the way its
docs say: tunetrack ``Tracker.log_artifact`` (waiting for the version), trackio ``log_artifact``,
MLflow ``log_artifacts`` (a SQLite backend, artifacts in a local folder), W&B ``Artifact.add_dir`` + ``log_artifact`` offline.
Reported per tracker: the bytes its folder holds at the end (``du``, every file it wrote: runs,
artifacts, caches under the folder) as a multiple of the model's size, and the median seconds one
``log_artifact`` took. Medians; nothing is asserted. Results also go to benchmarks/results/artifacts.json.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"

RUNS = 10
#: one process per tracker: ``argv``: tracker, its folder, the model folder; prints the seconds each log took
JOB = r"""
import json, os, statistics, sys, time
sys.path.insert(0, sys.argv[4])
which, home, model = sys.argv[1], sys.argv[2], sys.argv[3]
times = []
def timed(fn):
    start = time.perf_counter(); fn(); times.append(time.perf_counter() - start)
if which == "tunetrack":
    from tunetrack import Tracker
    for i in range(RUNS):
        with Tracker(project="bench", dir=home, system=False, console=False) as t:
            t.log({"loss": 1.0})
            timed(lambda: t.log_artifact(model, name="base-model", kind="model").result())
elif which == "trackio":
    os.environ["TRACKIO_DIR"] = home
    import trackio
    for i in range(RUNS):
        trackio.init(project="bench", name=f"r{i}")
        trackio.log({"loss": 1.0})
        timed(lambda: trackio.log_artifact(model, name="base-model", type="model"))
        trackio.finish()
elif which == "mlflow":
    import mlflow
    mlflow.set_tracking_uri(f"sqlite:///{home}/mlflow.db")  # its artifacts under the working folder: home
    for i in range(RUNS):
        with mlflow.start_run():
            mlflow.log_metric("loss", 1.0)
            timed(lambda: mlflow.log_artifacts(model, artifact_path="base-model"))
elif which == "wandb":
    for var in ("WANDB_DIR", "WANDB_CACHE_DIR", "WANDB_DATA_DIR", "WANDB_ARTIFACT_DIR", "WANDB_CONFIG_DIR"):
        os.environ[var] = home
    os.environ["WANDB_MODE"] = "offline"
    os.environ["WANDB_SILENT"] = "true"
    import wandb
    for i in range(RUNS):
        run = wandb.init(project="bench", dir=home)
        run.log({"loss": 1.0})
        def log():
            art = wandb.Artifact("base-model", type="model")
            art.add_dir(model)
            run.log_artifact(art)
        timed(log)
        run.finish()
print(json.dumps(times))
""".replace("RUNS", str(RUNS))


def du(path: Path) -> int:
    """Bytes of every file under ``path`` (hard links counted once)."""
    seen, total = set(), 0
    for root, _, files in os.walk(path):
        for name in files:
            st = os.lstat(os.path.join(root, name))
            if (st.st_dev, st.st_ino) not in seen:
                seen.add((st.st_dev, st.st_ino))
                total += st.st_size
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="a 20 MB model instead of 200 MB")
    parser.add_argument("--only", nargs="*", default=["tunetrack", "trackio", "mlflow", "wandb"])
    opts = parser.parse_args()
    size = (20 if opts.quick else 200) << 20
    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        model = Path(tmp) / "base-model"
        model.mkdir()
        (model / "model.safetensors").write_bytes(os.urandom(size))
        (model / "config.json").write_text(json.dumps({"hidden_size": 64, "num_hidden_layers": 2}))
        model_bytes = du(model)
        for which in opts.only:
            home = Path(tmp) / which
            home.mkdir()
            done = subprocess.run(
                [sys.executable, "-c", JOB, which, str(home), str(model), str(SRC)],
                capture_output=True,
                text=True,
                cwd=home,
            )
            if done.returncode != 0:
                results[which] = {
                    "error": done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "failed"
                }
                print(f"{which:>10}: failed: {results[which]['error']}")
                continue
            times = sorted(json.loads(done.stdout.strip().splitlines()[-1]))
            stored = du(home)
            results[which] = {
                "stored_bytes": stored,
                "times_model_size": round(stored / model_bytes, 2),
                "median_log_s": round(times[len(times) // 2], 3),
            }
            print(
                f"{which:>10}: {stored / 1e6:9.1f} MB stored for {RUNS} runs "
                f"({stored / model_bytes:5.2f}x the model), median log_artifact {times[len(times) // 2]:.3f} s"
            )
    out = {"model_bytes": model_bytes, "runs": RUNS, "results": results, "load": os.getloadavg()}
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / "artifacts.json").write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
