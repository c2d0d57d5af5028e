"""One run per distributed job: processes started with a launcher's environment land in one run."""

from __future__ import annotations

import uuid

from support.helpers import spawn_script
from tunetrack.reader import list_runs

WORKER = """
import sys, time
from tunetrack import Tracker
t = Tracker(dir=sys.argv[1], project="ddp", system_interval=0.2).start()
for step in range(1, 21):
    t.log({"loss": 1.0 / step}, step=step)
    time.sleep(0.02)
time.sleep(1.0)
t.finish()
"""


def _env(job: str, rank: int, local_rank: int, node: int) -> dict[str, str]:
    return {
        "RANK": str(rank),
        "LOCAL_RANK": str(local_rank),
        "WORLD_SIZE": "4",
        "LOCAL_WORLD_SIZE": "2",
        "GROUP_RANK": str(node),
        "TORCHELASTIC_RUN_ID": job,
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": "29555",
    }


def test_two_nodes_two_ranks_each_give_one_run(root):
    job = uuid.uuid4().hex
    procs = [
        spawn_script(WORKER, str(root), env=_env(job, node * 2 + local, local, node))
        for node in (1, 0)
        for local in (0, 1)
    ]  # the other node first: it must wait for rank 0
    for p in procs:
        assert p.wait(timeout=120) == 0, p.stderr.read()
    (run,) = list_runs(root, project="ddp")
    assert run.state == "finished"
    loss = run.series("loss")
    assert loss.steps.tolist() == list(range(1, 21))  # one copy of the training metrics
    assert len(run.nodes) == 2 and {n.split(":")[0] for n in run.nodes} == {"node0", "node1"}
    for node, series in run.system_series("proc.rss_bytes").items():
        assert len(series) >= 2, node
    roles = sorted(p["role"] for p in run.meta["processes"])
    assert roles == ["node", "primary"]
