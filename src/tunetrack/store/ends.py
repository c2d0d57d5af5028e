"""A writing process's end record (``<proc>.end.json``): how it ended, and what readers may take from
it instead of its data. The one definition: the writer builds an ``EndRecord`` when the process ends,
every store writes and indexes it as it is, and readers get it through ``read`` (a damaged file, or
one that is not an end record, reads as no end: the process then counts as still writing or
crashed, as a process that never wrote one does).

A reader trusts ``last``, ``aggregates`` and ``config`` only where every process of the run has them
and none ``rewound`` (``reader.run``): an older tunetrack wrote end records without them.
"""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict, cast

from ..aggregates import Agg


class LastValues(TypedDict):
    """The process's last step and each key's last value there or before."""

    step: int | None
    values: dict[str, Any]


class EndRecord(TypedDict):
    """How one process ended."""

    #: ``finished``, ``failed`` or ``killed`` (``tunetrack.states``); a crashed process writes none
    state: str
    #: when it ended (unix time; an imported run's: when the source run ended)
    time: NotRequired[float]
    #: the traceback of a failed process, else None
    traceback: NotRequired[str | None]
    #: what it logged but could not keep: ``dropped_rows``, ``dropped_values``, ``lost_rows``,
    #: ``late_rows`` (``writer.counters``)
    counters: NotRequired[dict[str, int]]
    #: per backend it mirrored into: what it sent and missed (``missed_rows``), and its error
    backends: NotRequired[dict[str, dict[str, Any]]]
    #: its last step and last values: what a listing shows without reading the data
    last: NotRequired[LastValues]
    #: each key's ``aggregates.Agg`` over the rows it wrote (count, last, min and max with their steps)
    aggregates: NotRequired[dict[str, Agg]]
    #: the config it logged, merged: a run's config without its records
    config: NotRequired[dict[str, Any]]
    #: ``tunetrack run``'s command process: the command's exit code (negative: the signal that ended it)
    exit_code: NotRequired[int]
    #: it rewound (a resume from a checkpoint): its ``last`` and ``aggregates`` count rows a later
    #: attempt hides, so readers read the data instead
    rewound: NotRequired[bool]


class EndFields(TypedDict, total=False):
    """What a particular kind of process adds to its end record (``Tracker._end_fields``)."""

    exit_code: int


#: the end record's fields, as ``docs/architecture.md`` lists them
FIELDS = tuple(EndRecord.__annotations__)


def read(data: Any) -> EndRecord | None:
    """``data`` (a parsed end file, or an index entry's copy of one) as an ``EndRecord``: a mapping
    with a text ``state``; None for anything else."""
    if isinstance(data, dict) and isinstance(data.get("state"), str):
        return cast(EndRecord, data)  # checked: what every reader relies on
    return None
