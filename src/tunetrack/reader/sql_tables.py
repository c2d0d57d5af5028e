"""The tables SQL sees, each defined once: its columns (``TABLES``, which ``docs/query.md`` reproduces)
and how it is built from the read API (``Run``) as an Arrow table. ``tunetrack query`` (``sql/``) and
each run's Parquet copy (``parquet.py``) both use these builders, so the two never differ.

Every value comes from the reader (``Run.meta``, ``config``, ``process_series``, ``system_series``,
``events``, ``summary``), so SQL answers what ``tunetrack show`` and the dashboard show. The big table,
``metrics``, is built column-wise: each run's series are NumPy arrays, concatenated once, with the run,
process and key columns as dictionary indices (no Python loop per point).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from .. import config
from ..states import State
from ..values import is_number
from .as_json import provenance
from .run import Run
from .samples import cell_text, completion_column, prompt_text
from .series import Series, present

if TYPE_CHECKING:
    import pyarrow as pa

#: table -> (what a row is, [(column, SQL type, meaning)]); the one description of the tables
TABLES: dict[str, tuple[str, list[tuple[str, str, str]]]] = {
    "runs": (
        "one row per run",
        [
            ("id", "VARCHAR", "the run's id"),
            ("name", "VARCHAR", "its name (as renamed)"),
            ("project", "VARCHAR", "its project, NULL without one"),
            ("state", "VARCHAR", "running, finished, failed, killed or crashed"),
            ("tags", "VARCHAR[]", "its tags (as edited): `list_contains(tags, 'best')`"),
            ("notes", "VARCHAR[]", "the text of each note, oldest first"),
            ("created", "DOUBLE", "unix time it started: `to_timestamp(created)`"),
            ("ended", "DOUBLE", "unix time it ended, NULL while running"),
            ("duration", "DOUBLE", "seconds from start to end (to now while running)"),
            ("last_step", "BIGINT", "the last step logged"),
            ("hosts", "VARCHAR[]", "the hosts its processes ran on"),
            ("git_commit", "VARCHAR", "the commit its code was at"),
            ("git_branch", "VARCHAR", "the branch"),
            (
                "failure",
                "VARCHAR",
                "the known failure a run that did not finish ended in: `CUDA error on rank 0`",
            ),
            (
                "error",
                "VARCHAR",
                "why it died, in one line: the exception's own line (`RuntimeError: CUDA error: ...`), or a "
                "C++ `what():` or the console line of a process that died without a traceback",
            ),
            ("traceback", "VARCHAR", "the whole traceback of a failed run"),
        ],
    ),
    "params": (
        "one row per run and flattened config key (`optimizer.lr`)",
        [
            ("run", "VARCHAR", "the run's id"),
            ("key", "VARCHAR", "the flat config key, nested keys joined by `.`"),
            ("value", "VARCHAR", "the value as text (as `tunetrack show` prints it)"),
            ("number", "DOUBLE", "the value as a number, NULL when it is not one (text, bool, list)"),
        ],
    ),
    "params_wide": (
        "one row per run, one column per flat config key",
        [
            ("run", "VARCHAR", "the run's id"),
            ('"<key>"', "DOUBLE or VARCHAR", "each config key: a number where every run's value is one"),
        ],
    ),
    "metrics": (
        "one row per logged point (a key logged as None is no point; NaN is)",
        [
            ("run", "VARCHAR", "the run's id"),
            ("process", "VARCHAR", "the writing process (`<host>-<pid>-<start ms>`)"),
            ("step", "BIGINT", "the step"),
            ("time", "DOUBLE", "unix time it was logged"),
            ("key", "VARCHAR", "the metric"),
            ("value", "DOUBLE", "its value, NULL when it is not a number (then `text` holds it)"),
            ("text", "VARCHAR", "a value that is not a number (a string), else NULL"),
        ],
    ),
    "system": (
        "one row per system sample and key",
        [
            ("run", "VARCHAR", "the run's id"),
            ("node", "VARCHAR", "`node<rank>:<host>`"),
            ("time", "DOUBLE", "unix time of the sample"),
            ("key", "VARCHAR", "`gpu.0.util`, `cpu.percent`, `mem.used`, ..."),
            ("value", "DOUBLE", "its value"),
        ],
    ),
    "events": (
        "one row per event (checkpoints, evaluations, rewinds, health warnings, text samples)",
        [
            ("run", "VARCHAR", "the run's id"),
            ("step", "BIGINT", "the step"),
            ("time", "DOUBLE", "unix time"),
            ("kind", "VARCHAR", "checkpoint, rewind, health, text, image, ..."),
            ("data", "VARCHAR", "the rest as JSON text (NaN as \"NaN\"): `data->>'path'`"),
        ],
    ),
    "samples": (
        "one row per row of a table of samples (`log_table`, `log_text`, TRL's and ms-swift's completions)",
        [
            ("run", "VARCHAR", "the run's id"),
            ("key", "VARCHAR", "the table (`completions`)"),
            ("step", "BIGINT", "the step it was logged at"),
            ("time", "DOUBLE", "unix time it was logged"),
            ("index", "BIGINT", "the row's place in its table at that step"),
            ("prompt", "VARCHAR", "the row's prompt, as text (a conversation as `role: content` lines)"),
            ("completion", "VARCHAR", "the row's completion, as text"),
            ("reward", "DOUBLE", "its `reward` column (a GRPO table's total reward), else NULL"),
            ("data", "VARCHAR", "the whole row as JSON text (NaN as \"NaN\"): `data->>'has_digit'`"),
        ],
    ),
    "console": (
        "one row per console line a process of the run printed (fds 1 and 2, `tunetrack logs`)",
        [
            ("run", "VARCHAR", "the run's id"),
            ("time", "DOUBLE", "unix time it was printed"),
            ("host", "VARCHAR", "the host of the process that printed it"),
            ("rank", "BIGINT", "that process's global rank"),
            (
                "stream",
                "VARCHAR",
                "stdout, stderr, stdout+stderr (a terminal's), or tunetrack (a note of ours)",
            ),
            ("text", "VARCHAR", "the line, terminal escapes removed"),
        ],
    ),
    "summary": (
        "one row per run and metric key (what `tunetrack show` summarizes)",
        [
            ("run", "VARCHAR", "the run's id"),
            ("key", "VARCHAR", "the metric"),
            ("last", "DOUBLE", "its last value (NULL when not a number)"),
            ("min", "DOUBLE", "the lowest finite value"),
            ("max", "DOUBLE", "the highest finite value"),
            ("best", "DOUBLE", "`min` for losses, perplexities and errors, else `max`"),
            ("best_step", "BIGINT", "the step of the first best value"),
            ("step", "BIGINT", "the step of the last value"),
            ("count", "BIGINT", "how many points were logged (a NaN is one; a None is none)"),
        ],
    ),
}


def _number(value: Any) -> float | None:
    """A number as a float; None for anything else (bools, text, lists)."""
    if is_number(value):
        return float(value)
    return None


def json_safe(value: Any) -> Any:
    """``value`` with NaN and ±Inf as the strings ``"NaN"``, ``"Infinity"`` and tuples as lists: JSON
    has no spelling for them, and DuckDB's JSON functions (and MCP clients) refuse Python's."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if value != value else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


