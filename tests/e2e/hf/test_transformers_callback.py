"""The Transformers callback, proven by training a tiny Llama with the real Trainer on CPU.

No mocks: every test trains (or evaluates) with ``transformers.Trainer`` and asserts on what the run
store holds, read back through ``tunetrack.reader``.
"""

from __future__ import annotations

import json
import os
import runpy
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from _tiny import build_dataset, build_model, build_tokenizer
from transformers import Trainer, TrainerCallback, TrainingArguments

from support.helpers import EXAMPLES_DIR, SRC, run_script
from tunetrack.integrations.support.resume import MARKER as RUN_FILE
from tunetrack.integrations.transformers import TunetrackCallback
from tunetrack.reader import list_runs, open_run
from tunetrack.reader.groups import group_runs


@pytest.fixture(scope="module")
def tok():
    return build_tokenizer()


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


def test_train_evaluate_predict_save(tmp_path, root, tok):
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
    final_eval = trainer.evaluate()  # after train(), as most scripts and LLaMA Factory do
    predictions = trainer.predict(build_dataset(tok, rows=8))  # never fires on_log
    assert open_run("tiny", dir=root).state == "running"  # on_train_end did not end the run
    cb.finish()

    run = open_run("tiny", dir=root)
    assert run.state == "finished" and run.project == "hf" and run.id == cb.tracker.id
    train_rows = [h for h in trainer.state.log_history if "loss" in h]
    for key in ("loss", "grad_norm", "learning_rate"):  # exactly what the Trainer logged, once per step
        assert run.series(key).steps.tolist() == list(range(1, 13)), key
        assert run.series(key).values.tolist() == [h[key] for h in train_rows], key
    # epoch rides along on every record: 12 training rows, 2 in-training evals, the final record, evaluate()
    assert run.series("epoch").steps.tolist() == [*range(1, 7), 6, *range(7, 13), 12, 12, 12]
    for key in ("train_loss", "train_runtime", "total_flos"):  # the final record, at the last step
        assert run.series(key).steps.tolist() == [12], key
    assert run.series("train_loss").values.tolist() == [trainer.state.log_history[-2]["train_loss"]]
    eval_loss = run.series("eval_loss")
    assert eval_loss.steps.tolist() == [6, 12, 12]  # two in training, one evaluate() after train()
    assert eval_loss.values[-1] == final_eval["eval_loss"]
    test_loss = run.series("test_loss")
    assert test_loss.steps.tolist() == [12] and test_loss.values.tolist() == [
        predictions.metrics["test_loss"]
    ]
    assert {"test_runtime", "test_samples_per_second"} <= set(run.keys())
    samples = run.series("perf/samples_per_s")
    assert len(samples) >= 10 and (samples.values > 0).all()  # 4 samples per step on one CPU process
    assert run.series("perf/tflops").steps.tolist() == [12]  # total_flos / train_runtime at the end

    config = run.config
    assert set(config) >= {"args", "model_config", "dataset", "num_parameters", "trainable_parameters"}
    assert config["args"]["learning_rate"] == 1e-3 and config["args"]["max_steps"] == 12
    assert config["model_config"]["hidden_size"] == 64 and config["model_config"]["num_hidden_layers"] == 2
    assert "peft_config" not in config  # no PEFT here
    assert config["dataset"] == "tiny"
    n_params = sum(p.numel() for p in trainer.model.parameters())
    assert config["num_parameters"] == config["trainable_parameters"] == n_params
    assert run.flat_config["args.learning_rate"] == 1e-3
    assert run.flat_config["model_config.hidden_size"] == 64

    events = run.events()
    checkpoints = [e for e in events if e["kind"] == "checkpoint"]
    assert [e["step"] for e in checkpoints] == [5, 10, 12]  # save_steps, and the Trainer's save at the end
    for e in checkpoints:
        assert e["path"] == str(tmp_path / "out" / f"checkpoint-{e['step']}") and os.path.isdir(e["path"])
    assert [e["step"] for e in events if e["kind"] == "evaluation"] == [6, 12, 12]
    assert json.loads((tmp_path / "out" / RUN_FILE).read_text()) == {"id": run.id, "dir": str(root.resolve())}


