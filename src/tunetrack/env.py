"""Where this process runs: its rank in a distributed job, and the metadata a run records.

Ranks come from the launchers' environment variables, so a tracker knows its role before
``torch.distributed`` is initialized, or without it. torchrun, ``accelerate launch`` (which runs
torchrun) and the deepspeed launcher all set ``RANK``/``LOCAL_RANK``/``WORLD_SIZE``; OpenMPI's and
SLURM's own variables are fallbacks for scripts started by ``mpirun`` or ``srun`` directly.

Nothing here raises: a tracker that cannot tell its rank or its git commit must still record the run.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, TypeVar

from .config import REDACTED, is_secret_key

#: Packages whose installed version is recorded (read from their metadata, never imported).
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
GIT_TIMEOUT = 2.0  # seconds for all git calls together: a hung NFS mount must not stall start()

T = TypeVar("T")


@dataclass(frozen=True)
class RankInfo:
    rank: int = 0
    local_rank: int = 0
    world_size: int = 1
    node_rank: int = 0
    local_world_size: int = 1
    launcher: str | None = None


# Per launcher family, space-separated candidates for: rank, local rank, world size, local world size,
# node rank. LOCAL_SIZE and CROSS_RANK are deepspeed's names; srun's step counts come before the
# allocation's (SLURM_NTASKS is also set in a batch script, which is one process).
_FAMILIES = (
    ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE LOCAL_SIZE", "GROUP_RANK CROSS_RANK NODE_RANK"),
    (
        "OMPI_COMM_WORLD_RANK",
        "OMPI_COMM_WORLD_LOCAL_RANK",
        "OMPI_COMM_WORLD_SIZE",
        "OMPI_COMM_WORLD_LOCAL_SIZE",
        "",
    ),
    (
        "SLURM_PROCID",
        "SLURM_LOCALID",
        "SLURM_STEP_NUM_TASKS SLURM_NTASKS",
        "SLURM_STEP_TASKS_PER_NODE SLURM_TASKS_PER_NODE",
        "SLURM_NODEID",
    ),
)


def _int(env: Mapping[str, str], names: str, node: int | None = None) -> int | None:
    """The first non-negative integer among the space-separated ``names``; anything else counts as unset.

    With ``node``, SLURM's per-node lists (``4(x2),3``: four tasks on each of two nodes, then three)
    are read at that node's index.
    """
    for name in names.split():
        value = env.get(name, "").strip()
        if value.isascii() and value.isdigit():
            return int(value)
        if node is None or not value:
            continue
        counts: list[int] = []
        for part in value.split(","):
            m = re.fullmatch(r"(\d+)(?:\(x(\d+)\))?", part.strip())
            if not m:
                break
            counts += [int(m[1])] * int(m[2] or 1)
        else:
            return counts[min(node, len(counts) - 1)]
    return None


def _launcher(env: Mapping[str, str], rank_var: str) -> str:
    if rank_var == "OMPI_COMM_WORLD_RANK":
        return "mpi"
    if rank_var == "SLURM_PROCID":
        return "slurm"
    if "ACCELERATE_MIXED_PRECISION" in env or "ACCELERATE_DYNAMO_BACKEND" in env:
        return "accelerate"  # checked before torchrun: accelerate launch runs torchrun
    if "CROSS_RANK" in env or "LOCAL_SIZE" in env:
        return "deepspeed"
    return "torchrun" if "TORCHELASTIC_RUN_ID" in env else "env"


def rank_info(env: Mapping[str, str] | None = None) -> RankInfo:
    """This process's place in a distributed job; rank 0 of 1 when not distributed.

    Missing or garbage values never raise. An unusable rank or world size gives the defaults (the
    process records as if alone); other fields are derived: without ``LOCAL_RANK`` and a per-node
    count, each process counts as its own node (one process per container, as Kubeflow starts them).
    """
    env = os.environ if env is None else env
    for rank_var, local_vars, world_vars, local_world_vars, node_vars in _FAMILIES:
        if rank_var not in env or (
            rank_var == "SLURM_PROCID" and "SLURM_STEP_ID" not in env and "SLURM_STEPID" not in env
        ):
            continue  # a SLURM batch script (no step) is one process, whatever the allocation
        launcher = _launcher(env, rank_var)
        rank, world = _int(env, rank_var), _int(env, world_vars)
        if rank is None or world is None or not rank < world:
            return RankInfo(launcher=launcher)
        local_rank, node = _int(env, local_vars), _int(env, node_vars)
        local_world = _int(env, local_world_vars, node or 0)
        if local_world is None or not 1 <= local_world <= world:
            local_world = world if local_rank is not None else 1
        if local_rank is None or local_rank >= local_world:
            local_rank = rank % local_world
        if node is None:
            node = rank // local_world
        return RankInfo(rank, local_rank, world, node, local_world, launcher)
    return RankInfo()


def job_id(env: Mapping[str, str] | None = None) -> str | None:
    """A key shared by every process of one distributed launch (and by no other launch), or None.

    torchrun's rendezvous id, else SLURM's job and step ids, else the rendezvous address. The address
    alone is reused by the next launch (port 29500), so a launch-wide id is added when the launcher
    exports one (PMIx namespace, OpenMPI job id, LSF/PBS job id); without one, ``store.jobs`` ignores
    job files older than the process. None for a process that is not part of a distributed launch.
    """
    env = os.environ if env is None else env
    if rank_info(env).world_size <= 1:
        return None
    master = f"{env.get('MASTER_ADDR', '')}:{env.get('MASTER_PORT', '')}"
    run = env.get("TORCHELASTIC_RUN_ID", "")
    if run and run != "none":  # "none" is torchrun's default for a static rendezvous
        return f"torchelastic:{run}:{master}"
    if env.get("SLURM_JOB_ID"):
        return f"slurm:{env['SLURM_JOB_ID']}:{env.get('SLURM_STEP_ID', env.get('SLURM_STEPID', ''))}"
    launch = next(
        (
            f"{name}={env[name]}"
            for name in (
                "PMIX_NAMESPACE",
                "OMPI_MCA_ess_base_jobid",
                "OMPI_MCA_orte_hnp_uri",
                "LSB_JOBID",
                "PBS_JOBID",
            )
            if env.get(name)
        ),
        None,
    )
    if master != ":":
        return f"master:{master}" + (f":{launch}" if launch else "")
    return f"launch:{launch}" if launch else None


def _try(fn: Callable[[], T], default: Any = None) -> T | Any:
    try:
        return fn()
    except Exception:
        return default


def strip_credentials(url: str) -> str:
    """``https://user:token@host/x.git`` -> ``https://host/x.git``; scp-like ``git@host:x`` is kept."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    netloc, slash, path = rest.partition("/")
    return f"{scheme}://{netloc.rpartition('@')[2]}{slash}{path}"


