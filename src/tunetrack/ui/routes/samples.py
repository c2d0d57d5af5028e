"""A run's tables of samples as the Samples view shows them: one step's rows, filtered and sorted by
the reader's one selection (``reader.samples.select``, as ``tunetrack samples`` does), one prompt
across training, and the mean of a numeric column at each step (``column_means``); and two runs side by
side, one prompt at one step (``side_by_side``), their completions compared word by word
(``reader.samples.word_diff``); one row in full with its values per token (``reader.tokens.tokens_of``).
What is computed is the reader's; a route only asks and answers."""

from __future__ import annotations

import math
import re
from dataclasses import asdict
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query

from ...errors import TunetrackError, one_line
from ...reader.samples import (
    column_means,
    merge_columns,
    pairs,
    prompt_column,
    prompt_of,
    select,
    side_by_side,
    steps_of,
)
from ...reader.tokens import tokens_of
from ...reader.where import grep_error
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
    steps, means = column_means(open_or_404(catalog, run_id).sample_tables(key), column)
    return {"key": key, "column": column, "x": steps, "y": means}


@router.get(
    "/api/runs/{run_id}/samples/row",
    summary="One row of a table of samples in full, with its tokens and their values per token",
)
def sample_row(
    run_id: str,
    catalog: CatalogDep,
    key: str,
    step: int,
    index: Annotated[int, Query(ge=0)],
    time: float | None = None,
) -> dict[str, Any]:
    """The row ``index`` of the table ``key`` at ``step`` (of the one logged at ``time`` where a step
    has several), as the samples endpoint gives a row, with ``tokens``: the row's token column, its
    tokens and every column of values as long as them (``{"column", "tokens", "values": {name:
    [...]}}``, ``reader.tokens.tokens_of``), or null when the row has none."""
    r = open_or_404(catalog, run_id)
    tables = [t for t in r.sample_tables(key, step) if time is None or t.time == time]
    table = next((t for t in tables if index < t.count), None)
    if table is None:
        raise HTTPException(404, f"no row {index} of {key!r} at step {step}")
    sample = table.samples()[index]
    found = tokens_of(sample["row"])
    return {**_json_safe(sample), "tokens": None if found is None else _finite(asdict(found))}


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
    try:
        first, second = (r.sample_tables(key, step) for r in runs)
        both = side_by_side(first, second, prompt, like_index)
    except LookupError as exc:
        raise HTTPException(404, one_line(exc)) from None
    chosen = both.chosen
    out.update(
        prompts=both.prompts[:MOST_PROMPTS],
        prompt=both.prompt,
        prompt_column=prompt_column(both.columns),
        columns=both.columns,
        completion_column=both.completion_column,
        total=[len(side) for side in chosen],
        pairs=[
            {**p, "a": p["a"] and _json_safe(p["a"]), "b": p["b"] and _json_safe(p["b"])}
            for p in pairs(chosen[0][:MOST_PAIRS], chosen[1][:MOST_PAIRS], both.completion_column)
        ],
    )
    return out


def _prompt_of(samples: list[dict[str, Any]], index: int) -> str:
    try:
        return prompt_of(samples, index)
    except LookupError as exc:
        raise HTTPException(404, one_line(exc)) from None


def _json_safe(sample: dict[str, Any]) -> dict[str, Any]:
    """NaN and ±Inf as null (JSON has neither), in lists too (a logprob of -inf per token)."""
    return {**sample, "row": _finite(sample["row"])}


def _finite(value: Any) -> Any:
    """``value`` with every NaN and ±Inf in it, however deep in lists and dicts, as None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, list):
        try:  # a list of numbers, all finite (a sum in C): as it is, not walked number by number
            if math.isfinite(math.fsum(value)):
                return value
        except (TypeError, ValueError, OverflowError):
            if all(isinstance(v, str) for v in value):  # tokens
                return value
        return [_finite(v) for v in value]
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    return value
