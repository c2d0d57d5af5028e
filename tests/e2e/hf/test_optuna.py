"""The Optuna callback, with the real Optuna: a study of 20 trials with a pruner lands as 20 runs of
one group, each with the trial's parameters, intermediate values, objective and state."""

from __future__ import annotations

import math

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
        series = run.series(INTERMEDIATE)
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


def test_a_multi_objective_study_names_each_objective(root):
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(study_name="two", directions=["minimize", "maximize"])
    cb = TunetrackCallback(metric_name=["loss", "accuracy"], dir=root, project="mo")
    study.optimize(lambda t: (t.suggest_float("x", 0, 1), 1.0), n_trials=2, callbacks=[cb])
    for run in list_runs(root, project="mo"):
        assert run.summary()["loss"]["last"] == pytest.approx(run.config["x"])
        assert run.summary()["accuracy"]["last"] == 1.0
