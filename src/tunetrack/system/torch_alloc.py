"""This process's CUDA caching allocator, as the seed documents chart it.

``gpu.{i}.memory.allocated`` / ``reserved`` / ``active`` are percent of the device's total memory,
plus ``gpu.{i}.memory.peak_allocated_bytes``. The source never imports torch and never initializes
CUDA: it reads only when the training script has already done both. These calls read host-side
counters and do not synchronize the device.
"""

from __future__ import annotations

import sys
from typing import Any

from .base import FieldReader


class TorchAllocatorSource:
    name = "torch_cuda_allocator"

    def __init__(self) -> None:
        self._fields = FieldReader(self.name)
        self._totals: dict[int, int] = {}

    def sample(self) -> dict[str, float | int | None]:
        torch = sys.modules.get("torch")
        if torch is None or not torch.cuda.is_initialized():
            return {}
        out: dict[str, Any] = {}
        for i in range(torch.cuda.device_count()):
            self._fields.read(out, f"gpu.{i}", self._device, torch, i, field=f"{i}.allocator")
        return {k: v for block in out.values() for k, v in block.items()}

    def _device(self, torch: Any, i: int) -> dict[str, Any]:
        if i not in self._totals:
            self._totals[i] = torch.cuda.get_device_properties(i).total_memory
        total, p = self._totals[i], f"gpu.{i}.memory."
        stats = torch.cuda.memory_stats(i)
        return {
            p + "allocated": 100.0 * torch.cuda.memory_allocated(i) / total,
            p + "reserved": 100.0 * torch.cuda.memory_reserved(i) / total,
            p + "active": 100.0 * stats.get("active_bytes.all.current", 0) / total,
            p + "peak_allocated_bytes": torch.cuda.max_memory_allocated(i),
        }

    def close(self) -> None:
        """Nothing to release."""
