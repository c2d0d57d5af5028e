"""Backends: each on its own thread, so a slow, stuck or raising one costs training and the local store
nothing and only misses what it missed (counted); by name and through the entry-point group (the
example package in examples/backend_package); TensorBoard event files read back by TensorBoard's own
reader."""

from __future__ import annotations

import json
import os
import threading
import time
import warnings
from pathlib import Path

import pytest

from support.helpers import wait_until
from tunetrack import Tracker
from tunetrack.reader import open_run
from tunetrack.writer import fanout


class Slow:
    """A backend that takes ``delay`` seconds per row it receives (a distant tracking server)."""

    def __init__(self, delay: float) -> None:
        self.delay, self.rows, self.state = delay, [], None
        self.batches: list[int] = []  # the size of each call's batch

    def start(self, run): ...

    def log_config(self, config): ...

    def log(self, rows):
        self.batches.append(len(rows))
        time.sleep(self.delay * len(rows))
        self.rows += rows

    def finish(self, state):
        self.state = state


def test_a_slow_backend_costs_training_nothing_and_what_it_missed_is_counted(root):
    slow = Slow(delay=0.3 / 200)
    t = Tracker(dir=root, name="slow", system=False, backends=[slow], backend_timeout=0.5).start()
    began = time.perf_counter()
    for step in range(1, 2001):
        t.log({"loss": 1.0 / step}, step=step)
        if step % 200 == 0:
            t.flush()  # a write per 200 rows: 0.3 s of the backend's time each
    flushed = time.perf_counter() - began
    t.finish()
    got = len(slow.rows)  # what it had taken when finish() returned
    assert flushed < 2.0  # 2,000 rows take the backend 3 s; the writer did not wait for it
    run = open_run(t.id, dir=root)
    assert run.series("loss").steps.tolist() == list(range(1, 2001))  # the local store is complete
    (stats,) = run.meta["processes"][0]["end"]["backends"].values()
    # every row it had not taken is counted (the batch in its hands when time ran out may arrive late)
    assert 2000 - got <= stats["missed_rows"] <= 2000 - got + max(slow.batches) and got < 2000
    assert "did not catch up" in stats["error"]
    assert run.summary()["tunetrack/backend_missed/Slow"]["last"] == stats["missed_rows"]


