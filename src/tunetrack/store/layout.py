"""Where things live on disk. Every path the writer and the readers use is built here.

One folder per run, one set of files per writing process (``<proc>.json``, ``<proc>.ttr``,
``<proc>.end.json``), so processes never share a file and need no lock, also on NFS or Lustre.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
from pathlib import Path
from typing import Any

DEFAULT_DIRNAME = "tunetrack_runs"
RUN_FILE = "run.json"
DATA_SUFFIX = ".ttr"
PROC_SUFFIX = ".json"
END_SUFFIX = ".end.json"
_ID_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz"


def resolve_root(dir: str | os.PathLike[str] | None = None) -> Path:
    """The store root: the argument, else ``$TUNETRACK_DIR``, else ``./tunetrack_runs``."""
    if dir is not None:
        return Path(dir).expanduser()
    env = os.environ.get("TUNETRACK_DIR")
    return Path(env).expanduser() if env else Path.cwd() / DEFAULT_DIRNAME


def new_run_id() -> str:
    """Eight random base-36 characters: short to type, and a few leading ones name a run uniquely
    (a time-based prefix would make every run of the same hour share its first characters)."""
    return "".join(secrets.choice(_ID_ALPHABET) for _ in range(8))


def proc_name(start_time: float) -> str:
    """``<host>-<pid>-<start ms>``: unique per writing process, and readable in a listing."""
    host = socket.gethostname().replace("-", "_").replace("/", "_") or "host"
    return f"{host}-{os.getpid()}-{int(start_time * 1000)}"


def write_json_atomic(path: Path, data: Any) -> None:
    """Write via a temporary file and rename, so readers see the old or the new file, never half."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(data, f, allow_nan=True, default=str)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def create_run_file(run_dir: Path, data: dict[str, Any]) -> bool:
    """Create ``run.json`` exactly once; False if another process created it first."""
    run_dir.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(run_dir / RUN_FILE, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(data, f, allow_nan=True, default=str)
    return True


def read_json(path: Path) -> dict[str, Any] | None:
    """A JSON file's object, or None if it is missing or unreadable (a reader never fails on one file)."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None
