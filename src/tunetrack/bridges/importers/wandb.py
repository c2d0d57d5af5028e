"""W&B run folders on disk: ``tunetrack import wandb PATH``.

PATH is a ``wandb/`` folder, a run folder (``offline-run-*`` from offline mode, ``run-*`` from online
runs) or a ``run-<id>.wandb`` file. Each run file is read with W&B's own reader (``wandb leet inspect
--json``, W&B 0.31 or later), so no W&B server or login is needed. Imported: the run's config, every
history row with its step and ``_timestamp`` (scalars, and ``wandb.Histogram`` values, W&B's
``wandb.watch``'s gradients included, as ``tunetrack.Histogram``s; tables, images and W&B's own ``_*``
keys are left out), W&B's system metrics (its ``stats`` records) as the run's system metrics, tags, name,
project, and the state from the exit code (0: finished; 130, 137, 143: killed; other: failed; no exit
record: crashed once the file has been silent past tunetrack's staleness limit, else the run is still
going and is left for a later import). A resumed W&B run writes one folder per attempt: each becomes
its own tunetrack run.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from datetime import datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from ...backends.base import Row
from ...histograms import HISTOGRAM, Histogram
from ...states import State
from .source import Imported, SourceError, SourceRun, number, scalars, settled

_NON_FINITE = ("NaN", "Infinity", "-Infinity")
_KILLED = {130, 137, 143, -2, -9, -15}  # 128 + SIGINT, SIGKILL, SIGTERM (and the signals themselves)


def runs(path: str) -> Iterator[SourceRun | Imported]:
    _require_wandb()
    root = Path(path)
    if not root.exists():
        raise SourceError(f"no such file or folder: {path}")
    files = (
        [root]
        if root.is_file()
        else sorted(
            file
            for file in root.rglob("run-*.wandb")
            if file.parent.name.startswith(("offline-run-", "run-")) or file.parent == root
        )
    )
    if not files:
        raise SourceError(f"no W&B run files (run-*.wandb) under {path}")
    for file in files:
        yield _run(file)


def _require_wandb() -> None:
    try:
        version = metadata.version("wandb")
    except metadata.PackageNotFoundError:
        raise ImportError("importing W&B runs needs wandb: pip install 'tunetrack[wandb]'") from None
    major, minor = (int(part) for part in version.split(".")[:2])
    if (major, minor) < (0, 31):
        raise ImportError(
            f"importing W&B runs needs wandb 0.31 or later (its run-file reader); this is {version}"
        )


def _records(file: Path) -> Iterator[dict[str, Any]]:
    """The file's records as W&B's reader prints them (one JSON object per line)."""
    command = [sys.executable, "-m", "wandb", "leet", "inspect", "--json", str(file)]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith("{"):
                yield json.loads(line)
        error = proc.stderr.read() if proc.stderr is not None else ""
    if proc.returncode:
        raise SourceError(f"W&B cannot read {file}: {error.strip() or f'exit code {proc.returncode}'}")


def _special(value: Any) -> Any:
    """NaN and the infinities, which W&B's reader prints as strings (JSON has no spelling for them)."""
    return float(value) if value in _NON_FINITE else value


def _histograms(item: dict[str, Any]) -> tuple[dict[str, Any], list[tuple[str, Histogram]]]:
    """A history item without its histograms, and them. W&B's reader flattens a histogram
    (``wandb.Histogram``, and ``wandb.watch``'s gradients and parameters) into ``KEY._type``
    (``"histogram"``), ``KEY.values`` (the counts) and ``KEY.bins`` (the edges)."""
    keys = [k[: -len("._type")] for k, v in item.items() if k.endswith("._type") and v == HISTOGRAM]
    if not keys:
        return item, []
    found = []
    for key in keys:
        parts = {k[len(key) + 1 :]: item.pop(k) for k in [k for k in item if k.startswith(f"{key}.")]}
        try:
            found.append((key, Histogram(counts=parts.get("values") or [], edges=parts.get("bins") or [])))
        except ValueError:  # a histogram W&B wrote in a shape this does not know: left out, as tables are
            continue
    return item, found


def _time(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


def _run(file: Path) -> SourceRun | Imported:
    info: dict[str, Any] = {}
    config: dict[str, Any] = {}
    rows: list[Row] = []
    system: list[Row] = []
    events: list[tuple[str, int, float, dict[str, Any]]] = []
    exit_code: int | None = None
    step = 0
    for record in _records(file):
        kind = record.get("type")
        body = record.get(kind, {}) if isinstance(kind, str) else {}
        if kind == "run":
            info = body
            config.update((body.get("config") or {}).get("update") or {})
        elif kind == "config":
            config.update(body.get("update") or {})
        elif kind == "history":
            item = body.get("item") or {}
            step = int((body.get("step") or {}).get("num", item.get("_step", step)) or 0)
            when = float(item.get("_timestamp") or 0.0)
            item, found = _histograms(item)
            events.extend((HISTOGRAM, step, when, h.data(key)) for key, h in found)
            values = scalars({k: _special(v) for k, v in item.items() if not k.startswith("_")})
            if values:
                rows.append((step, when, values))
        elif kind == "stats" and body.get("timestamp"):
            values = {
                k: number(v) for k, v in (body.get("item") or {}).items() if isinstance(v, (int, float))
            }
            if values:
                system.append((step, _time(body["timestamp"]), values))
        elif kind == "exit":
            exit_code = int(body.get("exit_code") or 0)
    config.pop("_wandb", None)
    name = str(info.get("display_name") or info.get("run_id") or file.stem)
    last = max([file.stat().st_mtime] + [r[1] for r in rows[-1:]])
    if exit_code is None:
        if not settled(last):
            return Imported("", name, "wandb", "skipped: still running; import it once it ends")
        state = State.CRASHED
    else:
        state = State.FINISHED if exit_code == 0 else State.KILLED if exit_code in _KILLED else State.FAILED
    created = _time(info["start_time"]) if info.get("start_time") else (rows[0][1] if rows else last)
    return SourceRun(
        key=f"wandb:{file.parent.name}/{file.name}",
        name=name,
        created=created,
        rows=lambda: rows,
        project=info.get("project") or None,
        config=config,
        tags=[str(tag) for tag in info.get("tags") or []],
        state=state,
        ended=rows[-1][1] if rows else created,
        error=f"exit code {exit_code}" if state == State.FAILED else None,
        system=lambda: system,
        events=lambda: events,
        host=info.get("host") or None,
        origin={"from": "wandb", "path": str(file.resolve()), "run_id": info.get("run_id")},
    )
