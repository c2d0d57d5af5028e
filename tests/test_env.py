"""Rank detection per launcher, job keys, and run metadata (git, versions) — with real env vars and git."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import asdict

import pytest
from hypothesis import given
from hypothesis import strategies as st

from helpers import run_script
from tunetrack import provenance as tenv
from tunetrack.launch import RankInfo, job_id, rank_info
from tunetrack.provenance import git_info, run_metadata
from tunetrack.redact import REDACTED, redact_argv, strip_credentials

LAUNCH_VARS = [
    "RANK",
    "LOCAL_RANK",
    "WORLD_SIZE",
    "LOCAL_WORLD_SIZE",
    "GROUP_RANK",
    "NODE_RANK",
    "CROSS_RANK",
    "CROSS_SIZE",
    "LOCAL_SIZE",
    "TORCHELASTIC_RUN_ID",
    "MASTER_ADDR",
    "MASTER_PORT",
    "LSB_JOBID",
    "PBS_JOBID",
    "CUDA_VISIBLE_DEVICES",
]
LAUNCH_PREFIXES = ("ACCELERATE_", "OMPI_", "PMIX_", "SLURM_")


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    """Each test starts as a plain single process, whatever launched pytest."""
    for name in list(os.environ):
        if name in LAUNCH_VARS or name.startswith(LAUNCH_PREFIXES):
            monkeypatch.delenv(name)


def setenv(monkeypatch, **values: object) -> None:
    for name, value in values.items():
        monkeypatch.setenv(name, str(value))


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
def torchrun_env(rank: int, run_id: str = "job7", port: int = 29500) -> dict[str, object]:
    return dict(
        RANK=rank,
        LOCAL_RANK=rank % 2,
        WORLD_SIZE=4,
        LOCAL_WORLD_SIZE=2,
        GROUP_RANK=rank // 2,
        TORCHELASTIC_RUN_ID=run_id,
        MASTER_ADDR="node0",
        MASTER_PORT=port,
    )


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


# -- git ---------------------------------------------------------------------------------------------
def git(repo, *args: str) -> str:
    return subprocess.run(
        [
            "git",
            "-c",
            "user.email=a@b",
            "-c",
            "user.name=a",
            "-c",
            "commit.gpgsign=false",
            "-C",
            str(repo),
            *args,
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


@pytest.fixture
def repo(tmp_path, monkeypatch):
    """A committed repository with a credentialed origin; the user's git config is kept out."""
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    path = tmp_path / "repo"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    (path / "train.py").write_text("print(1)\n")
    git(path, "add", ".")
    git(path, "commit", "-qm", "first")
    git(path, "remote", "add", "backup", "https://backup.example.com/x.git")
    git(path, "remote", "add", "origin", "https://user:ghp_s3cret@github.com/org/x.git")
    monkeypatch.chdir(path)
    return path


def test_git_clean_then_dirty_with_credentials_stripped(repo):
    head = git(repo, "rev-parse", "HEAD")
    assert git_info() == {
        "commit": head,
        "branch": "main",
        "dirty": False,
        "remote": "https://github.com/org/x.git",
    }
    (repo / "notes.txt").write_text("untracked files do not make the tree dirty")
    assert git_info()["dirty"] is False
    (repo / "train.py").write_text("print(2)\n")
    assert git_info()["dirty"] is True
    meta = run_metadata()
    assert meta["git"] == {**git_info(), "dirty": True}
    assert "ghp_s3cret" not in json.dumps(meta)


def test_git_detached_head_other_remote_and_subdirectory(repo):
    git(repo, "remote", "remove", "origin")
    git(repo, "checkout", "-q", "--detach")
    (repo / "sub").mkdir()
    info = git_info(str(repo / "sub"))
    assert info["branch"] is None and len(info["commit"]) == 40
    assert info["remote"] == "https://backup.example.com/x.git"  # no origin: the first remote


def test_git_in_a_repository_without_commits(tmp_path, monkeypatch):
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    git(tmp_path, "init", "-q", "-b", "main")
    assert git_info(str(tmp_path)) == {"commit": None, "branch": "main", "dirty": False, "remote": None}


def test_no_repository_no_git_and_a_hung_git(tmp_path, monkeypatch):
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    outside = tmp_path / "plain"
    outside.mkdir()
    assert git_info(str(outside)) is None
    monkeypatch.setenv("PATH", str(outside))  # no git on PATH
    assert git_info(str(outside)) is None
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "git").write_text("#!/bin/sh\nsleep 30\n")  # the sleep child keeps stdout open
    (fake / "git").chmod(0o755)
    monkeypatch.setenv("PATH", str(fake))
    monkeypatch.setattr(tenv, "GIT_TIMEOUT", 0.5)
    start = time.monotonic()
    assert git_info(str(outside)) is None
    assert time.monotonic() - start < 3


