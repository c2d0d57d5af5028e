"""The Transformers callback, proven by training a tiny Llama with the real Trainer on CPU."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from _tiny import build_dataset, build_model, build_tokenizer
from transformers import Trainer, TrainingArguments

from helpers import SRC, run_script
from tunetrack.integrations.transformers import RUN_FILE, TunetrackCallback
from tunetrack.reader import list_runs, open_run


def _args(out, **kw):
    base = dict(
        output_dir=str(out),
        max_steps=12,
        per_device_train_batch_size=4,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        use_cpu=True,
        learning_rate=1e-3,
        disable_tqdm=True,
    )
    return TrainingArguments(**{**base, **kw})


def test_train_evaluate_predict_save(tmp_path, root):
    tok = build_tokenizer()
    cb = TunetrackCallback(project="hf", name="tiny", dir=root, config={"dataset": "tiny"})
    trainer = Trainer(
        model=build_model(tok),
        args=_args(
            tmp_path / "out", save_strategy="steps", save_steps=5, eval_strategy="steps", eval_steps=6
        ),
        train_dataset=build_dataset(tok),
        eval_dataset=build_dataset(tok, rows=8),
        callbacks=[cb],
    )
    trainer.train()
    final_eval = trainer.evaluate()
    predictions = trainer.predict(build_dataset(tok, rows=8))
    cb.finish()

    run = open_run("tiny", dir=root)
    assert run.state == "finished" and run.project == "hf"
    history = trainer.state.log_history
    train_rows = [h for h in history if "loss" in h]
    loss = run.series("loss")
    assert loss.steps.tolist() == list(range(1, 13))
    assert loss.values.tolist() == [h["loss"] for h in train_rows]
    assert set(run.keys()) >= {
        "loss",
        "grad_norm",
        "learning_rate",
        "epoch",
        "train_loss",
        "total_flos",
        "eval_loss",
        "test_loss",
    }
    assert run.series("train_loss").steps.tolist() == [12]
    samples = run.series("perf/samples_per_s")
    assert len(samples) >= 10 and (samples.values > 0).all()  # 4 samples per step on one CPU process
    assert run.series("perf/tflops").steps.tolist() == [12]  # total_flos / train_runtime at the end
    eval_loss = run.series("eval_loss")
    assert eval_loss.steps.tolist() == [6, 12, 12]  # two in training, one evaluate() after train
    assert eval_loss.values[-1] == final_eval["eval_loss"]
    assert run.series("test_loss").values.tolist() == [predictions.metrics["test_loss"]]
    config = run.config
    assert config["args"]["learning_rate"] == 1e-3 and config["model_config"]["hidden_size"] == 64
    assert config["dataset"] == "tiny" and config["num_parameters"] > 0
    events = run.events()
    checkpoints = [e for e in events if e["kind"] == "checkpoint"]
    assert [e["step"] for e in checkpoints] == [5, 10, 12]  # save_steps, and the Trainer's save at the end
    assert all(
        os.path.isdir(e["path"]) and e["path"].endswith(f"checkpoint-{e['step']}") for e in checkpoints
    )
    assert [e["step"] for e in events if e["kind"] == "evaluation"] == [6, 12, 12]


def test_logs_are_copied_not_mutated(tmp_path, root):
    from transformers import TrainerCallback

    seen = []

    class After(TrainerCallback):
        def on_log(self, args, state, control, logs=None, **kw):
            seen.append(dict(logs))

    tok = build_tokenizer()
    cb = TunetrackCallback(dir=root, name="copy")
    Trainer(
        model=build_model(tok),
        args=_args(tmp_path, max_steps=3),
        train_dataset=build_dataset(tok),
        callbacks=[cb, After()],
    ).train()
    cb.finish()
    assert seen[0].keys() >= {"loss", "grad_norm", "learning_rate", "epoch"}
    assert "total_flos" in seen[-1]  # our callback did not pop or change anything


RESUME = """
import sys
sys.path.insert(0, sys.argv[3])
from _tiny import build_dataset, build_model, build_tokenizer
from transformers import Trainer, TrainingArguments
from tunetrack.integrations.transformers import TunetrackCallback
out, root = sys.argv[1], sys.argv[2]
tok = build_tokenizer()
args = TrainingArguments(output_dir=out, max_steps=int(sys.argv[4]), per_device_train_batch_size=4, logging_steps=1,
                         save_strategy="steps", save_steps=5, report_to="none", use_cpu=True, disable_tqdm=True,
                         learning_rate=1e-3)
trainer = Trainer(model=build_model(tok), args=args, train_dataset=build_dataset(tok),
                  callbacks=[TunetrackCallback(dir=root, project="resume")])
