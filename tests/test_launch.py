"""Rank detection per launcher, and job keys shared by one launch, with real environment variables."""

from __future__ import annotations

import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from support.helpers import LAUNCH_VARS, setenv, torchrun_env
from tunetrack.tracker.launch import RankInfo, job_id, rank_info

pytestmark = pytest.mark.usefixtures("plain_process")

# -- rank_info ------------------------------------------------------------------------------------
TORCHRUN_NODE1 = dict(
    RANK=3,
    LOCAL_RANK=1,
    WORLD_SIZE=4,
    LOCAL_WORLD_SIZE=2,
    GROUP_RANK=1,
    TORCHELASTIC_RUN_ID="job7",
    MASTER_ADDR="node0",
    MASTER_PORT=29500,
    TORCHELASTIC_RESTART_COUNT=0,
)
SLURM_STEP = dict(
    SLURM_JOB_ID=77,
    SLURM_STEP_ID=0,
    SLURM_PROCID=5,
    SLURM_LOCALID=1,
    SLURM_NODEID=1,
    SLURM_NTASKS=8,
    SLURM_TASKS_PER_NODE="4(x2)",
)


@pytest.mark.parametrize(
    "values, expected",
    [
        pytest.param({}, RankInfo(), id="single-process"),
        pytest.param(TORCHRUN_NODE1, RankInfo(3, 1, 4, 1, 2, "torchrun"), id="torchrun-2-nodes"),
        pytest.param(
            dict(
                RANK=1,
                LOCAL_RANK=1,
                WORLD_SIZE=2,
                LOCAL_WORLD_SIZE=2,
                GROUP_RANK=0,
                TORCHELASTIC_RUN_ID="none",
            ),
            RankInfo(1, 1, 2, 0, 2, "torchrun"),
            id="torchrun-static",
        ),
        pytest.param(
            {**TORCHRUN_NODE1, "ACCELERATE_MIXED_PRECISION": "bf16", "ACCELERATE_DYNAMO_BACKEND": "NO"},
            RankInfo(3, 1, 4, 1, 2, "accelerate"),
            id="accelerate-launch",
        ),
        pytest.param(
            dict(
                RANK=5,
                LOCAL_RANK=1,
                WORLD_SIZE=8,
                CROSS_RANK=1,
                CROSS_SIZE=2,
                LOCAL_SIZE=4,
                MASTER_ADDR="n0",
                MASTER_PORT=29500,
            ),
            RankInfo(5, 1, 8, 1, 4, "deepspeed"),
            id="deepspeed-launcher",
        ),
        pytest.param(
            dict(
                OMPI_COMM_WORLD_RANK=5,
                OMPI_COMM_WORLD_LOCAL_RANK=1,
                OMPI_COMM_WORLD_SIZE=8,
                OMPI_COMM_WORLD_LOCAL_SIZE=4,
            ),
            RankInfo(5, 1, 8, 1, 4, "mpi"),
            id="openmpi",
        ),
        pytest.param(SLURM_STEP, RankInfo(5, 1, 8, 1, 4, "slurm"), id="srun"),
        pytest.param(
            {
                **SLURM_STEP,
                "SLURM_NTASKS": 16,
                "SLURM_STEP_NUM_TASKS": 8,
                "SLURM_STEP_TASKS_PER_NODE": "3,5",
                "SLURM_PROCID": 4,
            },
            RankInfo(4, 1, 8, 1, 5, "slurm"),
            id="srun-step-smaller-than-allocation",
        ),
        pytest.param(
            dict(SLURM_JOB_ID=77, SLURM_PROCID=0, SLURM_LOCALID=0, SLURM_NTASKS=8, SLURM_NODEID=0),
            RankInfo(),
            id="sbatch-script-without-srun",
        ),
        pytest.param(
            {**SLURM_STEP, **TORCHRUN_NODE1}, RankInfo(3, 1, 4, 1, 2, "torchrun"), id="torchrun-under-srun"
        ),
        pytest.param(
            dict(RANK=2, WORLD_SIZE=4), RankInfo(2, 0, 4, 2, 1, "env"), id="no-local-rank:one-per-node"
        ),
        pytest.param(
            dict(RANK=2, LOCAL_RANK=2, WORLD_SIZE=4),
            RankInfo(2, 2, 4, 0, 4, "env"),
            id="no-local-size:one-node",
        ),
        pytest.param(
            dict(RANK=" 1 ", LOCAL_RANK="1\n", WORLD_SIZE="2"),
            RankInfo(1, 1, 2, 0, 2, "env"),
            id="whitespace",
        ),
    ],
)
def test_rank_info_per_launcher(monkeypatch, values, expected):
    setenv(monkeypatch, **values)
    assert rank_info() == expected
    assert rank_info(dict(os.environ)) == expected  # an explicit mapping reads the same


