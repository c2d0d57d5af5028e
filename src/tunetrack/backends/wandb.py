"""Weights & Biases (online, or offline run files for ``wandb sync``), mirrored from a run:
``Tracker(backends=["wandb"])``, or ``WandbBackend(project=..., mode="offline")``.

The backend opens a run object of its own (``reinit="create_new"``) and never touches ``wandb.run``,
so a W&B run the script started itself is left alone. The W&B run's id is the tunetrack run's id:
a resumed run, another attempt or a replay continues the same W&B run (``resume="allow"``). W&B samples
the machine itself (its system monitor runs in its own service process), so tunetrack's system
metrics are not sent again. Needs ``pip install 'tunetrack[wandb]'``, imported when the run starts.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .._warnings import warn_once
from ..histograms import HISTOGRAM
from ..states import State
from .base import Row, RunInfo

_EXIT_CODES: dict[str, int] = {
    State.FINISHED: 0,
    State.FAILED: 1,
    State.KILLED: 143,
}  # 143: 128 + SIGTERM, what W&B shows as killed


def wandb_id(run_id: str) -> str:
    """A tunetrack run id as a W&B run id (letters, digits, ``-`` and ``_``)."""
    return re.sub(r"[^A-Za-z0-9_-]", "-", run_id)


class WandbBackend:
    name = "wandb"

    def __init__(
        self,
        project: str | None = None,
        entity: str | None = None,
        mode: str | None = None,
        dir: str | os.PathLike[str] | None = None,
    ) -> None:
        """Each argument left out is W&B's own setting: ``WANDB_PROJECT`` (then the run's project),
        ``WANDB_ENTITY``, ``WANDB_MODE``, ``WANDB_DIR``; credentials are W&B's (``wandb login``,
        ``WANDB_API_KEY``) and never stored in the run."""
        self.project, self.entity, self.mode, self.dir = project, entity, mode, dir
        self._run: Any = None
        self._info: RunInfo | None = None
        self._step = -1  # the last step sent: W&B's steps only go forward
        self._events: list[dict[str, Any]] = []  # text and images waiting for the rows before them

    def start(self, run: RunInfo) -> None:
        try:
            import wandb
        except ImportError:
            raise ImportError("the wandb backend needs wandb: pip install 'tunetrack[wandb]'") from None
        self._info = run
        self._run = wandb.init(
            project=self.project or os.environ.get("WANDB_PROJECT") or run.project or "tunetrack",
            entity=self.entity,
            mode=self.mode,
            dir=str(self.dir) if self.dir is not None else None,
            id=wandb_id(run.id),
            name=run.name,
            tags=list(run.tags) or None,
            resume="allow",
            reinit="create_new",
            settings=wandb.Settings(silent=True, console="off"),
        )
        # resumed online, W&B says where the run is; offline it cannot know (0)
        self._step = max(int(getattr(self._run, "step", 0) or 0) - 1, -1)

    def log_config(self, config: dict[str, Any]) -> None:
        self._run.config.update(config, allow_val_change=True)

    def log(self, rows: Sequence[Row]) -> None:
        for step, _, values in rows:
            self._release(before=step)
            numbers = {k: v for k, v in values.items() if isinstance(v, (int, float))}
            if not numbers:
                continue
            if step < self._step:  # after a rewind: W&B would drop these (and warn every time)
                warn_once(
                    f"wandb-rewind:{self._info.id if self._info else ''}",
                    "W&B's steps only go forward: the steps logged again after the rewind are not sent to "
                    "W&B (the local run has them)",
                )
                continue
            self._step = step
            self._run.log(numbers, step=step)

    def log_event(self, event: dict[str, Any]) -> None:
        """Text samples as a ``wandb.Table`` (one row per sample, columns from its fields); images as
        ``wandb.Image``; histograms (``tunetrack.Histogram``) as ``wandb.Histogram``, their bins and
        counts as they are. An event can reach the backend before the rows logged just before it: it is
        held until the rows pass its step, then logged at its step (or at W&B's current step if the
        rows are already past it), so neither the event nor a row is dropped."""
        if event.get("kind") in ("text", "image", HISTOGRAM):
            self._events.append(event)
        elif event.get("kind") == "checkpoint":
            self._checkpoint(event)

    def _checkpoint(self, event: dict[str, Any]) -> None:
        """A checkpoint as a version of the run's ``checkpoint-<run id>`` model artifact (W&B's own
        Trainer integration names it so), holding references to its files: W&B records where they are
        and never uploads them (``checksum=False``: it lists them, never reads them); aliased
        ``step-<N>``, the metrics at its step as metadata. W&B refuses a reference to a local folder
        that is gone: one rotation removed before this backend got to it is said once and passed by."""
        import wandb

        path = str(event.get("path"))
        if "://" not in path and not Path(path).exists():
            warn_once(
                f"wandb-checkpoint-gone:{path}",
                f"checkpoint {path} was removed before W&B was told of it: W&B has no reference to it "
                "(the local run has it)",
            )
            return
        uri = path if "://" in path else Path(path).absolute().as_uri()
        step = int(event.get("step") or 0)
        art = wandb.Artifact(
            f"checkpoint-{self._run.id}",
            type="model",
            metadata={"step": step, "kind": event.get("type"), "metrics": event.get("metrics") or {}},
        )
        art.add_reference(uri, name=Path(path).name or "checkpoint", checksum=False)
        self._run.log_artifact(art, aliases=[f"step-{step}", "latest"])

    def _release(self, before: int | None = None) -> None:
        import wandb

        while self._events and (before is None or int(self._events[0].get("step") or 0) < before):
            event = self._events.pop(0)
            kind, key = event["kind"], str(event.get("key") or event["kind"])
            step = max(int(event.get("step") or 0), self._step)
            if kind == "text":
                samples = [r if isinstance(r, dict) else {"text": str(r)} for r in event.get("rows") or []]
                columns = list(dict.fromkeys(k for r in samples for k in r))
                self._run.log(
                    {key: wandb.Table(columns=columns, data=[[r.get(c) for c in columns] for r in samples])},
                    step=step,
                )
            elif kind == HISTOGRAM:
                drawn = (event.get("counts") or [], event.get("edges") or [])
                self._run.log({key: wandb.Histogram(np_histogram=drawn)}, step=step)
            elif self._info is not None and isinstance(self._info.dir, Path):
                path = self._info.dir / str(event.get("path"))
                if path.is_file():
                    self._run.log({key: wandb.Image(str(path))}, step=step)
            self._step = step

    def finish(self, state: str) -> None:
        """Finished: exit code 0; failed: 1; killed: 143. A run whose process died (crashed) is marked
        crashed by W&B itself once its heartbeats stop (online)."""
        if self._run is not None:
            self._release()
            self._run.finish(exit_code=_EXIT_CODES.get(state, 1))
