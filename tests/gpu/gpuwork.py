"""Work for the GPU tests: queued matrix products that keep the device busy, a small training step
that never synchronizes, and the NVML handle of the device the job calls ``cuda:0``."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from typing import Any

import torch


def queue_matmuls(seconds: float, size: int = 8192) -> tuple[torch.Tensor, torch.cuda.Event]:
    """Queue about ``seconds`` of bf16 matrix products and return (the GPU keeps working).

    The count comes from a short timed calibration, so the GPU stays busy for about that long
    whatever its speed (the host may wait while CUDA's launch queue is full, so less than that may
    be left on return). Returns the output tensor (keep it alive until the work is done) and an event
    recorded after the work: ``event.query()`` is False while the GPU is still busy with it.
    """
    a = torch.randn(size, size, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(size, size, device="cuda", dtype=torch.bfloat16)
    out = torch.empty_like(a)
    torch.matmul(a, b, out=out)
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(10):
        torch.matmul(a, b, out=out)
    torch.cuda.synchronize()
    each = (time.perf_counter() - start) / 10
    for _ in range(max(1, int(seconds / each))):
        torch.matmul(a, b, out=out)
    done = torch.cuda.Event()
    done.record()
    return out, done


class TrainStep:
    """A two-layer MLP trained with SGD on fixed random data, entirely on the GPU.

    ``step()`` queues one forward, backward and optimizer step and returns the loss as a 0-d CUDA
    tensor, without synchronizing the device (MSE loss, foreach SGD: no operation that waits).
    """

    def __init__(self, width: int = 2048, batch: int = 4096, device: str = "cuda") -> None:
        torch.manual_seed(0)
        self.model = torch.nn.Sequential(
            torch.nn.Linear(width, 2 * width), torch.nn.GELU(), torch.nn.Linear(2 * width, width)
        ).to(device)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=1e-3, foreach=True)
        self.x = torch.randn(batch, width, device=device)
        self.y = torch.randn(batch, width, device=device)

    def step(self) -> torch.Tensor:
        self.opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(self.model(self.x), self.y)
        loss.backward()
        self.opt.step()
        return loss.detach()


def nvml_handle(pynvml: Any, device: int = 0) -> Any:
    """The NVML handle of ``cuda:{device}``, found by the UUID CUDA reports (independent of
    ``CUDA_VISIBLE_DEVICES`` and of device ordering)."""
    return pynvml.nvmlDeviceGetHandleByUUID(nvml_uuid(device))


def nvml_uuid(device: int = 0) -> str:
    return f"GPU-{torch.cuda.get_device_properties(device).uuid}"


def nvidia_smi(uuid: str, fields: list[str]) -> dict[str, str]:
    """``nvidia-smi --query-gpu`` for one device: another NVML reader to check our figures against."""
    out = subprocess.run(
        ["nvidia-smi", "-i", uuid, f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.strip()
    return dict(zip(fields, (v.strip() for v in out.split(","))))


def gpm_allowed(pynvml: Any, handle: Any) -> tuple[bool, str]:
    """Whether this driver lets a process read the GPM counters (Hopper+), asked directly."""
    samples: list[Any] = []
    try:
        if not pynvml.nvmlGpmQueryDeviceSupport(handle).isSupportedDevice:
            return False, "nvmlGpmQueryDeviceSupport: not supported on this device"
        samples = [pynvml.nvmlGpmSampleAlloc(), pynvml.nvmlGpmSampleAlloc()]
        pynvml.nvmlGpmSampleGet(handle, samples[0])
        time.sleep(0.1)
        pynvml.nvmlGpmSampleGet(handle, samples[1])
        request = pynvml.c_nvmlGpmMetricsGet_t()
        request.version = pynvml.NVML_GPM_METRICS_GET_VERSION
        request.numMetrics = 1
        request.sample1, request.sample2 = samples
        request.metrics[0].metricId = pynvml.NVML_GPM_METRIC_SM_UTIL
        pynvml.nvmlGpmMetricsGet(request)
        return True, "GPM readable"
    except pynvml.NVMLError as exc:
        return False, f"GPM refused by the driver: {exc}"
    finally:
        for sample in samples:
            pynvml.nvmlGpmSampleFree(sample)


def sync_warnings(record: list[tuple[str, str]]) -> Callable[..., None]:
    """A ``warnings.showwarning`` that records (thread name, message) of every warning shown."""
    import threading

    def show(message: Any, category: Any, filename: str, lineno: int, file: Any = None, line: Any = None):
        record.append((threading.current_thread().name, str(message)))

    return show
