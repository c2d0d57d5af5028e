"""Evaluations attached to checkpoints after the fact (``tunetrack.log_evaluation``): on a finished
run, on a run another process is still writing, twice, and on a checkpoint no run recorded; read back
by ``Run.checkpoints`` and ``series``, and compared by ``tunetrack checkpoints RUN --suite S``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import tunetrack
from support.helpers import spawn_script, wait_until
from tunetrack.cli import cli
from tunetrack.errors import CheckpointNotFound
from tunetrack.reader import open_run


def _trained(root: Path, tmp_path: Path, name: str = "trained") -> str:
    """A finished run that saved full-model checkpoints at steps 2 and 4."""
    with tunetrack.Tracker(dir=root, name=name, system=False) as t:
        for step in range(1, 5):
            t.log({"loss": 1.0 / step}, step=step)
            if step % 2 == 0:
                folder = tmp_path / "out" / f"checkpoint-{step}"
                folder.mkdir(parents=True)
                (folder / "model.safetensors").write_bytes(b"w" * 10)
                t.log_checkpoint(folder, metrics={"eval_loss": 0.9 / step})
        assert t.id is not None
        return t.id


def test_an_evaluation_lands_on_the_checkpoint_and_in_the_history_at_its_step(root, tmp_path):
    run_id = _trained(root, tmp_path)
    done = tunetrack.log_evaluation(
        f"{run_id}@2", {"mmlu": {"acc": 0.31}, "hellaswag/acc": 0.4}, suite="lm-eval", dir=root
    )
    assert (done.run, done.step, done.keys) == (run_id, 2, ["lm-eval/hellaswag/acc", "lm-eval/mmlu/acc"])
    by_path = tunetrack.log_evaluation(
        tmp_path / "out" / "checkpoint-4", {"mmlu/acc": 0.35}, suite="lm-eval", dir=root, config={"shots": 5}
    )
    assert by_path.step == 4

    run = open_run(run_id, dir=root)
    first, second = run.checkpoints()
    assert first.results("lm-eval") == {"mmlu/acc": 0.31, "hellaswag/acc": 0.4}
    assert first.metrics == {"eval_loss": 0.45}  # what training logged at the save is left as it was
    assert second.evaluations["lm-eval"][0].config == {"shots": 5}
    series = run.series("lm-eval/mmlu/acc")
    assert (series.steps.tolist(), series.values.tolist()) == ([2, 4], [0.31, 0.35])
    # the run is as training left it: its state, its last step, its loss curve
    assert (run.state, run.last_step, run.series("loss").steps.tolist()) == ("finished", 4, [1, 2, 3, 4])
    assert run.summary()["lm-eval/mmlu/acc"]["last"] == 0.35  # the latest checkpoint's score


def test_evaluating_twice_keeps_both_and_shows_the_latest(root, tmp_path):
    run_id = _trained(root, tmp_path)
    tunetrack.log_evaluation(f"{run_id}@4", {"acc": 0.2}, suite="lm-eval", dir=root)
    tunetrack.log_evaluation(f"{run_id}@4", {"acc": 0.3}, suite="lm-eval", dir=root)
    tunetrack.log_evaluation(f"{run_id}@4", {"pass@1": 0.1}, suite="humaneval", dir=root)
    (_, last) = open_run(run_id, dir=root).checkpoints()
    assert [e.results["acc"] for e in last.evaluations["lm-eval"]] == [0.2, 0.3]
    assert last.results() == {"lm-eval/acc": 0.3, "humaneval/pass@1": 0.1}

    out = CliRunner().invoke(cli, ["checkpoints", run_id, "--dir", str(root), "--suite", "lm-eval", "--json"])
    assert out.exit_code == 0, out.output
    rows = json.loads(out.output)
    assert [len(r["evaluations"].get("lm-eval", [])) for r in rows] == [0, 2]
    table = CliRunner().invoke(
        cli, ["checkpoints", run_id, "--dir", str(root), "--suite", "lm-eval", "--best", "acc:max"]
    )
    assert table.exit_code == 0, table.output
    assert "0.3" in table.output and "best by acc:max" in table.output and "step 4" in table.output


def test_an_evaluation_of_a_running_run_leaves_it_running(root, tmp_path):
    """Another process is still training: the evaluation joins the run as a process of its own, the
    run stays running, and training's later rows and its end are recorded as if nothing happened."""
    go = tmp_path / "go"
    child = spawn_script(
        """
        import sys, time
        from pathlib import Path
        import tunetrack
        root, out, go = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
        with tunetrack.Tracker(dir=root, name="live", system=False, console=False) as t:
            t.log({"loss": 1.0}, step=1)
            out.mkdir(parents=True)
            (out / "model.safetensors").write_bytes(b"w")
            t.log_checkpoint(out, step=1)
            t.flush()
            while not go.exists():
                time.sleep(0.05)
            t.log({"loss": 0.5}, step=2)
        """,
        str(root),
        str(tmp_path / "ckpt"),
        str(go),
    )
    try:
        wait_until(lambda: _checkpoints(root, "live"), timeout=60)
        tunetrack.log_evaluation("live@1", {"acc": 0.5}, suite="lm-eval", dir=root)
        assert open_run("live", dir=root).state == "running"
        go.touch()
        assert child.wait(timeout=60) == 0, child.stderr.read() if child.stderr else ""
    finally:
        child.kill()
    run = open_run("live", dir=root)
    assert (run.state, run.series("loss").steps.tolist()) == ("finished", [1, 2])
    assert run.series("lm-eval/acc").steps.tolist() == [1]
    assert run.checkpoints()[0].results("lm-eval") == {"acc": 0.5}


