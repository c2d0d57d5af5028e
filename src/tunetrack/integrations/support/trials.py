"""Hyperparameter searches: one run per trial, named and tagged after the trial.

A search drives one callback through many trials; each trial gets its own run named
``<base>-<trial>``, tagged ``param=value`` for each sampled parameter, with the trial (name,
number, parameters, whether it was pruned) in its config, so trials sort and compare like any runs.
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

    def run_name(self, base: str) -> str:
        return f"{base}-{self.name}"

    def tags(self, tags: Sequence[str]) -> list[str]:
        return [*tags, *(f"{k}={v}" for k, v in sorted(self.params.items()))]

    def config(self) -> dict[str, Any]:
        return {"trial": {"name": self.name, "number": self.number, "params": self.params, "pruned": False}}


class Trials:
    """Numbers the trials of a search as they start (a search without trial names gets ``trial-N``)."""

    def __init__(self) -> None:
        self.count = 0

    def next(self, name: str | None, params: Mapping[str, Any] | None) -> Trial:
        number, self.count = self.count, self.count + 1
        return Trial(str(name) if name else f"trial-{number}", number, dict(params or {}))


def mark_pruned(tracker: Any, step: int, trial: Trial | None) -> None:
    """The search stopped this trial early: a ``pruned`` event, and the trial's config says so."""
    tracker.event("pruned", step=step, trial=trial.name if trial else None)
    tracker.log_config({"trial": {"pruned": True}})