def runs_table(runs: Sequence[Run]) -> pa.Table:
    import pyarrow as pa

    rows = []
    for run in runs:
        git = provenance(run)["git"] or {}
        end = run.ended or (time.time() if run.state == State.RUNNING else None)
        rows.append(
            {
                "id": run.id,
                "name": run.name,
                "project": run.project,
                "state": run.state,
                "failure": run.failure,
                "tags": run.tags,
                "notes": [n["text"] for n in run.notes],
                "created": run.created,
                "ended": run.ended,
                "duration": end - run.created if end is not None and run.created else None,
                "last_step": run.latest()["step"],
                "hosts": run.hosts,
                "git_commit": git.get("commit"),
                "git_branch": git.get("branch"),
                "error": run.cause,
                "traceback": run.error,
            }
        )
    return pa.Table.from_pylist(rows, schema=_schema("runs"))


def params_table(runs: Sequence[Run]) -> pa.Table:
    import pyarrow as pa

    rows = [
        {"run": run.id, "key": key, "value": config.text(value), "number": _number(value)}
        for run in runs
        for key, value in run.flat_config.items()
    ]
    return pa.Table.from_pylist(rows, schema=_schema("params"))


def params_wide_table(params: pa.Table) -> pa.Table:
    """``params`` pivoted: a key's column holds numbers where every value given is one, else text."""
    import pyarrow as pa

    runs: dict[str, dict[str, tuple[str, float | None]]] = {}
    for row in params.to_pylist():
        runs.setdefault(row["run"], {})[row["key"]] = (row["value"], row["number"])
    keys = sorted({key for values in runs.values() for key in values})
    columns: dict[str, pa.Array] = {"run": pa.array(list(runs), pa.string())}
    for key in keys:
        given = [values.get(key) for values in runs.values()]
        numeric = all(v is None or v[1] is not None for v in given)
        cells = [None if v is None else v[1] if numeric else v[0] for v in given]
        columns[key] = pa.array(cells, pa.float64() if numeric else pa.string())
    return pa.table(columns)


