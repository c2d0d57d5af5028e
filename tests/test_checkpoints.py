"""Checkpoints recorded by ``Tracker.log_checkpoint`` (what every adapter calls on a save) and read
back by ``Run.checkpoints`` and ``tunetrack checkpoints``: real folders of files on disk, real hashes,
rotation by deleting a folder as a Trainer's ``save_total_limit`` does."""

from __future__ import annotations

import hashlib
import json
import os
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from support.helpers import wait_until
from tunetrack import Tracker
from tunetrack.cli import cli
from tunetrack.reader import open_run
from tunetrack.reader.checkpoints import best
from tunetrack.tracker.checkpoints import kind_of
from tunetrack.tracker.files import Hasher


def _save(folder: Path, files: dict[str, bytes]) -> Path:
    """A checkpoint folder holding ``files``, as a framework's save writes it."""
    for name, data in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    return folder


ADAPTER = {"adapter_model.safetensors": b"w" * 5000, "adapter_config.json": b"{}", "optimizer.pt": b"o" * 300}


def test_a_checkpoint_is_recorded_with_its_files_hashes_and_metrics(root, tmp_path):
    ckpt = _save(tmp_path / "out" / "checkpoint-4", {**ADAPTER, "sub/rng_state.pth": b"r" * 10})
    with Tracker(dir=root, name="saves", system=False) as t:
        t.log({"loss": 1.0}, step=4)
        t.log_checkpoint(ckpt, metrics={"eval_loss": 0.5})
    (found,) = open_run("saves", dir=root).checkpoints()
    assert (found.step, found.path, found.kind, found.deleted) == (4, str(ckpt), "adapter", False)
    assert found.metrics == {"eval_loss": 0.5}
    expected = {
        name: (len(data), hashlib.sha256(data).hexdigest())
        for name, data in {**ADAPTER, "sub/rng_state.pth": b"r" * 10}.items()
    }
    assert {f["name"]: (f["size"], f["sha256"]) for f in found.files or []} == expected
    assert found.bytes == sum(size for size, _ in expected.values())


def test_rotation_marks_a_checkpoint_deleted_and_never_forgets_it(root, tmp_path):
    """A Trainer with ``save_total_limit=1`` removes checkpoint-2 before it calls back for checkpoint-4:
    the record of checkpoint-2 stays, marked deleted; a removal after the last save is seen at finish."""
    out = tmp_path / "out"
    with Tracker(dir=root, name="rotated", system=False) as t:
        first = _save(out / "checkpoint-2", ADAPTER)
        t.log_checkpoint(first, step=2, kind="adapter")
        for path in first.iterdir():  # perhaps before it was hashed: its files are then unknown
            path.unlink()
        first.rmdir()
        second = _save(out / "checkpoint-4", {"model.safetensors": b"m" * 100})
        t.log_checkpoint(second, step=4)
        third = _save(out / "checkpoint-6", {"optimizer.pt": b"o"})
        t.log_checkpoint(third, step=6, kind="state")
        (third / "optimizer.pt").unlink()
        third.rmdir()
    found = open_run("rotated", dir=root).checkpoints()
    assert [(c.step, c.kind, c.deleted) for c in found] == [
        (2, "adapter", True),
        (4, "model", False),
        (6, "state", True),
    ]


def test_a_checkpoint_removed_before_it_was_listed_has_no_files_rather_than_none(root, tmp_path, monkeypatch):
    """Rotation that removes a save before the hasher reached it (fast saves, a small
    ``save_total_limit``) leaves it deleted with its files unknown: never a checkpoint of no files."""
    from tunetrack.tracker import checkpoints

    removed, real = threading.Event(), checkpoints.listing
    monkeypatch.setattr(checkpoints, "listing", lambda path: (removed.wait(30), real(path))[1])
    with Tracker(dir=root, name="gone", system=False) as t:
        first = _save(tmp_path / "checkpoint-2", {"adapter_model.safetensors": b"a"})
        t.log_checkpoint(first, step=2)
        (first / "adapter_model.safetensors").unlink()
        first.rmdir()
        removed.set()
    run = open_run("gone", dir=root)
    (found,) = run.checkpoints()
    assert (found.kind, found.files, found.bytes, found.deleted) == (None, None, None, True)
    assert [e for e in run.events() if e["kind"] == "checkpoint_files"] == []


