"""A backend that prints one compact line per logged row, for jobs whose only UI is a log file:

    [2026-01-02 10:00:00] step 100 | loss 2.150 | lr 2.0e-04 | gpu mem 8.2 GB

It writes to stdout: that is where training logs are collected (SLURM ``.out`` files, ``nohup``).
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Sequence
from typing import Any, TextIO

from .base import Row, RunInfo

_LABELS = {
    "loss": "loss",
    "eval_loss": "eval_loss",
    "learning_rate": "lr",
    "lr": "lr",
    "grad_norm": "grad",
    "epoch": "epoch",
}


def fmt(value: Any) -> str:
    """Four significant digits; scientific for very small or large magnitudes."""
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return str(value)
        if value != 0 and not 1e-3 <= abs(value) < 1e5:
            return f"{value:.1e}"
        return f"{value:.4g}" if abs(value) >= 1000 else f"{value:.3f}"
    text = str(value)
    return repr(text if len(text) <= 30 else text[:27] + "...")


class ConsoleBackend:
    """Print rows as compact lines. ``keys`` restricts and orders them; ``every=N`` prints every Nth."""

    def __init__(
        self, stream: TextIO | None = None, keys: Sequence[str] | None = None, every: int = 1
    ) -> None:
        self.stream = stream
        self.keys = list(keys) if keys else None
        self.every = max(int(every), 1)
        self._count = 0
        self._gpu_mem: float | None = None

    def _print(self, line: str) -> None:
        print(line, file=self.stream or sys.stdout, flush=True)

    def start(self, run: RunInfo) -> None:
        where = f" in {run.dir}" if run.dir else ""
        self._print(f"tunetrack: run {run.name} ({run.id}){where}")

    def log_config(self, config: dict[str, Any]) -> None:
        """Configs are long; the console shows metrics only."""

    def log_system(self, rows: Sequence[Row]) -> None:
        for _, _, values in rows:
            used = [
                v
                for k, v in values.items()
                if k.endswith("memory.used_bytes") and isinstance(v, (int, float))
            ]
            if used:
                self._gpu_mem = float(sum(used))

    def log(self, rows: Sequence[Row]) -> None:
        for step, unix_time, values in rows:
            self._count += 1
            if (self._count - 1) % self.every == 0:
                self._print(self.line(step, unix_time, values))

    def line(self, step: int, unix_time: float, values: dict[str, Any]) -> str:
        if self.keys is not None:
            items = [(k, values[k]) for k in self.keys if k in values]
        else:
            known = [(k, values[k]) for k in _LABELS if k in values]
            items = known + [(k, v) for k, v in values.items() if k not in _LABELS]
        parts = [f"step {step}"] + [f"{_LABELS.get(k, k)} {fmt(v)}" for k, v in items]
        if self._gpu_mem is not None:
            parts.append(f"gpu mem {self._gpu_mem / 1e9:.1f} GB")
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(unix_time))
        return f"[{stamp}] " + " | ".join(parts)

    def finish(self, state: str) -> None:
        self._print(f"tunetrack: run {state}")
