"""Training health: NaN/Inf and spikes in the loss and the gradient norm, recorded as events.

The monitor runs on the writer thread over the rows as they are written, so it costs training
nothing. A spike is a value more than ``spike_factor`` robust standard deviations (1.4826 × the
median absolute deviation) above the median of the last ``window`` finite values, once at least
``min_history`` values have been seen. Each kind of problem is printed once as a warning; every
occurrence is an event at its step (``tunetrack show`` lists them).
"""

from __future__ import annotations

import math
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
    """Checks each written block of rows. Runs on the writer thread, once per block, vectorised: a
    per-value rolling median would cost the writer tens of microseconds per row at high log rates."""

    def __init__(self, config: HealthConfig | None = None) -> None:
        self.config = config or HealthConfig()
        self._history: dict[str, Any] = {}  # key -> the last ``window`` finite values (a NumPy array)
        self._keys = {k: "loss" for k in self.config.loss_keys} | {
            k: "grad_norm" for k in self.config.grad_keys
        }

    def check_record(self, record: dict[str, Any]) -> list[dict[str, Any]]:
        """Events for a written block of rows: only the loss and gradient-norm columns are decoded."""
        events: list[dict[str, Any]] = []
        for key, what in self._keys.items():
            column = _column(record, key)
            if column is not None:
                events.extend(self._check(what, key, *column))
        return events

    def _check(self, what: str, key: str, steps: Any, values: Any) -> list[dict[str, Any]]:
        """Non-finite values, then spikes. Each value is compared with the ``window`` finite values
        before it; once the window is full the baseline is recomputed every ``window`` values (a
        block of N rows costs N/window medians, all in one NumPy call)."""
        import numpy as np

        bad = ~np.isfinite(values)
        events = [
            {
                "kind": "health",
                "problem": f"{what}_nonfinite",
                "key": key,
                "value": float(values[i]),
                "step": int(steps[i]),
            }
            for i in np.flatnonzero(bad)
        ]
        steps, values = steps[~bad], values[~bad]
        cfg, window = self.config, self.config.window
        history = self._history.get(key, np.empty(0))
        spikes: list[tuple[int, float]] = []  # (index into values, baseline)
        i = 0
        while len(history) < window and i < len(values):  # warming up: one value at a time
            if len(history) >= cfg.min_history:
                baseline, threshold = self._thresholds(history[None, :])
                if values[i] > threshold[0]:
                    spikes.append((i, float(baseline[0])))
            history = np.append(history, values[i])
            i += 1
        if i < len(values):  # a full window: one baseline per chunk of ``window`` values
            full = np.concatenate([history, values[i:]])
            chunks = -(-(len(values) - i) // window)
            # chunk k of the new values is full[(k+1)W : (k+2)W]; its baseline window is full[kW : (k+1)W]
            baseline, threshold = self._thresholds(full[: chunks * window].reshape(chunks, window))
            chunk = np.arange(len(values) - i) // window
            for j in np.flatnonzero(values[i:] > threshold[chunk]):
                spikes.append((i + int(j), float(baseline[chunk[j]])))
            history = full[-window:]
        self._history[key] = history
        events += [
            {
                "kind": "health",
                "problem": f"{what}_spike",
                "key": key,
                "value": float(values[j]),
                "step": int(steps[j]),
                "baseline": b,
            }
            for j, b in spikes
        ]
        return sorted(events, key=lambda e: e["step"])

    def _thresholds(self, windows: Any) -> tuple[Any, Any]:
        """Per row of ``windows``: the median, and the value above which a new value is a spike."""
        import numpy as np

        middle = windows.shape[1] // 2  # np.sort, not np.median: several times faster on short rows
        median = np.sort(windows, axis=1)[:, middle]
        mad = np.sort(np.abs(windows - median[:, None]), axis=1)[:, middle]
        deviation = np.maximum(np.maximum(1.4826 * mad, self.config.min_deviation), 1e-3 * np.abs(median))
        return median, median + self.config.spike_factor * deviation


def _column(record: dict[str, Any], key: str) -> tuple[Any, Any] | None:
    """(steps, float64 values) of one numeric key in an encoded ``r`` record, or None."""
    import numpy as np

    steps = np.frombuffer(record["s"], dtype=np.int64)
    matrix_keys = record.get("m") or []
    if key in matrix_keys:
        matrix = np.frombuffer(record["x"], dtype=np.float64).reshape(-1, len(matrix_keys))
        return steps, matrix[:, matrix_keys.index(key)]
    col = record["c"].get(key)
    if col is None:
        return None
    kind, data, idx = col
    if idx is not None:
        steps = steps[np.frombuffer(idx, dtype=np.uint32)]
    if kind in ("f", "i"):
        return steps, np.frombuffer(data, dtype=np.float64 if kind == "f" else np.int64).astype(np.float64)
    if kind == "o":  # mixed: numbers among None/strings
        keep = [i for i, v in enumerate(data) if type(v) in (int, float)]
        return steps[keep], np.array([data[i] for i in keep], dtype=np.float64)
    return None
