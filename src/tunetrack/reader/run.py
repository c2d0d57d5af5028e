"""The read API: find runs, and read one run's metadata, state, config, metrics and events.

Every process of a run wrote its own files; a ``Run`` merges them on read, derives the run's state
from the files alone (no server), and hides rows that a later rewind superseded.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from .. import config as _config
from ..errors import AmbiguousRun, RunNotFound
from ..store import layout
from .records import Block, ProcessRecords, decode_values, read_process

STATES = ("running", "finished", "failed", "killed", "crashed")


def stale_after() -> float:
    """Seconds without a heartbeat after which a run without an end record is ``crashed``."""
    try:
        return float(os.environ.get("TUNETRACK_STALE_AFTER", "60"))
    except ValueError:
        return 60.0


@dataclass
class Series:
    """One metric's visible points, in logging order."""

    steps: np.ndarray
    values: np.ndarray
    times: np.ndarray

    def __len__(self) -> int:
        return len(self.steps)


@dataclass
class _Process:
    name: str
    meta: dict[str, Any]
    end: dict[str, Any] | None
    data_path: Path

    @property
    def node(self) -> str:
        """``node<node rank>:<host>``: names a node's system metrics, also when nodes share a host."""
        rank = self.meta.get("rank") or {}
        return f"node{int(rank.get('node_rank', 0) or 0)}:{self.meta.get('host', '?')}"

    @property
    def start(self) -> float:
        return float(self.meta.get("start", 0.0))

    @property
    def primary(self) -> bool:
        rank = self.meta.get("rank") or {}
        return int(rank.get("rank", 0) or 0) == 0

    def heartbeat(self) -> float | None:
        try:
            return self.data_path.stat().st_mtime
        except OSError:
            return None

    def alive(self) -> bool:
        """False when this process certainly died (same host, pid gone) or went silent."""
        beat = self.heartbeat()
        if beat is None or time.time() - beat > stale_after():
            return False
        if self.meta.get("host") == socket.gethostname():
            try:
                os.kill(int(self.meta.get("pid", -1)), 0)
            except ProcessLookupError:
                return False
            except (PermissionError, ValueError, OverflowError):
                pass
        return True


