"""A folder store's listing of its ended runs (``LocalStore.keep_listed``): what one reader read of
ended runs is kept in ``.listing.msgpack`` so the next listing of 10,000 runs reads one file and one
directory; it must never show what a run no longer is (edited, resumed, deleted, still running)."""

from __future__ import annotations

import json
import os
import time

import pytest

from support.helpers import spawn_script
from tunetrack import Tracker
from tunetrack.manage import delete_runs, rename_run, tag_run
from tunetrack.reader import Catalog, list_runs, open_run
from tunetrack.reader.where import select
from tunetrack.store import layout
from tunetrack.store.local import LocalStore


def ended(root, name: str, loss: float, state: str | None = None) -> str:
    with Tracker(dir=root, name=name, project="p", system=False) as t:
        t.log({"loss": loss}, step=1)
        t.log({"loss": loss / 2}, step=2)
        if state:
            t.finish(state)
    return t.id


#: a time long enough ago (``SETTLE_NS``), the same each time a folder is aged
OLD = time.time() - 3600


def age(root, *ids: str) -> None:
    """Folders last changed long ago: only those are kept (a change within a coarse mtime can hide)."""
    for run_id in ids:
        os.utime(root / run_id, (OLD, OLD))


def listing(root) -> dict:
    return LocalStore(root).listing()


def test_ended_runs_are_kept_and_the_next_listing_reads_no_run_file(root):
    a, b = ended(root, "a", 1.0), ended(root, "b", 2.0, state="failed")
    age(root, a, b)
    first = {r.id: (r.name, r.state, r.summary()["loss"]["min"]) for r in list_runs(root)}
    assert set(listing(root)) == {a, b}
    # run.json rewritten in place leaves the folder's mtime as it was: a listing that still shows the
    # old name read the kept listing, not the file
    path = root / a / layout.RUN_JSON
    path.write_text(json.dumps({**json.loads(path.read_text()), "name": "changed in place"}))
    age(root, a)
    again = {r.id: (r.name, r.state, r.summary()["loss"]["min"]) for r in list_runs(root)}
    assert again == first == {a: ("a", "finished", 0.5), b: ("b", "failed", 1.0)}
    assert [r.id for r in select(list_runs(root), "loss:min < 0.8", "loss:min")] == [a]
    assert open_run(a, dir=root).history()["loss"].tolist() == [1.0, 0.5]  # the data: from the files


def test_an_edit_a_resume_and_a_delete_are_seen_at_once(root):
    a, b, c = ended(root, "a", 1.0), ended(root, "b", 2.0), ended(root, "c", 3.0)
    age(root, a, b, c)
    list_runs(root)
    assert set(listing(root)) == {a, b, c}
    rename_run(a, "renamed", dir=root)
    tag_run(a, add=["best"], dir=root)
    with Tracker(dir=root, resume=b, system=False) as t:  # resumed: a new process file
        t.log({"loss": 0.1}, step=3)
        live = {r.id: r.state for r in list_runs(root)}
        assert live[b] == "running"
    delete_runs([c], dir=root)
    runs = {r.id: r for r in list_runs(root)}
    assert set(runs) == {a, b}
    assert (runs[a].name, runs[a].tags) == ("renamed", ["best"])
    assert runs[b].state == "finished" and runs[b].summary()["loss"]["min"] == 0.1
    assert c not in listing(root)


def test_a_running_or_crashed_run_is_never_kept(root):
    done = ended(root, "done", 1.0)
    proc = spawn_script(
        f"""
        import sys, time
        from tunetrack import Tracker
        t = Tracker(dir={str(root)!r}, name="live", system=False, console=False).start()
        t.log({{"loss": 1.0}}, step=1)
        t.flush()
        print(t.id, flush=True)
        time.sleep(60)
        """,
    )
    try:
        live = proc.stdout.readline().strip()
        age(root, done, live)
        assert {r.id: r.state for r in list_runs(root)} == {done: "finished", live: "running"}
        assert set(listing(root)) == {done}
    finally:
        proc.kill()
        proc.wait()
    assert {r.id: r.state for r in list_runs(root)}[live] == "crashed"
    assert set(listing(root)) == {done}  # no end record: it is read again each time