trainer.train(resume_from_checkpoint=sys.argv[5] if len(sys.argv) > 5 else None)
"""


def test_resume_from_checkpoint_in_a_new_process_rewinds(tmp_path, root):
    from helpers import EXAMPLES_DIR

    out = tmp_path / "out"
    run_script(RESUME, str(out), str(root), EXAMPLES_DIR, "10")
    run_id = json.loads((out / RUN_FILE).read_text())["id"]
    run_script(RESUME, str(out), str(root), EXAMPLES_DIR, "15", str(out / "checkpoint-5"))
    (run,) = list_runs(root, project="resume")
    assert run.id == run_id and run.state == "finished"
    assert run.series("loss").steps.tolist() == list(range(1, 16))  # each step once, no zig-zag
    rewinds = [e for e in run.events() if e["kind"] == "rewind"]
    assert [e["step"] for e in rewinds] == [5]
    assert len(run.meta["processes"]) == 2


def test_optuna_search_one_run_per_trial(tmp_path, root):
    pytest.importorskip("optuna")
    tok = build_tokenizer()
    cb = TunetrackCallback(dir=root, project="hpo", name="search")
    trainer = Trainer(
        model_init=lambda trial=None: build_model(tok),
        args=_args(tmp_path, max_steps=4),
        train_dataset=build_dataset(tok),
        eval_dataset=build_dataset(tok, rows=8),
        callbacks=[cb],
    )
    trainer.hyperparameter_search(
        direction="minimize",
        backend="optuna",
        n_trials=2,
        hp_space=lambda trial: {"learning_rate": trial.suggest_float("learning_rate", 1e-4, 1e-2, log=True)},
    )
    cb.finish()
    runs = list_runs(root, project="hpo")
    assert len(runs) == 2
    for run in runs:
        assert run.name.startswith("search-") and run.state == "finished"
        lr = run.config["trial"]["params"]["learning_rate"]
        assert f"learning_rate={lr}" in run.tags
        assert run.config["args"]["learning_rate"] == lr
        assert run.series("loss").steps.tolist() == [1, 2, 3, 4]


TORCHRUN = """
import os, sys
sys.path.insert(0, sys.argv[3])
from _tiny import build_dataset, build_model, build_tokenizer
from transformers import Trainer, TrainingArguments
from tunetrack.integrations.transformers import TunetrackCallback
tok = build_tokenizer()
args = TrainingArguments(output_dir=sys.argv[1], max_steps=6, per_device_train_batch_size=2, logging_steps=1,
                         save_strategy="no", report_to="none", use_cpu=True, disable_tqdm=True, ddp_backend="gloo")
Trainer(model=build_model(tok), args=args, train_dataset=build_dataset(tok),
        callbacks=[TunetrackCallback(dir=sys.argv[2], project="ddp")]).train()
"""


def test_torchrun_two_processes_give_one_run(tmp_path, root):
    from helpers import EXAMPLES_DIR

    script = tmp_path / "train.py"
    script.write_text(TORCHRUN)
    env = {**os.environ, "PYTHONPATH": SRC, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--nproc-per-node",
            "2",
            "--standalone",
            str(script),
            str(tmp_path / "out"),
            str(root),
            EXAMPLES_DIR,
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    (run,) = list_runs(root, project="ddp")
    assert run.state == "finished"
    assert run.series("loss").steps.tolist() == [1, 2, 3, 4, 5, 6]  # rank 0 only, once
    assert [p["role"] for p in run.meta["processes"]] == ["primary"]


def test_on_nan_stop_saves_and_stops_cleanly(tmp_path, root):
    import torch

    class Exploding(torch.nn.Module):
        """A real model whose loss turns NaN on its fourth step."""

        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.ones(1))
            self.calls = 0

        def forward(self, input_ids=None, labels=None):
            self.calls += 1
            loss = (self.w[0] * input_ids.float().mean()) ** 2 * 1e-4
            return {"loss": loss * float("nan") if self.calls >= 4 else loss}

    tok = build_tokenizer()
    cb = TunetrackCallback(dir=root, name="nan", on_nan="stop")
    trainer = Trainer(
        model=Exploding(),
        args=_args(tmp_path / "out", max_steps=10),
        train_dataset=build_dataset(tok),
        callbacks=[cb],
    )
    trainer.train()
    cb.finish()
    assert trainer.state.global_step == 4
    run = open_run("nan", dir=root)
    kinds = [(e["kind"], e["step"]) for e in run.events()]
    assert ("stopped", 4) in kinds and ("checkpoint", 4) in kinds
    # The Trainer's default logging_nan_inf_filter hides a NaN loss (it logs the running mean instead);
    # the gradient norm still shows it, and that is enough to stop.
    assert [(e["step"], e["problem"]) for e in run.events() if e["kind"] == "health"] == [
        (4, "grad_norm_nonfinite")
    ]
    assert (tmp_path / "out" / "checkpoint-4").is_dir()
    assert run.state == "finished"


def test_optuna_pruned_trials_are_marked(tmp_path, root):
    optuna = pytest.importorskip("optuna")

    class PruneFirstTrial(optuna.pruners.BasePruner):
        def prune(self, study, trial):
            return trial.number == 0  # at its first report; the second trial completes

    tok = build_tokenizer()
    cb = TunetrackCallback(dir=root, project="pruned", name="search")
    trainer = Trainer(
        model_init=lambda trial=None: build_model(tok),
        args=_args(tmp_path, max_steps=6, eval_strategy="steps", eval_steps=2),
        train_dataset=build_dataset(tok),
        eval_dataset=build_dataset(tok, rows=8),
        callbacks=[cb],
    )
    trainer.hyperparameter_search(
        direction="minimize",
        backend="optuna",
        n_trials=2,
        pruner=PruneFirstTrial(),
        hp_space=lambda t: {"learning_rate": t.suggest_float("learning_rate", 1e-4, 1e-2)},
    )
    cb.finish()
    second, first = list_runs(root, project="pruned")
    assert [e["step"] for e in first.events() if e["kind"] == "pruned"] == [2]
    assert first.series("loss").steps.tolist() == [1, 2]
    assert [e for e in second.events() if e["kind"] == "pruned"] == []
    assert second.series("loss").steps.tolist() == [1, 2, 3, 4, 5, 6]
