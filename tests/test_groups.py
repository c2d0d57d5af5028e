"""``tunetrack compare --group-by``: one row per configuration of the generated 60-run sweep (3 learning
rates x 4 ranks x 5 seeds), n, mean, std, min and max of a metric aggregate, checked against NumPy."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from support.sweep import LRS, RANKS
from test_aggregates import truth
from tunetrack.cli import cli


@pytest.fixture(scope="module")
def sweep(sweep_store):
    return sweep_store


def compare(root, *args: str) -> dict:
    out = CliRunner().invoke(cli, ["compare", "--dir", str(root), "--json", *args])
    assert out.exit_code == 0, out.output
    return json.loads(out.stdout)


def expected(runs, metric: str, agg: str, pick=lambda r: True) -> dict[tuple, list[float]]:
    out: dict[tuple, list[float]] = {}
    for r in runs:
        if pick(r):
            out.setdefault((r.config["lr"], r.config["lora"]["r"]), []).append(
                truth(r.points[metric], lower=metric != "reward")[agg]
            )
    return out


@pytest.mark.parametrize("by", ["lr,lora.r", "config.lr,config.lora.r", "all-but-seed"])
@pytest.mark.parametrize("metric", ["eval/loss:min", "reward:best", "train/loss"])
def test_groups_agree_with_numpy(sweep, by, metric):
    root, runs = sweep
    key, _, agg = metric.partition(":")
    out = compare(root, "--project", "sweep", "--group-by", by, "--metric", metric)
    want = expected(runs, key, agg or "last")
    assert len(out["groups"]) == len(LRS) * len(RANKS) == 12
    for g in out["groups"]:
        values = np.array(want[(g["key"]["lr"], g["key"]["lora.r"])])
        assert g["n"] == len(values) == len(g["runs"]) == 5
        assert g["mean"] == pytest.approx(values.mean(), rel=1e-12)
        assert g["std"] == pytest.approx(values.std(ddof=1), rel=1e-9)
        assert (g["min"], g["max"]) == (values.min(), values.max())
    if by == "all-but-seed":  # the keys that differ between groups: not the model every run shares
        assert out["keys"] == ["lr", "lora.r", "lora.alpha"]
    means = [g["mean"] for g in out["groups"]]  # best first: lowest for a loss, highest for a reward
    assert means == sorted(means, reverse=metric.startswith("reward"))


def test_named_runs_and_where(sweep):
    root, runs = sweep
    chosen = [r for r in runs if r.config["lora"]["r"] == 8 and r.config["seed"] < 3]
    out = compare(root, *[r.id for r in chosen], "--group-by", "lr", "--metric", "eval/loss:min")
    assert [g["n"] for g in out["groups"]] == [3, 3, 3]
    out = compare(
        root,
        "--project",
        "sweep",
        "--where",
        "config.lora.r = 8",
        "--group-by",
        "lr",
        "--metric",
        "eval/loss:max",
    )
    for g in out["groups"]:
        values = [
            truth(r.points["eval/loss"], True)["max"]
            for r in runs
            if r.config["lora"]["r"] == 8 and r.config["lr"] == g["key"]["lr"]
        ]
        assert g["mean"] == pytest.approx(np.mean(values)) and g["n"] == 5


def test_the_table(sweep):
    root, _ = sweep
    out = CliRunner().invoke(
        cli,
        [
            "compare",
            "--dir",
            str(root),
            "--project",
            "sweep",
            "--group-by",
            "lr",
            "--metric",
            "eval/loss:min",
        ],
    )
    assert out.exit_code == 0, out.output
    lines = out.stdout.splitlines()
    assert lines[0].split()[::2] == ["lr", "n", "mean", "std", "min", "max"]  # every other: a separator
    assert sum(" 20 " in line and "±" in line for line in lines) == 3
    bad = CliRunner().invoke(
        cli, ["compare", "--dir", str(root), "--project", "sweep", "--group-by", "lr", "--metric", "state"]
    )
    assert bad.exit_code == 1 and "is not a metric" in bad.stderr
