"""NVIDIA GPUs through NVML (``nvidia-ml-py``), named by the index the job uses.

NVML numbers GPUs in PCI order and ignores ``CUDA_VISIBLE_DEVICES``; the job sees only the visible
ones, renumbered from 0. So ``gpu.0.*`` is the job's ``cuda:0``: with ``CUDA_VISIBLE_DEVICES=2,3``,
``gpu.0`` reads NVML device 2. (Set ``CUDA_DEVICE_ORDER=PCI_BUS_ID``, as most clusters do, so that CUDA
numbers devices in the same order as NVML.)

A pass costs few driver calls: the power limit is read once, the GPM sample buffers are allocated
once and reused, and with several GPUs the devices are read in parallel on a small pool of
background threads (NVML is thread-safe, and its calls release the GIL), so a pass over 8 GPUs takes
about as long as one over a single GPU.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from .base import FieldReader

log = logging.getLogger("tunetrack.system")
_GPM_METRICS = {
    "sm_active": "NVML_GPM_METRIC_SM_UTIL",
    "tensor_active": "NVML_GPM_METRIC_ANY_TENSOR_UTIL",
    "dram_active": "NVML_GPM_METRIC_DRAM_BW_UTIL",
}
MAX_WORKERS = 8  # threads reading devices in parallel (an 8-GPU node: one each)


def visible_devices(spec: str | None, count: int) -> list[str | int]:
    """The NVML identifiers of the devices this job sees, in the job's order."""
    if spec is None:
        return list(range(count))
    out: list[str | int] = []
    for item in (s.strip() for s in spec.split(",")):
        if not item:
            continue
        if item.lstrip("-").isdigit():
            index = int(item)
            if index < 0 or index >= count:  # CUDA stops at the first invalid entry
                break
            out.append(index)
        else:
            out.append(item)  # GPU-<uuid> or MIG-<uuid>
    return out


def job_pids(pids: Iterable[int]) -> set[int]:
    """Those of ``pids`` that belong to this job: this process and its descendants, and under a
    launcher every descendant of the launcher (the other ranks on this node and their workers).

    Walks up from each given pid instead of listing every process of the machine, so the cost grows
    with the GPU processes NVML reports, not with the node's process count.
    """
    me = os.getpid()
    roots = {me}
    if any(os.environ.get(v) for v in ("LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID")):
        roots.add(os.getppid())
    try:
        import psutil
    except ImportError:
        return {pid for pid in pids if pid == me}
    ours = set()
    for pid in set(pids):
        try:
            if pid == me or any(p.pid in roots for p in psutil.Process(pid).parents()):
                ours.add(pid)
        except (psutil.Error, OSError):  # gone, or another container's process
            continue
    return ours


