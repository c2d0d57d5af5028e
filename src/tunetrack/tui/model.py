"""What the terminal view shows, read from the store with no terminal involved (so it is tested on
its own): the runs a filter keeps, the runs picked for the chart, one metric's points for each
(thinned to the terminal's width, extremes kept: ``reader.downsample.m4``), a run's last console lines.

Runs are kept between polls and refreshed (``Run.refresh``), so following a live run reads what it
appended since the last poll, not its history.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any

from ..metric_keys import LOSS_LIKE
from ..reader import Catalog, Run, list_runs
from ..reader.as_text import number, state, state_words
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
    _rows: list[Row] = field(default_factory=list)
    _version: int | None = None
    _where_shown: str | None = None
    _catalog: Catalog = field(init=False)

    def __post_init__(self) -> None:
        self._catalog = Catalog(self.dir)

    def poll(self) -> bool:
        """Look at the store; whether anything the view shows changed (``rows``, the picked runs).

        The store's runs table (``reader.Catalog``) says in one look whether any run changed; when
        none did, nothing else is read. Without a filter the rows come from that table (no run's
        data is read but a live one's, incrementally); a filter reads the runs it needs."""
        version = self._catalog.refresh()
        if version == self._version and self.where == self._where_shown:
            return False
        self._version, self._where_shown = version, self.where
        if self.where:
            self._rows = self._filtered()
        else:
            self.problem = None
            self._rows = [
                Row(
                    r["id"],
                    state_words(r["state"], r.get("failure"), r.get("stop")),
                    r["name"],
                    r["project"] or "—",
                    number(r["last_step"]),
                    number(r["loss"]),
                )
                for r in self._catalog.rows(self.project, refresh=False)
            ]
        for rid in self.picked:
            if (run := self._runs.get(rid)) is not None:
                run.refresh()
        return True

    @property
    def rows(self) -> list[Row]:
        """The runs the filter keeps, newest first, as the last ``poll`` found them."""
        return self._rows

    def _filtered(self) -> list[Row]:
        listed = list_runs(self.dir, project=self.project)
        for run in listed:
            kept = self._runs.get(run.id)
            if kept is None:
                self._runs[run.id] = run
            elif kept.state in (State.RUNNING, State.CRASHED) or run.state != kept.state:
                kept.refresh()
        runs = [self._runs[r.id] for r in listed]
        try:
            shown = select(runs, self.where)
            self.problem = None
        except (WhereError, LookupError, ValueError) as exc:
            shown, self.problem = runs, f"filter: {exc}"
        return [self._row(r) for r in shown]

    @staticmethod
    def _row(run: Run) -> Row:
        last = run.latest()
        loss = next((last["values"][k] for k in LOSS_LIKE if k in last["values"]), None)
        return Row(run.id, state(run), run.name, run.project or "—", number(last.get("step")), number(loss))

    def pick(self, run_id: str) -> None:
        """Add the run to the chart, or take it off."""
        if run_id in self.picked:
            self.picked.remove(run_id)
        elif self.run(run_id) is not None:
            self.picked.append(run_id)

    def run(self, run_id: str) -> Run | None:
        """The run (read once, then kept and refreshed by ``poll`` while it is picked)."""
        if run_id not in self._runs:
            try:
                self._runs[run_id] = self._catalog.open(run_id)
            except LookupError:
                return None
        return self._runs[run_id]

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
        run = self.run(run_id) if run_id else None
        return run.console(tail=tail) if run is not None else []


def shown_state(row: Row) -> Any:
    """The state word a row starts with (``crashed: CUDA ...`` is ``crashed``)."""
    return row.state.split(":")[0]
