"""This process's CUDA caching allocator through ``TorchAllocatorSource``, on a real GPU (no fake):
the figures are the ones ``torch.cuda`` reports beside them, the source never initializes CUDA in a
process that has not, and a sampling pass never synchronizes the device."""

from __future__ import annotations

import json
import time
import warnings

import pytest
import torch
from gpuwork import TrainStep, queue_matmuls

from support.helpers import run_script
from tunetrack import Tracker, open_run
from tunetrack.system import SystemSampler, default_sources
from tunetrack.system.torch_alloc import TorchAllocatorSource

GIB = 2**30
KEYS = ("allocated", "reserved", "active", "peak_allocated_bytes")


def _torch_figures() -> tuple[int, int, int, int]:
    """What torch.cuda says about device 0: allocated, reserved, active bytes and the peak."""
    active = torch.cuda.memory_stats(0)["active_bytes.all.current"]
    return (
        torch.cuda.memory_allocated(0),
        torch.cuda.memory_reserved(0),
        active,
        torch.cuda.max_memory_allocated(0),
    )


def _expected(figures: tuple[int, int, int, int], total: int) -> dict[str, float]:
    allocated, reserved, active, peak = figures
    return {
        "gpu.0.memory.allocated": 100.0 * allocated / total,
        "gpu.0.memory.reserved": 100.0 * reserved / total,
        "gpu.0.memory.active": 100.0 * active / total,
        "gpu.0.memory.peak_allocated_bytes": peak,
    }


def test_allocator_figures_match_torch_measured_beside_them():
    torch.cuda.init()
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats(0)
    base = torch.cuda.memory_allocated(0)
    total = torch.cuda.get_device_properties(0).total_memory
    big = torch.empty(GIB, dtype=torch.uint8, device="cuda")
    brief = torch.empty(GIB // 2, dtype=torch.uint8, device="cuda")
    del brief  # freed: allocated drops; the peak and the reservation stay
    source = TorchAllocatorSource()
    before = _torch_figures()
    sample = source.sample()
    assert _torch_figures() == before  # nothing moved while the source read
    assert {k: v for k, v in sample.items() if k.startswith("gpu.0.")} == pytest.approx(
        _expected(before, total), rel=1e-12
    )
    assert {k.split(".")[1] for k in sample} == {str(i) for i in range(torch.cuda.device_count())}
    # and the figures mean what they say, whatever torch's counters do
    allocated, reserved, active, peak = before
    assert allocated >= base + GIB and peak >= base + GIB + GIB // 2
    assert reserved >= base + GIB + GIB // 2 and active >= allocated
    assert sample["gpu.0.memory.allocated"] >= 100.0 * GIB / total
    del big
    torch.cuda.empty_cache()
    later = source.sample()
    assert later["gpu.0.memory.reserved"] < sample["gpu.0.memory.reserved"] - 100.0 * GIB / total / 2
    assert later["gpu.0.memory.allocated"] < sample["gpu.0.memory.allocated"]
    assert later["gpu.0.memory.peak_allocated_bytes"] == peak  # a peak stays until reset
    torch.cuda.reset_peak_memory_stats(0)
    assert source.sample()["gpu.0.memory.peak_allocated_bytes"] == torch.cuda.memory_allocated(0)


def test_the_tracker_records_the_allocator_figures(root):
    torch.cuda.init()
    total = torch.cuda.get_device_properties(0).total_memory
    held = torch.empty(GIB, dtype=torch.uint8, device="cuda")
    torch.cuda.synchronize()
    tracker = Tracker(dir=root, system_interval=0.2).start()
    tracker.log({"x": 1.0}, step=1)
    figures = _torch_figures()  # nothing is allocated from here on: every later pass reads these
    time.sleep(0.8)
    tracker.finish()
    (node,) = open_run(tracker.id, dir=root).nodes
    summary = open_run(tracker.id, dir=root).system_summary()[node]
    recorded = {k: summary[k] for k in _expected(figures, total)}
    assert recorded == pytest.approx(_expected(figures, total), rel=1e-12)
    # NVML's view of this process holds at least what the allocator reserved
    assert summary["gpu.0.memory.job_bytes"] >= figures[1]
    del held


def test_the_sources_never_initialize_cuda_in_a_process_that_has_not():
    """A process that imported torch but never used CUDA (a data worker, the launcher): sampling
    must not create a CUDA context there (it would cost hundreds of MB of GPU memory)."""
    code = """
        import json, torch
        from tunetrack.system import SystemSampler, default_sources
        sampler = SystemSampler(default_sources(), 1.0, sink=lambda t, row: None)
        rows = [sampler.sample_once() for _ in range(2)]
        print(json.dumps({
            "initialized": torch.cuda.is_initialized(),
            "sources": [s.name for s in sampler.sources],
            "allocator": sorted(k for k in rows[-1] if k.rsplit(".", 1)[-1] in ("allocated", "reserved")),
            "util": "gpu.0.util" in rows[-1],
            "job_bytes": rows[-1].get("gpu.0.memory.job_bytes"),
        }))
    """
    got = json.loads(run_script(code, timeout=120).stdout.strip().splitlines()[-1])
    assert got["initialized"] is False
    assert "torch_cuda_allocator" in got["sources"] and got["allocator"] == []
    assert got["util"] is True  # NVML reads the GPU without CUDA
    assert got["job_bytes"] == 0  # and this process holds no GPU memory


def test_a_sampling_pass_never_synchronizes_the_device():
    """All default sources (host, NVML, allocator), sampled under sync debug mode "error" while the
    GPU has work queued: no error, no source dropped, and no pass waits for the GPU."""
    work = TrainStep()
    work.step()
    torch.cuda.synchronize()
    sampler = SystemSampler(default_sources(), 1.0, sink=lambda t, row: None)
    names = [s.name for s in sampler.sources]
    assert {"nvidia", "torch_cuda_allocator"} <= set(names)
    sampler.sample_once()  # the first pass: GPM buffers, psutil's counters
    busy, done = queue_matmuls(3.0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("error")
        try:
            start = time.perf_counter()
            rows = [sampler.sample_once() for _ in range(3)]
            took = time.perf_counter() - start
            pending = not done.query()  # the passes ran while the GPU still had work queued
        finally:
            torch.cuda.set_sync_debug_mode("default")
    torch.cuda.synchronize()
    del busy
    assert [s.name for s in sampler.sources] == names, [str(w.message) for w in caught]
    assert not [w for w in caught if "system source" in str(w.message)]
    assert all("gpu.0.memory.allocated" in row and "gpu.0.util" in row for row in rows)
    assert pending, "the queued work ran out before the passes ended: queue more"
    assert took < 0.5, f"3 passes took {took:.2f} s with work queued: a pass waited for the GPU"
    for source in sampler.sources:
        source.close()
