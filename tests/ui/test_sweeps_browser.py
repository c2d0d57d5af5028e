"""A sweep in a real browser: the compare page grouped (a mean and a band per group), parallel
coordinates whose brushed axis filters the runs table, and the runs table's choices (aggregate
columns, sort, a --where expression, group-by) kept in the URL across a reload. One small corner of
tests/support/sweep.py's sweep (2 learning rates x 2 ranks x 3 seeds: early-stopped runs, and a failed one
whose eval loss has two points), written once for the module."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import numpy as np
import pytest

from conftest import ARTIFACTS
from support.helpers import Server, wait_until
from support.sweep import make_sweep

LRS, RANKS, SEEDS = (1e-4, 1e-3), (4, 16), (0, 1, 4)


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    root = tmp_path_factory.mktemp("sweep")
    return root, make_sweep(root, LRS, RANKS, SEEDS)


@pytest.fixture(scope="module")
def server(sweep):
    """One server for the module: the tests only read."""
    s = Server(sweep[0])
    yield s
    s.stop()


def _rows(page) -> list[str]:
    return [tr.get_attribute("data-run") for tr in page.query_selector_all("#runs tbody tr[data-run]")]


def _folded(runs, key: str, band: str) -> dict[str, list[float]]:
    """What the chart of ``key`` should draw for the runs of one group, step by step (numpy)."""
    steps = sorted({s for r in runs for s, _ in r.points.get(key, [])})
    at = [[dict(r.points.get(key, [])).get(s) for r in runs] for s in steps]
    values = [np.array([v for v in vs if v is not None]) for vs in at]
    mean = [float(v.mean()) for v in values]
    if band == "minmax":
        low, high = [float(v.min()) for v in values], [float(v.max()) for v in values]
    else:
        std = [float(v.std(ddof=1)) if len(v) > 1 else float("nan") for v in values]
        low, high = [m - s for m, s in zip(mean, std)], [m + s for m, s in zip(mean, std)]
    return {"x": steps, "mean": mean, "low": low, "high": high}


def test_the_grouped_compare_page_draws_a_mean_and_a_band_per_group(sweep, server, page):
    _, runs = sweep
    ids = ",".join(r.id for r in runs)
    for band in ("minmax", "std"):
        page.goto(f"{server.base}/compare?ids={ids}&group=lr" + ("&band=std" if band == "std" else ""))
        chart = page.wait_for_selector(".chart[data-key='eval/loss'][data-bands='2']")
        drawn = page.evaluate(
            """div => ({data: div.chart.data.map(s => Array.from(s, v => v ?? null)),
                        bands: div.chart.bands.map(b => b.series),
                        labels: div.chart.series.slice(1).map(s => s.label)})""",
            chart,
        )
        assert drawn["bands"] == [[2, 3], [5, 6]]  # each group's high and low bound its band
        for g, lr in enumerate(LRS):
            label = drawn["labels"][3 * g]
            assert label == f"lr={lr!r} (n={len(RANKS) * len(SEEDS)})"
            want = _folded([r for r in runs if r.config["lr"] == lr], "eval/loss", band)
            xs = drawn["data"][0]
            got = {name: drawn["data"][1 + 3 * g + i] for i, name in enumerate(("mean", "high", "low"))}
            for name in ("mean", "low", "high"):
                have = {x: v for x, v in zip(xs, got[name]) if v is not None}
                expected = {x: v for x, v in zip(want["x"], want[name]) if v == v}
                assert have.keys() == expected.keys(), (band, name)
                assert np.allclose([have[x] for x in expected], list(expected.values())), (band, name)
        assert parse_qs(urlsplit(page.url).query).get("band") == (["std"] if band == "std" else None)
    page.screenshot(path=str(ARTIFACTS / "compare-grouped.png"))
    assert page.dialogs == []


def test_brushing_a_parallel_coordinates_axis_filters_the_runs_table(sweep, server, page):
    _, runs = sweep
    page.goto(f"{server.base}/?hp=eval/loss:min")
    page.wait_for_selector("#parcoords g.axis[data-key='config.lr']")
    wait_until(lambda: len(_rows(page)) == len(runs))
    axes = [g.get_attribute("data-key") for g in page.query_selector_all("#parcoords g.axis")]
    assert axes == ["config.lr", "config.lora.r", "config.lora.alpha", "config.seed", "eval/loss:min"]
    importance = [tr.get_attribute("data-key") for tr in page.query_selector_all("#importance tbody tr")]
    assert sorted(importance) == ["lora.alpha", "lora.r", "lr", "seed"]
    # the scatter draws every run, the runs that share the first and the last value too (uPlot draws
    # the points between the indices of its scale's ends)
    scatter = page.wait_for_selector("#scatter[data-points]", state="attached")
    drawn = page.evaluate("div => div.chart.series[1].idxs", scatter)
    with_metric = [r for r in runs if "eval/loss" in r.points]
    assert int(scatter.get_attribute("data-points")) == len(with_metric)
    assert drawn == [0, len(with_metric) - 1]

    grab = page.query_selector("#parcoords g.axis[data-key='config.lr'] rect.grab").bounding_box()
    x, top = grab["x"] + grab["width"] / 2, grab["y"]
    page.mouse.move(x, top + 2)  # from the top of the axis (the higher learning rate) a third of the way down
    page.mouse.down()
    page.mouse.move(x, top + grab["height"] / 3, steps=4)
    page.mouse.up()
    high = {r.id for r in runs if r.config["lr"] == 1e-3}
    wait_until(lambda: set(_rows(page)) == high)
    assert page.inner_text("#status") == f"{len(high)} of {len(runs)} runs"
    dropped = {p.get_attribute("data-run") for p in page.query_selector_all("#parcoords path.line.dropped")}
    assert dropped == {r.id for r in runs} - high  # the lines the brush leaves out are greyed
    kept_points = str(len([r for r in with_metric if r.id in high]))  # and their points in the scatter
    wait_until(lambda: page.get_attribute("#scatter", "data-kept") == kept_points)
    assert page.get_attribute("#scatter", "data-points") == str(len(with_metric))
    (brush,) = parse_qs(urlsplit(page.url).query)["brush"]
    page.screenshot(path=str(ARTIFACTS / "parallel-coordinates.png"))

    page.reload()  # the brush is in the URL
    page.wait_for_selector("#parcoords rect.brush")
    wait_until(lambda: set(_rows(page)) == high)
    page.click("#brushes .chip .drop")  # cleared
    wait_until(lambda: len(_rows(page)) == len(runs))
    assert "brush" not in parse_qs(urlsplit(page.url).query) and brush.startswith('["config.lr"')
    assert page.dialogs == []


def test_the_tables_choices_survive_a_reload(sweep, server, page):
    _, runs = sweep
    page.goto(f"{server.base}/?key=eval/loss")
    wait_until(lambda: len(_rows(page)) == len(runs))
    page.select_option("#addagg", "best")
    page.fill("#addkey", "eval/loss")
    page.press("#addkey", "Enter")
    page.wait_for_selector("#runs th[data-sort='eval/loss:best']")
    page.click("#runs th[data-sort='eval/loss:best'] .metric-head span")  # ascending
    page.fill("#search", "config.lr >> 1")  # a bad expression: one line beside the box, the table as it was
    wait_until(lambda: page.inner_text("#where-error") == "unexpected '>>' at column 11")
    assert len(_rows(page)) == len(runs)
    page.fill("#search", "config.lora.r >= 16 and state = 'finished'")
    chosen = [r for r in runs if r.config["lora"]["r"] >= 16 and r.state == "finished"]
    wait_until(lambda: set(_rows(page)) == {r.id for r in chosen})
    assert page.inner_text("#where-error") == ""

    def best(r):
        return min(v for _, v in r.points["eval/loss"])

    by_best = [r.id for r in sorted(chosen, key=best)]
    assert _rows(page) == by_best
    first = next(r for r in chosen if r.id == by_best[0])
    cell = page.query_selector(f"#runs tr[data-run='{first.id}'] td:last-child")
    step = min(first.points["eval/loss"], key=lambda p: p[1])[0]
    assert cell.get_attribute("title") == f"best at step {step}"  # the step of the best, on hover
    assert float(cell.inner_text()) == pytest.approx(best(first), abs=1e-4)

    page.fill("#groupby", "lr")
    page.press("#groupby", "Enter")
    page.wait_for_selector("#runs tr.group")
    labels = [tr.get_attribute("data-group") for tr in page.query_selector_all("#runs tr.group")]
    assert sorted(labels) == ["lr=0.0001", "lr=0.001"]
    query = parse_qs(urlsplit(page.url).query)
    assert query == {
        "key": ["eval/loss", "eval/loss:best"],
        "sort": ["eval/loss:best"],
        "where": ["config.lora.r >= 16 and state = 'finished'"],
        "group": ["lr"],
    }

    def groups():
        return {
            tr.get_attribute("data-group"): tr.query_selector("td:last-child").inner_text()
            for tr in page.query_selector_all("#runs tr.group")
        }

    shown = groups()
    for lr in LRS:
        values = np.array([best(r) for r in chosen if r.config["lr"] == lr])
        mean, std = values.mean(), values.std(ddof=1)
        text = shown[f"lr={lr!r}"]
        assert [float(t) for t in text.split(" ± ")] == pytest.approx([mean, std], abs=1e-4)
    ordered = [tr.get_attribute("data-group") for tr in page.query_selector_all("#runs tr.group")]
    page.screenshot(path=str(ARTIFACTS / "runs-grouped.png"))

    page.reload()
    page.wait_for_selector("#runs tr.group")
    heads = [th.get_attribute("data-sort") for th in page.query_selector_all("#runs th.metric")]
    assert heads == ["eval/loss:last", "eval/loss:best"]  # the URL's columns, with their heads
    assert groups() == shown  # sorted by the mean of the best, as before:
    assert [tr.get_attribute("data-group") for tr in page.query_selector_all("#runs tr.group")] == ordered
    assert page.input_value("#search") == "config.lora.r >= 16 and state = 'finished'"
    assert page.input_value("#groupby") == "lr"
    page.click(f"#runs tr.group[data-group='{ordered[0]}'] button.expand")  # its runs, best first
    members = [r for r in chosen if f"lr={r.config['lr']!r}" == ordered[0]]
    wait_until(lambda: _rows(page) == [r.id for r in sorted(members, key=best)])
    assert page.dialogs == []


def test_a_run_without_a_config_key_still_reaches_the_metric_axis(tmp_path, server_factory, page):
    """A config key only some runs have (``lora.dropout``): the others cross its axis at a "none"
    spot under it, so every run's line goes on to the metric axis instead of stopping there."""
    from tunetrack import Tracker

    for i, config in enumerate([{"lr": 1e-4, "dropout": 0.1}, {"lr": 3e-4}, {"lr": 1e-3, "dropout": 0.2}]):
        with Tracker(dir=tmp_path, name=f"r{i}", config=config, system=False) as t:
            t.log({"loss": 1.0 + i}, step=1)
    server = server_factory(tmp_path)
    page.goto(f"{server.base}/?hp=loss:last")
    page.wait_for_selector("#parcoords path.line", state="attached")  # a level line has no height
    axes = [g.get_attribute("data-key") for g in page.query_selector_all("#parcoords g.axis")]
    assert axes == ["config.lr", "config.dropout", "loss:last"]
    points = [p.get_attribute("d").count("L") + 1 for p in page.query_selector_all("#parcoords path.line")]
    assert points == [3, 3, 3]  # each line crosses every axis, the metric's last
    nones = [g.get_attribute("data-key") for g in page.query_selector_all("#parcoords g.axis:has(text.none)")]
    assert nones == ["config.dropout"]

    # a sort by an aggregate no column shows (a link in ls --sort's spelling) still sorts
    page.goto(f"{server.base}/?sort=loss:max")  # the column shows loss:last; ascending, not newest first
    wait_until(lambda: len(_rows(page)) == 3)
    names = [page.inner_text(f"#runs tr[data-run='{run}'] td:nth-child(3)") for run in _rows(page)]
    assert names == ["r0", "r1", "r2"]