def _checkpoints(root: Path, run: str) -> list[object]:
    try:
        return list(open_run(run, dir=root).checkpoints())
    except LookupError:
        return []


def test_a_missing_checkpoint_is_one_line_that_says_what_there_is(root, tmp_path):
    run_id = _trained(root, tmp_path)
    with pytest.raises(CheckpointNotFound) as missing_step:
        tunetrack.log_evaluation(f"{run_id}@3", {"acc": 1.0}, dir=root)
    assert str(missing_step.value) == (
        f"checkpoint '{run_id}@3': run {run_id} (trained) has no checkpoint at step 3 "
        "(its checkpoints are at steps 2, 4)"
    )
    with pytest.raises(CheckpointNotFound, match="no run recorded a checkpoint there"):
        tunetrack.log_evaluation(tmp_path / "out", {"acc": 1.0}, dir=root)
    with pytest.raises(CheckpointNotFound, match="checkpoint .nosuchrun@2.: no run .nosuchrun. in "):
        tunetrack.log_evaluation("nosuchrun@2", {"acc": 1.0}, dir=root)
    with pytest.raises(ValueError, match="no results"):
        tunetrack.log_evaluation(f"{run_id}@2", {}, dir=root)
    assert open_run(run_id, dir=root).checkpoints()[0].evaluations == {}  # nothing was written


def test_the_cli_says_which_suites_there_are(root, tmp_path):
    run_id = _trained(root, tmp_path)
    tunetrack.log_evaluation(f"{run_id}@2", {"acc": 0.2}, suite="lm-eval", dir=root)
    out = CliRunner().invoke(cli, ["checkpoints", run_id, "--dir", str(root), "--suite", "mmlu"])
    assert out.exit_code != 0
    assert "no checkpoint was evaluated with suite 'mmlu'; suites: lm-eval" in out.output


def test_a_listing_shows_the_latest_checkpoints_score_from_the_end_records_as_from_the_data(root, tmp_path):
    """Evaluated out of order (step 4, then step 2): the key's last value is the latest checkpoint's,
    whether a listing takes it from the processes' end records or reads the data."""
    run_id = _trained(root, tmp_path)
    tunetrack.log_evaluation(f"{run_id}@4", {"acc": 0.4}, suite="lm-eval", dir=root)
    tunetrack.log_evaluation(f"{run_id}@2", {"acc": 0.2}, suite="lm-eval", dir=root)
    run = open_run(run_id, dir=root)
    from_ends = run.latest()
    assert from_ends == {"step": 4, "values": {**from_ends["values"], "lm-eval/acc": 0.4}}
    series = run.series("lm-eval/acc")
    assert (series.steps.tolist(), series.values.tolist()) == ([2, 4], [0.2, 0.4])  # in the order saved
    listed = {r.id: r for r in tunetrack.list_runs(dir=root)}[run_id]
    assert listed.latest()["values"]["lm-eval/acc"] == 0.4
