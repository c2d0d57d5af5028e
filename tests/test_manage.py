"""Managing runs after the fact (rename, tags, notes, delete) on a real folder store: through the read
API, the Tracker itself, and several processes editing one run at once while it is written."""

from __future__ import annotations

import json
import warnings

import pytest

from support.helpers import spawn_script
from tunetrack import Tracker
from tunetrack._warnings import TunetrackWarning
from tunetrack.edits import author, fold, new_edit, tag_changes
from tunetrack.errors import InvalidValue, RunInUse, RunNotFound
from tunetrack.manage import delete_runs, note_run, rename_run, tag_run
from tunetrack.reader import list_runs, open_run
from tunetrack.reader.audit import trail


def finished(root, **kw) -> str:
    with Tracker(dir=root, system=False, **kw) as t:
        t.log({"loss": 1.0}, step=1)
    return t.id


def files(path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in path.iterdir()}


# -- what an edit is ---------------------------------------------------------------------------------
def test_edits_fold_in_time_order_whatever_order_they_are_read_in():
    run = {"name": "a", "tags": ["x", "draft"]}
    e1 = {**new_edit(name="b", add=["best"], remove=["draft"]), "time": 1.0}
    e2 = {**new_edit(name="c", note="first"), "time": 2.0}
    e3 = {**new_edit(remove=["best"], add=["x", "final"], note="second"), "time": 3.0}
    for order in ([e1, e2, e3], [e3, e1, e2], [e2, e3, e1]):
        got = fold(run, [(str(e["time"]), e) for e in order])
        assert (got.name, got.tags) == ("c", ["x", "final"])
        assert [n["text"] for n in got.notes] == ["first", "second"]
        assert got.edits == [e1, e2, e3]
    # a malformed record is skipped, not fatal; equal times are ordered by the record's name
    broken = [("z", {"time": "soon", "name": "bad"}), ("y", {"time": 5.0, "name": ""}), ("x", [])]
    tie = [("b", {"time": 9.0, "name": "second"}), ("a", {"time": 9.0, "name": "first"})]
    assert fold(run, [*broken, *tie]).name == "second"
    assert fold(run, []).name == "a" and run == {"name": "a", "tags": ["x", "draft"]}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["best"], "tag changes are +TAG (add) or -TAG (remove), not 'best'"),
        (["+"], "not a tag: ''"),
        (["+a", "-a"], "'a' is both added and removed"),
        ([], "no tag to add (+TAG) or remove (-TAG)"),
    ],
)
def test_bad_tag_changes_say_what_is_wrong(args, message):
    with pytest.raises(ValueError) as err:
        tag_changes(args)
    assert str(err.value) == message


# -- the read API ----------------------------------------------------------------------------------
def test_rename_tag_and_note_show_everywhere_and_leave_the_runs_files_as_they_were(root):
    run_id = finished(root, name="draft-1", project="p", tags=["lora", "draft"])
    before = files(root / run_id)
    renamed = rename_run("draft-1", "lora-r16", dir=root)
    assert (renamed.id, renamed.name) == (run_id, "lora-r16")
    tagged = tag_run("lora-r16", add=["best", "lora"], remove=["draft"], dir=root)
    assert tagged.tags == ["lora", "best"]
    noted = note_run(run_id[:4], "diverged at 3k with lr 1e-3", dir=root)
    (note,) = noted.notes
    assert note["text"] == "diverged at 3k with lr 1e-3" and "@" in note["by"]

    run = open_run("lora-r16", dir=root)  # found by the new name, not by the old one
    assert (run.id, run.name, run.tags) == (run_id, "lora-r16", ["lora", "best"])
    assert [n["text"] for n in run.notes] == [note["text"]]
    with pytest.raises(RunNotFound):
        open_run("draft-1", dir=root)
    assert [r.id for r in list_runs(dir=root, tags=["best"])] == [run_id]
    assert list_runs(dir=root, tags=["draft"]) == []
    meta = run.meta
    assert (meta["name"], meta["tags"], len(meta["edits"])) == ("lora-r16", ["lora", "best"], 3)
    # nothing the run had was changed: three files were added, one per edit
    after = files(root / run_id)
    assert {k: v for k, v in after.items() if k in before} == before
    added = sorted(set(after) - set(before))
    assert len(added) == 3 and all(name.endswith(".edit") for name in added)
    assert json.loads((root / run_id / "run.json").read_text())["name"] == "draft-1"


def test_a_name_must_find_the_run_it_names(root):
    a = finished(root, name="run-a")  # a hyphen: no prefix of an id (base 36) looks like these names
    b = finished(root, name="run-b")
    with pytest.raises(ValueError, match=f"'run-a' already names run {a} \\(run-a\\)"):
        rename_run(b, "run-a", dir=root)
    own_prefix = next(b[:n] for n in range(1, 9) if not a.startswith(b[:n]))
    with pytest.raises(ValueError, match=f"already names run {a}"):
        rename_run(b, a[: len(own_prefix)], dir=root)  # a prefix of a's id would find a, not b
    with pytest.raises(ValueError, match="cannot be empty"):
        rename_run(b, "  ", dir=root)
    with pytest.raises(RunNotFound):
        rename_run("nope", "c", dir=root)
    assert rename_run(b, "run-c", dir=root).name == "run-c"
    assert rename_run(b, own_prefix, dir=root).name == own_prefix  # it finds b all the same


