"""What system metrics cost training (issue: system metrics on every node).

    python benchmarks/system_overhead.py [--quick] [--pairs N] [--runs N] [--steps N]

1. A tiny real training run (Transformers Trainer on CPU, logging every step) with system metrics
   sampled every second against without them: the median step time must stay within 1%. The
   machine is shared and noisy, and separate runs of one setting differ by more than 1%, so this is
   measured twice, with torch on one thread, after a discarded warm-up run:
   - separate runs with and without, as adjacent pairs in alternating order (off/on, on/off, ...):
     the median of the pairs' ratios of median step times. The same ratio between adjacent runs of
     one setting (the order makes two runs with, then two without, adjacent) is the noise floor;
   - within runs: system metrics on, and the sources switched on and off every few steps through the
     documented source interface, so that differences between runs cancel: the ratio of the median
     step times of the steps with sampling on and off.
2. What a sampling pass costs, measured directly: the CPU time of one pass of the default sources
   (host through psutil, the CUDA allocator, and NVML when there is a GPU) on the sampler thread.
   Their Python code holds the GIL, so this is about what a pass can take from the training thread;
   at one pass per interval, that fraction of its time.
3. One sampling pass over 8 GPUs through a fake NVML whose every call sleeps like a real driver call:
   background wall and CPU time per pass, and the calling (training) thread's CPU time meanwhile.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "examples"), str(ROOT / "tests")]
os.environ.setdefault("HF_HUB_OFFLINE", "1")
INTERVAL = 1.0  # seconds between passes, as in the target
WARMUP_STEPS = 5  # first steps of every run, not timed


class Gated:
    """A system source behind a switch: a pass while the switch is off reads nothing.

    Uses the documented source interface (``Tracker(system_sources=...)``), so one run can alternate
    between sampling and not without restarting anything.
    """

    def __init__(self, source: Any, switch: threading.Event) -> None:
        self.source, self.switch, self.name = source, switch, source.name

    def sample(self) -> dict[str, Any]:
        return self.source.sample() if self.switch.is_set() else {}

    def close(self) -> None:
        self.source.close()


def step_times(steps: int, system: bool, block: int = 0) -> list[tuple[bool, float]]:
    """(sampling on, wall time) of each step of one tiny Trainer run, warm-up steps dropped.

    ``block`` > 0: system metrics are on, and the sources are switched on and off every ``block``
    steps (off first on even runs, on first on odd ones: see ``Clock``).
    """
    from _tiny import build_dataset, build_model, build_tokenizer
    from transformers import PrinterCallback, Trainer, TrainerCallback, TrainingArguments

    from tunetrack.integrations.transformers import TunetrackCallback
    from tunetrack.system import default_sources

    times: list[tuple[bool, float]] = []
    switch = threading.Event()
    if system and not block:
        switch.set()

    class Clock(TrainerCallback):
        def on_step_begin(self, args, state, control, **kw):
            if block and state.global_step >= WARMUP_STEPS:
                on = ((state.global_step - WARMUP_STEPS) // block) % 2 == 1
                switch.set() if on else switch.clear()
            self.t = time.perf_counter()

        def on_step_end(self, args, state, control, **kw):
            if state.global_step > WARMUP_STEPS:
                times.append((switch.is_set(), time.perf_counter() - self.t))

    tok = build_tokenizer()
    with tempfile.TemporaryDirectory() as tmp:
        sources = [Gated(source, switch) for source in default_sources()] if system else None
        cb = TunetrackCallback(
            dir=f"{tmp}/runs", system=system, system_interval=INTERVAL, system_sources=sources
        )
        args = TrainingArguments(
            output_dir=tmp,
            max_steps=steps + WARMUP_STEPS,
            per_device_train_batch_size=4,
            logging_steps=1,
            save_strategy="no",
            report_to="none",
            use_cpu=True,
            disable_tqdm=True,
        )
        trainer = Trainer(
            model=build_model(tok),
            args=args,
            train_dataset=build_dataset(tok, rows=256),
            callbacks=[cb, Clock()],
        )
        trainer.remove_callback(PrinterCallback)  # printing every step's logs is not what we measure
        trainer.train()
        cb.finish()
    return times


def _ratio_line(label: str, ratios: list[float]) -> str:
    return f"  {label}: {' '.join(f'{r:.3f}' for r in ratios)}"


def trainer_overhead(pairs: int, steps: int, runs: int, block: int) -> None:
    import torch

    # One intra-op thread: on 2 shared cores, two of them wait on each other whenever another
    # tenant runs, and step times swing by tens of percent between runs.
    torch.set_num_threads(1)
    step_times(10, False)  # warm-up: imports, allocator and thread pools; discarded
    print(f"== tiny Trainer run, logging every step, system metrics every {INTERVAL:g} s ==")
    # 1. separate runs with and without, in adjacent pairs of alternating order
    medians: dict[bool, list[float]] = {False: [], True: []}  # median step time per run
    ratios: list[float] = []
    for pair in range(pairs):
        for system in (False, True) if pair % 2 == 0 else (True, False):
            medians[system].append(statistics.median(t for _, t in step_times(steps, system)))
        ratios.append(medians[True][-1] / medians[False][-1])
    # the noise floor: in this order the "with" runs of pairs 0 and 1 are adjacent, the "without"
    # runs of pairs 1 and 2, of 2 and 3, ...
    floor = [
        b / a for m, i in ((medians[True], 0), (medians[False], 1)) for a, b in zip(m[i::2], m[i + 1 :: 2])
    ]
    paired = statistics.median(ratios)
    print(f"  {pairs} pairs of runs x {steps} steps, with/without in alternating order:")
    print(_ratio_line("paired ratios with/without", ratios))
    print(_ratio_line("noise floor, same setting ", floor))
    print(f"  {'met   ' if paired <= 1.01 else 'MISSED'} median paired ratio {paired:.4f} (target ≤ 1.01)")
    # 2. within runs: the sources switched on and off in blocks, so run-to-run differences cancel
    pooled: dict[bool, list[float]] = {False: [], True: []}
    within: list[float] = []
    for _ in range(runs):
        by_state: dict[bool, list[float]] = {False: [], True: []}
        for on, t in step_times(steps * 4, True, block):
            by_state[on].append(t)
        within.append(statistics.median(by_state[True]) / statistics.median(by_state[False]))
        for on in (False, True):
            pooled[on] += by_state[on]
    a, b = statistics.median(pooled[False]), statistics.median(pooled[True])
    print(f"  {runs} runs x {steps * 4} steps, sampling switched on and off every {block} steps:")
    print(f"  median step time off {a * 1e3:.3f} ms, on {b * 1e3:.3f} ms ({len(pooled[True])} steps each)")
    print(_ratio_line("per-run ratios on/off     ", within))
    print(f"  {'met   ' if b / a <= 1.01 else 'MISSED'} ratio of medians {b / a:.4f} (target ≤ 1.01)")


def pass_cpu(passes: int) -> None:
    """CPU time of one pass of the default sources on the sampler thread, as the Tracker runs it."""
    from tunetrack.system import SystemSampler, default_sources

    sampler = SystemSampler(default_sources(), INTERVAL, sink=lambda t, row: None)
    cpus: list[float] = []

    def run() -> None:
        sampler.sample_once()  # the first pass primes psutil's counters
        for _ in range(passes):
            start = time.thread_time()
            sampler.sample_once()
            cpus.append(time.thread_time() - start)
            time.sleep(0.01)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    cpu = statistics.median(cpus)
    names = ", ".join(s.name for s in sampler.sources)
    print(f"\n== one pass of the default sources ({names}) on this machine ==")
    print(f"  sampler-thread CPU {cpu * 1e3:.3f} ms per pass (median of {passes})")
    print(f"  at one pass per {INTERVAL:g} s: about {cpu / INTERVAL:.3%} of the training thread's time")


def sampling_pass(gpus: int, latency: float, passes: int) -> dict[str, float]:
    from support.fake_nvml import FakeGpu, FakeNvml
    from tunetrack.system import SystemSampler
    from tunetrack.system.nvidia import NvidiaSource

    fake = FakeNvml([FakeGpu(uuid=f"GPU-{i}") for i in range(gpus)], latency=latency)
    sys.modules["pynvml"] = fake.module()
    source = NvidiaSource.create()
    assert source is not None
    sampler = SystemSampler([source], interval=INTERVAL, sink=lambda t, row: None)
    sampler.sample_once()  # the first pass reads what is read once, and starts the reader threads
    calls_before = sum(fake.calls.values())
    walls, cpus = [], []

    def run() -> None:
        for _ in range(passes):
            cpu, start = time.process_time(), time.perf_counter()  # every thread but an idle caller
            sampler.sample_once()
            walls.append(time.perf_counter() - start)
            cpus.append(time.process_time() - cpu)

    thread = threading.Thread(target=run)
    thread.start()
    main_cpu_start = time.thread_time()  # from here on this thread only waits for the passes
    thread.join()
    main_cpu = time.thread_time() - main_cpu_start
    calls = (sum(fake.calls.values()) - calls_before) / passes
    source.close()
    return {
        "wall_ms": statistics.median(walls) * 1e3,
        "cpu_ms": statistics.median(cpus) * 1e3,
        "training_thread_cpu_ms": main_cpu * 1e3,
        "nvml_calls_per_pass": calls,
    }


def main() -> None:
    warnings.simplefilter("ignore")  # the tiny model's loss spikes and the frameworks' notices
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="a smoke run: few runs, few steps")
    parser.add_argument("--pairs", type=int, default=None, help="pairs of runs (default 10; quick 2)")
    parser.add_argument("--runs", type=int, default=None, help="switched runs (default 4; quick 1)")
    parser.add_argument("--steps", type=int, default=None, help="steps per run (default 150; quick 30)")
    opts = parser.parse_args()
    steps = opts.steps or (30 if opts.quick else 150)
    trainer_overhead(
        pairs=opts.pairs or (2 if opts.quick else 10),
        steps=steps,
        runs=opts.runs or (1 if opts.quick else 4),
        block=max(steps // 5, 10),
    )
    pass_cpu(passes=20 if opts.quick else 200)
    latency = 50e-6
    result = sampling_pass(8, latency, passes=5 if opts.quick else 50)
    print(f"\n== one sampling pass, 8 GPUs, fake NVML at {latency * 1e6:.0f} µs per call ==")
    print(
        f"  {result['nvml_calls_per_pass']:.0f} NVML calls; background wall {result['wall_ms']:.2f} ms, "
        f"background CPU {result['cpu_ms']:.2f} ms, training-thread CPU {result['training_thread_cpu_ms']:.3f} ms"
    )
    print(f"  {'met   ' if result['wall_ms'] < 20 else 'MISSED'} background time < 20 ms per pass")


if __name__ == "__main__":
    main()