class NvidiaSource:
    """Utilization, memory, temperature, power, clocks, throttling, ECC, GPM and job memory per GPU."""

    name = "nvidia"

    def __init__(self, nvml: Any, devices: list[tuple[int, Any]]) -> None:
        self.nvml = nvml
        self.devices = devices
        self.lost: set[int] = set()
        self._fields = FieldReader(self.name)
        self._power_limit: dict[int, Any] = {}  # read once: it does not change during a run
        self._gpm_buffers: dict[int, list[Any]] = {}  # two reusable GPM samples per device
        workers = min(len(devices), MAX_WORKERS)
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="tunetrack-nvml") if workers > 1 else None

    @classmethod
    def create(cls) -> NvidiaSource | None:
        """The source, or None (with one info line) when there is no NVML or no visible GPU."""
        try:
            import pynvml as nvml
        except ImportError:
            log.info("tunetrack: nvidia-ml-py is not installed; no NVIDIA GPU metrics")
            return None
        try:
            nvml.nvmlInit()
            count = nvml.nvmlDeviceGetCount()
        except Exception as exc:
            log.info("tunetrack: NVML unavailable (%s); no NVIDIA GPU metrics", exc)
            return None
        devices = []
        for job_index, ident in enumerate(visible_devices(os.environ.get("CUDA_VISIBLE_DEVICES"), count)):
            try:
                get = (
                    nvml.nvmlDeviceGetHandleByIndex
                    if isinstance(ident, int)
                    else nvml.nvmlDeviceGetHandleByUUID
                )
                devices.append((job_index, get(ident)))
            except Exception as exc:
                log.info("tunetrack: GPU %s (%s) is not readable through NVML: %s", job_index, ident, exc)
        if not devices:
            log.info("tunetrack: no visible NVIDIA GPU; host metrics only")
            _quiet(nvml.nvmlShutdown)
            return None
        return cls(nvml, devices)

    def sample(self) -> dict[str, float | int | None]:
        live = [(i, h) for i, h in self.devices if i not in self.lost]
        results = None
        # RuntimeError: the interpreter is exiting and its pools take no new work; read them in turn
        with contextlib.suppress(RuntimeError):
            if self._pool is not None:
                results = list(self._pool.map(lambda device: self._sample_device(*device), live))
        if results is None:
            results = [self._sample_device(i, h) for i, h in live]
        out: dict[str, Any] = {}
        ours = job_pids(pid for _, procs in results if procs for pid, _ in procs)
        for (i, _), (values, procs) in zip(live, results):
            out.update(values)
            if procs is not None:
                out[f"gpu.{i}.memory.job_bytes"] = sum(used for pid, used in procs if pid in ours)
        return out

    def _sample_device(self, i: int, h: Any) -> tuple[dict[str, Any], list[tuple[int, int]] | None]:
        """One device's metrics, and its compute processes as (pid, bytes) for the job's share."""
        nvml, p, out = self.nvml, f"gpu.{i}.", {}
        read = self._guarded(i)
        util = read(f"{i}.util", nvml.nvmlDeviceGetUtilizationRates, h)
        if util is not None:
            out[p + "util"], out[p + "mem_util"] = util.gpu, util.memory
        mem = read(f"{i}.memory", nvml.nvmlDeviceGetMemoryInfo, h)
        if mem is not None:
            out[p + "memory.used_bytes"], out[p + "memory.total_bytes"] = mem.used, mem.total
            out[p + "memory.percent"] = 100.0 * mem.used / mem.total if mem.total else None
        if i not in self._power_limit:
            self._power_limit[i] = read(f"{i}.power_limit_w", nvml.nvmlDeviceGetEnforcedPowerLimit, h)
        for key, milliwatts in (
            ("power_w", read(f"{i}.power_w", nvml.nvmlDeviceGetPowerUsage, h)),
            ("power_limit_w", self._power_limit[i]),
        ):
            if milliwatts is not None:
                out[p + key] = milliwatts * 1e-3
        scalar_fields: list[tuple[str, Callable[..., Any], tuple[Any, ...]]] = [
            ("temp_c", nvml.nvmlDeviceGetTemperature, (h, nvml.NVML_TEMPERATURE_GPU)),
            ("clock.sm_mhz", nvml.nvmlDeviceGetClockInfo, (h, nvml.NVML_CLOCK_SM)),
            ("clock.mem_mhz", nvml.nvmlDeviceGetClockInfo, (h, nvml.NVML_CLOCK_MEM)),
            ("throttle_reasons", _throttle_fn(nvml), (h,)),
            (
                "ecc.uncorrected",
                nvml.nvmlDeviceGetTotalEccErrors,
                (h, nvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, nvml.NVML_VOLATILE_ECC),
            ),
            (
                "ecc.corrected",
                nvml.nvmlDeviceGetTotalEccErrors,
                (h, nvml.NVML_MEMORY_ERROR_TYPE_CORRECTED, nvml.NVML_VOLATILE_ECC),
            ),
        ]
        for key, fn, args in scalar_fields:
            value = read(f"{i}.{key}", fn, *args)
            if value is not None:
                out[p + key] = value
        procs = read(f"{i}.processes", nvml.nvmlDeviceGetComputeRunningProcesses, h)
        gpm = read(f"{i}.gpm", self._gpm, i, h)
        if gpm:
            out.update({p + f"gpm.{k}": v for k, v in gpm.items()})
        if i in self.lost:  # lost during this pass: nothing of it counts
            return {}, None
        pids = None if procs is None else [(pr.pid, int(pr.usedGpuMemory or 0)) for pr in procs]
        return out, pids

    def _guarded(self, index: int) -> Callable[..., Any]:
        """A reader for one device: a field that fails is dropped; a lost GPU is dropped whole."""

        def read(field: str, fn: Callable[..., Any], *args: Any) -> Any:
            if index in self.lost or field in self._fields.disabled:
                return None
            try:
                return fn(*args)
            except Exception as exc:
                if getattr(exc, "value", None) == getattr(self.nvml, "NVML_ERROR_GPU_IS_LOST", object()):
                    self.lost.add(index)
                    log.warning("tunetrack: GPU %s was lost (%s); its metrics stop here", index, exc)
                    return None
                self._fields.fail(field, exc)
                return None

        return read

    def _gpm(self, index: int, handle: Any) -> dict[str, float] | None:
        """Hopper+ GPM counters: SM, tensor-pipe and DRAM activity between two samples.

        Two sample buffers per device, allocated once: each pass fills the older one and compares it
        with the newer, so a pass costs two NVML calls instead of four.
        """
        nvml = self.nvml
        buffers = self._gpm_buffers.get(index)
        if buffers is None:
            support = nvml.nvmlGpmQueryDeviceSupport(handle)
            if not support.isSupportedDevice:
                raise RuntimeError("GPM is not supported on this device")
            buffers = self._gpm_buffers[index] = []
            buffers += [nvml.nvmlGpmSampleAlloc(), nvml.nvmlGpmSampleAlloc()]
            nvml.nvmlGpmSampleGet(handle, buffers[0])
            return None  # a rate needs two samples
        prev, sample = buffers
        nvml.nvmlGpmSampleGet(handle, sample)
        buffers.reverse()  # this sample is the next pass's previous one
        request = nvml.c_nvmlGpmMetricsGet_t()
        request.version = nvml.NVML_GPM_METRICS_GET_VERSION
        request.numMetrics = len(_GPM_METRICS)
        request.sample1, request.sample2 = prev, sample
        for j, const in enumerate(_GPM_METRICS.values()):
            request.metrics[j].metricId = getattr(nvml, const)
        nvml.nvmlGpmMetricsGet(request)
        return {name: float(request.metrics[j].value) for j, name in enumerate(_GPM_METRICS)}

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
        for buffers in self._gpm_buffers.values():
            for buffer in buffers:
                _quiet(self.nvml.nvmlGpmSampleFree, buffer)
        self._gpm_buffers.clear()
        _quiet(self.nvml.nvmlShutdown)


def _throttle_fn(nvml: Any) -> Callable[..., Any]:
    # Renamed "clock event reasons" in newer drivers; the old name remains on older bindings.
    return (
        getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None)
        or nvml.nvmlDeviceGetCurrentClocksThrottleReasons
    )


def _quiet(fn: Callable[..., Any], *args: Any) -> None:
    try:
        fn(*args)
    except Exception as exc:
        log.debug("NVML cleanup call failed: %s", exc)
