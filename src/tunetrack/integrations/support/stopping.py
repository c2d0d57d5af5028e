"""Stopping every rank of a job at the same step when rank 0's run was asked to stop.

Only rank 0 records the run and looks for stop requests (``tracker.control``). A data-parallel job
whose rank 0 left the training loop alone would hang the others in their next collective, so the
adapters agree on stopping through ``torch.distributed`` (one one-element all-reduce per step, beside
the step's own gradient all-reduce), as the Trainer's ranks already agree on a NaN (they all see the
same reduced loss).
"""

from __future__ import annotations

import sys
from typing import Any


def agreed(stop: bool, device: Any = None) -> bool:
    """Whether any rank of the job wants to stop (``stop`` on this one); ``stop`` itself outside a
    distributed job. ``device``: where the job's collectives run (``cuda:N`` under NCCL)."""
    dist = sys.modules.get("torch.distributed")
    if dist is None or not dist.is_available() or not dist.is_initialized() or dist.get_world_size() < 2:
        return stop
    import torch

    if device is None or dist.get_backend() == "gloo":
        device = "cpu"
    flag = torch.tensor([1.0 if stop else 0.0], device=device)
    dist.all_reduce(flag, op=dist.ReduceOp.MAX)
    return bool(flag.item())