class Run:
    """One run, read from its folder. Cheap to create: data files are read on first use.

    A long-lived reader (the dashboard) keeps one ``Run`` and calls ``refresh()`` when the files
    changed; one ``Run`` may be shared by threads."""

    def __init__(self, path: Path, run_json: dict[str, Any]) -> None:
        self.path = path
        self.id: str = str(run_json.get("id", path.name))
        self.name: str = str(run_json.get("name") or self.id)
        self.project: str | None = run_json.get("project")
        self.tags: list[str] = list(run_json.get("tags") or [])
        self.created: float = float(run_json.get("created", 0.0))
        self._run_json = run_json
        self._read: dict[Path, ProcessRecords] = {}  # each data file's records decoded so far
        self._lock = threading.RLock()
        self._merged: ProcessRecords | None = None

    def refresh(self) -> None:
        """Take in what was written since the last read: new processes, end records, appended records.
        Data files are read on from where the last read stopped, so following a live run costs what
        it appended, not its whole history."""
        with self._lock:
            self._merged = None
            for name in ("_processes", "_status", "config"):
                self.__dict__.pop(name, None)

    def __repr__(self) -> str:
        return f"Run(id={self.id!r}, name={self.name!r}, project={self.project!r}, state={self.state!r})"

    # -- processes and state -------------------------------------------------------------------
    @cached_property
    def _processes(self) -> list[_Process]:
        procs = []
        for meta_path in sorted(self.path.glob(f"*{layout.PROC_SUFFIX}")):
            name = meta_path.name[: -len(layout.PROC_SUFFIX)]
            if meta_path.name == layout.RUN_FILE or name.endswith(".end") or name.startswith("."):
                continue
            meta = layout.read_json(meta_path) or {}
            end = layout.read_json(self.path / f"{name}{layout.END_SUFFIX}")
            procs.append(_Process(name, meta, end, self.path / f"{name}{layout.DATA_SUFFIX}"))
        return sorted(procs, key=lambda p: p.start)

    def _latest_primary(self) -> _Process | None:
        primaries = [p for p in self._processes if p.primary] or self._processes
        return primaries[-1] if primaries else None

    @cached_property
    def _status(self) -> tuple[str, float | None, str | None]:
        latest = self._latest_primary()
        if latest is None:
            age = time.time() - self.created
            return ("running" if age < stale_after() else "crashed"), None, None
        if latest.end is not None:
            state = str(latest.end.get("state", "finished"))
            return state, latest.end.get("time"), latest.end.get("traceback")
        if latest.alive():
            return "running", None, None
        return "crashed", latest.heartbeat(), None

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
    def hosts(self) -> list[str]:
        return sorted({str(p.meta.get("host")) for p in self._processes if p.meta.get("host")})

    @property
    def meta(self) -> dict[str, Any]:
        """run.json plus every writing process's metadata and end record."""
        processes = [{**p.meta, "proc": p.name, "end": p.end} for p in self._processes]
        return {
            **self._run_json,
            "state": self.state,
            "ended": self.ended,
            "hosts": self.hosts,
            "processes": processes,
        }

    # -- records -------------------------------------------------------------------------------
    def _process_records(self, proc: _Process) -> ProcessRecords:
        """``proc``'s records: those read before, plus whatever its file gained since."""
        path, ended = proc.data_path, proc.end is not None or not proc.alive()
        known = self._read.get(path)
        try:
            size = path.stat().st_size
        except OSError:
            size = 0
        if known is None or size < known.offset:  # first read, or the file was replaced: from the start
            known = self._read[path] = read_process(path, ended)
        elif size > known.offset:
            known.extend(read_process(path, ended, known.offset))
        return known

    @property
    def _records(self) -> ProcessRecords:
        with self._lock:  # merged and stored under the lock: a refresh() meanwhile is never undone
            if self._merged is None:
                self._merged = self._merge()
            return self._merged

    def _merge(self) -> ProcessRecords:
        merged = ProcessRecords()
        self._system_blocks: dict[str, list[Block]] = {}
        for proc in self._processes:
            recs = self._process_records(proc)
            merged.blocks += recs.blocks
            self._system_blocks.setdefault(proc.node, []).extend(recs.system)
            merged.configs += recs.configs
            merged.events += recs.events
        rewinds = sorted((e["t"], e["step"]) for e in merged.events if e.get("kind") == "rewind")
        if rewinds:
            times = np.array([t for t, _ in rewinds])
            # cut[i]: the smallest rewind step among rewinds i.. (those later than a row at index i)
            cut = np.minimum.accumulate(np.array([s for _, s in rewinds] + [np.iinfo(np.int64).max])[::-1])[
                ::-1
            ]
            for block in merged.blocks:
                block.visible = block.steps <= cut[np.searchsorted(times, block.times, side="right")]
            merged.events = [
                e
                for e in merged.events
                if e.get("kind") == "rewind" or e["step"] <= cut[np.searchsorted(times, e["t"], side="right")]
            ]
        merged.events.sort(key=lambda e: e["t"])
        merged.configs.sort(key=lambda c: c[0])
        return merged

    @cached_property
    def config(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for _, cfg in self._records.configs:
            out = _config.merge(out, cfg)
        return out

    @property
    def flat_config(self) -> dict[str, Any]:
        return _config.flatten(self.config)

    def keys(self) -> list[str]:
        """Every metric key logged in this run, in first-seen order."""
        seen: dict[str, None] = {}
        for block in self._records.blocks:
            seen.update(dict.fromkeys(block.keys()))
        return list(seen)

    def series(self, key: str) -> Series:
        """All visible points of one metric (numeric keys come back as a float or int array)."""
        return _series(self._records.blocks, key)

    # -- system metrics, per node ----------------------------------------------------------------
    def _system(self) -> dict[str, list[Block]]:
        self._records  # noqa: B018 - loads the files, which fills the per-node system blocks
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

    def system_series(self, key: str) -> dict[str, Series]:
        """One system metric per node."""
        out = {node: _series(blocks, key) for node, blocks in self._system().items()}
        return {node: s for node, s in out.items() if len(s)}

    def system_summary(self) -> dict[str, dict[str, Any]]:
        """The last value of every system metric, per node."""
        return {
            node: {key: _py(s.values[-1]) for key in self.system_keys() if len(s := _series(blocks, key))}
            for node, blocks in sorted(self._system().items())
        }

    def system_rows(self) -> Iterator[dict[str, Any]]:
        """One dict per system sample (``node``, ``step``, ``time`` and the values), in time order."""
        out = [
            {"node": node, **row}
            for node, blocks in self._system().items()
            for b in blocks
            for row in _block_rows(b)
        ]
        out.sort(key=lambda r: r["time"])
        return iter(out)

    # -- rows --------------------------------------------------------------------------------------
    def rows(self) -> Iterator[dict[str, Any]]:
        """One dict per visible logged row (``step``, ``time`` and its values), in logging order."""
        out: list[dict[str, Any]] = []
        for block in self._records.blocks:
            out.extend(_block_rows(block))
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
        primaries = [p for p in self._processes if p.primary]
        # Only a run of one attempt: after a resume, the latest attempt's record misses the earlier ones.
        last = (primaries[0].end or {}).get("last") if len(primaries) == 1 else None
        if isinstance(last, dict) and last.get("step") is not None and "values" in last:
            return last
        return {"step": self.last_step, "values": {k: s["last"] for k, s in self.summary().items()}}

    @property
    def last_step(self) -> int | None:
        steps = [
            int(b.steps[b.visible].max() if b.visible is not None and b.visible.any() else b.steps.max())
            for b in self._records.blocks
            if b.steps.size and (b.visible is None or b.visible.any())
        ]
        return max(steps) if steps else None

    def summary(self) -> dict[str, dict[str, Any]]:
        """Per key: last value, min and max over finite numbers, count and the step of the last value."""
        out = {key: _summarize(self.series(key)) for key in self.keys()}
        dropped = sum(int((p.end or {}).get("counters", {}).get("dropped_rows", 0)) for p in self._processes)
        if dropped:
            out["tunetrack/dropped_rows"] = {
                "last": dropped,
                "min": dropped,
                "max": dropped,
                "step": self.last_step,
                "count": 1,
            }
        return out

    def texts(self, key: str | None = None) -> list[dict[str, Any]]:
        """Text samples (``Tracker.log_text``): ``{"step", "time", "key", "rows": [...]}`` in time order."""
        return [e for e in self.events() if e["kind"] == "text" and (key is None or e.get("key") == key)]

    @property
    def rewinds(self) -> int:
        """How many rewinds (resumes from a checkpoint) the run had: a reader that holds points of a
        series from before the last one holds points that are now hidden."""
        return sum(e.get("kind") == "rewind" for e in self._records.events)

    def events(self) -> list[dict[str, Any]]:
        """Events (checkpoints, evaluations, rewinds, health warnings) in time order."""
        return [
            {**(e.get("data") or {}), "kind": e["kind"], "step": e["step"], "time": e["t"]}
            for e in self._records.events
        ]


def _series(blocks: list[Block], key: str) -> Series:
    """Concatenate one key's visible points across blocks, in logging order."""
    parts = [c for b in blocks if (c := b.column(key)) is not None]
    if not parts:
        return Series(np.empty(0, np.int64), np.empty(0, np.float64), np.empty(0, np.float64))
    steps, times, values = (np.concatenate([p[i] for p in parts]) for i in range(3))
    if len(parts) > 1 and times.size > 1 and np.any(np.diff(times) < 0):
        order = np.argsort(times, kind="stable")
        steps, times, values = steps[order], times[order], values[order]
    return Series(steps, values, times)


def _py(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


def _summarize(series: Series) -> dict[str, Any]:
    values = series.values
    numeric = (
        values
        if values.dtype != object
        else np.array(
            [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)], dtype=np.float64
        )
    )
    finite = numeric[np.isfinite(numeric)] if numeric.dtype.kind in "fi" else numeric[:0]
    return {
        "last": _py(values[-1]) if len(values) else None,
        "min": _py(finite.min()) if finite.size else None,
        "max": _py(finite.max()) if finite.size else None,
        "step": int(series.steps[-1]) if len(series) else None,
        "count": len(series),
    }


def _block_rows(block: Block) -> list[dict[str, Any]]:
    rows = [{"step": int(s), "time": float(t)} for s, t in zip(block.steps, block.times)]
    if block.matrix_keys:
        matrix = np.frombuffer(block.matrix, dtype=np.float64).reshape(-1, len(block.matrix_keys)).tolist()
        for row, values in zip(rows, matrix):
            row.update(zip(block.matrix_keys, values))
    for key in block.cols:
        kind, data, idx = block.cols[key]
        positions = range(len(rows)) if idx is None else np.frombuffer(idx, dtype=np.uint32).tolist()
        for pos, value in zip(positions, decode_values_list(kind, data)):
            rows[pos][key] = value
    if block.visible is not None:
        rows = [r for r, keep in zip(rows, block.visible) if keep]
    return rows


def decode_values_list(kind: str, data: Any) -> list[Any]:
    return data if kind == "o" else decode_values(kind, data).tolist()


# -- finding runs ------------------------------------------------------------------------------
def _all_runs(root: Path) -> list[Run]:
    runs = []
    try:
        entries = list(os.scandir(root))
    except OSError:
        return []
    for entry in entries:
        if entry.is_dir() and (data := layout.read_json(Path(entry.path) / layout.RUN_FILE)) is not None:
            runs.append(Run(Path(entry.path), data))
    return runs


def list_runs(
    dir: str | os.PathLike[str] | None = None,
    project: str | None = None,
    state: str | None = None,
    tags: Sequence[str] | None = None,
) -> list[Run]:
    """Runs in the store, newest first, filtered by project, state and tags (all must match)."""
    runs = _all_runs(layout.resolve_root(dir))
    if project is not None:
        runs = [r for r in runs if r.project == project]
    if tags:
        runs = [r for r in runs if set(tags) <= set(r.tags)]
    if state is not None:
        runs = [r for r in runs if r.state == state]
    return sorted(runs, key=lambda r: r.created, reverse=True)


def open_run(ref: str, dir: str | os.PathLike[str] | None = None) -> Run:
    """A run by id, unique id prefix, or unique name."""
    root = layout.resolve_root(dir)
    if not ref:
        raise RunNotFound("an empty string names no run")
    exact = root / ref
    if ref and "/" not in ref and (data := layout.read_json(exact / layout.RUN_FILE)) is not None:
        return Run(exact, data)
    runs = _all_runs(root)
    for matches in ([r for r in runs if r.id.startswith(ref)], [r for r in runs if r.name == ref]):
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            names = ", ".join(f"{r.id} ({r.name})" for r in matches[:10])
            raise AmbiguousRun(f"{ref!r} matches {len(matches)} runs: {names}")
    raise RunNotFound(f"no run {ref!r} in {root}")


__all__ = ["STATES", "Run", "Series", "list_runs", "open_run"]
