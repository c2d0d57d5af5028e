"""A generated hyperparameter sweep to check sweep tooling against: 3 learning rates x 4 LoRA ranks x 5
seeds (60 runs of project ``sweep``), some stopped early, two failed, with the points each run logged
kept here so a test can compute what the readers should say (with pandas or NumPy) independently."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tunetrack import Tracker

LRS = (1e-4, 3e-4, 1e-3)
RANKS = (4, 8, 16, 32)
SEEDS = (0, 1, 2, 3, 4)
STEPS = 60


@dataclass
class SweepRun:
    id: str
    name: str
    config: dict[str, Any]
    tags: list[str]
    state: str
    #: key -> [(step, value)] as logged
    points: dict[str, list[tuple[int, float]]] = field(default_factory=dict)

    @property
    def flat(self) -> dict[str, Any]:
        return {"lr": self.config["lr"], "lora.r": self.config["lora"]["r"], "seed": self.config["seed"]}


def _noise(*parts: float) -> float:
    """A deterministic number in [-1, 1) from the run's coordinates (no RNG state to keep in step)."""
    return (
        math.sin(sum(p * (i + 1) * 12.9898 for i, p in enumerate(parts))) * 0.5
        + math.sin(sum(parts) * 78.233) * 0.5
    )


def make_sweep(
    root: Path, lrs: tuple[float, ...] = LRS, ranks: tuple[int, ...] = RANKS, seeds: tuple[int, ...] = SEEDS
) -> list[SweepRun]:
    """The sweep (or a corner of it, for a test that needs a few runs: each takes ~0.2 s to write)."""
    runs = []
    for lr in lrs:
        for r in ranks:
            for seed in seeds:
                runs.append(_one(root, lr, r, seed))
    return runs


def _one(root: Path, lr: float, r: int, seed: int) -> SweepRun:
    config = {"lr": lr, "lora": {"r": r, "alpha": 2 * r}, "seed": seed, "model": "tiny"}
    tags = (["best"] if seed == 0 else []) + (["baseline"] if r == 4 else [])
    stop = 25 + r if lr == 1e-3 and seed in (1, 3) else STEPS  # early stopping
    fail = lr == 1e-4 and r == 4 and seed == 4
    name = f"lr{lr:g}-r{r}-s{seed}"
    run = SweepRun("", name, config, tags, "finished")
    speed = lr * 1000 * (1 + r / 64)
    try:
        with Tracker(
            project="sweep", name=name, dir=root, config=config, tags=tags, system=False, health=False
        ) as t:
            run.id = t.id
            for step in range(1, stop + 1):
                row = {
                    "train/loss": 2.0 * math.exp(-speed * step / 20) + 0.3 + 0.05 * _noise(lr, r, seed, step)
                }
                if step % 10 == 0:
                    # overfitting past a point: the eval loss rises again, so min and last differ
                    row["eval/loss"] = 0.5 + 0.6 * math.exp(-speed * step / 15) + 0.002 * step * speed
                    row["eval/loss"] += 0.03 * _noise(seed, r, step)
                    row["reward"] = 1.0 - row["eval/loss"] / 2
                for key, value in row.items():
                    run.points.setdefault(key, []).append((step, value))
                t.log(row, step=step)
                if fail and step == 20:
                    raise RuntimeError("diverged")
    except RuntimeError:
        run.state = "failed"
    return run
