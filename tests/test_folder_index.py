"""A folder store's index (``store.folder_index``): the processes that change runs log each run's
listed state, readers trust it instead of reading (or stat'ing) every run folder, and it must never
show what a run no longer is (edited, resumed, deleted, still running), lose a run that many writers
recorded at once, or leave a run out when it is damaged, deleted, or older than the runs in it."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import msgpack
import pytest

from support.helpers import spawn_script
from tunetrack import Tracker
from tunetrack.manage import delete_runs, rename_run, tag_run
from tunetrack.reader import Catalog, list_runs, open_run
from tunetrack.reader.parquet import sources
from tunetrack.reader.where import select
from tunetrack.store import folder_index, layout
from tunetrack.store.local import LocalStore


def ended(root, name: str, loss: float, state: str | None = None) -> str:
    with Tracker(dir=root, name=name, project="p", system=False) as t:
        t.log({"loss": loss}, step=1)
        t.log({"loss": loss / 2}, step=2)
        if state:
            t.finish(state)
    return t.id


def held(root) -> dict:
    """The runs the index holds as ended, by id."""
    return {k for k, v in LocalStore(root).index.read().items() if v.settled}


def listed(root) -> dict:
    return {r.id: (r.name, r.state, r.summary()["loss"]["min"]) for r in list_runs(root)}


def rewrite_in_place(root, run_id: str, name: str) -> None:
    """run.json changed behind tunetrack's back: a listing that still shows the old name read the index."""
    path = root / run_id / layout.RUN_JSON
    path.write_text(json.dumps({**json.loads(path.read_text()), "name": name}))


def test_ended_runs_are_listed_from_the_index_and_no_run_file_is_read(root, monkeypatch):
    a, b = ended(root, "a", 1.0), ended(root, "b", 2.0, state="failed")
    assert held(root) == {a, b}  # logged by the writers: no reader has looked yet
    rewrite_in_place(root, a, "changed in place")

    def no_file(*args, **kwargs):
        raise AssertionError("read a run's file")

    def not_in_a_run(real):
        def looked(path, *args, **kwargs):
            rel = path.relative_to(root).parts if path.is_relative_to(root) else ()
            assert not rel or rel[0].startswith("."), f"looked at {path}"  # the index's own files: fine
            return real(path, *args, **kwargs)

        return looked

    with monkeypatch.context() as m:
        m.setattr("tunetrack.store.local.read_json", no_file)
        m.setattr(Path, "glob", not_in_a_run(Path.glob))
        m.setattr(Path, "stat", not_in_a_run(Path.stat))
        first = listed(root)
        # what a query checks against the compacted files: each process's bytes, as they ended
        made_from = {r.id: sources(r) for r in list_runs(root)}
    assert first == {a: ("a", "finished", 0.5), b: ("b", "failed", 1.0)}
    assert made_from == {r: {p.name[:-4]: p.stat().st_size for p in (root / r).glob("*.ttr")} for r in (a, b)}
    assert [r.id for r in select(list_runs(root), "loss:min < 0.8", "loss:min")] == [a]
    assert open_run(a, dir=root).history()["loss"].tolist() == [1.0, 0.5]  # the data: from the files


def test_an_edit_a_resume_and_a_delete_are_seen_at_once(root):
    a, b, c = ended(root, "a", 1.0), ended(root, "b", 2.0), ended(root, "c", 3.0)
    list_runs(root)
    rename_run(a, "renamed", dir=root)
    tag_run(a, add=["best"], dir=root)
    with Tracker(dir=root, resume=b, system=False) as t:  # resumed: a new process
        t.log({"loss": 0.1}, step=3)
        assert {r.id: r.state for r in list_runs(root)}[b] == "running"
        assert b not in held(root)
    delete_runs([c], dir=root)
    runs = {r.id: r for r in list_runs(root)}
    assert set(runs) == {a, b}
    assert (runs[a].name, runs[a].tags) == ("renamed", ["best"])
    assert runs[b].state == "finished" and runs[b].summary()["loss"]["min"] == 0.1
    assert c not in LocalStore(root).index.read()


def test_a_running_or_crashed_run_is_never_held_as_ended(root):
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
        assert {r.id: r.state for r in list_runs(root)} == {done: "finished", live: "running"}
        assert held(root) == {done}
        snapshot = root / folder_index.DIR / folder_index.SNAPSHOT
        before = snapshot.stat().st_mtime_ns if snapshot.exists() else None
        list_runs(root)  # the live run read again: nothing new for the index, no snapshot written
        assert (snapshot.stat().st_mtime_ns if snapshot.exists() else None) == before
    finally:
        proc.kill()
        proc.wait()
    assert {r.id: r.state for r in list_runs(root)}[live] == "crashed"
    assert held(root) == {done}  # no end record: read from its folder each time


def test_a_long_lived_reader_sees_an_edit_of_a_run_it_holds(root):
    a = ended(root, "a", 1.0)
    catalog = Catalog(root)
    assert [r["name"] for r in catalog.rows()] == ["a"]
    assert catalog.open(a).name == "a"
    rename_run(a, "b", dir=root)
    assert catalog.open(a).name == "b"
    assert [r["name"] for r in catalog.rows()] == ["b"]


