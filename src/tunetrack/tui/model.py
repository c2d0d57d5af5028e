"""What the terminal view shows, read from the store with no terminal involved (so it is tested on
its own): the runs a filter keeps, the runs picked for the chart, one metric's points for each
(thinned to the terminal's width, extremes kept: ``reader.downsample.m4``), a run's last console lines.

Runs are kept between polls and refreshed (``Run.refresh``), so following a live run reads what it
appended since the last poll, not its history.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..metric_keys import LOSS_LIKE
from ..reader import Run, list_runs
from ..reader.as_text import number, state
from ..reader.console_log import Line
from ..reader.downsample import m4
from ..reader.where import WhereError, select
from ..states import State


@dataclass
class Row:
    """One line of the runs pane."""

    id: str
    state: str
    name: str
    project: str
    step: str
    loss: str


@dataclass
class Model:
    """The store at ``dir`` as the view shows it. ``runs`` on the command line preselect those runs."""

    dir: str | os.PathLike[str] | None = None
    project: str | None = None
    where: str = ""
    #: the ids of the runs drawn on the chart
    picked: list[str] = field(default_factory=list)
    #: the metric drawn: a key, or a regular expression whose first match among the picked runs' keys
    metric: str = ""
    #: why the filter or the metric found nothing (shown under the pane), or None
    problem: str | None = None
    _runs: dict[str, Run] = field(default_factory=dict)
    _shown: list[Run] = field(default_factory=list)

    def poll(self) -> list[Row]:
        """The runs the filter keeps, newest first, brought up to date (live ones refreshed)."""
        listed = list_runs(self.dir, project=self.project)
        for run in listed:
            kept = self._runs.get(run.id)
            if kept is None:
                self._runs[run.id] = run
            elif kept.state in (State.RUNNING, State.CRASHED) or run.state != kept.state:
                kept.refresh()
        present = {r.id for r in listed}
        runs = [self._runs[r.id] for r in listed]
        self._runs = {k: v for k, v in self._runs.items() if k in present}
        try:
            self._shown = select(runs, self.where or None)
            self.problem = None
        except (WhereError, LookupError, ValueError) as exc:
            self._shown, self.problem = runs, f"filter: {exc}"
        return [self._row(r) for r in self._shown]

    @staticmethod
    def _row(run: Run) -> Row:
        last = run.latest()
        loss = next((last["values"][k] for k in LOSS_LIKE if k in last["values"]), None)
        return Row(run.id, state(run), run.name, run.project or "—", number(last.get("step")), number(loss))

    def pick(self, run_id: str) -> None:
        """Add the run to the chart, or take it off."""
        if run_id in self.picked:
            self.picked.remove(run_id)
        elif run_id in self._runs:
            self.picked.append(run_id)

    def run(self, run_id: str) -> Run | None:
        return self._runs.get(run_id)

    def key(self) -> str | None:
        """The metric drawn: ``metric`` where a picked run logged it, else the first key a picked run
        logged that it matches as a regular expression; without one, the first loss they logged."""
        keys = [k for rid in self.picked if (r := self._runs.get(rid)) for k in r.keys()]
        if not keys:
            return None
        if not self.metric:
            return next((k for k in LOSS_LIKE if k in keys), keys[0])
        if self.metric in keys:
            return self.metric
        try:
            pattern = re.compile(self.metric)
        except re.error as exc:
            self.problem = f"metric: {exc}"
            return None
        found = next((k for k in keys if pattern.search(k)), None)
        self.problem = None if found else f"metric: no key of the picked runs matches {self.metric!r}"
        return found

    def points(self, width: int) -> list[tuple[str, list[float], list[float]]]:
        """``(label, steps, values)`` of the metric for each picked run, at most about ``4 * width``
        points each, every spike kept."""
        import numpy as np

        key = self.key()
        out: list[tuple[str, list[float], list[float]]] = []
        if key is None:
            return out
        for rid in self.picked:
            run = self._runs.get(rid)
            if run is None or key not in run.keys():
                continue
            series = run.series(key, strict=False)
            steps = np.asarray(series.steps, dtype=float)
            values = np.asarray(series.values, dtype=float)
            keep = m4(steps, values, width)
            out.append((run.name, steps[keep].tolist(), values[keep].tolist()))
        return out

    def console(self, run_id: str | None, tail: int = 200) -> list[Line]:
        """The last lines the run printed."""
        run = self._runs.get(run_id) if run_id else None
        return run.console(tail=tail) if run is not None else []

    def keys(self) -> Sequence[str]:
        """Every metric key the picked runs logged."""
        return sorted({k for rid in self.picked if (r := self._runs.get(rid)) for k in r.keys()})


def shown_state(row: Row) -> Any:
    """The state word a row starts with (``crashed: CUDA ...`` is ``crashed``)."""
    return row.state.split(":")[0]
