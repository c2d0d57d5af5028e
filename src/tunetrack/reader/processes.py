"""The processes that wrote a run, and the run's state derived from them alone (no server).

A run's state is that of the process that speaks for it (``speaker``): the latest ``tunetrack run``
command's, else its latest primary (rank-0) attempt's: the state in its end record if it has one;
otherwise ``running`` while it is alive, ``crashed`` once it certainly died (same host, pid gone) or
its heartbeat (the writer touches its data every few seconds) is older than ``settings.stale_after()``.
"""

from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass
from typing import Any

from .. import settings
from ..states import State
from ..store import ends, process_meta
from ..store.base import RunFolder
from ..store.ends import EndRecord
from ..store.process_meta import ProcessMeta, Role

#: what listings read of a process's metadata (the rest: ``tunetrack show``, from the run's files)
LISTED_META = process_meta.LISTED


@dataclass
class Process:
    name: str
    meta: ProcessMeta
    end: EndRecord | None
    folder: RunFolder | None  # None for a process known from a store's listing index
    #: the heartbeat and last values the listing index gave (object stores)
    beat: float | None = None
    last: dict[str, Any] | None = None

    @property
    def node(self) -> str:
        """``node<node rank>:<host>``: names a node's system metrics, also when nodes share a host."""
        return f"node{process_meta.node_rank(self.meta)}:{self.meta.get('host', '?')}"

    @property
    def start(self) -> float:
        return float(self.meta.get("start", 0.0))

    @property
    def rank(self) -> int:
        """Its global rank in the job (0 for a lone process)."""
        return process_meta.global_rank(self.meta)

    @property
    def role(self) -> Role | None:
        """What it did for the run (None for a process an older tunetrack wrote)."""
        return process_meta.role(self.meta)

    @property
    def primary(self) -> bool:
        """It records the run (rank 0): the run's state is its latest primary's. A process that only
        added an evaluation of a checkpoint (``Role.EVALUATION``) is not one: evaluating a running
        run's checkpoint must not make the run read as finished, nor one that failed as finished."""
        return self.rank == 0 and not self.evaluates

    @property
    def evaluates(self) -> bool:
        """It added an evaluation of a checkpoint (``tunetrack.log_evaluation``) and nothing else."""
        return self.role == Role.EVALUATION

    @property
    def ended(self) -> bool:
        """It wrote its end record, or it is certainly gone: its data will not grow any more."""
        return self.end is not None or not self.alive()

    def heartbeat(self) -> float | None:
        return self.folder.heartbeat(self.name) if self.folder is not None else self.beat

    def alive(self) -> bool:
        """False when this process certainly died (same host, pid gone) or went silent (for longer
        than the staleness limit, or three of its upload intervals when it writes to object storage)."""
        beat = self.heartbeat()
        limit = max(settings.stale_after(), 3 * float(self.meta.get("upload_interval") or 0))
        if beat is None or time.time() - beat > limit:
            return False
        if self.meta.get("host") == socket.gethostname():
            try:
                os.kill(int(self.meta.get("pid", -1)), 0)
            except ProcessLookupError:
                return False
            except (PermissionError, ValueError, OverflowError):
                pass
        return True


def processes(folder: RunFolder) -> list[Process]:
    """The run's writing processes, in the order they started."""
    procs = [
        Process(name, folder.process_meta(name) or ProcessMeta(), folder.process_end(name), folder)
        for name in folder.processes()
    ]
    return sorted(procs, key=lambda p: p.start)


def listed_processes(summary: dict[str, Any]) -> list[Process]:
    """The processes a store's listing index describes (no file of the run read)."""
    procs = [
        Process(
            str(p.get("name")),
            process_meta.read(p.get("meta")) or ProcessMeta(),
            ends.read(p.get("end")),
            None,
            p.get("beat"),
            p.get("last"),
        )
        for p in summary.get("processes") or []
    ]
    return sorted(procs, key=lambda p: p.start)


def latest_primary(procs: list[Process]) -> Process | None:
    primaries = [p for p in procs if p.primary] or procs
    return primaries[-1] if primaries else None


def speaker(procs: list[Process]) -> Process | None:
    """The process whose end is the run's: the latest ``tunetrack run`` command (it outlives every
    process its command started, and knows its exit code), else the latest primary."""
    commands = [p for p in procs if p.role == Role.COMMAND]
    return commands[-1] if commands else latest_primary(procs)


def run_state(procs: list[Process], created: float) -> tuple[str, float | None, str | None]:
    """``(state, ended, traceback)`` of a run whose processes are ``procs``."""
    latest = speaker(procs)
    if latest is None:  # created, and no process has written its metadata yet (or ever will)
        age = time.time() - created
        return (State.RUNNING if age < settings.stale_after() else State.CRASHED), None, None
    if latest.end is not None:
        return (
            str(latest.end.get("state", State.FINISHED)),
            latest.end.get("time"),
            latest.end.get("traceback"),
        )
    if latest.alive():
        return State.RUNNING, None, None
    return State.CRASHED, latest.heartbeat(), None
