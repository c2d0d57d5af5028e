"""Megatron-SWIFT's callback, driven on CPU: NOT an end-to-end run.

Megatron-SWIFT needs Megatron-Core and CUDA (``import swift.megatron`` patches Transformer Engine), so
these tests do not run ``megatron sft``. They import ms-swift's real ``MegatronCallback`` base class
(``swift/megatron/callbacks/base.py``; stand-in parent packages keep ``swift/megatron/__init__.py``
from running), load tunetrack's plugin as ms-swift does (``import_external_file``), build the callback
from ``megatron_callbacks_map["tunetrack"]``, and call its hooks in the order ms-swift 4.6's
``BaseMegatronTrainer`` does (``swift/megatron/trainers/base.py``: ``__init__`` after the checkpoint
is loaded, ``on_train_begin``, per step ``on_step_begin``/``on_step_end``/``on_log``, evaluation
``on_eval_begin``/``on_eval_step``/``on_log``/``on_eval_end``, ``on_save(output_dir)``,
``on_train_end``). The arguments are a stand-in dataclass tree shaped like ``MegatronSftArguments``.
"""

from __future__ import annotations

from support.helpers import run_script
from tunetrack.reader import list_runs

DRIVER = """
import dataclasses, sys, types
from pathlib import Path
from typing import Optional

import swift

# swift.megatron's own __init__ needs Megatron-Core: stand-in packages that only point at the folders
MEGATRON = Path(swift.__file__).parent / "megatron"
for name, path in (("swift.megatron", MEGATRON), ("swift.megatron.callbacks", MEGATRON / "callbacks")):
    module = types.ModuleType(name)
    module.__path__ = [str(path)]
    sys.modules[name] = module
sys.modules["swift.megatron.callbacks"].megatron_callbacks_map = {}
from swift.megatron.callbacks.base import MegatronCallback  # ms-swift's real base class
from swift.utils import import_external_file

from tunetrack.integrations.swift import PLUGIN

import_external_file(str(PLUGIN))  # what --external_plugins does
megatron_callbacks_map = sys.modules["swift.megatron.callbacks"].megatron_callbacks_map
assert issubclass(megatron_callbacks_map["tunetrack"], MegatronCallback)


@dataclasses.dataclass
class ModelArguments:
    model: str = "tiny-qwen2"
    model_type: str = "qwen2"


@dataclasses.dataclass
class MegatronArguments:
    tensor_model_parallel_size: int = 1
    train_iters: int = 4
    logging_steps: int = 1
    eval_steps: int = 2
    eval_iters: int = 2
    save_steps: int = 2
    lr: float = 1e-4
    output_dir: str = ""
    mcore_model: Optional[str] = None
    finetune: bool = True
    wandb_api_key: Optional[str] = "wandb_secret_value"
    callbacks: list = dataclasses.field(default_factory=lambda: ["tunetrack"])


@dataclasses.dataclass
class MegatronSftArguments(MegatronArguments, ModelArguments):
    add_version: bool = False


@dataclasses.dataclass
class State:  # swift.megatron.trainers.utils.TrainerState, which imports Megatron-Core
    iteration: int = 0

    @property
    def global_step(self):
        return self.iteration


class Driver:
    '''The hook order of ms-swift 4.6's BaseMegatronTrainer, without the model.'''

    def __init__(self, args, iteration):
        self.args, self.state = args, State(iteration)  # the checkpoint is loaded before the callbacks
        self.config = {"num_layers": 2, "hidden_size": 32}
        self.callbacks = [megatron_callbacks_map[name](self) for name in args.callbacks]

    def call_event(self, event, **kwargs):
        for callback in self.callbacks:
            getattr(callback, event)(**kwargs)

    def train(self):
        args, state = self.args, self.state
        self.call_event("on_train_begin")
        while state.iteration < args.train_iters:
            self.call_event("on_step_begin")
            state.iteration += 1
            self.call_event("on_step_end")
            last = state.iteration >= args.train_iters
            if state.iteration == 1 or state.iteration % args.logging_steps == 0:
                loss = 5.0 - state.iteration / 10
                self.call_event("on_log", logs={"loss": loss, "grad_norm": 1.0, "learning_rate": args.lr})
            if state.iteration % args.eval_steps == 0 or last:
                self.call_event("on_eval_begin")
                for _ in range(args.eval_iters):
                    self.call_event("on_eval_step")
                self.call_event("on_log", logs={"eval_loss": 4.5})
                self.call_event("on_eval_end")
            if state.iteration % args.save_steps == 0 or last:
                output_dir = str(Path(args.output_dir) / f"checkpoint-{state.iteration}")
                self.call_event("on_save", output_dir=output_dir)
        self.call_event("on_train_end")


out, resume = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None
args = MegatronSftArguments(output_dir=out)
if resume:
    args.mcore_model, args.finetune = resume, False
Driver(args, int(resume.rsplit("-", 1)[1]) if resume else 0).train()
"""


def _drive(tmp_path, root, *argv, **env):
    run_script(DRIVER, *argv, env={"TUNETRACK_DIR": str(root), "TUNETRACK_PROJECT": "mg", **env}, timeout=120)


def test_megatron_hooks_record_a_run_not_end_to_end(tmp_path, root):
    _drive(tmp_path, root, str(tmp_path / "out"))
    (run,) = list_runs(root)
    assert (run.project, run.state) == ("mg", "finished")
    assert run.series("loss").steps.tolist() == [1, 2, 3, 4]
    assert run.series("eval_loss").steps.tolist() == [2, 4]
    events = [(e["kind"], e["step"]) for e in run.events() if e["kind"] in ("evaluation", "checkpoint")]
    assert events == [("evaluation", 2), ("checkpoint", 2), ("evaluation", 4), ("checkpoint", 4)]
    groups = run.config["swift"]
    assert groups["model_args"]["model_type"] == "qwen2" and groups["megatron_args"]["lr"] == 1e-4
    assert groups["megatron_args"]["wandb_api_key"] == "***REDACTED***"
    assert run.config["model_config"]["hidden_size"] == 32


def test_megatron_resume_from_a_checkpoint_rewinds_not_end_to_end(tmp_path, root):
    out = tmp_path / "out"
    _drive(tmp_path, root, str(out))
    _drive(tmp_path, root, str(tmp_path / "out2"), str(out / "checkpoint-2"))  # another output folder
    (run,) = list_runs(root)
    assert run.state == "finished" and [e["step"] for e in run.events() if e["kind"] == "rewind"] == [2]
    assert run.series("loss").steps.tolist() == [1, 2, 3, 4]


def test_megatron_records_on_the_last_rank_only_not_end_to_end(tmp_path, root):
    """Only the last pipeline stage holds the loss: rank 0 of 2 records nothing, rank 1 records."""
    _drive(tmp_path, root, str(tmp_path / "a"), RANK="0", WORLD_SIZE="2", LOCAL_RANK="0")
    assert list_runs(root) == []
    _drive(tmp_path, root, str(tmp_path / "b"), RANK="1", WORLD_SIZE="2", LOCAL_RANK="1")
    (run,) = list_runs(root)
    assert run.series("loss").steps.tolist() == [1, 2, 3, 4]
