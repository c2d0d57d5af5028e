"""A Trainer run forked from a checkpoint of another with ``TunetrackCallback(fork_from=)``, then
resumed: real training of a tiny Llama on CPU, each attempt a process of its own, as a user runs them."""

from __future__ import annotations

import json

from support.helpers import EXAMPLES_DIR, run_script
from tunetrack.integrations.support.resume import MARKER as RUN_FILE
from tunetrack.reader import open_run
from tunetrack.reader.as_text import facts

TRAIN = """
import sys
sys.path.insert(0, sys.argv[1])
from _tiny import build_dataset, build_model, build_tokenizer
from transformers import Trainer, TrainingArguments
from tunetrack.integrations.transformers import TunetrackCallback
out, root, name, lr, fork_from, checkpoint = sys.argv[2:8]
tok = build_tokenizer()
args = TrainingArguments(output_dir=out, max_steps=15, per_device_train_batch_size=4, logging_steps=1,
                         save_strategy="steps", save_steps=5, report_to="none", use_cpu=True,
                         disable_tqdm=True, learning_rate=float(lr))
callback = TunetrackCallback(dir=root, project="forks", name=name, fork_from=fork_from or None)
trainer = Trainer(model=build_model(tok), args=args, train_dataset=build_dataset(tok), callbacks=[callback])
trainer.train(resume_from_checkpoint=checkpoint or None)
"""


def _train(out, root, name: str, lr: str, fork_from: str = "", checkpoint: str = "") -> None:
    run_script(TRAIN, EXAMPLES_DIR, str(out), str(root), name, lr, fork_from, checkpoint, timeout=600)


def _losses(checkpoint) -> list[tuple[int, float]]:
    """(step, loss) of every training log the Trainer kept in a checkpoint: its whole history."""
    history = json.loads((checkpoint / "trainer_state.json").read_text())["log_history"]
    return [(h["step"], h["loss"]) for h in history if "loss" in h]


def test_a_trainer_run_forked_from_a_checkpoint_reads_the_parents_steps_then_its_own(tmp_path, root):
    parent_out, fork_out = tmp_path / "parent", tmp_path / "fork"
    _train(parent_out, root, "parent", "1e-3")
    parent = open_run("parent", dir=root)

    # the fork: from the parent's checkpoint at step 5, with another learning rate, in its own folder
    _train(fork_out, root, "fork", "3e-4", f"{parent.id}@5", str(parent_out / "checkpoint-5"))
    fork = open_run("fork", dir=root)
    assert fork.id != parent.id and fork.fork == {"run": parent.id, "step": 5}
    assert json.loads((fork_out / RUN_FILE).read_text())["id"] == fork.id  # a resume finds the fork
    loss = fork.series("loss")
    assert list(zip(loss.steps.tolist(), loss.values.tolist())) == _losses(fork_out / "checkpoint-15")
    assert loss.values.tolist()[:5] == parent.series("loss").values.tolist()[:5]
    # referenced, not copied: the fork's own processes logged from step 6 on
    own = [s for name, s in fork.process_series("loss").items() if name in {p.name for p in fork.processes}]
    assert [step for s in own for step in s.steps.tolist()] == list(range(6, 16))
    said = dict(facts(fork))
    assert said["forked from"] == f"{parent.id}@5 (parent)"
    assert "args.learning_rate: 0.001 -> 0.0003" in said["changed from parent"]
    assert dict(facts(parent))["forks"] == f"{fork.id}@5 (fork)"

    # the fork is resumed from its own checkpoint at step 10 (the same command, fork_from and all)
    _train(fork_out, root, "fork", "3e-4", f"{parent.id}@5", str(fork_out / "checkpoint-10"))
    resumed = open_run("fork", dir=root)
    assert resumed.id == fork.id and len(resumed.meta["processes"]) == 2
    assert resumed.fork == {"run": parent.id, "step": 5}  # the branch point is kept
    loss = resumed.series("loss")
    assert list(zip(loss.steps.tolist(), loss.values.tolist())) == _losses(fork_out / "checkpoint-15")
    assert [(e["kind"], e["step"]) for e in resumed.events() if e["kind"] in ("fork", "rewind")] == [
        ("fork", 5),
        ("rewind", 10),
    ]
    assert open_run("parent", dir=root).series("loss").steps.tolist() == list(range(1, 16))  # untouched