def test_a_lost_damaged_or_unwritable_index_costs_only_the_files(root):
    a = ended(root, "a", 1.0)
    index = root / folder_index.DIR
    rewrite_in_place(root, a, "changed in place")
    shutil.rmtree(index)  # lost: every run is read from its folder, and handed back
    assert [r.name for r in list_runs(root)] == ["changed in place"]
    assert held(root) == {a}
    (index / folder_index.SNAPSHOT).write_bytes(msgpack.packb({"format": folder_index.FORMAT, "ids": 1}))
    assert [r.name for r in list_runs(root)] == ["changed in place"]  # damaged inside: as none
    (index / folder_index.SNAPSHOT).write_bytes(b"\xc1 not msgpack")
    (index / folder_index.LOG).write_bytes(b'{"id": "cut sho')  # a writer killed mid-line
    b = ended(root, "b", 2.0)  # its lines start on a line of their own
    assert held(root) == {b}
    assert sorted(r.name for r in list_runs(root)) == ["b", "changed in place"]
    assert held(root) == {a, b}  # handed back again
    shutil.rmtree(index)
    index.write_bytes(b"")  # cannot be made: listed from the files, nothing said
    assert sorted(r.name for r in list_runs(root)) == ["b", "changed in place"]
    assert [p.name for p in root.iterdir() if p.is_file()] == [folder_index.DIR]  # no temporary file


def test_a_run_copied_in_by_hand_is_listed_and_reindex_rebuilds_the_index(root, tmp_path):
    a = ended(root, "a", 1.0)
    elsewhere = tmp_path / "elsewhere"
    b = ended(elsewhere, "b", 2.0)
    shutil.copytree(elsewhere / b, root / b)  # not through tunetrack: the index never heard of it
    assert listed(root) == {a: ("a", "finished", 0.5), b: ("b", "finished", 1.0)}
    rewrite_in_place(root, a, "changed in place")
    shutil.rmtree(root / folder_index.DIR)
    out = subprocess.run(
        [sys.executable, "-m", "tunetrack", "reindex", "--dir", str(root)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out.startswith(f"indexed 2 runs in {root}")
    assert held(root) == {a, b}
    assert listed(root) == {a: ("changed in place", "finished", 0.5), b: ("b", "finished", 1.0)}


def test_many_writers_at_once_lose_and_duplicate_nothing(root, monkeypatch):
    """Four processes record 15 runs each at once, while a reader lists; the index's snapshot is
    folded many times meanwhile (a tiny ``COMPACT_BYTES``). The index then lists what the runs'
    own files say, each run once."""
    script = textwrap.dedent(
        f"""
        import sys
        from tunetrack import Tracker
        from tunetrack.store import folder_index
        folder_index.COMPACT_BYTES = 2000
        for i in range(15):
            with Tracker(dir={str(root)!r}, project="p", name="unnamed", system=False,
                         console=False) as t:
                t.log({{"loss": float(i)}}, step=1)
                t.name = f"w{{sys.argv[1]}}-{{i}}"  # an edit, logged beside the ends
        """
    )
    writers = [subprocess.Popen([sys.executable, "-c", script, str(n)]) for n in range(4)]
    while any(w.poll() is None for w in writers):
        list_runs(root)  # a reader beside them hands back what it read
    assert [w.returncode for w in writers] == [0, 0, 0, 0]
    from_index = {r.id: (r.name, r.state, r.summary()["loss"]["last"]) for r in list_runs(root)}
    monkeypatch.setattr(folder_index.FolderIndex, "read", lambda self: {})
    from_files = {r.id: (r.name, r.state, r.summary()["loss"]["last"]) for r in list_runs(root)}
    assert from_index == from_files and len(from_index) == 60
    assert sorted(name for name, *_ in from_index.values()) == sorted(
        f"w{n}-{i}" for n in range(4) for i in range(15)
    )
    assert (root / folder_index.DIR / folder_index.SNAPSHOT).exists()


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
    built = Catalog(root).rows(keys=["loss"])  # from the files: keeps its rows
    assert (root / layout.ROWS).exists()
    assert Catalog(root).rows(keys=["loss"]) == built  # a fresh catalog: from the kept rows
    # the kept rows are what it shows: a run.json changed in place (its folder's time unchanged)
    rewrite_in_place(root, a, "changed in place")
    assert [r["name"] for r in Catalog(root).rows()] == [r["name"] for r in built]
    rename_run(b, "renamed", dir=root)  # an edit: that run's row is built again, the others kept
    delete_runs([c], dir=root)
    rows = {r["id"]: r for r in Catalog(root).rows(keys=["loss"])}
    assert set(rows) == {a, b} and rows[b]["name"] == "renamed" and rows[b]["state"] == "failed"
    assert rows[a]["summary"]["loss"]["min"] == 0.5
    (root / layout.ROWS).write_bytes(b"\x00damaged")  # ignored: the rows are built from the index
    assert {r["id"]: r["name"] for r in Catalog(root).rows()} == {a: "a", b: "renamed"}
    shutil.rmtree(root / folder_index.DIR)  # without both, from the files
    (root / layout.ROWS).unlink()
    assert {r["id"]: r["name"] for r in Catalog(root).rows()} == {a: "changed in place", b: "renamed"}
