"""reader/sweeps.py, what the dashboard's sweep views show, checked against pandas and NumPy: the rows
a --where expression and brushes pick, the groups' mean and std per column, the varying config keys
as axes, and Spearman's rank correlation (ties averaged, as pandas ranks them)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from support.sweep import make_sweep
from tunetrack.reader import Catalog
from tunetrack.reader.sweeps import Configs, group_curves, group_table, parameters, select, spearman
from tunetrack.reader.where import WhereError

LRS, RANKS, SEEDS = (1e-4, 1e-3), (4, 16), (0, 1)


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    root = tmp_path_factory.mktemp("sweep")
    runs = make_sweep(root, LRS, RANKS, SEEDS)
    frame = pd.DataFrame(
        {
            "id": r.id,
            "lr": r.config["lr"],
            "r": r.config["lora"]["r"],
            "seed": r.config["seed"],
            "state": r.state,
            "best": min(v for _, v in r.points["eval/loss"]),
            "last": r.points["train/loss"][-1][1],
        }
        for r in runs
    )
    return Catalog(root), runs, frame


def test_spearman_is_pandas_rank_correlation_with_ties():
    rng = np.random.default_rng(0)
    for n in (3, 7, 40):
        x = rng.integers(0, 4, n).astype(float)  # many ties
        y = x * 0.5 + rng.normal(size=n)
        want = pd.DataFrame({"x": x, "y": y}).corr(method="spearman").loc["x", "y"]
        assert spearman(list(x), list(y)) == pytest.approx(want)
    assert spearman([1, 2], [3, 4]) is None  # too few pairs
    assert spearman([1, 1, 1], [1, 2, 3]) is None  # a constant: no order


def test_where_and_brushes_pick_what_pandas_picks(swept):
    catalog, _, frame = swept
    configs = Configs()
    chosen = select(catalog, configs, "config.lora.r >= 16 and eval/loss:best < 0.8")
    want = frame[(frame.r >= 16) & (frame.best < 0.8)]
    assert {r["id"] for r in chosen.rows} == set(want.id)
    brushed = select(catalog, configs, None, ['["config.lr", 0.0005, 0.002]', '["config.seed", ["1"]]'])
    assert {r["id"] for r in brushed.rows} == set(frame[(frame.lr > 5e-4) & (frame.seed == 1)].id)
    with pytest.raises(WhereError, match="unexpected '>>' at column 11"):
        select(catalog, configs, "config.lr >> 1")
    with pytest.raises(WhereError, match="brush"):
        select(catalog, configs, None, ["[1, 2]"])


def test_groups_fold_each_column_as_numpy_does(swept):
    catalog, _, frame = swept
    columns = ["eval/loss:best", "train/loss"]
    with pytest.raises(ValueError, match="fields"):  # rows without the summaries asked for
        group_table(select(catalog, Configs()), "lr,lora.r", columns)
    table = group_table(select(catalog, Configs(), fields=columns), "lr,lora.r", columns)
    assert table["keys"] == ["lr", "lora.r"] and len(table["groups"]) == len(LRS) * len(RANKS)
    for group in table["groups"]:
        part = frame[(frame.lr == group["key"]["lr"]) & (frame.r == group["key"]["lora.r"])]
        assert set(group["runs"]) == set(part.id)
        for spec, column in (("eval/loss:best", "best"), ("train/loss", "last")):
            stats = group["stats"][spec]
            assert stats["n"] == len(part)
            assert stats["mean"] == pytest.approx(part[column].mean())
            assert stats["std"] == pytest.approx(part[column].std(ddof=1))
            assert (stats["min"], stats["max"]) == pytest.approx((part[column].min(), part[column].max()))


def test_parameters_are_the_varying_keys_and_their_rank_correlation(swept):
    catalog, _, frame = swept
    found = parameters(select(catalog, Configs(), fields=["eval/loss:best"]), "eval/loss:best")
    assert [a["key"] for a in found["axes"]] == [
        "config.lr",
        "config.lora.r",
        "config.lora.alpha",
        "config.seed",
        "eval/loss:best",
    ]  # model is the same in every run: no axis
    rho = {e["key"]: e["rho"] for e in found["importance"]}
    corr = frame[["lr", "r", "seed", "best"]].corr(method="spearman")["best"]
    assert rho["lr"] == pytest.approx(corr["lr"]) and rho["seed"] == pytest.approx(corr["seed"])
    assert rho["lora.r"] == pytest.approx(corr["r"]) == pytest.approx(rho["lora.alpha"])
    by_id = {r["id"]: r["values"] for r in found["runs"]}
    for row in frame.itertuples():
        assert by_id[row.id][0] == row.lr and by_id[row.id][-1] == pytest.approx(row.best)


def test_a_groups_curve_is_the_mean_of_its_runs_at_each_step(swept):
    catalog, runs, _ = swept
    folded = group_curves(catalog, [r.id for r in runs], "lr", "train/loss", "std")
    for group in folded["groups"]:
        members = [r for r in runs if r.config["lr"] == group["key"]["lr"]]
        steps = sorted({s for r in members for s, _ in r.points["train/loss"]})
        assert group["x"] == steps
        at = [[dict(r.points["train/loss"]).get(s) for r in members] for s in steps]
        values = [np.array([v for v in vs if v is not None]) for vs in at]
        assert group["mean"] == pytest.approx([v.mean() for v in values])
        std = [v.std(ddof=1) for v in values]
        assert group["high"] == pytest.approx([v.mean() + s for v, s in zip(values, std)])
    thin = group_curves(catalog, [r.id for r in runs], "lr", "train/loss", "minmax", width=10)
    assert all(len(g["x"]) == 10 for g in thin["groups"])
    wide = group_curves(catalog, [r.id for r in runs], "lr", "train/loss", "minmax")
    for g, w in zip(thin["groups"], wide["groups"]):  # a bucket's band holds every step's of it
        assert min(g["low"]) == pytest.approx(min(w["low"])) and max(g["high"]) == pytest.approx(
            max(w["high"])
        )