def test_logs_are_copied_not_mutated(tmp_path, root, tok):
    seen = []

    class After(TrainerCallback):
        """Runs after ours: sees exactly the dict the Trainer logged."""

        def on_log(self, args, state, control, logs=None, **kw):
            seen.append(dict(logs))

    cb = TunetrackCallback(dir=root, name="copy")
    trainer = Trainer(
        model=build_model(tok),
        args=_args(tmp_path, max_steps=3),
        train_dataset=build_dataset(tok),
        callbacks=[cb, After()],
    )
    trainer.train()
    cb.finish()
    # log_history holds a copy of each logs dict taken before on_log (plus "step")
    assert seen == [{k: v for k, v in h.items() if k != "step"} for h in trainer.state.log_history]
    assert "total_flos" in seen[-1] and "perf/samples_per_s" not in seen[0]
    assert open_run("copy", dir=root).series("loss").steps.tolist() == [1, 2, 3]


def test_fresh_train_starts_a_new_run(tmp_path, root, tok):
    out = tmp_path / "out"
    first = TunetrackCallback(dir=root, project="fresh")
    Trainer(
        model=build_model(tok),
        args=_args(out, max_steps=2),
        train_dataset=build_dataset(tok),
        callbacks=[first],
    ).train()
    first.finish()
    assert json.loads((out / RUN_FILE).read_text())["id"] == first.tracker.id

    # The same output_dir, a fresh train() (global_step 0): a new run, and the file now names it.
    second = TunetrackCallback(dir=root, project="fresh")
    trainer = Trainer(
        model=build_model(tok),
        args=_args(out, max_steps=2),
        train_dataset=build_dataset(tok),
        callbacks=[second],
    )
    trainer.train()
    second_id = second.tracker.id
    assert second_id != first.tracker.id
    assert json.loads((out / RUN_FILE).read_text())["id"] == second_id
    trainer.train()  # train() again on the same Trainer and callback: a new run too, not a zig-zag
    second.finish()
    assert second.tracker.id not in (first.tracker.id, second_id)
    runs = list_runs(root, project="fresh")
    assert len(runs) == 3 and all(r.state == "finished" for r in runs)
    assert all(r.series("loss").steps.tolist() == [1, 2] for r in runs)


def test_evaluate_without_train_is_recorded_but_never_resumed_into(tmp_path, root, tok):
    cb = TunetrackCallback(dir=root, name="eval-only")
    trainer = Trainer(
        model=build_model(tok), args=_args(tmp_path), eval_dataset=build_dataset(tok, rows=8), callbacks=[cb]
    )
    metrics = trainer.evaluate()
    cb.finish()
    run = open_run("eval-only", dir=root)
    assert run.series("eval_loss").values.tolist() == [metrics["eval_loss"]]
    assert run.config["model_config"]["hidden_size"] == 64  # config recorded on the lazy start too
    assert [e["kind"] for e in run.events()] == ["evaluation"]
    assert not (tmp_path / RUN_FILE).exists()


@pytest.mark.filterwarnings("ignore:`is_gradient_checkpointing` is deprecated:FutureWarning")
def test_peft_config_is_nested_with_its_sets(tmp_path, root, tok):
    from peft import LoraConfig, get_peft_model

    model = get_peft_model(
        build_model(tok),
        LoraConfig(r=4, lora_alpha=8, target_modules={"q_proj", "v_proj"}, task_type="CAUSAL_LM"),
    )
    cb = TunetrackCallback(dir=root, name="lora")
    Trainer(
        model=model, args=_args(tmp_path, max_steps=2), train_dataset=build_dataset(tok), callbacks=[cb]
    ).train()
    cb.finish()
    config = open_run("lora", dir=root).config
    lora = config["peft_config"]["default"]
    assert lora["r"] == 4 and lora["target_modules"] == ["q_proj", "v_proj"]  # a set, stored sorted
    assert config["model_config"]["hidden_size"] == 64
    assert 0 < config["trainable_parameters"] < config["num_parameters"]


