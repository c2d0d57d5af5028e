"""Training health: NaN/Inf and spikes in the loss and the gradient norm, recorded as events.

The monitor runs on the writer thread over the columns of each written block (the writer takes
them out of the encoded block), so it costs training nothing. A spike is a value more than
``spike_factor`` robust standard deviations (the interquartile range / 1.349) above the median of
the last ``window`` finite values, once at least ``min_history`` values have been seen. Each kind of problem is printed once as a warning; every
occurrence is an event at its step (``tunetrack show`` lists them).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .. import metric_keys


def is_bad(value: Any) -> bool:
    """NaN or ±Inf."""
    return isinstance(value, float) and not math.isfinite(value)


def diverged(values: Mapping[str, Any]) -> bool:
    """Whether a logged row's loss or gradient norm is NaN or ±Inf (an adapter then stops training
    cleanly, when the user asked for that)."""
    return any(is_bad(values.get(k)) for k in (*metric_keys.LOSS, *metric_keys.GRAD_NORM))


def describe(problem: Mapping[str, Any], step: int) -> tuple[str, str]:
    """A problem the monitor found, in words: an alert's title, and the one-line account that the
    alert and the warning both give."""
    key, value = problem["key"], problem["value"]
    baseline = f"baseline {problem['baseline']:.6g}" if "baseline" in problem else ""
    title = f"{key} spiked" if problem["problem"].endswith("_spike") else f"{key} is {value}"
    return title, f"{key} = {value:.6g} at step {step}" + (f" ({baseline})" if baseline else "")


def warning(problem: Mapping[str, Any], step: int) -> str:
    """The warning printed the first time a kind of problem is seen."""
    key, value = problem["key"], problem["value"]
    baseline = f", baseline {problem['baseline']:.6g}" if "baseline" in problem else ""
    return (
        f"training health: {key} = {value:.6g} at step {step} ({problem['problem'].replace('_', ' ')}"
        f"{baseline}); recorded as an event, further occurrences are recorded silently"
    )


@dataclass
class HealthConfig:
    """Thresholds; pass ``Tracker(health=HealthConfig(...))`` to change them, ``health=False`` to disable."""

    loss_keys: Sequence[str] = metric_keys.LOSS
    grad_keys: Sequence[str] = metric_keys.GRAD_NORM
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

    @property
    def keys(self) -> list[str]:
        """The keys it watches: the writer hands it only these columns."""
        return list(self._keys)

    def check(self, columns: Mapping[str, tuple[Sequence[int], Sequence[float]]]) -> list[dict[str, Any]]:
        """Events for a written block of rows, from its watched columns: ``key -> (steps, values)``."""
        events: list[dict[str, Any]] = []
        for key, (steps, values) in columns.items():
            what = self._keys.get(key)
            if what is not None:
                events.extend(self._check(what, key, steps, values))
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
