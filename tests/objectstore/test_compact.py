"""``tunetrack compact`` on the loopback S3 server: two compactors (processes of their own) racing each
other while a third process finishes runs and resumes one beside them; ``tunetrack query`` then gives
exactly the rows the runs' records give (nothing lost, nothing twice), before and after a last
compaction, and so do the Iceberg tables they raced to publish. And the create-only commit: two
compactors that chose the same runs commit them once; a compactor SIGKILLed before its commit, or
before its tables, and the next one that finishes its work."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from support.helpers import spawn_script
from support.tables import answers, read_from, same, truth
from tunetrack import Tracker
from tunetrack.manage.compact import commit, compact, write_files
from tunetrack.reader import list_runs
from tunetrack.reader.compacted import commits, covered
from tunetrack.reader.find import store_at
from tunetrack.reader.parquet import sources
from tunetrack.store.blobs import open_blobs
from tunetrack.store.warehouse import warehouse_of

from .test_iceberg import same_as_query


@pytest.fixture(autouse=True)
def local_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TUNETRACK_SPOOL", str(tmp_path / "spool"))
    monkeypatch.setenv("TUNETRACK_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("TUNETRACK_PARQUET", "1")  # the tests' default is off (conftest.parquet_off)
    monkeypatch.setenv("POLARS_ICEBERG_PLANNER", "pyiceberg")  # no polars_iceberg package here


def record(url: str, names: list[str]) -> list[str]:
    ids = []
    for i, name in enumerate(names):
        with Tracker(dir=url, name=name, project=f"p{i % 2}", system=False, config={"lr": 0.1 * i}) as t:
            for step in range(1, 21):
                t.log({"loss": 3.0 - step / 10 + i, "acc": step / 20}, step=step)
        ids.append(t.id)
    return ids


WRITER = """
import sys
from tunetrack import Tracker
url, first = sys.argv[1], sys.argv[2]
for i in range(5):
    with Tracker(dir=url, name=f"w{i}", project=f"p{i % 2}", system=False, config={"lr": i}) as t:
        for step in range(1, 31):
            t.log({"loss": 1.0 / step + i}, step=step)
    if i == 2:  # a run compacted already, resumed with a rewind
        with Tracker(dir=url, resume=first, resume_step=10, system=False) as t:
            for step in range(11, 16):
                t.log({"loss": -float(step)}, step=step)
"""

COMPACTOR = """
import sys, os, time
from tunetrack.manage.compact import compact
url, stop = sys.argv[1], sys.argv[2]
while True:
    last = os.path.exists(stop)
    done = compact(url)
    print(done.number, done.runs, flush=True)
    if last:
        break
    time.sleep(0.2)
"""


def test_compactors_racing_beside_a_writer(s3_url: str, tmp_path: Path):
    ids = record(s3_url, ["a", "b", "c"])
    stop = tmp_path / "stop"
    writer = spawn_script(WRITER, s3_url, ids[0])
    compactors = [spawn_script(COMPACTOR, s3_url, str(stop)) for _ in range(2)]
    try:
        assert writer.wait(timeout=300) == 0, writer.stderr.read() if writer.stderr else ""
        stop.touch()
        outputs = []
        for c in compactors:
            out, err = c.communicate(timeout=300)
            assert c.returncode == 0, err
            outputs.append(out)
    finally:
        for p in (writer, *compactors):
            if p.poll() is None:
                p.kill()
    made = [int(line.split()[0]) for out in outputs for line in out.splitlines() if line.split()[0] != "None"]
    assert sorted(made) == list(range(1, len(made) + 1))  # each number committed once, none skipped
    warehouse = warehouse_of(store_at(s3_url))
    assert [c["number"] for c in commits(warehouse)] == sorted(made)
    want = truth(s3_url)
    assert want["runs"].shape[0] == 8
    same(answers(s3_url), want)
    # every run ended before the compactors' last look: all of them covered at their current sizes
    runs = {r.id: r for r in list_runs(s3_url)}
    done = covered(commits(warehouse))
    assert {r: sources(run) for r, run in runs.items()} == {r: done.get(r) for r in runs}
    assert read_from(s3_url)[0::2] == (0, 0)  # nothing read from a run's own copy or its records
    assert compact(s3_url).number is None
    same(answers(s3_url), want)
    # the compactors also raced for the Iceberg tables' versions: each run in them once, as queried
    same_as_query(s3_url)


def test_two_compactors_with_the_same_runs_commit_them_once(s3_url: str):
    ids = record(s3_url, ["a", "b"])
    store = store_at(s3_url)
    warehouse = warehouse_of(store)
    first, second = write_files(store, warehouse), write_files(store, warehouse)
    assert set(first.runs) == set(second.runs) == set(ids)
    assert commit(warehouse, first) == 1
    written = {f["path"] for f in second.files}
    assert commit(warehouse, second) is None  # number 1 taken, by the same runs: nothing left to commit
    assert {b[0] for b in warehouse.data_files()} == {f["path"] for f in first.files}  # its own removed
    assert written and not written & {f["path"] for f in first.files}
    assert [c["number"] for c in commits(warehouse)] == [1]
    same(answers(s3_url), truth(s3_url))
    started = time.time()
    assert compact(s3_url).number is None and time.time() - started < 30


KILLED = """
import sys, time
from tunetrack.manage.compact import write_files
from tunetrack.reader.find import store_at
from tunetrack.store.warehouse import warehouse_of
store = store_at(sys.argv[1])
pending = write_files(store, warehouse_of(store))
print(len(pending.files), flush=True)
time.sleep(600)  # killed here: its files uploaded, its commit never made
"""


def test_a_compactor_killed_before_its_commit_and_one_killed_before_its_tables(s3_url: str):
    """A compactor process SIGKILLed after uploading its files: nothing a reader uses changes, and
    the next compaction commits the runs (its orphans removed once old enough). One that died after
    its commit and before the Iceberg tables (``--no-iceberg`` stands for it): the next one brings
    the tables up to date. Every answer equals the runs' records."""
    ids = record(s3_url, ["a", "b", "c"])
    want = truth(s3_url)
    killed = spawn_script(KILLED, s3_url)
    assert killed.stdout is not None
    line = killed.stdout.readline()  # blocks until its files are uploaded
    assert int(line) > 0, killed.stderr.read() if killed.stderr else ""
    killed.kill()
    killed.wait(timeout=30)
    warehouse = warehouse_of(store_at(s3_url))
    orphans = warehouse.data_files()
    assert orphans and commits(warehouse) == []
    same(answers(s3_url), want)
    assert read_from(s3_url)[1] == 0  # nothing read from the orphans

    done = compact(s3_url, orphan_age=0.0, iceberg=False)
    assert done.number == 1 and done.runs == 3 and done.removed == len(orphans)
    assert not {key for key, _ in orphans} & {key for key, _ in warehouse.data_files()}
    same(answers(s3_url), want)
    assert read_from(s3_url)[1] > 0
    assert not open_blobs(s3_url).list_blobs(".warehouse/iceberg/")  # the tables never made

    done = compact(s3_url)
    assert done.number is None and done.iceberg is not None and done.iceberg.applied == 4
    same_as_query(s3_url)
    assert {r.id for r in list_runs(s3_url)} == set(ids)
