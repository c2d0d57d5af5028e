"""A run's distributions on the dashboard (issue 35): GET /api/runs/{id}/distribution gives a key's
histograms (``tunetrack.Histogram``) over the steps on common bins, the steps fitted to the canvas;
the run page draws a card per key: a heatmap of value x step on viridis, a legend, a hover readout,
and a ridgeline of a few steps."""

from __future__ import annotations

import io
import re

import numpy as np
import pytest
from fastapi.testclient import TestClient
from PIL import Image

from conftest import ARTIFACTS
from support.helpers import Server, wait_until
from tunetrack import Histogram, Tracker
from tunetrack.reader import open_run
from tunetrack.ui.app import create_app

STEPS, KEY = 50, "grad/layer0"


@pytest.fixture(scope="module")
def shifting(tmp_path_factory):
    """(store, run id, {step: values}): a normal distribution whose mean rises and spread widens over
    50 steps, logged as a Histogram beside a loss by the real Tracker."""
    root = tmp_path_factory.mktemp("hist") / "runs"
    rng = np.random.default_rng(7)
    logged = {}
    with Tracker(dir=root, name="shifting", system=False, console=False) as t:
        for step in range(1, STEPS + 1):
            logged[step] = rng.normal(step / 10, 0.5 + step / 50, 3000)
            t.log({"loss": 2.0 / step, KEY: Histogram(logged[step])}, step=step)
    return root, t.id, logged


@pytest.fixture(scope="module")
def client(shifting):
    with TestClient(create_app(shifting[0], None), base_url="http://test") as c:
        yield c


@pytest.fixture(scope="module")
def server(shifting):
    s = Server(shifting[0])
    yield s
    s.stop()


def _get(client, run_id, **params):
    r = client.get(f"/api/runs/{run_id}/distribution", params={"key": KEY, **params})
    assert r.status_code == 200, r.text
    return r.json()


def test_every_step_is_a_column_of_the_runs_distribution(shifting, client):
    root, run_id, logged = shifting
    view = open_run(run_id, root).distribution(KEY, 32)
    data = _get(client, run_id, bins=32, width=600)
    assert data["key"] == KEY and data["steps"] == STEPS and data["merged"] == "mean"
    assert data["starts"] == data["ends"] == view.steps.tolist() == list(range(1, STEPS + 1))
    assert data["per"] == [1] * STEPS
    assert np.allclose(data["edges"], view.edges) and len(data["edges"]) == 33
    assert np.allclose(np.array(data["counts"]), view.counts)
    assert data["high"] == view.counts.max()
    assert np.allclose(data["total"], 3000)
    # each step's range and mean: from its own 64 bins (the values' extremes are their outer edges)
    assert data["min"] == pytest.approx([logged[s].min() for s in range(1, STEPS + 1)])
    assert data["max"] == pytest.approx([logged[s].max() for s in range(1, STEPS + 1)])
    widths = [(logged[s].max() - logged[s].min()) / 64 for s in range(1, STEPS + 1)]
    for s, mean, width in zip(range(1, STEPS + 1), data["mean"], widths, strict=True):
        assert abs(mean - logged[s].mean()) < width / 2
    assert data["mean"][-1] > data["mean"][0] + 4  # the distribution moved up


@pytest.mark.parametrize("width", [12, 7, 1])
def test_thinned_columns_keep_every_count(shifting, client, width):
    root, run_id, logged = shifting
    view = open_run(run_id, root).distribution(KEY, 64)
    data = _get(client, run_id, width=width)
    starts, ends, per = (np.array(data[f]) for f in ("starts", "ends", "per"))
    assert 1 <= len(starts) <= width and per.sum() == STEPS
    assert starts[0] == 1 and ends[-1] == STEPS and np.all(starts[1:] == ends[:-1] + 1)
    assert np.all(ends - starts + 1 == per)
    counts = np.array(data["counts"])
    # a column holds the mean of its steps' counts: times its steps, their sums, every count kept
    assert np.allclose((counts * per[:, None]).sum(axis=0), view.counts.sum(axis=0))
    assert np.allclose(counts.sum(axis=1), 3000) and np.allclose(data["total"], 3000)
    assert data["min"][0] == pytest.approx(min(logged[s].min() for s in range(1, per[0] + 1)))
    assert data["max"][-1] == pytest.approx(max(logged[s].max() for s in range(starts[-1], STEPS + 1)))


def test_the_run_names_its_histogram_keys_and_an_unknown_key_is_one_line(shifting, client):
    _, run_id, _ = shifting
    run = client.get(f"/api/runs/{run_id}").json()
    assert run["histogram_keys"] == [KEY] and KEY not in run["keys"] and "loss" in run["keys"]
    r = client.get(f"/api/runs/{run_id}/distribution", params={"key": "grad/layer9"})
    assert r.status_code == 404 and "\n" not in r.json()["detail"]
    assert "'grad/layer9'" in r.json()["detail"] and KEY in r.json()["detail"]
    assert client.get(f"/api/runs/{run_id}/distribution", params={"key": "loss"}).status_code == 404
    assert client.get("/api/runs/nosuch/distribution", params={"key": KEY}).status_code == 404
    assert client.get(f"/api/runs/{run_id}/distribution", params={"key": KEY, "bins": 1}).status_code == 422


