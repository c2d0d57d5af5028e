"""Megatron-SWIFT: ``megatron sft ... --external_plugins <plugin> --callbacks tunetrack``.

ms-swift's Megatron trainer is not a ``transformers.Trainer``: its callbacks subclass
``swift.megatron.callbacks.MegatronCallback``, are built from ``megatron_callbacks_map[name](trainer)``
and get argument-less hooks; the step, the arguments and the checkpoint folder are read from the
trainer (``self.state.iteration``, ``self.args``). The trainer calls them in this order
(``BaseMegatronTrainer``): ``__init__`` after a checkpoint is loaded (``state.iteration`` is then the
step resumed from); ``on_train_begin``; per step ``on_step_begin``, ``on_step_end``, ``on_log(logs)``
on logging steps; on evaluation steps ``on_eval_begin``, ``on_eval_step`` per batch, ``on_log`` with
``eval_`` keys, ``on_eval_end``; on saving steps ``on_save(output_dir)``; at the end ``on_train_end``.

Every rank calls every hook, but only the last pipeline stage holds the loss, so the last rank
records, as ms-swift's own loggers do; it starts the job's one run. (Other nodes' system metrics are
not added to it: they would wait for rank 0 to publish the run.) The logic is the same as for the
Trainer callback: values translated as ``swift.translate`` does, argument groups as
``swift.argument_groups`` makes them, the automatic resume marker of ``support.resume``.

Importing this module imports ``swift.megatron.callbacks.base``, which needs Megatron-Core.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from swift.megatron.callbacks.base import MegatronCallback

from ..tracker import Tracker
from .support import resume as auto_resume
from .support.options import from_environment
from .swift import DEFAULT_PROJECT, NAME, argument_groups, translate


def register() -> None:
    """Put ``tunetrack`` in ms-swift's table of Megatron callbacks (``megatron sft --callbacks tunetrack``)."""
    from swift.megatron.callbacks import megatron_callbacks_map

    megatron_callbacks_map[NAME] = TunetrackMegatronCallback


def _is_last_rank() -> bool:
    """ms-swift's ``is_last_rank``, from the launcher's variables (a single process is the last)."""
    rank, world = os.environ.get("RANK", "0"), os.environ.get("WORLD_SIZE", "1")
    return not (rank.isdigit() and world.isdigit()) or int(rank) == int(world) - 1


class TunetrackMegatronCallback(MegatronCallback):
    """Records a Megatron-SWIFT training: its arguments, metrics, evaluations and checkpoints. Options
    come from ``TUNETRACK_*`` variables (``integrations.support.options``)."""

    def __init__(self, trainer: Any) -> None:
        super().__init__(trainer)
        self.options: dict[str, Any] = {"project": DEFAULT_PROJECT, **from_environment()}
        self.tracker: Tracker | None = None

    @property
    def _recording(self) -> bool:
        return self.tracker is not None and self.tracker.active

    def on_train_begin(self) -> None:
        if not _is_last_rank():
            return
        if self.tracker is not None:  # train() again in this process: a new run, as in a new process
            self.tracker.finish()
        step = int(getattr(self.state, "iteration", 0) or 0)
        options = dict(self.options)
        saved = self._recall() if step > 0 else None
        if saved is not None and "dir" not in options and saved.dir is not None:
            options["dir"] = saved.dir  # where the run is, whatever the working directory now is
        self.tracker = Tracker(
            **options,
            all_ranks=True,  # this process is the one that records, whatever its rank
            resume=saved.run_id if saved is not None else None,
            resume_step=step if saved is not None else None,
        ).start()
        if self._recording:
            if getattr(self.args, "output_dir", None):
                auto_resume.remember(self.args.output_dir, self.tracker)
            self.tracker.log_config(self._config())

    def _recall(self) -> auto_resume.Marker | None:
        """The run of the attempt this one resumes: its marker in ``output_dir``, else beside the
        checkpoint loaded (``--mcore_model``/``--mcore_adapter`` with ``--finetune false``)."""
        output_dir = getattr(self.args, "output_dir", None)
        saved = auto_resume.recall(output_dir) if output_dir else None
        for checkpoint in (
            getattr(self.args, "mcore_model", None),
            getattr(self.args, "mcore_adapter", None),
        ):
            if saved is None and checkpoint:
                saved = auto_resume.recall(Path(checkpoint).parent)
        return saved

    def _config(self) -> dict[str, Any]:
        config: dict[str, Any] = {"swift": argument_groups(self.args)}
        model_config = getattr(self.trainer, "config", None)  # Megatron-Core's TransformerConfig
        if model_config is not None:
            config["model_config"] = model_config
        return config

    def on_log(self, logs: dict[str, Any]) -> None:
        if self._recording and logs:
            assert self.tracker is not None
            self.tracker.log(translate(logs), step=self.state.iteration)

    def on_eval_end(self) -> None:
        if self._recording:
            assert self.tracker is not None
            self.tracker.event("evaluation", step=self.state.iteration)

    def on_save(self, output_dir: str | None = None) -> None:
        if self._recording:
            assert self.tracker is not None
            if output_dir:  # Megatron's folder: its files are listed and hashed off this thread
                self.tracker.log_checkpoint(output_dir, step=self.state.iteration)

    def on_train_end(self) -> None:
        """The run goes on to the end of the process (ms-swift saves the last state after this)."""
        if self._recording:
            assert self.tracker is not None
            self.tracker.flush()

    def finish(self, state: str | None = None) -> None:
        """End the run now (optional: process exit ends it too)."""
        if self.tracker is not None:
            self.tracker.finish(state)
