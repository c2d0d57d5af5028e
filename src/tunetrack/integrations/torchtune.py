"""torchtune through its ``MetricLoggerInterface``, chosen by dotted path on ``tune run``::

    tune run lora_finetune_single_device --config my.yaml \\
        metric_logger._component_=tunetrack.integrations.torchtune.TunetrackLogger metric_logger.project=tt

The interface is a Protocol, so this module imports neither torchtune nor torch: it fits by shape
(omegaconf is imported only inside ``log_config``). Every shipped config sets
``metric_logger.log_dir``; it is accepted, and used as the store root when neither ``dir=`` nor
``$TUNETRACK_DIR`` says otherwise, so the runs land next to the recipe's other outputs.

Each checkpoint the recipe's checkpointer saves (an ``epoch_<n>`` or ``step_<n>`` folder in the
``checkpointer.output_dir`` that ``log_config`` receives) is recorded with ``Tracker.log_checkpoint``
when the next row is logged, or at ``close()``: torchtune saves on the training thread, between rows,
so the folder is complete by then. Folders there before the run are not its checkpoints.

A recipe that crashes never calls ``close()``. There is deliberately no ``__del__`` (it could run at
any time, on any thread, during interpreter shutdown): the core's exception hook ends the run
``failed`` with the traceback, its atexit hook ``finished``, its signal handlers ``killed``, and a
process that dies without running Python (SIGKILL, OOM killer) reads as ``crashed``.

A run asked to stop (``tunetrack stop``) stops a single-device recipe cleanly: torchtune has no hook
for it, so the logger finds the recipe among its callers' frames and ends its epoch loop after the
current step, and the recipe saves its checkpoint and returns as at the end of training. A
distributed recipe logs on rank 0 only, where the other ranks cannot be told; ``tunetrack run``
ends such a command with SIGTERM instead (``attach.command``).

Under ``tunetrack run`` the recipe's own metric logger is kept and teed into this one (``teed``).
"""

from __future__ import annotations

import inspect
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from .. import settings
from .._warnings import warn_once
from ..config import capture
from ..tracker import Tracker
from ..tracker.launch import rank_info
from ..values import numbers
from .support import inputs
from .support.saved_folders import SavedFolders
from .support.throughput import Throughput

#: The key of the text sample that holds the recipe's YAML (as torchtune names its own copy).
YAML_KEY = "torchtune_config.yaml"

#: the folders torchtune's checkpointers save into (``epoch_<n>`` in 0.6; ``step_<n>`` by step)
SAVE_FOLDERS = r"(?:epoch|step)_(\d+)"

# Arguments the logger sets itself; every other Tracker argument passes through from the config.
_OWN = frozenset({"self", "project", "name", "dir", "tags"})


def _tracker_arguments() -> frozenset[str]:
    return frozenset(inspect.signature(Tracker.__init__).parameters) - _OWN


