"""A metric's aggregates over a run: how many points hold a value, the last value (its step and time),
the lowest and highest finite value and the step of the first occurrence of each; and from these,
``best`` (the lowest for a loss, ``metric_keys.minimized``, else the highest) and its step.

One implementation for every place that says "best": the writer folds each block it writes into
them (pure Python, as the writer never loads NumPy) and stores them in the process's end record, so a
listing of ended runs reads no data; a reader folds a whole series at once (NumPy) when it has no
stored aggregates it can trust; ``Run.summary()``, ``tunetrack ls --json``, the dashboard and the
SQL ``summary`` table all turn them into numbers with ``summary``. Aggregates of two chunks, or of
two processes, are merged with ``merge``: min and max are associative, so the result is the same as
folding the concatenated points.

The stored form is a list (``FIELDS``), not a dict: an end record holds one per key, and a listing of
10,000 runs reads them all.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Mapping, Sequence
from typing import Any

from .values import is_finite_number

#: the order of the stored list
FIELDS = ("count", "last", "step", "time", "min", "min_step", "max", "max_step")
COUNT, LAST, STEP, TIME, MIN, MIN_STEP, MAX, MAX_STEP = range(len(FIELDS))

#: the aggregates ``summary`` gives, in order: what ``Run.summary()`` and the SQL table hold
SUMMARY_FIELDS = ("last", "min", "max", "best", "best_step", "step", "count")
#: what ``--sort KEY:AGG`` and ``KEY:AGG`` in a ``--where`` expression may name
AGGREGATES = ("last", "min", "max", "best")

Agg = list  # [count, last, step, time, min, min_step, max, max_step]
#: a run of points: a list, an ``array`` (the writer's, decoded without NumPy) or a NumPy array (a reader's)
Points = Any


def parse_spec(spec: str, at: str = "") -> tuple[str, str | None]:
    """``KEY[:AGG]`` (``eval/loss:min``) as ``(key, aggregate)``, the aggregate None where no colon
    follows the key. The one parser of the spelling: ``--where`` and ``--sort``, ``--metric``, the
    dashboard's columns and the agents' tools all read it here, and a part after the last colon that
    names no aggregate is the one ``ValueError`` they all word alike (``at`` says where it was:
    `` at column 7``)."""
    key, sep, agg = spec.rpartition(":")
    if not sep:
        return spec, None
    if agg not in AGGREGATES:
        raise ValueError(f"unknown aggregate {agg!r}{at} (use {', '.join(AGGREGATES)})")
    return key, agg


def chunk(steps: Points, times: Points, values: Points) -> Agg | None:
    """The aggregates of one run of points in logging order (a block's column, a whole series), or
    None when no point holds a value. A None is no point (it was not measured there); a NaN is a point
    but no number; bools and text are points without a min or max."""
    dtype = getattr(values, "dtype", None)
    if dtype is not None and dtype.kind in "fiu":  # a reader's NumPy series: vectorized
        if not len(values):
            return None
        return [len(values), _py(values[-1]), int(steps[-1]), float(times[-1]), *_np_extremes(steps, values)]
    if dtype is not None:  # an object or bool array: as Python values
        values, steps, times = values.tolist(), list(steps), list(times)
    if not (isinstance(values, array) and values.typecode in "dq"):
        keep = [i for i, v in enumerate(values) if v is not None]
        if not keep:
            return None
        if len(keep) < len(values):
            values = [values[i] for i in keep]
            steps = [steps[i] for i in keep]
            times = [times[i] for i in keep]
    elif not values:
        return None
    return [len(values), values[-1], int(steps[-1]), float(times[-1]), *_py_extremes(steps, values)]


def _py_extremes(steps: Sequence[int], values: Sequence[Any]) -> list[Any]:
    """[min, its step, max, its step] over the finite numbers, first occurrences; Nones without one.

    ``min`` and ``max`` skip a NaN anywhere but first, and a finite result proves there was no
    -inf (or +inf); otherwise the finite numbers are picked out first (the rare, slow path)."""
    if isinstance(values, array):
        nums: Sequence[Any] = values
    else:
        nums = [v if type(v) in (int, float) else math.nan for v in values]  # bools and text: no number
    lo, hi = min(nums), max(nums)
    if not (is_finite_number(lo) and is_finite_number(hi)):
        finite = [v for v in nums if is_finite_number(v)]
        if not finite:
            return [None, None, None, None]
        lo, hi = min(finite), max(finite)
    return [lo, int(steps[nums.index(lo)]), hi, int(steps[nums.index(hi)])]


def _np_extremes(steps: Any, values: Any) -> list[Any]:
    import numpy as np

    at = np.flatnonzero(np.isfinite(values))
    if not at.size:
        return [None, None, None, None]
    lo, hi = at[np.argmin(values[at])], at[np.argmax(values[at])]
    return [_py(values[lo]), int(steps[lo]), _py(values[hi]), int(steps[hi])]


def _py(value: Any) -> Any:
    return value.item() if hasattr(value, "item") else value


def merge(a: Agg | None, b: Agg) -> Agg:
    """The aggregates of ``a``'s points and ``b``'s together, ``b`` logged after ``a`` (or by another
    process): an equal extreme keeps ``a``'s step (the first occurrence), the last value is the one
    logged later (``b``'s on a tie)."""
    if a is None:
        return b
    later = b if b[TIME] >= a[TIME] else a
    out = [a[COUNT] + b[COUNT], later[LAST], later[STEP], later[TIME], None, None, None, None]
    lows = [x for x in (a, b) if x[MIN] is not None]
    if lows:
        low = min(lows, key=lambda x: x[MIN])  # min() keeps the first of equals: a's
        high = max(lows, key=lambda x: x[MAX])
        out[MIN : MIN_STEP + 1] = low[MIN : MIN_STEP + 1]
        out[MAX : MAX_STEP + 1] = high[MAX : MAX_STEP + 1]
    return out


class MatrixFold:
    """The aggregates of the blocks whose rows all hold the same float keys (the writer's matrix
    blocks: a training loop logs the same keys at every step), folded a block at a time with NumPy, a
    vector per field, so that wide rows (500 per-layer norms) cost the writer no Python loop per key.
    ``aggregates()`` gives each key's ``Agg``, as ``chunk`` and ``merge`` would have."""

    def __init__(self, keys: Sequence[str]) -> None:
        import numpy as np

        width = len(keys)
        self.keys = list(keys)
        self.count = 0
        self.last: Any = np.full(width, np.nan)
        self.step = self.time = 0.0
        self.low, self.high = np.full(width, np.inf), np.full(width, -np.inf)
        self.low_step, self.high_step = np.zeros(width, np.int64), np.zeros(width, np.int64)

    def add(self, steps: Sequence[int], times: Sequence[float], matrix: bytes) -> None:
        """One block: ``matrix`` is its row-major float64 values (``len(steps)`` rows)."""
        import numpy as np

        values = np.frombuffer(matrix, dtype="<f8").reshape(len(steps), len(self.keys))
        steps_array = np.asarray(steps, dtype=np.int64)
        columns = np.arange(len(self.keys))
        finite = np.isfinite(values)
        all_finite = bool(finite.all())  # the common case: no masked copies
        self.count += len(steps)
        self.last, self.step, self.time = values[-1].copy(), int(steps[-1]), float(times[-1])
        for sign, extreme, at in ((1.0, self.low, self.low_step), (-1.0, self.high, self.high_step)):
            if all_finite:
                rows = values.argmin(axis=0) if sign > 0 else values.argmax(axis=0)  # first occurrences
                found = values[rows, columns]
            else:
                signed = np.where(finite, values * sign, np.inf)  # the lowest of the signed values
                rows = signed.argmin(axis=0)  # the first occurrence
                found = signed[rows, columns] * sign
            better = found < extreme if sign > 0 else found > extreme  # a tie keeps the earlier step
            extreme[better] = found[better]
            at[better] = steps_array[rows[better]]

    def aggregates(self) -> dict[str, Agg]:
        import numpy as np

        out = {}
        for i, key in enumerate(self.keys):
            has = bool(np.isfinite(self.low[i]))  # a finite number was seen (low and high alike)
            out[key] = [
                self.count,
                float(self.last[i]),
                self.step,
                self.time,
                float(self.low[i]) if has else None,
                int(self.low_step[i]) if has else None,
                float(self.high[i]) if has else None,
                int(self.high_step[i]) if has else None,
            ]
        return out


def summary(agg: Agg | None, lower: bool) -> dict[str, Any]:
    """``SUMMARY_FIELDS`` from stored aggregates: best is the min where ``lower``, else the max."""
    if agg is None:
        return {
            "last": None,
            "min": None,
            "max": None,
            "best": None,
            "best_step": None,
            "step": None,
            "count": 0,
        }
    pick = MIN if lower else MAX
    return {
        "last": agg[LAST],
        "min": agg[MIN],
        "max": agg[MAX],
        "best": agg[pick],
        "best_step": agg[pick + 1],
        "step": agg[STEP],
        "count": agg[COUNT],
    }


def valid(stored: Any) -> bool:
    """Whether ``stored`` (read from a file) is an aggregates list this version understands."""
    return isinstance(stored, list) and len(stored) == len(FIELDS) and isinstance(stored[COUNT], int)


def directions(pairs: Mapping[str, str] | Sequence[str] | None) -> dict[str, bool]:
    """Overrides of what "best" means, ``{key: lower}``, from ``{"reward": "max"}`` or
    ``["reward:max", "eval/acc:max"]`` (the ``--best`` option): a ``ValueError`` names a bad one."""
    if pairs is None:
        return {}
    items = pairs.items() if isinstance(pairs, Mapping) else (_split(p) for p in pairs)
    out: dict[str, bool] = {}
    for key, way in items:
        if way not in ("min", "max"):
            raise ValueError(f"best of {key!r} must be min or max, not {way!r}")
        out[key] = way == "min"
    return out


def _split(pair: str) -> tuple[str, str]:
    key, sep, way = pair.rpartition(":")
    if not sep or not key:
        raise ValueError(f"{pair!r}: give KEY:min or KEY:max")
    return key, way
