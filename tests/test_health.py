"""Training health events: NaN/Inf and spikes in the loss and gradient norm, at their step."""

from __future__ import annotations

import math
import warnings

import pytest

from tunetrack import Tracker
from tunetrack.monitoring.health import HealthConfig
from tunetrack.reader import open_run


def _health(run):
    return [(e["step"], e["problem"]) for e in run.events() if e["kind"] == "health"]


def test_nan_and_spikes_become_events_and_one_warning_each(root):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t = Tracker(dir=root, system=False).start()
        for step in range(1, 61):
            loss = 2.0 + 0.01 * math.sin(step)
            grad = 1.0 + 0.05 * math.cos(step)
            if step == 30:
                loss = 9.0  # a spike
            if step in (40, 41):
                loss = math.nan
            if step == 50:
                grad = math.inf
            t.log({"loss": loss, "grad_norm": grad, "lr": 1e-4}, step=step)
        t.finish()
    run = open_run(t.id, dir=root)
    assert _health(run) == [
        (30, "loss_spike"),
        (40, "loss_nonfinite"),
        (41, "loss_nonfinite"),
        (50, "grad_norm_nonfinite"),
    ]
    spike = next(e for e in run.events() if e.get("problem") == "loss_spike")
    assert spike["value"] == 9.0 and abs(spike["baseline"] - 2.0) < 0.02
    texts = [str(w.message) for w in caught if "training health" in str(w.message)]
    assert len(texts) == 3  # one per kind of problem, not one per occurrence
    assert math.isnan(run.series("loss").values[39])  # the value itself is kept


def test_thresholds_are_configurable_and_health_can_be_off(root):
    t = Tracker(dir=root, system=False, health=HealthConfig(spike_factor=1e6)).start()
    for step in range(1, 31):
        t.log({"loss": 100.0 if step == 25 else 1.0 + step * 1e-3}, step=step)
    t.finish()
    assert _health(open_run(t.id, dir=root)) == []
    t = Tracker(dir=root, system=False, health=False).start()
    t.log({"loss": math.nan})
    t.finish()
    assert _health(open_run(t.id, dir=root)) == []


def test_a_steady_decline_raises_nothing(root):
    t = Tracker(dir=root, system=False).start()
    for step in range(1, 500):
        t.log({"loss": 5.0 * math.exp(-step / 100) + 0.01 * math.sin(step), "grad_norm": 1.0}, step=step)
    t.finish()
    assert _health(open_run(t.id, dir=root)) == []


@pytest.mark.filterwarnings("ignore:tunetrack. training health")
def test_spikes_are_found_in_large_blocks_and_across_writes(root):
    """Past the first window the baseline is recomputed per chunk of values: spikes anywhere in a
    4,000-row block, and right after a write boundary, are each found once, with no false alarm."""
    spikes = {120, 555, 2001, 3999}
    t = Tracker(dir=root, system=False).start()
    for step in range(1, 4001):
        loss = 50.0 if step in spikes else 2.0 + 0.05 * math.sin(step * 0.7)
        t.log({"loss": loss, "grad_norm": 1.0 + 0.01 * math.cos(step)}, step=step)
        if step == 2000:
            assert t.flush()  # the next row starts a new block; its history comes from the last one
    t.finish()
    run = open_run(t.id, dir=root)
    assert _health(run) == [(s, "loss_spike") for s in sorted(spikes)]
    assert all(abs(e["baseline"] - 2.0) < 0.06 for e in run.events() if e["kind"] == "health")
