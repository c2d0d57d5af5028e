"""Metric series: one key's visible points across blocks, and their summary (``tunetrack.aggregates``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .. import aggregates
from ..aggregates import Agg
from ..store import codec
from ..values import is_number

if TYPE_CHECKING:
    import numpy as np


@dataclass
class Series:
    """One metric's visible points, in logging order."""

    steps: np.ndarray
    values: np.ndarray
    times: np.ndarray

    def __len__(self) -> int:
        return len(self.steps)


def series(blocks: list[codec.Block], key: str) -> Series:
    """Concatenate one key's visible points across blocks, in logging order."""
    import numpy as np

    parts = [c for b in blocks if (c := b.column(key)) is not None]
    if not parts:
        return Series(np.empty(0, np.int64), np.empty(0, np.float64), np.empty(0, np.float64))
    steps, times, values = (np.concatenate([p[i] for p in parts]) for i in range(3))
    if len(parts) > 1 and times.size > 1 and np.any(np.diff(times) < 0):
        order = np.argsort(times, kind="stable")
        steps, times, values = steps[order], times[order], values[order]
    return Series(steps, values, times)


def py(value: Any) -> Any:
    """A NumPy scalar as the Python number it holds."""
    return value.item() if type(value).__module__ == "numpy" else value


def aggregate(s: Series) -> Agg | None:
    """The series' aggregates (``tunetrack.aggregates``: the writer stores the same per process)."""
    return aggregates.chunk(s.steps, s.times, s.values)


def summarize(s: Series, lower: bool) -> dict[str, Any]:
    """Last value, min and max over finite numbers, best (the min where ``lower``, else the max) and
    the step of its first occurrence, the step of the last value, and how many points hold a value."""
    return aggregates.summary(aggregate(s), lower)


def numeric_values(s: Series) -> np.ndarray:
    """The values as float64, with anything that is not a number (None, strings, bools) as NaN."""
    import numpy as np

    if s.values.dtype != object:
        return s.values.astype(np.float64, copy=False)
    return np.array([v if is_number(v) else np.nan for v in s.values])


def present(s: Series) -> Series:
    """The points that hold a value. A key logged as None (TRL's GRPO trainer does it; so does
    ``log({"eval/loss": x if evaluating else None})``) has no point at that step: it was not measured
    there, unlike a NaN, which was."""
    import numpy as np

    if s.values.dtype != object:
        return s
    keep = np.fromiter((v is not None for v in s.values), bool, len(s))
    return Series(s.steps[keep], s.values[keep], s.times[keep])
