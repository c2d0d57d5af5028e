"""``Run``: one run read back (metadata, state, config, metric series, system metrics, events).

Every process of a run wrote its own files; a ``Run`` merges them on read (``merge``), derives the
run's state from them alone (``processes``), and hides rows that a later rewind superseded.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

from .. import aggregates, failures
from .._warnings import warn_once
from ..aggregates import Agg
from ..config import flatten, merge
from ..edits import Identity, fold
from ..histograms import BINS, HISTOGRAM, Logged, OverSteps, logged, over_steps
from ..metric_keys import metric_key, minimized, spelled
from ..states import State
from ..store import codec, forks
from ..store.base import RunFolder, Store
from ..store.ends import EndRecord
from ..store.forks import ForkRef
from ..store.process_meta import Role
from . import console_log as console
from . import from_ends
from .across import Across, Fitted, across, fit
from .checkpoints import Checkpoint, checkpoints
from .console_log import Failure, Line, ProcessConsole
from .merge import History, apply_rewinds, as_of, branch_step, up_to, visible_last_step
from .names import unknown
from .processes import Process, latest_primary, listed_processes, run_state, speaker
from .processes import processes as read_processes
from .records import ProcessRecords, newer, read_process
from .samples import SampleTable, from_event
from .series import Series, aggregate, py, series

#: the most forks of forks a reader follows back (a loop, or a chain gone wrong, reads as no parent)
MAX_FORK_DEPTH = 64


def load(store: Store, run_id: str, stamp: Any = None) -> Run | None:
    """The run ``run_id`` of ``store`` (its ``run.json`` read), or None if it holds no such run;
    ``stamp``: what the store's ``entries()`` just gave for it."""
    folder = store.run(run_id, stamp)
    data = folder.run_json() if folder is not None else None
    return Run(folder, data, store) if folder is not None and data is not None else None


