"""Distributions logged at a step: ``tunetrack.Histogram``, a run's histograms read back, and the
histograms of one key over steps on common bins (a heatmap or a ridgeline over training).

``run.log({"grad/layer3": tunetrack.Histogram(values)}, step=...)`` records the values' histogram (its
bin edges and counts, never the values) as an event of kind ``histogram`` at that step; the row keeps
nothing of it. Per-layer gradient norms, a mixture-of-experts router's loads, token log-probabilities:
what one number per step hides.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

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
    to how much of its own bins they cover (values are taken as even within a bin)."""

    key: str
    steps: np.ndarray
    edges: np.ndarray
    counts: np.ndarray


def over_steps(histograms: list[Logged], key: str, bins: int = BINS) -> OverSteps:
    """``histograms`` (one key's, ``logged``) rebinned onto ``bins`` equal bins over the range they all
    span; a later histogram at a step already seen replaces it."""
    import numpy as np

    by_step = {h.step: h for h in histograms}
    steps = np.array(sorted(by_step), dtype=np.int64)
    if not len(steps):
        return OverSteps(key, steps, np.zeros(bins + 1), np.zeros((0, bins)))
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
    return OverSteps(key, steps, edges, counts)
