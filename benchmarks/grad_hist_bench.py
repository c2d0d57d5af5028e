"""What ``TunetrackCallback(grad_distributions=True)`` costs a Trainer (issue 35).

    python benchmarks/grad_hist_bench.py [--steps 96] [--pairs 5] [--hidden 256] [--layers 4]

A tiny Llama trained by the Transformers ``Trainer`` with ``TunetrackCallback``, logging every step
(the worst case: the distribution is made at every logging step), with and without the gradient-norm
distributions, alternated in fresh processes. Reported: the median ``train()`` time of each, the
median of each pair's off ÷ on (1.0: free), and what making one distribution takes on the training
thread. On CPU here; on a GPU the same script (``--device cuda`` is the Trainer's default there) says
what it costs where one norm kernel and one copy to the host are the whole price.

Medians; nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
EXAMPLES = HERE.parent / "examples"

TRAIN = """
import json, statistics, sys, time
sys.path[:0] = [sys.argv[5]]
from _tiny import build_dataset, build_model, build_tokenizer
from transformers import Trainer, TrainingArguments
from tunetrack.integrations import transformers as adapter
from tunetrack.integrations.transformers import TunetrackCallback

spent = []
made = adapter.grad_norms
def timed(model):
    began = time.perf_counter()
    try:
        return made(model)
    finally:
        spent.append(time.perf_counter() - began)
adapter.grad_norms = timed

tok = build_tokenizer()
on = sys.argv[2] == "on"
args = TrainingArguments(
    output_dir=sys.argv[1], max_steps=int(sys.argv[3]), per_device_train_batch_size=4, logging_steps=1,
    save_strategy="no", report_to="none", disable_tqdm=True, use_cpu=not __import__("torch").cuda.is_available(),
)
hidden, layers = (int(x) for x in sys.argv[4].split("x"))
trainer = Trainer(
    model=build_model(tok, hidden=hidden, layers=layers), args=args, train_dataset=build_dataset(tok, rows=256),
    callbacks=[TunetrackCallback(dir=sys.argv[1] + "/runs", grad_distributions=on, system=False, console=False)],
)
began = time.perf_counter()
trainer.train()
print(json.dumps({"train_s": time.perf_counter() - began, "per_distribution_ms": 1e3 * statistics.median(spent) if spent else None}))
"""


def once(on: bool, steps: int, shape: str) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as folder:
        done = subprocess.run(
            [sys.executable, "-c", TRAIN, folder, "on" if on else "off", str(steps), shape, str(EXAMPLES)],
            env={**os.environ, "PYTHONPATH": str(SRC), "TUNETRACK_HOOKS": "0"},
            capture_output=True,
            text=True,
            check=True,
        )
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--steps", type=int, default=96)
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--layers", type=int, default=4)
    opts = parser.parse_args()
    shape = f"{opts.hidden}x{opts.layers}"
    offs, ons, ratios, made = [], [], [], []
    for _ in range(opts.pairs):
        off, on = once(False, opts.steps, shape), once(True, opts.steps, shape)
        offs.append(off["train_s"])
        ons.append(on["train_s"])
        ratios.append(off["train_s"] / on["train_s"])
        if on["per_distribution_ms"] is not None:
            made.append(on["per_distribution_ms"])
    print(f"load average {os.getloadavg()[0]:.2f}; {opts.steps} steps logged every step, model {shape}")
    print(f"train() without distributions: {statistics.median(offs):.2f} s (median of {opts.pairs})")
    print(f"train() with distributions:    {statistics.median(ons):.2f} s")
    print(f"off ÷ on, median of pairs:     {statistics.median(ratios):.3f}")
    print(f"one distribution's norms:      {statistics.median(made):.2f} ms on the training thread")


if __name__ == "__main__":
    main()
