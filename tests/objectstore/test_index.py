"""A bucket's index (``store.index``) under many writers at once, and lost then rebuilt by
``tunetrack reindex`` (``store.index_rebuild``), against a real S3-compatible server."""

from __future__ import annotations

import os
import textwrap
import warnings
from pathlib import Path

import pytest
from click.testing import CliRunner

from support.helpers import wait_until
from tunetrack.cli import cli
from tunetrack.reader import list_runs
from tunetrack.store import index_rebuild
from tunetrack.store.blobs import open_blobs

from .test_runs import python


@pytest.fixture(autouse=True)
def local_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TUNETRACK_SPOOL", str(tmp_path / "spool"))
    monkeypatch.setenv("TUNETRACK_CACHE", str(tmp_path / "cache"))


def another_machine(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, name: str) -> None:
    """A reader with nothing cached: it knows the bucket only from what the bucket holds."""
    monkeypatch.setenv("TUNETRACK_CACHE", str(tmp_path / name))


def shown(url: str) -> dict[str, tuple]:
    return {r.id: (r.name, r.project, r.state, r.summary()["loss"]["last"]) for r in list_runs(url)}


def test_many_writers_then_the_index_lost_and_rebuilt(
    s3_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = textwrap.dedent(
        """
        import sys
        from tunetrack import Tracker
        for i in range(5):
            with Tracker(dir=sys.argv[1], project="p", name="unnamed", system=False, console=False) as t:
                t.log({"loss": float(i)}, step=1)
                t.name = f"w{sys.argv[2]}-{i}"  # an edit: an index entry of its own
        """
    )
    writers = [python(script, s3_url, str(n)) for n in range(3)]
    while any(w.poll() is None for w in writers):
        list_runs(s3_url)  # a reader beside them, warm: it follows the index's log
    assert [(w.returncode, w.stderr.read()) for w in writers] == [(0, "")] * 3
    expected = sorted(f"w{n}-{i}" for n in range(3) for i in range(5))
    wait_until(lambda: sorted(name for name, *_ in shown(s3_url).values()) == expected, timeout=30)
    another_machine(monkeypatch, tmp_path, "second")
    before = shown(s3_url)
    assert sorted(name for name, *_ in before.values()) == expected
    assert {state for _, _, state, _ in before.values()} == {"finished"}

    blobs = open_blobs(s3_url)
    for prefix in (".index/", ".index-log/", ".index-compact/"):  # lost
        for blob in blobs.list_blobs(prefix):
            blobs.delete(blob.key)
    another_machine(monkeypatch, tmp_path, "third")
    monkeypatch.setattr(index_rebuild, "LOST_AFTER", 0.0)  # the runs are old enough to be missed
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert list_runs(s3_url) == []
    said = [str(w.message) for w in caught]
    assert (
        f"tunetrack: {s3_url} holds runs but its index lists none: run `tunetrack reindex --dir {s3_url}`"
        in said
    )

    result = CliRunner().invoke(cli, ["reindex", "--dir", s3_url], catch_exceptions=False)
    assert result.exit_code == 0 and result.stdout.startswith(f"indexed 15 runs in {s3_url} ("), result.output
    assert blobs.list_blobs(".index-compact/")  # a reader on another machine starts from it
    another_machine(monkeypatch, tmp_path, "fourth")
    assert shown(s3_url) == before
    assert blobs.list_blobs(".index-log/")  # announced: a warm reader takes them in too


def test_reindex_drops_the_entries_of_runs_gone(
    s3_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code = "import sys\nfrom tunetrack import Tracker\nwith Tracker(dir=sys.argv[1], name=sys.argv[2], system=False) as t:\n    t.log({'loss': 1.0}, step=1)\n    print(t.id)"
    ids = {}
    for name in ("kept", "gone"):
        proc = python(code, s3_url, name)
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        ids[name] = out.strip()
    blobs = open_blobs(s3_url)
    for blob in blobs.list_blobs(f"{ids['gone']}/"):  # removed behind tunetrack's back
        blobs.delete(blob.key)
    assert CliRunner().invoke(cli, ["reindex", "--dir", s3_url]).stdout.startswith("indexed 1 runs")
    another_machine(monkeypatch, tmp_path, "second")
    assert [r.name for r in list_runs(s3_url)] == ["kept"]
    assert not any(ids["gone"] in b.key for b in blobs.list_blobs(".index/"))
    assert os.environ["TUNETRACK_CACHE"].endswith("second")


def test_a_cold_reader_trusts_the_compact_object_and_the_log_past_it(
    s3_proxy, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another machine lists the bucket from the newest compact object (named by a pointer) and the
    log written since: a run started after the object, and one deleted after it, are as they are now,
    and nothing is listed."""
    from tunetrack import Tracker
    from tunetrack.manage import delete_runs
    from tunetrack.store import index

    url, proxy = s3_proxy
    monkeypatch.setattr(index, "COMPACT_AFTER", 1)
    ids = {}
    for name in ("old", "doomed"):
        with Tracker(dir=url, name=name, system=False) as t:
            t.log({"loss": 1.0}, step=1)
        ids[name] = t.id
    assert sorted(r.name for r in list_runs(url)) == ["doomed", "old"]  # the first look writes the object
    assert open_blobs(url).list_blobs(".index-compact/")
    with Tracker(dir=url, name="new", system=False) as t:
        t.log({"loss": 0.5}, step=1)
    delete_runs([ids["doomed"]], dir=url)
    another_machine(monkeypatch, tmp_path, "cold")
    proxy.requests.clear()
    assert {r.name: r.state for r in list_runs(url)} == {"old": "finished", "new": "finished"}
    listed = [target for method, target, _ in proxy.requests if "list-type" in target]
    assert listed == []  # the object the pointer names is fetched: nothing is listed at all
    assert any(index.NEWEST in target for method, target, _ in proxy.requests if method == "GET")


def test_a_compact_object_of_the_older_json_form_is_read_and_a_damaged_one_costs_a_listing(
    s3_proxy, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bucket an older tunetrack compacted (one JSON object of every entry) is still read by a cold
    reader without listing the index; a newer object that is damaged is passed over: the reader lists
    the index and fetches the entries instead, and the runs are the same."""
    import json

    from tunetrack import Tracker
    from tunetrack.store import index

    url, proxy = s3_proxy
    monkeypatch.setattr(index, "COMPACT_AFTER", 1)
    for name in ("a", "b"):
        with Tracker(dir=url, name=name, system=False) as t:
            t.log({"loss": 1.0}, step=1)
    assert sorted(r.name for r in list_runs(url)) == ["a", "b"]
    blobs = open_blobs(url)
    (packed,) = [b.key for b in blobs.list_blobs(".index-compact/")]
    assert packed.endswith(index.PACKED)
    found = index.read_compact(packed, blobs.get(packed) or b"")
    assert found is not None and found[1] is not None
    entries, log_next = found
    older = {k: {"etag": e.etag, "mtime": e.mtime, "body": e.body} for k, e in entries.items()}
    blobs.delete(packed)
    blobs.put(
        ".index-compact/0000000000001-000000.json",
        json.dumps({"entries": older, "log_next": log_next}).encode(),
    )
    another_machine(monkeypatch, tmp_path, "older")
    proxy.requests.clear()
    assert sorted(r.name for r in list_runs(url)) == ["a", "b"]
    listed = [target for method, target, _ in proxy.requests if "list-type" in target]
    assert listed and all("index-compact" in target for target in listed), listed

    blobs.put(f".index-compact/9999999999999-000000{index.PACKED}", b"\x00damaged")
    another_machine(monkeypatch, tmp_path, "damaged")
    proxy.requests.clear()
    assert sorted(r.name for r in list_runs(url)) == ["a", "b"]
    assert any("index-compact" not in t for _, t, _ in proxy.requests if "list-type" in t)


def test_a_readers_state_is_what_changed_since_the_compact_object_it_read(
    s3_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cold reader saves no copy of the compact object's entries, only what changed since (here
    nothing), and its next process lists the same from the cached object and that change, with one
    request; a state whose compact object left the cache is looked at afresh."""
    from tunetrack import Tracker
    from tunetrack.store import index
    from tunetrack.store.cache import ObjectCache

    monkeypatch.setattr(index, "COMPACT_AFTER", 1)
    for name in ("a", "b", "c"):
        with Tracker(dir=s3_url, name=name, system=False) as t:
            t.log({"loss": 1.0}, step=1)
    assert len(list_runs(s3_url)) == 3  # writes the compact object
    another_machine(monkeypatch, tmp_path, "cold")
    blobs = open_blobs(s3_url)
    first = index.Listing(blobs, ObjectCache(s3_url)).runs()
    assert len(first) == 3
    (state,) = Path(os.environ["TUNETRACK_CACHE"]).rglob(index._STATE)
    (kept,) = Path(os.environ["TUNETRACK_CACHE"]).rglob(f"*{index.PACKED}")
    assert state.stat().st_size < 200 < kept.stat().st_size  # no entry saved twice
    again = index.Listing(blobs, ObjectCache(s3_url)).runs()
    assert {r: [e.body for e in es] for r, es in again.items()} == {
        r: [e.body for e in es] for r, es in first.items()
    }
    kept.unlink()
    assert len(index.Listing(blobs, ObjectCache(s3_url)).runs()) == 3  # the object fetched again
