"""Runs grouped by configuration: a sweep's seeds folded into one row per configuration, with how many
runs, the mean and standard deviation, min and max of one metric aggregate over them. What
``tunetrack compare --group-by`` prints and the dashboard's group rows show.

The standard deviation is the sample one (``ddof=1``: the seeds are a sample of what the
configuration gives), None for a group of one run. A run without the metric is kept in its group's
``runs`` but adds no value (``n`` counts values).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .where import MISSING, Field, Lookup, run_lookup
from .where import field as parse_field

if TYPE_CHECKING:
    from .run import Run

#: ``--group-by all-but-seed``: every config key but the seeds
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


def seed_like(key: str) -> bool:
    """``seed``, ``data.seed``, ``train.data_seed``: the keys ``all-but-seed`` leaves out."""
    return "seed" in key.rsplit(".", 1)[-1].lower()


def group_keys(spec: str | Sequence[str], flat_configs: Sequence[Mapping[str, Any]]) -> list[str]:
    """The flat config keys to group by: ``lr,lora.r`` (``config.`` prefixes allowed), or
    ``all-but-seed``: every key some of ``flat_configs`` has, except the seed-like ones."""
    names = spec.split(",") if isinstance(spec, str) else list(spec)
    names = [n.strip() for n in names if n.strip()]
    if names == [ALL_BUT_SEED]:
        keys: dict[str, None] = {}
        for flat in flat_configs:
            keys.update(dict.fromkeys(k for k in flat if not seed_like(k)))
        return list(keys)
    if not names:
        raise ValueError(f"--group-by: give config keys (lr,lora.r) or {ALL_BUT_SEED}")
    return [n[len("config.") :] if n.startswith("config.") else n for n in names]


def group_runs(
    runs: Sequence[Run],
    by: str | Sequence[str],
    metric: str | Field,
    best: Mapping[str, bool] | None = None,
) -> tuple[list[str], list[Group]]:
    """``(the keys grouped by, the groups)``, groups in the order their first run comes in ``runs``;
    ``metric`` is ``KEY[:last|min|max|best]`` (``where.field``)."""
    what = metric_field(metric)
    keys, groups = partition(runs, [r.flat_config for r in runs], by)
    lookups = {id(r): run_lookup(r, best) for r in runs}
    for group in groups:
        group.values = values_of(group.runs, lambda r: lookups[id(r)], what)
    return keys, groups


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
    flat configs, groups in the order their first item comes; the groups hold no values yet."""
    keys = group_keys(by, flat_configs)
    groups: dict[str, Group] = {}
    for item, flat in zip(items, flat_configs):
        key = {k: flat.get(k) for k in keys}
        groups.setdefault(repr(sorted(key.items(), key=lambda kv: kv[0])), Group(key)).runs.append(item)
    return keys, list(groups.values())


def values_of(items: Sequence[Any], lookup: Callable[[Any], Lookup], what: Field) -> list[float]:
    """The finite numbers ``what`` reads from each item that has one (``lookup(item)``: its ``Lookup``)."""
    out = []
    for item in items:
        value = lookup(item)(what)
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if value is not MISSING and number and math.isfinite(value):
            out.append(float(value))
    return out
