"""Where this process runs: its rank in a distributed job, and the metadata a run records.

Ranks come from the launchers' environment variables (torchrun, ``accelerate launch`` and the
deepspeed launcher all set ``RANK``/``LOCAL_RANK``/``WORLD_SIZE``; OpenMPI and SLURM are fallbacks),
so a tracker knows its role before ``torch.distributed`` is initialized, or without it.
"""

from __future__ import annotations

import getpass
import importlib.metadata
import os
import platform
import re
import socket
import subprocess
import sys
from dataclasses import dataclass
from typing import Any

PACKAGES = (
    "torch",
    "transformers",
    "accelerate",
    "trl",
    "peft",
    "datasets",
    "torchtune",
    "llamafactory",
    "deepspeed",
    "diffusers",
    "numpy",
    "tunetrack",
)


@dataclass(frozen=True)
class RankInfo:
    rank: int = 0
    local_rank: int = 0
    world_size: int = 1
    node_rank: int = 0
    local_world_size: int = 1
    launcher: str | None = None


def _int(env: dict[str, str], *names: str, default: int) -> int:
    for name in names:
        value = env.get(name)
        if value is not None:
            try:
                return int(value)
            except ValueError:
                continue
    return default


def rank_info(env: dict[str, str] | None = None) -> RankInfo:
    """This process's place in a distributed job (rank 0 of 1 when not distributed)."""
    env = dict(os.environ if env is None else env)
    if "RANK" in env or "LOCAL_RANK" in env:
        launcher = (
            "torchrun"
            if "TORCHELASTIC_RUN_ID" in env
            else "accelerate"
            if any(k.startswith("ACCELERATE_") for k in env)
            else "deepspeed"
            if "CROSS_RANK" in env
            else "env"
        )
    elif "OMPI_COMM_WORLD_RANK" in env:
        launcher = "mpi"
    elif "SLURM_PROCID" in env:
        launcher = "slurm"
    else:
        return RankInfo()
    rank = _int(env, "RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID", default=0)
    local_rank = _int(env, "LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", default=0)
    world = _int(env, "WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "SLURM_NTASKS", default=1)
    # Without a per-node count, assume one node (the common single-machine launch).
    local_world = _int(
        env, "LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE", "SLURM_NTASKS_PER_NODE", default=world
    )
    node = _int(env, "GROUP_RANK", "NODE_RANK", "CROSS_RANK", "SLURM_NODEID", default=-1)
    if node < 0:
        node = rank // local_world if local_world > 0 else 0
    if world < 1 or not 0 <= rank < world or local_rank < 0:
        return RankInfo(launcher=launcher)
    return RankInfo(rank, local_rank, world, node, max(local_world, 1), launcher)


def job_id(env: dict[str, str] | None = None) -> str | None:
    """A key shared by every process of one distributed launch, or None for a lone process."""
    env = dict(os.environ if env is None else env)
    run = env.get("TORCHELASTIC_RUN_ID")
    master = f"{env.get('MASTER_ADDR', '')}:{env.get('MASTER_PORT', '')}"
    if run and run != "none":
        return f"torchelastic:{run}:{master}"
    if env.get("SLURM_JOB_ID"):
        return f"slurm:{env['SLURM_JOB_ID']}:{env.get('SLURM_STEP_ID', '')}"
    if env.get("OMPI_COMM_WORLD_SIZE") and env.get("OMPI_MCA_orte_hnp_uri", env.get("PMIX_NAMESPACE")):
        return f"mpi:{env.get('PMIX_NAMESPACE') or env.get('OMPI_MCA_orte_hnp_uri')}"
    if master != ":":
        return f"master:{master}"
    return None


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(["git", *args], capture_output=True, text=True, timeout=2, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip()


def git_info() -> dict[str, Any] | None:
    """Commit, branch, dirty flag and remote (credentials stripped) of the working directory's repo."""
    commit = _git("rev-parse", "HEAD")
    if not commit:
        return None
    remote = _git("config", "--get", "remote.origin.url")
    return {
        "commit": commit,
        "branch": _git("rev-parse", "--abbrev-ref", "HEAD"),
        "dirty": bool(_git("status", "--porcelain", "--untracked-files=no")),
        "remote": re.sub(r"//[^/@]*@", "//", remote) if remote else None,
    }


def versions() -> dict[str, str]:
    """Installed versions of the frameworks that matter, read without importing them."""
    out = {}
    for name in PACKAGES:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return out


def run_metadata() -> dict[str, Any]:
    """What a run records about the process that writes it. Never raises."""
    try:
        user = getpass.getuser()
    except Exception:
        user = None
    return {
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "user": user,
        "argv": list(sys.argv),
        "cwd": os.getcwd(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "executable": sys.executable,
        "git": git_info(),
        "versions": versions(),
        "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
    }