def test_a_long_lived_reader_sees_an_edit_of_a_run_it_holds(root):
    a = ended(root, "a", 1.0)
    age(root, a)
    list_runs(root)
    catalog = Catalog(root)
    assert [r["name"] for r in catalog.rows()] == ["a"]
    held = catalog.open(a)
    assert held.name == "a"
    rename_run(a, "b", dir=root)
    assert catalog.open(a).name == "b"
    assert [r["name"] for r in catalog.rows()] == ["b"]


def test_a_damaged_or_unwritable_listing_costs_only_the_files(root):
    a = ended(root, "a", 1.0)
    age(root, a)
    (root / layout.LISTING).write_bytes(b"\xc1 not msgpack")
    assert [r.name for r in list_runs(root)] == ["a"]
    assert set(listing(root)) == {a}  # written again
    (root / layout.LISTING).unlink()
    (root / layout.LISTING).mkdir()  # cannot be read nor replaced: listed from the files, nothing said
    assert [r.name for r in list_runs(root)] == ["a"]
    assert [p.name for p in root.iterdir() if p.is_file()] == []  # no temporary file left behind


def test_the_config_comes_from_the_end_records_not_the_data(root, monkeypatch):
    """A sweep's dashboard asks every run for its config: an ended run answers from its end record."""
    from tunetrack.reader.run import Run

    with Tracker(dir=root, system=False, config={"lr": 0.1, "lora": {"r": 8}}) as t:
        t.log({"loss": 1.0}, step=1)
        t.log_config({"lora": {"alpha": 16}})
    with Tracker(dir=root, resume=t.id, system=False) as again:  # a second process that logs none
        again.log({"loss": 0.5}, step=2)
    with Tracker(dir=root, system=False, config={"lr": 0.2}) as other:
        other.log({"loss": 1.0}, step=1)
    with Tracker(dir=root, resume=other.id, system=False, config={"lr": 0.3}) as other_again:
        other_again.log({"loss": 0.5}, step=2)
    expected = {t.id: {"lr": 0.1, "lora": {"r": 8, "alpha": 16}}, other.id: {"lr": 0.3}}
    from_records = {r.id: r.config for r in list_runs(root)}
    assert from_records == expected

    def no_records(self):
        raise AssertionError("read the records")

    monkeypatch.setattr(Run, "_records", property(no_records))
    assert open_run(t.id, dir=root).config == expected[t.id]  # from its end records
    with pytest.raises(AssertionError, match="read the records"):  # two processes logged config:
        open_run(other.id, dir=root).config  # noqa: B018 - their records decide, in time order


def test_a_fresh_dashboard_takes_the_kept_rows_of_runs_that_did_not_change(root):
    a, b, c = ended(root, "a", 1.0), ended(root, "b", 2.0, state="failed"), ended(root, "c", 3.0)
    age(root, a, b, c)
    built = Catalog(root).rows(keys=["loss"])  # from the files: keeps its rows
    assert (root / layout.ROWS).exists()
    assert Catalog(root).rows(keys=["loss"]) == built  # a fresh catalog: from the kept rows
    # the kept rows are what it shows: a run.json changed in place (its folder's time unchanged)
    path = root / a / layout.RUN_JSON
    path.write_text(json.dumps({**json.loads(path.read_text()), "name": "changed in place"}))
    age(root, a)
    assert [r["name"] for r in Catalog(root).rows()] == [r["name"] for r in built]
    rename_run(b, "renamed", dir=root)  # an edit: that run's row is built again, the others kept
    delete_runs([c], dir=root)
    rows = {r["id"]: r for r in Catalog(root).rows(keys=["loss"])}
    assert set(rows) == {a, b} and rows[b]["name"] == "renamed" and rows[b]["state"] == "failed"
    assert rows[a]["summary"]["loss"]["min"] == 0.5
    (root / layout.ROWS).write_bytes(b"\x00damaged")  # ignored: the rows are built from the listing
    assert {r["id"]: r["name"] for r in Catalog(root).rows()} == {a: "a", b: "renamed"}
    (root / layout.LISTING).unlink()  # without both, from the files
    (root / layout.ROWS).unlink()
    assert {r["id"]: r["name"] for r in Catalog(root).rows()} == {a: "changed in place", b: "renamed"}
