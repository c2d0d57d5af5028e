"""Run states and durability under failure: real processes, real signals, real files."""

from __future__ import annotations

import json
import signal
import time
import warnings

import pytest

from support.helpers import run_script, spawn_script, wait_until
from tunetrack.jsonfile import read_json
from tunetrack.reader import list_runs, open_run
from tunetrack.reader.as_text import facts
from tunetrack.store.framing import frame

LOGGER = """
import sys, time
from tunetrack import Tracker
t = Tracker(dir=sys.argv[1], name=sys.argv[2]).start()
print(t.id, flush=True)
step = 0
while True:
    step += 1
    t.log({"loss": float(step)}, step=step)
    if step % 100 == 0:
        with open(sys.argv[3], "w") as f:
            f.write(str(step))
    time.sleep(0.001)
"""


def _progress(path):
    try:
        return int(path.read_text() or 0)
    except (OSError, ValueError):
        return 0


def test_sigkill_keeps_everything_flushed_and_reads_crashed(root, tmp_path):
    marker = tmp_path / "progress"
    proc = spawn_script(LOGGER, str(root), "victim", str(marker), env={"TUNETRACK_STALE_AFTER": "3600"})
    run_id = proc.stdout.readline().strip()
    wait_until(lambda: _progress(marker) >= 1000)
    reached = _progress(marker)  # then at least one flush interval: the writer has flushed past it
    wait_until(lambda: len(open_run(run_id, dir=root).series("loss")) > reached, interval=0.1)
    reached_before = _progress(marker)  # every step up to here was logged > 1 flush interval ago... almost
    time.sleep(1.2)
    proc.kill()
    proc.wait()
    # a torn tail: simulate the kill landing mid-record
    data = next(root.joinpath(run_id).glob("*.ttr"))
    with open(data, "ab") as f:
        f.write(frame(b"x" * 100)[:50])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run = open_run(run_id, dir=root)
        steps = run.series("loss").steps.tolist()
    assert run.state == "crashed"  # same host, pid gone: no need to wait for a stale heartbeat
    assert dict(facts(run))["not kept"].startswith("unknown: the process died")  # never "nothing"
    assert steps == list(range(1, len(steps) + 1))
    assert len(steps) >= reached_before
    assert any("torn" in str(w.message) for w in caught)


def test_a_tracker_dropped_without_finish_keeps_its_rows_and_ends_with_the_process(root):
    """A script that drops a started Tracker (reassigned in a loop of trials, ``del``) before its rows
    reached the store: the run still gets every row and ends ``finished`` when the script exits 0,
    like one it kept."""
    run_script(
        """
        import sys
        from tunetrack import Tracker
        for trial in range(3):
            t = Tracker(dir=sys.argv[1], name=f"trial{trial}", system=False).start()
            for step in range(1, 41):
                t.log({"loss": 1.0 / step}, step=step)
        del t
    """,
        str(root),
    )
    for trial in range(3):
        run = open_run(f"trial{trial}", dir=root)
        assert (run.state, run.last_step) == ("finished", 40)
        assert run.series("loss").steps.tolist() == list(range(1, 41))


def test_stale_heartbeat_reads_crashed(root, monkeypatch):
    run_script(
        """
        import sys
        from tunetrack import Tracker
        t = Tracker(dir=sys.argv[1], name="old").start(); t.log({"x": 1.0}); t.flush()
        import os; os._exit(0)   # dies without any cleanup, like a power loss
    """,
        str(root),
    )
    run = open_run("old", dir=root)
    proc = run.meta["processes"][0]
    # Another host's process: the pid check does not apply, only the heartbeat does.
    meta_path = root / run.id / f"{proc['proc']}.json"
    meta = json.loads(meta_path.read_text())
    meta["host"] = "elsewhere"
    meta_path.write_text(json.dumps(meta))
    assert open_run("old", dir=root).state == "running"
    monkeypatch.setenv("TUNETRACK_STALE_AFTER", "0")
    assert open_run("old", dir=root).state == "crashed"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_marks_killed_and_flushes(root, tmp_path, sig):
    marker = tmp_path / "progress"
    proc = spawn_script(LOGGER, str(root), "sig", str(marker))
    run_id = proc.stdout.readline().strip()
    wait_until(lambda: _progress(marker) >= 300)
    proc.send_signal(sig)
    proc.wait(timeout=30)
    reached = _progress(marker)
    assert proc.returncode != 0
    run = open_run(run_id, dir=root)
    assert run.state == "killed"
    assert run.last_step >= reached  # everything logged before the signal was flushed