def test_explicit_run_id_reattaches(tmp_path, root, tok):
    first = TunetrackCallback(dir=root, project="explicit")
    Trainer(
        model=build_model(tok),
        args=_args(tmp_path / "a", max_steps=3),
        train_dataset=build_dataset(tok),
        callbacks=[first],
    ).train()
    first.finish()
    run_id = first.tracker.id

    # A fresh train() into that run (another output_dir): the new attempt supersedes the old rows.
    again = TunetrackCallback(dir=root, resume=run_id)
    trainer = Trainer(
        model=build_model(tok, seed=1),
        args=_args(tmp_path / "b", max_steps=2),
        train_dataset=build_dataset(tok),
        callbacks=[again],
    )
    trainer.train()
    again.finish()
    # evaluate() alone into the same run: recorded, and nothing is rewound.
    late = TunetrackCallback(dir=root, resume=run_id)
    Trainer(
        model=trainer.model,
        args=_args(tmp_path / "c"),
        eval_dataset=build_dataset(tok, rows=8),
        callbacks=[late],
    ).evaluate()
    late.finish()

    (run,) = list_runs(root, project="explicit")
    assert run.id == run_id and run.state == "finished" and len(run.meta["processes"]) == 3  # attempts
    assert run.series("loss").values.tolist() == [h["loss"] for h in trainer.state.log_history if "loss" in h]
    assert run.series("loss").steps.tolist() == [1, 2]
    assert run.series("eval_loss").steps.tolist() == [0]  # a fresh Trainer's evaluate() is at step 0
    assert [e["step"] for e in run.events() if e["kind"] == "rewind"] == [0]


RESUME = """
import os, sys
sys.path.insert(0, sys.argv[3])
from _tiny import build_dataset, build_model, build_tokenizer
from transformers import Trainer, TrainingArguments
from tunetrack.integrations.transformers import TunetrackCallback
out, elsewhere = sys.argv[1], sys.argv[2]
os.chdir(elsewhere)  # no dir= and no TUNETRACK_DIR: the run is found through output_dir/.tunetrack_run
tok = build_tokenizer()
args = TrainingArguments(output_dir=out, max_steps=15, per_device_train_batch_size=4, logging_steps=1,
                         save_strategy="steps", save_steps=5, report_to="none", use_cpu=True, disable_tqdm=True,
                         learning_rate=1e-3)
trainer = Trainer(model=build_model(tok), args=args, train_dataset=build_dataset(tok),
                  callbacks=[TunetrackCallback(project="resume")])
trainer.train(resume_from_checkpoint=sys.argv[4])
"""


def test_resume_from_checkpoint_in_a_new_process_rewinds(tmp_path, root, tok):
    out = tmp_path / "out"
    # First attempt: 10 steps, checkpoints at 5 and 10 (its steps 6..10 are redone by the second attempt).
    cb = TunetrackCallback(dir=root, project="resume")
    first = Trainer(
        model=build_model(tok),
        args=_args(out, max_steps=10, save_strategy="steps", save_steps=5),
        train_dataset=build_dataset(tok),
        callbacks=[cb],
    )
    first.train()
    cb.finish()
    run_id = json.loads((out / RUN_FILE).read_text())["id"]
    assert run_id == cb.tracker.id

    # Second attempt, a new process: resume from checkpoint-5 and train on to step 15.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    run_script(
        RESUME, str(out), str(elsewhere), EXAMPLES_DIR, str(out / "checkpoint-5"), env={"TUNETRACK_DIR": ""}
    )
    assert not (elsewhere / "tunetrack_runs").exists()

    (run,) = list_runs(root, project="resume")
    assert run.id == run_id and run.state == "finished"
    assert len(run.meta["processes"]) == 2
    loss = run.series("loss")
    assert loss.steps.tolist() == list(range(1, 16))  # each step once, no zig-zag
    # Steps 1..5 from the first attempt, 6..15 from the second: exactly the resumed Trainer's history.
    history = json.loads((out / "checkpoint-15" / "trainer_state.json").read_text())["log_history"]
    assert loss.values.tolist() == [h["loss"] for h in history if "loss" in h]
    first_losses = [h["loss"] for h in first.state.log_history if "loss" in h]
    assert loss.values.tolist()[:5] == first_losses[:5]
    assert [e["step"] for e in run.events() if e["kind"] == "rewind"] == [5]
    assert run.series("train_loss").steps.tolist() == [15]  # the first attempt's final record is superseded


