"""A run's tables of samples as the Samples view shows them: one step's rows, filtered and sorted by
the reader's one selection (``reader.samples.select``, as ``tunetrack samples`` does), one prompt
across training, and the mean of a numeric column at each step."""

from __future__ import annotations

import math
import re
from typing import Any

from fastapi import APIRouter, HTTPException

from ...reader.samples import NUMBER, merge_columns, prompt_column, prompt_text, select, steps_of
from .deps import CatalogDep, open_or_404

router = APIRouter()
#: rows one answer holds at most (a step of 1,000 rows of 4 kB is 4 MB)
MOST = 5_000


@router.get("/api/runs/{run_id}/samples", summary="Rows of a run's tables of samples, at a step or all")
def samples(
    run_id: str,
    catalog: CatalogDep,
    key: str | None = None,
    step: int | None = None,
    last: bool = False,
    prompt: str | None = None,
    same_prompt: str | None = None,
    grep: str | None = None,
    sort: str | None = None,
    like_step: int | None = None,
    like_index: int | None = None,
    limit: int = MOST,
) -> dict[str, Any]:
    """``keys`` (``{key: {"steps", "rows"}}``, the whole index), the ``key`` and ``step`` shown (the
    first key and, with ``last``, its last step), its ``columns`` (name: type), ``prompt_column``,
    ``total`` (rows selected) and ``samples`` (at most ``limit``). With ``same_prompt`` (a prompt's
    text) or ``like_step`` and ``like_index`` (the row whose prompt it is) and no step: that prompt at
    every step."""
    r = open_or_404(catalog, run_id)
    index = r.sample_index()
    keys: dict[str, dict[str, Any]] = {
        k: {"steps": steps_of(index, k), "rows": sum(steps.values())} for k, steps in index.items()
    }
    if key is None and keys:
        key = next(iter(keys))
    if key is not None and key not in keys:
        raise HTTPException(404, f"no samples under {key!r}")
    steps = keys[key]["steps"] if key is not None else []
    if last and steps:
        step = steps[-1]
    if like_step is not None and key is not None:
        same_prompt = _prompt_of(r.samples(key, like_step), like_index or 0)
    tables = r.sample_tables(key, step) if key is not None else []
    try:
        chosen = select(
            (s for t in tables for s in t.samples()),
            prompt=prompt,
            same_prompt=same_prompt,
            grep=grep,
            sort=sort,
        )
    except re.error as exc:
        raise HTTPException(422, f"grep: not a regular expression: {exc}") from None
    columns = merge_columns(tables)
    return {
        "keys": keys,
        "key": key,
        "step": step,
        "columns": columns,
        "prompt_column": prompt_column(columns),
        "total": len(chosen),
        "samples": [_json_safe(s) for s in chosen[: max(limit, 0)]],
    }


@router.get(
    "/api/runs/{run_id}/samples/curve", summary="The mean of a numeric column of samples at each step"
)
def curve(run_id: str, catalog: CatalogDep, key: str, column: str) -> dict[str, Any]:
    r = open_or_404(catalog, run_id)
    by_step: dict[int, list[float]] = {}
    for table in r.sample_tables(key):
        if table.columns().get(column) != NUMBER:
            continue
        values = by_step.setdefault(table.step, [])
        values += [row[column] for row in table.rows() if _finite(row.get(column))]
    steps = sorted(s for s, v in by_step.items() if v)
    return {"key": key, "column": column, "x": steps, "y": [sum(by_step[s]) / len(by_step[s]) for s in steps]}


def _prompt_of(samples: list[dict[str, Any]], index: int) -> str:
    row = next((s["row"] for s in samples if s["index"] == index), None)
    text = None if row is None else prompt_text(row)
    if text is None:
        raise HTTPException(404, "no such row, or it has no prompt")
    return text


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _json_safe(sample: dict[str, Any]) -> dict[str, Any]:
    """NaN and ±Inf as null (JSON has neither)."""
    row = {k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in sample["row"].items()}
    return {**sample, "row": row}
