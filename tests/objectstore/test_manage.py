"""Managing runs in object storage (moto's S3 server): edits are objects of their own plus index
entries, so listings show them without reading any run, warm or from a fresh cache; ``rm`` deletes a
run's objects and index entries; ``sync`` carries edits; and a Tracker edits its own run through its
uploader."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from support.helpers import spawn_script, wait_until
from tunetrack import Tracker
from tunetrack.cli import cli
from tunetrack.errors import RunNotFound
from tunetrack.reader import list_runs, open_run
from tunetrack.store import open_store


@pytest.fixture(autouse=True)
def local_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test gets its own spool and download cache (another machine's, so to speak)."""
    monkeypatch.setenv("TUNETRACK_SPOOL", str(tmp_path / "spool"))
    monkeypatch.setenv("TUNETRACK_CACHE", str(tmp_path / "cache"))


def ok(*args: object) -> str:
    result = CliRunner().invoke(cli, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    return result.stdout


def keys(url: str, prefix: str) -> list[str]:
    return sorted(b.key for b in open_store(url).blobs.list_blobs(prefix))  # type: ignore[attr-defined]


def other_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TUNETRACK_CACHE", str(Path(os.environ["TUNETRACK_CACHE"]).parent / "other-machine"))


def test_edits_show_in_warm_and_cold_listings_and_leave_run_json_alone(
    s3_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Tracker(dir=s3_url, name="draft", tags=["sweep"], system=False) as t:
        t.log({"loss": 1.0}, step=1)
    assert [r["name"] for r in json.loads(ok("ls", "--dir", s3_url, "--json"))] == ["draft"]  # warm now
    ok("tag", "draft", "+best", "-sweep", "--dir", s3_url)
    ok("rename", "draft", "final", "--dir", s3_url)
    assert ok("note", "final", "ship it", "--dir", s3_url) == f"{t.id} (final): 1 note\n"
    for look in ("warm", "cold"):
        if look == "cold":
            other_machine(monkeypatch)
        (row,) = json.loads(ok("ls", "--dir", s3_url, "--json"))
        assert (row["id"], row["name"], row["tags"], row["state"]) == (t.id, "final", ["best"], "finished")
        assert [n["text"] for n in row["notes"]] == ["ship it"], look
        shown = json.loads(ok("show", "final", "--dir", s3_url, "--json"))
        assert (shown["name"], [n["text"] for n in shown["notes"]]) == ("final", ["ship it"])
        assert len(shown["meta"]["edits"]) == 3
    assert [r.id for r in list_runs(dir=s3_url, tags=["best"])] == [t.id]
    with pytest.raises(RunNotFound):
        open_run("draft", dir=s3_url)
    run_json = json.loads(open_store(s3_url).blobs.get(f"{t.id}/run.json"))  # type: ignore[attr-defined]
    assert (run_json["name"], run_json["tags"]) == ("draft", ["sweep"])
    assert len([k for k in keys(s3_url, f"{t.id}/") if k.endswith(".edit")]) == 3
    assert len([k for k in keys(s3_url, ".index/") if k.startswith(f".index/e-{t.id}-")]) == 3


def test_a_tracker_edits_its_run_in_a_bucket_while_running_and_after_finish(s3_url: str) -> None:
    t = Tracker(dir=s3_url, name="trial", system=False, upload_interval=0.2).start()
    t.log({"loss": 1.0}, step=1)
    t.name = "trial-best"
    t.add_tags("best")
    wait_until(lambda: [(r.name, r.tags, r.state) for r in list_runs(dir=s3_url)] == [
        ("trial-best", ["best"], "running")
    ])  # fmt: skip
    t.finish()
    t.add_tags("final")  # the uploader is done: put into the store at once
    (run,) = list_runs(dir=s3_url)
    assert (run.name, run.tags, run.state) == ("trial-best", ["best", "final"], "finished")
    assert run.series("loss").values.tolist() == [1.0]
    spool = Path(os.environ["TUNETRACK_SPOOL"])
    assert not [p for p in spool.rglob("*.edit")]  # sent, so no longer kept


TAGGER = """
import sys
from tunetrack.manage import tag_run
run, url, prefix = sys.argv[1:]
for i in range(6):
    tag_run(run, add=[f"{prefix}{i}"], dir=url)
"""


def test_two_processes_tag_a_run_in_a_bucket_while_it_is_written(s3_url: str) -> None:
    t = Tracker(dir=s3_url, name="busy", system=False, upload_interval=0.2).start()
    t.log({"loss": 0.0}, step=0)
    wait_until(lambda: [r.id for r in list_runs(dir=s3_url)] == [t.id])
    taggers = [spawn_script(TAGGER, t.id, s3_url, prefix) for prefix in ("a", "b")]
    step = 0
    while any(p.poll() is None for p in taggers):
        step += 1
        t.log({"loss": float(step)}, step=step)
    outs = [p.communicate(timeout=120) for p in taggers]
    assert [p.returncode for p in taggers] == [0, 0], [err for _, err in outs]
    t.finish()
    (run,) = list_runs(dir=s3_url)
    assert sorted(run.tags) == sorted(f"{p}{i}" for p in "ab" for i in range(6))
    assert run.state == "finished" and run.series("loss").steps.tolist() == list(range(step + 1))


def test_rm_deletes_the_runs_objects_and_index_entries_and_listings_drop_it(
    s3_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = []
    for name in ("gone", "kept"):
        with Tracker(dir=s3_url, name=name, system=False) as t:
            t.log({"loss": 1.0}, step=1)
        ids.append(t.id)
    gone, kept = ids
    ok("tag", "gone", "+x", "--dir", s3_url)
    assert {r.name for r in list_runs(dir=s3_url)} == {"gone", "kept"}  # a warm listing holds both
    assert open_run("gone", dir=s3_url).series("loss").values.tolist() == [1.0]  # and its data cached
    assert ok("rm", "gone", "--yes", "--dir", s3_url) == f"deleted {gone} (gone)\n"
    assert keys(s3_url, f"{gone}/") == []
    assert [k for k in keys(s3_url, ".index/") if f"-{gone}-" in k] == []
    assert keys(s3_url, f"{kept}/") != []
    assert [r.name for r in list_runs(dir=s3_url)] == ["kept"]  # the warm listing dropped it
    with pytest.raises(RunNotFound):
        open_run(gone, dir=s3_url)
    other_machine(monkeypatch)
    assert [r.name for r in list_runs(dir=s3_url)] == ["kept"]
    # what outlives it: the record of its deletion, with its history, which the audit trail reads
    assert len(keys(s3_url, ".audit/")) == 1
    trail = [json.loads(line) for line in ok("audit", "--dir", s3_url, "--json").splitlines()]
    assert [(e["run"], e["action"], e["what"]) for e in trail] == [
        (gone, "tag", "+x"),
        (gone, "delete", "deleted (finished; tags x)"),
    ]


def test_sync_carries_edits_once(s3_url: str, tmp_path: Path) -> None:
    root = tmp_path / "runs"
    with Tracker(dir=root, name="local", system=False) as t:
        t.log({"loss": 1.0}, step=1)
    ok("tag", "local", "+shared", "--dir", root)
    assert "and 1 edits in 1 runs" in ok("sync", "--to", s3_url, "--dir", root)
    assert [(r.name, r.tags) for r in list_runs(dir=s3_url)] == [("local", ["shared"])]
    assert "nothing new to send" in ok("sync", "--to", s3_url, "--dir", root)
    ok("rename", "local", "in-the-bucket", "--dir", root)
    assert ok("sync", "--to", s3_url, "--dir", root) == f"{root} -> {s3_url}: sent 1 edits in 1 runs\n"
    assert [r.name for r in list_runs(dir=s3_url)] == ["in-the-bucket"]
