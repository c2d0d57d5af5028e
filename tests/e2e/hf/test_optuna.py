"""The Optuna callback, with the real Optuna: a study of 20 trials with a pruner lands as 20 runs of
one group, each with the trial's parameters, intermediate values, objective and state."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import numpy as np
import optuna
import pytest

from tunetrack.integrations.optuna import INTERMEDIATE, TunetrackCallback
from tunetrack.reader import list_runs
from tunetrack.reader.groups import group_runs


def objective(trial: optuna.Trial) -> float:
    lr = trial.suggest_float("lr", 1e-4, 1e-1, log=True)
    rank = trial.suggest_categorical("rank", [4, 8, 16])
    if trial.number == 7:
        return math.nan  # Optuna marks a NaN objective as failed
    loss = 1.0
    for step in range(1, 11):
        loss = loss * (1 - min(lr * 10, 0.9)) + 0.01 * rank
        trial.report(loss, step)
        if trial.should_prune():
            raise optuna.TrialPruned()
    return loss


def test_a_study_of_20_trials_with_pruning_is_20_runs_in_one_group(root):
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(
        study_name="lr-rank",
        direction="minimize",
        sampler=optuna.samplers.TPESampler(seed=0),
        pruner=optuna.pruners.MedianPruner(n_startup_trials=3, n_warmup_steps=2),
    )
    study.optimize(objective, n_trials=20, callbacks=[TunetrackCallback(dir=root, tags=["hpo"])])

    runs = {r.config["trial"]["number"]: r for r in list_runs(root, project="lr-rank")}
    assert sorted(runs) == list(range(20))
    states = {t.number: t.state.name.lower() for t in study.trials}
    assert {"complete", "pruned", "fail"} <= set(states.values())  # the study went through all three
    for trial in study.trials:
        run = runs[trial.number]
        assert run.name == f"lr-rank-trial-{trial.number}"
        assert run.config["lr"] == trial.params["lr"] and run.config["rank"] == trial.params["rank"]
        assert run.config["trial"]["state"] == states[trial.number]
        assert run.config["trial"]["pruned"] is (trial.state == optuna.trial.TrialState.PRUNED)
        assert run.tags == ["hpo", f"lr={trial.params['lr']}", f"rank={trial.params['rank']}"]
        steps = sorted(trial.intermediate_values)
        series = run.series(INTERMEDIATE, strict=False)  # a failed trial reported nothing
        assert series.steps.tolist() == steps
        np.testing.assert_allclose(series.values, [trial.intermediate_values[s] for s in steps])
        if trial.state == optuna.trial.TrialState.FAIL:
            assert run.state == "failed" and "value" not in run.summary()
            assert "nan" in (run.error or "").lower()
        else:  # Optuna gives a pruned trial its last intermediate value as its value
            assert run.state == "finished"
            assert run.summary()["value"]["last"] == pytest.approx(trial.value)
            assert run.series("value").steps.tolist() == [steps[-1]]
            pruned = trial.state == optuna.trial.TrialState.PRUNED
            assert [e["step"] for e in run.events() if e["kind"] == "pruned"] == (
                [steps[-1]] if pruned else []
            )

    keys, groups = group_runs(list(runs.values()), "trial.study", "value:min")
    assert keys == ["trial.study"] and len(groups) == 1
    (group,) = groups
    assert group.key == {"trial.study": "lr-rank"} and len(group.runs) == 20
    values = [t.value for t in study.trials if t.value is not None]
    assert group.n == len(values) == 19 and group.min == pytest.approx(min(values))

    # docs/integrations/optuna.md's three lines, as written, on this study
    def tt(line: str) -> str:
        done = subprocess.run(
            line.replace("tunetrack ", f"{sys.executable} -m tunetrack ", 1),
            shell=True,
            capture_output=True,
            text=True,
            env={**os.environ, "TUNETRACK_DIR": str(root)},
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    complete = sorted(
        (t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE), key=lambda t: t.value
    )
    best = json.loads(
        tt(
            "tunetrack ls --project lr-rank --where 'config.trial.state = \"complete\"' --sort value:min --limit 5 --json"
        )
    )
    assert [r["name"] for r in best] == [f"lr-rank-trial-{t.number}" for t in complete[:5]]
    (study_row,) = json.loads(
        tt("tunetrack compare --project lr-rank --group-by trial.study --metric value:min --json")
    )["groups"]
    assert study_row["n"] == 19 and study_row["min"] == pytest.approx(min(values))
    by_rank = json.loads(tt("tunetrack compare --project lr-rank --group-by rank --metric value:min --json"))
    means = {
        g["key"]["rank"]: np.mean(
            [t.value for t in study.trials if t.value is not None and t.params["rank"] == g["key"]["rank"]]
        )
        for g in by_rank["groups"]
    }
    assert {g["key"]["rank"]: g["mean"] for g in by_rank["groups"]} == pytest.approx(means)
    assert [g["mean"] for g in by_rank["groups"]] == sorted(g["mean"] for g in by_rank["groups"])
    # all-but-seed: a trial's number, state and times keep books; the parameters make the groups
    folded = json.loads(
        tt("tunetrack compare --project lr-rank --group-by all-but-seed --metric value:min --json")
    )
    assert folded["keys"] == ["lr", "rank", "trial.params.lr", "trial.params.rank"]
    assert len(folded["groups"]) == 20  # every trial sampled its own learning rate


def test_a_multi_objective_study_names_each_objective(root):
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(study_name="two", directions=["minimize", "maximize"])
    cb = TunetrackCallback(metric_name=["loss", "accuracy"], dir=root, project="mo")
    study.optimize(lambda t: (t.suggest_float("x", 0, 1), 1.0), n_trials=2, callbacks=[cb])
    for run in list_runs(root, project="mo"):
        assert run.summary()["loss"]["last"] == pytest.approx(run.config["x"])
        assert run.summary()["accuracy"]["last"] == 1.0