def _points(
    runs: Sequence[Run],
    keys: Callable[[Run], list[str]],
    by: Callable[[Run, str], dict[str, Series]],
    who: str,
    metrics: bool,
) -> pa.Table:
    """One row per point of every (run, ``who``, key) series that ``by`` gives, built column-wise: the
    run, ``who`` and key columns are dictionary indices repeated per series, decoded by Arrow."""
    import numpy as np
    import pyarrow as pa

    labels: dict[str, dict[str, int]] = {"run": {}, who: {}, "key": {}}
    codes: dict[str, list[int]] = {"run": [], who: [], "key": []}
    steps: list[Any] = []
    times: list[Any] = []
    values: list[Any] = []
    texts: list[list[str | None] | None] = []  # per series: the text of each point, None: all numbers
    for run in runs:
        for key in keys(run):
            for owner, s in by(run, key).items():
                s = present(s)
                for col, label in (("run", run.id), (who, owner), ("key", key)):
                    codes[col].append(labels[col].setdefault(label, len(labels[col])))
                steps.append(s.steps)
                times.append(s.times)
                if s.values.dtype.kind in "fiub":
                    values.append(s.values.astype(np.float64))
                    texts.append(None)
                else:  # text among numbers: the one case where each point is looked at alone
                    numbers = [_number(v) for v in s.values]
                    values.append(np.array([np.nan if x is None else x for x in numbers], dtype=np.float64))
                    texts.append([None if x is not None else str(v) for x, v in zip(numbers, s.values)])
    counts = np.array([len(v) for v in values], dtype=np.int64)

    def concat(parts: list[Any], dtype: Any) -> Any:
        return np.concatenate(parts) if parts else np.empty(0, dtype)

    columns: dict[str, pa.Array] = {}
    for col in ("run", who):
        columns[col] = _labels(codes[col], counts, labels[col])
    if metrics:
        columns["step"] = pa.array(concat(steps, np.int64), pa.int64())
    columns["time"] = pa.array(concat(times, np.float64), pa.float64())
    columns["key"] = _labels(codes["key"], counts, labels["key"])
    value = concat(values, np.float64)
    if not metrics:
        columns["value"] = pa.array(value, pa.float64())
        return pa.table(columns)
    if any(t is not None for t in texts):
        text = [x for t, n in zip(texts, counts) for x in (t if t is not None else [None] * n)]
        columns["value"] = pa.array(value, pa.float64(), mask=np.array([x is not None for x in text], bool))
        columns["text"] = pa.array(text, pa.string())
    else:
        columns["value"] = pa.array(value, pa.float64())
        columns["text"] = pa.nulls(len(value), pa.string())
    return pa.table(columns)


def _labels(codes: list[int], counts: Any, labels: dict[str, int]) -> pa.Array:
    """A text column: each series' label (its index in ``labels``) repeated for its points."""
    import numpy as np
    import pyarrow as pa

    index = np.repeat(np.array(codes, dtype=np.int32), counts)
    return pa.DictionaryArray.from_arrays(
        pa.array(index, pa.int32()), pa.array(list(labels), pa.string())
    ).dictionary_decode()


