"""What system metrics cost training (issue: system metrics on every node).

    python benchmarks/system_overhead.py [--quick]

1. A tiny real training run (Transformers Trainer on CPU, logging every step) with system metrics
   sampled every second against the same run without them: median step time, alternating the two
   settings so that machine noise hits both alike.
2. One sampling pass over 8 GPUs through a fake NVML whose every call sleeps like a real driver
   call: background wall and CPU time per pass, and the training thread's CPU time meanwhile.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "examples"), str(ROOT / "tests")]
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def step_times(system: bool, steps: int) -> list[float]:
    from _tiny import build_dataset, build_model, build_tokenizer
    from transformers import Trainer, TrainerCallback, TrainingArguments

    from tunetrack.integrations.transformers import TunetrackCallback

    times: list[float] = []

    class Clock(TrainerCallback):
        def on_step_begin(self, args, state, control, **kw):
            self.t = time.perf_counter()

        def on_step_end(self, args, state, control, **kw):
            times.append(time.perf_counter() - self.t)

    tok = build_tokenizer()
    with tempfile.TemporaryDirectory() as tmp:
        cb = TunetrackCallback(dir=f"{tmp}/runs", system=system, system_interval=1.0)
        args = TrainingArguments(
            output_dir=tmp,
            max_steps=steps,
            per_device_train_batch_size=4,
            logging_steps=1,
            save_strategy="no",
            report_to="none",
            use_cpu=True,
            disable_tqdm=True,
        )
        Trainer(
            model=build_model(tok),
            args=args,
            train_dataset=build_dataset(tok, rows=256),
            callbacks=[cb, Clock()],
        ).train()
        cb.finish()
    return times[5:]  # skip warm-up steps


def sampling_pass(gpus: int, latency: float, passes: int) -> dict[str, float]:
    from fakes.nvml import FakeGpu, FakeNvml
    from tunetrack.system import SystemSampler
    from tunetrack.system.nvidia import NvidiaSource

    fake = FakeNvml([FakeGpu(uuid=f"GPU-{i}") for i in range(gpus)], latency=latency)
    sys.modules["pynvml"] = fake.module()
    source = NvidiaSource.create()
    sampler = SystemSampler([source], interval=1.0, sink=lambda t, row: None)
    walls, cpus = [], []
    main_cpu_start = time.thread_time()

    def run() -> None:
        for _ in range(passes):
            start = time.perf_counter()
            sampler.sample_once()
            walls.append(time.perf_counter() - start)
            cpus.append(sampler.last_pass_cpu)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    main_cpu = time.thread_time() - main_cpu_start
    calls = sum(fake.calls.values()) / passes
    return {
        "wall_ms": statistics.median(walls) * 1e3,
        "cpu_ms": statistics.median(cpus) * 1e3,
        "training_thread_cpu_ms": main_cpu * 1e3,
        "nvml_calls_per_pass": calls,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    opts = parser.parse_args()
    rounds, steps = (2, 40) if opts.quick else (4, 80)
    with_sys, without = [], []
    for _ in range(rounds):
        without += step_times(False, steps)
        with_sys += step_times(True, steps)
    a, b = statistics.median(without), statistics.median(with_sys)
    print("== tiny Trainer run, logging every step: median step time ==")
    print(f"  without system metrics   {a * 1e3:8.2f} ms  ({len(without)} steps)")
    print(f"  with system metrics @1s  {b * 1e3:8.2f} ms  ({len(with_sys)} steps)")
    ratio = b / a
    print(f"  {'met   ' if ratio <= 1.01 else 'MISSED'} ratio {ratio:.4f} (target ≤ 1.01)")
    latency = 50e-6
    result = sampling_pass(8, latency, passes=5 if opts.quick else 20)
    print(f"\n== one sampling pass, 8 GPUs, fake NVML at {latency * 1e6:.0f} µs per call ==")
    print(
        f"  {result['nvml_calls_per_pass']:.0f} NVML calls; background wall {result['wall_ms']:.2f} ms, "
        f"background CPU {result['cpu_ms']:.2f} ms, training-thread CPU {result['training_thread_cpu_ms']:.3f} ms"
    )
    print(f"  {'met   ' if result['wall_ms'] < 20 else 'MISSED'} background time < 20 ms per pass")


if __name__ == "__main__":
    main()
