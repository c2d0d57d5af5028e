"""The Tracker end to end in one process: log, finish, read back what the store holds."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch

from tunetrack import Tracker
from tunetrack._warnings import TunetrackWarning
from tunetrack.errors import InvalidValue
from tunetrack.reader import list_runs, open_run


def test_log_and_read_back(root):
    with Tracker(
        project="p", name="n", dir=root, config={"lr": 1e-3, "model": {"layers": 2}}, tags=["a"]
    ) as t:
        for step in range(1, 101):
            t.log({"loss": 1.0 / step, "lr": 0.001, "epoch": step // 10}, step=step)
    run = open_run(t.id, dir=root)
    assert (run.name, run.project, run.tags, run.state) == ("n", "p", ["a"], "finished")
    loss = run.series("loss")
    assert loss.steps.tolist() == list(range(1, 101))
    assert loss.values.tolist() == [1.0 / s for s in range(1, 101)]
    assert run.series("epoch").values.dtype == np.int64
    assert run.config == {"lr": 1e-3, "model": {"layers": 2}}
    assert run.flat_config == {"lr": 1e-3, "model.layers": 2}
    summary = run.summary()
    assert summary["loss"] == {
        "last": 0.01,
        "min": 0.01,
        "max": 1.0,
        "best": 0.01,
        "best_step": 100,
        "step": 100,
        "count": 100,
    }
    assert run.last_step == 100
    assert run.latest() == {"step": 100, "values": {"loss": 0.01, "lr": 0.001, "epoch": 10}}  # the end record
    assert run.ended is not None and run.ended >= run.created


def test_value_types_round_trip(root):
    t = Tracker(dir=root).start()
    t.log(
        {
            "f": 1.5,
            "i": 7,
            "b": True,
            "s": "hello",
            "none": None,
            "nan": math.nan,
            "inf": math.inf,
            "ninf": -math.inf,
            "np32": np.float32(0.25),
            "np64": np.int64(3),
            "npbool": np.bool_(False),
            "t0": torch.tensor(2.5),
            "t1": torch.tensor([4.0]),
            "nested": {"a": 1.0, "b": {"c": 2}},
        },
        step=1,
    )
    t.finish()
    row = next(open_run(t.id, dir=root).rows())
    assert row["f"] == 1.5 and row["i"] == 7 and row["b"] is True and row["s"] == "hello"
    assert (
        row["none"] is None and math.isnan(row["nan"]) and row["inf"] == math.inf and row["ninf"] == -math.inf
    )
    assert row["np32"] == 0.25 and row["np64"] == 3 and row["npbool"] is False
    assert row["t0"] == 2.5 and row["t1"] == 4.0
    assert row["nested/a"] == 1.0 and row["nested/b/c"] == 2


def test_tensor_value_is_taken_at_log_time(root):
    t = Tracker(dir=root).start()
    value = torch.tensor(1.0)
    arr = np.array(5.0)
    t.log({"x": value, "a": arr}, step=1)
    value.add_(100.0)  # in place, after log(): must not change what was recorded
    arr += 100.0
    metrics = {"y": 1.0}
    t.log(metrics, step=2)
    metrics["y"] = 2.0  # mutating the caller's dict after log() must not change the record either
    t.finish()
    run = open_run(t.id, dir=root)
    assert run.series("x").values.tolist() == [1.0]
    assert run.series("a").values.tolist() == [5.0]
    assert run.series("y").values.tolist() == [1.0]


def test_unsupported_values_warn_once_per_key_and_never_raise(root):
    t = Tracker(dir=root).start()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for step in range(3):
            t.log({"ok": 1.0, "list": [1, 2], "obj": object(), "arr": np.ones(3)}, step=step)
        t.finish()
    messages = [str(w.message) for w in caught if issubclass(w.category, TunetrackWarning)]
    for key in ("list", "obj", "arr"):
        assert sum(f"'{key}'" in m for m in messages) == 1, messages
    run = open_run(t.id, dir=root)
    assert run.keys() == ["ok"]
    assert run.series("ok").steps.tolist() == [0, 1, 2]
    assert run.meta["processes"][0]["end"]["counters"]["dropped_values"] == 9


def test_strict_mode_raises(root):
    t = Tracker(dir=root, strict=True).start()
    with pytest.raises(InvalidValue):
        t.log({"bad": [1, 2]})
    with pytest.raises(InvalidValue):
        t.log({"x": 1.0}, step=1.5)
    t.finish()


def test_default_mode_bad_calls_never_raise(root):
    t = Tracker(dir=root).start()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t.log(None)  # type: ignore[arg-type]
        t.log([("a", 1)])  # type: ignore[arg-type]
        t.log({"x": 1.0}, step="seven")  # type: ignore[arg-type]
        t.log({"x": 2.0}, step=np.int64(10))
        t.log({1: 3.0}, step=11)  # type: ignore[dict-item]
    t.finish()
    run = open_run(t.id, dir=root)
    assert run.series("x").steps.tolist() == [1, 10]
    assert run.series("1").values.tolist() == [3.0]


def test_auto_step_and_mixed_key_sets(root):
    t = Tracker(dir=root).start()
    t.log({"loss": 3.0})
    t.log({"loss": 2.0})
    t.log({"eval_loss": 2.5}, step=2)
    t.log({"loss": 1.0})
    t.finish()
    run = open_run(t.id, dir=root)
    assert run.series("loss").steps.tolist() == [1, 2, 3]
    assert run.series("eval_loss").steps.tolist() == [2]
    rows = list(run.rows())
    assert [r["step"] for r in rows] == [1, 2, 2, 3]
    assert "loss" not in rows[2] and rows[2]["eval_loss"] == 2.5


def test_context_manager_marks_failed_with_traceback(root):
    with pytest.raises(RuntimeError), Tracker(dir=root, name="boom") as t:
        t.log({"x": 1.0})
        raise RuntimeError("out of patience")
    run = open_run("boom", dir=root)
    assert run.state == "failed"
    assert "RuntimeError: out of patience" in run.error


def test_events_config_merge_and_secrets(root):
    t = Tracker(dir=root, config={"a": 1, "opt": {"lr": 0.1}}).start()
    t.log_config({"opt": {"wd": 0.01}, "hub_token": "hf_abc"})
    t.event("checkpoint", step=5, path="/tmp/ckpt-5")
    t.finish()
    run = open_run(t.id, dir=root)
    assert run.config == {"a": 1, "opt": {"lr": 0.1, "wd": 0.01}, "hub_token": "***REDACTED***"}
    (event,) = run.events()
    assert (event["kind"], event["step"], event["path"]) == ("checkpoint", 5, "/tmp/ckpt-5")


def test_rewind_hides_superseded_points_in_one_process(root):
    t = Tracker(dir=root).start()
    for step in range(1, 81):
        t.log({"loss": float(step)}, step=step)
    t.flush()
    t.rewind(50)
    for step in range(51, 101):
        t.log({"loss": step + 0.5}, step=step)
    t.finish()
    s = open_run(t.id, dir=root).series("loss")
    assert s.steps.tolist() == list(range(1, 101))
    assert s.values.tolist() == [float(x) for x in range(1, 51)] + [x + 0.5 for x in range(51, 101)]


def test_list_runs_filters(root):
    for i, (project, fail) in enumerate([("a", False), ("a", True), ("b", False)]):
        t = Tracker(project=project, name=f"r{i}", dir=root, tags=["x"] if i else []).start()
        t.log({"v": float(i)})
        t.finish("failed" if fail else None)
    assert [r.name for r in list_runs(root)] == ["r2", "r1", "r0"]
    assert [r.name for r in list_runs(root, project="a")] == ["r1", "r0"]
    assert [r.name for r in list_runs(root, state="failed")] == ["r1"]
    assert [r.name for r in list_runs(root, tags=["x"])] == ["r2", "r1"]


def test_non_zero_rank_records_nothing_and_never_crashes(root, monkeypatch):
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    t = Tracker(dir=root)
    t.log({"x": 1.0})
    t.log_config({"a": 1})
    t.event("checkpoint")
    t.finish()
    assert not t.active and t.id is None
    assert not root.exists()


def test_custom_backend_receives_batches_and_a_broken_one_is_isolated(root):
    class Recording:
        def __init__(self):
            self.calls = []

        def start(self, run):
            self.calls.append(("start", run.id))

        def log_config(self, config):
            self.calls.append(("config", config))

        def log(self, rows):
            self.calls.extend(("row", step, values) for step, _, values in rows)

        def finish(self, state):
            self.calls.append(("finish", state))

    class Broken(Recording):
        def log(self, rows):
            raise ValueError("backend bug")

    good, bad = Recording(), Broken()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t = Tracker(dir=root, backends=[bad, good], config={"lr": 1}).start()
        for step in range(1, 4):
            t.log({"loss": float(step), "t": torch.tensor(1.0)}, step=step)
            t.flush()
        t.finish()
    assert good.calls[0] == ("start", t.id)
    assert good.calls[1] == ("config", {"lr": 1})
    assert good.calls[2:5] == [("row", s, {"loss": float(s), "t": 1.0}) for s in (1, 2, 3)]
    assert good.calls[-1] == ("finish", "finished")
    assert ("finish", "finished") not in bad.calls
    assert sum("backend bug" in str(w.message) for w in caught) == 1
    assert open_run(t.id, dir=root).series("loss").values.tolist() == [1.0, 2.0, 3.0]


def test_store_disabled_runs_backends_only(root):
    rows = []

    class Sink:
        def start(self, run): ...
        def log_config(self, config): ...
        def log(self, batch):
            rows.extend(batch)

        def finish(self, state): ...

    t = Tracker(dir=root, store=False, backends=[Sink()]).start()
    t.log({"x": 1.0})
    t.finish()
    assert [r[2] for r in rows] == [{"x": 1.0}]
    assert not root.exists()


def test_full_buffer_drops_are_counted_not_silent(root):
    t = Tracker(dir=root, max_pending=100).start()  # 10 rows until the writer has seen a row's width
    t._writer.finish("finished")  # freeze the writer's progress by finishing it first
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for step in range(30):
            t.log({"x": float(step)}, step=step)
        t.finish()
    assert t._writer.counters.dropped_rows == 20
    assert any("cannot keep up" in str(w.message) for w in caught)
    assert any("'dropped_rows': 20" in str(w.message) for w in caught)  # reported again at finish()


def test_log_after_finish_is_counted(root):
    t = Tracker(dir=root).start()
    t.finish()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t.log({"x": 1.0})
    assert t._writer.counters.late_rows == 1
    assert any("after finish" in str(w.message) for w in caught)


def test_the_backlog_is_bounded_in_values_not_rows(root):
    """Wide rows (per-layer or RL logging) get proportionally fewer pending rows: memory is bounded."""
    t = Tracker(dir=root, max_pending=50_000, system=False).start()
    t.log({f"layer.{i}/grad_norm": float(i) for i in range(500)})
    assert t.flush()
    assert t._channel.queue.cap == 100  # 50,000 values / 500 per row
    t.log({"loss": 1.0})
    assert t.flush()
    assert t._channel.queue.cap == 50_000
    t.finish()
    assert open_run(t.id, dir=root).series("layer.7/grad_norm").values.tolist() == [7.0]


def test_a_key_logged_as_none_at_most_steps_summarizes_its_measured_points(root):
    t = Tracker(dir=root, system=False).start()
    for step in range(1, 401):
        t.log({"loss": 1.0 / step, "eval/loss": 10.0 / step if step % 100 == 0 else None}, step=step)
    t.log({"eval/loss": None}, step=401)  # logged as None last: the last measured value stands
    t.finish()
    summary = open_run(t.id, dir=root).summary()
    assert summary["eval/loss"] == {
        "last": 0.025,
        "min": 0.025,
        "max": 0.1,
        "best": 0.025,
        "best_step": 400,
        "step": 400,
        "count": 4,
    }
    assert summary["loss"]["count"] == 400
