"""What a folder store may keep of an ended run for the next listing (``Store.keep_listed``): the
store writes it, a reader hands it over. A folder of 10,000 ended runs is then one file and one
directory to list instead of 20,000 small files to read.
"""

from __future__ import annotations

from typing import Any

from .processes import LISTED_META
from .run import Run


def entry(run: Run) -> dict[str, Any] | None:
    """What the store may keep of ``run``, or None. Only a run that ended for good: every process
    wrote its end record (a live or crashed run changes without a new file), and one attempt (a
    resumed run's last values need its data). Its folder changes when anything that a listing reads
    does (an edit, a resume, a sync: files created or renamed into place), and the entry is kept
    with the folder's mtime, so a reader trusts it only while that is unchanged."""
    folder = run.folder
    stamp = getattr(folder, "stamp", None)
    if stamp is None or folder.summary() is not None:
        return None  # not a folder old enough to tell, or answered from a listing already
    procs = run.processes
    if not procs or any(p.end is None for p in procs) or sum(p.primary for p in procs) != 1:
        return None
    return {
        "stamp": stamp,
        "run": run.stored,
        "processes": [
            {
                "name": p.name,
                "meta": {k: p.meta.get(k) for k in LISTED_META if k in p.meta},
                "end": {k: v for k, v in (p.end or {}).items() if k != "config"},  # config: from the files
            }
            for p in procs
        ],
        "edits": [[name, body] for name, body in folder.edits()],
    }