def test_signal_chains_to_the_previous_handler(root, tmp_path):
    out = run_script(
        """
        import os, signal, sys
        seen = []
        signal.signal(signal.SIGTERM, lambda s, f: seen.append(s))
        from tunetrack import Tracker
        t = Tracker(dir=sys.argv[1], name="chain").start()
        t.log({"x": 1.0})
        os.kill(os.getpid(), signal.SIGTERM)
        t.log({"x": 2.0})       # the user's handler chose to continue: logging still works
        print(seen)
    """,
        str(root),
    )
    assert out.stdout.strip() == f"[{int(signal.SIGTERM)}]"
    run = open_run("chain", dir=root)
    assert run.series("x").values.tolist() == [1.0, 2.0]
    assert run.state == "killed"


def test_uncaught_exception_marks_failed_with_traceback(root):
    proc = run_script(
        """
        import sys
        from tunetrack import Tracker
        t = Tracker(dir=sys.argv[1], name="fails").start()
        t.log({"x": 1.0})
        def train():
            raise ValueError("loss exploded")
        train()
    """,
        str(root),
        check=False,
    )
    assert proc.returncode == 1
    assert "loss exploded" in proc.stderr  # the previous excepthook still printed it
    run = open_run("fails", dir=root)
    assert run.state == "failed"
    assert "ValueError: loss exploded" in run.error and "in train" in run.error
    assert run.series("x").values.tolist() == [1.0]


def test_no_finish_ends_finished_at_exit(root):
    run_script(
        """
        import sys
        from tunetrack import Tracker
        t = Tracker(dir=sys.argv[1], name="lazy")
        for i in range(1000):
            t.log({"x": float(i)})
    """,
        str(root),
    )
    run = open_run("lazy", dir=root)
    assert run.state == "finished"
    assert len(run.series("x")) == 1000


def test_eight_writers_and_a_concurrent_reader_lose_nothing(root):
    writer = """
        import sys
        from tunetrack import Tracker
        t = Tracker(dir=sys.argv[1], name=sys.argv[2], project="many").start()
        for step in range(1, 20001):
            t.log({"loss": step * 0.5, "idx": step}, step=step)
        t.finish()
    """
    procs = [spawn_script(writer, str(root), f"w{i}") for i in range(8)]
    errors = []
    while any(p.poll() is None for p in procs):
        try:
            for run in list_runs(root, project="many"):
                run.summary()
                run.series("loss")
        except Exception as exc:  # the reader must never fail on files being written
            errors.append(repr(exc))
        time.sleep(0.05)
    assert [p.wait() for p in procs] == [0] * 8, [p.stderr.read() for p in procs]
    assert errors == []
    runs = list_runs(root, project="many")
    assert sorted(r.name for r in runs) == [f"w{i}" for i in range(8)]
    for run in runs:
        assert run.state == "finished"
        series = run.series("loss")
        assert series.steps.tolist() == list(range(1, 20001))
        assert series.values[-1] == 10000.0


def test_unwritable_store_training_goes_on_and_loss_is_reported(root, tmp_path):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the store should be")
    proc = run_script(
        """
        import sys, warnings
        from tunetrack import Tracker
        t = Tracker(dir=sys.argv[1], name="nowhere").start()
        for i in range(100):
            t.log({"x": float(i)})
        t.finish()
        print("training finished", t._writer.counters.lost_rows)
    """,
        str(blocker / "runs"),
    )
    assert proc.stdout.strip() == "training finished 100"
    assert proc.stderr.count("cannot write the run store") == 1
    assert "lost_rows" in proc.stderr


def test_disk_full_mid_run_is_counted(root, tmp_path):
    proc = run_script(
        """
        import sys, errno
        from tunetrack import Tracker
        from tunetrack.store.process_files import ProcessFiles
        t = Tracker(dir=sys.argv[1], name="full").start()
        t.log({"x": 1.0}); t.flush()
        original = ProcessFiles.append
        def no_space(self, record):
            raise OSError(errno.ENOSPC, "No space left on device")
        ProcessFiles.append = no_space   # the disk fills up: the library boundary is the file write
        for i in range(50):
            t.log({"x": float(i)})
        t.flush()
        ProcessFiles.append = original   # space is freed again
        t.log({"x": 99.0}); t.finish()
        print(t._writer.counters.lost_rows)
    """,
        str(root),
    )
    assert proc.stdout.strip() == "50"
    assert proc.stderr.count("No space left on device") == 1
    run = open_run("full", dir=root)
    assert run.series("x").values.tolist() == [1.0, 99.0]
    assert run.state == "finished"


