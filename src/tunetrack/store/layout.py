"""The names of things in a run store. Every file name the writer and the readers use is built here.

One folder per run, one set of files per writing process (``<proc>.json``, ``<proc>.ttr``,
``<proc>.end.json``), so processes never share a file and need no lock, also on NFS or Lustre::

    <root>/<run id>/run.json                   the run: id, name, project, tags, created, format
    <root>/<run id>/<proc>.json                a writing process: host, pid, rank, role, versions, git
    <root>/<run id>/<proc>.ttr                 its records (config, rows, events), append-only
    <root>/<run id>/<proc>.console             what it printed (fds 1 and 2, line by line), append-only
    <root>/<run id>/<proc>.end.json            how it ended: state, time, traceback, counters, last values
    <root>/<run id>/<edit>.edit                one edit of the run (JSON): a new name, tags, a note
    <root>/<run id>/stop.edit                  the request to stop the run (``STOP_EDIT``)
    <root>/<run id>/media/images/<key>/...     images
    <root>/<run id>/metrics.parquet            the run's points as Parquet (also system.parquet,
                                               params.parquet): a copy for columnar tools, rewritten
                                               whole; the records stay the source of truth
    <root>/.jobs/<job key digest>.json         a distributed job's run id (store/jobs.py)
    <root>/.audit/<edit name>.json             a run deleted: who, when, from where, what it was

Edits (``tunetrack tag``/``rename``/``note``, ``Tracker.name = ...``/``add_tags``) change no file:
``run.json`` stays as its creator wrote it, and each edit is a new file of its own, created once under
a name no other edit can have (``edit_name``: ``<µs since the epoch>-<host>-<pid>-<random>``). Two
edits at once, from any processes or machines, are two files. Readers fold them over ``run.json`` in
time order (``tunetrack.edits.fold``). They lie in the run's folder itself, not in a subfolder, so
that creating one changes the folder's mtime and its listing, which is how readers that keep runs
(the dashboard) learn that a run changed; the suffix is not ``.json``, so readers that look for
processes (``*.json``), including older versions of tunetrack, pass them by. An object store keeps
them under the same keys (``store/remote.py``) and lists them in its index.

Deleting a run (``tunetrack rm``) first renames its folder to ``.deleted-<run id>-<random>``, so no
reader ever sees half a run, then removes that (a removal cut short leaves a hidden folder, which readers skip).
"""

from __future__ import annotations

import os
import re
import secrets
import socket

RUN_JSON = "run.json"
DATA_SUFFIX = ".ttr"
#: a process's console: framed ``codec.CONSOLE`` records, written by its console recorder
#: (``writer/console_recorder.py``), a process of its own that outlives it
CONSOLE_SUFFIX = ".console"
PROC_SUFFIX = ".json"
END_SUFFIX = ".end.json"
BEAT_SUFFIX = ".beat"  # an object store's heartbeat object of a process
EDIT_SUFFIX = ".edit"
MEDIA_DIR = "media"
JOBS_DIR = ".jobs"
#: what outlives a run it is about: the record of its deletion (``manage.runs.delete_runs``), which
#: a team's audit trail shows beside the runs' edits (``reader.audit``); named as edits are
AUDIT_DIR = ".audit"
#: the dashboard's runs table rows of ended runs, kept by it (``reader.catalog``)
ROWS = ".rows.msgpack"
DELETED_PREFIX = ".deleted-"  # a run folder being removed
#: the tables a run keeps as Parquet beside its records (``reader/parquet.py``), each one file
PARQUET_TABLES = ("metrics", "system", "params")
PARQUET_SUFFIX = ".parquet"
_ID_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz"


def new_run_id() -> str:
    """Eight random base-36 characters: short to type, and a few leading ones name a run uniquely
    (a time-based prefix would make every run of the same hour share its first characters)."""
    return "".join(secrets.choice(_ID_ALPHABET) for _ in range(8))


#: a run id given by a user or another tracker (a W&B run id, ``resume=``): a folder name or object
#: prefix that cannot leave the store, nor hide among its own entries (``.index``, ``.jobs``)
_GIVEN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,127}")


def is_run_id(text: str) -> bool:
    """Whether ``text`` can name a run: letters, digits, ``_`` and ``-``, starting with a letter or
    digit, at most 128 characters."""
    return _GIVEN_ID.fullmatch(text) is not None


def parquet_name(table: str) -> str:
    """The file of a run that holds ``table`` as Parquet: ``metrics.parquet``, so that
    ``<store>/*/metrics.parquet`` (or ``**/metrics*.parquet``) reads every run's."""
    return f"{table}{PARQUET_SUFFIX}"


def proc_name(start_time: float) -> str:
    """``<host>-<pid>-<start ms>``: unique per writing process, and readable in a listing."""
    host = socket.gethostname().replace("-", "_").replace("/", "_") or "host"
    return f"{host}-{os.getpid()}-{int(start_time * 1000)}"


def edit_name(edit_time: float) -> str:
    """``<µs since the epoch, 17 digits>-<host>-<pid>-<random>``: unique without asking anyone, and
    sorting by name sorts by time (readers order by the time inside, the name breaks ties)."""
    host = socket.gethostname().replace("-", "_").replace("/", "_") or "host"
    return f"{int(edit_time * 1_000_000):017d}-{host}-{os.getpid()}-{secrets.token_hex(4)}"


#: the edit that asks a run to stop (``tunetrack stop``): one fixed name, created only if absent, so the
#: first request is the one that counts and a live run finds it with one look (a stat, or one GET)
STOP_EDIT = "stop"


def edit_of(filename: str) -> str | None:
    """The edit a file ``<edit>.edit`` holds, or None for any other file."""
    if not filename.endswith(EDIT_SUFFIX) or filename.startswith("."):
        return None
    return filename[: -len(EDIT_SUFFIX)]


def proc_of(filename: str) -> str | None:
    """The process a metadata file ``<proc>.json`` belongs to, or None for any other file."""
    if not filename.endswith(PROC_SUFFIX) or filename == RUN_JSON or filename.startswith("."):
        return None
    name = filename[: -len(PROC_SUFFIX)]
    return None if name.endswith(".end") else name
