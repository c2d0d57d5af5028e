"""``import tunetrack.wandb as wandb``: a script written for W&B (examples/wandb_api/train.py, a
nanoGPT-style loop using W&B's config, define_metric, log with and without commit, explicit steps,
nested dicts, a table, a histogram, summary and finish) run unmodified but for its import line, and
compared with what the same script records through W&B itself in offline mode."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from support.helpers import run_script
from support.wandb_files import read_run, run_files
from tunetrack import open_run

EXAMPLE = Path(__file__).parents[2] / "examples" / "wandb_api" / "train.py"
W_AND_B_ONLY = {"_step", "_runtime", "_timestamp"}


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    """The example's run through W&B (offline) and through tunetrack, each in a fresh process."""
    base = tmp_path_factory.mktemp("wandb-api")
    wandb_dir, root = base / "wandb-dir", base / "runs"
    wandb_dir.mkdir()
    script = EXAMPLE.read_text()
    assert script.count("\nimport wandb\n") == 1
    ours = script.replace("\nimport wandb\n", "\nimport tunetrack.wandb as wandb\n")
    env = {"WANDB_MODE": "offline", "WANDB_DIR": str(wandb_dir), "TUNETRACK_DIR": str(root)}
    theirs_done = run_script(script, env=env, timeout=300)
    ours_done = run_script(ours, env=env, timeout=300)
    assert "finished" in theirs_done.stderr and "finished" in ours_done.stderr
    assert "TunetrackWarning" not in ours_done.stderr, ours_done.stderr  # all of it is supported
    (path,) = run_files(wandb_dir)
    (run,) = [r for r in __import__("tunetrack").list_runs(root)]
    return read_run(path, nested="."), open_run(run.id, dir=root), path.parent


def test_the_same_history(both):
    theirs, ours, _ = both
    history = {
        s: {k: v for k, v in row.items() if k not in W_AND_B_ONLY} for s, row in theirs["history"].items()
    }
    scalars = {s: {k: v for k, v in row.items() if isinstance(v, int | float)} for s, row in history.items()}
    media = ("samples.", "weights.")  # a table's and a histogram's own fields: compared below
    keys = sorted({k for row in scalars.values() for k in row if not k.startswith(media)})
    assert keys == ["iter", "lr", "train.grad_norm", "train.loss", "val/loss", "val/perplexity"]
    frame = ours.history()
    assert frame["step"].tolist() == sorted(scalars) == list(range(120))
    for key in keys:
        got = {int(s): v for s, v in zip(frame["step"], frame[key]) if not math.isnan(v)}
        want = {s: float(row[key]) for s, row in scalars.items() if key in row}
        assert got == want, key  # every step and value, exactly
    assert sorted(s for s, row in scalars.items() if "val/loss" in row) == [0, 40, 80]


def test_the_same_config_name_tags_and_state(both):
    theirs, ours, _ = both
    assert {k: v for k, v in theirs["config"].items() if k != "_wandb"} == ours.config
    assert theirs["name"] == ours.name == "char-lm" and theirs["tags"] == ours.tags == ["tiny", "cpu"]
    assert ours.project == "nanogpt-tiny" and ours.state == "finished" and theirs["exit_code"] == 0


def test_the_table_the_histogram_and_the_summary(both):
    theirs, ours, wandb_run_dir = both
    row = theirs["history"][119]
    (table_file,) = wandb_run_dir.glob(f"files/{row['samples.path']}")
    table = json.loads(table_file.read_text())
    (samples,) = ours.texts("samples")
    assert samples["step"] == 119
    assert samples["rows"] == [dict(zip(table["columns"], r)) for r in table["data"]]
    # W&B keeps the values' 64 bins; tunetrack the same histogram (tunetrack.Histogram)
    (histogram,) = [h for h in ours.histograms("weights")["weights"] if h.step == 119]
    assert histogram.counts.tolist() == row["weights.values"]
    assert histogram.edges.tolist() == pytest.approx(row["weights.bins"])
    assert "weights/count" not in ours.keys()
    (summary,) = [e for e in ours.events() if e["kind"] == "summary"]
    assert summary["final_train_loss"] == theirs["summary"]["final_train_loss"]
    (defined,) = [e for e in ours.events() if e["kind"] == "define_metric"]
    assert defined["name"] == "val/loss" and defined["summary"] == "min"


def test_unsupported_calls_warn_once_and_never_raise(tmp_path):
    done = run_script(
        """
        import tunetrack.wandb as wandb
        run = wandb.init(project="p", name="odd", id="my-run_1", mode="offline", settings=object())
        wandb.save("model.pt")
        wandb.save("other.pt")
        run.log_artifact("x")
        wandb.watch(object())
        wandb.log({"loss": 1.0, "obj": object()})
        wandb.log({"loss": 0.5}, step=0)  # lower than the current step: ignored, as W&B does
        wandb.finish(exit_code=1)
        print("done")
        """,
        env={"TUNETRACK_DIR": str(tmp_path)},
    )
    assert done.stdout.strip() == "done"
    assert done.stderr.count("wandb.save is not supported") == 1
    for said in (
        "init(settings=...)",
        "run.log_artifact",
        "watch() is a no-op",
        "lower than the current step",
    ):
        assert said in done.stderr
    run = open_run("my-run_1", dir=tmp_path)
    assert run.state == "failed" and run.series("loss").values.tolist() == [1.0]


def test_disabled_mode_records_nothing(tmp_path):
    run_script(
        """
        import tunetrack.wandb as wandb
        wandb.init(project="p", mode="disabled")
        wandb.log({"loss": 1.0})
        wandb.finish()
        """,
        env={"TUNETRACK_DIR": str(tmp_path / "runs")},
    )
    assert not (tmp_path / "runs").exists()


def test_the_example_is_a_plain_wandb_script():
    """Nothing of tunetrack in its code (its docstring says how to switch): the fixture changes only
    its import line."""
    assert "tunetrack" not in EXAMPLE.read_text().split('"""', 2)[2]
