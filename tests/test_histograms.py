"""Distributions over steps (issue 35): ``tunetrack.Histogram`` logged at a step, read back exactly,
rebinned over the steps on common bins with every count kept."""

from __future__ import annotations

import numpy as np
import pytest

import tunetrack
from tunetrack import Histogram, Tracker
from tunetrack.errors import UnknownName
from tunetrack.reader import open_run


def test_a_histogram_from_values_and_from_counts():
    values = np.r_[np.linspace(-1.0, 1.0, 1000), [np.nan, np.inf]]
    h = Histogram(values, bins=10)
    counts, edges = np.histogram(np.linspace(-1.0, 1.0, 1000), bins=10)
    assert h.counts == counts.astype(float).tolist() and h.edges == edges.tolist() and h.nonfinite == 2
    g = Histogram(counts=[1, 2, 3], edges=[0.0, 1.0, 2.0, 3.0])
    assert g.counts == [1.0, 2.0, 3.0] and repr(g) == "Histogram(3 bins, 6 values)"
    with pytest.raises(ValueError, match="3 counts need 4 edges, not 3"):
        Histogram(counts=[1, 2, 3], edges=[0.0, 1.0, 2.0])
    with pytest.raises(ValueError, match="not both"):
        Histogram([1.0], counts=[1], edges=[0.0, 1.0])
    with pytest.raises(ValueError, match="must not decrease"):
        Histogram(counts=[1, 1], edges=[0.0, 2.0, 1.0])
    assert tunetrack.Histogram is Histogram


def test_histograms_logged_with_metrics_read_back_exactly(tmp_path):
    rng = np.random.default_rng(0)
    logged = {}
    with Tracker(dir=tmp_path, name="dist", system=False, console=False) as run:
        for step in range(1, 21):
            grads = rng.normal(0.0, 1.0 / step, 5000)
            logged[step] = Histogram(grads, bins=32)
            run.log(
                {"loss": 1.0 / step, "grad/layer0": logged[step], "grad/layer1": Histogram(grads * 2)},
                step=step,
            )
    read = open_run(run.id, tmp_path)
    assert list(read.series("loss").values) == [1.0 / s for s in range(1, 21)]
    assert "grad/layer0" not in read.keys() and not any(e["kind"] == "histogram" for e in read.events())
    found = read.histograms()
    assert sorted(found) == ["grad/layer0", "grad/layer1"]
    assert [h.step for h in found["grad/layer0"]] == list(range(1, 21))
    for h in found["grad/layer0"]:
        assert h.counts.tolist() == logged[h.step].counts and h.edges.tolist() == logged[h.step].edges
    assert len(found["grad/layer1"][0].counts) == 64  # the default bins


def test_over_steps_keeps_every_count_on_common_bins(tmp_path):
    with Tracker(dir=tmp_path, name="shifting", system=False, console=False) as run:
        for step in range(1, 6):
            run.log({"acts": Histogram(np.linspace(step, step + 1.0, 101), bins=10)}, step=step)
        run.log({"acts": Histogram(counts=[7], edges=[3.0, 3.5])}, step=5)  # a step logged again: replaced
    view = open_run(run.id, tmp_path).distribution("acts", bins=12)
    assert view.steps.tolist() == [1, 2, 3, 4, 5] and view.counts.shape == (5, 12)
    assert view.edges[0] == 1.0 and view.edges[-1] == 5.0  # step 5 as it was logged again: in [3, 3.5]
    assert np.allclose(view.counts.sum(axis=1), [101, 101, 101, 101, 7])
    # step 1's values lie in [1, 2]: the first three common bins (a third wide) hold them, the rest nothing
    assert view.counts[0, 3:].sum() == 0 and view.counts[0, :2].sum() > 0
    with pytest.raises(UnknownName, match="no run has histogram 'act'; did you mean acts"):
        open_run(run.id, tmp_path).distribution("act")


