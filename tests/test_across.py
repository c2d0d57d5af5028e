"""Views across many keys (issue 35): a mixture-of-experts run's 10,000 keys a step read back exactly,
as one matrix of key × step, and the band of their percentiles equal to NumPy's on the raw values."""

from __future__ import annotations

import numpy as np
import pytest

from tunetrack import Tracker
from tunetrack.errors import UnknownName
from tunetrack.reader import open_run
from tunetrack.reader.across import band_points, fit, heat, matching, natural

LAYERS, EXPERTS, STEPS = 40, 250, 200


def load(step: int) -> np.ndarray:
    """Each layer's load per expert at ``step``: a fixed, uneven pattern that moves with the step."""
    layer, expert = np.meshgrid(np.arange(LAYERS), np.arange(EXPERTS), indexing="ij")
    return np.abs(np.sin(layer * 0.37 + expert * 0.011 + step * 0.05)) + layer * 1e-3


def key(layer: int, expert: int) -> str:
    return f"moe/layer{layer}/expert{expert}/load"


@pytest.fixture(scope="module")
def moe(tmp_path_factory):
    root = tmp_path_factory.mktemp("moe")
    keys = [key(layer, expert) for layer in range(LAYERS) for expert in range(EXPERTS)]
    with Tracker(dir=root, name="moe", system=False, console=False) as run:
        for step in range(1, STEPS + 1):
            row = dict(zip(keys, load(step).reshape(-1).tolist()))
            row["loss"] = 1.0 / step
            run.log(row, step=step)
    return open_run(run.id, root)


def test_ten_thousand_keys_a_step_read_back_exactly(moe):
    assert len(moe.keys()) == LAYERS * EXPERTS + 1
    view = moe.across("moe/layer*/expert*/load")
    assert view.keys[:3] == [key(0, 0), key(0, 1), key(0, 2)] and view.keys[EXPERTS] == key(1, 0)
    assert list(view.steps) == list(range(1, STEPS + 1))
    logged = np.stack([load(step).reshape(-1) for step in range(1, STEPS + 1)], axis=1)
    assert np.array_equal(view.values, logged)
    for layer, expert in ((0, 0), (17, 123), (39, 249)):
        s = moe.series(key(layer, expert))
        assert np.array_equal(s.values, logged[layer * EXPERTS + expert])


def test_the_band_is_the_percentiles_of_the_raw_values(moe):
    view = moe.across("moe/layer3*/expert*/load")  # layer 3 and layers 30 to 39
    assert [k.split("/")[1] for k in view.keys[::EXPERTS]] == [
        "layer3",
        *(f"layer{i}" for i in range(30, 40)),
    ]
    raw = np.stack([load(step)[[3, *range(30, 40)]].reshape(-1) for step in range(1, STEPS + 1)], axis=1)
    band = view.band()
    for name, q in (("p5", 5), ("p50", 50), ("p95", 95), ("max", 100)):
        assert np.allclose(band[name], np.percentile(raw, q, axis=0)), name
    assert np.array_equal(band["max"], raw.max(axis=0))


def test_keys_missing_at_some_steps_and_a_pattern_nothing_matches(tmp_path):
    with Tracker(dir=tmp_path, name="sparse", system=False, console=False) as run:
        for step in range(1, 7):
            row = {f"layer{i}/grad_norm": float(i * step) for i in range(3) if (i + step) % 3}
            row["label"] = "warmup" if step < 3 else "main"  # not a number: no part of a pattern's view
            run.log(row, step=step)
        run.log({"layer0/grad_norm": 99.0}, step=6)  # a step logged again: its last value counts
    read = open_run(run.id, tmp_path)
    view = read.across("layer*/grad_norm")
    expected = np.array([[float(i * s) if (i + s) % 3 else np.nan for s in range(1, 7)] for i in range(3)])
    expected[0, 5] = 99.0
    assert np.array_equal(view.values, expected, equal_nan=True)
    assert np.allclose(view.band()["p50"], np.nanpercentile(expected, 50, axis=0))
    with pytest.raises(UnknownName, match="no run has metric pattern 'layer\\*/grad_nrom'"):
        read.across("layer*/grad_nrom")


