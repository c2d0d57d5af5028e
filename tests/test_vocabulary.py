"""One list of run states and one list of loss-like keys, used by every part that needs them: a run
that logs its loss under another framework's spelling is treated alike by the health checks, the
listing, the console and the dashboard's runs table."""

from __future__ import annotations

import io
import math
import warnings

from click.testing import CliRunner

from tunetrack import STATES, Tracker, metric_keys
from tunetrack.backends import ConsoleBackend
from tunetrack.cli import cli
from tunetrack.cli.main import ls_command
from tunetrack.reader import Catalog, open_run, run_json


def test_the_states_are_one_list():
    (state_option,) = [p for p in ls_command.params if p.name == "state"]
    assert tuple(state_option.type.choices) == STATES
    assert STATES == ("running", "finished", "failed", "killed", "crashed")


def test_loss_under_any_known_spelling_is_a_loss_everywhere(root):
    stream = io.StringIO()
    t = Tracker(dir=root, name="tl", system=False, backends=[ConsoleBackend(stream=stream)]).start()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for step in range(1, 6):
            t.log({"epoch": float(step), "train/loss": 1.0 / step, "eval/loss": 2.0 / step}, step=step)
        t.log({"train/loss": math.nan}, step=6)
        t.finish()
    run = open_run(t.id, dir=root)
    # health: a NaN training loss is an event and one warning
    assert [(e["kind"], e["problem"], e["step"]) for e in run.events()] == [("health", "loss_nonfinite", 6)]
    assert sum("training health: train/loss" in str(w.message) for w in caught) == 1
    # the listing: loss-like columns
    table = CliRunner().invoke(cli, ["ls", "--dir", str(root)]).output
    header = [cell.strip() for cell in table.splitlines()[0].split("┃")]
    assert header[-2:] == ["train/loss", "eval/loss"]
    # the JSON shape (CLI and dashboard): the training loss under its own spelling
    assert run_json(run, run.latest())["loss"] is not None and math.isnan(run_json(run, run.latest())["loss"])
    (row,) = Catalog(root).rows()
    assert set(row["last"]) == {"train/loss", "eval/loss"} and row["last"]["eval/loss"] == 0.4
    # the console: well-known keys first, in the order of the lists
    first = next(line for line in stream.getvalue().splitlines() if "step 1 " in line)
    assert first.split("| ")[1:] == ["train/loss 1.000 ", "eval/loss 2.000 ", "epoch 1.000"]


def test_the_lists_do_not_overlap():
    groups = [metric_keys.LOSS, metric_keys.EVAL_LOSS, metric_keys.LEARNING_RATE, metric_keys.GRAD_NORM]
    keys = [k for group in groups for k in group]
    assert len(keys) == len(set(keys))
    assert (*metric_keys.LOSS, *metric_keys.EVAL_LOSS) == metric_keys.LOSS_LIKE
    assert metric_keys.main_loss({"eval_loss": 1.0, "train/loss": 2.0}) == 2.0
    assert metric_keys.main_loss({"eval_loss": 1.0}) is None
