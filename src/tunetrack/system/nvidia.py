"""NVIDIA GPUs through NVML (``nvidia-ml-py``), named by the index the job uses.

NVML numbers GPUs in PCI order and ignores ``CUDA_VISIBLE_DEVICES``; the job sees only the visible
ones, renumbered from 0. So ``gpu.0.*`` is the job's ``cuda:0``: with ``CUDA_VISIBLE_DEVICES=2,3``,
``gpu.0`` reads NVML device 2. (Set ``CUDA_DEVICE_ORDER=PCI_BUS_ID``, as most clusters do, so that CUDA
numbers devices in the same order as NVML.)
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Any

from .base import FieldReader

log = logging.getLogger("tunetrack.system")
_GPM_METRICS = {
    "sm_active": "NVML_GPM_METRIC_SM_UTIL",
    "tensor_active": "NVML_GPM_METRIC_ANY_TENSOR_UTIL",
    "dram_active": "NVML_GPM_METRIC_DRAM_BW_UTIL",
}


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


def job_pids() -> set[int]:
    """This process and its siblings (the other ranks a launcher started on this node), and children."""
    try:
        import psutil

        me = psutil.Process()
        pids = {me.pid, *(c.pid for c in me.children(recursive=True))}
        if any(os.environ.get(v) for v in ("LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID")):
            parent = me.parent()
            if parent is not None:
                pids |= {c.pid for c in parent.children(recursive=True)}
        return pids
    except Exception:
        return {os.getpid()}


class NvidiaSource:
    """Utilization, memory, temperature, power, clocks, throttling, ECC, GPM and job memory per GPU."""

    name = "nvidia"

    def __init__(self, nvml: Any, devices: list[tuple[int, Any]]) -> None:
        self.nvml = nvml
        self.devices = devices
        self.lost: set[int] = set()
        self._fields = FieldReader(self.name)
        self._gpm_prev: dict[int, Any] = {}

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
        out: dict[str, Any] = {}
        pids = job_pids()
        for index, handle in self.devices:
            if index not in self.lost:
                self._sample_device(out, index, handle, pids)
        return out

    def _sample_device(self, out: dict[str, Any], i: int, h: Any, pids: set[int]) -> None:
        nvml, p = self.nvml, f"gpu.{i}."
        read = self._guarded(i)
        util = read(f"{i}.util", nvml.nvmlDeviceGetUtilizationRates, h)
        if util is not None:
            out[p + "util"], out[p + "mem_util"] = util.gpu, util.memory
        mem = read(f"{i}.memory", nvml.nvmlDeviceGetMemoryInfo, h)
        if mem is not None:
            out[p + "memory.used_bytes"], out[p + "memory.total_bytes"] = mem.used, mem.total
            out[p + "memory.percent"] = 100.0 * mem.used / mem.total if mem.total else None
        scalar_fields: list[tuple[str, Callable[..., Any], tuple[Any, ...], float]] = [
            ("temp_c", nvml.nvmlDeviceGetTemperature, (h, nvml.NVML_TEMPERATURE_GPU), 1),
            ("power_w", nvml.nvmlDeviceGetPowerUsage, (h,), 1e-3),
            ("power_limit_w", nvml.nvmlDeviceGetEnforcedPowerLimit, (h,), 1e-3),
            ("clock.sm_mhz", nvml.nvmlDeviceGetClockInfo, (h, nvml.NVML_CLOCK_SM), 1),
            ("clock.mem_mhz", nvml.nvmlDeviceGetClockInfo, (h, nvml.NVML_CLOCK_MEM), 1),
            ("throttle_reasons", _throttle_fn(nvml), (h,), 1),
            (
                "ecc.uncorrected",
                nvml.nvmlDeviceGetTotalEccErrors,
                (h, nvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, nvml.NVML_VOLATILE_ECC),
                1,
            ),
            (
                "ecc.corrected",
                nvml.nvmlDeviceGetTotalEccErrors,
                (h, nvml.NVML_MEMORY_ERROR_TYPE_CORRECTED, nvml.NVML_VOLATILE_ECC),
                1,
            ),
        ]
        for key, fn, args, scale in scalar_fields:
            value = read(f"{i}.{key}", fn, *args)
            if value is not None and i not in self.lost:
                out[p + key] = value * scale if scale != 1 else value
        procs = read(f"{i}.processes", nvml.nvmlDeviceGetComputeRunningProcesses, h)
        if procs is not None:
            out[p + "memory.job_bytes"] = sum(int(pr.usedGpuMemory or 0) for pr in procs if pr.pid in pids)
        gpm = read(f"{i}.gpm", self._gpm, i, h)
        if gpm:
            out.update({p + f"gpm.{k}": v for k, v in gpm.items()})

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
        """Hopper+ GPM counters: SM, tensor-pipe and DRAM activity between two samples."""
        nvml = self.nvml
        if index not in self._gpm_prev:
            support = nvml.nvmlGpmQueryDeviceSupport(handle)
            if not support.isSupportedDevice:
                raise RuntimeError("GPM is not supported on this device")
        sample = nvml.nvmlGpmSampleAlloc()
        nvml.nvmlGpmSampleGet(handle, sample)
        prev, self._gpm_prev[index] = self._gpm_prev.get(index), sample
        if prev is None:
            return None
        try:
            request = nvml.c_nvmlGpmMetricsGet_t()
            request.version = nvml.NVML_GPM_METRICS_GET_VERSION
            request.numMetrics = len(_GPM_METRICS)
            request.sample1, request.sample2 = prev, sample
            for j, const in enumerate(_GPM_METRICS.values()):
                request.metrics[j].metricId = getattr(nvml, const)
            nvml.nvmlGpmMetricsGet(request)
            return {name: float(request.metrics[j].value) for j, name in enumerate(_GPM_METRICS)}
        finally:
            _quiet(nvml.nvmlGpmSampleFree, prev)

    def close(self) -> None:
        for sample in self._gpm_prev.values():
            _quiet(self.nvml.nvmlGpmSampleFree, sample)
        self._gpm_prev.clear()
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
