"""Forks: ``Tracker(fork_from="RUN@STEP")`` makes a new run whose history up to STEP is its parent's,
referenced and not copied, and its own after; every reader (the read API, ``show``, ``export``, SQL,
the Parquet copy) reads the same merged history, a resumed fork keeps its branch point, and a fork of
a run that is not there (or of a step it never reached) fails at ``start()`` in one line."""

from __future__ import annotations

import json
import warnings

import pytest
from click.testing import CliRunner

import tunetrack
from support.helpers import run_script, spawn_script, wait_until
from tunetrack import Tracker
from tunetrack.cli import cli
from tunetrack.errors import InvalidFork
from tunetrack.jsonfile import read_json
from tunetrack.reader import open_run, run_json
from tunetrack.reader.as_text import facts
from tunetrack.reader.parquet import current_file
from tunetrack.store import codec, layout
from tunetrack.store.framing import scan
from tunetrack.store.local import LocalStore

PARENT_CONFIG = {"lr": 3e-4, "model": {"layers": 2}, "seed": 1}
FORK_CONFIG = {"lr": 1e-4, "model": {"layers": 2}, "seed": 1}


def parent_loss(step: int) -> float:
    return 10.0 - step * 0.25


def fork_loss(step: int) -> float:
    return 100.0 + step


def record_parent(root, steps: int = 20, name: str = "parent") -> str:
    """A finished run of ``steps`` steps, with events at steps 5 and 15 and an eval every 10 steps."""
    with Tracker(name=name, dir=root, config=PARENT_CONFIG, system=False) as t:
        for step in range(1, steps + 1):
            t.log({"loss": parent_loss(step)}, step=step)
            if step % 10 == 0:
                t.log({"eval_loss": step / 100}, step=step)
        t.event("checkpoint", step=5, path="ckpt-5")
        t.event("checkpoint", step=15, path="ckpt-15")
    assert t.id is not None
    return t.id


def own_rows(root, run_id: str) -> list[int]:
    """The steps of the rows in the run's own files: what the fork stored itself."""
    steps: list[int] = []
    for data in (root / run_id).glob(f"*{layout.DATA_SUFFIX}"):
        for kind, record in codec.unpack_all(scan(data.read_bytes()), lambda: None):
            if kind == codec.ROWS:
                steps += record.steps.tolist()
    return steps


def test_a_fork_of_a_finished_run_reads_its_parents_history_up_to_the_step_then_its_own(root):
    parent_id = record_parent(root)
    with Tracker(name="child", dir=root, config=FORK_CONFIG, fork_from="parent@10", system=False) as f:
        assert f.step == 10  # the next row is the fork's first
        for _ in range(11, 16):
            f.log({"loss": fork_loss(f.step + 1)})  # the default step goes on from the branch
    fork = open_run("child", dir=root)

    loss = fork.series("loss")
    assert loss.steps.tolist() == list(range(1, 16))
    assert loss.values.tolist() == [parent_loss(s) for s in range(1, 11)] + [
        fork_loss(s) for s in range(11, 16)
    ]
    assert fork.series("eval_loss").steps.tolist() == [10]  # the parent's at the branch step is inherited
    # referenced, not copied: run.json holds the reference, the fork's files only its own rows
    assert read_json(root / fork.id / "run.json")["fork"] == {"run": parent_id, "step": 10}
    assert own_rows(root, fork.id) == list(range(11, 16))
    assert fork.fork == {"run": parent_id, "step": 10}
    assert fork.parent() is not None and fork.parent().id == parent_id
    assert [r.id for r in open_run("parent", dir=root).forks()] == [fork.id]
    assert open_run("parent", dir=root).fork is None
    # events up to the step are the parent's (not the one at 15), then the fork's own branch point
    assert [(e["kind"], e["step"]) for e in fork.events()] == [("checkpoint", 5), ("fork", 10)]
    # the config is the fork's own; the parent's, as it was, is kept with the branch point
    assert fork.config == FORK_CONFIG
    assert fork.fork_config() == PARENT_CONFIG
    # summaries and the last values come from the merged history, not the fork's end record alone
    summary = fork.summary()
    assert summary["loss"]["count"] == 15 and summary["loss"]["min"] == parent_loss(10)
    assert summary["eval_loss"]["last"] == 0.1
    assert fork.latest() == {"step": 15, "values": {"loss": fork_loss(15), "eval_loss": 0.1}}
    assert fork.last_step == 15
    assert [r["step"] for r in fork.rows()][:3] == [1, 2, 3]
    assert sum(len(s) for s in fork.process_series("loss").values()) == 15  # the parent's process too
    # the parent is unchanged
    assert open_run("parent", dir=root).series("loss").steps.tolist() == list(range(1, 21))


