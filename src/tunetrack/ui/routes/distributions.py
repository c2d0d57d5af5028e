"""A key's distributions over the steps (``tunetrack.Histogram``), as the run page's heatmap draws them."""

from __future__ import annotations

import math
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query

from ...errors import TunetrackError, one_line
from ...histograms import BINS, columns
from .deps import CatalogDep, open_or_404

router = APIRouter()


@router.get(
    "/api/runs/{run_id}/distribution",
    summary="A key's histograms (tunetrack.Histogram) over the steps, on common bins: a heatmap of step x value",
    description="What the run page draws of a key logged as ``tunetrack.Histogram``: ``edges`` (``bins`` "
    "equal bins over the range all its histograms span), and a column per step up to ``width`` columns, "
    "past that neighbouring steps merged: ``counts`` (a list of bins per column) holds the MEAN of their "
    "counts (times ``per``, the steps merged: their sums). A key with no histogram is a 404 naming the "
    "closest keys that have some.",
)
def distribution(
    run_id: str,
    catalog: CatalogDep,
    key: Annotated[str, Query(min_length=1)],
    bins: Annotated[int, Query(ge=2, le=512, description="the common bins")] = BINS,
    width: Annotated[
        int, Query(ge=1, le=10_000, description="the columns at most (the canvas' width)")
    ] = 600,
) -> dict[str, Any]:
    """``steps`` logged (how many); per column: ``starts`` and ``ends`` (its first and last step),
    ``per``, ``counts``, ``total`` (the values a step of it holds, the mean), ``min`` and ``max`` (the
    lowest and highest value of its steps), ``mean`` (their values' mean, each at its bin's middle):
    null where its steps hold no value; ``high``: the largest count of a cell."""
    r = open_or_404(catalog, run_id)
    try:
        view = r.distribution(key, bins)
    except TunetrackError as exc:
        raise HTTPException(404, one_line(exc)) from None
    shown = columns(view, width)
    return {
        "key": key,
        "steps": len(view.steps),
        "merged": "mean",
        "edges": view.edges.tolist(),
        "starts": shown.starts.tolist(),
        "ends": shown.ends.tolist(),
        "per": shown.per.tolist(),
        "counts": shown.counts.tolist(),
        "high": float(shown.counts.max()) if shown.counts.size else 0.0,
        "total": shown.total.tolist(),
        "min": finite(shown.low),
        "max": finite(shown.high),
        "mean": finite(shown.mean),
    }


def finite(values: Any) -> list[float | None]:
    """Numbers as JSON lists, NaN and ±Inf as None (a column whose steps hold no value, a gap in a line,
    a heatmap cell with no number)."""
    return [v if math.isfinite(v) else None for v in values.tolist()]