def test_hashing_never_runs_on_the_caller_s_thread(root, tmp_path, monkeypatch):
    """``log_checkpoint`` returns while the hash of the checkpoint is still being computed."""
    release, hashing = threading.Event(), []
    real = Hasher.digests

    def slow(self, paths):
        hashing.append(threading.current_thread().name)
        release.wait(30)
        return real(self, paths)

    monkeypatch.setattr(Hasher, "digests", slow)
    ckpt = _save(tmp_path / "checkpoint-1", {"model.safetensors": b"x"})
    t = Tracker(dir=root, name="slow-hash", system=False).start()
    t.log_checkpoint(ckpt, step=1)  # returns although the hash is blocked
    release.set()
    t.finish()
    assert hashing == ["tunetrack-checkpoints"]
    assert open_run("slow-hash", dir=root).checkpoints()[0].files[0]["sha256"] is not None


def test_the_hasher_is_a_process_of_its_own_that_stop_ends_at_once(tmp_path):
    """Hashing in another process shares no interpreter lock with training; ``stop`` kills one under
    way (its files left unhashed) and refuses later ones; a file that vanished is said."""
    small = _save(tmp_path / "s", {"a.bin": b"a" * 10, "b.bin": b"b"})
    hasher = Hasher()
    assert hasher.digests([small / "a.bin", small / "b.bin"]) == [
        hashlib.sha256(b"a" * 10).hexdigest(),
        hashlib.sha256(b"b").hexdigest(),
    ]
    with pytest.raises(FileNotFoundError, match="could not read .*gone.bin"):
        hasher.digests([small / "a.bin", small / "gone.bin"])
    big = tmp_path / "big.bin"
    with open(big, "wb") as f:
        f.truncate(8 << 30)  # 8 GiB of zeros, sparse: minutes to hash at the lowest priority
    got: list = []
    worker = threading.Thread(target=lambda: got.append(hasher.digests([big, small / "b.bin"])))
    worker.start()
    pid = hasher._proc.pid  # the one process hashed the small files too: kept between batches

    def hashing_big() -> bool:  # the process has the big file open: stop comes mid-file
        fds = Path(f"/proc/{pid}/fd")
        return any(os.readlink(fd) == str(big) for fd in fds.iterdir() if fd.is_symlink())

    wait_until(hashing_big)
    hasher.stop()
    worker.join(30)
    assert got == [[None, None]]
    assert hasher.digests([small / "b.bin"]) == [None]


def test_a_hash_not_done_when_finish_stops_waiting_is_left_unknown(root, tmp_path, monkeypatch):
    """``finish()`` waits ``HASH_WAIT`` seconds for the hashes (here none): a file not hashed by then is
    recorded with its size alone, and the run still ends."""
    from tunetrack.tracker import checkpoints

    monkeypatch.setattr(checkpoints, "HASH_WAIT", 0.0)
    real = checkpoints.listing
    t = Tracker(dir=root, name="late-hash", system=False).start()
    monkeypatch.setattr(
        checkpoints, "listing", lambda path: (t._checkpoints._hasher.stopped.wait(30), real(path))[1]
    )
    t.log_checkpoint(_save(tmp_path / "c", {"model.safetensors": b"x" * 10}), step=1)
    t.finish()
    (found,) = open_run("late-hash", dir=root).checkpoints()
    assert found.files == [{"name": "model.safetensors", "size": 10, "sha256": None}]


def test_a_checkpoint_at_a_url_is_recorded_as_a_reference(root):
    with Tracker(dir=root, name="remote", system=False) as t:
        t.log_checkpoint("s3://bucket/run/checkpoint-10", step=10, kind="model")
    (found,) = open_run("remote", dir=root).checkpoints()
    assert (found.path, found.kind, found.files, found.deleted) == (
        "s3://bucket/run/checkpoint-10",
        "model",
        None,
        False,
    )


@pytest.mark.parametrize(
    ("names", "kind"),
    [
        (["adapter_model.safetensors", "optimizer.pt"], "adapter"),
        (["model-00001-of-00002.safetensors", "config.json"], "model"),
        (["pytorch_model.bin"], "model"),
        (["optimizer.pt", "scheduler.pt", "trainer_state.json"], "state"),
        (["notes.txt"], "files"),
    ],
)
def test_the_kind_comes_from_the_files(names, kind):
    assert kind_of(names) == kind


