"""What a reader may take from a run's end records instead of reading its data: the one place that
decides when they are to be trusted.

A writing process stores its last values, each key's aggregates and its merged config in its end
record (``store.ends``; ``writer.ending`` folds them), so that a listing of 10,000 finished runs
reads two small files a process, or an object store's index entry, and no data. Each answer here is
None where the end records cannot be trusted for it, and the reader then reads the data: a process
without an end record (running or crashed), one written by an older tunetrack (the field missing),
one that rewound (its figures count rows a later attempt hides), or several processes whose records
only merge correctly in time order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .. import aggregates
from ..aggregates import Agg
from ..store.ends import EndRecord


def every(ends: Sequence[EndRecord | None], field: str) -> bool:
    """Every process ended, and its end record has ``field`` (an older tunetrack's has not)."""
    return bool(ends) and all(e is not None and isinstance(e.get(field), dict) for e in ends)


def config(ends: Sequence[EndRecord | None]) -> dict[str, Any] | None:
    """The run's config, when every process ended with one (``every``) and at most one process logged
    any (several processes' config records merge in time order, which only the records tell)."""
    if not every(ends, "config"):
        return None
    logged = [e["config"] for e in ends if e and e["config"]]
    return (dict(logged[0]) if logged else {}) if len(logged) <= 1 else None


def aggregates_of(ends: Sequence[EndRecord | None]) -> dict[str, Agg | None] | None:
    """Each key's aggregates merged over the processes, when every process ended with them and none
    rewound."""
    if not every(ends, "aggregates"):
        return None
    valid = aggregates.valid
    if len(ends) == 1:  # most runs: one process, nothing to merge (10,000 of them in a sorted ls)
        end = ends[0]
        assert end is not None
        stored = end["aggregates"]
        return None if end.get("rewound") or not all(map(valid, stored.values())) else dict(stored)
    out: dict[str, Agg | None] = {}
    for end in ends:
        assert end is not None
        if end.get("rewound"):
            return None
        for key, agg in end["aggregates"].items():
            if not valid(agg):
                return None
            out[key] = aggregates.merge(out.get(key), agg)
    return out


def latest(
    lasts: Sequence[Mapping[str, Any] | None],
    attempts_listed: bool,
    evaluated: Sequence[EndRecord | None] = (),
) -> dict[str, Any] | None:
    """``{"step", "values"}`` from the primary processes' last values (each attempt's end record, or
    the listing index's summary of a live one), when every attempt has them and either there is one
    attempt or ``attempts_listed`` (an object store's index gives every attempt's; a folder's reader
    reads the data instead, as the latest attempt alone misses what the earlier ones logged).

    ``evaluated``: the end records of the processes that added evaluations of checkpoints; their
    keys' last values are those logged latest (their rows carry the checkpoint's time: the latest
    checkpoint's score), as the data gives them; the step stays the training's."""
    complete = [last for last in lasts if last is not None and _complete(last)]
    if not complete or len(complete) != len(lasts) or (len(complete) > 1 and not attempts_listed):
        return None
    scores = aggregates_of(evaluated) if evaluated else {}
    if scores is None:
        return None
    values: dict[str, Any] = {}
    for each in complete:
        values.update(each["values"])
    values.update({key: agg[aggregates.LAST] for key, agg in scores.items() if agg is not None})
    return {"step": complete[-1]["step"], "values": values}


def _complete(last: Any) -> bool:
    return isinstance(last, dict) and last.get("step") is not None and "values" in last
