"""Checkpoints of a run stored in a bucket (moto's S3 server): saved on the training machine's disk,
recorded with their files' hashes and rotation, and read back from the bucket by ``tunetrack
checkpoints`` in another process with a cache of its own; a checkpoint whose location is itself an
``s3://`` URL is recorded as a reference, never downloaded to be hashed."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from support.helpers import assert_hashed_as_on_disk, checkpoints_cli
from tunetrack import Tracker
from tunetrack.reader import open_run


@pytest.fixture(autouse=True)
def local_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The training process's own spool and download cache."""
    monkeypatch.setenv("TUNETRACK_SPOOL", str(tmp_path / "spool"))
    monkeypatch.setenv("TUNETRACK_CACHE", str(tmp_path / "cache"))


def _save(folder: Path, step: int) -> Path:
    """A checkpoint folder as a Trainer writes one: the adapter's weights, its config, the optimizer."""
    folder.mkdir(parents=True)
    (folder / "adapter_model.safetensors").write_bytes(bytes(range(256)) * (step + 3))
    (folder / "adapter_config.json").write_text(f'{{"r": 4, "step": {step}}}')
    (folder / "optimizer.pt").write_bytes(b"state" * step)
    return folder


def test_checkpoints_of_a_run_in_a_bucket_read_back_from_it(s3_url: str, tmp_path: Path) -> None:
    from obstore import put
    from obstore.store import from_url

    out = tmp_path / "out"
    pushed = f"{s3_url}/pushed/checkpoint-6"
    put(from_url(pushed), "adapter_model.safetensors", b"weights kept in the bucket")
    with Tracker(dir=s3_url, name="bucket-ckpts", project="p", system=False) as t:
        for step in range(1, 7):
            t.log({"loss": 1.0 / step, "eval_loss": 2.0 / step}, step=step)
            if step in (2, 4):
                if step == 4:  # save_total_limit=1: the Trainer removes the older save first
                    shutil.rmtree(out / "checkpoint-2")
                saved = _save(out / f"checkpoint-{step}", step)
                t.log_checkpoint(saved, kind="adapter", metrics={"eval_loss": 2.0 / step})
        t.log_checkpoint(pushed, kind="adapter", metrics={"eval_loss": 2.0 / 6})  # an upload's URL
    # another process, another cache: everything comes from the bucket
    found = checkpoints_cli(t.id, s3_url, env={"TUNETRACK_CACHE": str(tmp_path / "reader-cache")})
    assert [(c["step"], c["path"], c["kind"], c["deleted"], c["metrics"]) for c in found] == [
        (2, str(out / "checkpoint-2"), "adapter", True, {"eval_loss": 1.0}),
        (4, str(out / "checkpoint-4"), "adapter", False, {"eval_loss": 0.5}),
        (6, pushed, "adapter", False, {"eval_loss": pytest.approx(1 / 3)}),
    ]
    assert_hashed_as_on_disk(found[1])
    assert (found[2]["files"], found[2]["bytes"]) == (None, None)  # a reference: never hashed
    run = open_run(t.id, dir=s3_url)  # the read API agrees, and no event names the URL's files
    assert [c.path for c in run.checkpoints()] == [c["path"] for c in found]
    assert pushed not in [e["path"] for e in run.events() if e["kind"] == "checkpoint_files"]
