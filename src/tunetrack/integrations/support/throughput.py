"""Throughput from what the frameworks already log: step time, steps/s, samples/s, tokens/s,
achieved TFLOP/s and MFU. Adapters feed it each logged row; it returns extra ``perf/*`` keys.

It never synchronizes a GPU: a 0-d tensor it needs (torchtune's per-GPU token rate) is scaled with a
queued tensor operation and left for ``log()`` to copy and the writer to convert.

Token counts come from ``num_input_tokens_seen`` (Transformers, cumulative), ``num_tokens`` (TRL,
cumulative) or ``tokens_per_second_per_gpu`` (torchtune, a rate). TFLOP/s come from Transformers'
``total_flos`` over ``train_runtime``; MFU divides them by the GPUs' peak dense bf16 throughput below.
"""

from __future__ import annotations

import numbers
import sys
from collections.abc import Mapping
from typing import Any

#: Peak dense (no sparsity) bf16 tensor throughput per GPU, TFLOP/s, from the vendors' datasheets.
#: Matched as a substring of the device name, longest name first; fp16 for GPUs without bf16.
PEAK_BF16_TFLOPS: dict[str, float] = {
    "B200": 2250.0,
    "H200": 989.4,
    "GH200": 989.4,
    "H100 SXM": 989.4,
    "H100 80GB HBM3": 989.4,
    "H100 NVL": 835.0,
    "H100 PCIe": 756.0,
    "H100": 756.0,
    "H800": 989.4,
    "A100": 312.0,
    "A800": 312.0,
    "L40S": 362.1,
    "L40": 181.0,
    "L4": 121.0,
    "A10G": 70.0,
    "A10": 125.0,
    "RTX 4090": 165.2,
    "RTX 3090": 71.0,
    "V100": 125.0,
    "T4": 65.0,
    "MI300X": 1307.4,
    "MI250X": 383.0,
}


def peak_tflops(gpu_name: str | None) -> float | None:
    """The table's entry for a device name such as ``NVIDIA H100 80GB HBM3``, or None."""
    if not gpu_name:
        return None
    for model in sorted(PEAK_BF16_TFLOPS, key=len, reverse=True):
        if model.lower() in gpu_name.lower():
            return PEAK_BF16_TFLOPS[model]
    return None


def _number(value: Any) -> float | None:
    """A Python or NumPy number as a float; None for anything else (tensors included: reading one
    would wait for the GPU)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or _is_tensor(value):
        return None
    return float(value)


def _is_tensor(value: Any) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.Tensor)


class Throughput:
    """Turns consecutive logged rows into rates. ``samples_per_step`` is the global batch size."""

    def __init__(
        self, samples_per_step: int | None = None, gpu_name: str | None = None, num_gpus: int = 1
    ) -> None:
        self.samples_per_step = samples_per_step
        self.peak = peak_tflops(gpu_name)
        self.num_gpus = max(num_gpus, 1)
        self._last: tuple[int, float] | None = None
        self._last_tokens: tuple[float, float] | None = None

    def update(self, step: int, now: float, values: Mapping[str, Any]) -> dict[str, Any]:
        """The ``perf/*`` keys this row adds (floats, or a 0-d tensor for a tensor rate)."""
        out: dict[str, Any] = {}
        if self._last is not None and step > self._last[0] and now > self._last[1]:
            steps, seconds = step - self._last[0], now - self._last[1]
            out["perf/step_time_s"] = seconds / steps
            out["perf/steps_per_s"] = steps / seconds
            if self.samples_per_step:
                out["perf/samples_per_s"] = self.samples_per_step * steps / seconds
        if self._last is None or step > self._last[0]:
            self._last = (step, now)
        tokens = _number(values.get("num_input_tokens_seen", values.get("num_tokens")))
        if tokens is not None:
            if self._last_tokens is not None and tokens > self._last_tokens[0] and now > self._last_tokens[1]:
                out["perf/tokens_per_s"] = (tokens - self._last_tokens[0]) / (now - self._last_tokens[1])
            self._last_tokens = (tokens, now)
        per_gpu: Any = values.get("tokens_per_second_per_gpu")
        if _number(per_gpu) is not None:
            out["perf/tokens_per_s"] = float(per_gpu) * self.num_gpus
        elif _is_tensor(per_gpu) and per_gpu.numel() == 1:
            out["perf/tokens_per_s"] = per_gpu * self.num_gpus if self.num_gpus > 1 else per_gpu
        flos, runtime = _number(values.get("total_flos")), _number(values.get("train_runtime"))
        if flos and runtime:
            out["perf/tflops"] = flos / runtime / 1e12
            if self.peak:
                out["perf/mfu"] = out["perf/tflops"] / (self.peak * self.num_gpus)
        return out
