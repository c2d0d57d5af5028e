"""Rank detection per launcher, job keys, run metadata, and the console backend's line format."""

from __future__ import annotations

import io
import os
import subprocess
import time

import pytest

from helpers import run_script
from tunetrack.backends.console import ConsoleBackend
from tunetrack.env import RankInfo, git_info, job_id, rank_info, run_metadata


@pytest.mark.parametrize(
    "env, expected",
    [
        ({}, RankInfo()),
        (
            {
                "RANK": "3",
                "LOCAL_RANK": "1",
                "WORLD_SIZE": "4",
                "LOCAL_WORLD_SIZE": "2",
                "GROUP_RANK": "1",
                "TORCHELASTIC_RUN_ID": "abc",
            },
            RankInfo(3, 1, 4, 1, 2, "torchrun"),
        ),
        (
            {"RANK": "1", "LOCAL_RANK": "1", "WORLD_SIZE": "2", "ACCELERATE_MIXED_PRECISION": "no"},
            RankInfo(1, 1, 2, 0, 2, "accelerate"),
        ),
        (
            {
                "OMPI_COMM_WORLD_RANK": "5",
                "OMPI_COMM_WORLD_LOCAL_RANK": "1",
                "OMPI_COMM_WORLD_SIZE": "8",
                "OMPI_COMM_WORLD_LOCAL_SIZE": "4",
            },
            RankInfo(5, 1, 8, 1, 4, "mpi"),
        ),
        (
            {"SLURM_PROCID": "2", "SLURM_LOCALID": "0", "SLURM_NTASKS": "4", "SLURM_NODEID": "1"},
            RankInfo(2, 0, 4, 1, 4, "slurm"),
        ),
        ({"RANK": "garbage", "WORLD_SIZE": "x"}, RankInfo(launcher="env")),
        ({"RANK": "5", "WORLD_SIZE": "2"}, RankInfo(launcher="env")),
    ],
)
def test_rank_info(env, expected):
    assert rank_info(env) == expected


def test_job_id():
    assert job_id({}) is None
    assert job_id({"TORCHELASTIC_RUN_ID": "none", "MASTER_ADDR": "h", "MASTER_PORT": "1"}) == "master:h:1"
    assert job_id({"TORCHELASTIC_RUN_ID": "r1"}).startswith("torchelastic:r1")
    assert job_id({"SLURM_JOB_ID": "77", "SLURM_STEP_ID": "0"}) == "slurm:77:0"


def test_run_metadata_in_a_git_repo(tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-c", "user.email=a@b", "-c", "user.name=a"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "f.txt").write_text("1")
    subprocess.run([*git, "-C", str(repo), "add", "."], check=True)
    subprocess.run([*git, "-C", str(repo), "commit", "-qm", "c"], check=True)
    subprocess.run(
        ["git", "-C", str(repo), "remote", "add", "origin", "https://user:pw@example.com/x.git"], check=True
    )
    monkeypatch.chdir(repo)
    info = git_info()
    assert len(info["commit"]) == 40 and info["dirty"] is False
    assert info["remote"] == "https://example.com/x.git"
    (repo / "f.txt").write_text("2")
    assert git_info()["dirty"] is True
    meta = run_metadata()
    assert meta["pid"] == os.getpid() and meta["git"]["dirty"] is True and "torch" in meta["versions"]


def test_run_metadata_without_git_and_without_importing_frameworks(tmp_path):
    out = run_script(
        """
        import sys, json
        from tunetrack.env import run_metadata
        meta = run_metadata()
        print(json.dumps([meta["git"], "torch" in sys.modules, "transformers" in sys.modules]))
    """,
        env={"PATH": str(tmp_path)},
    )  # no git on PATH
    assert out.stdout.strip() == "[null, false, false]"


def test_console_line(monkeypatch):
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    stream = io.StringIO()
    console = ConsoleBackend(stream=stream)
    console.log_system([(1, 0.0, {"gpu.0.memory.used_bytes": 8.2e9, "cpu.percent": 5.0})])
    when = 1767348000.0  # 2026-01-02 10:00:00 UTC
    console.log([(100, when, {"lr": 2e-4, "loss": 2.15, "note": "warmup done", "x": None})])
    assert stream.getvalue() == (
        "[2026-01-02 10:00:00] step 100 | loss 2.150 | lr 2.0e-04 | note 'warmup done' | x None | gpu mem 8.2 GB\n"
    )
    every = ConsoleBackend(stream=io.StringIO(), keys=["loss"], every=2)
    every.log([(i, when, {"loss": float(i), "lr": 1.0}) for i in range(1, 5)])
    assert every.stream.getvalue().count("\n") == 2 and "lr" not in every.stream.getvalue()
    time.tzset()