def test_optuna_search_one_run_per_trial_pruned_marked(tmp_path, root, tok):
    import optuna

    class PruneFirstTrial(optuna.pruners.BasePruner):
        def prune(self, study, trial):
            return trial.number == 0  # at its first report (step 2); the second trial completes

    cb = TunetrackCallback(dir=root, project="hpo", name="search", tags=["sweep"])
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
        hp_space=lambda t: {"learning_rate": t.suggest_float("learning_rate", 1e-4, 1e-2, log=True)},
    )
    cb.finish()
    second, first = list_runs(root, project="hpo")  # newest first
    assert (first.name, second.name) == ("search-trial-0", "search-trial-1")
    for number, run in enumerate((first, second)):
        assert run.state == "finished"
        lr = run.config["trial"]["params"]["learning_rate"]
        assert run.tags == ["sweep", f"learning_rate={lr}"]
        assert run.config["args"]["learning_rate"] == lr  # args carry the trial's parameters
        assert run.config["trial"]["number"] == number
    assert first.config["trial"]["pruned"] is True and second.config["trial"]["pruned"] is False
    assert [e["step"] for e in first.events() if e["kind"] == "pruned"] == [2]
    assert first.series("loss").steps.tolist() == [1, 2]
    assert [e for e in second.events() if e["kind"] == "pruned"] == []
    assert second.series("loss").steps.tolist() == [1, 2, 3, 4, 5, 6]
    assert not (tmp_path / RUN_FILE).exists()  # trials are never resumed into
    assert first.config["trial"]["study"].startswith("search-")  # one study: the search groups as one
    _, groups = group_runs([first, second], "trial.study", "loss:min")
    assert [len(g.runs) for g in groups] == [2]


TORCHRUN = """
import os, sys
sys.path.insert(0, sys.argv[3])
from _tiny import build_dataset, build_model, build_tokenizer
from transformers import Trainer, TrainingArguments
from tunetrack.integrations.transformers import TunetrackCallback
tok = build_tokenizer()
args = TrainingArguments(output_dir=sys.argv[1], max_steps=6, per_device_train_batch_size=2, logging_steps=1,
                         save_strategy="no", report_to="none", use_cpu=True, disable_tqdm=True, ddp_backend="gloo")
trainer = Trainer(model=build_model(tok), args=args, train_dataset=build_dataset(tok),
                  callbacks=[TunetrackCallback(dir=sys.argv[2], project="ddp")])
trainer.train()
trainer.evaluate(build_dataset(tok, rows=8))
# As a well-behaved DDP script ends: ranks leave together (a rank that exits while the other still
# works can abort in gloo's teardown, "terminate called without an active exception").
import torch.distributed as dist
dist.barrier()
dist.destroy_process_group()
"""


def test_torchrun_two_processes_give_one_run(tmp_path, root):
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
    assert run.series("eval_loss").steps.tolist() == [6]
    # rank 0 records the run; rank 1 joins it with its console only (what it printed)
    assert sorted(p["role"] for p in run.meta["processes"]) == ["console", "primary"]
    assert run.config["args"]["ddp_backend"] == "gloo"


@pytest.mark.filterwarnings("ignore:tunetrack. training health")  # expected here
def test_on_nan_stop_saves_and_stops_cleanly(tmp_path, root, tok):
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
    assert ("stop", 4) in kinds and ("checkpoint", 4) in kinds
    assert run.state == "stopped" and run.stop_request["reason"] == "non-finite loss or gradient norm"
    # The Trainer's default logging_nan_inf_filter hides a NaN loss (it logs the running mean instead);
    # the gradient norm still shows it, and that is enough to stop.
    assert [(e["step"], e["problem"]) for e in run.events() if e["kind"] == "health"] == [
        (4, "grad_norm_nonfinite")
    ]
    assert (tmp_path / "out" / "checkpoint-4").is_dir()


def test_quickstart_example(tmp_path, monkeypatch, capsys):
    """The README's main job, in-process (the imports are already paid for)."""
    monkeypatch.setenv("TUNETRACK_DIR", str(tmp_path / "store"))
    monkeypatch.setattr(sys, "argv", ["quickstart.py"])
    runpy.run_path(str(Path(EXAMPLES_DIR) / "quickstart.py"), run_name="__main__")
    (run,) = list_runs(tmp_path / "store", project="quickstart")
    out = capsys.readouterr().out
    assert run.id in out and str(tmp_path / "store") in out
    assert run.state == "finished"
    assert run.series("loss").steps.tolist() == list(range(1, 31))
    assert run.series("eval_loss").steps.tolist() == [
        10,
        20,
        30,
        30,
    ]  # the last one: evaluate() after train()


