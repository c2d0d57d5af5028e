"""Hugging Face Transformers (and TRL, and LLaMA Factory) through a ``TrainerCallback``.

``Trainer(..., callbacks=[TunetrackCallback(project="my-project")])``. The callback is thin: it maps
Trainer events onto the core ``Tracker``. What it must get right is the Trainer's event flow:

- ``on_log`` fires on every rank with the same (already reduced) values: only world rank 0 records;
- ``evaluate()`` and ``predict()`` usually come after ``on_train_end``, so the run is not ended there
  (the run ends at ``finish()``, at process exit, or failed/killed as the core decides);
- ``predict()`` never fires ``on_log``, so ``on_predict`` records its metrics;
- a resumed ``train(resume_from_checkpoint=...)`` restores ``state.global_step`` before
  ``on_train_begin``: the run id kept in ``output_dir`` re-attaches, and the tracker rewinds;
- in a hyperparameter search the same callback serves every trial: one run per trial;
- a run asked to stop (``tunetrack stop``, the dashboard, a rule) stops the way the Trainer stops
  early: ``on_step_end`` sets ``should_save`` and ``should_training_stop``, on every rank at the same
  step (``support.stopping``), so a checkpoint is saved and ``train()`` returns.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from ..histograms import Histogram
from ..monitoring.health import diverged
from ..tracker import Tracker
from ..tracker.checkpoints import ADAPTER, MODEL
from ..values import is_number
from .support import inputs
from .support import resume as auto_resume
from .support.completions import CompletionFiles, Rewards
from .support.gradients import grad_norms, logs_at
from .support.options import from_environment
from .support.stopping import agreed
from .support.throughput import Throughput
from .support.trials import Trial, Trials, mark_pruned

#: ``resume=`` values that never re-attach to an earlier run
_NEVER = (None, False, "never", "no")


class TunetrackCallback(TrainerCallback):
    """Records a Trainer's hyperparameters, metrics, evaluations, predictions and checkpoints.

    ``resume="auto"`` (default) re-attaches a ``train(resume_from_checkpoint=...)`` to the run recorded
    in ``output_dir/.tunetrack_run`` (``tunetrack.integrations.support.resume``); ``resume=None`` always starts a new run;
    any other string is the id of the run to re-attach to. ``on_nan="stop"`` saves and stops training
    cleanly when the loss or the gradient norm turns NaN/Inf. ``fork_from="RUN@STEP"`` makes the run a
    fork of that run at that step (``Tracker(fork_from=)``): train from the parent's checkpoint of that
    step (``train(resume_from_checkpoint=...)``) into an ``output_dir`` of its own, whose marker then
    names the fork, so a later resume re-attaches to the fork and keeps its branch point (a marker that
    names the parent itself forks it rather than re-attaching). ``grad_distributions=True`` records,
    at every logging step, the distribution of the gradient norms of the model's parameter tensors
    (``grad_norm/parameters``, a ``tunetrack.Histogram``: which layers' gradients vanish or explode,
    which one number hides); off by default, as it reads every gradient once more per logging step.
    Other keyword arguments go to ``Tracker``.
    """

    def __init__(
        self,
        project: str | None = None,
        name: str | None = None,
        dir: str | os.PathLike[str] | None = None,
        tags: Sequence[str] | None = None,
        config: Any = None,
        resume: str | None = "auto",
        on_nan: str = "warn",
        fork_from: str | None = None,
        grad_distributions: bool = False,
        **tracker_kwargs: Any,
    ) -> None:
        if on_nan not in ("warn", "stop"):
            raise ValueError(f"on_nan must be 'warn' or 'stop', not {on_nan!r}")
        self.on_nan = on_nan
        self.project, self.name, self.dir, self.tags = project, name, dir, list(tags or [])
        self.extra_config = config
        self.resume = resume
        self.fork_from = fork_from
        self.grad_distributions = grad_distributions
        self.tracker_kwargs = tracker_kwargs
        self.tracker: Tracker | None = None
        self._trial: Trial | None = None
        self._trials = Trials()
        self._trained = False  # a train() has begun on this run
        self._final_logged = False  # the current train() logged its final record (train_loss)
        self._throughput: Throughput | None = None
        self._completions = CompletionFiles()
        self._rewards = Rewards()  # a GRPO trainer's reward functions, for its tables' total reward
        #: the step last logged and what was recorded at it: a checkpoint saved then carries it
        self._logged: tuple[int, dict[str, Any]] = (-1, {})

    @property
    def _recording(self) -> bool:
        return self.tracker is not None and self.tracker.active

    # -- run lifecycle ---------------------------------------------------------------------------
    def on_train_begin(self, args: Any, state: Any, control: Any, model: Any = None, **kwargs: Any) -> None:
        if not state.is_world_process_zero:
            self._start_other_rank()
            return
        self._final_logged = False
        tracker = self.tracker if self._recording else None
        if state.is_hyper_param_search:
            self._start_trial(args, state)
        elif tracker is None:
            self._start(args, state)
        elif state.global_step > 0 and not self._trained and self._resumable(args) not in (None, tracker.id):
            # evaluate()/predict() started a run before this resumed train(): attach to the trained run
            tracker.finish()
            self._start(args, state)
        elif state.global_step > 0:  # train() again in this process, from a checkpoint
            tracker.rewind(state.global_step)
        elif self._trained:  # a fresh train() after an earlier one: a new run, as in a new process
            tracker.finish()
            self._start(args, state)
        if not state.is_hyper_param_search:
            self._note(args)
        self._trained = True
        if self._recording:
            assert self.tracker is not None
            self.tracker.log_config(self._config(args, model))
            self._throughput = Throughput(
                samples_per_step=args.per_device_train_batch_size
                * args.gradient_accumulation_steps
                * args.world_size,
                gpu_name=_gpu_name(),
                num_gpus=args.world_size,
            )
            data = getattr(kwargs.get("train_dataloader"), "dataset", None)
            tokenizer = kwargs.get("processing_class") or kwargs.get("tokenizer")
            inputs.record(self.tracker, *inputs.identify(model, data, tokenizer))

    def _start_other_rank(self) -> None:
        """Not world rank 0: record no metrics. The tracker is still started once, inactive, so that
        the first rank of another node can add that node's system metrics to the job's run."""
        if self.tracker is None:
            self.tracker = self._tracker(self.name, self.tags, None, None, self.dir).start()

    def _tracker(
        self, name: str | None, tags: list[str], resume: str | None, step: int | None, root: Any
    ) -> Tracker:
        return Tracker(
            project=self.project,
            name=name,
            dir=root,
            tags=tags,
            config=self.extra_config,
            resume=resume,
            resume_step=step,
            fork_from=self.fork_from,
            **self.tracker_kwargs,
        )

    def _start(self, args: Any, state: Any, model: Any = None, training: bool = True, **run: Any) -> None:
        """Start (or re-attach to) the run on world rank 0. ``run``: ``name``/``tags`` overrides.

        ``training``: called at train begin, where a re-attached run rewinds to the Trainer's step
        (with an explicit run id and a fresh train(), to 0: the new attempt supersedes the old rows).
        evaluate()/predict() alone never rewind, so evaluating into a finished run keeps its curves.
        """
        search = bool(state.is_hyper_param_search)
        resume_id, resume_step, root = None, None, self.dir
        if self.resume == "auto":
            saved = _recall(args) if training and state.global_step > 0 else None
            if saved is not None and not search:
                resume_id, resume_step = saved.run_id, state.global_step
                if root is None and saved.dir is not None:
                    root = saved.dir  # where the run is, whatever the working directory now is
        elif self.resume not in _NEVER and not search:
            resume_id = str(self.resume)
            resume_step = state.global_step if training else None
        self.tracker = self._tracker(
            run.get("name") or self.name or _run_name(args),
            run.get("tags") or self.tags,
            resume_id,
            resume_step,
            root,
        ).start()
        self._trained = False
        if model is not None and self.tracker.active:
            self.tracker.log_config(self._config(args, model))

    def _resumable(self, args: Any) -> str | None:
        """The run id a resumed train() re-attaches to (``resume="auto"``), from ``output_dir``."""
        saved = _recall(args) if self.resume == "auto" else None
        return saved.run_id if saved is not None else None

    def _note(self, args: Any) -> None:
        """At train begin, keep the run's id in ``output_dir`` for a later resume."""
        if self._recording:
            auto_resume.remember(args.output_dir, self.tracker)

    def _start_trial(self, args: Any, state: Any) -> None:
        """One run per trial of ``trainer.hyperparameter_search``: the callback instance is shared."""
        if self.tracker is not None:
            self.tracker.finish()
        base = self.name or _run_name(args) or self.project or "search"
        study = f"{base}-{time.strftime('%Y%m%d-%H%M%S')}"  # Trainer's callbacks never see Optuna's study
        self._trial = trial = self._trials.next(state.trial_name, state.trial_params, study)
        self._start(args, state, name=trial.run_name(base), tags=trial.tags(self.tags))
        if self._recording:
            assert self.tracker is not None
            self.tracker.log_config(trial.config())

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if not self._recording or not state.is_world_process_zero:
            return
        assert self.tracker is not None
        if getattr(args, "log_completions", False):
            self._collect_completions(args)
        if state.is_hyper_param_search and not self._final_logged:
            # A completed train() logs its final record (train_loss) before on_train_end; Optuna's
            # pruning calls on_train_end straight from the evaluation, then raises TrialPruned.
            # (Early stopping still goes through the final record, so it is not mistaken for pruning.)
            mark_pruned(self.tracker, state.global_step, self._trial)
        self.tracker.flush()  # the run goes on: evaluate() and predict() usually follow

    def finish(self, state: str | None = None) -> None:
        """End the run now (optional: process exit ends it too)."""
        if self.tracker is not None:
            self.tracker.finish(state)

    # -- metrics and events ----------------------------------------------------------------------
    def on_log(
        self,
        args: Any,
        state: Any,
        control: Any,
        logs: dict[str, Any] | None = None,
        model: Any = None,
        **kwargs: Any,
    ) -> None:
        if not logs:
            return
        if "train_loss" in logs:
            self._final_logged = True
        if state.is_world_process_zero:
            if self.tracker is None:  # evaluate() without train(): still one run
                self._start(args, state, model, training=False)
            if self._recording:
                assert self.tracker is not None
                row = self._row(logs, state)  # a copy: other callbacks see the Trainer's dict unchanged
                self._rewards.learn(row)
                if self._throughput is not None:
                    row.update(self._throughput.update(state.global_step, time.time(), logs))
                self.tracker.log(row, step=state.global_step)
                step, before = self._logged
                self._logged = (state.global_step, {**before, **row} if step == state.global_step else row)
        if self.on_nan == "stop" and diverged(logs):
            # Every rank sees the same reduced values, so every rank stops at the same step.
            control.should_save = True
            control.should_training_stop = True
            if self._recording and state.is_world_process_zero:
                assert self.tracker is not None  # the run ends stopped, saying why
                self.tracker.request_stop("non-finite loss or gradient norm", by="on_nan")

    def on_evaluate(
        self, args: Any, state: Any, control: Any, metrics: dict[str, Any] | None = None, **kw: Any
    ) -> None:
        # evaluate() already sent its metrics through on_log; mark the evaluation on the timeline.
        if self._recording and state.is_world_process_zero:
            assert self.tracker is not None
            self.tracker.event("evaluation", step=state.global_step, keys=sorted(metrics or {}))

    def on_predict(
        self,
        args: Any,
        state: Any,
        control: Any,
        metrics: dict[str, Any] | None = None,
        model: Any = None,
        **kw: Any,
    ) -> None:
        if state.is_world_process_zero and metrics:
            if self.tracker is None:  # predict() without train(): still one run
                self._start(args, state, model, training=False)
            if self._recording:
                assert self.tracker is not None
                self.tracker.log(dict(metrics), step=state.global_step)

    def on_pre_optimizer_step(
        self, args: Any, state: Any, control: Any, model: Any = None, **kwargs: Any
    ) -> None:
        """With ``grad_distributions``: the gradients' norms, per parameter tensor, at a logging step
        (the step the optimizer is about to make: ``global_step + 1``, as the Trainer logs it)."""
        if not (
            self.grad_distributions and self._recording and model is not None and state.is_world_process_zero
        ):
            return
        step = state.global_step + 1
        if not logs_at(state, step):
            return
        norms = grad_norms(model)
        if norms is not None:
            assert self.tracker is not None
            self.tracker.log({"grad_norm/parameters": Histogram(norms)}, step=step)

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if getattr(args, "log_completions", False) and self._recording and state.is_world_process_zero:
            self._collect_completions(args)
        asked = self._recording and self.tracker is not None and self.tracker.should_stop
        if agreed(asked, getattr(args, "device", None)) and not control.should_training_stop:
            control.should_save = True  # a checkpoint to resume from, as the Trainer's early stopping
            control.should_training_stop = True

    # -- what a framework built on the Trainer changes (ms-swift's callback overrides these) ----------
    def _row(self, logs: dict[str, Any], state: Any) -> dict[str, Any]:
        """The row to record for one ``on_log``: a copy of ``logs``."""
        return dict(logs)

    def _collect_completions(self, args: Any) -> None:
        """Record the generations TRL wrote since the last call (``log_completions=True``)."""
        assert self.tracker is not None
        self._completions.collect(Path(args.output_dir) / "completions", self.tracker, self._rewards, args)

    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self._recording and state.is_world_process_zero:
            assert self.tracker is not None
            path = Path(args.output_dir) / f"checkpoint-{state.global_step}"
            # what was recorded at this step, the evaluation that ran before the save included
            step, logged = self._logged
            metrics = {k: v for k, v in logged.items() if is_number(v)} if step == state.global_step else {}
            kind = (
                ADAPTER if getattr(kwargs.get("model"), "peft_config", None) else MODEL
            )  # PEFT saves only its adapter
            self.tracker.log_checkpoint(path, step=state.global_step, kind=kind, metrics=metrics)

    # -- config ---------------------------------------------------------------------------------
    @staticmethod
    def _config(args: Any, model: Any) -> dict[str, Any]:
        """Nested, not merged: ``args`` and ``model_config`` share key names that would collide.
        ``tunetrack.config`` captures the objects (``to_dict()``, PEFT's sets) and redacts tokens."""
        config: dict[str, Any] = {"args": args}
        model_config = getattr(model, "config", None)
        if model_config is not None:
            config["model_config"] = model_config
        peft = getattr(model, "peft_config", None)
        if isinstance(peft, dict) and peft:
            config["peft_config"] = peft
        if model is not None and hasattr(model, "parameters"):
            try:
                total = trainable = 0
                for p in model.parameters():
                    n = getattr(p, "ds_numel", None) or p.numel()  # DeepSpeed ZeRO-3 partitions
                    total += n
                    trainable += n if p.requires_grad else 0
                config["num_parameters"], config["trainable_parameters"] = total, trainable
            except Exception:
                pass
        return config


class ReportedCallback(TunetrackCallback):
    """What ``report_to="tunetrack"`` (and ``tunetrack run``) adds to a Trainer: Transformers builds it
    with no argument, so the run's options come from ``TUNETRACK_<KEY>`` variables
    (``support.options``: ``TUNETRACK_PROJECT``, ``TUNETRACK_NAME``, ``TUNETRACK_TAGS``, ...). A
    ``TunetrackCallback`` the user added to the same Trainer wins over it (``attach.hooks``)."""

    #: added for the user rather than by them: gives way to their own callback
    automatic = True

    def __init__(self) -> None:
        super().__init__(**from_environment())


def _recall(args: Any) -> auto_resume.Marker | None:
    """The run an earlier attempt of this training recorded: its marker in ``output_dir``, else beside
    the checkpoint it resumes from (``args.resume_from_checkpoint``), which is in another folder when
    every attempt writes to a new one (ms-swift's versioned ``output_dir``)."""
    saved = auto_resume.recall(args.output_dir)
    checkpoint = getattr(args, "resume_from_checkpoint", None)
    if saved is None and isinstance(checkpoint, (str, os.PathLike)) and str(checkpoint):
        saved = auto_resume.recall(Path(checkpoint).parent)
    return saved


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
