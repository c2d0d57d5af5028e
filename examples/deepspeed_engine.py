"""A DeepSpeed engine training loop recorded by tunetrack, started with the deepspeed launcher.

    deepspeed --num_gpus 2 examples/deepspeed_engine.py [--steps 20] [--dir DIR]
    DS_ACCELERATOR=cpu deepspeed --num_gpus 2 examples/deepspeed_engine.py   (no GPU: gloo on CPU)

Every process creates the same Tracker; the ranks find each other through the launcher's environment,
so the job is one run: global rank 0 records the training metrics, the first rank of each node its
node's system metrics.
"""

from __future__ import annotations

import argparse

import deepspeed
import torch

from tunetrack import Tracker


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--dir", default=None)
    parser.add_argument("--local_rank", type=int, default=-1, help="passed by the deepspeed launcher")
    opts = parser.parse_args()

    tracker = Tracker(dir=opts.dir, project="deepspeed-engine", system_interval=0.5).start()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    config = {
        "train_micro_batch_size_per_gpu": 4,
        "optimizer": {"type": "AdamW", "params": {"lr": 0.01, "torch_adam": True}},
        "zero_optimization": {"stage": 1},
    }
    engine, *_ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=config)
    tracker.log_config(config)
    rank, world = engine.global_rank, engine.world_size
    x = torch.randn(64, 8)
    y = x.sum(dim=1, keepdim=True)
    for step in range(1, opts.steps + 1):
        start = (step * 4 * world + rank * 4) % 64  # each rank its own slice of the batch
        loss = torch.nn.functional.mse_loss(engine(x[start : start + 4]), y[start : start + 4])
        engine.backward(loss)
        engine.step()
        tracker.log({"loss": loss.item(), "lr": engine.get_lr()[0]}, step=step)
    deepspeed.comm.barrier()  # every rank logs its last step before the run is finished
    tracker.finish()
    deepspeed.comm.destroy_process_group()


if __name__ == "__main__":
    main()