def _sweep(root: Path, tmp_path: Path) -> dict[str, list[float]]:
    """Two runs of one project, each saving at steps 2 and 4 with the eval loss logged at the step."""
    losses = {"a": [0.9, 0.4], "b": [0.7, 0.5]}
    for name, values in losses.items():
        with Tracker(dir=root, project="p", name=name, system=False) as t:
            for step, value in zip((2, 4), values):
                t.log({"eval_loss": value}, step=step)
                t.log_checkpoint(
                    _save(tmp_path / name / f"checkpoint-{step}", ADAPTER), metrics={"eval_loss": value}
                )
    return losses


def test_the_best_checkpoint_by_a_metric_in_any_spelling(root, tmp_path):
    _sweep(root, tmp_path)
    found = open_run("a", dir=root).checkpoints()
    assert best(found, "eval_loss").step == 4  # a loss: the lowest
    assert best(found, "eval/loss").step == 4  # W&B's spelling finds the Trainer's
    assert best(found, "eval_loss", minimize=False).step == 2
    assert best(found, "reward") is None


def _cli(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def test_tunetrack_checkpoints_lists_marks_the_best_and_answers_a_project(root, tmp_path):
    _sweep(root, tmp_path)
    shown = _cli("checkpoints", "a", "--dir", root, "--best", "eval/loss")
    assert shown.exit_code == 0, shown.output
    assert (
        shown.output.strip().splitlines()[-1]
        == f"best by eval/loss: a step 4 ({tmp_path / 'a' / 'checkpoint-4'})"
    )
    project = _cli("checkpoints", "--project", "p", "--dir", root, "--best", "eval_loss:min", "--json")
    rows = json.loads(project.output)
    assert [(r["run"], r["step"], r["best"]) for r in rows if r["best"]] == [
        (open_run("a", dir=root).id, 4, True)
    ]
    assert len(rows) == 4 and all(r["files"] and r["metrics"]["eval_loss"] for r in rows)
    highest = json.loads(
        _cli("checkpoints", "--project", "p", "--dir", root, "--best", "eval_loss:max", "--json").output
    )
    assert [(r["step"], r["metrics"]["eval_loss"]) for r in highest if r["best"]] == [(2, 0.9)]


def test_tunetrack_checkpoints_says_what_is_wrong_in_one_line(root, tmp_path):
    _sweep(root, tmp_path)
    with Tracker(dir=root, name="none-saved", system=False) as t:
        t.log({"loss": 1.0})
    cases = {
        ("checkpoints", "none-saved"): "Error: run none-saved recorded no checkpoint",
        (
            "checkpoints",
            "a",
            "--best",
            "reward",
        ): "Error: no checkpoint has 'reward'; their metrics: eval_loss",
        ("checkpoints",): "Error: name a RUN, or --project P (not both)",
        ("checkpoints", "a", "--best", "eval_loss:median"): "best of 'eval_loss' must be min or max",
    }
    for args, message in cases.items():
        done = _cli(*args, "--dir", root)
        assert done.exit_code != 0 and message in done.output, (args, done.output)


def test_saved_folders_finds_each_new_save_once_in_order_and_never_an_older_one(tmp_path):
    """What torchtune's logger relies on: folders there before are not the run's, each new one is
    found once with its number, in order; ``look`` finds one the parent's unchanged time hid."""
    from tunetrack.integrations.support.saved_folders import SavedFolders

    out = tmp_path / "out"
    saves = SavedFolders(out, r"(?:epoch|step)_(\d+)")  # not made yet: nothing to find
    assert saves.new() == []
    (out / "epoch_9").mkdir(parents=True)  # made before the watcher below: an earlier run's
    saves = SavedFolders(out, r"(?:epoch|step)_(\d+)")
    for name in ("epoch_10", "epoch_2", "logs", "epoch_x"):
        (out / name).mkdir()
    (out / "epoch_3").write_text("a file, not a save")
    assert saves.new() == [(out / "epoch_2", 2), (out / "epoch_10", 10)]
    assert saves.new(look=True) == []  # each save once
    stamp = os.stat(out).st_mtime_ns
    (out / "step_12").mkdir()
    os.utime(out, ns=(stamp, stamp))  # a save within the clock's tick: the parent's time unchanged
    assert saves.new() == []
    assert saves.new(look=True) == [(out / "step_12", 12)]