@dataclass
class Mirrored:
    """One Trainer run mirrored into every backend at once, and where each backend keeps it."""

    trainer: Trainer
    run_path: Path
    run_id: str
    mlflow_url: str
    trackio_dir: Path
    wandb_dir: Path

    @property
    def losses(self) -> list[float]:
        return [h["loss"] for h in self.trainer.state.log_history if "loss" in h]

    @property
    def out(self) -> Path:
        """The Trainer's output folder, where its checkpoints are."""
        return Path(self.trainer.args.output_dir).absolute()


@pytest.fixture(scope="module")
def mirrored(tmp_path_factory, tok, _mlflow_session_server) -> Mirrored:
    """A 12-step Trainer run with ``TunetrackCallback(backends=[...])`` naming all four trackers, as a
    user mirroring into several at once writes it (the Trainer's own integrations off:
    ``report_to="none"``); each test reads one tracker back with that tracker's own reader. One run,
    not one per tracker: the fan-out is the same code whichever backends it holds."""
    from tunetrack.backends.wandb import WandbBackend

    base = tmp_path_factory.mktemp("mirrored")
    trackio_dir, wandb_dir = base / "trackio", base / "wandb"
    with pytest.MonkeyPatch.context() as env:
        env.setenv("MLFLOW_TRACKING_URI", _mlflow_session_server.url)  # MLflow's own settings
        env.setenv("TRACKIO_DIR", str(trackio_dir))
        backends = ["tensorboard", "mlflow", "trackio", WandbBackend(mode="offline", dir=wandb_dir)]
        cb = TunetrackCallback(project="hf-mirrored", name="mirrored", dir=base / "runs", backends=backends)
        # saves every 6 steps, keeping one: checkpoint-6 is deleted by the time checkpoint-12 is saved
        saves = dict(save_strategy="steps", save_steps=6, save_total_limit=1)
        trainer = Trainer(
            model=build_model(tok),
            args=_args(base / "out", **saves),
            train_dataset=build_dataset(tok),
            callbacks=[cb],
        )
        trainer.train()
        cb.finish()
    run = open_run("mirrored", dir=base / "runs")
    return Mirrored(trainer, run.path, run.id, _mlflow_session_server.url, trackio_dir, wandb_dir)


def test_backends_mirror_the_trainer_into_tensorboard(mirrored):
    """``TunetrackCallback(backends=[...])``: the same run, live, in TensorBoard's event files."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(mirrored.run_path / "tensorboard"), size_guidance={"scalars": 0, "tensors": 0})
    acc.Reload()
    assert [e.step for e in acc.Scalars("loss")] == list(range(1, 13))
    assert [e.value for e in acc.Scalars("loss")] == pytest.approx(mirrored.losses, rel=1e-6)
    assert "learning_rate" in acc.Tags()["scalars"] and "perf/steps_per_s" in acc.Tags()["scalars"]
    assert b"per_device_train_batch_size" in acc.Tensors("config")[0].tensor_proto.string_val[0]


def test_backends_mirror_the_trainer_into_an_mlflow_server(mirrored):
    """``backends=["mlflow"]`` with MLflow's own settings: the Trainer's run on a real tracking server,
    read back with ``MlflowClient`` (the server is shared: the run is found by its tag)."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(mirrored.mlflow_url)
    experiment = client.get_experiment_by_name("hf-mirrored")
    (remote,) = client.search_runs(
        [experiment.experiment_id], f"tags.`tunetrack.run_id` = '{mirrored.run_id}'"
    )
    assert remote.info.status == "FINISHED" and remote.info.run_name == "mirrored"
    loss = client.get_metric_history(remote.info.run_id, "loss")
    assert sorted(m.step for m in loss) == list(range(1, 13))
    assert [m.value for m in sorted(loss, key=lambda m: m.step)] == pytest.approx(mirrored.losses)
    params = remote.data.params  # the Trainer's config, flattened with dots as MLflow users expect
    batch = [v for k, v in params.items() if k.endswith("per_device_train_batch_size")]
    assert batch == [str(mirrored.trainer.args.per_device_train_batch_size)], sorted(params)[:20]
    # each checkpoint a logged model of the run: a reference to its folder, its loss linked to it,
    # the one rotation removed tagged deleted; no weights uploaded
    models = client.search_logged_models(
        [experiment.experiment_id], filter_string=f"source_run_id = '{remote.info.run_id}'"
    )
    got = {m.name: m for m in models}
    assert sorted(got) == ["checkpoint-12", "checkpoint-6"]
    for step, model in ((6, got["checkpoint-6"]), (12, got["checkpoint-12"])):
        assert model.tags["tunetrack.checkpoint.path"] == str(mirrored.out / f"checkpoint-{step}")
        assert [(m.key, m.step) for m in model.metrics or [] if m.key == "loss"] == [("loss", step)]
        assert client.list_artifacts(remote.info.run_id, "checkpoint") == []  # never uploaded
    assert got["checkpoint-6"].tags.get("tunetrack.checkpoint.deleted") == "true"
    assert "tunetrack.checkpoint.deleted" not in got["checkpoint-12"].tags
    assert int(got["checkpoint-12"].tags["tunetrack.checkpoint.bytes"]) > 0