@pytest.mark.parametrize(
    "url, expected",
    [
        ("https://user:ghp_tok@github.com/org/x.git", "https://github.com/org/x.git"),
        ("https://oauth2:glpat-x@gitlab.example.com:8443/g/x", "https://gitlab.example.com:8443/g/x"),
        ("https://u:p@ss@host/x", "https://host/x"),  # an unencoded @ in the password
        ("https://tok@host", "https://host"),
        ("ssh://git@host:22/x.git", "ssh://host:22/x.git"),
        ("git@github.com:org/x.git", "git@github.com:org/x.git"),  # scp-like: a user name, no secret
        ("https://github.com/org/x.git", "https://github.com/org/x.git"),
        ("/srv/git/x.git", "/srv/git/x.git"),
    ],
)
def test_strip_credentials(url, expected):
    assert strip_credentials(url) == expected


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (
            ["train.py", "--hub_token", "hf_abc", "--lr", "3e-4"],
            ["train.py", "--hub_token", REDACTED, "--lr", "3e-4"],
        ),
        (["train.py", "--hub-token=hf_abc"], ["train.py", f"--hub-token={REDACTED}"]),
        (
            ["train.py", "--wandb_api_key", "k", "--api_key=k2"],
            ["train.py", "--wandb_api_key", REDACTED, f"--api_key={REDACTED}"],
        ),
        (["env", "HF_TOKEN=hf_abc", "python", "x.py"], ["env", f"HF_TOKEN={REDACTED}", "python", "x.py"]),
        (
            ["x.py", "--max_new_tokens", "64", "--pad_token=<pad>"],
            ["x.py", "--max_new_tokens", "64", "--pad_token=<pad>"],
        ),
        (
            ["x.py", "--push_to_hub_token"],
            ["x.py", "--push_to_hub_token"],
        ),  # no value follows: nothing to hide
        (["x.py", "--data=https://u:pw@host/d.json"], ["x.py", "--data=https://host/d.json"]),
        (["x.py", "--hub_token="], ["x.py", "--hub_token="]),
    ],
)
def test_redact_argv(argv, expected):
    assert redact_argv(argv) == expected


def test_run_metadata_redacts_the_command_line(repo, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["train.py", "--hub_token", "hf_secret", "--output_dir", "out"])
    meta = run_metadata()
    assert meta["argv"] == ["train.py", "--hub_token", REDACTED, "--output_dir", "out"]
    assert "hf_secret" not in repr(meta)


# -- run_metadata ------------------------------------------------------------------------------------
def test_run_metadata_fields(repo, monkeypatch):
    setenv(monkeypatch, **torchrun_env(1), CUDA_VISIBLE_DEVICES="0,1")
    meta = run_metadata()
    assert meta["host"] and meta["pid"] == os.getpid() and meta["cwd"] == str(repo)
    assert meta["argv"] == sys.argv and meta["argv"] is not sys.argv
    assert meta["python"].count(".") == 2 and meta["platform"].startswith(os.uname().sysname)
    assert meta["git"]["branch"] == "main"
    assert {"torch", "transformers", "numpy", "tunetrack"} <= set(meta["versions"])
    assert "llamafactory" not in meta["versions"]  # not installed: omitted
    assert meta["rank"] == asdict(RankInfo(1, 1, 4, 0, 2, "torchrun"))
    assert meta["cuda_visible_devices"] == "0,1"
    json.dumps(meta)  # stored as JSON as is
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    assert "cuda_visible_devices" not in run_metadata()


def test_run_metadata_never_raises(tmp_path, monkeypatch):
    import getpass

    def no_user():
        raise KeyError("getpwuid(): uid not found: 1234")

    monkeypatch.setattr(getpass, "getuser", no_user)
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()  # the working directory was deleted under the process
    meta = run_metadata()
    assert meta["user"] is None and meta["cwd"] is None and meta["git"] is None
    assert meta["pid"] == os.getpid() and meta["versions"]


def test_run_metadata_imports_no_framework(tmp_path):
    out = run_script(
        """
        import json, sys
        from tunetrack.provenance import run_metadata
        meta = run_metadata()
        heavy = [m for m in ("torch", "transformers", "accelerate", "numpy", "deepspeed") if m in sys.modules]
        print(json.dumps([meta["git"], heavy, "torch" in meta["versions"]]))
        """,
        env={"PATH": str(tmp_path)},  # no git on PATH
    )
    git_meta, heavy, has_torch = json.loads(out.stdout)
    assert git_meta is None and heavy == [] and has_torch  # versions come from metadata, not imports