def test_delete_refuses_a_running_run_unless_forced_and_looks_up_every_run_first(root):
    done = finished(root, name="done")
    live = Tracker(dir=root, name="live", system=False).start()
    try:
        with pytest.raises(RunNotFound):
            delete_runs(["done", "nope"], dir=root)
        assert (root / done).is_dir()  # one unknown run: nothing deleted
        with pytest.raises(RunInUse, match=f"{live.id} \\(live\\) is still running"):
            delete_runs(["done", "live"], dir=root)
        assert (root / done).is_dir()
        assert delete_runs(["done"], dir=root, confirm=lambda runs: False) == []
        assert (root / done).is_dir()
        assert [r.id for r in delete_runs(["done", done], dir=root)] == [done]  # named twice, deleted once
        assert not (root / done).exists() and [r.id for r in list_runs(dir=root)] == [live.id]
        assert [r.id for r in delete_runs(["live"], dir=root, force=True)] == [live.id]
    finally:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", TunetrackWarning)  # its folder is gone
            live.finish()
    # nothing of either run is left but the record of its deletion, for the audit trail
    assert list_runs(dir=root) == [] and sorted(p.name for p in root.iterdir()) == [".audit", ".index"]
    gone = sorted((e.run, e.action, e.by) for e in trail(root))
    assert gone == sorted([(done, "delete", author()), (live.id, "delete", author())])


# -- the Tracker -------------------------------------------------------------------------------------
def test_before_start_a_name_and_tags_are_what_the_run_is_created_with(root):
    t = Tracker(dir=root, name="first", tags=["a"], system=False)
    t.name = "second"
    t.add_tags("b", "a")
    t.remove_tags("a")
    assert (t.name, t.tags) == ("second", ["b"])
    t.start()
    t.finish()
    assert json.loads((root / t.id / "run.json").read_text())["name"] == "second"
    assert not list((root / t.id).glob("*.edit"))  # nothing to edit: the run was created so
    run = open_run("second", dir=root)
    assert (run.name, run.tags) == ("second", ["b"])


def test_a_tracker_renames_and_tags_its_run_while_it_runs_and_after_finish(root):
    t = Tracker(dir=root, name="trial-7", tags=["sweep"], system=False).start()
    t.log({"loss": 2.0}, step=1)
    t.name = "trial-7-best"
    t.add_tags("best")
    t.remove_tags("sweep")
    t.flush()  # the writer stored the edits
    run = open_run("trial-7-best", dir=root)
    assert (run.id, run.state, run.tags) == (t.id, "running", ["best"])
    assert (t.name, t.tags) == ("trial-7-best", ["best"])
    t.log({"loss": 1.0}, step=2)
    t.finish()
    t.add_tags("kept")  # after finish(): written at once
    run = open_run(t.id, dir=root)
    assert (run.name, run.tags, run.state) == ("trial-7-best", ["best", "kept"], "finished")
    assert run.series("loss").values.tolist() == [2.0, 1.0]


def test_a_resumed_tracker_takes_the_name_the_run_was_given(root):
    run_id = finished(root, name="old")
    rename_run(run_id, "new", dir=root)
    t = Tracker(dir=root, resume=run_id, system=False).start()
    t.finish()
    assert t.name == "new"


def test_a_bad_edit_warns_and_leaves_the_run_alone_but_raises_in_strict_mode(root, monkeypatch):
    monkeypatch.setattr("tunetrack._warnings._seen", set())
    t = Tracker(dir=root, name="keep", system=False).start()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t.name = None  # a run that exists keeps a name
        t.add_tags("ok", "\n")
        t.add_tags()  # nothing to add: nothing to say either
    messages = [str(w.message) for w in caught if issubclass(w.category, TunetrackWarning)]
    assert len(messages) == 2, messages
    assert "cannot be empty" in messages[0] and "not a tag" in messages[1]
    t.finish()
    run = open_run(t.id, dir=root)
    assert (t.name, t.tags, run.name, run.tags) == ("keep", [], "keep", [])
    assert not list((root / t.id).glob("*.edit"))
    strict = Tracker(dir=root, system=False, strict=True).start()
    with pytest.raises(InvalidValue, match="cannot be empty"):
        strict.name = " "
    strict.finish()


# -- several processes at once -----------------------------------------------------------------------
TAGGER = """
import sys
from tunetrack.manage import tag_run
run, root, prefix = sys.argv[1:]
for i in range(15):
    tag_run(run, add=[f"{prefix}{i}"], remove=[f"{prefix}{i - 1}"] if i % 2 else [], dir=root)
print("done", flush=True)
"""


def test_two_processes_tag_a_run_while_a_third_logs_into_it(root):
    t = Tracker(dir=root, name="busy", tags=["base"], system=False, flush_interval=0.05).start()
    t.log({"loss": 0.0}, step=0)
    t.flush()
    taggers = [spawn_script(TAGGER, t.id, str(root), prefix) for prefix in ("a", "b")]
    step = 0
    while any(p.poll() is None for p in taggers):
        step += 1
        t.log({"loss": float(step)}, step=step)
        if step % 100 == 0:
            t.add_tags(f"t{step}")  # the run's own process edits it too
            t.flush()
    outs = [p.communicate(timeout=120) for p in taggers]
    assert [p.returncode for p in taggers] == [0, 0], [err for _, err in outs]
    t.finish()
    run = open_run("busy", dir=root)
    # every edit of every process is there: i is removed again by i + 1 when i + 1 is odd
    kept = {f"{p}{i}" for p in "ab" for i in range(15) if i % 2 or i == 14}
    own = {f"t{s}" for s in range(100, step + 1, 100)}
    assert set(run.tags) == {"base"} | kept | own
    assert len(run.tags) == len(set(run.tags))
    assert len(run.meta["edits"]) == 30 + len(own)
    assert run.state == "finished" and run.series("loss").steps.tolist() == list(range(step + 1))