def test_a_backend_raising_on_its_100th_batch_is_disabled_alone(root):
    class Flaky(Slow):
        def log(self, rows):
            if len(self.batches) == 99:  # the 100th batch
                raise ConnectionError("tracking server went away")
            self.batches.append(len(rows))
            self.rows += rows

    flaky, fine = Flaky(0), Slow(0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t = Tracker(dir=root, system=False, backends=[flaky, fine]).start()
        for step in range(1, 2001):
            t.log({"loss": float(step)}, step=step)
            if step % 10 == 0:
                t.flush()  # a batch per 10 rows: 200 of them
        t.finish()
    assert len(fine.rows) == 2000 and fine.state == "finished"
    assert len(flaky.batches) == 99 and flaky.state is None  # disabled: no finish either
    assert [step for step, _, _ in flaky.rows] == list(range(1, len(flaky.rows) + 1))
    assert sum("tracking server went away" in str(w.message) for w in caught) == 1
    end = open_run(t.id, dir=root).meta["processes"][0]["end"]["backends"]
    assert end["Flaky"]["missed_rows"] == 2000 - len(flaky.rows)  # from its 100th batch on
    assert "ConnectionError" in end["Flaky"]["error"]
    assert end["Slow"] == {"missed_rows": 0, "error": None}


def test_a_backend_too_far_behind_misses_rows_instead_of_growing(root, monkeypatch):
    monkeypatch.setattr(fanout, "MAX_ROWS", 150)
    stuck = Slow(delay=0.5)
    t = Tracker(dir=root, system=False, backends=[stuck], backend_timeout=2.0).start()
    with pytest.warns(UserWarning, match="rows behind"):
        for step in range(1, 601):
            t.log({"loss": float(step)}, step=step)
            if step % 100 == 0:
                t.flush()
        t.finish()
    missed = open_run(t.id, dir=root).meta["processes"][0]["end"]["backends"]["Slow"]["missed_rows"]
    assert missed > 0 and len(stuck.rows) + missed == 600


def test_queued_batches_are_joined_in_order(root):
    """A backend that fell behind gets the rows queued behind each other in one call (one request to a
    remote tracker), never across an event that came between them."""

    class Recording(Slow):
        def __init__(self) -> None:
            super().__init__(0)
            self.calls: list[tuple[str, list[int]]] = []

        def log(self, rows):
            if not self.calls:
                time.sleep(0.5)  # behind from the first batch: the next ones queue up
            self.calls.append(("log", [step for step, _, _ in rows]))

        def log_event(self, event):
            self.calls.append(("event", [event["step"]]))

    backend = Recording()
    with Tracker(dir=root, system=False, backends=[backend]) as t:
        for step in range(1, 401):
            t.log({"loss": float(step)}, step=step)
            if step % 50 == 0:
                t.flush()  # a batch of 50 for the writer to hand on
            if step == 200:
                t.event("checkpoint", step=200)
    steps = [step for _, got in backend.calls for step in got]
    assert steps == [*range(1, 201), 200, *range(201, 401)]  # every row once, the event in its place
    assert backend.calls[backend.calls.index(("event", [200])) - 1][1][-1] == 200
    assert len(backend.calls) < 400 // 50 + 1  # some batches were joined


def test_backends_by_name_and_from_the_environment(root, monkeypatch, capsys):
    with Tracker(dir=root, name="named", system=False, backends=["console"]) as t:
        t.log({"loss": 0.5}, step=1)
    assert "step 1 | loss 0.5000" in capsys.readouterr().out
    monkeypatch.setenv("TUNETRACK_BACKENDS", "console")
    with Tracker(dir=root, name="env", system=False) as t:
        t.log({"loss": 0.25}, step=2)
    assert "step 2 | loss 0.2500" in capsys.readouterr().out
    monkeypatch.delenv("TUNETRACK_BACKENDS")
    unknown = r"no tunetrack backend named 'nosuch' \(installed: .*console"
    with (
        pytest.warns(UserWarning, match=unknown),
        Tracker(dir=root, name="typo", system=False, backends=["nosuch"]) as t,
    ):
        t.log({"loss": 1.0}, step=1)
    assert open_run("typo", dir=root).series("loss").values.tolist() == [1.0]  # training went on
    with pytest.raises(ValueError, match="nosuch"):
        Tracker(dir=root, system=False, backends=["nosuch"], strict=True).start()


def test_a_third_party_backend_by_its_entry_point(root, tmp_path, monkeypatch):
    """examples/backend_package, installed by the tests session: usable by name, no code change."""
    out = tmp_path / "mycompany.jsonl"
    monkeypatch.setenv("MYCOMPANY_TRACKER_FILE", str(out))
    monkeypatch.setenv("TUNETRACK_BACKENDS", "mycompany")
    with Tracker(dir=root, project="p", name="theirs", system=False, config={"lr": 0.1}) as t:
        for step in range(1, 4):
            t.log({"loss": 1.0 / step}, step=step)
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["type"] for r in records] == ["start", "config", "metrics", "metrics", "metrics", "finish"]
    assert records[0]["name"] == "theirs" and records[1]["config"] == {"lr": 0.1}
    assert [r["step"] for r in records if r["type"] == "metrics"] == [1, 2, 3]
    assert records[-1]["state"] == "finished"


