"""The deepspeed launcher: two processes of one job land in one run, with one copy of the training
metrics. There is no GPU here: ``DS_ACCELERATOR=cpu`` makes DeepSpeed run on CPU with gloo, and
``--num_gpus 2`` asks its launcher for two local processes (one per "device")."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from support.helpers import EXAMPLES_DIR, SRC, free_port
from tunetrack.reader import list_runs

#: the launcher as users run it: the console script installed next to this interpreter
DEEPSPEED = str(Path(sys.executable).with_name("deepspeed"))


def test_deepspeed_launcher_two_processes_give_one_run(root):
    env = {**os.environ, "PYTHONPATH": SRC, "OMP_NUM_THREADS": "1", "DS_ACCELERATOR": "cpu"}
    env.pop("CUDA_VISIBLE_DEVICES", None)  # the launcher would take it as its device list
    launcher = [DEEPSPEED, "--num_gpus", "2", "--master_port", str(free_port())]
    script = os.path.join(EXAMPLES_DIR, "deepspeed_engine.py")
    proc = subprocess.run(
        [*launcher, script, "--dir", str(root), "--steps", "10"],
        env=env,
        capture_output=True,
        text=True,
        timeout=540,  # the first launch on a machine JIT-builds DeepSpeed's shared-memory op (~2 min)
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (run,) = list_runs(root, project="deepspeed-engine")
    assert run.state == "finished"
    assert run.series("loss").steps.tolist() == list(range(1, 11))  # rank 0 only, once
    # rank 0 records the run; rank 1 joins it with its console only (what it printed)
    roles = {p["role"]: p for p in run.meta["processes"]}
    assert sorted(roles) == ["console", "primary"] and roles["console"]["rank"]["rank"] == 1
    primary = roles["primary"]
    assert primary["rank"] == {
        "rank": 0,
        "local_rank": 0,
        "world_size": 2,  # both processes really ran, and the second one added nothing
        "node_rank": 0,
        "local_world_size": 2,
        "launcher": "deepspeed",
    }
    assert run.config["zero_optimization"] == {"stage": 1}
    (node,) = run.nodes
    assert len(run.system_series("proc.rss_bytes")[node]) >= 1