def test_backends_mirror_the_trainer_into_trackio(mirrored, monkeypatch):
    """``backends=["trackio"]``: the Trainer's run in trackio's local store, read back through
    trackio's API."""
    monkeypatch.setenv("TRACKIO_DIR", str(mirrored.trackio_dir))
    from trackio.sqlite_storage import SQLiteStorage

    logs = [e for e in SQLiteStorage.get_logs("hf-mirrored", "mirrored") if "loss" in e]
    assert [e["step"] for e in logs] == list(range(1, 13))
    assert [e["loss"] for e in logs] == pytest.approx(mirrored.losses, rel=1e-6)
    config = SQLiteStorage.get_run_config("hf-mirrored", "mirrored")
    assert '"learning_rate": 0.001' in json.dumps(config)  # the Trainer's arguments, as captured
    # each checkpoint a version of a model artifact referencing its files: nothing copied (step-6 too,
    # unless rotation removed it before trackio's thread got to it)
    (art,) = SQLiteStorage.get_artifacts("hf-mirrored")
    assert (art["name"], art["type"]) == (f"checkpoint-{mirrored.run_id}", "model")
    manifest = SQLiteStorage.get_artifact_manifest("hf-mirrored", art["name"], "step-12")["manifest"]
    folder = mirrored.out / "checkpoint-12"
    assert {e["path"]: e["ref"] for e in manifest} == {
        f"checkpoint-12/{p.name}": p.as_uri() for p in folder.iterdir()
    }
    assert art["num_versions"] in (1, 2)


def test_backends_mirror_the_trainer_into_wandb_offline(mirrored):
    """``backends=[WandbBackend(mode="offline")]``: the Trainer's run in a W&B offline run file, read
    with W&B's protobuf schema."""
    from support.wandb_files import read_run, records, run_files

    (path,) = run_files(mirrored.wandb_dir)
    got = read_run(path)
    losses = {step: row["loss"] for step, row in got["history"].items() if "loss" in row}
    assert sorted(losses) == list(range(1, 13))
    assert [losses[s] for s in range(1, 13)] == pytest.approx(mirrored.losses, rel=1e-6)
    assert got["name"] == "mirrored" and got["exit_code"] == 0
    assert "learning_rate" in json.dumps(got["config"])
    # each checkpoint a version of a model artifact holding a reference to its folder, never its files
    # (checkpoint-6 too, unless rotation removed it before W&B's thread got to it: W&B refuses that)
    logged = [r.artifact for r in records(path) if r.WhichOneof("record_type") == "artifact"]
    assert {(a.name, a.type) for a in logged} == {(f"checkpoint-{got['id']}", "model")}
    steps = [json.loads(a.metadata)["step"] for a in logged]
    assert steps in ([6, 12], [12])
    last = {e.path: e.ref for e in logged[-1].manifest.contents}
    folder = mirrored.out / "checkpoint-12"
    assert last == {f"checkpoint-12/{p.name}": p.as_uri() for p in folder.iterdir()}


