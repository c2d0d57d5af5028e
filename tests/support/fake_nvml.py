"""A fake ``pynvml`` module: the library boundary where a real GPU would be.

It implements the NVML calls tunetrack makes with the real module's names, constants and error
class shape, so the code under test cannot tell the difference. Per-field failures, a GPU that is
lost mid-run and per-call latency are configurable.
"""

from __future__ import annotations

import threading
import time
import types
from dataclasses import dataclass, field
from typing import Any

NVML_ERROR_INVALID_ARGUMENT = 2
NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_GPU_IS_LOST = 15


class NVMLError(Exception):
    def __init__(self, value: int) -> None:
        super().__init__(f"NVML error {value}")
        self.value = value


@dataclass
class FakeGpu:
    uuid: str
    util: int = 50
    mem_util: int = 20
    used: int = 8 * 2**30
    total: int = 80 * 2**30
    temp: int = 60
    power_mw: int = 300_000
    limit_mw: int = 700_000
    sm_mhz: int = 1980
    mem_mhz: int = 2619
    throttle: int = 0
    ecc_uncorrected: int = 0
    ecc_corrected: int = 2
    processes: list[tuple[int, int]] = field(default_factory=list)  # (pid, bytes)
    gpm: bool = True
    unsupported: set[str] = field(default_factory=set)  # names of NVML functions that fail
    lost_after: int | None = None  # calls after which every call raises GPU_IS_LOST


class FakeNvml:
    """Builds a module object; ``calls`` counts NVML calls per function name."""

    def __init__(self, gpus: list[FakeGpu], latency: float = 0.0, init_error: bool = False) -> None:
        self.gpus = gpus
        self.latency = latency
        self.init_error = init_error
        self.calls: dict[str, int] = {}
        self.device_calls: dict[int, int] = {}
        self.live_gpm_samples = 0  # allocated and not yet freed
        self._gpm_clock = 0  # orders GPM samples: a newer sample has a larger "t"
        self._lock = threading.Lock()  # devices are read from several threads at once

    def module(self) -> types.ModuleType:
        m = types.ModuleType("pynvml")
        m.NVMLError = NVMLError
        consts = dict(
            NVML_ERROR_NOT_SUPPORTED=3,
            NVML_ERROR_GPU_IS_LOST=15,
            NVML_TEMPERATURE_GPU=0,
            NVML_CLOCK_SM=1,
            NVML_CLOCK_MEM=2,
            NVML_MEMORY_ERROR_TYPE_CORRECTED=0,
            NVML_MEMORY_ERROR_TYPE_UNCORRECTED=1,
            NVML_VOLATILE_ECC=0,
            NVML_GPM_METRICS_GET_VERSION=1,
            NVML_GPM_METRIC_SM_UTIL=2,
            NVML_GPM_METRIC_ANY_TENSOR_UTIL=5,
            NVML_GPM_METRIC_DRAM_BW_UTIL=10,
        )
        for k, v in consts.items():
            setattr(m, k, v)
        m.c_nvmlGpmMetricsGet_t = _MetricsGet
        for name in dir(self):
            if name.startswith("nvml"):
                setattr(m, name, self._wrap(name, getattr(self, name)))
        return m

    def _wrap(self, name: str, fn: Any) -> Any:
        def call(*args: Any) -> Any:
            with self._lock:
                self.calls[name] = self.calls.get(name, 0) + 1
            if self.latency:
                time.sleep(self.latency)
            if (
                args
                and isinstance(args[0], int)
                and name.startswith(("nvmlDevice", "nvmlGpm"))
                and "Handle" not in name
            ):
                gpu = self.gpus[args[0]]
                with self._lock:
                    self.device_calls[args[0]] = count = self.device_calls.get(args[0], 0) + 1
                if gpu.lost_after is not None and count > gpu.lost_after:
                    raise NVMLError(NVML_ERROR_GPU_IS_LOST)
                if name in gpu.unsupported:
                    raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
            return fn(*args)

        return call

    # -- the NVML calls (handles are device indices) ------------------------------------------
    def nvmlInit(self) -> None:
        if self.init_error:
            raise NVMLError(9)  # NVML_ERROR_DRIVER_NOT_LOADED

    def nvmlShutdown(self) -> None: ...

    def nvmlDeviceGetCount(self) -> int:
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, i: int) -> int:
        return i

    def nvmlDeviceGetHandleByUUID(self, uuid: str) -> int:
        return next(i for i, g in enumerate(self.gpus) if g.uuid == uuid)

    def nvmlDeviceGetUtilizationRates(self, h: int) -> Any:
        return types.SimpleNamespace(gpu=self.gpus[h].util, memory=self.gpus[h].mem_util)

    def nvmlDeviceGetMemoryInfo(self, h: int) -> Any:
        g = self.gpus[h]
        return types.SimpleNamespace(used=g.used, total=g.total, free=g.total - g.used)

    def nvmlDeviceGetTemperature(self, h: int, sensor: int) -> int:
        return self.gpus[h].temp

    def nvmlDeviceGetPowerUsage(self, h: int) -> int:
        return self.gpus[h].power_mw

    def nvmlDeviceGetEnforcedPowerLimit(self, h: int) -> int:
        return self.gpus[h].limit_mw

    def nvmlDeviceGetClockInfo(self, h: int, clock: int) -> int:
        return self.gpus[h].sm_mhz if clock == 1 else self.gpus[h].mem_mhz

    def nvmlDeviceGetCurrentClocksEventReasons(self, h: int) -> int:
        return self.gpus[h].throttle

    def nvmlDeviceGetTotalEccErrors(self, h: int, kind: int, counter: int) -> int:
        return self.gpus[h].ecc_uncorrected if kind == 1 else self.gpus[h].ecc_corrected

    def nvmlDeviceGetComputeRunningProcesses(self, h: int) -> list[Any]:
        return [types.SimpleNamespace(pid=pid, usedGpuMemory=used) for pid, used in self.gpus[h].processes]

    def nvmlGpmQueryDeviceSupport(self, h: int) -> Any:
        return types.SimpleNamespace(isSupportedDevice=int(self.gpus[h].gpm))

    def nvmlGpmSampleAlloc(self) -> dict[str, Any]:
        with self._lock:
            self.live_gpm_samples += 1
        return {}

    def nvmlGpmSampleGet(self, h: int, sample: dict[str, Any]) -> None:
        with self._lock:
            self._gpm_clock += 1
            sample["t"], sample["gpu"] = self._gpm_clock, h

    def nvmlGpmSampleFree(self, sample: dict[str, Any]) -> None:
        with self._lock:
            self.live_gpm_samples -= 1

    def nvmlGpmMetricsGet(self, request: _MetricsGet) -> None:
        first, second = request.sample1, request.sample2
        if first is second or first.get("gpu") != second.get("gpu") or not first["t"] < second["t"]:
            raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)  # a rate needs an older and a newer sample
        values = {2: 71.5, 5: 42.0, 10: 33.25}
        for j in range(request.numMetrics):
            request.metrics[j].value = values[request.metrics[j].metricId]


class _Metric:
    metricId = 0
    value = 0.0


class _MetricsGet:
    def __init__(self) -> None:
        self.version = self.numMetrics = 0
        self.sample1 = self.sample2 = None
        self.metrics = [_Metric() for _ in range(8)]
