"""The names of things in a run store. Every file name the writer and the readers use is built here.

One folder per run, one set of files per writing process (``<proc>.json``, ``<proc>.ttr``,
``<proc>.end.json``), so processes never share a file and need no lock, also on NFS or Lustre::

    <root>/<run id>/run.json                   the run: id, name, project, tags, created, format
    <root>/<run id>/<proc>.json                a writing process: host, pid, rank, role, versions, git
    <root>/<run id>/<proc>.ttr                 its records (config, rows, events), append-only
    <root>/<run id>/<proc>.end.json            how it ended: state, time, traceback, counters, last values
    <root>/<run id>/media/images/<key>/...     images
    <root>/.jobs/<job key digest>.json         a distributed job's run id (store/jobs.py)
"""

from __future__ import annotations

import os
import secrets
import socket

RUN_JSON = "run.json"
DATA_SUFFIX = ".ttr"
PROC_SUFFIX = ".json"
END_SUFFIX = ".end.json"
BEAT_SUFFIX = ".beat"  # an object store's heartbeat object of a process
MEDIA_DIR = "media"
JOBS_DIR = ".jobs"
_ID_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz"


def new_run_id() -> str:
    """Eight random base-36 characters: short to type, and a few leading ones name a run uniquely
    (a time-based prefix would make every run of the same hour share its first characters)."""
    return "".join(secrets.choice(_ID_ALPHABET) for _ in range(8))


def proc_name(start_time: float) -> str:
    """``<host>-<pid>-<start ms>``: unique per writing process, and readable in a listing."""
    host = socket.gethostname().replace("-", "_").replace("/", "_") or "host"
    return f"{host}-{os.getpid()}-{int(start_time * 1000)}"


def proc_of(filename: str) -> str | None:
    """The process a metadata file ``<proc>.json`` belongs to, or None for any other file."""
    if not filename.endswith(PROC_SUFFIX) or filename == RUN_JSON or filename.startswith("."):
        return None
    name = filename[: -len(PROC_SUFFIX)]
    return None if name.endswith(".end") else name