def test_what_show_and_the_json_say_of_a_fork_and_its_parent(root):
    parent_id = record_parent(root)
    with Tracker(
        name="child", dir=root, config=FORK_CONFIG, fork_from=f"{parent_id[:5]}@10", system=False
    ) as f:
        f.log({"loss": 1.0})
    fork, parent = open_run("child", dir=root), open_run("parent", dir=root)
    said = dict(facts(fork))
    assert said["forked from"] == f"{parent_id}@10 (parent)"
    assert said["changed from parent"] == "lr: 0.0003 -> 0.0001"
    assert dict(facts(parent))["forks"] == f"{fork.id}@10 (child)"
    assert run_json(fork)["fork"] == {"run": parent_id, "step": 10}
    assert run_json(parent, detail=True)["forks"] == [{"id": fork.id, "name": "child", "step": 10}]
    shown = CliRunner().invoke(cli, ["show", "child", "--dir", str(root)], catch_exceptions=False)
    assert shown.exit_code == 0
    assert f"forked from          {parent_id}@10 (parent)" in shown.stdout
    assert "lr: 0.0003 -> 0.0001" in shown.stdout
    # the branch point's event shows the parent's config as how many keys, not the config itself
    assert "run=" + parent_id + ", config=3" in shown.stdout


def test_show_export_sql_and_the_parquet_copy_read_the_same_merged_history(root, monkeypatch):
    monkeypatch.setenv("TUNETRACK_PARQUET", "1")  # SQL then reads the fork's Parquet copy
    record_parent(root)
    with Tracker(name="child", dir=root, config={"lr": 1e-4}, fork_from="parent@12", system=False) as f:
        for step in range(13, 18):
            f.log({"loss": fork_loss(step)}, step=step)
    fork = open_run("child", dir=root)
    expected = [(s, parent_loss(s)) for s in range(1, 13)] + [(s, fork_loss(s)) for s in range(13, 18)]
    # written by a child process once the fork ended (pyarrow is not loaded here): wait for it whole
    wait_until(lambda: current_file(open_run("child", dir=root), "metrics") is not None, timeout=60)

    exported = CliRunner().invoke(cli, ["export", "child", "--dir", str(root)], catch_exceptions=False).stdout
    rows = [json.loads(line) for line in exported.splitlines()]
    assert [(r["step"], r["loss"]) for r in rows if "loss" in r] == expected
    assert [(r["step"], r["eval_loss"]) for r in rows if "eval_loss" in r] == [(10, 0.1)]

    answer = tunetrack.query(
        f"SELECT step, value FROM metrics WHERE run = '{fork.id}' AND key = 'loss' ORDER BY step", dir=root
    )
    assert [tuple(r) for r in answer.itertuples(index=False)] == expected
    summary = tunetrack.query(
        f"SELECT min, count FROM summary WHERE run = '{fork.id}' AND key = 'loss'", dir=root
    )
    assert summary.iloc[0].tolist() == [parent_loss(12), 17]

    compared = CliRunner().invoke(
        cli,
        [
            "compare",
            "parent",
            "child",
            "--dir",
            str(root),
            "--group-by",
            "lr",
            "--metric",
            "loss:min",
            "--json",
        ],
        catch_exceptions=False,
    )
    groups = {g["key"]["lr"]: g for g in json.loads(compared.stdout)["groups"]}
    assert groups[1e-4]["min"] == parent_loss(12)  # the fork's min is the parent's at its branch step
    shown = CliRunner().invoke(cli, ["show", "child", "--dir", str(root), "--json"], catch_exceptions=False)
    shown_json = json.loads(shown.stdout)
    assert shown_json["summary"]["loss"]["count"] == 17 and shown_json["last_step"] == 17


