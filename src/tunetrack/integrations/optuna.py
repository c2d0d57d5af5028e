"""Optuna: one run per trial of ``study.optimize(objective, callbacks=[TunetrackCallback()])``.

Optuna calls a study's callbacks once per trial, after the trial ended, with the frozen trial: its
parameters, its objective value(s), the intermediate values ``trial.report(value, step)`` recorded,
its state and why it failed. Each trial becomes a run then, named ``<study>-trial-<number>``:

- config: the sampled parameters at the top level (``--where 'config.lr < 1e-3'``, the dashboard's
  axes) and ``trial`` (name, number, params, state, pruned, study, started, duration), so
  ``--group-by trial.study`` folds a study into one group and ``config.trial.state`` tells a
  pruned trial from a complete one;
- metrics: the intermediate values as ``intermediate_value`` at their steps, and the objective as
  ``value`` (or the names given) at the trial's last step, so ``value:last`` is the objective;
- state: ``finished`` for a complete or pruned trial (a ``pruned`` event at its last report),
  ``failed`` for a failed one. Optuna hands its callbacks no reason for a failure, only logs one
  (``Trial 7 failed with value nan.``): the callback listens to that log and keeps its last line for
  the trial as the run's error.

The run is written after the trial, so its times are when the callback ran; the trial's own start
and duration are in its config. An objective that also records a run of its own (a Trainer with
tunetrack's callback) gets both: give one of them ``project=`` apart, or use only one.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import Any

from .._warnings import warn_once
from ..states import State
from ..tracker import Tracker
from .support.trials import Trial, mark_pruned

#: the key of the intermediate values ``trial.report`` recorded
INTERMEDIATE = "intermediate_value"
#: Optuna's trial states -> what they are in a run's config (Optuna's own names, lower case)
_OPTUNA_STATES = {"COMPLETE": "complete", "PRUNED": "pruned", "FAIL": "fail"}
#: the logger Optuna says why a trial failed on, and how its lines start
_OPTIMIZE_LOGGER = "optuna.study._optimize"
_FAILED = re.compile(r"Trial (\d+) failed")


class _FailReasons(logging.Handler):
    """The last line Optuna logged about each failed trial, by trial number."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.reasons: dict[int, str] = {}

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        found = _FAILED.match(message)
        if found:
            self.reasons[int(found.group(1))] = message.splitlines()[0]


class TunetrackCallback:
    """Records each finished trial of an Optuna study as a run.

    ``metric_name``: the objective's key (``"value"``), or one name per objective of a
    multi-objective study (default ``value_0``, ``value_1``, ...). The other keyword arguments go to
    each trial's ``Tracker`` (``dir``, ``tags``, ``backends``, ...); ``project`` defaults to the
    study's name.
    """

    def __init__(
        self,
        metric_name: str | Sequence[str] = "value",
        project: str | None = None,
        tags: Sequence[str] = (),
        **tracker_kwargs: Any,
    ) -> None:
        self.metric_name = metric_name
        self.project = project
        self.tags = list(tags)
        self.tracker_kwargs = tracker_kwargs
        self._fail_reasons = _FailReasons()
        logging.getLogger(_OPTIMIZE_LOGGER).addHandler(self._fail_reasons)

    def __call__(self, study: Any, trial: Any) -> None:
        state = _OPTUNA_STATES.get(trial.state.name)
        if state is None:  # RUNNING or WAITING: Optuna calls back only for ended trials
            return
        params = dict(trial.params)
        record = Trial(f"trial-{trial.number}", trial.number, params, study.study_name)
        config = record.config()
        config["trial"].update(state=state, **_times(trial))
        tracker = Tracker(
            project=self.project or study.study_name,
            name=record.run_name(study.study_name),
            config={**params, **config},
            tags=record.tags(self.tags),
            system=False,  # the trial is over: this process's load now says nothing about it
            console=False,  # nor does what it prints now
            **self.tracker_kwargs,
        )
        with tracker:
            steps = sorted(trial.intermediate_values)
            for step in steps:
                tracker.log({INTERMEDIATE: trial.intermediate_values[step]}, step=step)
            last = steps[-1] if steps else 0
            values = trial.values or []
            if values:
                tracker.log(dict(zip(self._names(len(values)), values, strict=True)), step=last)
            if state == "pruned":
                mark_pruned(tracker, last, record)
            if state == "fail":
                reason = self._fail_reasons.reasons.pop(trial.number, None)
                tracker.finish(State.FAILED, reason or "the trial failed (Optuna logged no reason)")

    def _names(self, count: int) -> list[str]:
        names = [self.metric_name] if isinstance(self.metric_name, str) else list(self.metric_name)
        if len(names) == count:
            return names
        if not isinstance(self.metric_name, str):  # a setup mistake: said once, the values still kept
            warn_once(
                "optuna-metric-names",
                f"tunetrack: metric_name names {len(names)} objectives, the study has {count}; "
                f"recording them as value_0 .. value_{count - 1}",
            )
        base = self.metric_name if isinstance(self.metric_name, str) else "value"
        return [f"{base}_{i}" for i in range(count)]


def _times(trial: Any) -> dict[str, Any]:
    start, end = trial.datetime_start, trial.datetime_complete
    out: dict[str, Any] = {"started": start.isoformat() if start else None}
    out["duration"] = (end - start).total_seconds() if start and end else None
    return out
