"""``tunetrack run``: what it adds to a command's start and to its training steps (issue 33).

    python benchmarks/run_command_bench.py            # 9 starts and 5 trainings of each
    python benchmarks/run_command_bench.py --quick    # 5 and 3

Run it in a venv with transformers and trackio (the hf session's: ``.nox/hf/bin/python``).

- **start**: the wall time of a command that does nothing (``python -c pass``) run bare, under
  ``tunetrack run`` (its defaults: the console recorded, system metrics on), and under trackio's
  ``trackio logbook run`` (the peer that records a command the same way), repetitions interleaved.
  Reported: each median and what each adds to the bare start (target for tunetrack: ≤ 0.5 s). Also a
  bare Python start with tunetrack's import hook (``tunetrack-hooks.pth``) against one with
  ``TUNETRACK_HOOKS=0``: what having tunetrack installed costs every Python start.
- **steps**: an unmodified Transformers ``Trainer`` script (a tiny Llama, 800 steps, a row every 10
  steps, as a real run logs) that times its own steps 51 to 800 (a callback of its own), run bare
  (nothing recorded) and under ``tunetrack run`` (the callback attached, the console and system
  metrics recorded), alternated in fresh processes. Reported: the median time of each and the median
  of each pair's bare ÷ under (target ≥ 0.99: recording costs at most 1% of the steps); and the same
  for the whole ``train()``, which also holds the one-time costs of the run's start in
  ``on_train_begin`` (provenance, the config, identifying the model, data and tokenizer).

Medians; nothing is asserted. Results also go to benchmarks/results/run_command.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
EXAMPLES = HERE.parent / "examples"

TRAIN = """
import json, sys, time
sys.path[:0] = [sys.argv[2]]
from _tiny import build_dataset, build_model, build_tokenizer
from transformers import Trainer, TrainerCallback, TrainingArguments
marks = {}
class Clock(TrainerCallback):  # when the steps after the first 50 began and ended
    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step in (50, args.max_steps):
            marks[state.global_step] = time.perf_counter()
tok = build_tokenizer()
args = TrainingArguments(output_dir=sys.argv[1], max_steps=800, per_device_train_batch_size=4,
    logging_steps=10, save_strategy="no", report_to="none", use_cpu=True, disable_tqdm=True)
trainer = Trainer(model=build_model(tok), args=args, train_dataset=build_dataset(tok, rows=512), callbacks=[Clock()])
start = time.perf_counter()
trainer.train()
print(json.dumps({"train_s": time.perf_counter() - start, "steps_s": marks[800] - marks[50]}))
"""


def _timed(command: list[str], env: dict[str, str], cwd: str) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, env=env, cwd=cwd)
    return time.perf_counter() - start


def start(reps: int) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    noop = [sys.executable, "-c", "pass"]
    trackio = shutil.which("trackio", path=str(Path(sys.executable).parent))
    times: dict[str, list[float]] = {"bare": [], "tunetrack": [], "hooks_off": []}
    if trackio:
        times["trackio"] = []
    with tempfile.TemporaryDirectory() as folder:
        env["TUNETRACK_DIR"] = str(Path(folder) / "runs")
        if trackio:  # a logbook and a page to log to (``open`` also starts its preview server)
            for setup in (["open"], ["page", "bench"]):
                subprocess.run(
                    [trackio, "logbook", *setup], check=True, capture_output=True, cwd=folder, env=env
                )
        try:
            _starts(reps, times, noop, trackio, env, folder)
        finally:
            _stop_servers(folder)
    medians = {name: statistics.median(values) for name, values in times.items()}
    out = {f"{name}_s": value for name, value in medians.items()}
    out["tunetrack_adds_s"] = medians["tunetrack"] - medians["bare"]
    if trackio:
        out["trackio_adds_s"] = medians["trackio"] - medians["bare"]
    out["hook_adds_ms"] = 1000 * (medians["bare"] - medians["hooks_off"])
    return out


def _starts(
    reps: int,
    times: dict[str, list[float]],
    noop: list[str],
    trackio: str | None,
    env: dict[str, str],
    folder: str,
) -> None:
    for _ in range(reps):
        times["bare"].append(_timed(noop, env, folder))
        times["hooks_off"].append(_timed(noop, {**env, "TUNETRACK_HOOKS": "0"}, folder))
        times["tunetrack"].append(
            _timed([sys.executable, "-m", "tunetrack", "run", "--", *noop], env, folder)
        )
        if trackio:
            times["trackio"].append(
                _timed([trackio, "logbook", "run", "--page", "bench", "--", *noop], env, folder)
            )


def _stop_servers(folder: str) -> None:
    """The logbook's preview server ``trackio logbook open`` left running for ``folder``."""
    import psutil

    for proc in psutil.process_iter(["cmdline"]):
        if folder in (proc.info["cmdline"] or []) and "serve" in proc.info["cmdline"]:
            proc.terminate()


def steps(reps: int) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(SRC), "HF_HUB_OFFLINE": "1"}
    runs: dict[str, list[dict[str, float]]] = {"bare": [], "tunetrack": []}
    for _ in range(reps):
        for mode in ("bare", "tunetrack"):
            with tempfile.TemporaryDirectory() as folder:
                script = [sys.executable, "-c", TRAIN, folder + "/out", str(EXAMPLES)]
                command = (
                    [sys.executable, "-m", "tunetrack", "run", "--", *script]
                    if mode == "tunetrack"
                    else script
                )
                done = subprocess.run(
                    command, check=True, capture_output=True, text=True, cwd=folder, env=env
                )
                runs[mode].append(json.loads(done.stdout.strip().splitlines()[-1]))
    out: dict[str, Any] = {"each": runs}
    for what in ("steps_s", "train_s"):
        bare = [r[what] for r in runs["bare"]]
        under = [r[what] for r in runs["tunetrack"]]
        out[f"{what}_bare"] = statistics.median(bare)
        out[f"{what}_tunetrack"] = statistics.median(under)
        out[f"{what}_bare_over_tunetrack"] = statistics.median(
            b / t for b, t in zip(bare, under, strict=True)
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true")
    parser.add_argument(
        "--reps", type=int, default=None, help="trainings of each (default 5; 3 with --quick)"
    )
    args = parser.parse_args()
    out = {
        "load": os.getloadavg()[0],
        "start": start(5 if args.quick else 9),
        "steps": steps(args.reps or (3 if args.quick else 5)),
    }
    s, t = out["start"], out["steps"]
    print(f"load average {out['load']:.2f}")
    line = f"start: bare {s['bare_s']:.3f} s, tunetrack run {s['tunetrack_s']:.3f} s (+{s['tunetrack_adds_s']:.3f} s)"
    if "trackio_s" in s:
        line += f", trackio logbook run {s['trackio_s']:.3f} s (+{s['trackio_adds_s']:.3f} s)"
    print(line)
    print(f"the import hook adds {s['hook_adds_ms']:.1f} ms to a Python start")
    print(
        f"steps 51-800: bare {t['steps_s_bare']:.2f} s, under tunetrack run {t['steps_s_tunetrack']:.2f} s; "
        f"bare / under (median of pairs) {t['steps_s_bare_over_tunetrack']:.3f} (target >= 0.99)"
    )
    print(
        f"train() whole (the run's start and the adapter's first look at the model, data and tokenizer "
        f"included): bare {t['train_s_bare']:.2f} s, under {t['train_s_tunetrack']:.2f} s; "
        f"bare / under {t['train_s_bare_over_tunetrack']:.3f}"
    )
    results = HERE / "results"
    results.mkdir(exist_ok=True)
    (results / "run_command.json").write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