def test_a_fork_of_a_crashed_run_and_its_resume_keep_the_branch_point(root, tmp_path):
    marker = tmp_path / "progress"
    victim = spawn_script(
        """
        import sys, time
        from tunetrack import Tracker
        t = Tracker(dir=sys.argv[1], name="crashed", system=False).start()
        print(t.id, flush=True)
        for step in range(1, 41):
            t.log({"loss": 10.0 - step * 0.25}, step=step)
        t.event("checkpoint", step=30, path="ckpt-30")
        t.flush()
        open(sys.argv[2], "w").write("40")
        time.sleep(120)
    """,
        str(root),
        str(marker),
    )
    parent_id = victim.stdout.readline().strip()
    wait_until(lambda: marker.exists() and marker.read_text() == "40")
    victim.kill()
    victim.wait()
    assert open_run(parent_id, dir=root).state == "crashed"

    fork_id = run_script(
        """
        import sys
        from tunetrack import Tracker
        t = Tracker(dir=sys.argv[1], name="rescue", fork_from=sys.argv[2] + "@30", system=False).start()
        for step in range(31, 51):
            t.log({"loss": 100.0 + step}, step=step)
        print(t.id)
        t.finish()
    """,
        str(root),
        parent_id,
    ).stdout.strip()
    # the fork's own attempt dies too; its resume from step 45 keeps the parent's history and the branch
    run_script(
        """
        import sys
        from tunetrack import Tracker
        t = Tracker(dir=sys.argv[1], resume=sys.argv[2], resume_step=45, system=False).start()
        for step in range(46, 61):
            t.log({"loss": 200.0 + step}, step=step)
        t.finish()
    """,
        str(root),
        fork_id,
    )
    fork = open_run("rescue", dir=root)
    assert fork.id == fork_id and fork.fork == {"run": parent_id, "step": 30}
    assert len(fork.meta["processes"]) == 2
    loss = fork.series("loss")
    assert loss.steps.tolist() == list(range(1, 61))
    assert loss.values.tolist() == (
        [10.0 - s * 0.25 for s in range(1, 31)]
        + [100.0 + s for s in range(31, 46)]
        + [200.0 + s for s in range(46, 61)]
    )
    assert [(e["kind"], e["step"]) for e in fork.events()] == [
        ("checkpoint", 30),
        ("fork", 30),
        ("rewind", 45),
    ]
    assert fork.state == "finished" and open_run(parent_id, dir=root).state == "crashed"


def test_a_fork_of_a_fork_reads_back_to_the_first_run(root):
    record_parent(root, steps=30, name="a")
    with Tracker(name="b", dir=root, fork_from="a@10", system=False) as b:
        for step in range(11, 21):
            b.log({"loss": fork_loss(step)}, step=step)
    with Tracker(name="c", dir=root, fork_from="b@15", system=False) as c:
        for step in range(16, 26):
            c.log({"loss": -float(step)}, step=step)
    loss = open_run("c", dir=root).series("loss")
    assert loss.steps.tolist() == list(range(1, 26))
    assert loss.values.tolist() == (
        [parent_loss(s) for s in range(1, 11)]
        + [fork_loss(s) for s in range(11, 16)]
        + [-float(s) for s in range(16, 26)]
    )
    assert [r.name for r in open_run("a", dir=root).forks()] == ["b"]
    assert [r.name for r in open_run("b", dir=root).forks()] == ["c"]


def test_a_fork_rewound_before_its_branch_point_drops_the_parents_rows_after_the_rewind(root):
    record_parent(root)
    with Tracker(name="child", dir=root, fork_from="parent@10", system=False) as f:
        for step in range(11, 16):
            f.log({"loss": fork_loss(step)}, step=step)
        f.rewind(5)
        for step in range(6, 9):
            f.log({"loss": -float(step)}, step=step)
    loss = open_run("child", dir=root).series("loss")
    assert loss.steps.tolist() == list(range(1, 9))
    assert loss.values.tolist() == [parent_loss(s) for s in range(1, 6)] + [-6.0, -7.0, -8.0]


