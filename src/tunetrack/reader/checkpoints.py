"""A run's checkpoints read back: each ``checkpoint`` event joined by its location with what was
learned later (``checkpoint_files``: its files, sizes and hashes; ``checkpoint_deleted``: rotation
removed it), as ``tracker.checkpoints`` records them. Nothing here opens a checkpoint's files.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from ..metric_keys import minimized, spellings
from ..values import is_number, missing_last


@dataclass
class Checkpoint:
    """One checkpoint of a run."""

    run: str
    step: int
    path: str
    #: ``adapter``, ``model``, ``state`` or ``files`` (``tracker.checkpoints.kind_of``); None if unknown
    kind: str | None
    time: float
    #: what was logged at its step (the evaluation that ran before the save included)
    metrics: dict[str, Any] = field(default_factory=dict)
    #: each file's ``name``, ``size`` and ``sha256`` (None: not hashed before the run ended); None
    #: while still being hashed, or for a checkpoint at a URL
    files: list[dict[str, Any]] | None = None
    bytes: int | None = None
    #: rotation (``save_total_limit``) or the user removed it after it was recorded
    deleted: bool = False

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def checkpoints(run_id: str, events: Iterable[Mapping[str, Any]]) -> list[Checkpoint]:
    """The checkpoints in a run's events (``Run.events``), in the order they were saved."""
    found: dict[str, Checkpoint] = {}
    for e in events:
        kind, path = e.get("kind"), e.get("path")
        if not isinstance(path, str):
            continue
        if kind == "checkpoint":
            metrics = e.get("metrics")
            found[path] = Checkpoint(
                run_id,
                int(e.get("step") or 0),
                path,
                e["type"] if isinstance(e.get("type"), str) else None,  # ``kind`` names the event
                float(e.get("time") or 0.0),
                dict(metrics) if isinstance(metrics, dict) else {},
            )
        elif kind == "checkpoint_files" and path in found:
            files = e.get("files")
            found[path].files = list(files) if isinstance(files, list) else None
            if found[path].kind is None and isinstance(e.get("type"), str):
                found[path].kind = e["type"]  # what its files say, where the caller did not
            found[path].bytes = e.get("bytes") if isinstance(e.get("bytes"), int) else None
        elif kind == "checkpoint_deleted" and path in found:
            found[path].deleted = True
    return list(found.values())


def score(checkpoint: Checkpoint, key: str) -> Any:
    """The checkpoint's value of ``key`` under whichever spelling it was logged (``eval/loss`` finds
    the Trainer's ``eval_loss``); None where it has none."""
    for name in spellings(key):  # the key itself first
        if is_number(value := checkpoint.metrics.get(name)):
            return value
    return None


def best(found: Sequence[Checkpoint], key: str, minimize: bool | None = None) -> Checkpoint | None:
    """The checkpoint with the lowest ``key`` (``minimize``; by default as ``metric_keys.minimized``
    says: losses lower) or the highest; deleted ones count (they were the best when saved); None
    where no checkpoint has the key."""
    scored = [c for c in found if score(c, key) is not None]
    if not scored:
        return None
    lower = minimized(key) if minimize is None else minimize
    return missing_last(scored, lambda c: score(c, key), descending=not lower)[0]


def metric_names(found: Iterable[Checkpoint]) -> list[str]:
    """Every metric some checkpoint has, for an error that says what ``--best`` could name."""
    return sorted({k for c in found for k in c.metrics})
