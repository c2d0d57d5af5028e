"""Distributions logged at a step: ``tunetrack.Histogram``, a run's histograms read back, and the
histograms of one key over steps on common bins (a heatmap or a ridgeline over training).

``run.log({"grad/layer3": tunetrack.Histogram(values)}, step=...)`` records the values' histogram (its
bin edges and counts, never the values) as an event of kind ``histogram`` at that step; the row keeps
nothing of it. Per-layer gradient norms, a mixture-of-experts router's loads, token log-probabilities:
what one number per step hides.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .jsonfile import finite_list

if TYPE_CHECKING:
    import numpy as np

#: the event kind a histogram is recorded as
HISTOGRAM = "histogram"
#: the bins of a histogram made from values, unless asked otherwise (W&B's default too)
BINS = 64


class Histogram:
    """A histogram: ``counts[i]`` values fell in ``[edges[i], edges[i + 1])`` (the last bin closed).

    Made from ``values`` (a sequence, a NumPy array or a tensor, on any device: read once, here, into
    ``bins`` equal bins over their finite range), or from ``counts`` and ``edges`` (``np.histogram``'s
    output, or a framework's own). Non-finite values are left out and counted in ``nonfinite``.
    """

    __slots__ = ("counts", "edges", "nonfinite")

    def __init__(
        self,
        values: Any = None,
        *,
        counts: Sequence[float] | None = None,
        edges: Sequence[float] | None = None,
        bins: int = BINS,
    ) -> None:
        import numpy as np

        if values is not None:
            if counts is not None or edges is not None:
                raise ValueError("Histogram: give values, or counts and edges, not both")
            data = _array(values)
            finite = data[np.isfinite(data)]
            self.nonfinite = int(data.size - finite.size)
            found, bounds = np.histogram(finite, bins=max(int(bins), 1))
            self.counts, self.edges = found.astype(float).tolist(), bounds.tolist()
            return
        if counts is None or edges is None:
            raise ValueError("Histogram: give values, or counts and edges")
        self.counts = [float(c) for c in counts]
        self.edges = [float(e) for e in edges]
        self.nonfinite = 0
        if len(self.edges) != len(self.counts) + 1 or not self.counts:
            raise ValueError(
                f"Histogram: {len(self.counts)} counts need {len(self.counts) + 1} edges, not {len(self.edges)}"
            )
        if any(b < a for a, b in zip(self.edges, self.edges[1:])):
            raise ValueError("Histogram: edges must not decrease")

    def data(self, key: str) -> dict[str, Any]:
        """The event's fields (``Tracker.log`` records it)."""
        return {"key": key, "edges": self.edges, "counts": self.counts, "nonfinite": self.nonfinite}

    def __repr__(self) -> str:
        return f"Histogram({len(self.counts)} bins, {sum(self.counts):g} values)"


def _array(values: Any) -> np.ndarray:
    import numpy as np

    if hasattr(values, "detach"):  # a tensor: read once, as floats, wherever it lives
        values = values.detach().float().cpu().numpy()
    return np.asarray(values, dtype=np.float64).reshape(-1)


@dataclass
class Logged:
    """One histogram as recorded: its step, time, bin edges and counts."""

    step: int
    time: float
    edges: np.ndarray
    counts: np.ndarray


def logged(events: list[dict[str, Any]], key: str | None = None) -> dict[str, list[Logged]]:
    """The histograms among a run's events (``Run.events(histograms=True)``), per key, in time order."""
    import numpy as np

    out: dict[str, list[Logged]] = {}
    for e in events:
        if e["kind"] == HISTOGRAM and (key is None or e.get("key") == key):
            found = Logged(
                int(e["step"]),
                float(e["time"]),
                np.asarray(e["edges"], float),
                np.asarray(e["counts"], float),
            )
            out.setdefault(str(e.get("key")), []).append(found)
    return out


@dataclass
class OverSteps:
    """One key's histograms on common bins: ``counts[i, j]`` at ``steps[i]`` in bin ``j``
    (``edges[j]`` to ``edges[j + 1]``), each step's counts spread over the common bins in proportion
    to how much of its own bins they cover (values are taken as even within a bin). Each step's own
    bins also give ``low`` and ``high`` (the outer edges of its outermost bins that hold a value) and
    ``mean`` (each value at its bin's middle); NaN at a step whose histogram holds no value."""

    key: str
    steps: np.ndarray
    edges: np.ndarray
    counts: np.ndarray
    low: np.ndarray
    high: np.ndarray
    mean: np.ndarray


def over_steps(histograms: list[Logged], key: str, bins: int = BINS) -> OverSteps:
    """``histograms`` (one key's, ``logged``) rebinned onto ``bins`` equal bins over the range they all
    span; a later histogram at a step already seen replaces it."""
    import numpy as np

    by_step = {h.step: h for h in histograms}
    steps = np.array(sorted(by_step), dtype=np.int64)
    if not len(steps):
        none = np.zeros(0)
        return OverSteps(key, steps, np.zeros(bins + 1), np.zeros((0, bins)), none, none, none)
    low = min(float(h.edges[0]) for h in by_step.values())
    high = max(float(h.edges[-1]) for h in by_step.values())
    edges = np.linspace(low, high if high > low else low + 1.0, bins + 1)
    counts = np.zeros((len(steps), bins))
    for i, step in enumerate(steps.tolist()):
        h = by_step[step]
        cumulative = np.concatenate([[0.0], np.cumsum(h.counts)])
        # the count at or below each common edge, as if values were even within each own bin
        at = np.interp(edges, h.edges, cumulative, left=0.0, right=float(cumulative[-1]))
        counts[i] = np.diff(at)
    low, high, mean = np.array([_range_and_mean(by_step[step]) for step in steps.tolist()]).T
    return OverSteps(key, steps, edges, counts, low, high, mean)


def _range_and_mean(h: Logged) -> tuple[float, float, float]:
    """``h``'s lowest and highest value (the outer edges of its outermost bins that hold one) and its
    mean (each value at its bin's middle); NaN for a histogram of no value."""
    import numpy as np

    held = np.flatnonzero(h.counts > 0)
    if not len(held):
        return math.nan, math.nan, math.nan
    middles = (h.edges[:-1] + h.edges[1:]) / 2
    mean = float(np.dot(h.counts, middles) / h.counts.sum())
    return float(h.edges[held[0]]), float(h.edges[held[-1] + 1]), mean


@dataclass
class Columns:
    """An ``OverSteps`` in at most so many columns of neighbouring steps, as a heatmap draws it:
    column ``c`` merges ``per[c]`` steps, ``starts[c]`` to ``ends[c]``; ``counts[c, j]`` is the MEAN of
    their counts in bin ``j`` (a column reads as one step's, however many it merges: ``counts * per``
    are their sums), ``total[c]`` the values a step of it holds (the mean); ``low`` and ``high`` the
    lowest and highest value of its steps, ``mean`` their values' mean (NaN where they hold none)."""

    starts: np.ndarray
    ends: np.ndarray
    per: np.ndarray
    counts: np.ndarray
    total: np.ndarray
    low: np.ndarray
    high: np.ndarray
    mean: np.ndarray


def columns(view: OverSteps, width: int) -> Columns:
    """``view``'s steps in at most ``width`` columns (every step its own up to ``width`` steps; past
    that, neighbouring steps merged, as even in number as they divide)."""
    import numpy as np

    n = len(view.steps)
    if not n:
        empty = np.zeros(0)
        return Columns(view.steps, view.steps, empty, view.counts, empty, empty, empty, empty)
    at = np.unique(np.linspace(0, n, min(max(width, 1), n), endpoint=False).astype(int))
    per = np.diff(np.r_[at, n])
    totals = view.counts.sum(axis=1)
    sums = np.add.reduceat(totals, at)
    held = np.add.reduceat(np.where(np.isfinite(view.mean), view.mean * totals, 0.0), at)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(sums > 0, held / sums, np.nan)
        low, high = np.fmin.reduceat(view.low, at), np.fmax.reduceat(view.high, at)
    return Columns(
        view.steps[at],
        view.steps[at + per - 1],
        per,
        np.add.reduceat(view.counts, at, axis=0) / per[:, None],
        sums / per,
        low,
        high,
        mean,
    )


def as_json(view: OverSteps, width: int) -> dict[str, Any]:
    """What a distribution card draws (the run page's, from GET /api/runs/{id}/distribution; the
    report's, from its data; the notebook panel's): ``edges``, ``steps`` logged (how many), and per
    column (``columns(view, width)``): ``starts`` and ``ends`` (its first and last step), ``per``,
    ``counts``, ``total`` (the values a step of it holds, the mean), ``min`` and ``max`` (the lowest and
    highest value of its steps), ``mean`` (their values' mean): null where its steps hold no value;
    ``high``: the largest count of a cell."""
    shown = columns(view, width)
    return {
        "key": view.key,
        "steps": len(view.steps),
        "merged": "mean",
        "edges": view.edges.tolist(),
        "starts": shown.starts.tolist(),
        "ends": shown.ends.tolist(),
        "per": shown.per.tolist(),
        "counts": shown.counts.tolist(),
        "high": float(shown.counts.max()) if shown.counts.size else 0.0,
        "total": shown.total.tolist(),
        "min": finite_list(shown.low),
        "max": finite_list(shown.high),
        "mean": finite_list(shown.mean),
    }
