"""A run's tables of samples as the Samples view shows them: one step's rows, filtered and sorted by
the reader's one selection (``reader.samples.select``, as ``tunetrack samples`` does), one prompt
across training, and the mean of a numeric column at each step; and two runs side by side, one
prompt at one step, their completions compared word by word (``reader.samples.word_diff``)."""

from __future__ import annotations

import math
import re
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query

from ...errors import TunetrackError, one_line
from ...reader.samples import (
    NUMBER,
    completion_column,
    merge_columns,
    pairs,
    prompt_column,
    prompt_text,
    select,
    steps_of,
)
from ...reader.where import grep_error
from ...values import is_finite_number
from .deps import CatalogDep, open_or_404

router = APIRouter()
#: rows one answer holds at most (a step of 1,000 rows of 4 kB is 4 MB)
MOST = 5_000
#: pairs, and prompts to choose from, that a comparison of two runs holds at most
MOST_PAIRS = 64
MOST_PROMPTS = 500
#: runs offered to compare a run's samples with
MOST_RUNS = 200


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
        raise HTTPException(422, grep_error(grep, exc)) from None
    except ValueError as exc:  # a column to sort by that no row has, an order that is no order
        raise HTTPException(422, one_line(exc)) from None
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
        values += [row[column] for row in table.rows() if is_finite_number(row.get(column))]
    steps = sorted(s for s, v in by_step.items() if v)
    return {"key": key, "column": column, "x": steps, "y": [sum(by_step[s]) / len(by_step[s]) for s in steps]}


@router.get(
    "/api/samples/runs",
    summary="The runs with a table of samples under a key (another run's to compare with)",
)
def runs_with(
    key: str,
    catalog: CatalogDep,
    run: str | None = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = MOST_RUNS,
) -> dict[str, Any]:
    """``runs`` (id, name, project; newest first, at most ``limit``) that logged a table under
    ``key``, other than ``run``; only those of ``run``'s project when it has one (a sweep's runs are
    what a run's samples are compared with), so a store of thousands of runs is not read through."""
    project = open_or_404(catalog, run).project if run is not None else None
    out = []
    for row in catalog.rows(project=project, keys=()):
        if row["id"] == run:
            continue
        try:
            has = key in catalog.open(row["id"]).sample_index()
        except TunetrackError:
            continue  # gone since it was listed
        if has:
            out.append({"id": row["id"], "name": row["name"], "project": row["project"]})
            if len(out) >= limit:
                break
    return {"runs": out}


@router.get(
    "/api/samples/compare",
    summary="Two runs' samples of one prompt at one step, side by side, their completions compared word by word",
)
def compare(
    id: Annotated[list[str], Query()],
    catalog: CatalogDep,
    key: str | None = None,
    step: int | None = None,
    prompt: str | None = None,
    like_index: int | None = None,
) -> dict[str, Any]:
    """``keys`` both runs logged (``key``: the first unless given), the ``steps`` both have samples at
    (``step``: the last unless given), the ``prompts`` of the first run at that step that the second
    has too, the ``prompt`` shown (the prompt of the first run's row ``like_index``, else the one given
    if both runs have it at the step, else the first), and ``pairs``: the i-th row of each run with that prompt, side by side, the
    ``completion_column`` compared (``diff``: each text as ``[text, changed]`` segments). A table
    without prompts pairs its rows in order."""
    if len(id) != 2:
        raise HTTPException(422, "compare the samples of two runs: give id twice")
    runs = [open_or_404(catalog, i) for i in id]
    a, b = (r.sample_index() for r in runs)
    keys = [k for k in a if k in b]
    out: dict[str, Any] = {
        "runs": [{"id": r.id, "name": r.name} for r in runs],
        "keys": keys,
        "key": key,
        "steps": [],
        "step": step,
        "prompts": [],
        "prompt": prompt,
        "pairs": [],
    }
    if key is None:
        if not keys:
            return out
        key = out["key"] = keys[0]
    elif key not in keys:
        raise HTTPException(404, f"the two runs do not both have samples under {key!r}")
    steps = out["steps"] = sorted(set(a[key]) & set(b[key]))
    if not steps:
        return out
    if step is None:
        step = out["step"] = steps[-1]
    elif step not in steps:
        raise HTTPException(404, f"the two runs do not both have samples of {key!r} at step {step}")
    tables = [r.sample_tables(key, step) for r in runs]
    rows = [[s for t in ts for s in t.samples()] for ts in tables]
    columns = merge_columns(tables[0] + tables[1])
    in_b = {prompt_text(s["row"]) for s in rows[1]}
    shared = [t for t in dict.fromkeys(prompt_text(s["row"]) for s in rows[0]) if t is not None and t in in_b]
    if like_index is not None:
        prompt = _prompt_of(rows[0], like_index)
    elif (prompt is None or prompt not in shared) and shared:
        prompt = shared[0]  # none asked for, or one the runs do not both have at this step
    chosen = [select(side, same_prompt=prompt) if prompt is not None else side for side in rows]
    column = completion_column(columns)
    out.update(
        prompts=shared[:MOST_PROMPTS],
        prompt=prompt,
        prompt_column=prompt_column(columns),
        columns=columns,
        completion_column=column,
        total=[len(side) for side in chosen],
        pairs=[
            {**p, "a": p["a"] and _json_safe(p["a"]), "b": p["b"] and _json_safe(p["b"])}
            for p in pairs(chosen[0][:MOST_PAIRS], chosen[1][:MOST_PAIRS], column)
        ],
    )
    return out


def _prompt_of(samples: list[dict[str, Any]], index: int) -> str:
    row = next((s["row"] for s in samples if s["index"] == index), None)
    text = None if row is None else prompt_text(row)
    if text is None:
        raise HTTPException(404, "no such row, or it has no prompt")
    return text


def _json_safe(sample: dict[str, Any]) -> dict[str, Any]:
    """NaN and ±Inf as null (JSON has neither)."""
    row = {k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in sample["row"].items()}
    return {**sample, "row": row}