class TunetrackLogger:
    """A torchtune metric logger that records into tunetrack.

    ``project``, ``name`` and ``tags`` (a list, or a comma-separated string from the command line)
    describe the run. The store root is ``dir``, else ``$TUNETRACK_DIR``, else ``log_dir`` (the
    config's ``${output_dir}/logs``), else ``./tunetrack_runs``. Other ``Tracker`` arguments
    (``resume``, ``resume_step``, ``system``, ``strict``, ...) pass through; anything else is warned
    about once and ignored, so a config written for another logger still trains.
    """

    def __init__(
        self,
        project: str | None = None,
        name: str | None = None,
        log_dir: str | None = None,
        dir: str | None = None,
        tags: str | list[str] | tuple[str, ...] | None = None,
        **kwargs: Any,
    ) -> None:
        if isinstance(tags, str):
            tags = [t.strip() for t in tags.split(",") if t.strip()]
        accepted = _tracker_arguments()
        unknown = sorted(k for k in kwargs if k not in accepted)
        if unknown:
            warn_once("torchtune:kwargs", f"TunetrackLogger ignored unknown arguments: {unknown}")
        passed = {k: v for k, v in kwargs.items() if k in accepted}
        # Command-line values are parsed as YAML, so `metric_logger.name=7` arrives as an int.
        self.tracker = Tracker(
            project=None if project is None else str(project),
            name=None if name is None else str(name),
            dir=settings.store_dir(dir, default=log_dir),
            tags=[str(t) for t in tags or []],
            **passed,
        )
        self._throughput = Throughput(num_gpus=rank_info().world_size)
        self._saves: SavedFolders | None = None  # once log_config names the checkpointer's output_dir
        #: the step last logged and its row: a checkpoint saved at that step carries its numbers
        self._logged: tuple[int, Mapping[str, Any]] = (-1, {})
        self._stopping = False  # a stop request was acted on

    def log(self, name: str, data: Any, step: int) -> None:
        self.log_dict({name: data}, step)

    def log_dict(self, payload: Mapping[str, Any], step: int) -> None:
        """One row at ``step``. Tensors are queued as they are: no ``.item()`` (no GPU sync) here."""
        row = dict(payload)
        try:
            row.update(self._throughput.update(step, time.time(), row))
        except Exception as exc:  # throughput keys are a convenience; the row itself must get through
            if self.tracker.strict:
                raise
            warn_once("torchtune:throughput", f"could not derive throughput keys: {exc!r}")
        if self._saves is not None:
            self._record_saves()
        self.tracker.log(row, step=step)
        self._logged = (step, row)
        if self.tracker.should_stop and not self._stopping:
            self._stopping = True
            _stop_recipe()

    def log_config(self, config: Any) -> None:
        """The resolved config, plus the YAML text as the recipe received it (a text sample).

        The config is resolved (``${output_dir}`` and friends replaced; an interpolation that cannot
        be resolved is kept as its raw ``${...}`` text). The YAML keeps the interpolations and is
        stored as the text sample ``torchtune_config.yaml`` at step 0, with secrets redacted as in
        the config.
        """
        self.tracker.log_config(config)
        text = _yaml_text(config)
        if text is not None:
            self.tracker.log_text(YAML_KEY, text, step=0)
        if (out := _checkpointer_dir(config)) is not None and self.tracker.active:
            self._saves = SavedFolders(out, SAVE_FOLDERS)
        if self.tracker.active:
            inputs.record(self.tracker, *_inputs(config))

    def close(self) -> None:
        if self._saves is not None:
            self._record_saves(look=True)
        self.tracker.finish()

    def _record_saves(self, look: bool = False) -> None:
        """Record the checkpoint folders saved since the last row, at the step their name says
        (``step_<n>``) or the last step logged (an ``epoch_<n>`` is saved after its last row)."""
        assert self._saves is not None
        try:
            for path, number in self._saves.new(look):
                step = number if path.name.startswith("step_") else self.tracker.step
                logged, row = self._logged
                self.tracker.log_checkpoint(path, step=step, metrics=numbers(row) if logged == step else None)
        except Exception as exc:  # a checkpoint not recorded must not stop the recipe
            if self.tracker.strict:
                raise
            warn_once("torchtune:checkpoints", f"could not record torchtune's checkpoints: {exc!r}")


class Teed:
    """The recipe's own metric logger and tunetrack's side by side: what ``tunetrack run`` makes of
    the logger a recipe's config names (``attach.hooks``), so both record everything."""

    def __init__(self, own: Any, ours: TunetrackLogger) -> None:
        self.own, self.ours = own, ours

    def log(self, name: str, data: Any, step: int) -> None:
        self.own.log(name, data, step)
        self.ours.log(name, data, step)

    def log_dict(self, payload: Mapping[str, Any], step: int) -> None:
        self.own.log_dict(payload, step)
        self.ours.log_dict(payload, step)

    def log_config(self, config: Any) -> None:
        self.own.log_config(config)
        self.ours.log_config(config)

    def close(self) -> None:
        try:
            self.own.close()
        finally:
            self.ours.close()


def teed(own: Any) -> Teed:
    """``own`` (a recipe's metric logger) teed into a ``TunetrackLogger`` with default options."""
    return Teed(own, TunetrackLogger())


