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


@pytest.fixture(scope="module")
def moe_sweep(tmp_path_factory):
    """Six mixture-of-experts runs (two capacity factors × three seeds), each logging the load of 4
    layers × 8 experts over 20 steps (one expert's load missing at odd steps), and the raw loads."""
    import tunetrack

    root = tmp_path_factory.mktemp("moe-sweep")
    raw: dict[tuple[float, int], np.ndarray] = {}
    for capacity in (1.0, 1.25):
        for seed in range(3):
            rng = np.random.default_rng(seed + int(capacity * 100))
            loads = rng.gamma(2.0, capacity, size=(20, 4, 8))
            run = tunetrack.Tracker(project="moe", dir=root, system=False, console=False)
            run.log_config({"capacity": capacity, "seed": seed})
            for step in range(20):
                row = {
                    f"moe/layer{layer}/expert{e}/load": float(loads[step, layer, e])
                    for layer in range(4)
                    for e in range(8)
                    if not (layer == 3 and e == 7 and step % 2)
                }
                run.log({"loss": 1.0 / (step + 1), **row}, step=step)
            run.finish()
            raw[(capacity, seed)] = loads
    return root, raw


@pytest.mark.parametrize(
    ("agg", "across"), [("max", "max"), ("last", "median"), ("min", "mean"), ("max", "p95")]
)
def test_a_pattern_of_keys_folded_across(moe_sweep, agg, across):
    root, raw = moe_sweep
    out = compare(
        root, "--project", "moe", "--group-by", "capacity",
        "--metric", f"moe/layer*/expert*/load:{agg}", "--across", across,
    )  # fmt: skip
    assert out["across"] == across
    assert len(out["groups"]) == 2
    fold = {"max": np.max, "median": np.median, "mean": np.mean, "p95": lambda v: np.percentile(v, 95)}[
        across
    ]
    for g in out["groups"]:
        per_run = []
        for seed in range(3):
            loads = raw[(g["key"]["capacity"], seed)]  # step × layer × expert
            kept = np.ones(loads.shape, bool)
            kept[1::2, 3, 7] = False  # the expert missing at odd steps
            per_key = []
            for layer in range(4):
                for e in range(8):
                    v = loads[kept[:, layer, e], layer, e]
                    per_key.append({"max": v.max(), "min": v.min(), "last": v[-1]}[agg])
            per_run.append(fold(np.array(per_key)))
        assert g["n"] == 3
        assert g["mean"] == pytest.approx(np.mean(per_run), rel=1e-12)
        assert (g["min"], g["max"]) == pytest.approx((min(per_run), max(per_run)), rel=1e-12)


def test_a_pattern_folded_in_the_table_and_its_errors(moe_sweep):
    root, _ = moe_sweep
    base = ["compare", "--dir", str(root), "--project", "moe", "--group-by", "capacity", "--metric"]
    table = CliRunner().invoke(cli, [*base, "moe/layer*/expert*/load:max", "--across", "max"])
    assert table.exit_code == 0, table.output
    assert "moe/layer*/expert*/load:max, max across its keys" in " ".join(table.output.split())
    assert "1.25" in table.output
    for args, said in [
        (
            ["moe/layer*/load"],
            "is a pattern of keys: say how to fold them (--across mean, min, p5, median, p95, max)",
        ),
        (["loss", "--across", "max"], "--across folds a pattern of keys"),
        (
            ["moe/layer*/load", "--across", "p50"],
            "--across 'p50': use one of mean, min, p5, median, p95, max",
        ),
        (["moe/layr*/load", "--across", "max"], "did you mean moe/layer*/expert*/load"),
    ]:
        out = CliRunner().invoke(cli, [*base, *args])
        assert out.exit_code != 0 and "Traceback" not in out.output
        assert said in out.output, out.output
        assert len(out.output.strip().splitlines()) == 1, out.output
