"""What the terminal view shows of the store's runs, read with no terminal involved (so it is tested on
its own): the runs a filter keeps, with the columns asked for, in the order asked for, and the runs
picked for the chart.

The rows come from the store's runs table (``reader.Catalog``, the dashboard's): one look says whether
any run changed, and when none did nothing else is read but the listing of the running run under the
cursor (its system samples and console lines change no row). The filter, the columns and their values are
the dashboard's too (``reader.sweeps.select``: a run's config read only when a field names it).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from ..errors import TunetrackError
from ..metric_keys import LOSS_LIKE
from ..reader import Catalog, Run
from ..reader.as_text import number, short, state_words
from ..reader.sweeps import Configs, select
from ..reader.where import MISSING, Field, WhereError
from ..reader.where import field as parse_field
from ..states import State
from ..values import missing_last

#: the columns every row has, before those asked for (``columns``)
BASE_COLUMNS = ("state", "name", "project", "step", "loss")


@dataclass
class Row:
    """One line of the runs pane: ``cells`` as shown (the state's word alone), ``values`` as sorted (one
    per column), and ``state``, the state as ``tunetrack ls`` words it (``failed: CUDA error on rank
    0``, ``stopped: by ana@gpu1, loss diverged``), shown for the run under the cursor."""

    id: str
    cells: tuple[str, ...]
    values: tuple[Any, ...]
    state: str

    @property
    def name(self) -> str:
        return self.cells[1]


@dataclass
class Model:
    """The runs of the store at ``dir`` as the view shows them."""

    dir: str | os.PathLike[str] | None = None
    project: str | None = None
    #: the ``--where`` language (``state = 'running' and loss:min < 2``)
    where: str = ""
    #: more columns: fields of the ``--where`` language (``loss:min``, ``config.lora.r``, ``eval/acc:max``)
    columns: list[str] = field(default_factory=list)
    #: the column sorted by (a name of ``BASE_COLUMNS`` or ``columns``) and whether descending; none:
    #: newest first
    sort: str | None = None
    descending: bool = False
    #: the ids of the runs drawn on the chart, in the order picked
    picked: list[str] = field(default_factory=list)
    #: the run under the cursor (its console, system metrics, samples and events are shown), or None
    current: str | None = None
    #: why the filter or a column found nothing (shown under the runs), or None
    problem: str | None = None
    _runs: dict[str, Run] = field(default_factory=dict)
    _rows: list[Row] = field(default_factory=list)
    _seen: tuple[Any, ...] | None = None
    _fields: dict[str, Field] = field(default_factory=dict)  # the columns asked for that are fields
    _grown: Any = None
    _catalog: Catalog = field(init=False)
    _configs: Configs = field(default_factory=Configs)

    def __post_init__(self) -> None:
        self._catalog = Catalog(self.dir)

    @property
    def header(self) -> tuple[str, ...]:
        """The columns shown: the base ones (the project's only when runs of several are shown), then
        those asked for that could be read (a column that is no field is named in ``problem``)."""
        base = tuple(c for c in BASE_COLUMNS if c != "project" or self.project is None)
        return (*base, *(c for c in self.columns if c in self._fields))

    def poll(self) -> bool:
        """Look at the store; whether anything the view shows changed (``rows``, the picked runs, the
        files of the run under the cursor while it runs)."""
        version = self._catalog.refresh()
        asked = (version, self.where, tuple(self.columns), self.sort, self.descending)
        grown = self._current_files()
        if asked == self._seen and grown == self._grown:
            return False
        self._grown = grown
        if asked != self._seen:
            self._seen = asked
            self._rows = self._select()
        for rid in {*self.picked, self.current}:
            if rid is not None and (run := self._runs.get(rid)) is not None:
                run.refresh()  # what it appended since the last look
        return True

    def _current_files(self) -> Any:
        """The files of the run under the cursor while it runs (their names, sizes and times), else
        None: its system samples and console lines change no row of the runs table, and a run that
        stalls its logging is what its system tab is looked at for."""
        row = next((r for r in self._rows if r.id == self.current), None)
        run = self._runs.get(row.id) if row is not None and row.values[0] == State.RUNNING else None
        return run.folder.signature() if run is not None else None

    @property
    def rows(self) -> list[Row]:
        """The runs the filter keeps, in the order asked for (newest first), as ``poll`` found them."""
        return self._rows

    def _select(self) -> list[Row]:
        self._fields, self.problem = {}, None
        for spec in self.columns:
            try:
                self._fields[spec] = parse_field(spec)
            except WhereError as exc:
                self.problem = f"column {spec!r}: {exc}"
        fields = list(self._fields.values())
        specs = [str(f) for f in fields if f.kind == "metric"]
        try:
            chosen = select(
                self._catalog,
                self._configs,
                self.where,
                fields=specs,
                project=self.project,
                refresh=False,
                also=LOSS_LIKE,
            )
        except (TunetrackError, ValueError) as exc:  # a bad filter, a name no run has
            self.problem = f"filter: {exc}"
            chosen = select(
                self._catalog, self._configs, None, project=self.project, refresh=False, also=LOSS_LIKE
            )
        rows = []
        for r in chosen.rows:
            lookup = chosen.lookup(r)
            extra = [lookup(f) for f in fields]
            extra = [None if v is MISSING else v for v in extra]
            loss = next((r["last"][k] for k in LOSS_LIKE if k in r["last"]), None)
            base = {
                "state": (r["state"], str(r["state"])),
                "name": (r["name"], r["name"]),
                "project": (r["project"] or "", r["project"] or "—"),
                "step": (r["last_step"], number(r["last_step"])),
                "loss": (loss, number(loss)),
            }
            shown = [
                *(base[c] for c in self.header[: len(self.header) - len(extra)]),
                *(
                    (v, number(v) if isinstance(v, (int, float)) or v is None else short(v, 24))
                    for v in extra
                ),
            ]
            words = state_words(r["state"], r.get("failure"), r.get("stop"))
            rows.append(Row(r["id"], tuple(c for _, c in shown), tuple(v for v, _ in shown), words))
        if self.sort in self.header:
            at = self.header.index(self.sort)
            rows = missing_last(rows, lambda row: row.values[at], self.descending)
        return rows

    def sort_text(self, text: str) -> None:
        """Sort as ``--sort`` says (``loss``, ``eval/loss:min:desc``, ``config.lr``): by a column shown,
        else by a column added for it."""
        head, sep, tail = text.rpartition(":")
        name, self.descending = (head, tail == "desc") if sep and tail in ("asc", "desc") else (text, False)
        if name not in (*BASE_COLUMNS, *self.columns):
            self.columns.append(name)
        self.sort = name

    def sort_by(self, column: str) -> None:
        """Sort by ``column``: ascending, then descending when sorted by it already."""
        self.descending = self.sort == column and not self.descending
        self.sort = column

    def pick(self, run_id: str) -> None:
        """Add the run to the chart, or take it off."""
        if run_id in self.picked:
            self.picked.remove(run_id)
        elif self.run(run_id) is not None:
            self.picked.append(run_id)

    def run(self, run_id: str) -> Run | None:
        """The run, read once and then kept (``poll`` refreshes the picked and the current one)."""
        if run_id not in self._runs:
            try:
                self._runs[run_id] = self._catalog.open(run_id)
            except LookupError:
                return None
        return self._runs[run_id]

    def picked_runs(self) -> list[Run]:
        """The picked runs that could be read, in the order picked."""
        return [run for rid in self.picked if (run := self._runs.get(rid)) is not None]