def _stop_recipe() -> None:
    """End the calling recipe's training after the current step, as if it were its last: the epoch
    loop breaks after this batch (``max_steps_per_epoch``), the recipe saves this epoch's checkpoint
    as its final one (``total_epochs``), and the epochs its ``range`` still holds find no batch and
    save nothing. Found among the callers' frames: the recipe's ``train`` holds ``self`` (the
    recipe), ``idx`` and ``curr_epoch``. Single-device recipes only (see the module's docstring)."""
    if rank_info().world_size > 1:
        warn_once(
            "torchtune:stop",
            "a distributed torchtune recipe cannot be stopped from its logger; under `tunetrack run` "
            "the command is sent SIGTERM after its grace period",
        )
        return
    frame: Any = sys._getframe(2)
    for _ in range(8):
        if frame is None:
            break
        found = frame.f_locals
        recipe = found.get("self")
        if hasattr(recipe, "total_epochs") and hasattr(recipe, "max_steps_per_epoch") and "idx" in found:
            accumulation = int(getattr(recipe, "_gradient_accumulation_steps", 1) or 1)
            epoch = int(found.get("curr_epoch", 0))
            recipe.max_steps_per_epoch = (int(found["idx"]) + 1) // accumulation
            recipe.total_epochs = epoch + 1
            recipe._dataloader = _NoMoreBatches(recipe._dataloader)
            recipe.save_checkpoint = _only_epoch(recipe.save_checkpoint, epoch)
            return
        frame = frame.f_back
    warn_once("torchtune:stop", "the recipe to stop was not found among the logger's callers; it trains on")


def _only_epoch(save: Any, last: int) -> Any:
    """A recipe's ``save_checkpoint`` that saves the ``last`` epoch's and no later one's."""

    def save_checkpoint(epoch: int) -> None:
        if epoch == last:
            save(epoch=epoch)

    return save_checkpoint


class _NoMoreBatches:
    """A recipe's data loader after a stop: the epochs left in its loop find no batch."""

    def __init__(self, loader: Any) -> None:
        self.sampler = loader.sampler  # the loop still sets each epoch on it

    def __iter__(self) -> Iterator[Any]:
        return iter(())

    def __len__(self) -> int:
        return 0


def _checkpointer_dir(config: Any) -> str | None:
    """``checkpointer.output_dir`` of a recipe's config (a DictConfig or a dict), resolved."""
    try:
        checkpointer = config.get("checkpointer")
        out = checkpointer.get("output_dir") if checkpointer is not None else None
    except Exception:  # not a mapping, or an interpolation that cannot be resolved
        return None
    return str(out) if out else None


def _yaml_text(config: Any) -> str | None:
    """``OmegaConf.to_yaml`` of ``config`` with interpolations intact and secret values redacted."""
    try:
        from omegaconf import DictConfig, ListConfig, OmegaConf
    except ImportError:
        return None
    if not isinstance(config, (DictConfig, ListConfig, dict, list)):
        return None
    try:
        tree = (
            OmegaConf.to_container(config, resolve=False) if not isinstance(config, (dict, list)) else config
        )
        return OmegaConf.to_yaml(capture(tree))  # capture redacts secrets, as in the config
    except Exception as exc:
        warn_once("torchtune:yaml", f"could not keep the config's YAML text: {exc!r}")
        return None


def _inputs(config: Any) -> list[inputs.Input | None]:
    """The recipe's base model (``checkpointer.checkpoint_dir``), tokenizer (``tokenizer.path``) and
    data set (local ``dataset.data_files``, or a hub ``dataset.source``), where the config names them."""

    def get(section: str, key: str) -> Any:
        try:
            return config[section][key]
        except (KeyError, TypeError, IndexError):
            return None

    found: list[inputs.Input | None] = []
    if isinstance(model := get("checkpointer", "checkpoint_dir"), str) and Path(model).is_dir():
        found.append(inputs.model_folder_input(Path(model)))
    if isinstance(tok := get("tokenizer", "path"), str) and Path(tok).exists():
        found.append(inputs.file_input(Path(tok), "tokenizer"))
    files, source = get("dataset", "data_files"), get("dataset", "source")
    if isinstance(files, str) and Path(files).exists():
        found.append(inputs.file_input(Path(files), "dataset"))
    elif isinstance(source, str) and source not in ("json", "csv", "parquet", "text"):
        split = get("dataset", "split") or "train"
        found.append(inputs.Input(source, "dataset", f"hf://datasets/{source}", None, {"split": split}))
    return found
