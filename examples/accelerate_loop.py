"""A plain Accelerate training loop recorded by tunetrack.

python examples/accelerate_loop.py [--steps 30] [--dir DIR]     (or: accelerate launch --cpu ...)
"""

from __future__ import annotations

import argparse

import numpy as np
import torch
from accelerate import Accelerator

from tunetrack.integrations.accelerate import TunetrackTracker


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--dir", default=None)
    parser.add_argument(
        "--by-name", action="store_true", help='use log_with="tunetrack" (accelerate >= 1.15)'
    )
    opts = parser.parse_args()

    tracker = (
        "tunetrack"
        if opts.by_name
        else TunetrackTracker(project="accelerate-loop", run_name="loop", dir=opts.dir)
    )
    accelerator = Accelerator(log_with=tracker, cpu=True)
    accelerator.init_trackers(
        "accelerate-loop",
        config={"lr": 0.05, "steps": opts.steps},
        init_kwargs={"tunetrack": {"run_name": "loop", "dir": opts.dir}},
    )
    torch.manual_seed(0)
    model = torch.nn.Linear(8, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    model, optimizer = accelerator.prepare(model, optimizer)
    x, y = torch.randn(64, 8), torch.randn(64, 1)
    for step in range(1, opts.steps + 1):
        loss = torch.nn.functional.mse_loss(model(x), y)
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
        per_sample = (model(x) - y).detach().pow(2).squeeze(1).cpu().numpy()
        accelerator.log(
            {"loss": loss.detach(), "lr": 0.05, "per_sample_loss": per_sample.astype(np.float32)}, step=step
        )
    accelerator.wait_for_everyone()  # ranks leave together (end_training destroys the process group)
    accelerator.end_training()


if __name__ == "__main__":
    main()
