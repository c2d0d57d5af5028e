"""Hugging Face Transformers (and TRL, and LLaMA Factory) through a ``TrainerCallback``.

``Trainer(..., callbacks=[TunetrackCallback(project="my-project")])``. The callback is thin: it maps
Trainer events onto the core ``Tracker``. What it must get right is the Trainer's event flow:

- ``on_log`` fires on every rank with the same (already reduced) values: only world rank 0 records;
- ``evaluate()`` and ``predict()`` usually come after ``on_train_end``, so the run is not ended there
  (the run ends at ``finish()``, at process exit, or failed/killed as the core decides);
- ``predict()`` never fires ``on_log``, so ``on_predict`` records its metrics;
- a resumed ``train(resume_from_checkpoint=...)`` restores ``state.global_step`` before
  ``on_train_begin``: the run id kept in ``output_dir`` re-attaches, and the tracker rewinds;
- in a hyperparameter search the same callback serves every trial: one run per trial.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from ..derived import Throughput
from ..health import GRAD_KEYS, LOSS_KEYS, is_bad
from ..store.layout import write_json_atomic
from ..tracker import Tracker

RUN_FILE = ".tunetrack_run"


class TunetrackCallback(TrainerCallback):
    """Records a Trainer's hyperparameters, metrics, evaluations, predictions and checkpoints."""

    def __init__(
        self,
        project: str | None = None,
        name: str | None = None,
        dir: str | None = None,
        tags: list[str] | None = None,
        config: Any = None,
        resume: str = "auto",
        on_nan: str = "warn",
        **tracker_kwargs: Any,
    ) -> None:
        if on_nan not in ("warn", "stop"):
            raise ValueError(f"on_nan must be 'warn' or 'stop', not {on_nan!r}")
        self.on_nan = on_nan
        self.project, self.name, self.dir, self.tags = project, name, dir, list(tags or [])
        self.extra_config = config
        self.resume = resume
        self.tracker_kwargs = tracker_kwargs
        self.tracker: Tracker | None = None
        self._trial: str | None = None
        self._throughput: Throughput | None = None
        self._completions = CompletionFiles()

    # -- run lifecycle ---------------------------------------------------------------------------
    def on_train_begin(self, args: Any, state: Any, control: Any, model: Any = None, **kwargs: Any) -> None:
        if state.is_hyper_param_search:
            self._start_trial(args, state)
        elif self.tracker is None or not self.tracker.active:
            self._start(args, state)
        elif state.global_step > 0:  # train() again on the same Trainer, from a checkpoint
            self.tracker.rewind(state.global_step)
        if self.tracker is not None and self.tracker.active:
            self.tracker.log_config(self._config(args, model))
            self._throughput = Throughput(
                samples_per_step=args.per_device_train_batch_size
                * args.gradient_accumulation_steps
                * args.world_size,
                gpu_name=_gpu_name(),
                num_gpus=args.world_size,
            )

    def _start(self, args: Any, state: Any, name: str | None = None, tags: list[str] | None = None) -> None:
        run_file = Path(args.output_dir) / RUN_FILE
        resume_id, resume_step = None, None
        if self.resume == "auto" and state.global_step > 0 and not state.is_hyper_param_search:
            saved = _read(run_file)
            if saved.get("id"):
                resume_id, resume_step = saved["id"], state.global_step
        self.tracker = Tracker(
            project=self.project,
            name=name or self.name or _run_name(args),
            dir=self.dir,
            tags=tags or self.tags,
            config=self.extra_config,
            resume=resume_id,
            resume_step=resume_step,
            **self.tracker_kwargs,
        ).start()
        root = self.tracker.run_dir.parent if self.tracker.run_dir is not None else None
        if root is not None and state.is_world_process_zero and not state.is_hyper_param_search:
            try:
                run_file.parent.mkdir(parents=True, exist_ok=True)
                write_json_atomic(run_file, {"id": self.tracker.id, "dir": str(root)})
            except OSError:
                pass  # the run is recorded anyway; only automatic resume needs this file

    def _start_trial(self, args: Any, state: Any) -> None:
        if self.tracker is not None:
            self.tracker.finish()
        params = dict(state.trial_params or {})
        self._trial = state.trial_name or "trial"
        base = self.name or _run_name(args)
        tags = [*self.tags, *(f"{k}={v}" for k, v in sorted(params.items()))]
        self._start(args, state, name=f"{base}-{self._trial}", tags=tags)
        if self.tracker is not None:
            self.tracker.log_config({"trial": {"name": self._trial, "params": params}})

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.tracker is None:
            return
        if getattr(args, "log_completions", False) and state.is_world_process_zero:
            self._completions.collect(Path(args.output_dir) / "completions", self.tracker)
        if state.is_hyper_param_search and state.global_step < state.max_steps:
            # Optuna calls on_train_end for a pruned trial just before raising TrialPruned.
            self.tracker.event("pruned", step=state.global_step, trial=self._trial)
        self.tracker.flush()

    def finish(self, state: str | None = None) -> None:
        """End the run now (optional: process exit ends it too)."""
        if self.tracker is not None:
            self.tracker.finish(state)

    # -- metrics and events ----------------------------------------------------------------------
    def on_log(
        self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kwargs: Any
    ) -> None:
        if self.tracker is not None and state.is_world_process_zero and logs:
            row = dict(logs)
            if self._throughput is not None:
                row.update(self._throughput.update(state.global_step, time.time(), logs))
            self.tracker.log(row, step=state.global_step)
        if self.on_nan == "stop" and logs and any(is_bad(logs.get(k)) for k in (*LOSS_KEYS, *GRAD_KEYS)):
            # Every rank sees the same reduced values, so every rank stops at the same step.
            control.should_save = True
            control.should_training_stop = True
            if self.tracker is not None and state.is_world_process_zero:
                self.tracker.event(
                    "stopped", step=state.global_step, reason="non-finite loss or gradient norm"
                )

    def on_evaluate(
        self, args: Any, state: Any, control: Any, metrics: dict[str, Any] | None = None, **kw: Any
    ) -> None:
        # evaluate() already sent its metrics through on_log; mark the evaluation on the timeline.
        if self.tracker is not None and state.is_world_process_zero:
            self.tracker.event("evaluation", step=state.global_step, keys=sorted(metrics or {}))

    def on_predict(
        self, args: Any, state: Any, control: Any, metrics: dict[str, Any] | None = None, **kw: Any
    ) -> None:
        if state.is_world_process_zero and metrics:
            if self.tracker is None:  # predict() without train(): still one run
                self._start(args, state)
            assert self.tracker is not None
            self.tracker.log(dict(metrics), step=state.global_step)

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if (
            getattr(args, "log_completions", False)
            and self.tracker is not None
            and state.is_world_process_zero
        ):
            self._completions.collect(Path(args.output_dir) / "completions", self.tracker)

    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.tracker is not None and state.is_world_process_zero:
            path = Path(args.output_dir) / f"checkpoint-{state.global_step}"
            self.tracker.event("checkpoint", step=state.global_step, path=str(path))

    # -- config ---------------------------------------------------------------------------------
    @staticmethod
    def _config(args: Any, model: Any) -> dict[str, Any]:
        """Nested, not merged: ``args`` and ``model_config`` share key names that would collide."""
        config: dict[str, Any] = {"args": args}
        model_config = getattr(model, "config", None)
        if model_config is not None:
            config["model_config"] = model_config
        peft = getattr(model, "peft_config", None)
        if isinstance(peft, dict) and peft:
            config["peft_config"] = peft
        if model is not None and hasattr(model, "parameters"):
            try:
                params = list(model.parameters())
                config["num_parameters"] = sum(p.numel() for p in params)
                config["trainable_parameters"] = sum(p.numel() for p in params if p.requires_grad)
            except Exception:
                pass
        return config