@pytest.mark.parametrize("cells", [10**9, 25_000, 7_000], ids=["one slice", "slices", "columns cut"])
def test_fit_reduces_as_it_reads_what_the_whole_matrix_gives(moe, cells):
    """``fit`` reads a slice of steps at a time (``cells``: 10 steps of 2,500 keys, or 2.8, which cuts
    heat columns across slices): its band at the steps it sends is NumPy's percentiles over the keys
    at each step, and its heatmap is ``heat``'s of the whole matrix."""
    pattern = "moe/layer3*/expert*/load"
    view = moe.across(pattern)
    blocks = moe._records.blocks
    found = fit(blocks, moe.keys(), pattern, width=48, lines=20, cells=cells)
    assert found.keys == view.keys
    band = view.band()
    at = band_points(view.steps, band, 48)
    assert np.array_equal(found.steps, view.steps[at]) and len(found.steps) < STEPS
    for name, q in (("p5", 5), ("p50", 50), ("p95", 95), ("max", 100)):
        assert np.allclose(found.band[name], np.percentile(view.values, q, axis=0)[at]), name
    assert found.band["max"].max() == view.values.max()  # the run's highest value is among the steps sent
    whole = heat(view, 48, 20)
    assert found.heat.rows == whole.rows and np.array_equal(found.heat.starts, whole.starts)
    assert np.allclose(found.heat.grid, whole.grid) and (found.heat.low, found.heat.high) == (
        whole.low,
        whole.high,
    )


def test_fit_with_gaps_steps_logged_again_and_a_second_process(tmp_path):
    """Keys missing at some steps (NaN cells), a step logged again (its last value), and a resumed
    run's second process logging the same steps over again: ``fit`` in slices of 2 steps agrees with
    the whole matrix, which holds each cell's last value."""
    keys = [f"layer{i}/grad_norm" for i in range(5)]
    with Tracker(dir=tmp_path, name="gaps", system=False, console=False) as run:
        for step in range(1, 13):
            run.log({k: float(i * step) for i, k in enumerate(keys) if (i + step) % 4}, step=step)
        run.log({keys[0]: 99.0}, step=12)
    with Tracker(dir=tmp_path, resume=run.id, system=False, console=False) as again:
        for step in range(10, 16):
            again.log({k: -float(i + step) for i, k in enumerate(keys)}, step=step)
    read = open_run(run.id, tmp_path)
    view = read.across("layer*/grad_norm")
    assert view.steps.tolist() == list(range(1, 16))
    assert view.values[0, 11] == -12.0  # the second process logged step 12 last
    found = fit(read._records.blocks, read.keys(), "layer*/grad_norm", width=8, lines=3, cells=10)
    band = view.band()
    at = band_points(view.steps, band, 8)
    for name in band:
        assert np.allclose(found.band[name], band[name][at], equal_nan=True), name
    whole = heat(view, 8, 3)
    assert np.allclose(found.heat.grid, whole.grid, equal_nan=True) and found.heat.rows == whole.rows


def test_natural_order():
    keys = ["l10/x", "l2/x", "l1/x", "l2/y"]
    assert sorted(keys, key=natural) == ["l1/x", "l2/x", "l2/y", "l10/x"]
    assert matching(keys, "l*/x") == ["l1/x", "l2/x", "l10/x"] and matching(keys, "l2/y") == ["l2/y"]


def test_sql_aggregates_over_a_pattern_as_the_band_does(moe):
    """docs/query.md's example across keys: DuckDB's quantiles over a GLOB of keys equal the band's."""
    import tunetrack

    sql = (
        "SELECT step, quantile_cont(value, 0.95) AS p95, max(value) AS max FROM metrics "
        f"WHERE run = '{moe.id}' AND key GLOB 'moe/layer*/expert*/load' GROUP BY step ORDER BY step"
    )
    answer = tunetrack.query(sql, moe.path.parent)
    band = moe.across("moe/layer*/expert*/load").band()
    assert list(answer["step"]) == list(range(1, STEPS + 1))
    assert np.allclose(answer["p95"], band["p95"]) and np.array_equal(answer["max"], band["max"])


def test_show_folds_ten_thousand_keys_into_their_family(moe):
    """``tunetrack show`` of a 10,000-key run: one row for the family (its glob, the median of the last
    values, the least minimum, the most maximum, how many keys), the loss as its own row; ``--full``
    lists every key."""
    from click.testing import CliRunner

    from tunetrack.cli import cli

    root = str(moe.path.parent)
    done = CliRunner().invoke(cli, ["show", moe.id, "--dir", root], env={"COLUMNS": "160"})
    assert done.exit_code == 0, done.output
    (row,) = [line for line in done.output.splitlines() if "moe/layer*/expert*/load" in line]
    cells = [c.strip() for c in row.split("│")]
    last = np.median(load(STEPS))
    lows = min(load(s).min() for s in range(1, STEPS + 1))
    assert cells[1] == f"median {last:.4g}" and cells[2] == f"{lows:.4g}" and cells[-1] == "10,000 keys"
    assert "10,000 keys as 1 family, their numbers as * (--full: each)" in done.output
    assert any(line.split("│")[0].strip() == "loss" for line in done.output.splitlines() if "│" in line)
    full = CliRunner().invoke(cli, ["show", moe.id, "--dir", root, "--full"], env={"COLUMNS": "160"})
    assert full.exit_code == 0 and sum(f"{key(39, 249)} " in line for line in full.output.splitlines()) == 1