def redact_argv(argv: Sequence[str]) -> list[str]:
    """The command line fit to store in a shareable run folder: values of secret options and of
    ``NAME=value`` assignments redacted (``--hub_token hf_x``, ``--hub-token=hf_x``, ``HF_TOKEN=hf_x``),
    credentials stripped from URLs. Training commands often carry tokens."""
    out: list[str] = []
    secret_next = False
    for arg in map(str, argv):
        name, eq, value = arg.partition("=")
        if secret_next:
            out.append(REDACTED)
            secret_next = False
        elif eq and value and is_secret_key(name.lstrip("-")):
            out.append(f"{name}={REDACTED}")
        else:
            # an option without its value ("--hub_token hf_x"): the next argument is the secret
            secret_next = arg.startswith("-") and not eq and is_secret_key(arg.lstrip("-"))
            out.append(strip_credentials(arg))
    return out


_STATUS = ("status", "--porcelain=v2", "--branch", "--untracked-files=no")
_REMOTES = ("config", "--get-regexp", r"^remote\..*\.url$")


def _git_start(cwd: str | None) -> list[subprocess.Popen[str] | None]:
    """Start both git commands; they run while the caller reads package versions."""
    procs: list[subprocess.Popen[str] | None] = []
    for args in (_STATUS, _REMOTES):
        try:
            # --no-optional-locks: status must not take index.lock under a user's concurrent git command
            procs.append(
                subprocess.Popen(
                    ["git", "--no-optional-locks", *args],
                    cwd=cwd,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                    text=True,
                )
            )
        except (OSError, ValueError, subprocess.SubprocessError):  # no git on PATH, bad cwd
            procs.append(None)
    return procs


