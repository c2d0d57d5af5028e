"""Training health: NaN/Inf and spikes in the loss and the gradient norm, recorded as events.

The monitor runs on the writer thread over the rows as they are written, so it costs training
nothing. A spike is a value more than ``spike_factor`` robust standard deviations (the
interquartile range / 1.349) above the median of the last ``window`` finite values, once at least
``min_history`` values have been seen. Each kind of problem is printed once as a warning; every
occurrence is an event at its step (``tunetrack show`` lists them).
"""

from __future__ import annotations

import math
from array import array
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
    """Checks each written block of rows, on the writer thread. Pure Python (NumPy stays unimported
    in a process that never reads), and cheap at high log rates: once the window is full the
    baseline is recomputed once per ``window`` values, not for every value."""

    def __init__(self, config: HealthConfig | None = None) -> None:
        self.config = config or HealthConfig()
        self._history: dict[str, list[float]] = {}  # key -> its last ``window`` finite values
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

    def _check(
        self, what: str, key: str, steps: Sequence[int], values: Sequence[float]
    ) -> list[dict[str, Any]]:
        """Each value is compared with the baseline of the ``window`` finite values before it; values
        are taken one at a time while the window fills, then a chunk of ``window`` at a time."""
        cfg, window = self.config, self.config.window
        history = self._history.setdefault(key, [])
        values = list(values)  # lists slice, sum and max several times faster than arrays
        all_finite = math.isfinite(sum(values))  # NaN and ±Inf propagate through a sum
        events: list[dict[str, Any]] = []
        i = 0
        while i < len(values):
            chunk = values[i : i + (1 if len(history) < window else window)]
            finite = all_finite or math.isfinite(sum(chunk))
            baseline, threshold = (
                self._baseline(history) if len(history) >= cfg.min_history else (0.0, math.inf)
            )
            if not finite or max(chunk) > threshold:
                for j, value in enumerate(chunk, i):
                    event = {"kind": "health", "key": key, "value": value, "step": steps[j]}
                    if not math.isfinite(value):
                        events.append({**event, "problem": f"{what}_nonfinite"})
                    elif value > threshold:
                        events.append({**event, "problem": f"{what}_spike", "baseline": baseline})
            if finite and len(chunk) == window:
                history = chunk  # a whole window of new values replaces the old one
            else:
                history.extend(chunk if finite else [v for v in chunk if math.isfinite(v)])
                del history[:-window]
            i += len(chunk)
        self._history[key] = history
        return events

    def _baseline(self, history: list[float]) -> tuple[float, float]:
        """The median of ``history``, and the value above which a new value is a spike."""
        ordered = sorted(history)
        n = len(ordered)
        median = ordered[n // 2]
        iqr = ordered[(3 * n) // 4] - ordered[n // 4]  # from the same sort (a MAD would need a second)
        deviation = max(iqr / 1.349, self.config.min_deviation, 1e-3 * abs(median))
        return median, median + self.config.spike_factor * deviation


def _column(record: dict[str, Any], key: str) -> tuple[Sequence[int], Sequence[float]] | None:
    """(steps, float values) of one numeric key in an encoded ``r`` record, or None."""
    steps = array("q")
    steps.frombytes(record["s"])
    matrix_keys = record.get("m") or []
    if key in matrix_keys:
        matrix = array("d")
        matrix.frombytes(record["x"])
        return steps, matrix[matrix_keys.index(key) :: len(matrix_keys)]
    col = record["c"].get(key)
    if col is None or col[0] not in ("f", "i", "o"):  # absent, or booleans
        return None
    kind, data, idx = col
    if idx is not None:
        rows = array("I")
        rows.frombytes(idx)
        steps = array("q", (steps[i] for i in rows))
    if kind == "o":  # mixed: keep the numbers among None and strings
        keep = [i for i, v in enumerate(data) if type(v) in (int, float)]
        return [steps[i] for i in keep], [float(data[i]) for i in keep]
    values = array("d" if kind == "f" else "q")
    values.frombytes(data)
    return steps, values if kind == "f" else array("d", values)