def test_which_way_is_best_turns_round_per_key_and_stays_in_the_url(sweep, server, page):
    """A reward's best is its max (↑); the head's arrow turns it to the min for that key: the cells,
    the URL (``best=reward:min``, as ``ls --best``) and, after a reload, the page agree."""
    _, runs = sweep
    page.goto(f"{server.base}/?key=reward:best&sort=created:desc")
    way = "#runs th[data-sort='reward:best'] .way"
    wait_until(lambda: page.inner_text(way) == "↑")
    newest = max((r for r in runs if "reward" in r.points), key=lambda r: runs.index(r))

    def shown() -> float:
        return float(page.inner_text(f"#runs tr[data-run='{newest.id}'] td:last-child"))

    values = [v for _, v in newest.points["reward"]]
    wait_until(lambda: shown() == pytest.approx(max(values), abs=1e-4))
    page.click(way)
    wait_until(lambda: page.inner_text(way) == "↓")
    wait_until(lambda: shown() == pytest.approx(min(values), abs=1e-4))
    assert parse_qs(urlsplit(page.url).query)["best"] == ["reward:min"]
    page.reload()
    wait_until(lambda: page.inner_text(way) == "↓")
    wait_until(lambda: shown() == pytest.approx(min(values), abs=1e-4))
    page.click(way)  # back to the usual way: nothing left in the URL
    wait_until(lambda: "best" not in parse_qs(urlsplit(page.url).query))
    wait_until(lambda: shown() == pytest.approx(max(values), abs=1e-4))
