"""Where this process stands in a distributed launch: its rank, its node, and the key its job shares.

Ranks come from the launchers' environment variables, so a tracker knows its role before
``torch.distributed`` is initialized, or without it. torchrun, ``accelerate launch`` (which runs
torchrun) and the deepspeed launcher all set ``RANK``/``LOCAL_RANK``/``WORLD_SIZE``; OpenMPI's and
SLURM's own variables are fallbacks for scripts started by ``mpirun`` or ``srun`` directly.

Nothing here raises: a tracker that cannot tell its rank must still record the run (as rank 0 of 1).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import cast

from ..writer import Ranks, Role


@dataclass(frozen=True)
class RankInfo:
    rank: int = 0
    local_rank: int = 0
    world_size: int = 1
    node_rank: int = 0
    local_world_size: int = 1
    launcher: str | None = None

    def as_meta(self) -> Ranks:
        """These ranks as the process's metadata records them."""
        return cast(Ranks, asdict(self))


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


def role_of(
    ranks: RankInfo, job: str | None, all_ranks: bool, use_store: bool, console: bool = False
) -> Role | None:
    """What this process does for the run: ``primary`` records it (global rank 0, or every rank with
    ``all_ranks``); ``node``, the first rank of another node, adds that node's system metrics (and
    its console) to the job's run; ``console``, any other rank while the console is recorded, adds its
    console alone (only a job with a key, into a store, can be joined); None records nothing."""
    if ranks.rank == 0 or all_ranks:
        return Role.PRIMARY
    if job is None or not use_store:
        return None
    if ranks.local_rank == 0:
        return Role.NODE
    return Role.CONSOLE if console else None
