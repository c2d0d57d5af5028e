"""A fork in a bucket: its reference travels in run.json and in the listing index, so a reader that
lists the bucket finds the parent's history, and the parent its forks."""

from __future__ import annotations

from tunetrack import Tracker
from tunetrack.reader import list_runs, open_run


def test_a_fork_in_a_bucket_reads_its_parents_history_through_the_listing(s3_url: str) -> None:
    with Tracker(dir=s3_url, name="parent", system=False) as parent:
        for step in range(1, 11):
            parent.log({"loss": float(step)}, step=step)
    with Tracker(dir=s3_url, name="child", fork_from="parent@4", system=False) as child:
        for step in range(5, 8):
            child.log({"loss": -float(step)}, step=step)
    listed = {r.name: r for r in list_runs(s3_url)}  # run.json as the index entries carry it
    assert listed["child"].fork == {"run": parent.id, "step": 4}
    loss = listed["child"].series("loss")
    assert loss.values.tolist() == [1.0, 2.0, 3.0, 4.0, -5.0, -6.0, -7.0]
    assert [r.id for r in open_run("parent", dir=s3_url).forks()] == [child.id]