def _pixels(card) -> np.ndarray:
    image = Image.open(io.BytesIO(card.query_selector("canvas.heat-canvas").screenshot())).convert("RGB")
    return np.asarray(image, dtype=np.int16).reshape(-1, 3)


def _coloured(pixels: np.ndarray) -> int:
    """How many distinct colours that are neither white nor grey (viridis' purples, greens, yellows)."""
    spread = pixels.max(axis=1) - pixels.min(axis=1)
    return len({tuple(p) for p in pixels[spread > 30][::3].tolist()})


@pytest.mark.parametrize("width", [1024, 1440])
def test_the_run_page_draws_a_card_per_distribution(shifting, server, browser, width):
    _, run_id, _ = shifting
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    errors, asked = [], []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("request", lambda r: asked.append(r.url) if "/distribution" in r.url else None)
    try:
        page.goto(f"{server.base}/run/{run_id}")
        card = page.wait_for_selector(f".distribution[data-key='{KEY}'][data-drawn]", timeout=30_000)
        assert page.is_visible("#dist-section h2") and page.inner_text("#dist-section h2") == "distributions"
        assert KEY in card.query_selector(".family-title").inner_text()
        assert card.get_attribute("data-view") == "heatmap"
        canvas = card.query_selector("canvas.heat-canvas")
        assert int(canvas.get_attribute("data-rows")) == 64
        assert int(canvas.get_attribute("data-cols")) == STEPS  # wide enough for a column a step
        assert _coloured(_pixels(card)) > 10  # viridis cells, not a blank canvas
        legend = card.query_selector(".heat-legend")
        assert legend.query_selector("canvas.heat-scale") is not None
        assert "values per bin and step" in legend.inner_text()
        labels = card.query_selector_all(".dist-side span")
        assert len(labels) >= 3 and all(re.fullmatch(r"-?[\d.e+-]+", s.inner_text()) for s in labels)
        assert "step 1" in card.query_selector(".dist-bottom").inner_text()
        assert f"step {STEPS}" in card.query_selector(".dist-bottom").inner_text()

        box = canvas.bounding_box()
        page.mouse.move(box["x"] + box["width"] * 0.5, box["y"] + box["height"] * 0.5)
        readout = card.query_selector(".heat-readout")
        wait_until(lambda: "step" in readout.inner_text())
        text = readout.inner_text()
        assert re.search(r"^step \d+ · -?[\d.]+ to -?[\d.]+: [\d,.]+ · of 3,000 values, ", text), text
        page.mouse.move(0, 0)
        wait_until(lambda: readout.inner_text() == "")

        loss = page.wait_for_selector("#charts .chart[data-key='loss'][data-drawn]", timeout=30_000)
        assert loss.get_attribute("data-points") == str(STEPS)
        card.scroll_into_view_if_needed()
        page.screenshot(path=f"/tmp/dash-hist-heatmap-{width}.png", full_page=True)
        page.screenshot(path=str(ARTIFACTS / f"histograms-{width}.png"), full_page=True)

        drawn = int(card.get_attribute("data-drawn"))
        card.query_selector(".dist-toggle button[data-view='ridgeline']").click()
        wait_until(lambda: int(card.get_attribute("data-drawn")) > drawn)
        assert card.get_attribute("data-view") == "ridgeline"
        assert card.query_selector("button[data-view='ridgeline']").get_attribute("aria-pressed") == "true"
        assert _coloured(_pixels(card)) > 10
        assert "step 1" in card.query_selector(".dist-side").inner_text()
        page.mouse.move(box["x"] + box["width"] * 0.5, box["y"] + box["height"] * 0.9)
        wait_until(lambda: re.search(r"^step \d+ · .*: [\d,.]+", readout.inner_text()) is not None)
        card.screenshot(path=f"/tmp/dash-hist-ridgeline-{width}.png")
        assert len(asked) == 1  # a view switched is drawn from what the card has

        page.check("#logy")  # a log colour scale: recoloured, nothing fetched
        wait_until(lambda: "log scale" in card.query_selector(".heat-legend").inner_text())
        card.query_selector(".dist-toggle button[data-view='heatmap']").click()
        wait_until(lambda: "log colour" in card.query_selector(".heat-legend").inner_text())
        assert len(asked) == 1

        page.fill("#chartsearch", "^loss$")  # the search over the charts narrows the distributions too
        wait_until(lambda: card.is_hidden() and loss.is_visible())
        page.fill("#chartsearch", "grad")
        wait_until(lambda: card.is_visible() and loss.is_hidden())
        assert errors == []
    finally:
        context.close()
