"""One run per distributed job without a server.

Global rank 0 creates the run and publishes its id in a small job file named after the launcher's
job key (``launch.job_id()``); the first local rank of every other node reads it and adds its own
files to that run. On a shared filesystem this is all the coordination needed; a job file older than
the reading process (minus a tolerance for clock skew and slow starts) belongs to an earlier job with
the same key and is ignored.
"""

from __future__ import annotations

import hashlib
import threading
import time
from pathlib import Path

from ..jsonfile import read_json, write_json_atomic
from .layout import JOBS_DIR

#: How much older than the reading process a job file may be and still count as this job's.
TOLERANCE = 120.0


def job_file(root: Path, job_key: str) -> Path:
    return root / JOBS_DIR / f"{hashlib.sha1(job_key.encode()).hexdigest()[:20]}.json"


def publish(root: Path, job_key: str, run_id: str) -> None:
    path = job_file(root, job_key)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic(path, {"run_id": run_id, "created": time.time(), "job": job_key})


def wait_for(
    root: Path, job_key: str, not_before: float, timeout: float, stop: threading.Event
) -> str | None:
    """The run id rank 0 published for this job, or None after ``timeout`` or when ``stop`` is set."""
    path = job_file(root, job_key)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        data = read_json(path)
        if data and float(data.get("created", 0)) >= not_before - TOLERANCE and data.get("run_id"):
            return str(data["run_id"])
        if stop.wait(0.5):
            return None
    return None
