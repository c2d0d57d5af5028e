"""lm-evaluation-harness on a real run's checkpoints: a tiny Llama trained by the real Trainer on CPU
saves full-model checkpoints with its tokenizer, lm-eval's ``hf`` model loads two of them and scores
them on a multiple-choice task of local rows, and the scores land on both checkpoints and at their
steps in the run's history, read back by ``open_run`` and ``tunetrack checkpoints --suite``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from _tiny import build_dataset, build_model, build_tokenizer
from lm_eval.tasks import TaskManager
from transformers import Trainer, TrainingArguments

from support.helpers import SRC
from tunetrack.integrations.lm_eval import evaluate_checkpoint, scores
from tunetrack.integrations.transformers import TunetrackCallback
from tunetrack.reader import open_run

ROWS = [
    {"question": "the quick brown fox jumps over the", "choices": ["lazy dog", "red car"], "answer": 0},
    {"question": "two plus two is", "choices": ["seven", "four"], "answer": 1},
    {"question": "a tracker records", "choices": ["hyperparameters", "potatoes"], "answer": 0},
    {"question": "fine-tuning a small language model on a cpu is", "choices": ["fast", "slow"], "answer": 1},
    {"question": "write a response that completes the", "choices": ["request", "river"], "answer": 0},
    {"question": "what is two plus", "choices": ["blue", "two"], "answer": 1},
    {"question": "the state of every", "choices": ["run", "cloud"], "answer": 0},
    {"question": "below is an instruction that describes a", "choices": ["tree", "task"], "answer": 1},
]
TASK = """\
task: tiny_mc
dataset_path: json
dataset_kwargs:
  data_files:
    test: {rows}
test_split: test
output_type: multiple_choice
doc_to_text: "{{{{question}}}}"
doc_to_choice: "{{{{choices}}}}"
doc_to_target: answer
metric_list:
  - metric: acc
    aggregation: mean
    higher_is_better: true
metadata:
  version: 1.0
"""


def _task(folder: Path) -> Path:
    """A task of lm-eval's own YAML form over rows in a local JSON Lines file."""
    folder.mkdir()
    rows = folder / "rows.jsonl"
    rows.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    (folder / "tiny_mc.yaml").write_text(TASK.format(rows=rows))
    return folder


def test_lm_eval_scores_land_on_two_checkpoints_and_at_their_steps(tmp_path, root):
    tok = build_tokenizer()
    cb = TunetrackCallback(project="lmeval", name="tiny-lm", dir=root)
    args = TrainingArguments(
        output_dir=str(tmp_path / "out"),
        max_steps=6,
        per_device_train_batch_size=4,
        logging_steps=1,
        save_strategy="steps",
        save_steps=3,
        report_to="none",
        use_cpu=True,
        learning_rate=1e-3,
        disable_tqdm=True,
    )
    trainer = Trainer(
        model=build_model(tok),
        args=args,
        train_dataset=build_dataset(tok, rows=24),
        processing_class=tok,  # the tokenizer is saved with each checkpoint: lm-eval loads the folder
        callbacks=[cb],
    )
    trainer.train()
    cb.finish()
    run_id = cb.tracker.id
    assert [c.step for c in open_run(run_id, dir=root).checkpoints()] == [3, 6]

    manager = TaskManager(include_path=str(_task(tmp_path / "tasks")), include_defaults=False)
    got = {}
    for step in (3, 6):
        results = evaluate_checkpoint(
            f"{run_id}@{step}", ["tiny_mc"], dir=root, task_manager=manager, device="cpu", batch_size=4
        )
        got[step] = scores(results)
        assert set(got[step]) >= {"tiny_mc/acc", "tiny_mc/acc_stderr"}
        assert results["n-samples"]["tiny_mc"]["effective"] == len(ROWS)

    run = open_run(run_id, dir=root)
    assert run.state == "finished" and run.last_step == 6
    for checkpoint in run.checkpoints():
        (evaluation,) = checkpoint.evaluations["lm-eval"]
        assert evaluation.results == got[checkpoint.step]
        assert evaluation.config["tasks"] == ["tiny_mc"] and evaluation.config["n-shot"] == {"tiny_mc": 0}
    acc = run.series("lm-eval/tiny_mc/acc")
    assert acc.steps.tolist() == [3, 6]
    assert acc.values.tolist() == [got[3]["tiny_mc/acc"], got[6]["tiny_mc/acc"]]

    # the command a user types, in a process of its own
    cli = subprocess.run(
        [sys.executable, "-m", "tunetrack", "checkpoints", run_id, "--dir", str(root), "--suite", "lm-eval"]
        + ["--json"],
        env={"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    listed = json.loads(cli.stdout)
    assert [c["evaluations"]["lm-eval"][0]["results"] for c in listed] == [got[3], got[6]]
    table = subprocess.run(
        [sys.executable, "-m", "tunetrack", "checkpoints", run_id, "--dir", str(root), "--suite", "lm-eval"]
        + ["--best", "tiny_mc/acc:max"],
        env={"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin", "COLUMNS": "200"},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert "tiny_mc/acc" in table.stdout and "best by tiny_mc/acc:max" in table.stdout, table.stdout
