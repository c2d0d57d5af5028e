"""System metrics (GPU, CPU, memory, disk, network), sampled on a background thread.

Sources are pluggable: anything with a ``name``, ``sample() -> dict`` and ``close()``. The defaults
are the host (psutil), NVIDIA GPUs (NVML), AMD GPUs (amdsmi, when importable) and this process's
CUDA allocator; a source that cannot work here is skipped with one info line.
"""

from .base import FieldReader, Source
from .sampler import SystemSampler, default_sources

__all__ = ["FieldReader", "Source", "SystemSampler", "default_sources"]
