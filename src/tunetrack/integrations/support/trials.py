"""Hyperparameter searches: one run per trial, named and tagged after the trial.

A search drives one callback through many trials; each trial gets its own run named
``<base>-<trial>``, tagged ``param=value`` for each sampled parameter, with the trial (name,
number, parameters, whether it was pruned, the study it belongs to) in its config, so trials sort and
compare like any runs, and ``--group-by trial.study`` folds a search into one group.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Trial:
    name: str
    number: int
    params: dict[str, Any] = field(default_factory=dict)
    study: str | None = None

    def run_name(self, base: str) -> str:
        return f"{base}-{self.name}"

    def tags(self, tags: Sequence[str]) -> list[str]:
        return [*tags, *(f"{k}={v}" for k, v in sorted(self.params.items()))]

    def config(self) -> dict[str, Any]:
        trial = {"name": self.name, "number": self.number, "params": self.params, "pruned": False}
        return {"trial": {**trial, "study": self.study}}


class Trials:
    """Numbers the trials of a search as they start (a search without trial names gets ``trial-N``)
    and names the search after its first trial's start, so its trials group as one study."""

    def __init__(self) -> None:
        self.count = 0
        self.study: str | None = None

    def next(self, name: str | None, params: Mapping[str, Any] | None, study: str) -> Trial:
        """``study``: the search's name where this is its first trial (later ones keep the first's)."""
        number, self.count = self.count, self.count + 1
        self.study = self.study or study
        return Trial(str(name) if name else f"trial-{number}", number, dict(params or {}), self.study)


def mark_pruned(tracker: Any, step: int, trial: Trial | None) -> None:
    """The search stopped this trial early: a ``pruned`` event, and the trial's config says so."""
    tracker.event("pruned", step=step, trial=trial.name if trial else None)
    tracker.log_config({"trial": {"pruned": True}})
