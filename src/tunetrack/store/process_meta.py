"""A writing process's metadata (``<proc>.json``): who wrote the process's files, where, and what it
does for the run. The one definition, as ``ends.py`` is the end record's: the tracker (or an importer)
builds a ``ProcessMeta`` and hands it to the writer, which adds where the process stands in the run
and has the store write it as it is; readers get it through ``read``, a process's global rank through
``global_rank`` and its role through ``role``, never by digging in the dict.

Every field is optional to a reader: an imported run's process records only its role, origin and
host, and a store's listing index keeps only ``LISTED``.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, TypedDict, cast


class Role(StrEnum):
    """What a process does for its run (members are the strings stored, so files do not change)."""

    #: records the run: global rank 0 (every rank with ``all_ranks``)
    PRIMARY = "primary"
    #: another node's first rank: adds that node's system metrics (and its console) to the job's run
    NODE = "node"
    #: any other rank while the console is recorded: adds its console alone
    CONSOLE = "console"
    #: ``tunetrack import``: writes another tracker's run through the writer
    IMPORT = "import"
    #: ``tunetrack.log_evaluation``: adds an evaluation of one of the run's checkpoints, at its step,
    #: from any process or machine, while the run is written or after it ended; it never speaks for
    #: the run (its state, its last step and its provenance stay its primary process's)
    EVALUATION = "evaluation"
    #: ``tunetrack run``'s own process: it runs the command, records its console, the machine's system
    #: metrics and its exit code; the processes the command starts join the run as primaries. Its end
    #: says how the run ended (the command's exit outlives every process it started)
    COMMAND = "command"


#: the roles whose process speaks for the run (its provenance: command, git, versions)
LEADS = (Role.COMMAND, Role.PRIMARY, Role.IMPORT)


class Ranks(TypedDict, total=False):
    """Where the process stands in a distributed launch (``tracker.launch.RankInfo``, as a dict)."""

    rank: int
    local_rank: int
    world_size: int
    node_rank: int
    local_world_size: int
    #: the launcher whose environment said so (``torchrun``, ``mpirun``, ``slurm``), else None
    launcher: str | None


class ProcessMeta(TypedDict, total=False):
    """What a writing process records about itself."""

    #: what it does for the run (stored as the role's string)
    role: Role
    #: its ranks (``Ranks``); absent for an imported run's process (rank 0 of 1)
    rank: Ranks
    #: the host it runs on, and its pid there (liveness: a pid gone on this host is a crash)
    host: str
    pid: int
    #: who ran it, how (argv, secrets redacted), where, and on what
    user: str | None
    argv: list[str]
    cwd: str | None
    python: str
    platform: str | None
    executable: str
    #: installed versions of the frameworks that matter (``tracker.provenance.PACKAGES``)
    versions: dict[str, str]
    #: commit, branch, dirty flag and remote; None outside a repository
    git: dict[str, Any] | None
    #: ``CUDA_VISIBLE_DEVICES`` when it was set
    cuda_visible_devices: str
    #: an imported run's origin: the tracker it came ``from``, its source, and when (``at``)
    imported: dict[str, Any]
    #: set by the writer: the run, when the process started (unix time), whether it re-attached
    run_id: str
    start: float
    resumed: bool
    #: set by an object store: seconds between its uploads (a reader's staleness limit grows with it)
    upload_interval: float


#: the process metadata's fields, as ``docs/architecture.md`` lists them
FIELDS = tuple(ProcessMeta.__annotations__)
#: the ranks' fields
RANK_FIELDS = tuple(Ranks.__annotations__)
#: what a listing keeps of a process's metadata (a store's listing index, a reader's listing cache)
LISTED = ("host", "pid", "role", "rank", "start", "upload_interval", "resumed")


def read(data: Any) -> ProcessMeta | None:
    """``data`` (a parsed ``<proc>.json``, or an index entry's copy of one) as ``ProcessMeta``; None
    for anything that is not a mapping (a process that has written none yet, a damaged file)."""
    return cast(ProcessMeta, data) if isinstance(data, dict) else None


def _ranks(meta: ProcessMeta) -> Ranks:
    ranks = meta.get("rank")
    return ranks if isinstance(ranks, dict) else Ranks()


def global_rank(meta: ProcessMeta) -> int:
    """The process's global rank in its job (0 for a lone process, an imported run's, or a damaged
    file's)."""
    return int(_ranks(meta).get("rank") or 0)


def node_rank(meta: ProcessMeta) -> int:
    """The rank of the process's node in its job (0 for a lone process)."""
    return int(_ranks(meta).get("node_rank") or 0)


def role(meta: ProcessMeta) -> Role | None:
    """The process's role; None for one an older tunetrack wrote without it, or one this version
    does not know."""
    try:
        return Role(meta.get("role") or "")
    except ValueError:
        return None