class Run:
    """One run, read from its folder. Cheap to create: data is read on first use.

    A long-lived reader (the dashboard) keeps one ``Run`` and calls ``refresh()`` when the files
    changed; one ``Run`` may be shared by threads."""

    def __init__(self, folder: RunFolder, run_json: dict[str, Any], store: Store | None = None) -> None:
        self.folder = folder
        #: the store the run was read from: where a fork finds its parent (None: a run read alone)
        self.store = store
        self.id: str = str(run_json.get("id") or str(folder).rstrip("/").rsplit("/", 1)[-1])
        self.project: str | None = run_json.get("project")
        self.created: float = float(run_json.get("created") or 0.0)
        self._run_json = run_json
        self._read: dict[str, ProcessRecords] = {}  # each process's records decoded so far
        self._lock = threading.RLock()
        self._keys: tuple[ProcessRecords | None, dict[str, None]] = (None, {})
        self._merged: ProcessRecords | None = None
        self._system_blocks: dict[str, list[codec.Block]] = {}
        self._process_blocks: dict[str, list[codec.Block]] = {}
        self._console: dict[str, ProcessConsole] = {}  # each process's console lines read so far
        self._parent: Run | None = None  # a fork's parent, read once and refreshed with the fork
        self._own = History({}, [], [])  # its own records as read, before rewinds and any parent's

    @property
    def path(self) -> Path | str:
        """The run's folder, or its URL in an object store."""
        path: Path | str = getattr(self.folder, "path", str(self.folder))
        return path

    def refresh(self) -> None:
        """Take in what was written since the last read: new processes, end records, appended records.
        Data is read on from where the last read stopped, so following a live run costs what it
        appended, not its whole history."""
        self.folder.refresh()
        self._forget()
        if self._parent is not None:
            self._parent.refresh()

    def _forget(self) -> None:
        """Drop what was derived from the files (they changed; ``refresh`` looked at them afresh)."""
        with self._lock:
            self._merged = None
            for name in ("processes", "_listed", "_status", "_identity", "config", "_failed"):
                self.__dict__.pop(name, None)

    # -- identity: run.json as the run's edits left it ------------------------------------------------
    @cached_property
    def _identity(self) -> Identity:
        return fold(self._run_json, self.folder.edits())

    @property
    def name(self) -> str:
        return self._identity.name or self.id

    @property
    def tags(self) -> list[str]:
        return list(self._identity.tags)

    @property
    def created_as(self) -> dict[str, Any]:
        """run.json as its creator wrote it, before any edit: what an audit trail replays the edits over."""
        return dict(self._run_json)

    @property
    def notes(self) -> list[dict[str, Any]]:
        """Notes (``tunetrack note``), oldest first: ``{"time", "by", "text"}``."""
        return list(self._identity.notes)

    @property
    def stop_request(self) -> dict[str, Any] | None:
        """Who asked the run to stop, when and why (``{"time", "by", "reason"}``: ``tunetrack stop``,
        the dashboard, an agent, a rule), or None."""
        return self._identity.stop

    def __repr__(self) -> str:
        return f"Run(id={self.id!r}, name={self.name!r}, project={self.project!r}, state={str(self.state)!r})"

    # -- processes and state -------------------------------------------------------------------
    @cached_property
    def processes(self) -> list[Process]:
        """Its writing processes, from the run's own files (their metadata and end records)."""
        return read_processes(self.folder)

    @property
    def stored(self) -> dict[str, Any]:
        """``run.json`` as it was written (``name`` and ``tags`` before any edit)."""
        return self._run_json

    @cached_property
    def _listed(self) -> list[Process]:
        """The processes as cheaply as the store can say: from its listing index (object stores: no
        file of the run read), else from the run's own files. State, hosts and last values use these."""
        summary = self.folder.summary()
        return listed_processes(summary) if summary is not None else self.processes

    @cached_property
    def _status(self) -> tuple[str, float | None, str | None]:
        return run_state(self._listed, self.created)

    @property
    def state(self) -> str:
        return self._status[0]

    @property
    def ended(self) -> float | None:
        return self._status[1]

    @property
    def error(self) -> str | None:
        return self._status[2]

    @property
    def exit_code(self) -> int | None:
        """The exit code of the command ``tunetrack run`` ran (negative: the signal that ended it),
        once it exited; None for any other run."""
        command = speaker(self._listed)
        end = command.end if command is not None and command.role == Role.COMMAND else None
        return end.get("exit_code") if end is not None else None

    @property
    def cause(self) -> str | None:
        """Why the run failed, in one line: the exception's own line of its traceback
        (``RuntimeError: CUDA error: an illegal memory access was encountered``, not the advice
        PyTorch prints after it; ``failures.exception_line``), or for a run that died without one (a
        C++ abort, a kill) what its last console lines say of a known failure; else None."""
        if self.error:
            return failures.exception_line(self.error)
        found = self._failed
        return found.cause if found is not None else None

    @property
    def ranks(self) -> list[int]:
        """The global ranks of its writing processes (``[0]`` for a run of one process)."""
        return sorted({p.rank for p in self._listed})

    @property
    def hosts(self) -> list[str]:
        return sorted({str(p.meta.get("host")) for p in self._listed if p.meta.get("host")})

    @property
    def meta(self) -> dict[str, Any]:
        """run.json (its name and tags as edited), the edits, and every writing process's metadata
        and end record."""
        procs = [{**p.meta, "proc": p.name, "end": p.end} for p in self.processes]
        return {
            **self._run_json,
            "name": self.name,
            "tags": self.tags,
            "edits": list(self._identity.edits),
            "state": self.state,
            "ended": self.ended,
            "hosts": self.hosts,
            "processes": procs,
        }

    # -- records -------------------------------------------------------------------------------
    def _process_records(self, proc: Process) -> ProcessRecords:
        """``proc``'s records: those read before, plus whatever its data gained since."""
        known = self._read.get(proc.name)
        size = self.folder.data_size(proc.name)
        if known is None or size < known.offset:  # first read, or the data was replaced: from the start
            known = self._read[proc.name] = read_process(self.folder, proc.name, proc.ended)
        elif size > known.offset:
            known.extend(read_process(self.folder, proc.name, proc.ended, known.offset, lists=known.lists))
        return known

    @property
    def _records(self) -> ProcessRecords:
        with self._lock:  # merged and stored under the lock: a refresh() meanwhile is never undone
            if self._merged is None:
                self._merged = self._merge()
            return self._merged

    def _merge(self) -> ProcessRecords:
        newer(self.id, self._run_json)
        merged = ProcessRecords()
        self._system_blocks = {}
        self._process_blocks = {}
        for proc in self.processes:
            recs = self._process_records(proc)
            merged.blocks += recs.blocks
            self._process_blocks[proc.name] = list(recs.blocks)
            self._system_blocks.setdefault(proc.node, []).extend(recs.system)
            merged.configs += recs.configs
            merged.events += recs.events
            merged.tables += recs.tables
        self._own = History(dict(self._process_blocks), list(merged.events), list(merged.tables))
        apply_rewinds(merged)
        fork = self.fork
        if fork is not None:  # a fork: its parent's history up to the branch step comes first
            inherited = self._inherited(fork, merged.events)
            merged.blocks[:0] = [b for blocks in inherited.blocks.values() for b in blocks]
            merged.events[:0] = inherited.events
            merged.tables[:0] = inherited.tables
            for name, blocks in inherited.blocks.items():
                self._process_blocks[name] = blocks + self._process_blocks.get(name, [])
        return merged

    def _inherited(self, fork: ForkRef, own_events: list[codec.EventRecord]) -> History:
        """What this fork inherits: its parent's history as it was when the fork began, up to the
        branch step (or to an earlier step a rewind of the fork went back to); nothing without it."""
        parent = self.parent()
        if parent is None:
            return History({}, [], [])
        return up_to(parent._history(self.created), branch_step(fork["step"], own_events))

    def _history(self, until: float) -> History:
        """This run's history as it read at ``until`` (``merge.as_of``), its own parent's first: what
        a fork that began then inherits."""
        with self._lock:
            self._records  # noqa: B018 - reads the data, which keeps the run's own records
            own = self._own
        history = as_of(own, until)
        fork = self.fork
        if fork is None:
            return history
        inherited = self._inherited(fork, history.events)
        blocks = dict(inherited.blocks)
        for name, more in history.blocks.items():
            blocks[name] = blocks.get(name, []) + more
        return History(blocks, inherited.events + history.events, inherited.tables + history.tables)

    # -- forks -----------------------------------------------------------------------------------------
    @property
    def fork(self) -> ForkRef | None:
        """Where this run branched, if it is a fork (``Tracker(fork_from="RUN@STEP")``): ``{"run": the
        parent's id, "step": the last step of the parent's that is this run's history}``; else None.
        Its series, rows and events hold the parent's up to that step, then its own; its system
        metrics and console are its own alone."""
        return forks.read(self._run_json)

    def parent(self) -> Run | None:
        """The run this fork branched from, read from the same store; None for a run that is no fork,
        and (warned about once) for a fork whose parent the store no longer holds, or whose ancestry
        loops back on itself or is deeper than ``MAX_FORK_DEPTH``: it then reads as its own history."""
        fork = self.fork
        if fork is None or self.store is None:
            return None
        if self._parent is None:
            chain, run = [self.id], self
            while (ref := run.fork) is not None:  # run.json alone along the way: no data is read
                if ref["run"] in chain or len(chain) > MAX_FORK_DEPTH:
                    warn_once(
                        f"fork-chain:{self.id}",
                        f"run {self.id}: its forks loop or nest too deep "
                        f"({' -> '.join(chain)} -> {ref['run']}); it reads as its own history",
                    )
                    return None
                found = load(self.store, ref["run"])
                if found is None:
                    warn_once(
                        f"fork-parent:{self.id}",
                        f"run {run.id} is forked from {ref['run']}@{ref['step']}, "
                        "which the store does not hold: its history before the fork is not shown",
                    )
                    return None
                chain.append(found.id)
                if run is self:
                    self._parent = found
                run = found
        return self._parent

    def fork_config(self) -> dict[str, Any] | None:
        """The parent's config as it was when this fork began (its ``fork`` event), so that what the
        fork changed can be told after the parent changed or was deleted; None for a run that is no
        fork, or one whose event is gone."""
        fork = self.fork
        if fork is None:
            return None
        for event in reversed(self._records.events):  # its own comes after any it inherited
            if event.kind == forks.EVENT and event.data.get("run") == fork["run"]:
                config = event.data.get("config")
                return dict(config) if isinstance(config, dict) else {}
        return None

    def forks(self) -> list[Run]:
        """The runs forked from this one (each with ``fork["run"]`` its id), oldest first: a listing of
        the store's runs (``run.json`` each, or the listing index), no data read."""
        if self.store is None:
            return []
        store = self.store
        found = [
            run
            for run_id, stamp in store.entries()
            if run_id != self.id
            and (run := load(store, run_id, stamp)) is not None
            and (ref := run.fork) is not None
            and ref["run"] == self.id
        ]
        return sorted(found, key=lambda r: r.created)

    @cached_property
    def config(self) -> dict[str, Any]:
        stored = self._stored_config()
        if stored is not None:
            return stored
        out: dict[str, Any] = {}
        for record in self._records.configs:
            out = merge(out, record.config)
        return out

    def _stored_config(self) -> dict[str, Any] | None:
        """The config as the writers stored it in their end records (``from_ends.config``): an object
        store's index entries hold them (no request); a folder's, two small files a process, not its
        records (what a sweep's dashboard reads of 1,000 runs)."""
        for processes_of in (lambda: self._listed, lambda: self.processes):  # the files only if needed
            ends = [p.end for p in processes_of()]
            if from_ends.every(ends, "config"):
                return from_ends.config(ends)
        return None

    @property
    def flat_config(self) -> dict[str, Any]:
        return flatten(self.config)

    def keys(self) -> list[str]:
        """Every metric key logged in this run, in first-seen order (worked out once per read of its
        records: a run of 10,000 keys is asked for them by every ``series`` call)."""
        return list(self._known())

    def _known(self) -> dict[str, None]:
        """The run's keys in first-seen order, as a dict (a set that keeps order), kept per records."""
        records = self._records
        if self._keys[0] is not records:
            seen: dict[str, None] = {}
            last: list[str] | None = None
            for block in records.blocks:
                if block.cols or (block.matrix_keys is not last and block.matrix_keys != last):  # once a list
                    seen.update(dict.fromkeys(block.keys()))
                    last = block.matrix_keys
            self._keys = (records, seen)
        return self._keys[1]

    def across(self, pattern: str | list[str]) -> Across:
        """The keys a glob names (``moe/layer*/expert*/load``), or the keys listed, as one matrix of key
        × step, with the band of their percentiles at each step (``reader.across``)."""
        return across(self._records.blocks, self.keys(), pattern)

    def across_fitted(self, pattern: str | list[str], width: int, lines: int) -> Fitted:
        """What a screen draws of those keys: the band thinned to ``width`` and the heatmap in ``width``
        × ``lines`` cells, reduced as the blocks are read (``reader.across.fit``: never the whole
        matrix at once)."""
        return fit(self._records.blocks, self.keys(), pattern, width, lines)

    def series(self, key: str, strict: bool = True) -> Series:
        """All visible points of one metric (numeric keys come back as a float or int array). ``key``
        may be spelled as another framework spells it (``eval/loss`` reads a Trainer run's
        ``eval_loss``: ``metric_keys.spellings``). A key an ended run never logged is an
        ``UnknownName`` naming its closest keys (a running run may log it yet: an empty series); with
        ``strict=False`` an empty series (what an overlay of several runs wants of the runs without
        it)."""
        blocks = self._records.blocks
        logged = self._known()
        found = metric_key(logged.__contains__, key)
        if found is None and strict and self.state != State.RUNNING:
            stored = self.stored_aggregates() or {}  # logged, but its records are damaged or gone
            if metric_key(stored.__contains__, key) is None:
                raise unknown("metric", key, list(logged) or list(stored))
        return series(blocks, found or key)

    def process_series(self, key: str) -> dict[str, Series]:
        """One metric per writing process (``<host>-<pid>-<start ms>``, as ``meta["processes"]`` names
        them), visible points only: together they are ``series(key)``, told apart by who logged them
        (ranks that log their own values, the attempts of a resumed run)."""
        with self._lock:
            self._records  # noqa: B018 - loads the data, which fills the per-process blocks
            blocks = dict(self._process_blocks)
        out = {name: series(b, key) for name, b in blocks.items()}
        return {name: s for name, s in out.items() if len(s)}

    # -- system metrics, per node ----------------------------------------------------------------
    def _system(self) -> dict[str, list[codec.Block]]:
        self._records  # noqa: B018 - loads the data, which fills the per-node system blocks
        return {node: blocks for node, blocks in self._system_blocks.items() if blocks}

    @property
    def nodes(self) -> list[str]:
        """Nodes that recorded system metrics (``node<rank>:<host>``)."""
        return sorted(self._system())

    def system_keys(self) -> list[str]:
        """Every system metric key (``gpu.*``, ``cpu.*``, ``mem.*``, ``disk.*``, ``net.*``, ``proc.*``)."""
        seen: dict[str, None] = {}
        for blocks in self._system().values():
            for block in blocks:
                seen.update(dict.fromkeys(block.keys()))
        return sorted(seen)

    def system_samples(self) -> dict[str, int]:
        """How many samples each node recorded: what a follower of a live run compares to tell that
        its system metrics grew, without reading a series."""
        return {node: sum(len(b.steps) for b in blocks) for node, blocks in self._system().items()}

    def system_series(self, key: str) -> dict[str, Series]:
        """One system metric per node."""
        out = {node: series(blocks, key) for node, blocks in self._system().items()}
        return {node: s for node, s in out.items() if len(s)}

    def system_summary(self) -> dict[str, dict[str, Any]]:
        """The last value of every system metric, per node."""
        return {
            node: {key: py(s.values[-1]) for key in self.system_keys() if len(s := series(blocks, key))}
            for node, blocks in sorted(self._system().items())
        }

    def system_rows(self) -> Iterator[dict[str, Any]]:
        """One dict per system sample (``node``, ``step``, ``time`` and the values), in time order."""
        out = [
            {"node": node, **row}
            for node, blocks in self._system().items()
            for b in blocks
            for row in b.rows()
        ]
        out.sort(key=lambda r: r["time"])
        return iter(out)

    # -- rows --------------------------------------------------------------------------------------
    def rows(self) -> Iterator[dict[str, Any]]:
        """One dict per visible logged row (``step``, ``time`` and its values), in logging order."""
        out: list[dict[str, Any]] = []
        for block in self._records.blocks:
            out.extend(block.rows())
        out.sort(key=lambda r: r["time"])
        return iter(out)

    def history(self, keys: Sequence[str] | None = None) -> Any:
        """The visible rows as a pandas DataFrame (columns ``step``, ``time`` and the metrics)."""
        try:
            import pandas as pd
        except ImportError:
            raise ImportError("Run.history() needs pandas: pip install 'tunetrack[pandas]'") from None
        frame = pd.DataFrame.from_records(list(self.rows()))
        if frame.empty:
            return pd.DataFrame(columns=["step", "time", *(keys or [])])
        if keys is not None:
            frame = frame[["step", "time", *[k for k in keys if k in frame.columns]]]
        return frame

    def latest(self) -> dict[str, Any]:
        """``{"step", "values"}``: the last step and each key's last value, from the end record of a
        finished primary process (no data read: what run listings use), else from the data."""
        lasts = [(p.end.get("last") if p.end else None) or p.last for p in self._listed if p.primary]
        evaluated = [p.end for p in self._listed if p.evaluates]
        stored = from_ends.latest(
            lasts, attempts_listed=self.folder.summary() is not None, evaluated=evaluated
        )
        if stored is not None and self.fork is None:  # a fork's end records miss what it inherited
            return stored
        return {"step": self.last_step, "values": {k: s["last"] for k, s in self.summary().items()}}

    @property
    def last_step(self) -> int | None:
        return visible_last_step(self._records.blocks)

    def aggregates(self) -> dict[str, Agg | None]:
        """Each key's aggregates over its visible points (``tunetrack.aggregates``: count, last value,
        min and max and their steps; None for a key logged only as None).

        Taken from the processes' end records, where the writer stored them at finish, when every
        process of the run ended with them and none rewound (no data read: what listings of 10,000
        runs use); otherwise (a run still running, crashed, written by an older version, or rewound,
        where what was stored still counts the superseded rows) computed from the data. Edits (name,
        tags, notes) never touch metrics, so they never make the stored aggregates stale; a resumed
        run adds a process, whose end record brings its own, merged here."""
        stored = self.stored_aggregates()
        if stored is not None:
            return stored
        return {key: aggregate(self.series(key)) for key in self.keys()}

    def stored_aggregates(self) -> dict[str, Agg | None] | None:
        """The aggregates the writers stored, merged over the processes, when readers can trust
        them (``from_ends.aggregates_of``); else None (a fork's: they miss what it inherited). Reads
        no data."""
        return None if self.fork is not None else from_ends.aggregates_of([p.end for p in self._listed])

    def summary(self, best: Mapping[str, bool] | None = None) -> dict[str, dict[str, Any]]:
        """Per key (``aggregates.SUMMARY_FIELDS``): the last value, min and max over finite numbers,
        the best value and the step of its first occurrence, the step of the last value and how many
        points hold a value (a step where the key was logged as None is no point, as on the charts:
        an eval loss logged every 100 steps counts its evaluations).

        Best is the min for losses, perplexities and errors (``metric_keys.minimized``), else the
        max; ``best`` overrides that per key (``{"reward": False}``: higher is better), as the
        readers' ``--best KEY:max`` does."""
        lower = spelled(best)
        aggs = self.aggregates()
        out = {key: aggregates.summary(agg, lower.get(key, minimized(key))) for key, agg in aggs.items()}
        counters = self.counters()
        if counters:
            step = max((a[aggregates.STEP] for a in aggs.values() if a is not None), default=None)
            for name, count in counters.items():  # what could not be kept (or sent), by the metrics
                if name == "dropped_rows" or name.startswith("backend_missed/"):
                    row = {"last": count, "min": count, "max": count, "best": count, "best_step": step}
                    out[f"tunetrack/{name}"] = {**row, "step": step, "count": 1}
        return out

    def counters(self) -> dict[str, int]:
        """What was logged but not kept, summed over the processes' end records (a process still
        running has reported nothing yet): ``dropped_rows`` (the writer could not keep up),
        ``dropped_values`` (of a type the store does not keep), ``lost_rows`` (the store could not
        write them), ``late_rows`` (logged after ``finish()``) and ``backend_missed/<name>`` (rows a
        backend did not take). Counts of zero are left out. From the processes as listings see them
        (an object store's index entries hold the end records: no request per run)."""
        out: dict[str, int] = {}
        for p in self._listed:
            end = p.end or EndRecord(state="")
            counts: list[tuple[str, Any]] = list((end.get("counters") or {}).items())
            counts += [
                (f"backend_missed/{b}", (s or {}).get("missed_rows"))
                for b, s in (end.get("backends") or {}).items()
            ]
            for name, count in counts:
                if count:
                    out[name] = out.get(name, 0) + int(count)
        return out

    # -- samples -------------------------------------------------------------------------------------
    def sample_tables(self, key: str | None = None, step: int | None = None) -> list[SampleTable]:
        """The tables of samples (``Tracker.log_table`` and ``log_text``), in time order, of ``key`` and
        at ``step`` if given. Cheap: a table's rows are decoded when asked for."""
        records = self._records
        tables = [SampleTable(t.key, t.step, t.time, t.count, record=t) for t in records.tables]
        tables += [t for e in records.events if (t := from_event(e.kind, e.step, e.time, e.data)) is not None]
        tables.sort(key=lambda t: t.time)
        return [t for t in tables if (key is None or t.key == key) and (step is None or t.step == step)]

    def sample_index(self) -> dict[str, dict[int, int]]:
        """``{key: {step: rows}}`` of every table of samples, without decoding any."""
        out: dict[str, dict[int, int]] = {}
        for table in self.sample_tables():
            steps = out.setdefault(table.key, {})
            steps[table.step] = steps.get(table.step, 0) + table.count
        return out

    def samples(self, key: str | None = None, step: int | None = None) -> list[dict[str, Any]]:
        """The rows of the tables of samples, each ``{"key", "step", "time", "index", "row"}`` (``row``:
        the table's own columns; ``index``: the row's place in its table), in logging order."""
        return [sample for table in self.sample_tables(key, step) for sample in table.samples()]

    def texts(self, key: str | None = None) -> list[dict[str, Any]]:
        """Tables of samples as ``log_text`` events read: ``{"kind": "text", "step", "time", "key",
        "rows": [...]}`` in time order (``samples()`` gives them row by row)."""
        return [
            {"kind": "text", "key": t.key, "step": t.step, "time": t.time, "rows": t.rows()}
            for t in self.sample_tables(key)
        ]

    @property
    def rewinds(self) -> int:
        """How many rewinds (resumes from a checkpoint) the run had: a reader that holds points of a
        series from before the last one holds points that are now hidden."""
        return sum(e.kind == "rewind" for e in self._records.events)

    def events(self, histograms: bool = False) -> list[dict[str, Any]]:
        """Events (checkpoints, evaluations, rewinds, health warnings) in time order; the histograms
        logged (``tunetrack.Histogram``, one event per key and step) only with ``histograms``: they are
        data, read with ``histograms()``."""
        return [
            {**e.data, "kind": e.kind, "step": e.step, "time": e.time}
            for e in self._records.events
            if histograms or e.kind != HISTOGRAM
        ]

    def histograms(self, key: str | None = None) -> dict[str, list[Logged]]:
        """The histograms logged (``tunetrack.Histogram``), per key, in time order (of ``key`` alone if
        given); a step rewound past is gone, as its rows are."""
        return logged(self.events(histograms=True), key)

    def histogram_keys(self) -> list[str]:
        """The keys histograms were logged under, in first-logged order (their data is not decoded)."""
        keys = (e.data.get("key") for e in self._records.events if e.kind == HISTOGRAM)
        return list(dict.fromkeys(str(k) for k in keys))

    def distribution(self, key: str, bins: int = BINS) -> OverSteps:
        """One key's histograms over the steps on ``bins`` common bins: a heatmap (step × bin) or a
        ridgeline. A key with no histogram is an ``UnknownName`` naming the keys that have some."""
        found = self.histograms(key).get(key)
        if not found:
            raise unknown("histogram", key, self.histogram_keys())
        return over_steps(found, key, bins)

    def checkpoints(self) -> list[Checkpoint]:
        """Its checkpoints in the order saved (``reader.checkpoints``), their files and metrics as
        recorded: no checkpoint file is opened. A fork's are those it saved itself: the ones up to
        its branch step are its parent's (``parent().checkpoints()``)."""
        found = checkpoints(self.id, self.events())
        fork = self.fork
        return found if fork is None else [c for c in found if c.step > fork["step"]]

    def read_media(self, rel: str) -> bytes | None:
        """A media file stored with the run (an image's ``path``), or None."""
        return self.folder.read_media(rel)

    # -- the console ---------------------------------------------------------------------------------
    def console(
        self,
        rank: int | None = None,
        since: float | None = None,
        grep: str | None = None,
        tail: int | None = None,
    ) -> list[Line]:
        """What the run's processes printed (``reader.console_log.Line``: time, stream, text, host, rank),
        in time order: the lines of one global ``rank``, printed at or after ``since`` (unix time),
        matching the regular expression ``grep``, the last ``tail`` of them. The last lines alone
        are read from the end of each process's console, the rest once and then as it grows."""
        if tail is not None and since is None and grep is None:
            per_process = [console.last_lines(self.folder, p) for p in self.processes]
            return console.select(console.merged(per_process), rank, tail=tail)
        return console.select(self.console_after({})[0], rank, since, grep, tail)

    def console_after(self, marks: dict[str, int]) -> tuple[list[Line], dict[str, int]]:
        """The lines each process printed after the first ``marks[process]`` of its own (what a reader
        following the run has shown), in time order, and the marks to pass next time."""
        with self._lock:
            per_process = []
            for proc in self.processes:
                known = self._console[proc.name] = console.read_console(
                    self.folder, proc, self._console.get(proc.name)
                )
                per_process.append(known.lines[marks.get(proc.name, 0) :])
            counts = {name: len(known.lines) for name, known in self._console.items()}
        return console.merged(per_process), counts

    @cached_property
    def _failed(self) -> Failure | None:
        if self.state in (State.FINISHED, State.RUNNING, State.STOPPED):
            return None
        found = console.failure(self.folder, self.processes)
        if found is None and self.error:  # no console (console=False), or it shows nothing known
            lines = self.error.splitlines()
            hit = failures.find(lines)
            if hit is not None:
                primary = latest_primary(self._listed)
                rank = primary.rank if primary is not None else 0
                found = Failure(hit.name, rank, failures.cause_line(lines, hit))
        return found

    @property
    def failure(self) -> str | None:
        """The known failure (``tunetrack.failures``) a run that did not finish ended in, and where:
        ``CUDA out of memory on rank 3``, from its last console lines, else its traceback; None for
        a finished or running run, or one that shows no known failure."""
        found = self._failed
        return str(found) if found is not None else None