def test_histograms_round_trip_through_the_tensorboard_mirror(tmp_path):
    """Mirrored into TensorBoard (read with its own EventAccumulator), then imported back: the same bins
    and counts at the same steps."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from tunetrack.bridges.importers import tensorboard
    from tunetrack.bridges.importers.write import import_runs

    logged = {step: Histogram(np.random.default_rng(step).normal(size=2000), bins=16) for step in (1, 2, 3)}
    with Tracker(
        dir=tmp_path / "runs", name="mirrored", system=False, console=False, backends=["tensorboard"]
    ) as run:
        for step, h in logged.items():
            run.log({"loss": 1.0 / step, "grad/norms": h}, step=step)
    board = tmp_path / "runs" / run.id / "tensorboard"
    accumulator = EventAccumulator(str(board), size_guidance={"histograms": 0})
    accumulator.Reload()
    seen = {e.step: e.histogram_value for e in accumulator.Histograms("grad/norms")}
    assert sorted(seen) == [1, 2, 3]
    for step, h in logged.items():
        assert (
            list(seen[step].bucket) == h.counts
            and seen[step].min == h.edges[0]
            and seen[step].max == h.edges[-1]
        )
        assert list(seen[step].bucket_limit) == h.edges[1:] and seen[step].num == sum(h.counts)
    (imported,) = import_runs(tensorboard.runs(str(board)), tmp_path / "imported")
    back = open_run(imported.run_id, tmp_path / "imported").histograms("grad/norms")["grad/norms"]
    assert [h.step for h in back] == [1, 2, 3]
    for h in back:
        assert h.counts.tolist() == logged[h.step].counts and np.allclose(h.edges, logged[h.step].edges)


def test_the_wandb_drop_in_records_a_histogram(tmp_path, monkeypatch):
    monkeypatch.setenv("TUNETRACK_DIR", str(tmp_path))
    monkeypatch.setenv("TUNETRACK_SYSTEM", "0")
    import tunetrack.wandb as wandb

    run = wandb.init(project="p", name="dropin")
    counts, edges = np.histogram(np.arange(100.0), bins=5)
    wandb.log(
        {
            "h": wandb.Histogram(np_histogram=(counts, edges)),
            "v": wandb.Histogram([1.0, 2.0, 2.0], num_bins=2),
        }
    )
    wandb.log({"loss": 0.5})
    run.finish()
    found = open_run("dropin", dir=tmp_path).histograms()
    assert found["h"][0].counts.tolist() == counts.tolist() and found["h"][0].edges.tolist() == edges.tolist()
    assert found["v"][0].counts.tolist() == [1.0, 2.0] and found["h"][0].step == found["v"][0].step


def test_the_terminal_view_draws_a_histogram_key_as_its_distribution_over_the_steps(tmp_path):
    import asyncio

    from support.tui import until
    from tunetrack.tui.app import TunetrackApp
    from tunetrack.tui.panes.across import distribution_view

    rng = np.random.default_rng(1)
    with Tracker(dir=tmp_path, name="dist", system=False, console=False) as run:
        for step in range(1, 31):
            run.log({"loss": 1.0 / step, "grad/norms": Histogram(rng.normal(step / 10, 1.0, 500))}, step=step)

    async def drive() -> None:
        app = TunetrackApp(dir=tmp_path, interval=0.2)
        async with app.run_test(size=(140, 40)) as pilot:
            chart = app.query_one("#chart")
            await until(pilot, lambda: chart.key == "loss" and "grad/norms" in chart._keys)
            await pilot.press("m", *"norms", "enter")
            await until(pilot, lambda: chart.has_class("heat"))
            shown = str(app.query_one("#heat").render())
            assert "the distribution of grad/norms of dist over the steps" in shown
            view = chart._view
            assert view.values.sum() == 30 * 500 and list(view.steps) == list(range(1, 31))
            # the bins' middles from the top: the highest values first
            middles = [float(k) for k in view.keys]
            assert middles == sorted(middles, reverse=True)

    asyncio.run(drive())
    read = open_run(run.id, tmp_path)
    view = distribution_view(read, "grad/norms", bins=10)
    assert np.array_equal(view.values, read.distribution("grad/norms", bins=10).counts.T[::-1])
