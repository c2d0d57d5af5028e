"""GPU sources available on this machine: NVIDIA through NVML, AMD through amdsmi, and the
training process's own CUDA allocator. A machine without GPUs gets none, and one info line each."""

from __future__ import annotations

from .base import Source
from .torch_alloc import TorchAllocatorSource


def gpu_sources() -> list[Source]:
    """Every GPU source that works here."""
    from .amd import AmdSource
    from .nvidia import NvidiaSource

    found: list[Source] = [s for s in (NvidiaSource.create(), AmdSource.create()) if s is not None]
    return [*found, TorchAllocatorSource()]