def test_inputs_and_lineage_from_a_data_set_to_every_run_trained_on_it(tmp_path, root, tok):
    """Two Trainer runs on one data set and one base model, and a third that starts from the first
    one's checkpoint: the callback records each run's model, data set and tokenizer as inputs (no
    code beyond the callback), so the data set's lineage reaches all three runs and the checkpoint's
    reaches the run made from it."""
    data = build_dataset(tok)

    def train(name: str, model, saves: bool) -> None:
        save = dict(save_strategy="steps", save_steps=3) if saves else {}
        Trainer(
            model=model,
            args=_args(tmp_path / name, max_steps=3, **save),
            train_dataset=data,
            processing_class=tok,
            callbacks=[TunetrackCallback(project="lineage", name=name, dir=root)],
        ).train()

    train("first", build_model(tok), saves=True)
    train("second", build_model(tok, seed=1), saves=False)  # other weights, the same architecture
    from transformers import AutoModelForCausalLM

    train(
        "from-first", AutoModelForCausalLM.from_pretrained(tmp_path / "first" / "checkpoint-3"), saves=False
    )

    def inputs(name: str) -> dict[str, str]:
        used = [e for e in open_run(name, dir=root).events() if e["kind"] == "artifact_used"]
        return {e["type"]: f"{e['name']}:v{e['version']}" for e in used}

    first, second, child = inputs("first"), inputs("second"), inputs("from-first")
    assert set(first) == set(second) == set(child) == {"model", "dataset", "tokenizer"}
    assert first == second  # the same data set, tokenizer and (untrained, from one config) model
    assert child["dataset"] == first["dataset"] and child["model"] != first["model"]
    listed = json.loads(_cli(root, "artifacts", "--json"))
    assert {a["kind"] for a in listed} == {"model", "dataset", "tokenizer"}
    assert all(a["reference"] and a["bytes"] == 0 for a in listed)  # inputs are referenced, never copied
    graph = json.loads(_cli(root, "lineage", first["dataset"], "--json"))
    runs = {n["label"] for n in graph["nodes"] if n["type"] == "run"}
    assert runs == {"first", "second", "from-first"}
    text = _cli(root, "lineage", "first@3")
    assert "└── used by run from-first (" in text and "└── saved by run first (" in text


def _cli(root, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "tunetrack", *args, "--dir", str(root)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(SRC)},
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_gradient_norm_distributions_on_request(tmp_path, root, tok):
    """``grad_distributions=True``: at each logging step, the histogram of the parameters' gradient
    norms, equal to the one made from the gradients the optimizer is about to use (read here by a
    callback of the test's own, after tunetrack's); none by default."""
    import numpy as np
    import torch

    seen: dict[int, list[float]] = {}

    class Norms(TrainerCallback):
        def on_pre_optimizer_step(self, args, state, control, model=None, **kwargs):
            seen[state.global_step + 1] = [
                float(torch.linalg.vector_norm(p.grad)) for p in model.parameters() if p.grad is not None
            ]

    cb = TunetrackCallback(project="hf", name="grads", dir=root, grad_distributions=True)
    Trainer(
        model=build_model(tok),
        args=_args(tmp_path / "out", max_steps=6, logging_steps=2),
        train_dataset=build_dataset(tok),
        callbacks=[cb, Norms()],
    ).train()
    run = open_run(cb.tracker.id, root)
    (key,) = run.histograms()
    logged = run.histograms()[key]
    assert key == "grad_norm/parameters" and [h.step for h in logged] == [2, 4, 6]
    for h in logged:
        counts, edges = np.histogram(np.asarray(seen[h.step]), bins=64)
        assert h.counts.tolist() == counts.tolist() and np.allclose(h.edges, edges, rtol=1e-6)
    assert [s for s in run.series("loss").steps] == [2, 4, 6]  # the Trainer's rows as before
    plain = TunetrackCallback(project="hf", name="no-grads", dir=root)
    Trainer(
        model=build_model(tok),
        args=_args(tmp_path / "out2", max_steps=2, logging_steps=1),
        train_dataset=build_dataset(tok),
        callbacks=[plain],
    ).train()
    assert open_run(plain.tracker.id, root).histograms() == {}
