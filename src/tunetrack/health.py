"""Training health: NaN/Inf and spikes in the loss and the gradient norm, recorded as events.

The monitor runs on the writer thread over the rows as they are written, so it costs training
nothing. A spike is a value more than ``spike_factor`` robust standard deviations (1.4826 × the
median absolute deviation) above the median of the last ``window`` finite values, once at least
``min_history`` values have been seen. Each kind of problem is printed once as a warning; every
occurrence is an event at its step (``tunetrack show`` lists them).
"""

from __future__ import annotations

import math
from array import array
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

LOSS_KEYS = ("loss", "train/loss", "train_loss_step")
GRAD_KEYS = ("grad_norm", "train/grad_norm", "gradient_norm")


def is_bad(value: Any) -> bool:
    """NaN or ±Inf (the test the Transformers adapter uses to stop training)."""
    return isinstance(value, float) and not math.isfinite(value)


@dataclass
class HealthConfig:
    """Thresholds; pass ``Tracker(health=HealthConfig(...))`` to change them, ``health=False`` to disable."""

    loss_keys: Sequence[str] = LOSS_KEYS
    grad_keys: Sequence[str] = GRAD_KEYS
    window: int = 50
    min_history: int = 10
    spike_factor: float = 6.0
    #: absolute floor for the robust deviation, so a perfectly flat history does not flag noise
    min_deviation: float = 1e-3


class HealthMonitor:
    def __init__(self, config: HealthConfig | None = None) -> None:
        self.config = config or HealthConfig()
        self._series: dict[str, deque] = {}
        self._keys = {k: "loss" for k in self.config.loss_keys} | {
            k: "grad_norm" for k in self.config.grad_keys
        }

    def check_record(self, record: dict[str, Any]) -> list[dict[str, Any]]:
        """Events for a written block of rows: only the loss and gradient-norm columns are decoded."""
        events: list[dict[str, Any]] = []
        for key, what in self._keys.items():
            column = _column(record, key)
            if column is not None:
                for step, value in zip(*column):
                    events.extend(self.check(what, key, step, value))
        return events

    def check(self, what: str, key: str, step: int, value: Any) -> list[dict[str, Any]]:
        if value is None or isinstance(value, (bool, str)):
            return []
        value = float(value)
        if not math.isfinite(value):
            return [
                {"kind": "health", "problem": f"{what}_nonfinite", "key": key, "value": value, "step": step}
            ]
        history = self._series.setdefault(key, deque(maxlen=self.config.window))
        events = []
        if len(history) >= self.config.min_history:
            ordered = sorted(history)
            median = ordered[len(ordered) // 2]
            mad = sorted(abs(v - median) for v in ordered)[len(ordered) // 2]
            deviation = max(1.4826 * mad, self.config.min_deviation, 1e-3 * abs(median))
            if value > median + self.config.spike_factor * deviation:
                events.append(
                    {
                        "kind": "health",
                        "problem": f"{what}_spike",
                        "key": key,
                        "value": value,
                        "step": step,
                        "baseline": median,
                    }
                )
        history.append(value)
        return events


def _column(record: dict[str, Any], key: str) -> tuple[Sequence[int], Sequence[Any]] | None:
    """(steps, values) of one key in an encoded ``r`` record, or None when it is absent."""
    steps = array("q")
    steps.frombytes(record["s"])
    matrix_keys = record.get("m") or []
    if key in matrix_keys:
        values = array("d")
        values.frombytes(record["x"])
        return steps, values[matrix_keys.index(key) :: len(matrix_keys)]
    col = record["c"].get(key)
    if col is None:
        return None
    kind, data, idx = col
    if kind in ("f", "i"):
        values = array("d" if kind == "f" else "q")
        values.frombytes(data)
        data = values
    if idx is not None:
        rows = array("I")
        rows.frombytes(idx)
        steps = array("q", (steps[i] for i in rows))
    return steps, data
