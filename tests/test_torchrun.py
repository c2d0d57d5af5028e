"""Real torchrun launches on CPU (gloo): one run per job, one copy of the training metrics, every
node's system metrics."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

from support.helpers import SRC
from tunetrack.reader import list_runs

SCRIPT = """
import sys, time
import torch
import torch.distributed as dist
from tunetrack import Tracker

dist.init_process_group("gloo")
tracker = Tracker(dir=sys.argv[1], project="torchrun", system_interval=0.2).start()
for step in range(1, 11):
    value = torch.tensor([float(dist.get_rank() + step)])
    dist.all_reduce(value)
    tracker.log({"loss": value.item() / dist.get_world_size()}, step=step)
    time.sleep(0.05)
dist.barrier()
time.sleep(0.5)
tracker.finish()
dist.destroy_process_group()
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _torchrun(script, root, *args):
    env = {**os.environ, "PYTHONPATH": SRC, "OMP_NUM_THREADS": "1"}
    return subprocess.Popen(
        [sys.executable, "-m", "torch.distributed.run", *args, str(script), str(root)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_nproc_per_node_two_gives_one_run(tmp_path, root):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    proc = _torchrun(script, root, "--standalone", "--nproc-per-node", "2")
    _, err = proc.communicate(timeout=180)
    assert proc.returncode == 0, err[-3000:]
    (run,) = list_runs(root, project="torchrun")
    assert run.state == "finished"
    assert run.series("loss").steps.tolist() == list(range(1, 11))
    assert run.series("loss").values.tolist() == [step + 0.5 for step in range(1, 11)]
    assert len(run.nodes) == 1  # one node: its first rank samples the system


def test_two_nodes_on_loopback_give_one_run_with_both_nodes(tmp_path, root):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    port = str(_free_port())
    common = ["--nnodes", "2", "--nproc-per-node", "1", "--master-addr", "127.0.0.1", "--master-port", port]
    procs = [_torchrun(script, root, *common, "--node-rank", str(node)) for node in (1, 0)]
    for proc in procs:
        _, err = proc.communicate(timeout=240)
        assert proc.returncode == 0, err[-3000:]
    (run,) = list_runs(root, project="torchrun")
    assert run.state == "finished"
    assert run.series("loss").steps.tolist() == list(range(1, 11))  # a single copy
    assert sorted(n.split(":")[0] for n in run.nodes) == ["node0", "node1"]
    for node, series in run.system_series("proc.rss_bytes").items():
        assert len(series) >= 1, node
    assert sorted(p["role"] for p in run.meta["processes"]) == ["node", "primary"]
