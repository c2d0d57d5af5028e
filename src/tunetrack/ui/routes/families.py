"""Many keys of one run (issue 35: a mixture-of-experts run's 10,240 ``moe/layer*/expert*/load``): a
family of keys as the run page's one card (the band of their percentiles and a heatmap of key ×
step, fitted to the card on the server: ``reader.across.fit``), and the page's search over the keys
of its families, answered here so that the page is never sent every key."""

from __future__ import annotations

import json
import re
from typing import Annotated

from fastapi import APIRouter, HTTPException, Query
from fastapi.responses import Response

from ...errors import TunetrackError, one_line
from ...reader.across import as_json, matching
from ...reader.families import families, searched
from ...reader.names import unknown
from ...reader.where import grep_error
from .deps import CatalogDep, open_or_404

router = APIRouter()


@router.get(
    "/api/runs/{run_id}/across",
    summary="A family of keys (a glob) as one chart: the band of their percentiles and a heatmap of key x step",
    description="What the run page draws for the keys a glob names (``moe/layer*/expert*/load``) instead "
    "of a chart per key: ``band``, p5, p50, p95 and max over the keys at each step, sent at ``steps`` "
    "(every step up to about ``width``, past that M4's of the max and p5 lines: the highest max and "
    "lowest p5 kept); ``heat``, the key x step matrix fitted to ``rows`` x ``width`` cells (a row: the "
    "max of its neighbouring keys; a cell: the mean over its steps). Both are reduced as the run is "
    "read, a slice of steps at a time (``reader.across.fit``). ``match``: only the keys a regular "
    "expression finds (the page's search; all where it finds the glob). A glob that names no key, or "
    "a search that leaves none, is a 404 of one line.",
)
def across_view(
    run_id: str,
    catalog: CatalogDep,
    pattern: Annotated[str, Query(min_length=1, description="a glob of metric keys, or one key")],
    width: Annotated[int, Query(ge=8, le=10_000, description="the chart's width in pixels")] = 600,
    rows: Annotated[int, Query(ge=1, le=2_000, description="the heatmap's rows at most")] = 64,
    match: Annotated[
        str | None, Query(description="a regular expression, any case: only the keys it finds")
    ] = None,
) -> Response:
    """``keys`` (how many drawn), ``of`` (how many the glob names), ``first`` and ``last`` (in natural
    order), ``steps``, ``band`` (a list per line, null where no key has a number), ``heat``: ``rows``
    ([first key, how many keys] each), ``starts`` (each column's first step), ``values`` (a list per
    row, null for no number), ``low`` and ``high``."""
    r = open_or_404(catalog, run_id)
    try:
        names = matching(r.keys(), pattern)
        if not names:
            raise unknown("metric pattern", pattern, r.keys())
    except TunetrackError as exc:
        raise HTTPException(404, one_line(exc)) from None
    shown = names if match is None else searched(pattern, names, _search(match))
    if not shown:
        raise HTTPException(404, f"no key of {pattern} matches {match!r}")
    found = r.across_fitted(shown, width, rows)
    body = {**as_json(found, pattern), "match": match, "of": len(names)}
    # written as JSON here: FastAPI's encoder walks each of the heatmap's 50,000 numbers (0.1 s)
    return Response(json.dumps(body, allow_nan=False, separators=(",", ":")), media_type="application/json")


@router.get(
    "/api/runs/{run_id}/families",
    summary="How many keys of each family of keys a search matches (the run page's search over its charts)",
)
def family_search(
    run_id: str,
    catalog: CatalogDep,
    match: Annotated[str, Query(description="a regular expression, any case, searched for in each key")],
) -> dict[str, int]:
    """``{glob: how many of its keys match}`` for every family of the run (``reader.families``): its
    keys ``match`` finds, or all of them where it finds the glob itself (``families.searched``). A
    pattern that is no regular expression is a 400 of one line."""
    r = open_or_404(catalog, run_id)
    search = _search(match)
    return {glob: len(searched(glob, members, search)) for glob, members in families(r.keys()).items()}


def _search(match: str) -> re.Pattern[str]:
    """The run page's search, a regular expression searched for in any case (as its ``RegExp(text,
    "i")``); one Python does not read is a 400 of one line."""
    try:
        return re.compile(match, re.IGNORECASE)
    except re.error as exc:
        raise HTTPException(400, grep_error(match, exc)) from None
