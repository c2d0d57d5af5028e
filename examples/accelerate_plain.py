"""An Accelerate loop that knows nothing of tunetrack: record it with no change to its code.

    tunetrack run -- accelerate launch --cpu examples/accelerate_plain.py --steps 30

It logs through Accelerate's own trackers (``init_trackers``, ``accelerator.log``), whatever
``log_with`` says; under ``tunetrack run`` tunetrack's tracker is added to them. It stops early the
way Accelerate loops do, when ``accelerator.check_trigger()`` says so (``tunetrack stop`` sets it).
"""

from __future__ import annotations

import argparse
import time

import torch
from accelerate import Accelerator


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--step-seconds", type=float, default=0.0)
    opts = parser.parse_args()

    accelerator = Accelerator(cpu=True)
    accelerator.init_trackers("accelerate-plain", config={"lr": 0.05, "steps": opts.steps})
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
        accelerator.log({"loss": loss.detach().item()}, step=step)
        accelerator.print(f"step {step} loss {loss.item():.4f}")
        time.sleep(opts.step_seconds)
        if accelerator.check_trigger():  # another rank, or a tracker, asked the loop to stop
            accelerator.print(f"stopping early at step {step}")
            break
    accelerator.wait_for_everyone()
    accelerator.end_training()


if __name__ == "__main__":
    main()