def test_tensorboard_reads_the_mirrored_run(root):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    t = Tracker(dir=root, name="tb", system=False, backends=["tensorboard"], config={"lr": 3e-4}).start()
    for step in range(1, 101):
        t.log({"loss": 1.0 / step, "note": "text is not a scalar", "flag": step % 2 == 0}, step=step)
    t.log_text("samples", "Once upon a time", step=100)
    t.flush()
    t.rewind(50)  # resumed from the checkpoint at step 50: TensorBoard drops the steps after it
    for step in range(51, 81):
        t.log({"loss": 2.0 / step}, step=step)
    t.finish()
    acc = EventAccumulator(str(Path(t.run_dir) / "tensorboard"), size_guidance={"scalars": 0, "tensors": 0})
    acc.Reload()
    loss = acc.Scalars("loss")
    assert [e.step for e in loss] == list(range(1, 81))
    assert [e.value for e in loss][50:] == pytest.approx([2.0 / s for s in range(51, 81)], rel=1e-6)
    assert [e.value for e in loss][:50] == pytest.approx([1.0 / s for s in range(1, 51)], rel=1e-6)
    assert [e.value for e in acc.Scalars("flag")][:4] == [0.0, 1.0, 0.0, 1.0]
    assert "note" not in acc.Tags()["scalars"]
    config = acc.Tensors("config")[0].tensor_proto.string_val[0].decode()
    assert '"lr": 0.0003' in config
    assert acc.Tensors("tunetrack/state")[0].tensor_proto.string_val[0] == b"finished"


def test_sync_backend_replays_a_run_into_tensorboard_once(root):
    """A run recorded without backends, sent into TensorBoard afterwards; a second call finds every
    point already there (TensorBoard's own reader says so) and sends nothing."""
    from click.testing import CliRunner
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from tunetrack.cli import cli

    with Tracker(dir=root, name="offline", system=False, config={"lr": 0.1}) as t:
        for step in range(1, 121):
            t.log({"loss": 1.0 / step, "eval/loss": 2.0 / step if step % 40 == 0 else None}, step=step)
        t.log_text("samples", "hello", step=120)
    args = ["sync-backend", "offline", "--to", "tensorboard", "--dir", str(root)]
    first = CliRunner().invoke(cli, args)
    assert first.exit_code == 0, first.output
    assert "123 points" in first.output and "1 events" in first.output
    acc = EventAccumulator(str(Path(t.run_dir) / "tensorboard"), size_guidance={"scalars": 0, "tensors": 0})
    acc.Reload()
    assert [e.step for e in acc.Scalars("loss")] == list(range(1, 121))
    assert [e.step for e in acc.Scalars("eval/loss")] == [40, 80, 120]
    assert acc.Tensors("tunetrack/state")[0].tensor_proto.string_val[0] == b"finished"
    second = CliRunner().invoke(cli, args)
    assert second.exit_code == 0 and "nothing new to send" in second.output
    acc = EventAccumulator(str(Path(t.run_dir) / "tensorboard"), size_guidance={"scalars": 0})
    acc.Reload()
    assert len(acc.Scalars("loss")) == 120


# -- the wait at finish(): as long as a backend makes progress ----------------------------------------
def backend_warnings(caught) -> list[str]:
    return [str(w.message) for w in caught if "backend" in str(w.message)]


def test_finish_waits_for_a_slow_backend_as_long_as_it_delivers(root):
    """Default settings: a backend that needs about 6 s to take a short run (longer than any fixed
    grace period) gets all of it, and its end, and nothing is warned about."""
    slow = Slow(delay=6.0 / 2000)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t = Tracker(dir=root, system=False, backends=[slow]).start()
        for step in range(1, 2001):
            t.log({"loss": 1.0 / step}, step=step)
            if step % 100 == 0:
                t.flush()
        t.finish()
    assert [step for step, _, _ in slow.rows] == list(range(1, 2001)) and slow.state == "finished"
    assert backend_warnings(caught) == []
    end = open_run(t.id, dir=root).meta["processes"][0]["end"]["backends"]
    assert end == {"Slow": {"missed_rows": 0, "error": None}}