def metrics_table(runs: Sequence[Run]) -> pa.Table:
    return _points(runs, Run.keys, Run.process_series, "process", metrics=True)


def system_table(runs: Sequence[Run]) -> pa.Table:
    return _points(runs, Run.system_keys, Run.system_series, "node", metrics=False)


def events_table(runs: Sequence[Run]) -> pa.Table:
    import pyarrow as pa

    rows = [
        {
            "run": run.id,
            "step": e["step"],
            "time": e["time"],
            "kind": e["kind"],
            "data": json.dumps(json_safe({k: v for k, v in e.items() if k not in ("kind", "step", "time")})),
        }
        for run in runs
        for e in run.events()
    ]
    return pa.Table.from_pylist(rows, schema=_schema("events"))


def samples_table(runs: Sequence[Run]) -> pa.Table:
    import pyarrow as pa

    rows = []
    for run in runs:
        for table in run.sample_tables():
            completion = completion_column(table.columns())
            for s in table.samples():
                row = s["row"]
                reward = row.get("reward")
                rows.append(
                    {
                        "run": run.id,
                        "key": s["key"],
                        "step": s["step"],
                        "time": s["time"],
                        "index": s["index"],
                        "prompt": prompt_text(row),
                        "completion": None if completion is None else cell_text(row.get(completion)),
                        "reward": _number(reward),
                        "data": json.dumps(json_safe(row), default=str),
                    }
                )
    return pa.Table.from_pylist(rows, schema=_schema("samples"))


def console_table(runs: Sequence[Run]) -> pa.Table:
    import pyarrow as pa

    rows = [
        {"run": run.id, "time": x.time, "host": x.host, "rank": x.rank, "stream": x.stream, "text": x.text}
        for run in runs
        for x in run.console()
    ]
    return pa.Table.from_pylist(rows, schema=_schema("console"))


def summary_table(runs: Sequence[Run]) -> pa.Table:
    import pyarrow as pa

    rows = [
        {
            "run": run.id,
            "key": key,
            **{f: _number(s[f]) for f in ("last", "min", "max", "best")},
            **{f: s[f] for f in ("best_step", "step", "count")},
        }
        for run in runs
        for key, s in run.summary().items()
    ]
    return pa.Table.from_pylist(rows, schema=_schema("summary"))


_ARROW_TYPES = {"VARCHAR": "string", "DOUBLE": "float64", "BIGINT": "int64", "VARCHAR[]": "list<string>"}


def _schema(table: str) -> pa.Schema:
    """The Arrow schema of ``table``, from ``TABLES``: a table with no rows still has its columns."""
    import pyarrow as pa

    types = {
        "string": pa.string(),
        "float64": pa.float64(),
        "int64": pa.int64(),
        "list<string>": pa.list_(pa.string()),
    }
    return pa.schema([(name, types[_ARROW_TYPES[sql]]) for name, sql, _ in TABLES[table][1]])


#: table -> its builder from the runs (``params_wide`` is built from ``params``)
BUILDERS: dict[str, Callable[[Sequence[Run]], pa.Table]] = {
    "runs": runs_table,
    "params": params_table,
    "metrics": metrics_table,
    "system": system_table,
    "events": events_table,
    "samples": samples_table,
    "console": console_table,
    "summary": summary_table,
}


def empty(table: str) -> pa.Table:
    """``table`` without rows (its columns only; ``params_wide``: only ``run``)."""
    import pyarrow as pa

    if table == "params_wide":
        return pa.table({"run": pa.array([], pa.string())})
    if table in ("metrics", "system"):
        who = "process" if table == "metrics" else "node"
        return _points([], Run.keys, Run.process_series, who, table == "metrics")
    return _schema(table).empty_table()


def markdown() -> str:
    """``TABLES`` as the Markdown that docs/query.md holds (a test keeps the two the same)."""
    parts = []
    for table, (row, columns) in TABLES.items():
        lines = [
            f"### `{table}`",
            "",
            f"{row[0].upper()}{row[1:]}.",
            "",
            "| column | type | what |",
            "|---|---|---|",
        ]
        lines += [f"| `{name}` | {sql} | {what} |" for name, sql, what in columns]
        parts.append("\n".join(lines))
    return "\n\n".join(parts) + "\n"
