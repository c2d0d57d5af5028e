"""Runs grouped by configuration: a sweep's seeds folded into one row per configuration, with how many
runs, the mean and standard deviation, min and max of one metric aggregate over them. What
``tunetrack compare --group-by`` prints and the dashboard's group rows show.

The standard deviation is the sample one (``ddof=1``: the seeds are a sample of what the
configuration gives), None for a group of one run. A run without the metric is kept in its group's
``runs`` but adds no value (``n`` counts values).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ..config import same, setting
from ..config.names import bookkeeping
from ..metric_keys import minimized, spelled
from ..values import is_finite_number, missing_last
from .across import matching
from .families import families
from .names import CONFIGS_SUGGESTED, config_key, short_names, unknown
from .where import Field, Lookup, known_of, require, run_lookup
from .where import field as parse_field

if TYPE_CHECKING:
    from .run import Run

#: how ``compare --across`` folds a pattern's keys into one value a run: a name and its percentile
ACROSS: dict[str, float] = {"mean": -1.0, "min": 0.0, "p5": 5.0, "median": 50.0, "p95": 95.0, "max": 100.0}
#: the characters that make a metric a pattern of keys
GLOB = re.compile(r"[*?\[]")

#: ``--group-by all-but-seed``: every config key but the seeds and the other bookkeeping
ALL_BUT_SEED = "all-but-seed"


@dataclass
class Group:
    """One configuration: the value of each group key (None where the runs have none), its runs,
    and the chosen aggregate of each run that has it."""

    key: dict[str, Any]
    runs: list[Any] = field(default_factory=list)
    values: list[float] = field(default_factory=list)

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def mean(self) -> float | None:
        return math.fsum(self.values) / self.n if self.values else None

    @property
    def std(self) -> float | None:
        if self.n < 2:
            return None
        mean = math.fsum(self.values) / self.n
        return math.sqrt(math.fsum((v - mean) ** 2 for v in self.values) / (self.n - 1))

    @property
    def min(self) -> float | None:
        return min(self.values) if self.values else None

    @property
    def max(self) -> float | None:
        return max(self.values) if self.values else None

    def as_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "runs": [r["id"] if isinstance(r, dict) else r.id for r in self.runs],
            "n": self.n,
            "mean": self.mean,
            "std": self.std,
            "min": self.min,
            "max": self.max,
        }


def group_keys(spec: str | Sequence[str], flat_configs: Sequence[Mapping[str, Any]]) -> list[str]:
    """The config keys to group by, as named: ``lr,lora.r`` (``config.`` prefixes allowed; each found
    in a run's config by ``names.config_key``), or ``all-but-seed``: every key some of
    ``flat_configs`` has, except those that only keep books (``config.names.bookkeeping``: seeds,
    output folders, run names, hub ids), which differ from run to run of one configuration."""
    names = _names(spec)
    if names == [ALL_BUT_SEED]:
        keys: dict[str, None] = {}
        for flat in flat_configs:
            keys.update(dict.fromkeys(k for k in flat if not bookkeeping(k)))
        return list(keys)
    if not names:
        raise ValueError(f"--group-by: give config keys (lr,lora.r) or {ALL_BUT_SEED}")
    return [n[len("config.") :] if n.startswith("config.") else n for n in names]


def _names(spec: str | Sequence[str]) -> list[str]:
    """``--group-by``'s names, in order: ``lr,lora.r`` or a list of them."""
    names = spec.split(",") if isinstance(spec, str) else list(spec)
    return [n.strip() for n in names if n.strip()]


def group_runs(
    runs: Sequence[Run],
    by: str | Sequence[str],
    metric: str | Field,
    best: Mapping[str, bool] | None = None,
    across: str | None = None,
) -> tuple[list[str], list[Group]]:
    """``(the keys grouped by, the groups)``, best group first (by the mean of ``metric``, which is
    ``KEY[:last|min|max|best]``, ``where.field``: lowest first for a loss, as ``best`` says), groups
    without a value last. A metric no run has is an ``UnknownName``. A pattern of keys needs
    ``across`` (``ACROSS``), which folds each run's matching keys into one value (``fold_keys``)."""
    what = metric_field(metric)
    keys, groups = partition(runs, [r.flat_config for r in runs], by)
    if is_pattern(what.key) or across is not None:
        lookup = _folding(runs, what, across, best)
    else:
        lookups = {id(r): run_lookup(r, best) for r in runs}
        require([what], runs, lambda r: lookups[id(r)], lambda: known_of(runs))
        lookup = lambda r: lookups[id(r)]  # noqa: E731
    for group in groups:
        group.values = values_of(group.runs, lookup, what)
    lower = {"min": True, "max": False}.get(what.agg, spelled(best).get(what.key, minimized(what.key)))
    return keys, missing_last(groups, lambda g: g.mean, descending=not lower)


def is_pattern(key: str) -> bool:
    """Whether a metric names a pattern of keys (``moe/layer*/expert*/load``) rather than one key."""
    return GLOB.search(key) is not None


def fold_keys(run: Run, what: Field, across: str, best: Mapping[str, bool] | None = None) -> float | None:
    """``what``'s aggregate (``KEY:AGG``, KEY a pattern) of each of ``run``'s keys that the pattern
    matches, folded into one number by ``across`` (a percentile by linear interpolation, NumPy's, as
    the band of ``reader.across`` has it; or the mean); None where no matching key has a number."""
    import numpy as np

    lookup = run_lookup(run, best)
    found = [lookup(replace(what, key=key, exact=True)) for key in matching(list(run.aggregates()), what.key)]
    values = np.array([float(v) for v in found if is_finite_number(v)])
    if not values.size:
        return None
    q = ACROSS[across]
    return float(values.mean() if q < 0 else np.percentile(values, q))


def _folding(
    runs: Sequence[Run], what: Field, across: str | None, best: Mapping[str, bool] | None
) -> Callable[[Run], Lookup]:
    """Each run's ``Lookup`` of a pattern metric: its keys folded by ``across``. A pattern without
    ``across``, ``across`` without a pattern, and a pattern no run's key matches are errors that say
    which, never an empty table."""
    names = ", ".join(ACROSS)
    if across is None:
        raise ValueError(
            f"--metric {what.key!r} is a pattern of keys: say how to fold them (--across {names})"
        )
    if across not in ACROSS:
        raise ValueError(f"--across {across!r}: use one of {names}")
    if not is_pattern(what.key):
        raise ValueError(f"--across folds a pattern of keys (moe/layer*/load); {what.key!r} is one key")
    if not any(matching(list(r.aggregates()), what.key) for r in runs):
        keys = known_of(runs).metrics
        raise unknown("metric pattern", what.key, [*families(keys), *keys])
    return lambda r: lambda _field: fold_keys(r, what, across, best)


def metric_field(metric: str | Field) -> Field:
    """``KEY[:AGG]`` as a metric ``Field``; a ``ValueError`` if it names something else."""
    what = parse_field(metric) if isinstance(metric, str) else metric
    if what.kind != "metric":
        raise ValueError(f"--metric: {metric!r} is not a metric (give KEY or KEY:min|max|best|last)")
    return what


def partition(
    items: Sequence[Any], flat_configs: Sequence[Mapping[str, Any]], by: str | Sequence[str]
) -> tuple[list[str], list[Group]]:
    """``items`` (runs, or the dashboard's rows of them) by the values of the group keys in their
    flat configs, groups in the order their first item comes; the groups hold no values yet. A key
    named that no item's config has is an ``UnknownName``; with ``all-but-seed`` only the keys
    whose values differ between the groups are kept (the rest say nothing about a group)."""
    keys = group_keys(by, flat_configs)
    every = _names(by) == [ALL_BUT_SEED]
    found: set[str] = set()
    groups: dict[tuple[Any, ...], Group] = {}
    for item, flat in zip(items, flat_configs):
        key = {}
        for k in keys:
            real = config_key(flat, k)
            key[k] = None if real is None else flat[real]
            if real is not None:
                found.add(k)
        same_setting = tuple(setting(key[k]) for k in keys)  # 1 and 1.0 in one group, as diff has it
        groups.setdefault(same_setting, Group(key)).runs.append(item)
    missing = [] if every else [k for k in keys if k not in found]
    if missing and items:
        known = [
            *short_names(flat_configs[:CONFIGS_SUGGESTED]),
            *{k: None for flat in flat_configs for k in flat},
        ]
        raise unknown("config key", f"config.{missing[0]}", [f"config.{k}" for k in known])
    out = list(groups.values())
    if every and len(out) > 1:
        keys = [k for k in keys if any(not same(g.key[k], out[0].key[k]) for g in out[1:])]
        for g in out:
            g.key = {k: g.key[k] for k in keys}
    return keys, out


def values_of(items: Sequence[Any], lookup: Callable[[Any], Lookup], what: Field) -> list[float]:
    """The finite numbers ``what`` reads from each item that has one (``lookup(item)``: its ``Lookup``)."""
    out = []
    for item in items:
        value = lookup(item)(what)
        if is_finite_number(value):
            out.append(float(value))
    return out
