"""Automatic resume: a run's id kept beside the training's checkpoints, so that a training restarted
from them re-attaches to the same run (and rewinds it) without the user passing an id.

The marker is a small JSON file in the training's output folder, written when training begins (never
by an evaluation alone: a run started by ``evaluate()`` must not be resumed into). It also keeps the
store's folder, so a restart from another working directory still finds the run.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...jsonfile import read_json, write_json_atomic

MARKER = ".tunetrack_run"


@dataclass(frozen=True)
class Marker:
    run_id: str
    #: the store the run is in: an absolute path or a URL (None in markers that did not record it)
    dir: str | None


def remember(output_dir: str | os.PathLike[str], tracker: Any) -> None:
    """Keep ``tracker``'s run id in ``output_dir``. Best effort: the run is recorded anyway, only an
    automatic resume needs this file."""
    if tracker.id is None or tracker.run_dir is None:
        return
    run_dir = tracker.run_dir
    store = run_dir.rsplit("/", 1)[0] if isinstance(run_dir, str) else str(Path(run_dir).parent.resolve())
    try:
        path = Path(output_dir) / MARKER
        path.parent.mkdir(parents=True, exist_ok=True)
        write_json_atomic(path, {"id": tracker.id, "dir": store})
    except OSError:
        pass


def recall(output_dir: str | os.PathLike[str]) -> Marker | None:
    """The run a training writing to ``output_dir`` recorded, if it left a marker there."""
    data = read_json(Path(output_dir) / MARKER) or {}
    run_id, root = data.get("id"), data.get("dir")
    if not isinstance(run_id, str):
        return None
    return Marker(run_id, root if isinstance(root, str) else None)