def _git_output(proc: subprocess.Popen[str] | None, deadline: float) -> str | None:
    if proc is None:
        return None
    try:
        out, _ = proc.communicate(timeout=max(deadline - time.monotonic(), 0.001))
    except Exception:  # TimeoutExpired (a hung filesystem): give up on git, never on the run
        proc.kill()
        # not communicate(): a child git spawned (a hook, fsmonitor) may hold the pipe open for long
        if proc.stdout is not None:
            _try(proc.stdout.close)
        _try(lambda: proc.wait(timeout=1))
        return None
    return out if proc.returncode == 0 else None


def _git_finish(procs: list[subprocess.Popen[str] | None], deadline: float) -> dict[str, Any] | None:
    status, remotes_text = (_git_output(proc, deadline) for proc in procs)
    if status is None:
        return None
    head: dict[str, str] = {}
    dirty = False
    for line in status.splitlines():
        if line.startswith("# branch."):
            key, _, value = line[9:].partition(" ")
            head[key] = value
        elif line.strip():
            dirty = True
    commit, branch = head.get("oid"), head.get("head")
    remotes = [line.split(" ", 1) for line in (remotes_text or "").splitlines() if " " in line]
    remote = next(
        (url for key, url in remotes if key == "remote.origin.url"), remotes[0][1] if remotes else None
    )
    return {
        "commit": commit if commit and commit != "(initial)" else None,
        "branch": branch if branch and branch != "(detached)" else None,
        "dirty": dirty,
        "remote": strip_credentials(remote.strip()) if remote else None,
    }


def git_info(cwd: str | None = None) -> dict[str, Any] | None:
    """Commit, branch, dirty flag and remote (origin, else the first) of the repository around ``cwd``.

    None outside a repository, without git, or after ``GIT_TIMEOUT`` seconds. One ``git status``
    gives commit, branch and dirtiness. Untracked files do not make a tree dirty (as with
    ``git describe --dirty``): scanning them can take seconds in a folder full of checkpoints.
    """
    return _git_finish(_git_start(cwd), time.monotonic() + GIT_TIMEOUT)


def versions() -> dict[str, str]:
    """Installed versions of the frameworks that matter, read from package metadata, never imported."""
    import importlib.metadata  # not at module level: it pulls in email/zipfile, and rank_info needs none

    out = {}
    for name in PACKAGES:
        try:
            out[name] = importlib.metadata.version(name)
        except Exception:  # PackageNotFoundError, or a broken dist-info
            continue
    return out


def _platform() -> str:
    """``Linux-6.8.0-x86_64-with-glibc2.39``, without the ``uname -p`` that ``platform.platform()`` runs."""
    import platform

    u = os.uname()
    libc = "".join(platform.libc_ver())
    return f"{u.sysname}-{u.release}-{u.machine}" + (f"-with-{libc}" if libc else "")


def run_metadata() -> dict[str, Any]:
    """What a run records about the process that writes it. Never raises.

    Typically 20-50 ms, most of it the two git subprocesses, which run while package versions are read.
    """
    import getpass
    import platform
    import socket

    cwd = _try(os.getcwd)  # FileNotFoundError when the directory was deleted
    deadline = time.monotonic() + GIT_TIMEOUT
    git = _try(lambda: _git_start(cwd), []) if cwd else []
    meta = {
        "host": _try(socket.gethostname, "unknown"),
        "pid": os.getpid(),
        "user": _try(getpass.getuser),  # KeyError/OSError for a uid without a passwd entry
        "argv": _try(lambda: redact_argv(getattr(sys, "argv", None) or []), []),
        "cwd": cwd,
        "python": platform.python_version(),
        "platform": _try(_platform) or _try(platform.platform),
        "executable": sys.executable,
        "versions": _try(versions, {}),
        "git": _try(lambda: _git_finish(git, deadline)) if git else None,
        "rank": _try(lambda: asdict(rank_info()), asdict(RankInfo())),
    }
    if "CUDA_VISIBLE_DEVICES" in os.environ:
        meta["cuda_visible_devices"] = os.environ["CUDA_VISIBLE_DEVICES"]
    return meta
