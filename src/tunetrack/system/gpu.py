"""GPU sources: which accelerator libraries this machine has. (NVML, allocator and AMD sources land here.)"""

from __future__ import annotations

from .base import Source


def gpu_sources() -> list[Source]:
    """Every GPU source that works here; none on a machine without GPUs."""
    return []