def test_a_backend_that_stops_delivering_is_given_up_after_the_stall_and_named_once(root, monkeypatch):
    monkeypatch.setenv("TUNETRACK_BACKEND_STALL", "1")
    release = threading.Event()

    class Hung(Slow):
        def log(self, rows):
            if self.batches:  # its second call never returns (a server that stopped answering)
                release.wait(60)
            super().log(rows)

    hung, fine = Hung(0), Slow(0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t = Tracker(dir=root, system=False, backends=[hung, fine]).start()
        for step in range(1, 2001):
            t.log({"loss": float(step)}, step=step)
            if step % 500 == 0:
                t.flush()
        began = time.monotonic()
        t.finish()
        waited = time.monotonic() - began
    taken = len(hung.rows)  # before its stuck call is released and appends what it held
    release.set()
    assert waited < 15  # one stall period, not a minute
    assert len(fine.rows) == 2000 and fine.state == "finished"
    end = open_run(t.id, dir=root).meta["processes"][0]["end"]["backends"]
    missed = end["Hung"]["missed_rows"]
    assert missed == 2000 - taken and "delivered nothing for 1 s" in end["Hung"]["error"]
    (said,) = backend_warnings(caught)  # one warning, about the backend that missed rows
    assert f"did not get {missed:,} of 2,000 rows" in said
    assert f"tunetrack sync-backend {t.id} --to Hung" in said
    assert end["Slow"] == {"missed_rows": 0, "error": None}


SLOW_MIRROR = """
import pathlib, sys, time
from tunetrack import Tracker

class Slow:
    def start(self, run): ...
    def log_config(self, config): ...
    def log(self, rows):
        pathlib.Path(sys.argv[2]).touch()  # the mirror is under way
        time.sleep(0.01 * len(rows))  # 2,000 rows: 20 s
    def finish(self, state): ...

t = Tracker(dir=sys.argv[1], system=False, backends=[Slow()]).start()
print(t.id, flush=True)
for step in range(1, 2001):
    t.log({"loss": 1.0 / step}, step=step)
t.finish()
"""


def test_sigterm_while_mirrors_catch_up_records_the_end_at_once(root, tmp_path):
    """Training is over when the user stops the wait (here SIGTERM, as a scheduler sends it; Ctrl-C
    takes the same path): the run ends finished and complete in the local store, the rows the mirror
    did not get are counted. On a terminal the wait shows a progress line."""
    import pty
    import signal
    import subprocess
    import sys

    from support.helpers import SRC

    started = tmp_path / "started"
    parent, child = pty.openpty()  # stderr on a terminal
    proc = subprocess.Popen(
        [sys.executable, "-c", SLOW_MIRROR, str(root), str(started)],
        stdout=subprocess.PIPE,
        stderr=child,
        text=True,
        env={**os.environ, "PYTHONPATH": SRC},
    )
    os.close(child)
    shown: list[bytes] = []
    reader = threading.Thread(target=lambda: _drain(parent, shown))
    reader.start()
    run_id = proc.stdout.readline().strip()
    wait_until(lambda: b"mirroring to Slow" in b"".join(shown), timeout=60)
    began = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=60)
    stopped = time.monotonic() - began
    reader.join(timeout=10)
    os.close(parent)
    assert started.exists() and stopped < 10
    run = open_run(run_id, dir=root)
    assert run.state == "finished"
    assert run.series("loss").steps.tolist() == list(range(1, 2001))
    (stats,) = run.meta["processes"][0]["end"]["backends"].values()
    assert stats["missed_rows"] > 0 and "stopped" in stats["error"]
    assert f"sync-backend {run_id} --to Slow".encode() in b"".join(shown)


def _drain(fd: int, into: list[bytes]) -> None:
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # the terminal closed with the process
            return
        if not chunk:
            return
        into.append(chunk)
