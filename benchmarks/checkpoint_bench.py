"""Checkpoints: what recording them costs (issue 32's first slice).

    python benchmarks/checkpoint_bench.py            # a 2 GB file, 5 repetitions; a Trainer saving every 2 steps
    python benchmarks/checkpoint_bench.py --quick    # a 256 MB file

- **hashing**: the SHA-256 of one large checkpoint file as ``Tracker.log_checkpoint`` computes it (in
  a process of its own at the lowest priority, ``hashlib.file_digest``) against coreutils'
  ``sha256sum`` on the same file, repetitions interleaved, the file in the page cache for both (one
  read before timing). Reported: MB/s of each and their ratio.
- **trainer**: a tiny Llama trained 96 steps by the Transformers ``Trainer`` saving every 2 steps
  (``save_total_limit=2``: rotation too) with ``TunetrackCallback``, checkpoint recording on and off
  (``Tracker.log_checkpoint`` a no-op), alternated in fresh processes. Reported: the median
  ``train()`` time of each, the median of each pair's off ÷ on (target ≥ 0.99, i.e. recording costs
  ≤ 1%), and what the callback's ``on_save`` takes on the training thread per save against what the
  Trainer's own save takes.

Medians; nothing is asserted. Results also go to benchmarks/results/checkpoints.json.
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

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
sys.path.insert(0, str(SRC))

TRAIN = """
import json, sys, time
sys.path[:0] = [sys.argv[3]]
from _tiny import build_dataset, build_model, build_tokenizer
from transformers import Trainer, TrainingArguments
from tunetrack import Tracker
from tunetrack.integrations.transformers import TunetrackCallback
if sys.argv[2] == "off":
    Tracker.log_checkpoint = lambda self, *a, **k: None
def timed(fn, into):
    def run(*a, **k):
        start = time.perf_counter()
        fn(*a, **k)
        into.append(time.perf_counter() - start)
    return run
on_save, saves = [], []
TunetrackCallback.on_save = timed(TunetrackCallback.on_save, on_save)
Trainer._save_checkpoint = timed(Trainer._save_checkpoint, saves)
tok = build_tokenizer()
args = TrainingArguments(output_dir=sys.argv[1] + "/out", max_steps=96, per_device_train_batch_size=4,
    logging_steps=1, save_strategy="steps", save_steps=2, save_total_limit=2, report_to="none",
    use_cpu=True, disable_tqdm=True)
cb = TunetrackCallback(project="bench", dir=sys.argv[1] + "/runs")
trainer = Trainer(model=build_model(tok), args=args, train_dataset=build_dataset(tok, rows=512), callbacks=[cb])
start = time.perf_counter()
trainer.train()
took = time.perf_counter() - start
cb.finish()
print(json.dumps({"train_s": took, "on_save_s": sum(on_save), "save_s": sum(saves), "saves": len(saves)}))
"""


def hashing(size_mb: int, reps: int) -> dict[str, float]:
    from tunetrack.tracker.checkpoints import Checkpoints

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "model.safetensors"
        block = os.urandom(1 << 20)
        with open(path, "wb") as f:
            for _ in range(size_mb):
                f.write(block)
        subprocess.run(["sha256sum", str(path)], check=True, capture_output=True)  # into the page cache
        ours, theirs, agree = [], [], True
        sent: list[dict] = []
        for _ in range(reps):
            start = time.perf_counter()
            done = subprocess.run(["sha256sum", str(path)], check=True, capture_output=True, text=True)
            theirs.append(time.perf_counter() - start)
            sent.clear()
            c = Checkpoints(lambda kind, step, **data: sent.append(data))
            start = time.perf_counter()
            c.record(str(path), 1, None, None)
            c.close(wait=3600)
            ours.append(time.perf_counter() - start)
            agree &= sent[-1]["files"][0]["sha256"] == done.stdout.split()[0]
        mb = size_mb * 1.048576
        return {
            "size_mb": size_mb,
            "tunetrack_mb_s": mb / statistics.median(ours),
            "sha256sum_mb_s": mb / statistics.median(theirs),
            "ratio": statistics.median(theirs) / statistics.median(ours),
            "digests_agree": agree,
        }


def trainer(reps: int) -> dict[str, float]:
    runs: dict[str, list[dict[str, float]]] = {"on": [], "off": []}
    env = {**os.environ, "PYTHONPATH": str(SRC), "TUNETRACK_SYSTEM": "0", "HF_HUB_OFFLINE": "1"}
    for _ in range(reps):
        for mode in ("on", "off"):
            with tempfile.TemporaryDirectory() as folder:
                done = subprocess.run(
                    [sys.executable, "-c", TRAIN, folder, mode, str(HERE.parent / "examples")],
                    check=True,
                    capture_output=True,
                    text=True,
                    env=env,
                )
                runs[mode].append(json.loads(done.stdout.strip().splitlines()[-1]))
    on = [r["train_s"] for r in runs["on"]]
    off = [r["train_s"] for r in runs["off"]]
    per_save = [r["on_save_s"] / r["saves"] for r in runs["on"]]
    save = [r["save_s"] / r["saves"] for r in runs["on"]]
    return {
        "train_s_on": statistics.median(on),
        "train_s_off": statistics.median(off),
        "off_over_on": statistics.median(b / a for a, b in zip(on, off, strict=True)),
        "on_save_ms": 1000 * statistics.median(per_save),
        "save_ms": 1000 * statistics.median(save),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    size = 256 if args.quick else 2048
    out = {"load": os.getloadavg()[0], "hashing": hashing(size, args.reps), "trainer": trainer(args.reps)}
    h, t = out["hashing"], out["trainer"]
    print(f"load average {out['load']:.2f}")
    print(
        f"hashing {size} MB: tunetrack {h['tunetrack_mb_s']:.0f} MB/s, sha256sum {h['sha256sum_mb_s']:.0f} MB/s "
        f"(tunetrack ÷ sha256sum time {1 / h['ratio']:.2f}; digests agree: {h['digests_agree']})"
    )
    print(
        f"Trainer, 96 steps saving every 2: train() {t['train_s_on']:.2f} s recording checkpoints, "
        f"{t['train_s_off']:.2f} s not (median off ÷ on {t['off_over_on']:.3f}; target ≥ 0.99); "
        f"on_save {t['on_save_ms']:.2f} ms on the training thread per save, the save itself {t['save_ms']:.1f} ms"
    )
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / "checkpoints.json").write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