def test_corrupted_record_in_the_middle_is_skipped(root):
    run_script(
        """
        import sys
        from tunetrack import Tracker
        t = Tracker(dir=sys.argv[1], name="rot").start()
        for i in range(1, 4):
            t.log({"x": float(i)}, step=i); t.flush()
        t.finish()
    """,
        str(root),
    )
    run = open_run("rot", dir=root)
    data = next((root / run.id).glob("*.ttr"))
    raw = bytearray(data.read_bytes())
    # flip a byte inside the second rows record's payload
    second = raw.find(b"\xa1k\xa1r", raw.find(b"\xa1k\xa1r") + 1)
    raw[second + 20] ^= 0xFF
    data.write_bytes(bytes(raw))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        steps = open_run("rot", dir=root).series("x").steps.tolist()
    assert steps == [1, 3]
    assert any("corrupt" in str(w.message) for w in caught)


def test_resume_with_rewind_across_processes(root, tmp_path):
    marker = tmp_path / "progress"
    first = spawn_script(
        """
        import sys, time
        from tunetrack import Tracker
        t = Tracker(dir=sys.argv[1], name="resumable").start()
        print(t.id, flush=True)
        for step in range(1, 81):
            t.log({"loss": 100.0 - step}, step=step)
            if step == 50:
                t.event("checkpoint", step=50, path="ckpt-50")
        t.flush()
        open(sys.argv[2], "w").write("80")
        time.sleep(60)
    """,
        str(root),
        str(marker),
    )
    run_id = first.stdout.readline().strip()
    wait_until(lambda: _progress(marker) == 80)
    first.kill()
    first.wait()
    assert open_run(run_id, dir=root).state == "crashed"
    run_script(
        """
        import sys
        from tunetrack import Tracker
        t = Tracker(dir=sys.argv[1], resume=sys.argv[2], resume_step=50).start()
        for step in range(51, 121):
            t.log({"loss": 200.0 - step}, step=step)
        t.finish()
    """,
        str(root),
        run_id,
    )
    run = open_run(run_id, dir=root)
    loss = run.series("loss")
    assert loss.steps.tolist() == list(range(1, 121))
    assert loss.values.tolist() == [100.0 - s for s in range(1, 51)] + [200.0 - s for s in range(51, 121)]
    assert run.state == "finished"
    assert [(e["kind"], e["step"]) for e in run.events()] == [("checkpoint", 50), ("rewind", 50)]
    assert len(run.meta["processes"]) == 2
    assert run.latest() == {"step": 120, "values": {"loss": 80.0}}  # from the data: two attempts
    assert read_json(root / run_id / "run.json")["name"] == "resumable"


def test_a_refreshed_run_reads_like_a_fresh_one_while_the_run_is_written(root):
    from tunetrack import Tracker

    t = Tracker(dir=root, name="follow", system=False).start()
    t.log({"loss": 0.0}, step=0)
    t.flush()
    followed = open_run(t.id, dir=root)
    assert followed.series("loss").steps.tolist() == [0]
    for batch in range(5):
        for step in range(batch * 100 + 1, (batch + 1) * 100 + 1):
            t.log({"loss": float(step), **({"eval": 1.0} if step % 50 == 0 else {})}, step=step)
        if batch == 3:
            t.rewind(250)  # hides the rows after step 250 logged so far
        t.event("checkpoint", step=(batch + 1) * 100, path=f"ckpt-{batch}")
        t.flush()
        followed.refresh()
        fresh = open_run(t.id, dir=root)
        for key in ("loss", "eval"):
            assert followed.series(key).steps.tolist() == fresh.series(key).steps.tolist()
        assert followed.events() == fresh.events()
        assert followed.state == "running"
    t.finish()
    followed.refresh()
    assert followed.state == "finished"
    assert followed.series("loss").steps.tolist() == [*range(0, 251), *range(401, 501)]


def test_a_refreshed_run_takes_a_torn_record_once_it_is_whole(root):
    from tunetrack import Tracker

    t = Tracker(dir=root, name="torn", system=False).start()
    for step in range(1, 4):
        t.log({"x": float(step)}, step=step)
        t.flush()
    t.finish()
    data = next((root / t.id).glob("*.ttr"))
    whole = data.read_bytes()
    last = whole.rfind(b"\xa1k\xa1r")  # inside the last rows record
    data.write_bytes(whole[: last + 5])  # the writer is still in the middle of it
    run = open_run(t.id, dir=root)
    assert run.series("x").steps.tolist() == [1, 2]
    data.write_bytes(whole)
    run.refresh()
    assert run.series("x").steps.tolist() == [1, 2, 3]