class CompletionFiles:
    """TRL's GRPO (``log_completions=True``) writes ``completions/completions_<step>.parquet`` after
    the ``on_log`` of that step and sends the table only to wandb/trackio; pick the files up instead."""

    def __init__(self) -> None:
        self.seen: set[str] = set()

    def collect(self, folder: Path, tracker: Tracker) -> None:
        try:
            files = sorted(p for p in folder.glob("completions_*.parquet") if p.name not in self.seen)
        except OSError:
            return
        for path in files:
            try:
                import pandas as pd

                frame = pd.read_parquet(path)
            except Exception:
                continue  # still being written: the next step picks it up
            self.seen.add(path.name)
            step = (
                int(frame["step"].iloc[0])
                if "step" in frame and len(frame)
                else int(path.stem.split("_")[-1])
            )
            rows = [
                {
                    k: (v if isinstance(v, (int, float, str, bool)) or v is None else str(v))
                    for k, v in r.items()
                }
                for r in frame.to_dict("records")
            ]
            tracker.log_text("completions", rows, step=step)


def _gpu_name() -> str | None:
    """The device model for MFU; CUDA is already initialized by the Trainer when it is used."""
    import torch

    try:
        return torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    except Exception:
        return None


def _run_name(args: Any) -> str | None:
    name = getattr(args, "run_name", None)
    return None if not name or name == getattr(args, "output_dir", None) else str(name)


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