@pytest.mark.parametrize(
    "values, expected",
    [
        (dict(RANK="garbage", WORLD_SIZE="x"), RankInfo(launcher="env")),
        (dict(RANK="1.0", WORLD_SIZE="2"), RankInfo(launcher="env")),
        (dict(RANK="-1", WORLD_SIZE="2"), RankInfo(launcher="env")),
        (dict(RANK="", WORLD_SIZE=""), RankInfo(launcher="env")),
        (dict(RANK="5", WORLD_SIZE="2"), RankInfo(launcher="env")),  # rank outside the world
        (dict(RANK="1", WORLD_SIZE="0"), RankInfo(launcher="env")),
        (dict(RANK="1"), RankInfo(launcher="env")),
        (dict(RANK="١", WORLD_SIZE="2"), RankInfo(launcher="env")),  # a non-ASCII digit is garbage too
        (dict(OMPI_COMM_WORLD_RANK="x", OMPI_COMM_WORLD_SIZE="8"), RankInfo(launcher="mpi")),
        (dict(SLURM_STEP_ID="0", SLURM_PROCID="?", SLURM_NTASKS="4"), RankInfo(launcher="slurm")),
        # usable rank and world, garbage elsewhere: the rest is derived
        (
            dict(RANK="1", WORLD_SIZE="2", LOCAL_RANK="x", LOCAL_WORLD_SIZE="many", GROUP_RANK="?"),
            RankInfo(1, 0, 2, 1, 1, "env"),
        ),
        (
            dict(RANK="1", LOCAL_RANK="1", WORLD_SIZE="2", LOCAL_WORLD_SIZE="8"),
            RankInfo(1, 1, 2, 0, 2, "env"),
        ),
        (
            dict(RANK="3", LOCAL_RANK="7", WORLD_SIZE="4", LOCAL_WORLD_SIZE="2"),
            RankInfo(3, 1, 4, 1, 2, "env"),
        ),
        (
            dict(SLURM_STEP_ID="0", SLURM_PROCID="1", SLURM_NTASKS="2", SLURM_TASKS_PER_NODE="2(x"),
            RankInfo(1, 0, 2, 1, 1, "slurm"),
        ),
    ],
)
def test_garbage_gives_defaults_without_raising(monkeypatch, values, expected):
    setenv(monkeypatch, **values)
    assert rank_info() == expected


NAMES = [
    *LAUNCH_VARS,
    "OMPI_COMM_WORLD_RANK",
    "OMPI_COMM_WORLD_SIZE",
    "SLURM_PROCID",
    "SLURM_STEP_ID",
    "SLURM_NTASKS",
    "SLURM_TASKS_PER_NODE",
    "SLURM_NODEID",
    "SLURM_LOCALID",
]
NUMBERISH = st.one_of(
    st.integers(-3, 20).map(str), st.text(max_size=6), st.sampled_from(["4(x2)", "2,3", "", "none"])
)


@given(st.dictionaries(st.sampled_from(NAMES), NUMBERISH))
def test_any_environment_gives_a_consistent_rank(values):
    info = rank_info(values)
    assert 0 <= info.rank < info.world_size
    assert 0 <= info.local_rank < info.local_world_size <= info.world_size
    assert info.node_rank >= 0
    job_id(values)  # never raises either


# -- job_id ----------------------------------------------------------------------------------------
def job_ids(monkeypatch, envs: list[dict[str, object]]) -> set[str | None]:
    out = set()
    for values in envs:
        with monkeypatch.context() as m:
            setenv(m, **values)
            out.add(job_id())
    return out


def test_job_id_is_shared_by_one_launch_and_differs_between_launches(monkeypatch):
    assert job_ids(monkeypatch, [torchrun_env(r) for r in range(4)]) == {"torchelastic:job7:node0:29500"}
    assert len(job_ids(monkeypatch, [torchrun_env(0, "job7"), torchrun_env(0, "job8")])) == 2
    static = [{**torchrun_env(r), "TORCHELASTIC_RUN_ID": "none"} for r in range(4)]
    assert job_ids(monkeypatch, static) == {"master:node0:29500"}
    srun = [
        {**SLURM_STEP, "SLURM_PROCID": r, "SLURM_LOCALID": r % 4, "SLURM_NODEID": r // 4} for r in range(8)
    ]
    assert job_ids(monkeypatch, srun) == {"slurm:77:0"}
    assert job_ids(monkeypatch, [{**SLURM_STEP, "SLURM_STEP_ID": 1}]) == {"slurm:77:1"}


@pytest.mark.parametrize(
    "values, expected",
    [
        ({}, None),
        (dict(MASTER_ADDR="h", MASTER_PORT=1), None),  # exported by a shell profile: not a launch
        (dict(SLURM_JOB_ID=77, SLURM_PROCID=0, SLURM_NTASKS=8), None),  # an sbatch script itself
        (dict(RANK="x", WORLD_SIZE=2, MASTER_ADDR="h", MASTER_PORT=1), None),
        (dict(RANK=1, WORLD_SIZE=2, MASTER_ADDR="h", MASTER_PORT=1), "master:h:1"),
        (
            dict(RANK=1, WORLD_SIZE=2, MASTER_ADDR="h", MASTER_PORT=1, PMIX_NAMESPACE="prterun-h-42@1"),
            "master:h:1:PMIX_NAMESPACE=prterun-h-42@1",
        ),
        (dict(RANK=1, WORLD_SIZE=2, MASTER_ADDR="h", MASTER_PORT=1, LSB_JOBID=9), "master:h:1:LSB_JOBID=9"),
        (
            dict(OMPI_COMM_WORLD_RANK=1, OMPI_COMM_WORLD_SIZE=2, OMPI_MCA_ess_base_jobid=123),
            "launch:OMPI_MCA_ess_base_jobid=123",
        ),
        (dict(RANK=1, WORLD_SIZE=2), None),  # nothing to share
    ],
)
def test_job_id_cases(monkeypatch, values, expected):
    setenv(monkeypatch, **values)
    assert job_id() == expected