def test_a_resume_that_names_the_parent_forks_it_instead(root):
    """What an adapter's automatic resume does in the parent's output folder: the parent is forked,
    never re-attached to nor rewound."""
    parent_id = record_parent(root)
    with Tracker(dir=root, resume=parent_id, resume_step=10, fork_from=f"{parent_id}@10", system=False) as f:
        f.log({"loss": fork_loss(11)}, step=11)
    assert f.id != parent_id
    parent = open_run(parent_id, dir=root)
    assert len(parent.meta["processes"]) == 1 and parent.rewinds == 0
    assert open_run(f.id, dir=root).series("loss").steps.tolist() == list(range(1, 12))


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("nope@5", "fork_from='nope@5': no run 'nope' in "),
        ("parent@21", "fork_from='parent@21': run {id} ends at step 20, before step 21"),
        ("parent@x", "fork_from='parent@x': the step after '@' must be an integer of 0 or more (RUN@STEP)"),
        ("parent@-1", "fork_from='parent@-1': the step after '@' must be an integer of 0 or more (RUN@STEP)"),
        ("empty@0", "fork_from='empty@0': run {empty} has no logged step to fork from"),
    ],
)
def test_a_fork_of_nothing_fails_at_start_in_one_line_and_records_nothing(root, spec, message):
    parent_id = record_parent(root)
    with Tracker(name="empty", dir=root, system=False) as empty:
        pass
    before = sorted(p.name for p in root.iterdir())
    tracker = Tracker(dir=root, fork_from=spec, system=False)
    with pytest.raises(InvalidFork) as caught:  # a ValueError, in every mode
        tracker.start()
    text = str(caught.value)
    assert isinstance(caught.value, ValueError) and "\n" not in text
    assert text.startswith(message.format(id=parent_id, empty=empty.id))
    assert sorted(p.name for p in root.iterdir()) == before  # no run was created
    assert not tracker.active
    tracker.log({"loss": 1.0})  # training goes on: the tracker records nothing
    tracker.finish()


def test_a_fork_without_its_parent_reads_as_its_own_history_with_one_warning(root):
    record_parent(root)
    with Tracker(name="child", dir=root, fork_from="parent@10", system=False) as f:
        f.log({"loss": 1.0}, step=11)
    CliRunner().invoke(cli, ["rm", "parent", "--dir", str(root), "--yes", "--force"], catch_exceptions=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fork = open_run("child", dir=root)
        assert fork.series("loss").steps.tolist() == [11]
        assert dict(facts(fork))["forked from"].endswith("@10 (not in this store)")
    assert any("which the store does not hold" in str(w.message) for w in caught)


def test_forks_that_loop_read_as_their_own_history(root):
    """run.json edited by hand (or ids reused) so that two runs name each other as parent: the reader
    warns once and stops, rather than follow the loop."""
    ids = []
    for name in ("x", "y"):
        with Tracker(name=name, dir=root, system=False) as t:
            t.log({"loss": 1.0}, step=1)
        ids.append(t.id)
    for me, other in (ids, ids[::-1]):
        path = root / me / "run.json"
        path.write_text(json.dumps({**read_json(path), "fork": {"run": other, "step": 1}}))
    LocalStore(root).reindex()  # edited by hand: the store's index learns it from the files
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert open_run("x", dir=root).series("loss").steps.tolist() == [1]
    assert any("loop or nest too deep" in str(w.message) for w in caught)


def test_a_fork_keeps_the_history_it_branched_from_when_its_parent_is_resumed_from_an_earlier_step(root):
    """The parent crashed at step 20, a fork branched at 15; the parent is then resumed from step 8
    and goes on: the parent reads its new history, the fork still the one it branched from."""
    parent_id = record_parent(root)
    with Tracker(name="child", dir=root, fork_from="parent@15", system=False) as f:
        f.log({"loss": fork_loss(16)}, step=16)
    with Tracker(dir=root, resume=parent_id, resume_step=8, system=False) as again:
        for step in range(9, 26):
            again.log({"loss": -float(step)}, step=step)
    parent = open_run("parent", dir=root).series("loss")
    assert parent.values.tolist() == [parent_loss(s) for s in range(1, 9)] + [-float(s) for s in range(9, 26)]
    fork = open_run("child", dir=root).series("loss")
    assert fork.steps.tolist() == list(range(1, 17))
    assert fork.values.tolist() == [parent_loss(s) for s in range(1, 16)] + [fork_loss(16)]
    events = [(e["kind"], e["step"]) for e in open_run("child", dir=root).events()]
    assert events == [("checkpoint", 5), ("checkpoint", 15), ("fork", 15)]


def test_rm_refuses_a_parent_whose_forks_would_lose_their_history(root):
    with Tracker(dir=root, name="base", system=False) as t:
        for step in (1, 2):
            t.log({"loss": 1.0}, step=step)
    with Tracker(dir=root, name="branch", fork_from="base@1", system=False) as t:
        t.log({"loss": 0.5}, step=2)
    refused = CliRunner().invoke(cli, ["rm", "base", "--yes", "--dir", str(root)])
    assert refused.exit_code == 1
    assert "has forks that read their history before the branch from it" in refused.output
    assert "branch" in refused.output and open_run("base", dir=root).id  # still there
    both = CliRunner().invoke(cli, ["rm", "base", "branch", "--yes", "--dir", str(root)])
    assert both.exit_code == 0, both.output  # the forks go too: nothing is left without its history
